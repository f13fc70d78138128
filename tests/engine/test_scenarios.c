/* test_scenarios.c - the scenarios docs/engine.md describes, each end to end:
 * a semaphore of 2 with four claims, priority overtaking waiters but never a
 * holder, one claim taking three locks at once, Argo's multiple-locks
 * warning on a strict queue and its absence on a skip one, a run queue with
 * per-tag limits, semaphore patterns (exact beats pattern, longest pattern
 * wins), and claims on the same locks in opposite orders never deadlocking. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

static sl_why why_of(sl_engine *eng, const char *id, size_t lock)
{
    sl_why w[8];
    size_t n = sl_claim_why(eng, t_find(eng, id), w, 8);
    assert_true(lock < n);
    return w[lock];
}

static sl_rule main_rule(sl_engine *eng, const char *id, size_t *lock)
{
    return sl_claim_main_rule(eng, t_find(eng, id), lock);
}

static void view_of(sl_engine *eng, sl_kind kind, const char *name, sl_lock_view *out)
{
    assert_int_equal(sl_lock_lookup(eng, kind, name, out, NULL), 0);
}

/* (a) A semaphore of limit 2 and four claims: the first two hold, the other
 * two wait in arrival order and go in as slots free. */
static void limit_two_four_claims(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 2, SL_STRICT);
    t_claim(eng, 1, "id=c1 s:pool");
    t_claim(eng, 2, "id=c2 s:pool");
    t_claim(eng, 3, "id=c3 s:pool");
    t_claim(eng, 4, "id=c4 s:pool");
    assert_string_equal(t_events(eng),
                        "semaphore.updated:pool claim.queued:c1 claim.acquired:c1 "
                        "claim.queued:c2 claim.acquired:c2 claim.queued:c3 claim.waiting:c3 "
                        "claim.queued:c4 claim.waiting:c4");
    assert_string_equal(t_with_state(eng, SL_HELD), "c1 c2");
    assert_string_equal(t_with_state(eng, SL_PENDING), "c3 c4");
    assert_int_equal(t_position(eng, "c3", 0), 1);
    assert_int_equal(t_position(eng, "c4", 0), 2);
    sl_why w = why_of(eng, "c4", 0);
    assert_int_equal(w.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w.used, 2);
    assert_int_equal(w.limit, 2);
    assert_int_equal(w.nahead, 1);
    assert_string_equal(t_id(w.ahead[0]), "c3");
    assert_int_equal(t_token(eng, "c1", 0), 1);
    assert_int_equal(t_token(eng, "c2", 0), 2);

    t_release(eng, 5, "c2");
    assert_string_equal(t_events(eng), "claim.released:c2 claim.acquired:c3");
    assert_int_equal(t_token(eng, "c3", 0), 3);
    assert_int_equal(t_position(eng, "c4", 0), 1);
    t_release(eng, 6, "c1");
    assert_string_equal(t_events(eng), "claim.released:c1 claim.acquired:c4");
    assert_int_equal(t_token(eng, "c4", 0), 4);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "pool"), 2);
    t_free(eng);
}

/* (b) Priority 5 goes ahead of two waiting priority-0 claims but does not
 * preempt the holder. */
static void priority_overtakes_waiters_not_holder(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h m:deploy");
    t_claim(eng, 2, "id=w1 m:deploy");
    t_claim(eng, 3, "id=w2 m:deploy");
    (void)t_events(eng);
    t_claim(eng, 4, "id=p m:deploy prio=5");
    assert_string_equal(t_events(eng), "claim.queued:p claim.waiting:p");
    assert_int_equal(t_state(eng, "h"), SL_HELD);
    assert_int_equal(t_position(eng, "p", 0), 1);
    assert_int_equal(t_position(eng, "w1", 0), 2);
    assert_int_equal(t_position(eng, "w2", 0), 3);
    assert_int_equal(why_of(eng, "p", 0).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(why_of(eng, "w1", 0).nahead, 1);

    t_release(eng, 5, "h");
    assert_string_equal(t_events(eng), "claim.released:h claim.acquired:p");
    t_release(eng, 6, "p");
    assert_string_equal(t_events(eng), "claim.released:p claim.acquired:w1");
    t_release(eng, 7, "w1");
    assert_string_equal(t_events(eng), "claim.released:w1 claim.acquired:w2");
    t_free(eng);
}

/* (c) A claim on three locks waits while any of them is held, takes none of
 * them meanwhile, and takes all three at once: one event, a token on each. */
static void three_locks_at_once(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "S", 2, SL_STRICT);
    t_claim(eng, 1, "id=hx m:X");
    t_claim(eng, 2, "id=hs s:S*2");
    t_claim(eng, 3, "id=hz m:Z");
    t_claim(eng, 4, "id=c m:X s:S m:Z");
    size_t at = 9;
    assert_int_equal(main_rule(eng, "c", &at), SL_RULE_AT_LIMIT);
    assert_int_equal(at, 0);
    (void)t_events(eng);

    t_release(eng, 5, "hx");
    assert_string_equal(t_events(eng), "claim.released:hx");
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "X"), 0);
    assert_int_equal(main_rule(eng, "c", &at), SL_RULE_AT_LIMIT);
    assert_int_equal(at, 1);
    t_release(eng, 6, "hz");
    assert_string_equal(t_events(eng), "claim.released:hz");
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "Z"), 0);
    assert_int_equal(why_of(eng, "c", 0).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why_of(eng, "c", 1).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(why_of(eng, "c", 2).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(t_token(eng, "c", 0), 0);

    t_release(eng, 7, "hs");
    assert_string_equal(t_events(eng), "claim.released:hs claim.acquired:c");
    assert_int_equal(t_token(eng, "c", 0), 2);
    assert_int_equal(t_token(eng, "c", 1), 2);
    assert_int_equal(t_token(eng, "c", 2), 2);
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "X"), 1);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 1);
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "Z"), 1);
    sl_claim_view v;
    sl_claim_get(t_find(eng, "c"), &v);
    assert_int_equal(v.granted_ms, 7);
    t_free(eng);
}

/* (d) Argo's warning: on a strict queue, a claim that needs only a free lock
 * waits behind a multi-lock claim at the front that is blocked elsewhere.
 * A holds X; B wants X and Y; C wants only Y. Y (limit 1) is free, but B,
 * ahead on Y, takes its one slot: C is `behind` there. */
static void strict_multi_lock_front_blocks(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=A m:X");
    t_claim(eng, 2, "id=B m:X m:Y");
    t_claim(eng, 3, "id=C m:Y");
    /* The claim.waiting events carry the main reason at that moment. */
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nevents, 6);
    assert_int_equal(ch.events[3].type, SL_EV_CLAIM_WAITING);
    assert_int_equal(ch.events[3].rule, SL_RULE_AT_LIMIT);
    assert_int_equal(ch.events[3].rule_lock, 0);
    assert_int_equal(ch.events[5].type, SL_EV_CLAIM_WAITING);
    assert_string_equal(t_id(ch.events[5].claim), "C");
    assert_int_equal(ch.events[5].rule, SL_RULE_BEHIND);
    assert_int_equal(ch.events[5].rule_lock, 0);
    assert_string_equal(t_with_state(eng, SL_PENDING), "B C");
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "Y"), 0);
    size_t at = 9;
    assert_int_equal(main_rule(eng, "B", &at), SL_RULE_AT_LIMIT);
    assert_int_equal(at, 0);
    assert_int_equal(why_of(eng, "B", 1).rule, SL_RULE_OTHER_LOCK);
    sl_why w = why_of(eng, "C", 0);
    assert_int_equal(w.rule, SL_RULE_BEHIND);
    assert_string_equal(w.key, "mtx/Y");
    assert_int_equal(w.used, 0);
    assert_int_equal(w.limit, 1);
    assert_int_equal(w.position, 2);
    assert_int_equal(w.nshown, 1);
    assert_string_equal(t_id(w.ahead[0]), "B");
    assert_int_equal(main_rule(eng, "C", &at), SL_RULE_BEHIND);
    (void)t_events(eng);

    t_release(eng, 4, "A");
    assert_string_equal(t_events(eng), "claim.released:A claim.acquired:B");
    assert_int_equal(why_of(eng, "C", 0).rule, SL_RULE_AT_LIMIT);
    t_release(eng, 5, "B");
    assert_string_equal(t_events(eng), "claim.released:B claim.acquired:C");
    t_free(eng);
}

/* (e) The same with Y a skip semaphore of limit 1: C passes B, which is
 * blocked on X, and B then waits for both. */
static void skip_lets_free_lock_pass(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "Y", 1, SL_SKIP);
    t_claim(eng, 1, "id=A m:X");
    t_claim(eng, 2, "id=B m:X s:Y");
    t_claim(eng, 3, "id=C s:Y");
    assert_int_equal(t_state(eng, "C"), SL_HELD);
    assert_int_equal(why_of(eng, "B", 0).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(why_of(eng, "B", 1).rule, SL_RULE_AT_LIMIT);
    (void)t_events(eng);
    t_release(eng, 4, "A");
    assert_string_equal(t_events(eng), "claim.released:A");
    assert_int_equal(why_of(eng, "B", 0).rule, SL_RULE_OTHER_LOCK);
    size_t at = 9;
    assert_int_equal(main_rule(eng, "B", &at), SL_RULE_AT_LIMIT);
    assert_int_equal(at, 1);
    t_release(eng, 5, "C");
    assert_string_equal(t_events(eng), "claim.released:C claim.acquired:B");
    t_free(eng);
}

/* (f) A run queue: every run claims `runs` (limit 2, skip: first fit), and
 * `tag/env=*` limits each environment to one run at a time. */
static void run_queue_with_tag_limits(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "runs", 2, SL_SKIP);
    t_sem(eng, 0, "tag/env=*", 1, SL_STRICT);
    t_claim(eng, 1, "id=r1 s:runs tag=env=prod");
    t_claim(eng, 2, "id=r2 s:runs tag=env=prod");
    /* r2: room in runs, but prod runs already. */
    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, t_find(eng, "r2"), 1, &lv);
    assert_string_equal(lv.key, "sem/tag/env=prod");
    assert_int_equal(lv.via, SL_VIA_TAG);
    assert_int_equal(lv.position, 1);
    assert_int_equal(why_of(eng, "r2", 0).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why_of(eng, "r2", 1).rule, SL_RULE_AT_LIMIT);
    /* dev passes r2 on runs (skip) and takes its last slot. */
    t_claim(eng, 3, "id=r3 s:runs tag=env=dev");
    t_claim(eng, 4, "id=r4 s:runs tag=env=staging");
    assert_string_equal(t_with_state(eng, SL_HELD), "r1 r3");
    assert_string_equal(t_with_state(eng, SL_PENDING), "r2 r4");
    assert_int_equal(why_of(eng, "r2", 0).rule, SL_RULE_AT_LIMIT);
    /* r4: nobody runs staging, but runs is full. */
    size_t at = 9;
    assert_int_equal(main_rule(eng, "r4", &at), SL_RULE_AT_LIMIT);
    assert_int_equal(at, 0);
    assert_int_equal(why_of(eng, "r4", 1).rule, SL_RULE_OTHER_LOCK);

    sl_lock_view v;
    view_of(eng, SL_KIND_SEMAPHORE, "tag/env=prod", &v);
    assert_int_equal(v.limit, 1);
    assert_non_null(v.from_pattern);
    assert_string_equal(v.from_pattern, "tag/env=*");
    assert_int_equal(v.used, 1);
    assert_int_equal(v.npending, 1);
    view_of(eng, SL_KIND_SEMAPHORE, "tag/env=staging", &v);
    assert_int_equal(v.used, 0);
    assert_int_equal(v.npending, 1);
    view_of(eng, SL_KIND_SEMAPHORE, "runs", &v);
    assert_int_equal(v.used, 2);
    assert_int_equal(v.npending, 2);
    (void)t_events(eng);

    /* prod frees and a runs slot with it: r2, older, takes both. */
    t_release(eng, 5, "r1");
    assert_string_equal(t_events(eng), "claim.released:r1 claim.acquired:r2");
    t_release(eng, 6, "r3");
    assert_string_equal(t_events(eng), "claim.released:r3 claim.acquired:r4");
    t_free(eng);
}

/* (f) continued: were `runs` strict, r3 (dev) would wait behind r2, which
 * waits for prod: the reason run queues use skip. */
static void run_queue_strict_blocks_behind_tag(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "runs", 2, SL_STRICT);
    t_sem(eng, 0, "tag/env=*", 1, SL_STRICT);
    t_claim(eng, 1, "id=r1 s:runs tag=env=prod");
    t_claim(eng, 2, "id=r2 s:runs tag=env=prod");
    t_claim(eng, 3, "id=r3 s:runs tag=env=dev");
    assert_string_equal(t_with_state(eng, SL_HELD), "r1");
    sl_why w = why_of(eng, "r3", 0);
    assert_int_equal(w.rule, SL_RULE_BEHIND);
    assert_string_equal(t_id(w.ahead[0]), "r2");
    (void)t_events(eng);
    t_release(eng, 4, "r1");
    assert_string_equal(t_events(eng), "claim.released:r1 claim.acquired:r2 claim.acquired:r3");
    t_free(eng);
}

/* (f) continued: `tag/env` limits all values together, after the per-value
 * lock in the claim's locks. */
static void run_queue_tag_all_values(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "tag/env=*", 1, SL_STRICT);
    t_sem(eng, 0, "tag/env", 2, SL_STRICT);
    t_claim(eng, 1, "id=p tag=env=prod");
    t_claim(eng, 2, "id=d tag=env=dev");
    t_claim(eng, 3, "id=s tag=env=staging");
    assert_string_equal(t_with_state(eng, SL_HELD), "p d");
    sl_claim_view cv;
    sl_claim_get(t_find(eng, "s"), &cv);
    assert_int_equal(cv.nlocks, 2);
    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, t_find(eng, "s"), 0, &lv);
    assert_string_equal(lv.key, "sem/tag/env=staging");
    sl_claim_lock_get(eng, t_find(eng, "s"), 1, &lv);
    assert_string_equal(lv.key, "sem/tag/env");
    assert_int_equal(why_of(eng, "s", 0).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why_of(eng, "s", 1).rule, SL_RULE_AT_LIMIT);
    /* A tag with nothing configured for it adds no lock. */
    t_claim(eng, 4, "id=n tag=team=core");
    sl_claim_get(t_find(eng, "n"), &cv);
    assert_int_equal(cv.nlocks, 0);
    assert_int_equal(cv.state, SL_HELD);
    (void)t_events(eng);
    t_release(eng, 5, "d");
    assert_string_equal(t_events(eng), "claim.released:d claim.acquired:s");
    t_free(eng);
}

/* (g) Patterns: the pattern "foo/" + '*' of limit 3 gives every foo/x its
 * own limit 3; the exact foo/db beats it; the longest matching pattern
 * (foo/bar/ + '*') wins. */
static void patterns(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "foo/*", 3, SL_STRICT);
    t_sem(eng, 0, "foo/db", 1, SL_STRICT);
    t_sem(eng, 0, "foo/bar/*", 2, SL_STRICT);
    char spec[64];
    const char *names[] = {"foo/x", "foo/y", "foo/db", "foo/bar/q", "foo/barq"};
    for (size_t n = 0; n < 5; n++)
        for (int i = 1; i <= 4; i++) {
            snprintf(spec, sizeof(spec), "id=%zu.%d s:%s", n, i, names[n]);
            t_claim(eng, (int64_t)(n * 10) + i, spec);
        }
    /* foo/x and foo/y: 3 each; foo/db: 1; foo/bar/q: 2; foo/barq: 3 (the
     * prefix foo/bar/ does not match it). */
    assert_string_equal(t_with_state(eng, SL_HELD),
                        "0.1 0.2 0.3 1.1 1.2 1.3 2.1 3.1 3.2 4.1 4.2 4.3");
    struct {
        const char *name, *from;
        uint32_t limit;
        uint64_t used;
        size_t npending;
    } want[] = {{"foo/x", "foo/*", 3, 3, 1},
                {"foo/y", "foo/*", 3, 3, 1},
                {"foo/db", NULL, 1, 1, 3},
                {"foo/bar/q", "foo/bar/*", 2, 2, 2},
                {"foo/barq", "foo/*", 3, 3, 1}};
    for (size_t i = 0; i < 5; i++) {
        sl_lock_view v;
        view_of(eng, SL_KIND_SEMAPHORE, want[i].name, &v);
        assert_true(v.configured);
        assert_int_equal(v.limit, want[i].limit);
        assert_int_equal(v.used, want[i].used);
        assert_int_equal(v.npending, want[i].npending);
        if (want[i].from) {
            assert_non_null(v.from_pattern);
            assert_string_equal(v.from_pattern, want[i].from);
        } else {
            assert_null(v.from_pattern);
        }
    }
    /* Refusals follow each semaphore's own limit. */
    assert_int_equal(t_claim_rc(eng, 100, "id=z1 s:foo/db*2", NULL), SL_EINVAL);
    assert_int_equal(t_claim_rc(eng, 100, "id=z2 s:foo/bar/z*3", NULL), SL_EINVAL);
    assert_int_equal(t_claim_rc(eng, 100, "id=z3 s:foo/new*4", NULL), SL_EINVAL);
    assert_int_equal(t_claim_rc(eng, 100, "id=z4 s:foo/new*3", NULL), 0);
    assert_int_equal(t_claim_rc(eng, 100, "id=z5 s:bar/x", NULL), SL_EUNKNOWN);
    t_free(eng);
}

/* (h) Two claims on X and Y named in opposite orders never deadlock: both
 * queues use the one total order, and a claim takes both or neither. */
static void no_deadlock_opposite_orders(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=hx m:X");
    t_claim(eng, 2, "id=hy m:Y");
    t_claim(eng, 3, "id=a m:X m:Y");
    t_claim(eng, 4, "id=b m:Y m:X");
    assert_int_equal(t_position(eng, "a", 0), 1); /* X */
    assert_int_equal(t_position(eng, "a", 1), 1); /* Y */
    assert_int_equal(t_position(eng, "b", 0), 2); /* Y */
    assert_int_equal(t_position(eng, "b", 1), 2); /* X */
    (void)t_events(eng);

    /* X frees: a takes nothing until Y frees too; b waits behind a on X. */
    t_release(eng, 5, "hx");
    assert_string_equal(t_events(eng), "claim.released:hx");
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "X"), 0);
    assert_int_equal(why_of(eng, "b", 1).rule, SL_RULE_BEHIND);
    t_release(eng, 6, "hy");
    assert_string_equal(t_events(eng), "claim.released:hy claim.acquired:a");
    t_release(eng, 7, "a");
    assert_string_equal(t_events(eng), "claim.released:a claim.acquired:b");
    assert_int_equal(t_token(eng, "b", 0), 3); /* Y: hy, a, b */
    assert_int_equal(t_token(eng, "b", 1), 3); /* X: hx, a, b */
    t_free(eng);
}

/* (h) continued: a cycle of three claims over three locks (X-Y, Y-Z, Z-X),
 * freed in any order, always lets the first in the total order through. */
static void no_deadlock_cycle(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h m:X m:Y m:Z");
    t_claim(eng, 2, "id=a m:X m:Y");
    t_claim(eng, 3, "id=b m:Y m:Z");
    t_claim(eng, 4, "id=c m:Z m:X prio=1");
    (void)t_events(eng);
    /* All three free at once: c (priority 1) first takes Z and X; a needs
     * X: waits; b needs Z: waits. */
    t_release(eng, 5, "h");
    assert_string_equal(t_events(eng), "claim.released:h claim.acquired:c");
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "Y"), 0);
    /* a is first on Y and X; b is behind a on Y. */
    assert_int_equal(why_of(eng, "a", 1).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why_of(eng, "b", 0).rule, SL_RULE_BEHIND);
    t_release(eng, 6, "c");
    assert_string_equal(t_events(eng), "claim.released:c claim.acquired:a");
    /* b: Z is free but Y is a's. */
    assert_int_equal(why_of(eng, "b", 1).rule, SL_RULE_OTHER_LOCK);
    t_release(eng, 7, "a");
    assert_string_equal(t_events(eng), "claim.released:a claim.acquired:b");
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(limit_two_four_claims),
        cmocka_unit_test(priority_overtakes_waiters_not_holder),
        cmocka_unit_test(three_locks_at_once),
        cmocka_unit_test(strict_multi_lock_front_blocks),
        cmocka_unit_test(skip_lets_free_lock_pass),
        cmocka_unit_test(run_queue_with_tag_limits),
        cmocka_unit_test(run_queue_strict_blocks_behind_tag),
        cmocka_unit_test(run_queue_tag_all_values),
        cmocka_unit_test(patterns),
        cmocka_unit_test(no_deadlock_opposite_orders),
        cmocka_unit_test(no_deadlock_cycle),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
