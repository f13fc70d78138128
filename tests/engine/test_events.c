/* test_events.c - the batch of changes and the event log (events.c).
 *
 * The store writes one batch per turn: every claim created or changed (each
 * once), every lock whose token moved, every configuration set or deleted,
 * and the events, whose seq grows by exactly one across batches. Each
 * transition has its own event type (docs/engine.md, "Events"); releases of
 * ended claims change nothing, operator cancels end live claims `canceled`. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static sl_changes batch(sl_engine *eng)
{
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    return ch;
}

static void seq_grows_by_one_across_batches(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_changes ch = batch(eng);
    assert_int_equal(ch.next_seq, 1);
    assert_int_equal(ch.nevents, 0);
    t_claim(eng, 1, "id=a m:x");
    t_claim(eng, 2, "id=b m:x");
    ch = batch(eng);
    assert_int_equal(ch.nevents, 4);
    for (size_t i = 0; i < ch.nevents; i++)
        assert_int_equal(ch.events[i].seq, i + 1);
    assert_int_equal(ch.events[0].time_ms, 1);
    assert_int_equal(ch.events[3].time_ms, 2);
    assert_int_equal(ch.next_seq, 5);
    sl_engine_changes_clear(eng);

    ch = batch(eng);
    assert_int_equal(ch.nevents, 0);
    assert_int_equal(ch.next_seq, 5);
    t_release(eng, 3, "a");
    ch = batch(eng);
    assert_int_equal(ch.nevents, 2);
    assert_int_equal(ch.events[0].seq, 5);
    assert_int_equal(ch.events[1].seq, 6);
    assert_int_equal(ch.next_seq, 7);
    sl_engine_stats st;
    sl_engine_stats_get(eng, &st);
    assert_int_equal(st.next_seq, 7);
    t_free(eng);
}

static void changed_claims_are_listed_once(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a m:x lease=1000");
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "a"), 2), 0);
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "a"), 3), 0);
    t_claim(eng, 4, "id=b m:x");
    sl_changes ch = batch(eng);
    /* a: queued, acquired, renewed twice; still one entry. */
    assert_int_equal(ch.nclaims, 2);
    assert_string_equal(t_id(ch.claims[0]), "a");
    assert_string_equal(t_id(ch.claims[1]), "b");
    assert_int_equal(ch.nevents, 6);
    assert_int_equal(ch.next_arrival, 3);
    assert_int_equal(ch.next_grant, 2);
    sl_engine_changes_clear(eng);

    /* In the next batch, the release lists a and what it let in. */
    t_release(eng, 5, "a");
    ch = batch(eng);
    assert_int_equal(ch.nclaims, 2);
    assert_string_equal(t_id(ch.claims[0]), "a");
    assert_string_equal(t_id(ch.claims[1]), "b");
    assert_int_equal(ch.next_grant, 3);
    sl_engine_changes_clear(eng);
    /* A claim nobody touched is not listed. */
    t_claim(eng, 6, "id=c m:y");
    ch = batch(eng);
    assert_int_equal(ch.nclaims, 1);
    assert_string_equal(t_id(ch.claims[0]), "c");
    t_free(eng);
}

static void locks_whose_token_moved(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 3, SL_STRICT);
    sl_engine_changes_clear(eng);
    t_claim(eng, 1, "id=a s:pool");
    t_claim(eng, 1, "id=b s:pool");
    t_claim(eng, 1, "id=c s:pool m:x");
    t_claim(eng, 1, "id=d m:x");
    sl_changes ch = batch(eng);
    assert_int_equal(ch.nlocks, 2);
    sl_lock_view v;
    sl_lock_get(ch.locks[0], &v);
    assert_string_equal(v.key, "sem/pool");
    assert_int_equal(v.token, 3);
    sl_lock_get(ch.locks[1], &v);
    assert_string_equal(v.key, "mtx/x");
    assert_int_equal(v.token, 1);
    sl_engine_changes_clear(eng);
    /* A release that lets nobody in moves no token. */
    t_release(eng, 2, "a");
    ch = batch(eng);
    assert_int_equal(ch.nlocks, 0);
    assert_int_equal(ch.nclaims, 1);
    sl_engine_changes_clear(eng);
    /* One that lets d in moves x's. */
    t_release(eng, 3, "c");
    ch = batch(eng);
    assert_int_equal(ch.nlocks, 1);
    sl_lock_get(ch.locks[0], &v);
    assert_string_equal(v.key, "mtx/x");
    assert_int_equal(v.token, 2);
    t_free(eng);
}

static void configurations_set_and_deleted(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_error err;
    assert_int_equal(sl_sem_set(eng, "a", 3, SL_SKIP, 1500, 10, &err), 0);
    assert_int_equal(sl_sem_set(eng, "b/*", 2, SL_REBALANCED, 0, 11, &err), 0);
    assert_int_equal(sl_sem_delete(eng, "a", 12, &err), 0);
    sl_changes ch = batch(eng);
    assert_int_equal(ch.nconfigs, 3);
    assert_string_equal(ch.configs[0], "a");
    assert_string_equal(ch.configs[1], "b/*");
    assert_string_equal(ch.configs[2], "a");
    assert_null(sl_config_find(eng, "a")); /* the store deletes it */
    sl_config_view cv;
    sl_config_get(sl_config_find(eng, "b/*"), &cv);
    assert_true(cv.pattern);
    assert_int_equal(cv.limit, 2);
    assert_int_equal(cv.strategy, SL_REBALANCED);

    assert_int_equal(ch.nevents, 3);
    const sl_event *ev = &ch.events[0];
    assert_int_equal(ev->type, SL_EV_SEMAPHORE_UPDATED);
    assert_null(ev->claim);
    assert_string_equal(ev->name, "a");
    assert_int_equal(ev->limit, 3);
    assert_int_equal(ev->strategy, SL_SKIP);
    assert_int_equal(ev->lease_ms, 1500);
    assert_int_equal(ev->time_ms, 10);
    assert_int_equal(ch.events[1].limit, 2);
    assert_int_equal(ch.events[1].strategy, SL_REBALANCED);
    assert_int_equal(ch.events[2].type, SL_EV_SEMAPHORE_DELETED);
    assert_int_equal(ch.events[2].time_ms, 12);
    assert_int_equal(ch.nclaims, 0);
    assert_string_equal(t_events(eng), "semaphore.updated:a semaphore.updated:b/* "
                                       "semaphore.deleted:a");
    /* Failed configuration calls emit nothing. */
    assert_int_equal(sl_sem_delete(eng, "a", 13, &err), SL_ENOTFOUND);
    assert_int_equal(sl_sem_set(eng, "bad//name", 1, SL_STRICT, 0, 13, &err), SL_EINVAL);
    assert_false(sl_engine_changes_pending(eng));
    t_free(eng);
}

static void raising_a_limit_lets_waiters_in(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:pool");
    t_claim(eng, 2, "id=b s:pool");
    t_claim(eng, 3, "id=c s:pool");
    t_events(eng);
    t_sem(eng, 4, "pool", 2, SL_STRICT);
    assert_string_equal(t_events(eng), "semaphore.updated:pool claim.acquired:b");
    t_sem(eng, 5, "pool", 0, SL_STRICT); /* paused: revokes nobody */
    assert_string_equal(t_events(eng), "semaphore.updated:pool");
    assert_string_equal(t_with_state(eng, SL_HELD), "a b");
    t_free(eng);
}

static void changes_pending_tracks_the_batch(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    assert_false(sl_engine_changes_pending(eng));
    t_claim(eng, 1, "id=a m:x");
    assert_true(sl_engine_changes_pending(eng));
    sl_engine_changes_clear(eng);
    assert_false(sl_engine_changes_pending(eng));
    sl_engine_advance(eng, 1000); /* nothing due */
    assert_false(sl_engine_changes_pending(eng));
    assert_int_equal(t_claim_rc(eng, 2, "id=a m:y", NULL), SL_ECONFLICT);
    assert_false(sl_engine_changes_pending(eng));
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "a"), 4), 0);
    assert_true(sl_engine_changes_pending(eng));
    t_free(eng);
}

/* Every claim event type, each for its transition. */
static void every_claim_transition_has_its_event(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=a m:x");
    assert_string_equal(t_events(eng), "claim.queued:a claim.acquired:a");
    t_claim(eng, 1, "id=b m:x lease=1000");
    assert_string_equal(t_events(eng), "claim.queued:b claim.waiting:b");
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "b"), 2), 0);
    assert_string_equal(t_events(eng), "claim.renewed:b");
    t_release(eng, 3, "b");
    assert_string_equal(t_events(eng), "claim.withdrawn:b");
    t_claim(eng, 4, "id=c m:x timeout=10");
    t_claim(eng, 4, "id=d m:x lease=20");
    t_events(eng);
    sl_engine_advance(eng, 30);
    assert_string_equal(t_events(eng), "claim.timed_out:c claim.expired:d");
    t_release(eng, 31, "a");
    assert_string_equal(t_events(eng), "claim.released:a");

    t_claim(eng, 40, "id=g1 group=g");
    t_claim(eng, 41, "id=g2 group=g");
    t_events(eng);
    t_claim(eng, 42, "id=g3 group=g cancel=in-progress grace=8");
    assert_string_equal(t_events(eng), "claim.queued:g3 claim.superseded:g2 "
                                       "claim.revoking:g1 claim.waiting:g3");
    sl_engine_advance(eng, 50);
    assert_string_equal(t_events(eng), "claim.canceled:g1 claim.acquired:g3");
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "g3"), 51), 0);
    assert_string_equal(t_events(eng), "claim.canceled:g3");

    /* Each reason as the events record it. */
    const char *ids[] = {"b", "c", "d", "a", "g2", "g1", "g3"};
    sl_reason reasons[] = {SL_REASON_WITHDRAWN, SL_REASON_TIMEOUT,    SL_REASON_LEASE,
                           SL_REASON_RELEASED,  SL_REASON_SUPERSEDED, SL_REASON_GRACE,
                           SL_REASON_OPERATOR};
    sl_state states[] = {SL_WITHDRAWN,  SL_TIMED_OUT, SL_EXPIRED, SL_RELEASED,
                         SL_SUPERSEDED, SL_CANCELED,  SL_CANCELED};
    for (size_t i = 0; i < 7; i++) {
        sl_claim_view v = t_view(eng, ids[i]);
        assert_int_equal(v.state, states[i]);
        assert_int_equal(v.reason, reasons[i]);
        assert_true(sl_state_ended(v.state));
    }
    t_free(eng);
}

static void ended_events_carry_the_reason(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=a m:x");
    t_claim(eng, 0, "id=b m:x");
    t_events(eng);
    t_release(eng, 1, "b");
    t_release(eng, 2, "a");
    sl_changes ch = batch(eng);
    assert_int_equal(ch.nevents, 2);
    assert_int_equal(ch.events[0].type, SL_EV_CLAIM_WITHDRAWN);
    assert_int_equal(ch.events[0].reason, SL_REASON_WITHDRAWN);
    assert_ptr_equal(ch.events[0].claim, t_find(eng, "b"));
    assert_int_equal(ch.events[0].time_ms, 1);
    assert_int_equal(ch.events[1].type, SL_EV_CLAIM_RELEASED);
    assert_int_equal(ch.events[1].reason, SL_REASON_RELEASED);
    assert_int_equal(ch.events[1].time_ms, 2);
    t_free(eng);
}

static void release_of_an_ended_claim_changes_nothing(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=a m:x");
    t_release(eng, 1, "a");
    t_events(eng);
    sl_claim *a = t_find(eng, "a");
    assert_int_equal(sl_claim_release(eng, a, SL_REASON_RELEASED, 5), 0);
    assert_int_equal(sl_claim_release(eng, a, SL_REASON_CLIENT_GONE, 6), 0);
    assert_false(sl_engine_changes_pending(eng));
    sl_claim_view v = t_view(eng, "a");
    assert_int_equal(v.state, SL_RELEASED);
    assert_int_equal(v.reason, SL_REASON_RELEASED);
    assert_int_equal(v.ended_ms, 1);
    /* Cancel and renew of an ended claim are refused, also silently. */
    assert_int_equal(sl_claim_cancel(eng, a, 7), SL_ECONFLICT);
    assert_int_equal(sl_claim_renew(eng, a, 7), SL_ECONFLICT);
    assert_false(sl_engine_changes_pending(eng));
    assert_int_equal(t_view(eng, "a").state, SL_RELEASED);
    t_free(eng);
}

static void operator_cancel_of_a_pending_claim(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 1, "id=p1 m:x");
    t_claim(eng, 2, "id=p2 m:x");
    t_events(eng);
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "p1"), 10), 0);
    sl_changes ch = batch(eng);
    assert_int_equal(ch.nevents, 1);
    assert_int_equal(ch.events[0].reason, SL_REASON_OPERATOR);
    assert_string_equal(t_events(eng), "claim.canceled:p1");
    sl_claim_view v = t_view(eng, "p1");
    assert_int_equal(v.state, SL_CANCELED);
    assert_int_equal(v.reason, SL_REASON_OPERATOR);
    assert_int_equal(v.ended_ms, 10);
    assert_null(v.by);
    assert_int_equal(t_position(eng, "p2", 0), 1);
    assert_int_equal(t_state(eng, "h"), SL_HELD);
    t_free(eng);
}

static void operator_cancel_of_held_and_revoking_claims(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 1, "id=w m:x");
    t_events(eng);
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "h"), 10), 0);
    assert_string_equal(t_events(eng), "claim.canceled:h claim.acquired:w");
    assert_int_equal(t_view(eng, "h").reason, SL_REASON_OPERATOR);
    assert_int_equal(t_view(eng, "w").granted_ms, 10);
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "x"), 1);

    /* A revoking holder canceled by an operator: canceled for that reason,
     * still naming the claim that revoked it. */
    t_claim(eng, 20, "id=r group=g");
    t_claim(eng, 21, "id=n group=g cancel=in-progress grace=1000");
    t_events(eng);
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "r"), 22), 0);
    assert_string_equal(t_events(eng), "claim.canceled:r claim.acquired:n");
    sl_claim_view r = t_view(eng, "r");
    assert_int_equal(r.state, SL_CANCELED);
    assert_int_equal(r.reason, SL_REASON_OPERATOR);
    assert_string_equal(r.by, "n");
    assert_int_equal(r.revoke_at_ms, -1);
    t_free(eng);
}

static void client_gone_is_recorded(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 1, "id=p m:x");
    t_events(eng);
    assert_int_equal(sl_claim_release(eng, t_find(eng, "p"), SL_REASON_CLIENT_GONE, 2), 0);
    assert_int_equal(sl_claim_release(eng, t_find(eng, "h"), SL_REASON_CLIENT_GONE, 3), 0);
    sl_changes ch = batch(eng);
    assert_int_equal(ch.nevents, 2);
    assert_int_equal(ch.events[0].reason, SL_REASON_CLIENT_GONE);
    assert_int_equal(ch.events[1].reason, SL_REASON_CLIENT_GONE);
    assert_string_equal(t_events(eng), "claim.withdrawn:p claim.released:h");
    sl_claim_view v = t_view(eng, "p");
    assert_int_equal(v.state, SL_WITHDRAWN);
    assert_int_equal(v.reason, SL_REASON_CLIENT_GONE);
    v = t_view(eng, "h");
    assert_int_equal(v.state, SL_RELEASED);
    assert_int_equal(v.reason, SL_REASON_CLIENT_GONE);
    assert_string_equal(sl_reason_text(SL_REASON_CLIENT_GONE),
                        "its client went away before learning its id");
    t_free(eng);
}

static void event_and_state_names(void **state)
{
    (void)state;
    const char *names[] = {
        "claim.queued",      "claim.waiting",   "claim.acquired", "claim.renewed",
        "claim.released",    "claim.withdrawn", "claim.expired",  "claim.timed_out",
        "claim.superseded",  "claim.revoking",  "claim.canceled", "semaphore.updated",
        "semaphore.deleted",
    };
    for (int t = SL_EV_CLAIM_QUEUED; t <= SL_EV_SEMAPHORE_DELETED; t++)
        assert_string_equal(sl_event_type_name((sl_event_type)t), names[t]);
    assert_string_equal(sl_event_type_name((sl_event_type)99), "unknown");
    for (int s = SL_PENDING; s <= SL_CANCELED; s++) {
        sl_state back;
        assert_int_equal(sl_state_parse(sl_state_name((sl_state)s), &back), 0);
        assert_int_equal(back, s);
    }
    sl_state st;
    assert_int_equal(sl_state_parse("held ", &st), SL_EINVAL);
    assert_string_equal(sl_rule_name(SL_RULE_OTHER_LOCK), "other_lock");
    assert_string_equal(sl_cancel_name(SL_CANCEL_IN_PROGRESS), "in-progress");
}

/* F11: an event names who asked for it. The claims a call is about carry
 * the caller's actor; what the rules do to other claims (a grant after a
 * release, a supersession) and what timers do carry the server's. */
static void events_carry_their_actor(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_engine_act_as(eng, "team-a");
    t_claim(eng, 1, "id=a m:x group=g");
    sl_engine_act_as(eng, "team-b");
    t_claim(eng, 2, "id=b m:x");
    sl_engine_act_as(eng, "team-a");
    t_release(eng, 3, "a");
    const char *want[][2] = {{"claim.queued", "team-a"},   {"claim.acquired", "team-a"},
                             {"claim.queued", "team-b"},   {"claim.waiting", "team-b"},
                             {"claim.released", "team-a"}, {"claim.acquired", SL_ACTOR_SERVER}};
    assert_int_equal(t_nevents(eng), 6);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(sl_event_type_name(t_event_at(eng, i).type), want[i][0]);
        assert_string_equal(t_event_at(eng, i).actor, want[i][1]);
    }
    sl_engine_changes_clear(eng);

    /* A lease that runs out is the server's, though a request's call fires it;
     * so is the supersession a new claim's cancel causes. */
    sl_engine_act_as(eng, NULL);
    t_claim(eng, 10, "id=c m:y lease=5");
    t_claim(eng, 11, "id=d m:z group=g");
    sl_engine_act_as(eng, "admin");
    t_claim(eng, 20, "id=e m:w group=g cancel=in-progress");
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "b"), 21), 0);
    t_sem(eng, 22, "s", 3, SL_STRICT);
    sl_engine_act_as(eng, "ops"); /* frees the engine's copy of "admin" */
    const char *want2[][2] = {
        {"claim.queued", SL_ACTOR_SERVER},   {"claim.acquired", SL_ACTOR_SERVER},
        {"claim.queued", SL_ACTOR_SERVER},   {"claim.acquired", SL_ACTOR_SERVER},
        {"claim.expired", SL_ACTOR_SERVER},  {"claim.queued", "admin"},
        {"claim.revoking", SL_ACTOR_SERVER}, {"claim.waiting", "admin"},
        {"claim.canceled", "admin"},         {"semaphore.updated", "admin"},
    };
    assert_int_equal(t_nevents(eng), 10);
    for (size_t i = 0; i < 10; i++) {
        assert_string_equal(sl_event_type_name(t_event_at(eng, i).type), want2[i][0]);
        assert_string_equal(t_event_at(eng, i).actor, want2[i][1]);
    }
    sl_engine_changes_clear(eng);

    /* A bulk end: its members are the caller's, the grant it makes is not. */
    t_claim(eng, 30, "id=f m:v");
    t_claim(eng, 31, "id=g m:v");
    sl_claim *set[] = {t_find(eng, "f")};
    sl_engine_changes_clear(eng);
    sl_engine_act_as(eng, "team-c");
    assert_int_equal(sl_claims_end(eng, set, 1, SL_BULK_RELEASE, 32, NULL), 0);
    assert_int_equal(t_nevents(eng), 2);
    assert_string_equal(t_event_at(eng, 0).actor, "team-c");
    assert_string_equal(t_event_at(eng, 1).actor, SL_ACTOR_SERVER);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seq_grows_by_one_across_batches),
        cmocka_unit_test(changed_claims_are_listed_once),
        cmocka_unit_test(locks_whose_token_moved),
        cmocka_unit_test(configurations_set_and_deleted),
        cmocka_unit_test(raising_a_limit_lets_waiters_in),
        cmocka_unit_test(changes_pending_tracks_the_batch),
        cmocka_unit_test(every_claim_transition_has_its_event),
        cmocka_unit_test(ended_events_carry_the_reason),
        cmocka_unit_test(release_of_an_ended_claim_changes_nothing),
        cmocka_unit_test(operator_cancel_of_a_pending_claim),
        cmocka_unit_test(operator_cancel_of_held_and_revoking_claims),
        cmocka_unit_test(client_gone_is_recorded),
        cmocka_unit_test(event_and_state_names),
        cmocka_unit_test(events_carry_their_actor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
