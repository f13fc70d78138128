/* test_timers.c - leases, pending timeouts and the purge of ended claims
 * (timers.c), to the millisecond.
 *
 * docs/engine.md, "Time": a deadline d is due when now >= d; every timer
 * fires at its own deadline, in deadline order (ties: older claim first),
 * with admission right after it at that time, so the outcome never depends
 * on how often sl_engine_advance is called. Leases count from the last sign
 * of life and cannot run out while a request waits on the claim; timeouts
 * count from arrival and bound only the pending time. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static void sem_lease(sl_engine *eng, const char *name, uint32_t limit, int64_t lease)
{
    sl_error err;
    assert_int_equal(sl_sem_set(eng, name, limit, SL_STRICT, lease, 0, &err), 0);
}

/* ---- where a claim's lease comes from ------------------------------------ */

static void lease_from_the_claim(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    assert_int_equal(sl_engine_next_deadline(eng), INT64_MAX);
    t_claim(eng, 1000, "id=a m:x lease=500");
    sl_claim_view v = t_view(eng, "a");
    assert_int_equal(v.lease_ms, 500);
    assert_int_equal(v.life_ms, 1000);
    assert_int_equal(v.expires_ms, 1500);
    assert_int_equal(sl_engine_next_deadline(eng), 1500);
    t_free(eng);
}

static void lease_from_the_shortest_configured(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sem_lease(eng, "p1", 5, 5000);
    sem_lease(eng, "p2", 5, 2000);
    sem_lease(eng, "p3", 5, 0); /* none set: does not count as shortest */
    sem_lease(eng, "tag/env=*", 5, 700);
    t_claim(eng, 0, "id=a s:p1 s:p2 s:p3");
    assert_int_equal(t_view(eng, "a").lease_ms, 2000);
    t_claim(eng, 0, "id=b s:p3 m:x");
    assert_int_equal(t_view(eng, "b").lease_ms, 0);
    assert_int_equal(t_view(eng, "b").expires_ms, -1);
    /* A tag's semaphore counts like any other. */
    t_claim(eng, 0, "id=c s:p1 tag=env=prod");
    assert_int_equal(t_view(eng, "c").lease_ms, 700);
    /* The claim's own lease, even a longer one, wins. */
    t_claim(eng, 0, "id=d s:p2 lease=9000");
    assert_int_equal(t_view(eng, "d").lease_ms, 9000);
    t_free(eng);
}

static void lease_from_the_engine_default(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.default_lease_ms = 7000;
    sl_engine *eng = t_engine_opts(&opts);
    sem_lease(eng, "long", 5, 9000);
    sem_lease(eng, "plain", 5, 0);
    t_claim(eng, 100, "id=a m:x");
    assert_int_equal(t_view(eng, "a").lease_ms, 7000);
    assert_int_equal(t_view(eng, "a").expires_ms, 7100);
    t_claim(eng, 100, "id=b s:plain");
    assert_int_equal(t_view(eng, "b").lease_ms, 7000);
    /* A configured lease beats the default even when it is longer. */
    t_claim(eng, 100, "id=c s:long");
    assert_int_equal(t_view(eng, "c").lease_ms, 9000);
    /* lease 0 is "none", not "the default". */
    t_claim(eng, 100, "id=d m:y lease=0");
    assert_int_equal(t_view(eng, "d").lease_ms, 0);
    assert_int_equal(t_view(eng, "d").expires_ms, -1);
    sl_engine_advance(eng, 1000000);
    assert_int_equal(t_state(eng, "d"), SL_HELD);
    assert_int_equal(t_state(eng, "a"), SL_EXPIRED);
    t_free(eng);
}

/* ---- expiry of held and pending claims ----------------------------------- */

static void held_claim_expires_at_its_deadline(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 3, SL_STRICT);
    t_claim(eng, 1000, "id=a s:pool*2 lease=500");
    t_claim(eng, 1100, "id=b s:pool*2");
    t_events(eng);
    sl_engine_advance(eng, 1499);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    assert_string_equal(t_events(eng), "");
    sl_engine_advance(eng, 1500);
    assert_int_equal(t_nevents(eng), 2);
    assert_int_equal(t_event_at(eng, 0).reason, SL_REASON_LEASE);
    assert_string_equal(t_events(eng), "claim.expired:a claim.acquired:b");
    sl_claim_view a = t_view(eng, "a");
    assert_int_equal(a.state, SL_EXPIRED);
    assert_int_equal(a.reason, SL_REASON_LEASE);
    assert_int_equal(a.ended_ms, 1500);
    assert_int_equal(a.expires_ms, -1);
    /* a's two slots were freed and b took them. */
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "pool"), 2);
    assert_int_equal(t_view(eng, "b").granted_ms, 1500);
    assert_int_equal(t_token(eng, "b", 0), 2);
    t_free(eng);
}

static void late_advance_dates_events_at_the_deadline(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1000, "id=a m:x lease=500");
    t_claim(eng, 1100, "id=b m:x");
    t_events(eng);
    sl_engine_advance(eng, 99999);
    assert_int_equal(t_nevents(eng), 2);
    assert_int_equal(t_event_at(eng, 0).time_ms, 1500);
    assert_int_equal(t_event_at(eng, 1).time_ms, 1500);
    assert_string_equal(t_events(eng), "claim.expired:a claim.acquired:b");
    assert_int_equal(t_view(eng, "b").granted_ms, 1500);
    assert_int_equal(t_view(eng, "a").ended_ms, 1500);
    t_free(eng);
}

/* A chain of leases in one advance ends exactly as with an advance at every
 * millisecond: the engine never depends on how often it is called. */
static void one_advance_equals_many(void **state)
{
    (void)state;
    sl_engine *eng[2];
    for (int k = 0; k < 2; k++) {
        eng[k] = t_engine();
        t_claim(eng[k], 1000, "id=a m:x lease=500");
        t_claim(eng[k], 1100, "id=b m:x lease=1000"); /* runs out at 2100 */
        t_claim(eng[k], 1200, "id=c m:x");
        t_events(eng[k]);
    }
    sl_engine_advance(eng[0], 3000);
    for (int64_t t = 1200; t <= 3000; t++)
        sl_engine_advance(eng[1], t);
    for (int k = 0; k < 2; k++) {
        assert_int_equal(t_nevents(eng[k]), 4);
        int64_t times[] = {1500, 1500, 2100, 2100};
        for (size_t i = 0; i < 4; i++)
            assert_int_equal(t_event_at(eng[k], i).time_ms, times[i]);
        assert_string_equal(t_events(eng[k]), "claim.expired:a claim.acquired:b "
                                              "claim.expired:b claim.acquired:c");
        assert_int_equal(t_view(eng[k], "c").granted_ms, 2100);
        assert_int_equal(t_token(eng[k], "c", 0), 3);
    }
    sl_engine_free(eng[0]); /* t_free counts the blocks of both engines */
    t_free(eng[1]);
}

/* A grant is not a sign of life: the lease keeps counting from creation. */
static void lease_counts_from_life_not_from_the_grant(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 0, "id=p m:x lease=500");
    t_release(eng, 400, "h");
    sl_claim_view v = t_view(eng, "p");
    assert_int_equal(v.granted_ms, 400);
    assert_int_equal(v.expires_ms, 500);
    t_events(eng);
    sl_engine_advance(eng, 499);
    assert_int_equal(t_state(eng, "p"), SL_HELD);
    sl_engine_advance(eng, 500);
    assert_string_equal(t_events(eng), "claim.expired:p");
    t_free(eng);
}

static void renew_extends_and_is_refused_at_the_deadline(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1000, "id=a m:x lease=500");
    t_events(eng);
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "a"), 1400), 0);
    assert_int_equal(t_event_at(eng, 0).time_ms, 1400);
    assert_string_equal(t_events(eng), "claim.renewed:a");
    sl_claim_view v = t_view(eng, "a");
    assert_int_equal(v.life_ms, 1400);
    assert_int_equal(v.expires_ms, 1900);
    assert_int_equal(sl_engine_next_deadline(eng), 1900);
    sl_engine_advance(eng, 1899);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    /* At 1900 the lease has run out: the renewal comes too late. */
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "a"), 1900), SL_ECONFLICT);
    assert_string_equal(t_events(eng), "claim.expired:a");
    assert_int_equal(t_view(eng, "a").ended_ms, 1900);
    t_free(eng);
}

static void pending_claim_expires_and_leaves_the_queue(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 10, "id=p1 m:x lease=300");
    t_claim(eng, 20, "id=p2 m:x");
    t_claim(eng, 30, "id=p3 m:x");
    assert_int_equal(t_position(eng, "p3", 0), 3);
    t_events(eng);
    sl_engine_advance(eng, 309);
    assert_int_equal(t_state(eng, "p1"), SL_PENDING);
    sl_engine_advance(eng, 310);
    assert_string_equal(t_events(eng), "claim.expired:p1");
    sl_claim_view v = t_view(eng, "p1");
    assert_int_equal(v.state, SL_EXPIRED);
    assert_int_equal(v.ended_ms, 310);
    assert_int_equal(v.granted_ms, -1);
    assert_int_equal(t_position(eng, "p1", 0), 0);
    assert_int_equal(t_position(eng, "p2", 0), 1);
    assert_int_equal(t_position(eng, "p3", 0), 2);
    assert_int_equal(sl_pending_position(eng, t_find(eng, "p3")), 2);
    assert_int_equal(t_state(eng, "h"), SL_HELD);
    t_free(eng);
}

static void watch_suspends_the_lease(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=a m:x lease=500");
    t_claim(eng, 0, "id=b m:x");
    t_events(eng);
    sl_claim_watch(eng, t_find(eng, "a"), +1, 400);
    assert_int_equal(t_view(eng, "a").watchers, 1);
    assert_int_equal(t_view(eng, "a").life_ms, 400);
    assert_int_equal(sl_engine_next_deadline(eng), INT64_MAX);
    sl_engine_advance(eng, 100000);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    /* A second watcher comes and goes: one still waits. */
    sl_claim_watch(eng, t_find(eng, "a"), +1, 150000);
    sl_claim_watch(eng, t_find(eng, "a"), -1, 160000);
    sl_engine_advance(eng, 190000);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    /* Waits are signs of life but emit nothing. */
    assert_string_equal(t_events(eng), "");
    /* The last watcher leaves: the lease restarts from that moment. */
    sl_claim_watch(eng, t_find(eng, "a"), -1, 200000);
    sl_claim_view v = t_view(eng, "a");
    assert_int_equal(v.watchers, 0);
    assert_int_equal(v.life_ms, 200000);
    assert_int_equal(v.expires_ms, 200500);
    assert_int_equal(sl_engine_next_deadline(eng), 200500);
    sl_engine_advance(eng, 200499);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    sl_engine_advance(eng, 200500);
    assert_string_equal(t_events(eng), "claim.expired:a claim.acquired:b");
    assert_int_equal(t_view(eng, "a").ended_ms, 200500);
    t_free(eng);
}

static void watch_is_a_sign_of_life(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=a m:x lease=500");
    /* A wait that starts and stops at once still counts as a sign of life. */
    sl_claim_watch(eng, t_find(eng, "a"), +1, 300);
    sl_claim_watch(eng, t_find(eng, "a"), -1, 300);
    assert_int_equal(t_view(eng, "a").expires_ms, 800);
    sl_engine_advance(eng, 799);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    sl_engine_advance(eng, 800);
    assert_int_equal(t_state(eng, "a"), SL_EXPIRED);
    t_free(eng);
}

static void watch_does_not_suspend_the_timeout(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 0, "id=p m:x lease=100 timeout=300");
    sl_claim_watch(eng, t_find(eng, "p"), +1, 50);
    t_events(eng);
    sl_engine_advance(eng, 299);
    assert_int_equal(t_state(eng, "p"), SL_PENDING);
    sl_engine_advance(eng, 300);
    assert_string_equal(t_events(eng), "claim.timed_out:p");
    assert_int_equal(t_view(eng, "p").reason, SL_REASON_TIMEOUT);
    t_free(eng);
}

/* ---- pending timeouts ---------------------------------------------------- */

static void timeout_ends_a_pending_claim(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 1000, "id=p m:x timeout=300");
    t_claim(eng, 1001, "id=q m:x");
    assert_int_equal(sl_engine_next_deadline(eng), 1300);
    t_events(eng);
    sl_engine_advance(eng, 1299);
    assert_int_equal(t_state(eng, "p"), SL_PENDING);
    sl_engine_advance(eng, 2000);
    assert_int_equal(t_nevents(eng), 1);
    sl_event ev = t_event_at(eng, 0);
    assert_int_equal(ev.type, SL_EV_CLAIM_TIMED_OUT);
    assert_int_equal(ev.time_ms, 1300);
    assert_int_equal(ev.reason, SL_REASON_TIMEOUT);
    t_events(eng);
    sl_claim_view v = t_view(eng, "p");
    assert_int_equal(v.state, SL_TIMED_OUT);
    assert_int_equal(v.ended_ms, 1300);
    assert_int_equal(t_position(eng, "q", 0), 1);
    t_free(eng);
}

static void timeout_counts_from_arrival(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    /* Neither `created` nor a renewal moves it. */
    t_claim(eng, 1000, "id=p m:x created=5 timeout=300 lease=10000");
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "p"), 1250), 0);
    sl_engine_advance(eng, 1299);
    assert_int_equal(t_state(eng, "p"), SL_PENDING);
    sl_engine_advance(eng, 1300);
    assert_int_equal(t_state(eng, "p"), SL_TIMED_OUT);
    t_free(eng);
}

static void timeout_stops_applying_once_granted(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:x");
    t_claim(eng, 1000, "id=p m:x timeout=300");
    t_release(eng, 1200, "h");
    assert_int_equal(t_state(eng, "p"), SL_HELD);
    t_events(eng);
    sl_engine_advance(eng, 5000);
    assert_string_equal(t_events(eng), "");
    sl_claim_view v = t_view(eng, "p");
    assert_int_equal(v.state, SL_HELD);
    assert_int_equal(v.timeout_ms, 300);
    /* The only timer left is the purge of h, an hour after its release. */
    assert_int_equal(sl_engine_next_deadline(eng), 1200 + 3600000);
    t_free(eng);
}

static void next_deadline_is_the_earliest(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.ended_retention_ms = 10000;
    sl_engine *eng = t_engine_opts(&opts);
    assert_int_equal(sl_engine_next_deadline(eng), INT64_MAX);
    t_claim(eng, 0, "id=a m:x lease=500");
    t_claim(eng, 10, "id=p m:x timeout=300");
    assert_int_equal(sl_engine_next_deadline(eng), 310);
    sl_engine_advance(eng, 310);
    assert_int_equal(sl_engine_next_deadline(eng), 500);
    sl_engine_advance(eng, 500);
    assert_int_equal(sl_engine_next_deadline(eng), 10310); /* p's purge */
    sl_engine_advance(eng, 10310);
    assert_int_equal(sl_engine_next_deadline(eng), 10500); /* a's purge */
    sl_engine_advance(eng, 10500);
    assert_int_equal(sl_engine_next_deadline(eng), INT64_MAX);
    t_free(eng);
}

/* ---- purge of ended claims ----------------------------------------------- */

static void ended_claims_are_purged_after_retention(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.ended_retention_ms = 1000;
    sl_engine *eng = t_engine_opts(&opts);
    t_claim(eng, 0, "id=a m:x");
    t_claim(eng, 0, "id=live m:y");
    t_release(eng, 100, "a");
    t_events(eng);
    sl_engine_advance(eng, 1099);
    assert_non_null(sl_claim_find(eng, "a"));
    assert_int_equal(t_state(eng, "a"), SL_RELEASED);
    assert_false(sl_engine_changes_pending(eng));

    sl_engine_stats st0;
    sl_engine_stats_get(eng, &st0);
    sl_engine_advance(eng, 1100);
    assert_null(sl_claim_find(eng, "a"));
    assert_true(sl_engine_changes_pending(eng));
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.npurged, 1);
    assert_string_equal(ch.purged[0], "a");
    assert_int_equal(ch.nevents, 0);
    sl_engine_stats st1;
    sl_engine_stats_get(eng, &st1);
    assert_int_equal(st1.claims, st0.claims - 1);
    assert_int_equal(st1.ended, 0);
    /* The claim's memory waits for the batch to be cleared. */
    assert_true(st1.mem_blocks >= st0.mem_blocks);
    assert_string_equal(t_with_state(eng, SL_RELEASED), "");
    sl_engine_changes_clear(eng);
    sl_engine_stats st2;
    sl_engine_stats_get(eng, &st2);
    assert_true(st2.mem_blocks < st1.mem_blocks);
    /* Purged once: the next batch does not list it again. */
    sl_engine_advance(eng, 100000);
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.npurged, 0);
    assert_non_null(sl_claim_find(eng, "live"));
    t_free(eng);
}

/* A claim that ends and is purged in the same batch stays readable through
 * the batch until it is cleared. */
static void purged_claim_stays_readable_in_its_batch(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.ended_retention_ms = 50;
    sl_engine *eng = t_engine_opts(&opts);
    t_claim(eng, 0, "id=a m:x lease=100");
    t_events(eng);
    sl_engine_advance(eng, 1000); /* expires at 100, purged at 150 */
    assert_null(sl_claim_find(eng, "a"));
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.npurged, 1);
    assert_string_equal(ch.purged[0], "a");
    assert_int_equal(ch.nclaims, 1);
    sl_claim_view v;
    sl_claim_get(ch.claims[0], &v);
    assert_string_equal(v.id, "a");
    assert_int_equal(v.state, SL_EXPIRED);
    assert_int_equal(v.ended_ms, 100);
    assert_int_equal(ch.nevents, 1);
    sl_claim_get(ch.events[0].claim, &v);
    assert_string_equal(v.id, "a");
    sl_engine_changes_clear(eng);
    t_free(eng);
}

/* ---- several timers due in one advance ------------------------------------ */

static void timers_fire_in_deadline_order(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "log", 10, SL_STRICT);
    t_claim(eng, 0, "id=a m:x lease=100");
    t_claim(eng, 0, "id=b m:y lease=50");
    /* wx arrives first, yet b's lease runs out first, so wy gets in first:
     * the order of grants shows in the tokens of the shared semaphore. */
    t_claim(eng, 1, "id=wx m:x s:log");
    t_claim(eng, 2, "id=wy m:y s:log");
    t_events(eng);
    sl_engine_advance(eng, 1000);
    assert_int_equal(t_nevents(eng), 4);
    int64_t times[] = {50, 50, 100, 100};
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(t_event_at(eng, i).time_ms, times[i]);
    assert_string_equal(t_events(eng), "claim.expired:b claim.acquired:wy "
                                       "claim.expired:a claim.acquired:wx");
    assert_int_equal(t_token(eng, "wy", 1), 1);
    assert_int_equal(t_token(eng, "wx", 1), 2);
    assert_int_equal(t_view(eng, "wy").granted_ms, 50);
    assert_int_equal(t_view(eng, "wx").granted_ms, 100);
    assert_true(t_view(eng, "wy").grant_seq < t_view(eng, "wx").grant_seq);
    t_free(eng);
}

static void equal_deadlines_fire_older_claim_first(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    /* a is older but its timer is armed last (the watch re-arms it at 10):
     * the tie on 100 is still broken by age, not by arming order. */
    t_claim(eng, 0, "id=a m:x lease=90");
    sl_claim_watch(eng, t_find(eng, "a"), +1, 0);
    t_claim(eng, 5, "id=b m:y lease=95");
    sl_claim_watch(eng, t_find(eng, "a"), -1, 10);
    assert_int_equal(t_view(eng, "a").expires_ms, 100);
    assert_int_equal(t_view(eng, "b").expires_ms, 100);
    t_events(eng);
    sl_engine_advance(eng, 100);
    assert_string_equal(t_events(eng), "claim.expired:a claim.expired:b");
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lease_from_the_claim),
        cmocka_unit_test(lease_from_the_shortest_configured),
        cmocka_unit_test(lease_from_the_engine_default),
        cmocka_unit_test(held_claim_expires_at_its_deadline),
        cmocka_unit_test(late_advance_dates_events_at_the_deadline),
        cmocka_unit_test(one_advance_equals_many),
        cmocka_unit_test(lease_counts_from_life_not_from_the_grant),
        cmocka_unit_test(renew_extends_and_is_refused_at_the_deadline),
        cmocka_unit_test(pending_claim_expires_and_leaves_the_queue),
        cmocka_unit_test(watch_suspends_the_lease),
        cmocka_unit_test(watch_is_a_sign_of_life),
        cmocka_unit_test(watch_does_not_suspend_the_timeout),
        cmocka_unit_test(timeout_ends_a_pending_claim),
        cmocka_unit_test(timeout_counts_from_arrival),
        cmocka_unit_test(timeout_stops_applying_once_granted),
        cmocka_unit_test(next_deadline_is_the_earliest),
        cmocka_unit_test(ended_claims_are_purged_after_retention),
        cmocka_unit_test(purged_claim_stays_readable_in_its_batch),
        cmocka_unit_test(timers_fire_in_deadline_order),
        cmocka_unit_test(equal_deadlines_fire_older_claim_first),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
