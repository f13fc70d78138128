/* test_tokens.c - fencing tokens and the bounded memory of idle locks
 * (lock.c).
 *
 * Every grant on a lock increments that lock's token and gives the claim the
 * new value, lock by lock. A lock with nothing on it keeps only its counter;
 * past opts.idle_locks_max the oldest idle locks are forgotten when the batch
 * is cleared, their counters folded into token_floor, where every lock made
 * later starts (docs/engine.md, "Fencing tokens"). So no name's token ever
 * goes backwards. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

static uint64_t lock_token(sl_engine *eng, sl_kind kind, const char *name, bool *live)
{
    sl_lock_view v;
    const sl_lock *l = NULL;
    assert_int_equal(sl_lock_lookup(eng, kind, name, &v, &l), 0);
    if (live)
        *live = l != NULL;
    return v.token;
}

/* Claims a mutex and releases it at once, returning the token it got. */
static uint64_t use_mutex(sl_engine *eng, int64_t now, const char *id, const char *name)
{
    char spec[128];
    snprintf(spec, sizeof(spec), "id=%s m:%s", id, name);
    t_claim(eng, now, spec);
    assert_int_equal(t_state(eng, id), SL_HELD);
    uint64_t tok = t_token(eng, id, 0);
    t_release(eng, now, id);
    return tok;
}

static void one_more_per_grant(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a m:x");
    t_claim(eng, 2, "id=b m:x");
    t_claim(eng, 3, "id=c m:x");
    assert_int_equal(t_token(eng, "a", 0), 1);
    assert_int_equal(t_token(eng, "b", 0), 0); /* pending: no token yet */
    t_release(eng, 4, "a");
    t_release(eng, 5, "b");
    assert_int_equal(t_token(eng, "b", 0), 2);
    assert_int_equal(t_token(eng, "c", 0), 3);
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "x", NULL), 3);
    /* An ended claim keeps the token it had. */
    assert_int_equal(t_token(eng, "a", 0), 1);
    t_free(eng);
}

static void semaphore_holders_get_distinct_tokens(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 3, SL_STRICT);
    t_claim(eng, 1, "id=a s:pool");
    t_claim(eng, 2, "id=b s:pool");
    t_claim(eng, 3, "id=c s:pool");
    t_release(eng, 4, "b");
    t_claim(eng, 5, "id=d s:pool");
    /* b's token is never handed out again. */
    assert_int_equal(t_token(eng, "a", 0), 1);
    assert_int_equal(t_token(eng, "c", 0), 3);
    assert_int_equal(t_token(eng, "d", 0), 4);
    const sl_lock *l = NULL;
    sl_lock_view v;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, "pool", &v, &l), 0);
    sl_holder_view hv[4];
    assert_int_equal(sl_lock_holders(l, 0, hv, 4), 3);
    uint64_t want[] = {1, 3, 4};
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(hv[i].token, want[i]);
    t_free(eng);
}

static void each_lock_of_a_claim_gets_its_own_token(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 5, SL_STRICT);
    use_mutex(eng, 1, "x1", "x");
    use_mutex(eng, 2, "x2", "x");
    t_claim(eng, 3, "id=p s:pool*2");
    t_claim(eng, 4, "id=m m:x s:pool m:fresh");
    assert_int_equal(t_token(eng, "m", 0), 3);
    assert_int_equal(t_token(eng, "m", 1), 2);
    assert_int_equal(t_token(eng, "m", 2), 1);
    /* The claim's tokens are the locks' tokens. */
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "x", NULL), 3);
    assert_int_equal(lock_token(eng, SL_KIND_SEMAPHORE, "pool", NULL), 2);
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "fresh", NULL), 1);
    /* The batch lists each lock whose token moved, once. */
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nlocks, 3);
    t_free(eng);
}

static void idle_lock_remembers_its_token(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    for (int i = 0; i < 4; i++) {
        char id[16];
        snprintf(id, sizeof(id), "c%d", i);
        assert_int_equal(use_mutex(eng, i, id, "x"), (uint64_t)i + 1);
        t_events(eng); /* clears the batch: nothing is evicted under the bound */
    }
    /* Idle: the lock object is kept for its counter, with nothing on it. */
    sl_lock_view v;
    const sl_lock *l = NULL;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, "x", &v, &l), 0);
    assert_non_null(l);
    assert_int_equal(v.token, 4);
    assert_int_equal(v.nholders, 0);
    assert_int_equal(v.npending, 0);
    assert_int_equal(v.used, 0);
    /* It is not listed among the live locks. */
    assert_null(sl_lock_next(eng, NULL));
    sl_engine_stats st;
    sl_engine_stats_get(eng, &st);
    assert_int_equal(st.idle_locks, 1);
    t_free(eng);
}

static void idle_locks_past_the_bound_are_forgotten(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.idle_locks_max = 2;
    sl_engine *eng = t_engine_opts(&opts);
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "never", NULL), 0);

    /* Five mutexes, one after another, with different last tokens. */
    const char *names[] = {"m1", "m2", "m3", "m4", "m5"};
    int uses[] = {3, 1, 5, 1, 2};
    int64_t now = 0;
    for (size_t i = 0; i < 5; i++) {
        for (int k = 0; k < uses[i]; k++) {
            char id[16];
            snprintf(id, sizeof(id), "%s-%d", names[i], k);
            assert_int_equal(use_mutex(eng, now++, id, names[i]), (uint64_t)k + 1);
        }
    }
    sl_engine_stats st;
    sl_engine_stats_get(eng, &st);
    assert_int_equal(st.idle_locks, 5);
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nevicted, 0);
    assert_int_equal(ch.token_floor, 0);

    /* The clear forgets the three that went idle first. */
    sl_engine_changes_clear(eng);
    sl_engine_stats_get(eng, &st);
    assert_int_equal(st.idle_locks, 2);
    assert_true(sl_engine_changes_pending(eng));
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nevicted, 3);
    assert_string_equal(ch.evicted[0], "mtx/m1");
    assert_string_equal(ch.evicted[1], "mtx/m2");
    assert_string_equal(ch.evicted[2], "mtx/m3");
    assert_int_equal(ch.token_floor, 5); /* the largest of 3, 1, 5 */
    assert_int_equal(ch.nevents, 0);
    sl_engine_changes_clear(eng);
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nevicted, 0);

    /* Forgotten names read the floor; remembered ones their own token. */
    bool live = true;
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "m1", &live), 5);
    assert_false(live);
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "m3", NULL), 5);
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "m4", NULL), 1);
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "m5", NULL), 2);
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "never", NULL), 5);
    /* Ended claims on forgotten locks keep their tokens. */
    assert_int_equal(t_token(eng, "m1-2", 0), 3);

    /* A forgotten name, used again, continues above anything it had. */
    assert_int_equal(use_mutex(eng, now++, "again1", "m1"), 6);
    assert_int_equal(use_mutex(eng, now++, "again2", "m2"), 6);
    assert_int_equal(use_mutex(eng, now++, "again3", "m3"), 6);
    /* A remembered one just continues. */
    assert_int_equal(use_mutex(eng, now++, "again4", "m4"), 2);
    assert_int_equal(use_mutex(eng, now++, "new", "brand-new"), 6);
    t_free(eng);
}

static void zero_idle_locks_still_never_go_backwards(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.idle_locks_max = 0;
    sl_engine *eng = t_engine_opts(&opts);
    uint64_t last = 0;
    for (int i = 0; i < 6; i++) {
        char id[16];
        snprintf(id, sizeof(id), "c%d", i);
        /* Alternating names: each is forgotten at every clear. */
        uint64_t tok = use_mutex(eng, i, id, i % 2 ? "y" : "x");
        assert_int_equal(tok, last + 1);
        last = tok;
        sl_engine_changes_clear(eng);
        sl_changes ch;
        sl_engine_changes(eng, &ch);
        assert_int_equal(ch.nevicted, 1);
        assert_string_equal(ch.evicted[0], i % 2 ? "mtx/y" : "mtx/x");
        assert_int_equal(ch.token_floor, tok);
        sl_engine_changes_clear(eng);
    }
    t_free(eng);
}

static void busy_and_configured_locks_are_not_evicted(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.idle_locks_max = 0;
    sl_engine *eng = t_engine_opts(&opts);
    t_sem(eng, 0, "cfg", 1, SL_STRICT);
    t_sem(eng, 0, "pat/*", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:cfg");
    t_claim(eng, 1, "id=b s:pat/a");
    t_claim(eng, 1, "id=h m:held");
    t_release(eng, 2, "a");
    t_release(eng, 2, "b");
    sl_engine_changes_clear(eng);
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    /* Only the pattern-made semaphore is idle; the exact one stays. */
    assert_int_equal(ch.nevicted, 1);
    assert_string_equal(ch.evicted[0], "sem/pat/a");
    assert_int_equal(ch.token_floor, 1);
    bool live = false;
    assert_int_equal(lock_token(eng, SL_KIND_SEMAPHORE, "cfg", &live), 1);
    assert_true(live);
    assert_int_equal(lock_token(eng, SL_KIND_MUTEX, "held", &live), 1);
    assert_true(live);
    assert_int_equal(lock_token(eng, SL_KIND_SEMAPHORE, "pat/a", &live), 1);
    assert_false(live);
    /* The configured one continues from its own token; the rest from the floor. */
    t_claim(eng, 3, "id=c s:cfg");
    t_claim(eng, 3, "id=d s:pat/a");
    assert_int_equal(t_token(eng, "c", 0), 2);
    assert_int_equal(t_token(eng, "d", 0), 2);
    t_free(eng);
}

static void never_used_mutex_reads_the_floor(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.idle_locks_max = 0;
    sl_engine *eng = t_engine_opts(&opts);
    sl_lock_view v;
    const sl_lock *l = (const sl_lock *)&v; /* must be reset to NULL */
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, "unused", &v, &l), 0);
    assert_null(l);
    assert_int_equal(v.token, 0);
    assert_int_equal(v.used, 0);
    assert_int_equal(v.limit, 1);
    assert_string_equal(v.key, "mtx/unused");
    for (int i = 0; i < 7; i++) {
        char id[16];
        snprintf(id, sizeof(id), "c%d", i);
        use_mutex(eng, i, id, "busy");
    }
    sl_engine_changes_clear(eng);
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, "unused", &v, &l), 0);
    assert_null(l);
    assert_int_equal(v.token, 7);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(one_more_per_grant),
        cmocka_unit_test(semaphore_holders_get_distinct_tokens),
        cmocka_unit_test(each_lock_of_a_claim_gets_its_own_token),
        cmocka_unit_test(idle_lock_remembers_its_token),
        cmocka_unit_test(idle_locks_past_the_bound_are_forgotten),
        cmocka_unit_test(zero_idle_locks_still_never_go_backwards),
        cmocka_unit_test(busy_and_configured_locks_are_not_evicted),
        cmocka_unit_test(never_used_mutex_reads_the_floor),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
