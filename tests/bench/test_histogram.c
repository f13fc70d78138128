/* test_histogram.c - the load generator's latency histogram
 * (bench/load/histogram.h): exact below 64, quantiles within the 1/64
 * bucket width above, exact min/max/count/sum, merging, and values past the
 * last bucket clamped to the maximum seen. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "histogram.h"

static sl_hist h, other; /* 18 KiB each: not on the stack */

static void empty(void **state)
{
    (void)state;
    sl_hist_init(&h);
    assert_int_equal(h.count, 0);
    assert_int_equal(sl_hist_quantile(&h, 0.5), 0);
    assert_int_equal(sl_hist_quantile(&h, 0.99), 0);
}

static void small_values_are_exact(void **state)
{
    uint64_t v;
    (void)state;
    sl_hist_init(&h);
    for (v = 0; v < 64; v++)
        sl_hist_record(&h, v);
    assert_int_equal(h.count, 64);
    assert_int_equal(h.sum, 63 * 64 / 2);
    assert_int_equal(h.min, 0);
    assert_int_equal(h.max, 63);
    assert_int_equal(sl_hist_quantile(&h, 0.5), 31); /* the 32nd smallest */
    assert_int_equal(sl_hist_quantile(&h, 0.0), 0);
    assert_int_equal(sl_hist_quantile(&h, 1.0), 63);
}

/* 1..1e6 ns uniformly: each quantile within 1/64 of the truth. */
static void quantiles_within_bucket_width(void **state)
{
    static const double qs[] = {0.01, 0.25, 0.5, 0.9, 0.99, 0.999};
    uint64_t v;
    size_t i;
    (void)state;
    sl_hist_init(&h);
    for (v = 1; v <= 1000000; v++)
        sl_hist_record(&h, v);
    for (i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        double want = qs[i] * 1e6, got = (double)sl_hist_quantile(&h, qs[i]);
        if (got < want * (1 - 1.0 / 64) || got > want * (1 + 1.0 / 64))
            fail_msg("q=%g: %g, expected %g within 1/64", qs[i], got, want);
    }
    assert_int_equal(sl_hist_quantile(&h, 1.0), 1000000);
}

/* Two clusters: the median falls in the lower, p99 in the upper. */
static void quantiles_pick_the_right_cluster(void **state)
{
    int i;
    (void)state;
    sl_hist_init(&h);
    for (i = 0; i < 980; i++)
        sl_hist_record(&h, 200000); /* 200 us */
    for (i = 0; i < 20; i++)
        sl_hist_record(&h, 40000000); /* 40 ms */
    assert_true(sl_hist_quantile(&h, 0.5) >= 200000 - 200000 / 64 &&
                sl_hist_quantile(&h, 0.5) <= 200000);
    assert_true(sl_hist_quantile(&h, 0.98) <= 200000);
    assert_int_equal(sl_hist_quantile(&h, 0.99), 40000000); /* clamped to max */
}

static void merge_adds_everything(void **state)
{
    (void)state;
    sl_hist_init(&h);
    sl_hist_init(&other);
    sl_hist_record(&h, 10);
    sl_hist_record(&h, 1000);
    sl_hist_record(&other, 5);
    sl_hist_record(&other, 100000);
    sl_hist_merge(&h, &other);
    assert_int_equal(h.count, 4);
    assert_int_equal(h.sum, 101015);
    assert_int_equal(h.min, 5);
    assert_int_equal(h.max, 100000);
    assert_int_equal(sl_hist_quantile(&h, 0.25), 5);
    assert_int_equal(sl_hist_quantile(&h, 0.5), 10);
    /* Merging an empty histogram changes nothing. */
    sl_hist_init(&other);
    sl_hist_merge(&h, &other);
    assert_int_equal(h.count, 4);
    assert_int_equal(h.min, 5);
}

static void huge_values_clamp(void **state)
{
    (void)state;
    sl_hist_init(&h);
    sl_hist_record(&h, UINT64_MAX);
    sl_hist_record(&h, (uint64_t)1 << 50);
    assert_int_equal(h.count, 2);
    assert_true(sl_hist_quantile(&h, 1.0) == UINT64_MAX);
    assert_true(sl_hist_quantile(&h, 0.5) >= (uint64_t)1 << 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(empty),
        cmocka_unit_test(small_values_are_exact),
        cmocka_unit_test(quantiles_within_bucket_width),
        cmocka_unit_test(quantiles_pick_the_right_cluster),
        cmocka_unit_test(merge_adds_everything),
        cmocka_unit_test(huge_values_clamp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
