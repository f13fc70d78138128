/* test_bulk.c - ending a set of claims in one step (bulk.c, sl_claims_end).
 *
 * docs/engine.md, "Bulk operations": every member leaves before anyone is
 * let in, then admission (with preemption) runs once, for the claims
 * outside the set. The scenarios are the new user's reproductions (S2: a
 * run's cleanup, DELETE /v1/claims?holder_prefix=; S3: an operator's queue
 * clear, DELETE /v1/queue). Ended one at a time, with admission in between,
 * each of them granted a member on the way out or revoked an unrelated
 * holder. Each scenario runs with the set in both orders (arrival order, as
 * the cleanup lists it, and the reverse, as the queue clear used to go):
 * the outcome must not depend on it. Times are exact. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

/* The engine of the test running: a test that fails leaves it behind, and
 * the teardown frees it, so that the next test's block count starts right. */
static sl_engine *live;

static sl_engine *engine(void)
{
    return live = t_engine();
}

static void done(sl_engine *eng)
{
    live = NULL;
    t_free(eng);
}

static int teardown(void **state)
{
    (void)state;
    if (live)
        sl_engine_free(live);
    live = NULL;
    return 0;
}

/* Ends the claims named in ids (space-separated), listed in that order, or
 * reversed; returns the counts. */
static sl_bulk_counts bulk(sl_engine *eng, int64_t now, sl_bulk how, const char *ids,
                           bool reversed)
{
    sl_claim *set[16];
    size_t n = 0;
    for (const char *p = ids; *p;) {
        char id[32];
        size_t len = strcspn(p, " ");
        memcpy(id, p, len);
        id[len] = '\0';
        set[n++] = t_find(eng, id);
        p += len + (p[len] == ' ');
    }
    for (size_t i = 0; reversed && i < n / 2; i++) {
        sl_claim *x = set[i];
        set[i] = set[n - 1 - i];
        set[n - 1 - i] = x;
    }
    sl_bulk_counts cnt;
    assert_int_equal(sl_claims_end(eng, set, n, how, now, &cnt), 0);
    return cnt;
}

/* S2(a): builders, limit 2, one other holder; the run's big (2 slots) and
 * small claims wait. Withdrawing big alone let small in: a fencing token
 * used up, a step started, for a run being cleaned up. */
static void s2a_cleanup_grants_none_of_its_set(void **state)
{
    (void)state;
    for (int rev = 0; rev < 2; rev++) {
        sl_engine *eng = engine();
        t_sem(eng, 0, "builders", 2, SL_STRICT);
        t_claim(eng, 10, "id=other holder=other/build s:builders");
        t_claim(eng, 20, "id=big holder=run-77/big s:builders*2");
        t_claim(eng, 30, "id=small holder=run-77/small s:builders");
        t_claim(eng, 40, "id=next holder=other/next s:builders");
        t_events(eng);
        sl_bulk_counts n = bulk(eng, 100, SL_BULK_RELEASE, "big small", rev);
        assert_int_equal(n.withdrawn, 2);
        assert_int_equal(n.released + n.canceled + n.left, 0);
        assert_int_equal(t_state(eng, "big"), SL_WITHDRAWN);
        assert_int_equal(t_state(eng, "small"), SL_WITHDRAWN);
        assert_int_equal(t_token(eng, "small", 0), 0);
        /* The claim outside the set is let in, once, after the set left. */
        assert_string_equal(t_events(eng),
                            rev ? "claim.withdrawn:small claim.withdrawn:big claim.acquired:next"
                                : "claim.withdrawn:big claim.withdrawn:small claim.acquired:next");
        assert_int_equal(t_token(eng, "next", 0), 2);
        assert_int_equal(t_view(eng, "next").granted_ms, 100);
        done(eng);
    }
}

/* S2(b): gpu (limit 1, preempt) held by another run; the cleaned-up run's
 * a (priority 10, also blocked on a held mutex) and b (priority 5) wait.
 * Withdrawing a made b the head, which preempted the unrelated holder
 * though nobody was left waiting for gpu. */
static void s2b_cleanup_preempts_nobody(void **state)
{
    (void)state;
    for (int grace = 0; grace < 2; grace++)
        for (int rev = 0; rev < 2; rev++) {
            sl_engine *eng = engine();
            t_preempt_sem(eng, "gpu", 1, SL_STRICT, grace ? 5000 : 0);
            t_claim(eng, 10, "id=train holder=nightly-41/train s:gpu");
            t_claim(eng, 20, "id=mig holder=other/db-migration m:db");
            t_claim(eng, 30, "id=a holder=nightly-42/a prio=10 s:gpu m:db");
            t_claim(eng, 40, "id=b holder=nightly-42/b prio=5 s:gpu");
            assert_int_equal(t_state(eng, "train"), SL_HELD);
            t_events(eng);
            sl_bulk_counts n = bulk(eng, 100, SL_BULK_RELEASE, "a b", rev);
            assert_int_equal(n.withdrawn, 2);
            assert_int_equal(t_state(eng, "train"), SL_HELD);
            assert_int_equal(t_view(eng, "train").revoke_at_ms, -1);
            assert_string_equal(t_events(eng), rev ? "claim.withdrawn:b claim.withdrawn:a"
                                                   : "claim.withdrawn:a claim.withdrawn:b");
            sl_engine_stats st;
            sl_engine_stats_get(eng, &st);
            assert_int_equal(st.preemptions, 0);
            done(eng);
        }
}

/* A cleanup's members in every state: the waiter withdrawn, the holder
 * released, the holder being revoked ended canceled with its preemption's
 * reason; then the urgent claim outside the set gets the slots. */
static void cleanup_ends_each_state_as_a_release(void **state)
{
    (void)state;
    sl_engine *eng = engine();
    t_preempt_sem(eng, "r", 2, SL_STRICT, 1000);
    t_claim(eng, 10, "id=low holder=run/low s:r");
    t_claim(eng, 20, "id=low2 holder=run/low2 s:r");
    t_claim(eng, 30, "id=urgent holder=other/urgent prio=5 s:r");
    assert_int_equal(t_state(eng, "low2"), SL_REVOKING);
    t_claim(eng, 40, "id=w holder=run/w s:r");
    t_events(eng);
    sl_bulk_counts n = bulk(eng, 100, SL_BULK_RELEASE, "low low2 w", false);
    assert_int_equal(n.withdrawn, 1);
    assert_int_equal(n.released, 1);
    assert_int_equal(n.canceled, 1);
    assert_int_equal(n.left, 0);
    assert_int_equal(t_state(eng, "low"), SL_RELEASED);
    assert_int_equal(t_state(eng, "low2"), SL_CANCELED);
    assert_int_equal(t_view(eng, "low2").reason, SL_REASON_PREEMPTED);
    assert_int_equal(t_view(eng, "w").reason, SL_REASON_WITHDRAWN);
    assert_string_equal(t_events(eng), "claim.withdrawn:w claim.released:low "
                                       "claim.canceled:low2 claim.acquired:urgent");
    /* Again: every member has ended, nothing changes. */
    n = bulk(eng, 110, SL_BULK_RELEASE, "low low2 w", false);
    assert_int_equal(n.left, 3);
    assert_string_equal(t_events(eng), "");
    done(eng);
}

/* S3: workers rebalanced, limit 2, one slot free. The cleared run's late
 * (key a, under its quota, blocked on a held mutex) comes first in the
 * order of choice, so early (key b) waits behind it. Canceling late first
 * (the back of the total order) handed the slot to early: a command ran
 * after its run's queue was cleared. */
static void s3_clear_of_rebalanced_queue_grants_none(void **state)
{
    (void)state;
    for (int rev = 0; rev < 2; rev++) {
        sl_engine *eng = engine();
        t_sem(eng, 0, "workers", 2, SL_REBALANCED);
        t_claim(eng, 10, "id=lock holder=other/lock m:artifact-store");
        t_claim(eng, 20, "id=w1 holder=other/w1 key=b s:workers");
        t_claim(eng, 30, "id=w2 holder=other/w2 key=b s:workers");
        t_claim(eng, 40, "id=early holder=nightly-9/early key=b s:workers");
        t_claim(eng, 50, "id=late holder=nightly-9/late key=a s:workers m:artifact-store");
        t_release(eng, 60, "w2");
        assert_int_equal(t_state(eng, "early"), SL_PENDING);
        t_events(eng);
        sl_bulk_counts n = bulk(eng, 100, SL_BULK_CLEAR, "early late", rev);
        assert_int_equal(n.canceled, 2);
        assert_int_equal(t_state(eng, "early"), SL_CANCELED);
        assert_int_equal(t_state(eng, "late"), SL_CANCELED);
        assert_int_equal(t_view(eng, "early").reason, SL_REASON_OPERATOR);
        assert_int_equal(t_token(eng, "early", 0), 0);
        assert_string_equal(t_events(eng), rev ? "claim.canceled:late claim.canceled:early"
                                               : "claim.canceled:early claim.canceled:late");
        assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "workers"), 1);
        done(eng);
    }
}

/* S3 with an innocent victim: gpu (limit 1, preempt, no grace) is held by
 * another team. The cleared run's h (priority 10, gpu and pool) cannot
 * preempt while its own l (key a, blocked on a held mutex) is first in
 * pool's order of choice; canceling l first let h preempt and cancel the
 * other team's training, and h was then held, out of the clear's reach. */
static void s3_clear_preempts_nobody_on_another_lock(void **state)
{
    (void)state;
    for (int rev = 0; rev < 2; rev++) {
        sl_engine *eng = engine();
        t_preempt_sem(eng, "gpu", 1, SL_STRICT, 0);
        t_sem(eng, 0, "pool", 2, SL_REBALANCED);
        t_claim(eng, 10, "id=training holder=team-x/training s:gpu");
        t_claim(eng, 20, "id=p1 holder=other/p1 key=b s:pool");
        t_claim(eng, 30, "id=mx holder=other/mx m:mx");
        t_claim(eng, 40, "id=l holder=run5/l key=a s:pool m:mx");
        t_claim(eng, 50, "id=h holder=run5/h prio=10 key=b s:gpu s:pool");
        assert_int_equal(t_state(eng, "training"), SL_HELD);
        t_events(eng);
        sl_bulk_counts n = bulk(eng, 100, SL_BULK_CLEAR, "h l", rev);
        assert_int_equal(n.canceled, 2);
        assert_int_equal(t_state(eng, "h"), SL_CANCELED);
        assert_int_equal(t_state(eng, "training"), SL_HELD);
        assert_string_equal(t_events(eng), rev ? "claim.canceled:l claim.canceled:h"
                                               : "claim.canceled:h claim.canceled:l");
        done(eng);
    }
}

/* A queue clear ends waiters only: a member that is held (granted since it
 * was listed) is left alone and counted as left. */
static void clear_leaves_holders(void **state)
{
    (void)state;
    sl_engine *eng = engine();
    t_sem(eng, 0, "s", 1, SL_STRICT);
    t_claim(eng, 10, "id=h s:s");
    t_claim(eng, 20, "id=p s:s");
    t_events(eng);
    sl_bulk_counts n = bulk(eng, 100, SL_BULK_CLEAR, "h p", false);
    assert_int_equal(n.canceled, 1);
    assert_int_equal(n.left, 1);
    assert_int_equal(t_state(eng, "h"), SL_HELD);
    assert_string_equal(t_events(eng), "claim.canceled:p");
    sl_claim *none = NULL;
    assert_int_equal(sl_claims_end(eng, &none, 0, (sl_bulk)7, 110, NULL), SL_EINVAL);
    done(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(s2a_cleanup_grants_none_of_its_set, teardown),
        cmocka_unit_test_teardown(s2b_cleanup_preempts_nobody, teardown),
        cmocka_unit_test_teardown(cleanup_ends_each_state_as_a_release, teardown),
        cmocka_unit_test_teardown(s3_clear_of_rebalanced_queue_grants_none, teardown),
        cmocka_unit_test_teardown(s3_clear_preempts_nobody_on_another_lock, teardown),
        cmocka_unit_test_teardown(clear_leaves_holders, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
