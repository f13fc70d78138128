/* test_why.c - why a pending claim waits (why.c): sl_claim_why per lock and
 * sl_claim_main_rule, and the rule carried by claim.waiting.
 *
 * docs/engine.md, "Why": at_limit when its slots exceed limit - used; behind
 * when they fit but the slots asked ahead (strict, or ahead in a rebalanced
 * lock's order of choice) leave too little; quota on a rebalanced lock when
 * its key holds its share while another key waiting is below its own (this
 * wins there); other_lock when admissible on that lock. A skip lock only
 * says at_limit or other_lock. ahead[] lists the first 8 claims ahead. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

/* The ids of why's ahead[] as "a b c". */
static const char *ahead_ids(const sl_why *w)
{
    static char buf[512];
    size_t n = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < w->nshown; i++) {
        int k = snprintf(buf + n, sizeof(buf) - n, "%s%s", i ? " " : "", t_id(w->ahead[i]));
        assert_true(k > 0 && (size_t)k < sizeof(buf) - n);
        n += (size_t)k;
    }
    return buf;
}

static size_t why(sl_engine *eng, const char *id, sl_why *out, size_t max)
{
    return sl_claim_why(eng, t_find(eng, id), out, max);
}

static sl_rule main_rule(sl_engine *eng, const char *id, size_t *lock)
{
    return sl_claim_main_rule(eng, t_find(eng, id), lock);
}

static void at_limit_on_a_held_mutex(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a m:x");
    t_claim(eng, 2, "id=b m:x");
    t_claim(eng, 3, "id=c m:x");
    sl_why w[2];
    assert_int_equal(why(eng, "c", w, 2), 1);
    assert_int_equal(w[0].lock, 0);
    assert_string_equal(w[0].key, "mtx/x");
    assert_int_equal(w[0].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w[0].used, 1);
    assert_int_equal(w[0].limit, 1);
    assert_int_equal(w[0].position, 2);
    assert_int_equal(w[0].nahead, 1);
    assert_int_equal(w[0].nshown, 1);
    assert_ptr_equal(w[0].ahead[0], t_find(eng, "b"));
    assert_int_equal(why(eng, "b", w, 2), 1);
    assert_int_equal(w[0].position, 1);
    assert_int_equal(w[0].nahead, 0);
    assert_int_equal(w[0].nshown, 0);
    size_t lock = 99;
    assert_int_equal(main_rule(eng, "c", &lock), SL_RULE_AT_LIMIT);
    assert_int_equal(lock, 0);
    t_free(eng);
}

/* Strict: y's one slot fits in the two free, but x ahead of it asks for
 * both; x itself is admissible on the pool and waits for the gate. */
static void behind_and_other_lock_on_strict(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 3, SL_STRICT);
    t_claim(eng, 1, "id=h s:pool");
    t_claim(eng, 2, "id=g m:gate");
    t_claim(eng, 3, "id=x s:pool*2 m:gate");
    t_claim(eng, 4, "id=y s:pool");
    assert_string_equal(t_with_state(eng, SL_PENDING), "x y");

    sl_why w[2];
    assert_int_equal(why(eng, "y", w, 2), 1);
    assert_int_equal(w[0].rule, SL_RULE_BEHIND);
    assert_string_equal(w[0].key, "sem/pool");
    assert_int_equal(w[0].used, 1);
    assert_int_equal(w[0].limit, 3);
    assert_int_equal(w[0].position, 2);
    assert_int_equal(w[0].nahead, 1);
    assert_string_equal(ahead_ids(&w[0]), "x");
    size_t lock = 99;
    assert_int_equal(main_rule(eng, "y", &lock), SL_RULE_BEHIND);
    assert_int_equal(lock, 0);

    assert_int_equal(why(eng, "x", w, 2), 2);
    assert_int_equal(w[0].rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(w[0].position, 1);
    assert_int_equal(w[1].lock, 1);
    assert_string_equal(w[1].key, "mtx/gate");
    assert_int_equal(w[1].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w[1].used, 1);
    /* The main reason skips other_lock. */
    assert_int_equal(main_rule(eng, "x", &lock), SL_RULE_AT_LIMIT);
    assert_int_equal(lock, 1);

    /* The gate opens: x gets in and y is now simply at the limit. */
    t_release(eng, 5, "g");
    assert_int_equal(t_state(eng, "x"), SL_HELD);
    assert_int_equal(why(eng, "y", w, 2), 1);
    assert_int_equal(w[0].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w[0].used, 3);
    assert_int_equal(w[0].position, 1);
    assert_int_equal(w[0].nshown, 0);
    t_free(eng);
}

static void skip_says_at_limit_or_other_lock(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "runs", 3, SL_SKIP);
    t_claim(eng, 1, "id=h s:runs*2");
    t_claim(eng, 2, "id=g m:gate");
    t_claim(eng, 3, "id=w1 s:runs m:gate");
    t_claim(eng, 4, "id=w2 s:runs*2");
    t_claim(eng, 5, "id=w3 s:runs m:gate");
    assert_string_equal(t_with_state(eng, SL_PENDING), "w1 w2 w3");
    sl_why w[2];
    assert_int_equal(why(eng, "w1", w, 2), 2);
    assert_int_equal(w[0].rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why(eng, "w2", w, 2), 1);
    assert_int_equal(w[0].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w[0].position, 2);
    /* Strict would say behind (w1 ahead takes the free slot); skip does
     * not wait for claims ahead. */
    assert_int_equal(why(eng, "w3", w, 2), 2);
    assert_int_equal(w[0].rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(w[0].position, 3);
    assert_int_equal(w[0].nahead, 2);
    assert_string_equal(ahead_ids(&w[0]), "w1 w2");
    assert_int_equal(w[1].rule, SL_RULE_AT_LIMIT);
    size_t lock = 99;
    assert_int_equal(main_rule(eng, "w3", &lock), SL_RULE_AT_LIMIT);
    assert_int_equal(lock, 1);
    t_free(eng);
}

/* Rebalanced, limit 2: key A holds both slots, a3 (A) waits before b1 (B).
 * With two keys each's quota is 1: B is below and waiting, so a3 is held
 * back by the quota and b1 comes first in the order of choice. */
static void quota_on_a_rebalanced_lock(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "fair", 2, SL_REBALANCED);
    t_claim(eng, 1, "id=a1 s:fair key=A");
    t_claim(eng, 2, "id=a2 s:fair key=A");
    t_claim(eng, 3, "id=a3 s:fair key=A");
    t_claim(eng, 4, "id=b1 s:fair key=B");
    sl_why w[1];
    assert_int_equal(why(eng, "a3", w, 1), 1);
    assert_int_equal(w[0].rule, SL_RULE_QUOTA);
    assert_int_equal(w[0].quota, 1);
    assert_int_equal(w[0].key_used, 2);
    assert_int_equal(w[0].used, 2);
    assert_int_equal(w[0].limit, 2);
    assert_int_equal(w[0].position, 2);
    assert_int_equal(w[0].nahead, 1);
    assert_string_equal(ahead_ids(&w[0]), "b1");

    assert_int_equal(why(eng, "b1", w, 1), 1);
    assert_int_equal(w[0].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w[0].quota, 1);
    assert_int_equal(w[0].key_used, 0);
    assert_int_equal(w[0].position, 1);
    assert_int_equal(w[0].nshown, 0);
    size_t lock = 99;
    assert_int_equal(main_rule(eng, "a3", &lock), SL_RULE_QUOTA);
    assert_int_equal(lock, 0);

    /* Once B has its share, A is no longer held back by the quota. */
    t_release(eng, 5, "a1");
    assert_int_equal(t_state(eng, "b1"), SL_HELD);
    assert_int_equal(why(eng, "a3", w, 1), 1);
    assert_int_equal(w[0].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w[0].key_used, 1);
    t_free(eng);
}

/* ahead[] shows the first 8 in queue order (priority first), nahead all. */
/* Rebalanced with one key: no quota applies, and a waiter that fits by
 * itself but not after the one chosen before it is behind. */
static void behind_on_a_rebalanced_lock(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "fair", 3, SL_REBALANCED);
    t_claim(eng, 0, "id=h s:fair key=A");
    t_claim(eng, 0, "id=g m:gate");
    t_claim(eng, 1, "id=x s:fair*2 m:gate key=A");
    t_claim(eng, 2, "id=y s:fair key=A");
    sl_why w[2];
    assert_int_equal(why(eng, "y", w, 2), 1);
    assert_int_equal(w[0].rule, SL_RULE_BEHIND);
    assert_int_equal(w[0].quota, 3);
    assert_int_equal(w[0].key_used, 1);
    assert_int_equal(w[0].position, 2);
    assert_string_equal(ahead_ids(&w[0]), "x");
    assert_int_equal(why(eng, "x", w, 2), 2);
    assert_int_equal(w[0].rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(w[1].rule, SL_RULE_AT_LIMIT);
    t_free(eng);
}

static void ahead_is_capped_and_in_queue_order(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    for (int i = 0; i < 10; i++) {
        char spec[64];
        snprintf(spec, sizeof(spec), "id=w%d m:x prio=%d", i, i % 2);
        t_claim(eng, i + 1, spec);
    }
    sl_why w[1];
    assert_int_equal(why(eng, "w8", w, 1), 1);
    assert_int_equal(w[0].position, 10);
    assert_int_equal(w[0].nahead, 9);
    assert_int_equal(w[0].nshown, SL_WHY_AHEAD_MAX);
    assert_string_equal(ahead_ids(&w[0]), "w1 w3 w5 w7 w9 w0 w2 w4");
    assert_int_equal(why(eng, "w0", w, 1), 1);
    assert_int_equal(w[0].position, 6);
    assert_int_equal(w[0].nahead, 5);
    assert_string_equal(ahead_ids(&w[0]), "w1 w3 w5 w7 w9");
    assert_int_equal(why(eng, "w1", w, 1), 1);
    assert_int_equal(w[0].position, 1);
    assert_int_equal(w[0].nshown, 0);
    t_free(eng);
}

static void not_pending_has_no_reasons(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 1, "id=p m:x");
    t_claim(eng, 2, "id=gone m:x");
    t_release(eng, 3, "gone");
    sl_why w[1];
    memset(w, 0x5a, sizeof(w));
    size_t lock = 99;
    assert_int_equal(why(eng, "h", w, 1), 0);
    assert_int_equal(main_rule(eng, "h", &lock), SL_RULE_NONE);
    assert_int_equal(lock, 0);
    assert_int_equal(why(eng, "gone", w, 1), 0);
    assert_int_equal(main_rule(eng, "gone", &lock), SL_RULE_NONE);
    assert_int_equal(w[0].nshown, 0x5a5a5a5a5a5a5a5aull & SIZE_MAX); /* untouched */
    assert_int_equal(main_rule(eng, "p", &lock), SL_RULE_AT_LIMIT);
    t_free(eng);
}

static void why_writes_at_most_max(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:a m:b");
    t_claim(eng, 1, "id=p m:a m:b m:c");
    sl_why w[2];
    memset(&w[1], 0x5a, sizeof(w[1]));
    assert_int_equal(why(eng, "p", w, 1), 3);
    assert_string_equal(w[0].key, "mtx/a");
    assert_int_equal(w[0].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w[1].position, 0x5a5a5a5a5a5a5a5aull & SIZE_MAX);
    sl_why all[3];
    assert_int_equal(why(eng, "p", all, 3), 3);
    assert_int_equal(all[1].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(all[2].rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(all[2].used, 0);
    assert_int_equal(all[2].position, 1);
    t_free(eng);
}

/* claim.waiting carries the main rule at the moment the claim was queued. */
static void waiting_event_carries_the_rule(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 2, SL_STRICT);
    t_claim(eng, 0, "id=h s:pool*2");
    t_claim(eng, 0, "id=g m:gate");
    t_events(eng);
    t_claim(eng, 1, "id=c m:free s:pool");
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nevents, 2);
    assert_int_equal(ch.events[1].type, SL_EV_CLAIM_WAITING);
    assert_int_equal(ch.events[1].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(ch.events[1].rule_lock, 1);
    assert_int_equal(ch.events[0].rule, SL_RULE_NONE); /* only waiting has one */
    t_events(eng);

    t_release(eng, 2, "h");
    assert_int_equal(t_state(eng, "c"), SL_HELD);
    t_claim(eng, 3, "id=x s:pool*2 m:gate");
    t_events(eng);
    /* One slot is free and y asks for one, but x ahead asks for two. */
    t_claim(eng, 4, "id=y m:other s:pool");
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nevents, 2);
    assert_int_equal(ch.events[1].rule, SL_RULE_BEHIND);
    assert_int_equal(ch.events[1].rule_lock, 1);
    t_events(eng);
    /* c leaves; x (blocked on the gate) and y still reserve three slots
     * ahead of z, though two are free. */
    t_release(eng, 5, "c");
    t_claim(eng, 6, "id=z s:pool");
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nevents, 3);
    assert_int_equal(ch.events[2].type, SL_EV_CLAIM_WAITING);
    assert_int_equal(ch.events[2].rule, SL_RULE_BEHIND);
    assert_int_equal(ch.events[2].rule_lock, 0);
    assert_string_equal(t_events(eng), "claim.released:c claim.queued:z claim.waiting:z");
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(at_limit_on_a_held_mutex),
        cmocka_unit_test(behind_and_other_lock_on_strict),
        cmocka_unit_test(skip_says_at_limit_or_other_lock),
        cmocka_unit_test(quota_on_a_rebalanced_lock),
        cmocka_unit_test(behind_on_a_rebalanced_lock),
        cmocka_unit_test(ahead_is_capped_and_in_queue_order),
        cmocka_unit_test(not_pending_has_no_reasons),
        cmocka_unit_test(why_writes_at_most_max),
        cmocka_unit_test(waiting_event_carries_the_rule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
