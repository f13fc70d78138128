/* test_group.c - concurrency groups and their cancel modes (group.c).
 *
 * A group is the lock group/G (a mutex, or a semaphore where configured).
 * `cancel: pending` supersedes the group's waiters that come before the new
 * claim in (created, arrival) order; `cancel: in-progress` also revokes the
 * holders before it, who keep their slots until they release or the new
 * claim's grace runs out (docs/engine.md, "Tags and groups"). Times are
 * exact: a grace of 1000 given at t=500 ends at 1500, not 1499 or 1501. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static void group_adds_a_mutex(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a group=g");
    t_claim(eng, 2, "id=b group=g");
    t_claim(eng, 3, "id=c m:x group=h");

    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, t_find(eng, "a"), 0, &lv);
    assert_int_equal(t_view(eng, "a").nlocks, 1);
    assert_int_equal(lv.kind, SL_KIND_MUTEX);
    assert_string_equal(lv.name, "group/g");
    assert_string_equal(lv.key, "mtx/group/g");
    assert_int_equal(lv.via, SL_VIA_GROUP);
    assert_int_equal(lv.token, 1);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    /* A mutex: the second claim of the group waits. */
    assert_int_equal(t_state(eng, "b"), SL_PENDING);
    assert_int_equal(t_position(eng, "b", 0), 1);

    /* The group lock comes after the explicit locks. */
    sl_claim_lock_get(eng, t_find(eng, "c"), 0, &lv);
    assert_string_equal(lv.key, "mtx/x");
    assert_int_equal(lv.via, SL_VIA_LOCK);
    sl_claim_lock_get(eng, t_find(eng, "c"), 1, &lv);
    assert_string_equal(lv.key, "mtx/group/h");
    assert_int_equal(lv.via, SL_VIA_GROUP);
    assert_string_equal(t_view(eng, "c").group, "h");
    assert_string_equal(t_events(eng), "claim.queued:a claim.acquired:a claim.queued:b "
                                       "claim.waiting:b claim.queued:c claim.acquired:c");
    t_free(eng);
}

static void group_is_a_semaphore_where_configured(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "group/*", 2, SL_STRICT);
    t_sem(eng, 0, "group/solo", 1, SL_STRICT); /* an exact name beats the pattern */
    t_claim(eng, 1, "id=a group=g");
    t_claim(eng, 2, "id=b group=g");
    t_claim(eng, 3, "id=c group=g");
    t_claim(eng, 4, "id=s1 group=solo");
    t_claim(eng, 5, "id=s2 group=solo");

    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, t_find(eng, "a"), 0, &lv);
    assert_int_equal(lv.kind, SL_KIND_SEMAPHORE);
    assert_string_equal(lv.key, "sem/group/g");
    assert_int_equal(lv.via, SL_VIA_GROUP);
    assert_string_equal(t_with_state(eng, SL_HELD), "a b s1");
    assert_string_equal(t_with_state(eng, SL_PENDING), "c s2");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "group/g"), 2);
    assert_int_equal(t_token(eng, "b", 0), 2);

    sl_lock_view v;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, "group/g", &v, NULL), 0);
    assert_string_equal(v.from_pattern, "group/*");
    assert_int_equal(v.limit, 2);
    /* The mutex of that name was never touched. */
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, "group/g", &v, NULL), 0);
    assert_int_equal(v.used, 0);
    t_free(eng);
}

static void cancel_pending_supersedes_earlier_waiters(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h group=g created=100");
    t_claim(eng, 2, "id=w1 group=g created=200");
    t_claim(eng, 3, "id=w2 group=g created=300 prio=7");
    t_events(eng);

    t_claim(eng, 10, "id=n group=g cancel=pending created=400");
    /* Queue order is w2 (priority 7) then w1: the events follow it. */
    assert_int_equal(t_nevents(eng), 4);
    sl_event ev = t_event_at(eng, 1);
    assert_int_equal(ev.type, SL_EV_CLAIM_SUPERSEDED);
    assert_int_equal(ev.reason, SL_REASON_SUPERSEDED);
    assert_int_equal(ev.time_ms, 10);
    sl_event wait_ev = t_event_at(eng, 3);
    assert_int_equal(wait_ev.rule, SL_RULE_AT_LIMIT);
    assert_string_equal(t_events(eng), "claim.queued:n claim.superseded:w2 "
                                       "claim.superseded:w1 claim.waiting:n");
    for (int i = 0; i < 2; i++) {
        sl_claim_view v = t_view(eng, i ? "w1" : "w2");
        assert_int_equal(v.state, SL_SUPERSEDED);
        assert_int_equal(v.reason, SL_REASON_SUPERSEDED);
        assert_string_equal(v.by, "n");
        assert_int_equal(v.ended_ms, 10);
    }
    /* cancel: pending leaves the holder alone. */
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.state, SL_HELD);
    assert_null(h.by);
    assert_int_equal(t_position(eng, "n", 0), 1);
    assert_int_equal(sl_pending_position(eng, t_find(eng, "n")), 1);
    t_free(eng);
}

static void cancel_pending_leaves_later_created_alone(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h group=g created=100");
    t_claim(eng, 2, "id=old group=g created=200");
    t_claim(eng, 3, "id=rerun group=g created=900"); /* arrives earlier, created later */
    t_events(eng);

    t_claim(eng, 4, "id=n group=g cancel=pending created=500");
    assert_string_equal(t_events(eng), "claim.queued:n claim.superseded:old claim.waiting:n");
    assert_int_equal(t_state(eng, "rerun"), SL_PENDING);
    assert_null(t_view(eng, "rerun").by);
    /* n is older than rerun, so it is ahead of it. */
    assert_int_equal(t_position(eng, "n", 0), 1);
    assert_int_equal(t_position(eng, "rerun", 0), 2);
    t_free(eng);
}

static void cancel_pending_ties_on_created_use_arrival(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h group=g created=0");
    t_claim(eng, 2, "id=w group=g created=500");
    t_claim(eng, 3, "id=n group=g created=500 cancel=pending");
    assert_int_equal(t_state(eng, "w"), SL_SUPERSEDED);
    assert_string_equal(t_view(eng, "w").by, "n");
    t_events(eng);
    /* Same created again: n arrived earlier, so m supersedes it. */
    t_claim(eng, 4, "id=m group=g created=500 cancel=pending");
    assert_string_equal(t_events(eng), "claim.queued:m claim.superseded:n claim.waiting:m");
    assert_string_equal(t_view(eng, "n").by, "m");
    t_free(eng);
}

static void cancel_pending_can_let_the_new_claim_in(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    /* w waits on busy; it is first in the group's queue, so a newcomer of
     * the group would be behind it, were w not superseded first. */
    t_claim(eng, 1, "id=x m:busy");
    t_claim(eng, 2, "id=w m:busy group=g");
    t_events(eng);
    t_claim(eng, 3, "id=n group=g cancel=pending");
    assert_string_equal(t_events(eng), "claim.queued:n claim.superseded:w claim.acquired:n");
    assert_int_equal(t_token(eng, "n", 0), 1);
    /* w's place on busy is gone too. */
    sl_lock_view v;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, "busy", &v, NULL), 0);
    assert_int_equal(v.npending, 0);
    t_free(eng);
}

static void cancel_pending_only_touches_its_group(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h1 group=g m:x");
    t_claim(eng, 2, "id=w1 group=other m:x");
    t_claim(eng, 3, "id=w2 m:x");
    t_claim(eng, 4, "id=w3 group=g");
    t_events(eng);
    t_claim(eng, 5, "id=n group=g cancel=pending");
    assert_string_equal(t_events(eng), "claim.queued:n claim.superseded:w3 claim.waiting:n");
    assert_string_equal(t_with_state(eng, SL_PENDING), "w1 w2 n");
    t_free(eng);
}

static void cancel_in_progress_revokes_earlier_holders(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g created=100");
    t_claim(eng, 1, "id=w group=g created=200");
    t_events(eng);

    t_claim(eng, 500, "id=n group=g cancel=in-progress grace=1000 created=300");
    assert_int_equal(t_nevents(eng), 4);
    sl_event rev = t_event_at(eng, 2);
    assert_int_equal(rev.type, SL_EV_CLAIM_REVOKING);
    assert_int_equal(rev.reason, SL_REASON_REVOKED);
    assert_int_equal(rev.time_ms, 500);
    assert_string_equal(t_events(eng), "claim.queued:n claim.superseded:w "
                                       "claim.revoking:h claim.waiting:n");
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.state, SL_REVOKING);
    assert_int_equal(h.reason, SL_REASON_REVOKED);
    assert_string_equal(h.by, "n");
    assert_int_equal(h.revoke_at_ms, 1500);
    assert_int_equal(h.ended_ms, -1);
    assert_string_equal(t_view(eng, "w").by, "n");
    /* The revoked holder keeps its slot. */
    sl_lock_view lv;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, "group/g", &lv, NULL), 0);
    assert_int_equal(lv.used, 1);
    assert_int_equal(lv.nholders, 1);
    assert_int_equal(lv.npending, 1);
    assert_int_equal(sl_engine_next_deadline(eng), 1500);

    sl_engine_advance(eng, 1499);
    assert_int_equal(t_state(eng, "h"), SL_REVOKING);
    assert_int_equal(t_state(eng, "n"), SL_PENDING);
    assert_string_equal(t_events(eng), "");

    /* Advanced late: the outcome is dated at the grace's end. */
    sl_engine_advance(eng, 5000);
    assert_int_equal(t_nevents(eng), 2);
    assert_int_equal(t_event_at(eng, 0).time_ms, 1500);
    assert_int_equal(t_event_at(eng, 0).reason, SL_REASON_GRACE);
    assert_int_equal(t_event_at(eng, 1).time_ms, 1500);
    assert_string_equal(t_events(eng), "claim.canceled:h claim.acquired:n");
    h = t_view(eng, "h");
    assert_int_equal(h.state, SL_CANCELED);
    assert_int_equal(h.reason, SL_REASON_GRACE);
    assert_int_equal(h.ended_ms, 1500);
    assert_int_equal(h.revoke_at_ms, -1);
    assert_string_equal(h.by, "n");
    sl_claim_view n = t_view(eng, "n");
    assert_int_equal(n.state, SL_HELD);
    assert_int_equal(n.granted_ms, 1500);
    assert_int_equal(t_token(eng, "n", 0), 2);
    t_free(eng);
}

static void grace_ends_at_the_exact_millisecond(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g");
    t_claim(eng, 10, "id=n group=g cancel=in-progress grace=250");
    sl_engine_advance(eng, 259);
    assert_int_equal(t_state(eng, "h"), SL_REVOKING);
    t_events(eng);
    sl_engine_advance(eng, 260);
    assert_int_equal(t_state(eng, "h"), SL_CANCELED);
    assert_int_equal(t_view(eng, "n").granted_ms, 260);
    assert_string_equal(t_events(eng), "claim.canceled:h claim.acquired:n");
    t_free(eng);
}

static void grace_defaults_to_the_engine_option(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.default_grace_ms = 700;
    sl_engine *eng = t_engine_opts(&opts);
    t_claim(eng, 0, "id=h group=g");
    t_claim(eng, 100, "id=n group=g cancel=in-progress");
    assert_int_equal(t_view(eng, "n").grace_ms, 700);
    assert_int_equal(t_view(eng, "h").revoke_at_ms, 800);
    t_free(eng);
}

static void cancel_in_progress_leaves_later_holders_alone(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g created=900");
    t_events(eng);
    t_claim(eng, 1, "id=n group=g cancel=in-progress grace=0 created=500");
    assert_string_equal(t_events(eng), "claim.queued:n claim.waiting:n");
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.state, SL_HELD);
    assert_null(h.by);
    assert_int_equal(h.revoke_at_ms, -1);
    assert_int_equal(t_state(eng, "n"), SL_PENDING);
    t_free(eng);
}

static void grace_zero_cancels_at_once(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g");
    t_claim(eng, 1, "id=w group=g");
    t_events(eng);
    t_claim(eng, 50, "id=n group=g cancel=in-progress grace=0");
    assert_string_equal(t_events(eng), "claim.queued:n claim.superseded:w "
                                       "claim.canceled:h claim.acquired:n");
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.state, SL_CANCELED);
    /* No grace was given: the holder ends as revoked, not as out of grace. */
    assert_int_equal(h.reason, SL_REASON_REVOKED);
    assert_string_equal(h.by, "n");
    assert_int_equal(h.ended_ms, 50);
    sl_claim_view n = t_view(eng, "n");
    assert_int_equal(n.state, SL_HELD);
    assert_int_equal(n.granted_ms, 50);
    assert_int_equal(t_token(eng, "n", 0), 2);
    t_free(eng);
}

static void release_of_revoking_lets_the_new_claim_in(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g");
    t_claim(eng, 100, "id=n group=g cancel=in-progress grace=10000");
    t_events(eng);
    t_release(eng, 700, "h");
    assert_string_equal(t_events(eng), "claim.canceled:h claim.acquired:n");
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.state, SL_CANCELED);
    assert_int_equal(h.reason, SL_REASON_REVOKED_FREED);
    assert_string_equal(h.by, "n");
    assert_int_equal(h.ended_ms, 700);
    assert_int_equal(t_view(eng, "n").granted_ms, 700);
    /* The grace deadline is disarmed: nothing happens at 10100. */
    sl_engine_advance(eng, 10100);
    assert_string_equal(t_events(eng), "");
    assert_int_equal(t_state(eng, "n"), SL_HELD);
    t_free(eng);
}

static void renew_of_revoking_conflicts(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g lease=5000");
    t_claim(eng, 100, "id=n group=g cancel=in-progress grace=1000");
    t_events(eng);
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "h"), 200), SL_ECONFLICT);
    assert_string_equal(t_events(eng), "");
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.life_ms, 0);
    assert_int_equal(h.state, SL_REVOKING);
    /* The pending newcomer can renew. */
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "n"), 200), 0);
    assert_string_equal(t_events(eng), "claim.renewed:n");
    t_free(eng);
}

static void revoked_twice_keeps_the_earlier_deadline(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g");
    t_claim(eng, 100, "id=n1 group=g cancel=in-progress grace=1000");
    assert_int_equal(t_view(eng, "h").revoke_at_ms, 1100);
    t_events(eng);

    /* A later deadline does not extend the first one, and no second
     * revoking event is emitted. */
    t_claim(eng, 200, "id=n2 group=g cancel=in-progress grace=5000");
    assert_string_equal(t_events(eng), "claim.queued:n2 claim.superseded:n1 claim.waiting:n2");
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.revoke_at_ms, 1100);
    assert_string_equal(h.by, "n1");

    /* An earlier one wins; `by` still names the first revoker. */
    t_claim(eng, 300, "id=n3 group=g cancel=in-progress grace=100");
    assert_string_equal(t_events(eng), "claim.queued:n3 claim.superseded:n2 claim.waiting:n3");
    h = t_view(eng, "h");
    assert_int_equal(h.revoke_at_ms, 400);
    assert_string_equal(h.by, "n1");
    assert_int_equal(sl_engine_next_deadline(eng), 400);

    sl_engine_advance(eng, 399);
    assert_int_equal(t_state(eng, "h"), SL_REVOKING);
    sl_engine_advance(eng, 400);
    assert_string_equal(t_events(eng), "claim.canceled:h claim.acquired:n3");
    assert_int_equal(t_view(eng, "h").reason, SL_REASON_GRACE);
    assert_int_equal(t_view(eng, "n3").granted_ms, 400);
    t_free(eng);
}

static void revoked_again_with_grace_zero_ends_now(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g");
    t_claim(eng, 100, "id=n1 group=g cancel=in-progress grace=1000");
    t_events(eng);
    /* grace 0 is the earliest deadline of all: now. */
    t_claim(eng, 200, "id=n2 group=g cancel=in-progress grace=0");
    assert_string_equal(t_events(eng), "claim.queued:n2 claim.superseded:n1 "
                                       "claim.canceled:h claim.acquired:n2");
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.state, SL_CANCELED);
    assert_int_equal(h.ended_ms, 200);
    assert_string_equal(h.by, "n1"); /* the first claim that revoked it */
    t_free(eng);
}

static void revoking_claim_still_expires_by_lease(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h group=g lease=300");
    t_claim(eng, 100, "id=n group=g cancel=in-progress grace=10000");
    t_events(eng);
    sl_engine_advance(eng, 299);
    assert_int_equal(t_state(eng, "h"), SL_REVOKING);
    sl_engine_advance(eng, 1000);
    assert_string_equal(t_events(eng), "claim.expired:h claim.acquired:n");
    sl_claim_view h = t_view(eng, "h");
    assert_int_equal(h.state, SL_EXPIRED);
    assert_int_equal(h.reason, SL_REASON_LEASE);
    assert_int_equal(h.ended_ms, 300);
    assert_int_equal(t_view(eng, "n").granted_ms, 300);
    t_free(eng);
}

static void in_progress_on_a_semaphore_group(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "group/*", 2, SL_STRICT);
    t_claim(eng, 0, "id=a group=g");
    t_claim(eng, 10, "id=b group=g");
    t_events(eng);
    t_claim(eng, 20, "id=n group=g cancel=in-progress grace=500");
    assert_string_equal(t_events(eng), "claim.queued:n claim.revoking:a "
                                       "claim.revoking:b claim.waiting:n");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "group/g"), 2);
    /* One revoked holder lets go: its slot is enough for n. */
    t_release(eng, 30, "a");
    assert_string_equal(t_events(eng), "claim.canceled:a claim.acquired:n");
    assert_int_equal(t_view(eng, "a").reason, SL_REASON_REVOKED_FREED);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "group/g"), 2);
    sl_engine_advance(eng, 519);
    assert_int_equal(t_state(eng, "b"), SL_REVOKING);
    sl_engine_advance(eng, 520);
    assert_string_equal(t_events(eng), "claim.canceled:b");
    assert_int_equal(t_view(eng, "b").reason, SL_REASON_GRACE);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "group/g"), 1);
    t_free(eng);
}

/* Revocation does not make the newcomer wait when there is room: it is let
 * in beside the revoking holder, who keeps its slot until its grace ends. */
static void in_progress_newcomer_may_hold_beside_the_revoked(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "group/*", 2, SL_STRICT);
    t_claim(eng, 0, "id=h group=g");
    t_events(eng);
    t_claim(eng, 10, "id=n group=g cancel=in-progress grace=100");
    assert_string_equal(t_events(eng), "claim.queued:n claim.revoking:h claim.acquired:n");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "group/g"), 2);
    assert_int_equal(t_state(eng, "h"), SL_REVOKING);
    sl_engine_advance(eng, 110);
    assert_string_equal(t_events(eng), "claim.canceled:h");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "group/g"), 1);
    t_free(eng);
}

static void cancel_without_group_is_refused(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_events(eng);
    const char *specs[] = {"id=p m:x cancel=pending", "id=q m:x cancel=in-progress grace=0"};
    for (size_t i = 0; i < 2; i++) {
        sl_error err;
        memset(&err, 0, sizeof(err));
        assert_int_equal(t_claim_rc(eng, 1, specs[i], &err), SL_EINVAL);
        assert_non_null(err.what);
        assert_string_equal(err.field, "cancel");
    }
    assert_null(sl_claim_find(eng, "p"));
    assert_null(sl_claim_find(eng, "q"));
    assert_false(sl_engine_changes_pending(eng));
    assert_int_equal(t_state(eng, "h"), SL_HELD);
    t_free(eng);
}

static void cancel_on_a_fresh_group_just_claims(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=n group=g cancel=in-progress grace=0");
    assert_string_equal(t_events(eng), "claim.queued:n claim.acquired:n");
    sl_claim_view v = t_view(eng, "n");
    assert_int_equal(v.cancel, SL_CANCEL_IN_PROGRESS);
    assert_int_equal(v.grace_ms, 0);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(group_adds_a_mutex),
        cmocka_unit_test(group_is_a_semaphore_where_configured),
        cmocka_unit_test(cancel_pending_supersedes_earlier_waiters),
        cmocka_unit_test(cancel_pending_leaves_later_created_alone),
        cmocka_unit_test(cancel_pending_ties_on_created_use_arrival),
        cmocka_unit_test(cancel_pending_can_let_the_new_claim_in),
        cmocka_unit_test(cancel_pending_only_touches_its_group),
        cmocka_unit_test(cancel_in_progress_revokes_earlier_holders),
        cmocka_unit_test(grace_ends_at_the_exact_millisecond),
        cmocka_unit_test(grace_defaults_to_the_engine_option),
        cmocka_unit_test(cancel_in_progress_leaves_later_holders_alone),
        cmocka_unit_test(grace_zero_cancels_at_once),
        cmocka_unit_test(release_of_revoking_lets_the_new_claim_in),
        cmocka_unit_test(renew_of_revoking_conflicts),
        cmocka_unit_test(revoked_twice_keeps_the_earlier_deadline),
        cmocka_unit_test(revoked_again_with_grace_zero_ends_now),
        cmocka_unit_test(revoking_claim_still_expires_by_lease),
        cmocka_unit_test(in_progress_on_a_semaphore_group),
        cmocka_unit_test(in_progress_newcomer_may_hold_beside_the_revoked),
        cmocka_unit_test(cancel_without_group_is_refused),
        cmocka_unit_test(cancel_on_a_fresh_group_just_claims),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
