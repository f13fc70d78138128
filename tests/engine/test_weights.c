/* test_weights.c - weighted shares on rebalanced semaphores (rebalance.c).
 *
 * A key's quota is floor(limit * w / W) over the keys present, the slots the
 * floors leave going one each to the keys whose oldest waiters are oldest;
 * still work-conserving (docs/engine.md). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

static void weighted(sl_engine *eng, int64_t now, uint32_t limit, uint32_t paying,
                     uint32_t deflt)
{
    sl_sem_opts o;
    sl_sem_opts_default(&o, limit);
    o.strategy = SL_REBALANCED;
    sl_weight ws[1] = {{"paying", paying}};
    o.rules.weights = ws;
    o.rules.nweights = 1;
    o.rules.default_weight = deflt;
    sl_error err;
    assert_int_equal(sl_sem_configure(eng, "r", &o, now, &err), 0);
}

static size_t held_by(sl_engine *eng, const char *key)
{
    size_t n = 0;
    for (const sl_claim *c = sl_claim_next(eng, NULL); c; c = sl_claim_next(eng, c)) {
        sl_claim_view v;
        sl_claim_get(c, &v);
        if (v.state == SL_HELD && v.rebalance_key && strcmp(v.rebalance_key, key) == 0)
            n++;
    }
    return n;
}

/* Waiters of both keys, free first; then every release hands the slot on. */
static void three_to_one(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    weighted(eng, 0, 4, 3, 1);
    char spec[80];
    for (int i = 0; i < 20; i++) {
        snprintf(spec, sizeof(spec), "id=f%d s:r key=free", i);
        t_claim(eng, 10 + i, spec);
    }
    /* The free tenant came first and alone: every slot (work-conserving). */
    assert_int_equal(held_by(eng, "free"), 4);
    for (int i = 0; i < 20; i++) {
        snprintf(spec, sizeof(spec), "id=p%d s:r key=paying", i);
        t_claim(eng, 100 + i, spec);
    }
    /* As free's holders finish, the slots go to paying until 3:1. */
    for (int i = 0; i < 4; i++) {
        snprintf(spec, sizeof(spec), "f%d", i);
        t_release(eng, 200 + i, spec);
    }
    assert_int_equal(held_by(eng, "paying"), 3);
    assert_int_equal(held_by(eng, "free"), 1);
    /* And stays there release after release. */
    for (int round = 0; round < 8; round++) {
        const sl_claim *held = sl_claim_next(eng, NULL);
        while (t_state(eng, t_id(held)) != SL_HELD)
            held = sl_claim_next(eng, held);
        t_release(eng, 300 + round, t_id(held));
        assert_int_equal(held_by(eng, "paying"), 3);
        assert_int_equal(held_by(eng, "free"), 1);
    }
    t_free(eng);
}

static void remainder_to_the_oldest_waiting_key(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    /* limit 5, weights 3 and 1: shares 3 and 1, one slot left over. */
    weighted(eng, 0, 5, 3, 1);
    t_claim(eng, 1, "id=h1 s:r key=paying");
    t_claim(eng, 2, "id=h2 s:r key=paying");
    t_claim(eng, 3, "id=h3 s:r key=paying");
    t_claim(eng, 4, "id=h4 s:r key=free");
    t_claim(eng, 5, "id=h5 s:r key=free");
    /* Full: paying 3, free 2. A paying waiter comes first, then a free one. */
    t_claim(eng, 6, "id=wp s:r key=paying");
    t_claim(eng, 7, "id=wf s:r key=free");
    sl_why w[2];
    assert_int_equal(sl_claim_why(eng, t_find(eng, "wf"), w, 2), 1);
    assert_int_equal(w[0].weight, 1);
    assert_int_equal(w[0].weights, 4);
    /* paying's oldest waiter is oldest: the extra slot is paying's. */
    t_release(eng, 8, "h4");
    assert_int_equal(t_state(eng, "wp"), SL_HELD);
    assert_int_equal(t_state(eng, "wf"), SL_PENDING);
    /* With paying no longer waiting, free's waiter is the oldest: share 1
     * and the extra slot, 2, of which it holds 1; the lock is full. */
    assert_int_equal(sl_claim_why(eng, t_find(eng, "wf"), w, 2), 1);
    assert_int_equal(w[0].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w[0].quota, 2);
    t_free(eng);
}

static void weights_change_with_the_configuration(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    weighted(eng, 0, 4, 1, 1);
    char spec[80];
    for (int i = 0; i < 6; i++) {
        snprintf(spec, sizeof(spec), "id=p%d s:r key=paying", i);
        t_claim(eng, 10 + i, spec);
        snprintf(spec, sizeof(spec), "id=f%d s:r key=free", i);
        t_claim(eng, 10 + i, spec);
    }
    assert_int_equal(held_by(eng, "paying"), 2);
    /* Weighted 3:1 from now on: the next slots go to paying. */
    weighted(eng, 50, 4, 3, 1);
    t_release(eng, 60, "f0");
    t_release(eng, 61, "f1");
    assert_int_equal(held_by(eng, "paying"), 3);
    assert_int_equal(held_by(eng, "free"), 1);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(three_to_one),
        cmocka_unit_test(remainder_to_the_oldest_waiting_key),
        cmocka_unit_test(weights_change_with_the_configuration),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
