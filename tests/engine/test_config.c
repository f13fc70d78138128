/* test_config.c - semaphore configuration (config.c) and lock lookups:
 * sl_sem_set, sl_sem_delete, sl_config_find, sl_config_next, sl_lock_lookup.
 *
 * Covers exact names and patterns (an exact name beats any pattern, the
 * longest matching pattern wins, from_pattern says which), new values
 * reaching the semaphores that exist (and letting waiters in at once),
 * deletion refused while a semaphore it configures has holders or waiters,
 * unknown names, mutex lookups (every name answers), the semaphore.updated
 * and semaphore.deleted events, and refused calls changing nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

static int sem_set(sl_engine *eng, int64_t now, const char *name, uint32_t limit, sl_strategy s,
                   int64_t lease, sl_error *err)
{
    return sl_sem_set(eng, name, limit, s, lease, now, err);
}

static void view_of(sl_engine *eng, const char *name, sl_lock_view *out)
{
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, name, out, NULL), 0);
}

/* Checks a semaphore's configuration as its lookup reports it. */
static void expect_sem(sl_engine *eng, const char *name, uint32_t limit, sl_strategy s,
                       int64_t lease, const char *from)
{
    sl_lock_view v;
    view_of(eng, name, &v);
    assert_int_equal(v.kind, SL_KIND_SEMAPHORE);
    assert_true(v.configured);
    assert_int_equal(v.limit, limit);
    assert_int_equal(v.strategy, s);
    assert_int_equal(v.lease_ms, lease);
    if (from) {
        assert_non_null(v.from_pattern);
        assert_string_equal(v.from_pattern, from);
    } else {
        assert_null(v.from_pattern);
    }
}

static void expect_config(sl_engine *eng, const char *name, uint32_t limit, sl_strategy s,
                          int64_t lease)
{
    const sl_config *cfg = sl_config_find(eng, name);
    assert_non_null(cfg);
    sl_config_view cv;
    sl_config_get(cfg, &cv);
    assert_string_equal(cv.name, name);
    assert_int_equal(cv.pattern, name[strlen(name) - 1] == '*');
    assert_int_equal(cv.limit, limit);
    assert_int_equal(cv.strategy, s);
    assert_int_equal(cv.lease_ms, lease);
}

static void expect_not_found(sl_engine *eng, const char *name)
{
    sl_lock_view v;
    const sl_lock *l = (const sl_lock *)&v; /* must be reset to NULL */
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, name, &v, &l), SL_ENOTFOUND);
    assert_null(l);
}

/* ---- exact names and patterns ---------------------------------------------- */

static void exact_config(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_error err;
    assert_int_equal(sem_set(eng, 5, "db", 3, SL_STRICT, 5000, &err), 0);
    expect_config(eng, "db", 3, SL_STRICT, 5000);
    assert_null(sl_config_find(eng, "dbx"));
    assert_null(sl_config_find(eng, "d"));
    assert_null(sl_config_find(eng, NULL));

    sl_lock_view v;
    view_of(eng, "db", &v);
    assert_string_equal(v.key, "sem/db");
    assert_string_equal(v.name, "db");
    assert_true(v.configured);
    assert_null(v.from_pattern);
    assert_int_equal(v.limit, 3);
    assert_int_equal(v.lease_ms, 5000);
    assert_int_equal(v.used, 0);
    assert_int_equal(v.token, 0);
    assert_int_equal(v.nholders, 0);
    assert_int_equal(v.npending, 0);
    expect_not_found(eng, "dbx");

    /* The configured lease is the lease of claims that set none. */
    t_claim(eng, 6, "id=a s:db");
    sl_claim_view cv;
    sl_claim_get(t_find(eng, "a"), &cv);
    assert_int_equal(cv.lease_ms, 5000);
    t_free(eng);
}

static void pattern_resolution(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "foo/*", 3, SL_STRICT);
    t_sem(eng, 0, "foo/b*", 4, SL_SKIP);
    t_sem(eng, 0, "foo/bar/*", 5, SL_REBALANCED);
    t_sem(eng, 0, "foo/db", 1, SL_STRICT);
    t_sem(eng, 0, "top*", 6, SL_STRICT);
    expect_config(eng, "foo/*", 3, SL_STRICT, 0);
    assert_null(sl_config_find(eng, "foo/x")); /* made from a pattern, not a config */

    expect_sem(eng, "foo/x", 3, SL_STRICT, 0, "foo/*");
    expect_sem(eng, "foo/bx", 4, SL_SKIP, 0, "foo/b*");
    expect_sem(eng, "foo/barx", 4, SL_SKIP, 0, "foo/b*");
    expect_sem(eng, "foo/bar/x", 5, SL_REBALANCED, 0, "foo/bar/*");
    expect_sem(eng, "foo/bar/x/y", 5, SL_REBALANCED, 0, "foo/bar/*");
    expect_sem(eng, "foo/db", 1, SL_STRICT, 0, NULL);
    expect_sem(eng, "foo/dbx", 3, SL_STRICT, 0, "foo/*");
    /* A pattern matches its prefix itself too. */
    expect_sem(eng, "top", 6, SL_STRICT, 0, "top*");
    expect_sem(eng, "topics/a", 6, SL_STRICT, 0, "top*");
    expect_not_found(eng, "foo");
    expect_not_found(eng, "fo");
    expect_not_found(eng, "bar/foo/x");
    t_free(eng);
}

/* Patterns reach into the tag and group namespaces only when they name
 * them: a catch-all "*" leaves groups mutexes and adds no tag locks. */
static void patterns_keep_out_of_tags_and_groups(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "*", 3, SL_STRICT);
    t_sem(eng, 0, "gro*", 4, SL_STRICT);
    t_sem(eng, 0, "ta*", 4, SL_STRICT);
    expect_sem(eng, "anything", 3, SL_STRICT, 0, "*");
    expect_sem(eng, "groceries", 4, SL_STRICT, 0, "gro*");
    expect_not_found(eng, "group/pr-1");
    expect_not_found(eng, "tag/env=dev");
    expect_not_found(eng, "tag/env");
    /* Three claims of one group: still a mutex. */
    t_claim(eng, 1, "id=g1 group=star/pr-1");
    t_claim(eng, 2, "id=g2 group=star/pr-1");
    assert_int_equal(t_state(eng, "g1"), SL_HELD);
    assert_int_equal(t_state(eng, "g2"), SL_PENDING);
    sl_claim_lock_view lv;
    sl_claim_lock_peek(t_find(eng, "g2"), 0, &lv);
    assert_int_equal(lv.kind, SL_KIND_MUTEX);
    /* A tag adds no lock through "*". */
    t_claim(eng, 3, "id=t1 tag=env=dev");
    assert_int_equal(t_view(eng, "t1").nlocks, 0);
    /* Patterns that name the namespaces do configure them. */
    t_sem(eng, 4, "group/*", 2, SL_STRICT);
    t_sem(eng, 4, "tag/env=*", 1, SL_STRICT);
    expect_sem(eng, "group/pr-9", 2, SL_STRICT, 0, "group/*");
    expect_sem(eng, "tag/env=dev", 1, SL_STRICT, 0, "tag/env=*");
    t_claim(eng, 5, "id=t2 tag=env=dev");
    assert_int_equal(t_view(eng, "t2").nlocks, 1);
    t_free(eng);
}

/* Each semaphore made from a pattern is its own: the limits are per name. */
static void pattern_semaphores_are_separate(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "foo/*", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:foo/a");
    t_claim(eng, 2, "id=b s:foo/b");
    t_claim(eng, 3, "id=a2 s:foo/a");
    assert_string_equal(t_with_state(eng, SL_HELD), "a b");
    sl_lock_view v;
    view_of(eng, "foo/a", &v);
    assert_int_equal(v.used, 1);
    assert_int_equal(v.npending, 1);
    assert_int_equal(v.token, 1);
    view_of(eng, "foo/b", &v);
    assert_int_equal(v.used, 1);
    assert_int_equal(v.npending, 0);
    assert_int_equal(v.token, 1);
    view_of(eng, "foo/c", &v);
    assert_int_equal(v.used, 0);
    assert_int_equal(v.token, 0);
    t_free(eng);
}

/* ---- new values reach existing semaphores ---------------------------------- */

static void pattern_update_propagates(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "foo/*", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:foo/a");
    t_claim(eng, 2, "id=b s:foo/a");
    t_claim(eng, 3, "id=c s:foo/b");
    (void)t_events(eng);
    sl_error err;
    assert_int_equal(sem_set(eng, 4, "foo/*", 2, SL_SKIP, 7000, &err), 0);
    assert_string_equal(t_events(eng), "semaphore.updated:foo/* claim.acquired:b");
    expect_sem(eng, "foo/a", 2, SL_SKIP, 7000, "foo/*");
    expect_sem(eng, "foo/b", 2, SL_SKIP, 7000, "foo/*");
    expect_sem(eng, "foo/never", 2, SL_SKIP, 7000, "foo/*");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "foo/a"), 2);
    /* Lowering through the pattern revokes nobody. */
    assert_int_equal(sem_set(eng, 5, "foo/*", 1, SL_SKIP, 7000, &err), 0);
    assert_string_equal(t_events(eng), "semaphore.updated:foo/*");
    assert_string_equal(t_with_state(eng, SL_HELD), "a b c");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "foo/a"), 2);
    t_free(eng);
}

static void exact_update_propagates(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "s", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:s");
    t_claim(eng, 2, "id=b s:s");
    t_claim(eng, 3, "id=c s:s");
    (void)t_events(eng);
    sl_error err;
    assert_int_equal(sem_set(eng, 4, "s", 3, SL_STRICT, 100, &err), 0);
    assert_string_equal(t_events(eng), "semaphore.updated:s claim.acquired:b claim.acquired:c");
    expect_sem(eng, "s", 3, SL_STRICT, 100, NULL);
    expect_config(eng, "s", 3, SL_STRICT, 100);
    t_free(eng);
}

/* An exact configuration set for a semaphore made from a pattern takes it
 * over at once; deleting it (once idle) hands it back to the pattern. */
static void exact_takes_over_from_pattern(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "foo/*", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:foo/a");
    t_claim(eng, 2, "id=b s:foo/a");
    (void)t_events(eng);
    sl_error err;
    assert_int_equal(sem_set(eng, 3, "foo/a", 2, SL_STRICT, 0, &err), 0);
    assert_string_equal(t_events(eng), "semaphore.updated:foo/a claim.acquired:b");
    expect_sem(eng, "foo/a", 2, SL_STRICT, 0, NULL);

    assert_int_equal(sl_sem_delete(eng, "foo/a", 4, &err), SL_ECONFLICT);
    assert_int_equal(err.code, SL_ECONFLICT);
    assert_false(sl_engine_changes_pending(eng));
    expect_sem(eng, "foo/a", 2, SL_STRICT, 0, NULL);

    t_release(eng, 5, "a");
    t_release(eng, 6, "b");
    (void)t_events(eng);
    assert_int_equal(sl_sem_delete(eng, "foo/a", 7, &err), 0);
    assert_string_equal(t_events(eng), "semaphore.deleted:foo/a");
    assert_null(sl_config_find(eng, "foo/a"));
    expect_sem(eng, "foo/a", 1, SL_STRICT, 0, "foo/*");
    /* Its fencing token carries on. */
    sl_lock_view v;
    view_of(eng, "foo/a", &v);
    assert_int_equal(v.token, 2);
    t_claim(eng, 8, "id=c s:foo/a");
    assert_int_equal(t_token(eng, "c", 0), 3);
    t_free(eng);
}

/* A longer pattern added later takes over the semaphores it matches. */
static void longer_pattern_takes_over(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "foo/*", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:foo/bar/x");
    t_claim(eng, 2, "id=b s:foo/bar/x");
    (void)t_events(eng);
    t_sem(eng, 3, "foo/bar/*", 2, SL_STRICT);
    assert_string_equal(t_events(eng), "semaphore.updated:foo/bar/* claim.acquired:b");
    expect_sem(eng, "foo/bar/x", 2, SL_STRICT, 0, "foo/bar/*");
    sl_error err;
    assert_int_equal(sl_sem_delete(eng, "foo/bar/*", 4, &err), SL_ECONFLICT);
    /* The shorter pattern now configures no busy semaphore. */
    assert_int_equal(sl_sem_delete(eng, "foo/*", 5, &err), 0);
    assert_string_equal(t_events(eng), "semaphore.deleted:foo/*");
    expect_not_found(eng, "foo/x");
    expect_sem(eng, "foo/bar/x", 2, SL_STRICT, 0, "foo/bar/*");
    t_release(eng, 6, "a");
    t_release(eng, 7, "b");
    assert_int_equal(sl_sem_delete(eng, "foo/bar/*", 8, &err), 0);
    expect_not_found(eng, "foo/bar/x");
    t_free(eng);
}

/* A semaphore whose configuration went away, then a pattern that matches it:
 * it is configured again, from the pattern, with its token. */
static void idle_semaphore_rebinds_to_new_pattern(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "q/x", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:q/x");
    t_release(eng, 2, "a");
    sl_error err;
    assert_int_equal(sl_sem_delete(eng, "q/x", 3, &err), 0);
    expect_not_found(eng, "q/x");
    assert_int_equal(t_claim_rc(eng, 4, "id=b s:q/x", &err), SL_EUNKNOWN);
    t_sem(eng, 5, "q/*", 4, SL_SKIP);
    expect_sem(eng, "q/x", 4, SL_SKIP, 0, "q/*");
    t_claim(eng, 6, "id=b s:q/x");
    assert_int_equal(t_token(eng, "b", 0), 2);
    t_free(eng);
}

/* ---- deletion -------------------------------------------------------------- */

static void delete_conflicts_while_busy(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "held", 1, SL_STRICT);
    t_sem(eng, 0, "waited", 0, SL_STRICT); /* paused: its claim only waits */
    t_sem(eng, 0, "p/*", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:held");
    t_claim(eng, 2, "id=w s:waited");
    t_claim(eng, 3, "id=p s:p/x");
    assert_int_equal(t_state(eng, "w"), SL_PENDING);
    (void)t_events(eng);
    sl_engine_stats before, after;
    sl_engine_stats_get(eng, &before);
    const char *busy[] = {"held", "waited", "p/*"};
    for (size_t i = 0; i < 3; i++) {
        sl_error err;
        memset(&err, 0, sizeof(err));
        assert_int_equal(sl_sem_delete(eng, busy[i], 4, &err), SL_ECONFLICT);
        assert_int_equal(err.code, SL_ECONFLICT);
        assert_non_null(err.what);
        assert_non_null(sl_config_find(eng, busy[i]));
    }
    assert_false(sl_engine_changes_pending(eng));
    sl_engine_stats_get(eng, &after);
    assert_int_equal(after.configs, before.configs);
    assert_int_equal(after.next_seq, before.next_seq);
    assert_string_equal(t_with_state(eng, SL_HELD), "a p");
    assert_string_equal(t_with_state(eng, SL_PENDING), "w");

    t_release(eng, 5, "a");
    t_release(eng, 6, "w");
    t_release(eng, 7, "p");
    (void)t_events(eng);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(sl_sem_delete(eng, busy[i], 8, NULL), 0);
    assert_string_equal(t_events(eng), "semaphore.deleted:held semaphore.deleted:waited "
                                       "semaphore.deleted:p/*");
    sl_engine_stats_get(eng, &after);
    assert_int_equal(after.configs, 0);
    expect_not_found(eng, "held");
    expect_not_found(eng, "p/x");
    t_free(eng);
}

static void delete_not_found(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "foo/*", 1, SL_STRICT);
    t_sem(eng, 0, "s", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:foo/x");
    (void)t_events(eng);
    sl_error err;
    const char *names[] = {"nope", "foo/x", "foo", "foo/", "S", ""};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        memset(&err, 0, sizeof(err));
        assert_int_equal(sl_sem_delete(eng, names[i], 2, &err), SL_ENOTFOUND);
        assert_int_equal(err.code, SL_ENOTFOUND);
    }
    assert_int_equal(sl_sem_delete(eng, NULL, 2, &err), SL_ENOTFOUND);
    assert_false(sl_engine_changes_pending(eng));
    assert_int_equal(sl_sem_delete(eng, "s", 3, &err), 0);
    assert_int_equal(sl_sem_delete(eng, "s", 4, &err), SL_ENOTFOUND);
    assert_string_equal(t_events(eng), "semaphore.deleted:s");
    t_free(eng);
}

/* ---- lookups ---------------------------------------------------------------- */

/* Every mutex name answers; one never used reads free, with the token
 * floor as token. A semaphore configuration of the same name is unrelated. */
static void mutex_lookup_any_name(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "m", 5, SL_SKIP);
    const char *names[] = {"never/used", "m", "a", "x:y=z"};
    for (size_t i = 0; i < 4; i++) {
        sl_lock_view v;
        const sl_lock *l = (const sl_lock *)&v;
        assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, names[i], &v, &l), 0);
        assert_null(l);
        assert_int_equal(v.kind, SL_KIND_MUTEX);
        assert_string_equal(v.name, names[i]);
        assert_int_equal(strncmp(v.key, "mtx/", 4), 0);
        assert_string_equal(v.key + 4, names[i]);
        assert_false(v.configured);
        assert_null(v.from_pattern);
        assert_int_equal(v.limit, 1);
        assert_int_equal(v.strategy, SL_STRICT);
        assert_int_equal(v.used, 0);
        assert_int_equal(v.token, 0);
        assert_int_equal(v.nholders, 0);
        assert_int_equal(v.npending, 0);
    }
    /* Used, then free again: it reads free, with its token. */
    t_claim(eng, 1, "id=a m:never/used");
    t_claim(eng, 2, "id=b m:never/used");
    sl_lock_view v;
    const sl_lock *l = NULL;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, "never/used", &v, &l), 0);
    assert_non_null(l);
    assert_int_equal(v.used, 1);
    assert_int_equal(v.nholders, 1);
    assert_int_equal(v.npending, 1);
    t_release(eng, 3, "a");
    t_release(eng, 4, "b");
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, "never/used", &v, NULL), 0);
    assert_int_equal(v.used, 0);
    assert_int_equal(v.npending, 0);
    assert_int_equal(v.token, 2);
    /* Bad names are refused, patterns included. */
    const char *bad[] = {"", "/a", "a/", "a//b", "a*", "a b"};
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, bad[i], &v, NULL), SL_EINVAL);
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, NULL, &v, NULL), SL_EINVAL);
    t_free(eng);
}

/* A semaphore answers only while configured, directly or by a pattern. */
static void semaphore_lookup_needs_config(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    expect_not_found(eng, "s");
    t_sem(eng, 0, "s", 2, SL_STRICT);
    expect_sem(eng, "s", 2, SL_STRICT, 0, NULL);
    t_claim(eng, 1, "id=a s:s");
    t_release(eng, 2, "a");
    assert_int_equal(sl_sem_delete(eng, "s", 3, NULL), 0);
    expect_not_found(eng, "s");
    /* Configured again: it answers with the token it had. */
    t_sem(eng, 4, "s", 1, SL_STRICT);
    sl_lock_view v;
    view_of(eng, "s", &v);
    assert_int_equal(v.token, 1);
    assert_int_equal(v.limit, 1);
    sl_lock_view bad;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, "a//b", &bad, NULL), SL_EINVAL);
    t_free(eng);
}

/* ---- events ----------------------------------------------------------------- */

static void events_carry_names_and_values(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    (void)t_events(eng);
    sl_error err;
    assert_int_equal(sem_set(eng, 100, "pool", 7, SL_REBALANCED, 2500, &err), 0);
    assert_int_equal(sem_set(eng, 101, "jobs/*", 2, SL_SKIP, 0, &err), 0);
    assert_int_equal(sl_sem_delete(eng, "pool", 102, &err), 0);

    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nevents, 3);
    const sl_event *e = &ch.events[0];
    assert_int_equal(e->type, SL_EV_SEMAPHORE_UPDATED);
    assert_null(e->claim);
    assert_string_equal(e->name, "pool");
    assert_int_equal(e->limit, 7);
    assert_int_equal(e->strategy, SL_REBALANCED);
    assert_int_equal(e->lease_ms, 2500);
    assert_int_equal(e->time_ms, 100);
    assert_int_equal(e->seq, 1);
    e = &ch.events[1];
    assert_int_equal(e->type, SL_EV_SEMAPHORE_UPDATED);
    assert_string_equal(e->name, "jobs/*");
    assert_int_equal(e->limit, 2);
    assert_int_equal(e->strategy, SL_SKIP);
    assert_int_equal(e->seq, 2);
    e = &ch.events[2];
    assert_int_equal(e->type, SL_EV_SEMAPHORE_DELETED);
    assert_null(e->claim);
    assert_string_equal(e->name, "pool");
    assert_int_equal(e->time_ms, 102);
    assert_int_equal(e->seq, 3);

    /* The batch names each configuration touched; a deleted one looks up
     * as NULL. */
    assert_int_equal(ch.nconfigs, 3);
    assert_string_equal(ch.configs[0], "pool");
    assert_string_equal(ch.configs[1], "jobs/*");
    assert_string_equal(ch.configs[2], "pool");
    assert_null(sl_config_find(eng, "pool"));
    assert_non_null(sl_config_find(eng, "jobs/*"));
    assert_string_equal(t_events(eng), "semaphore.updated:pool semaphore.updated:jobs/* "
                                       "semaphore.deleted:pool");
    assert_false(sl_engine_changes_pending(eng));
    t_free(eng);
}

/* ---- refusals ----------------------------------------------------------------- */

static void bad_set_changes_nothing(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "s", 2, SL_STRICT);
    t_claim(eng, 1, "id=a s:s");
    (void)t_events(eng);
    sl_engine_stats before;
    sl_engine_stats_get(eng, &before);

    char long_name[SL_NAME_MAX + 2];
    memset(long_name, 'n', SL_NAME_MAX + 1);
    long_name[SL_NAME_MAX + 1] = '\0';
    const char *bad_names[] = {"", "/s", "s/", "a//b", "a b", "a*b", "**", "*a", "s\t", long_name};
    sl_error err;
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        memset(&err, 0, sizeof(err));
        assert_int_equal(sem_set(eng, 2, bad_names[i], 1, SL_STRICT, 0, &err), SL_EINVAL);
        assert_string_equal(err.field, "name");
    }
    assert_int_equal(sem_set(eng, 2, NULL, 1, SL_STRICT, 0, &err), SL_EINVAL);
    assert_int_equal(sem_set(eng, 2, "s", SL_LIMIT_MAX + 1, SL_STRICT, 0, &err), SL_EINVAL);
    assert_string_equal(err.field, "limit");
    assert_int_equal(sem_set(eng, 2, "s", 1, (sl_strategy)3, 0, &err), SL_EINVAL);
    assert_string_equal(err.field, "strategy");
    assert_int_equal(sem_set(eng, 2, "s", 1, SL_STRICT, -1, &err), SL_EINVAL);
    assert_string_equal(err.field, "lease");
    assert_int_equal(sem_set(eng, 2, "new", SL_LIMIT_MAX + 1, SL_STRICT, 0, &err), SL_EINVAL);

    assert_false(sl_engine_changes_pending(eng));
    sl_engine_stats after;
    sl_engine_stats_get(eng, &after);
    assert_int_equal(after.configs, before.configs);
    assert_int_equal(after.locks, before.locks);
    assert_int_equal(after.next_seq, before.next_seq);
    expect_config(eng, "s", 2, SL_STRICT, 0);
    expect_sem(eng, "s", 2, SL_STRICT, 0, NULL);
    assert_null(sl_config_find(eng, "new"));
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "s"), 1);

    /* The bounds themselves are fine: 253 characters, the largest limit. */
    long_name[SL_NAME_MAX] = '\0';
    assert_int_equal(sem_set(eng, 3, long_name, SL_LIMIT_MAX, SL_STRICT, 0, &err), 0);
    expect_config(eng, long_name, SL_LIMIT_MAX, SL_STRICT, 0);
    /* A pattern's prefix may end in '/'. */
    assert_int_equal(sem_set(eng, 3, "pre/*", 1, SL_STRICT, 0, &err), 0);
    t_free(eng);
}

static void configs_bounded(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.configs_max = 2;
    sl_engine *eng = t_engine_opts(&opts);
    t_sem(eng, 0, "a", 1, SL_STRICT);
    t_sem(eng, 0, "b*", 1, SL_STRICT);
    (void)t_events(eng);
    sl_error err;
    assert_int_equal(sem_set(eng, 1, "c", 1, SL_STRICT, 0, &err), SL_ELIMIT);
    assert_int_equal(err.code, SL_ELIMIT);
    assert_false(sl_engine_changes_pending(eng));
    assert_null(sl_config_find(eng, "c"));
    /* Changing one that exists is still fine, and so is a new one once
     * another is deleted. */
    assert_int_equal(sem_set(eng, 2, "a", 5, SL_STRICT, 0, &err), 0);
    assert_int_equal(sl_sem_delete(eng, "b*", 3, &err), 0);
    assert_int_equal(sem_set(eng, 4, "c", 1, SL_STRICT, 0, &err), 0);
    t_free(eng);
}

static void config_next_lists_each_once(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    const char *names[] = {"a", "b/*", "b/c", "x*", "tag/env=*"};
    for (size_t i = 0; i < 5; i++)
        t_sem(eng, 0, names[i], (uint32_t)i + 1, SL_STRICT);
    int seen[5] = {0};
    size_t n = 0;
    for (const sl_config *c = sl_config_next(eng, NULL); c; c = sl_config_next(eng, c)) {
        sl_config_view v;
        sl_config_get(c, &v);
        bool known = false;
        for (size_t i = 0; i < 5; i++) {
            if (strcmp(v.name, names[i]) == 0) {
                seen[i]++;
                known = true;
                assert_int_equal(v.limit, i + 1);
                assert_int_equal(v.pattern, names[i][strlen(names[i]) - 1] == '*');
            }
        }
        assert_true(known);
        n++;
    }
    assert_int_equal(n, 5);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(sl_sem_delete(eng, "b/*", 1, NULL), 0);
    n = 0;
    for (const sl_config *c = sl_config_next(eng, NULL); c; c = sl_config_next(eng, c)) {
        sl_config_view v;
        sl_config_get(c, &v);
        assert_string_not_equal(v.name, "b/*");
        n++;
    }
    assert_int_equal(n, 4);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(exact_config),
        cmocka_unit_test(pattern_resolution),
        cmocka_unit_test(patterns_keep_out_of_tags_and_groups),
        cmocka_unit_test(pattern_semaphores_are_separate),
        cmocka_unit_test(pattern_update_propagates),
        cmocka_unit_test(exact_update_propagates),
        cmocka_unit_test(exact_takes_over_from_pattern),
        cmocka_unit_test(longer_pattern_takes_over),
        cmocka_unit_test(idle_semaphore_rebinds_to_new_pattern),
        cmocka_unit_test(delete_conflicts_while_busy),
        cmocka_unit_test(delete_not_found),
        cmocka_unit_test(mutex_lookup_any_name),
        cmocka_unit_test(semaphore_lookup_needs_config),
        cmocka_unit_test(events_carry_names_and_values),
        cmocka_unit_test(bad_set_changes_nothing),
        cmocka_unit_test(configs_bounded),
        cmocka_unit_test(config_next_lists_each_once),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
