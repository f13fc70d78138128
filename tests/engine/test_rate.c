/* test_rate.c - rate limits on semaphores (rate.c), per docs/engine.md.
 *
 * A token bucket: `burst` tokens at most, N per period refilled smoothly,
 * one taken by each grant. Times are exact to the millisecond. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

static void rated(sl_engine *eng, int64_t now, const char *name, uint32_t limit, uint32_t count,
                  int64_t period, uint32_t burst)
{
    sl_sem_opts o;
    sl_sem_opts_default(&o, limit);
    o.rules.rate_count = count;
    o.rules.rate_period_ms = period;
    o.rules.rate_burst = burst;
    sl_error err;
    assert_int_equal(sl_sem_configure(eng, name, &o, now, &err), 0);
}

static void burst_then_one_token_at_a_time(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    rated(eng, 0, "api", 100, 3, 1000, 0); /* 3 a second, burst 3 */
    t_claim(eng, 0, "id=a s:api");
    t_claim(eng, 0, "id=b s:api");
    t_claim(eng, 0, "id=c s:api");
    t_claim(eng, 0, "id=d s:api");
    assert_string_equal(t_with_state(eng, SL_HELD), "a b c");
    sl_why w;
    assert_int_equal(sl_claim_why(eng, t_find(eng, "d"), &w, 1), 1);
    assert_int_equal(w.rule, SL_RULE_RATE);
    /* One token is 1000 units, 3 come a millisecond: 334 ms. */
    assert_int_equal(w.admit_ms, 334);
    size_t lock;
    assert_int_equal(sl_claim_main_rule(eng, t_find(eng, "d"), &lock), SL_RULE_RATE);
    assert_int_equal(sl_engine_next_deadline(eng), 334);
    sl_engine_advance(eng, 333);
    assert_int_equal(t_state(eng, "d"), SL_PENDING);
    sl_engine_advance(eng, 334);
    assert_int_equal(t_state(eng, "d"), SL_HELD);
    assert_int_equal(t_view(eng, "d").granted_ms, 334);
    t_free(eng);
}

/* Releases do not give tokens back: the rate counts grants, not holders. */
static void releases_do_not_refill(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    rated(eng, 0, "api", 1, 1, 60000, 0);
    t_claim(eng, 0, "id=a s:api");
    t_release(eng, 10, "a");
    t_claim(eng, 20, "id=b s:api");
    assert_int_equal(t_state(eng, "b"), SL_PENDING);
    sl_engine_advance(eng, 59999);
    assert_int_equal(t_state(eng, "b"), SL_PENDING);
    sl_engine_advance(eng, 60000);
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    t_free(eng);
}

/* 30 a minute, burst 1: 90 claims waiting from the start are let in at
 * most one every 2 s, in their queue order, and never more than 30 in any
 * minute. */
static void thirty_a_minute(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    rated(eng, 0, "api", 1000, 30, 60000, 1);
    char spec[64];
    for (int i = 0; i < 90; i++) {
        snprintf(spec, sizeof(spec), "id=c%02d s:api", i);
        t_claim(eng, 0, spec);
    }
    int64_t granted[90];
    for (int64_t t = 0; t <= 180000; t += 500) {
        sl_engine_advance(eng, t);
    }
    for (int i = 0; i < 90; i++) {
        snprintf(spec, sizeof(spec), "c%02d", i);
        assert_int_equal(t_state(eng, spec), SL_HELD);
        granted[i] = t_view(eng, spec).granted_ms;
        if (i > 0)
            assert_true(granted[i] >= granted[i - 1]); /* queue order */
    }
    assert_int_equal(granted[0], 0);
    assert_int_equal(granted[1], 2000);
    assert_int_equal(granted[89], 178000);
    for (int i = 0; i + 30 < 90; i++)
        assert_true(granted[i + 30] - granted[i] >= 60000);
    t_free(eng);
}

/* The rate joins the limit: both must allow a grant. */
static void limit_and_rate_together(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    rated(eng, 0, "api", 1, 10, 1000, 0);
    t_claim(eng, 0, "id=a s:api");
    t_claim(eng, 0, "id=b s:api");
    sl_why w;
    sl_claim_why(eng, t_find(eng, "b"), &w, 1);
    assert_int_equal(w.rule, SL_RULE_AT_LIMIT);
    t_release(eng, 5, "a");
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    t_free(eng);
}

/* After a restore the bucket starts empty: a restart never lets more
 * than the rate through. */
static void restored_bucket_starts_empty(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_sem_opts o;
    sl_sem_opts_default(&o, 100);
    o.rules.rate_count = 2;
    o.rules.rate_period_ms = 1000;
    assert_int_equal(sl_engine_restore_config(eng, "api", &o), 0);
    sl_engine_restore_done(eng, 5000);
    t_claim(eng, 5000, "id=a s:api");
    assert_int_equal(t_state(eng, "a"), SL_PENDING);
    sl_engine_advance(eng, 5500);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    /* A semaphore configured after the restore starts full as ever. */
    rated(eng, 6000, "fresh", 100, 2, 1000, 0);
    t_claim(eng, 6000, "id=f1 s:fresh");
    t_claim(eng, 6000, "id=f2 s:fresh");
    assert_string_equal(t_with_state(eng, SL_PENDING), "");
    t_free(eng);
}

static void bad_rates_are_refused(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_sem_opts o;
    sl_error err;
    sl_sem_opts_default(&o, 1);
    o.rules.rate_count = 1;
    o.rules.rate_period_ms = 0;
    assert_int_equal(sl_sem_configure(eng, "x", &o, 0, &err), SL_EINVAL);
    assert_string_equal(err.field, "rate");
    o.rules.rate_period_ms = INT64_MAX / 2;
    o.rules.rate_burst = 1000000000;
    assert_int_equal(sl_sem_configure(eng, "x", &o, 0, &err), SL_EINVAL);
    t_free(eng);
}

/* S6: each waiter the rate holds back is told its own time: the k-th is
 * let in with the k-th token, not all of them with the next one. */
static void each_waiter_its_own_admit_time(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    rated(eng, 0, "vendor", 10, 30, 60000, 5); /* a token every 2 s, burst 5 */
    char spec[32], id[8];
    for (int i = 1; i <= 8; i++) {
        snprintf(spec, sizeof(spec), "id=w%d s:vendor", i);
        t_claim(eng, 0, spec);
    }
    assert_string_equal(t_with_state(eng, SL_HELD), "w1 w2 w3 w4 w5");
    for (int i = 6; i <= 8; i++) {
        snprintf(id, sizeof(id), "w%d", i);
        sl_why w;
        assert_int_equal(sl_claim_why(eng, t_find(eng, id), &w, 1), 1);
        assert_int_equal(w.rule, SL_RULE_RATE);
        assert_int_equal(w.admit_ms, (i - 5) * 2000);
    }
    for (int i = 6; i <= 8; i++) {
        snprintf(id, sizeof(id), "w%d", i);
        sl_engine_advance(eng, (i - 5) * 2000);
        assert_int_equal(t_view(eng, id).granted_ms, (i - 5) * 2000);
    }
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(each_waiter_its_own_admit_time),
        cmocka_unit_test(burst_then_one_token_at_a_time),
        cmocka_unit_test(releases_do_not_refill),
        cmocka_unit_test(thirty_a_minute),
        cmocka_unit_test(limit_and_rate_together),
        cmocka_unit_test(restored_bucket_starts_empty),
        cmocka_unit_test(bad_rates_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
