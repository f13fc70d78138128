/* test_actor.c - who made a claim (actor.c): kept with the claim, counted
 * per actor while live and while pending, counted again after a restore,
 * and gone with the actor's last claim. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static sl_actor_counts counts(sl_engine *eng, const char *actor)
{
    sl_actor_counts n;
    sl_engine_actor_get(eng, actor, &n);
    return n;
}

static void counted_while_live_and_pending(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.ended_retention_ms = 1000;
    sl_engine *eng = t_engine_opts(&opts);
    t_claim(eng, 0, "id=a m:x actor=team-a");
    t_claim(eng, 1, "id=b m:x actor=team-a");
    t_claim(eng, 2, "id=c m:x actor=team-b");
    t_claim(eng, 3, "id=d m:y");
    assert_string_equal(t_view(eng, "a").actor, "team-a");
    assert_null(t_view(eng, "d").actor);
    assert_int_equal(counts(eng, "team-a").live, 2);
    assert_int_equal(counts(eng, "team-a").pending, 1);
    assert_int_equal(counts(eng, "team-b").live, 1);
    assert_int_equal(counts(eng, "team-b").pending, 1);
    assert_int_equal(counts(eng, "nobody").live, 0);
    assert_int_equal(counts(eng, NULL).live, 0);

    /* a ends: b is granted (no longer pending), c moves up. */
    t_release(eng, 10, "a");
    assert_int_equal(counts(eng, "team-a").live, 1);
    assert_int_equal(counts(eng, "team-a").pending, 0);
    assert_string_equal(t_view(eng, "a").actor, "team-a"); /* kept while retained */
    t_release(eng, 11, "b");
    t_release(eng, 12, "c");
    assert_int_equal(counts(eng, "team-a").live, 0);
    assert_int_equal(counts(eng, "team-b").live, 0);

    /* A pending claim withdrawn counts off both. */
    t_claim(eng, 20, "id=e m:y actor=team-b");
    assert_int_equal(counts(eng, "team-b").pending, 1);
    t_release(eng, 21, "e");
    assert_int_equal(counts(eng, "team-b").pending, 0);
    assert_int_equal(counts(eng, "team-b").live, 0);

    /* Purged, every node goes: t_free checks every block came back. */
    sl_engine_advance(eng, 5000);
    assert_null(sl_claim_find(eng, "a"));
    sl_error err;
    char big[SL_ACTOR_MAX + 2];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    sl_claim_req req = {.id = "f", .holder = "h", .actor = big};
    sl_claim *out = NULL;
    assert_int_equal(sl_claim_create(eng, &req, 5001, &out, &err), SL_EINVAL);
    assert_string_equal(err.field, "actor");
    t_free(eng);
}

static sl_claim_rec rec_of(const char *id, uint64_t arrival, sl_state st,
                           const sl_claim_lock_rec *lock)
{
    sl_claim_rec rec;
    memset(&rec, 0, sizeof(rec));
    rec.v.id = id;
    rec.v.holder = "h";
    rec.v.state = st;
    rec.v.arrival = arrival;
    rec.v.grace_ms = 30000;
    rec.v.granted_ms = rec.v.revoke_at_ms = rec.v.ended_ms = -1;
    rec.v.nlocks = 1;
    rec.v.actor = "team-a";
    rec.locks = lock;
    return rec;
}

/* The counts are the claims': a restarted engine (or a new leader) counts
 * the restored ones, ended claims not. */
static void counted_again_after_a_restore(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_engine_restore_counters(eng, 1, 4, 2, 0);
    sl_claim_lock_rec lock = {SL_KIND_MUTEX, "x", 1, SL_VIA_LOCK, 1, 0, 0};
    sl_claim_lock_rec lock0 = {SL_KIND_MUTEX, "x", 1, SL_VIA_LOCK, 0, 0, 0};
    sl_error err;
    sl_claim_rec held = rec_of("a", 1, SL_HELD, &lock);
    held.v.granted_ms = 5;
    held.v.grant_seq = 1;
    assert_int_equal(sl_engine_restore_claim(eng, &held, &err), 0);
    sl_claim_rec pend = rec_of("b", 2, SL_PENDING, &lock0);
    assert_int_equal(sl_engine_restore_claim(eng, &pend, &err), 0);
    sl_claim_rec gone = rec_of("c", 3, SL_RELEASED, &lock0);
    gone.v.ended_ms = 7;
    assert_int_equal(sl_engine_restore_claim(eng, &gone, &err), 0);
    sl_engine_restore_done(eng, 100);
    assert_int_equal(counts(eng, "team-a").live, 2);
    assert_int_equal(counts(eng, "team-a").pending, 1);
    assert_string_equal(t_view(eng, "c").actor, "team-a");
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(counted_while_live_and_pending),
        cmocka_unit_test(counted_again_after_a_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
