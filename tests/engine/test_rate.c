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
    /* A semaphore made on the running server (after the start) starts full. */
    sl_engine_start_done(eng);
    rated(eng, 6000, "fresh", 100, 2, 1000, 0);
    t_claim(eng, 6000, "id=f1 s:fresh");
    t_claim(eng, 6000, "id=f2 s:fresh");
    assert_string_equal(t_with_state(eng, SL_PENDING), "");
    t_free(eng);
}

static void restore_rated(sl_engine *eng, const char *name, uint32_t count, int64_t period,
                          uint32_t burst)
{
    sl_sem_opts o;
    sl_sem_opts_default(&o, 10);
    o.rules.rate_count = count;
    o.rules.rate_period_ms = period;
    o.rules.rate_burst = burst;
    assert_int_equal(sl_engine_restore_config(eng, name, &o), 0);
}

/* S1: the server's file sets its semaphores at every start. Set as saved,
 * the semaphore is not configured again (no event, its bucket stays
 * empty); one the file adds at the start starts empty too. Only a
 * semaphore made once the start is done starts full. */
static void file_at_start_keeps_the_bucket_empty(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    restore_rated(eng, "github-api", 6, 60000, 2);
    sl_engine_restore_done(eng, 5000);
    t_events(eng);
    rated(eng, 5000, "github-api", 10, 6, 60000, 2); /* the file, as saved */
    rated(eng, 5000, "new-api", 10, 6, 60000, 2);    /* the file, not saved yet */
    assert_string_equal(t_events(eng), "semaphore.updated:new-api");
    sl_engine_start_done(eng);
    for (int i = 0; i < 3; i++) {
        char spec[64];
        snprintf(spec, sizeof(spec), "id=g%d s:github-api", i);
        t_claim(eng, 5000, spec);
        snprintf(spec, sizeof(spec), "id=n%d s:new-api", i);
        t_claim(eng, 5000, spec);
    }
    assert_string_equal(t_with_state(eng, SL_HELD), "");
    /* One token is 10 s at 6 a minute. */
    sl_engine_advance(eng, 14999);
    assert_string_equal(t_with_state(eng, SL_HELD), "");
    sl_engine_advance(eng, 15000);
    assert_string_equal(t_with_state(eng, SL_HELD), "g0 n0");
    sl_engine_advance(eng, 25000);
    assert_string_equal(t_with_state(eng, SL_HELD), "g0 n0 g1 n1");
    t_free(eng);
}

/* S1: a PUT after a restart changes a saved semaphore on a running server:
 * its bucket, present at the start, stays as empty as it is. */
static void a_change_after_a_restart_keeps_the_bucket_empty(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    restore_rated(eng, "api", 6, 60000, 2);
    sl_engine_restore_done(eng, 1000);
    sl_engine_start_done(eng);
    rated(eng, 2000, "api", 20, 6, 60000, 4); /* a bigger limit and burst */
    t_claim(eng, 2000, "id=a s:api");
    t_claim(eng, 2000, "id=b s:api");
    assert_string_equal(t_with_state(eng, SL_HELD), "");
    sl_engine_advance(eng, 10999);
    assert_string_equal(t_with_state(eng, SL_HELD), "");
    sl_engine_advance(eng, 11000); /* one token 10 s after the start */
    assert_string_equal(t_with_state(eng, SL_HELD), "a");
    t_free(eng);
}

/* A change keeps the bucket's level, capped at the new burst; a new
 * period counts the whole tokens. Set again as it is, nothing moves. */
static void a_change_keeps_the_level(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    rated(eng, 0, "api", 100, 2, 1000, 4); /* starts full: made on a running engine */
    for (int i = 0; i < 6; i++) {
        char spec[32];
        snprintf(spec, sizeof(spec), "id=c%d s:api", i);
        t_claim(eng, 0, spec);
    }
    assert_string_equal(t_with_state(eng, SL_HELD), "c0 c1 c2 c3");
    t_events(eng);
    rated(eng, 100, "api", 100, 2, 1000, 4);
    assert_string_equal(t_events(eng), "");
    /* 100 ms after: 200 of the 1000 units of a token. A bigger burst does
     * not fill the bucket: c4 comes at 500 ms as before. */
    rated(eng, 100, "api", 100, 2, 1000, 8);
    assert_string_equal(t_events(eng), "semaphore.updated:api");
    sl_engine_advance(eng, 499);
    assert_int_equal(t_state(eng, "c4"), SL_PENDING);
    sl_engine_advance(eng, 500);
    assert_int_equal(t_state(eng, "c4"), SL_HELD);
    /* c5 took the token of 1000 ms; at 5500 the bucket holds its new burst
     * of 8 (9 came); a burst of 1 keeps one of them. */
    sl_engine_advance(eng, 5500);
    assert_int_equal(t_state(eng, "c5"), SL_HELD);
    rated(eng, 5500, "api", 100, 2, 1000, 1);
    t_claim(eng, 5500, "id=c6 s:api");
    t_claim(eng, 5500, "id=c7 s:api");
    assert_string_equal(t_with_state(eng, SL_PENDING), "c7");
    /* A new period, 1 a minute: the half token come since is not a whole
     * one of the new period, and the next is a minute away. */
    sl_engine_advance(eng, 5750);
    rated(eng, 5750, "api", 100, 1, 60000, 0);
    sl_engine_advance(eng, 65749);
    assert_int_equal(t_state(eng, "c7"), SL_PENDING);
    sl_engine_advance(eng, 65750);
    assert_int_equal(t_state(eng, "c7"), SL_HELD);
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
        cmocka_unit_test(file_at_start_keeps_the_bucket_empty),
        cmocka_unit_test(a_change_after_a_restart_keeps_the_bucket_empty),
        cmocka_unit_test(a_change_keeps_the_level),
        cmocka_unit_test(bad_rates_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
