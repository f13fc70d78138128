/* test_sqlite_restore.c - an engine rebuilt from the SQLite store is the
 * engine that wrote it: every claim (held, pending, revoking, ended; tags,
 * groups, rebalance keys) with its tokens and queue positions, holders in
 * grant order, waiters in queue order (strict, skip, rebalanced),
 * configurations and patterns, counters, purged claims and evicted locks
 * gone; and it goes on exactly as the original would. Damaged rows are
 * refused with SL_STORE_EDATA naming the row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "store_support.h"
#include "support.h"

static void opts_small(sl_engine_opts *o)
{
    sl_engine_opts_default(o);
    o->idle_locks_max = 2;        /* evictions after a few idle mutexes */
    o->ended_retention_ms = 1000; /* purges within the test's time */
}

/* The batches of a day's work, committed as they come. Returns the time of
 * the last call. */
static int64_t workload(sl_engine *eng, sl_store *st)
{
    sl_error err;
    sl_store_set_source(st, SL_SOURCE_FILE);
    t_sem(eng, 1, "db", 2, SL_STRICT);
    t_sem(eng, 1, "pool", 3, SL_REBALANCED);
    t_sem(eng, 1, "q", 2, SL_SKIP);
    t_sem(eng, 1, "tag/env=*", 1, SL_STRICT);
    t_sem(eng, 1, "tag/team", 5, SL_STRICT);
    assert_int_equal(sl_sem_set(eng, "leased", 1, SL_STRICT, 5000, 1, &err), 0);
    ts_commit(st, eng);
    sl_store_set_source(st, SL_SOURCE_API);

    /* A claim ended early, to be purged later. */
    t_claim(eng, 2, "id=e0 m:e0");
    t_release(eng, 3, "e0");
    ts_commit(st, eng);

    /* Idle mutexes past idle_locks_max: evicted at the clear, written in
     * the next batch; the token floor rises before the locks below are
     * made (see tokens_across_the_floor for locks made before). */
    for (int i = 0; i < 4; i++) {
        char spec[32];
        snprintf(spec, sizeof(spec), "id=i%d m:idle%d", i, i);
        t_claim(eng, 4 + i, spec);
        snprintf(spec, sizeof(spec), "i%d", i);
        t_release(eng, 4 + i, spec);
        ts_commit(st, eng);
    }
    /* Every lock below that is waited on but not granted before the save
     * gets one grant now: a lock never granted has no saved token and
     * restarts from the floor (tokens_across_the_floor), which would make
     * the continuation below differ in tokens, by design. */
    t_claim(eng, 9, "id=p0 m:tz m:gy m:group/H");
    t_release(eng, 9, "p0");
    ts_commit(st, eng);
    /* strict: holders, waiters blocked elsewhere, reservations. */
    t_claim(eng, 10, "id=a holder=wf/a m:deploy s:db tag=env=prod tag=team=x prio=1 actor=tm");
    t_claim(eng, 11, "id=b holder=wf/b m:deploy s:db prio=3 actor=tm");
    t_claim(eng, 12, "id=c s:db");
    t_claim(eng, 13, "id=d s:db*2 prio=7 created=5");
    t_claim(eng, 14, "id=t1 tag=env=prod m:tz");
    t_claim(eng, 15, "id=to m:deploy timeout=50");
    ts_commit(st, eng);
    /* rebalanced: u1 takes the free slots, then shares converge. */
    t_claim(eng, 20, "id=r1 s:pool key=u1");
    t_claim(eng, 21, "id=r2 s:pool key=u1");
    t_claim(eng, 22, "id=r3 s:pool key=u1");
    t_claim(eng, 23, "id=r4 s:pool key=u1");
    t_claim(eng, 24, "id=r5 s:pool key=u2");
    t_claim(eng, 25, "id=r6 s:pool key=u3 created=1");
    t_claim(eng, 26, "id=r7 s:pool");
    ts_commit(st, eng);
    /* skip: the small one passes the big one. */
    t_claim(eng, 30, "id=q1 s:q");
    t_claim(eng, 31, "id=q2 s:q*2");
    t_claim(eng, 32, "id=q3 s:q");
    /* groups: a revoked holder with a grace, a superseded waiter. */
    t_claim(eng, 40, "id=g1 m:gx group=G");
    t_claim(eng, 41, "id=g2 m:gy group=G cancel=in-progress grace=5000");
    t_claim(eng, 42, "id=blk m:busy");
    t_claim(eng, 43, "id=h1 m:busy group=H");
    t_claim(eng, 44, "id=h2 m:busy group=H cancel=pending");
    t_claim(eng, 45, "id=l1 s:leased idem=tok\nretry-1 fp=4242");
    t_claim(eng, 46, "id=op m:deploy");
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "op"), 47), 0);
    ts_commit(st, eng);
    t_release(eng, 60, "c"); /* the timeout of "to" fires on the way (at 65) */
    t_claim(eng, 70, "id=e1 m:e1");
    t_release(eng, 71, "e1");
    ts_commit(st, eng);

    /* e0 is purged (ended at 3, kept 1000 ms) and its id taken again in the
     * same batch: the new row must win. */
    sl_engine_advance(eng, 1003);
    t_claim(eng, 1003, "id=e0 m:again lease=100000");
    t_claim(eng, 1004, "id=late s:pool key=u2 tag=team=y group=L");
    ts_commit(st, eng);
    return 1004;
}

/* Spot checks that the workload is what the comparison relies on. */
static void workload_shape(sl_engine *eng)
{
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    assert_int_equal(t_state(eng, "b"), SL_PENDING);
    assert_int_equal(t_state(eng, "d"), SL_PENDING);
    assert_int_equal(t_state(eng, "to"), SL_TIMED_OUT);
    assert_int_equal(t_state(eng, "g1"), SL_REVOKING);
    assert_int_equal(t_state(eng, "g2"), SL_PENDING);
    assert_int_equal(t_state(eng, "h1"), SL_SUPERSEDED);
    assert_int_equal(t_state(eng, "op"), SL_CANCELED);
    assert_int_equal(t_state(eng, "q2"), SL_PENDING);
    assert_int_equal(t_state(eng, "q3"), SL_HELD);
    assert_int_equal(t_state(eng, "e1"), SL_RELEASED);
    assert_int_equal(t_state(eng, "e0"), SL_HELD);
    assert_int_equal(t_state(eng, "r4"), SL_PENDING);
    assert_ptr_equal(sl_claim_find_idem(eng, "tok\nretry-1"), t_find(eng, "l1"));
    /* The actor's counts come back with its claims (the server's quotas). */
    sl_actor_counts ac;
    sl_engine_actor_get(eng, "tm", &ac);
    assert_int_equal(ac.live, 2);
    assert_int_equal(ac.pending, 1);
    assert_true(t_position(eng, "r5", 0) < t_position(eng, "r4", 0));
    assert_null(sl_claim_find(eng, "i0"));             /* ended at 4: purged at 1004 */
    assert_int_equal(t_state(eng, "i1"), SL_RELEASED); /* ended at 5: still kept */
    sl_engine_stats s;
    sl_engine_stats_get(eng, &s);
    assert_true(s.pending >= 6);
    assert_true(s.ended >= 4);
}

static void round_trip(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine_opts o;
    opts_small(&o);
    sl_engine *eng = t_engine_opts(&o);
    int64_t now = workload(eng, st);
    workload_shape(eng);
    sl_store_close(st);

    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_store_load_stats stats;
    sl_engine *back = ts_load(st, &o, now, &stats);
    sl_engine_stats es;
    sl_engine_stats_get(eng, &es);
    assert_int_equal(stats.claims, es.claims);
    assert_int_equal(stats.pending, es.pending);
    assert_int_equal(stats.held, es.held);
    assert_int_equal(stats.ended, es.ended);
    assert_int_equal(stats.configs, 6);
    /* Nothing was due: restoring changed nothing. */
    assert_false(sl_engine_changes_pending(back));
    ts_same(eng, back);
    assert_int_equal(t_token(back, "q3", 0), t_token(eng, "q3", 0));
    assert_int_equal(t_position(back, "r4", 0), t_position(eng, "r4", 0));

    /* The store holds what it should: no purged or evicted rows. */
    sqlite3 *db = ts_db(dir);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims WHERE id = 'e0'"), 1);
    assert_string_equal(ts_text(db, "SELECT locks FROM claims WHERE id = 'e0'"),
                        "[[0,\"again\",1,0,3]]");
    assert_string_equal(ts_text(db, "SELECT tags FROM claims WHERE id = 'a'"),
                        "[[\"env\",\"prod\"],[\"team\",\"x\"]]");
    assert_int_equal(ts_int(db, "SELECT count(*) FROM locks WHERE key LIKE 'mtx/idle%'"), 0);
    assert_true(ts_int(db, "SELECT token_floor FROM meta") >= 1);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims"), (int64_t)es.claims);
    assert_int_equal(ts_int(db, "SELECT source FROM configs WHERE name = 'db'"), SL_SOURCE_FILE);
    sqlite3_close(db);

    /* Both go on alike: same events, same seqs, same grants; back's
     * batches go to the store as the server's would. */
    int64_t t = now + 10;
    const char *steps[] = {"a", "r1", "q3", "g1", "blk", "r2"};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++, t++) {
        t_release(eng, t, steps[i]);
        t_release(back, t, steps[i]);
        sl_changes ca, cb;
        sl_engine_changes(eng, &ca);
        sl_engine_changes(back, &cb);
        assert_true(ca.nevents > 0);
        assert_int_equal(ca.nevents, cb.nevents);
        assert_int_equal(ca.events[0].seq, cb.events[0].seq);
        assert_int_equal(sl_store_write(st, back, &cb), 0);
        char ev[4096];
        snprintf(ev, sizeof(ev), "%s", t_events(eng));
        assert_string_equal(t_events(back), ev);
        ts_same(eng, back);
    }
    /* a released: d (priority 7, both slots of db) went before b. */
    assert_int_equal(t_state(back, "d"), SL_HELD);
    assert_int_equal(t_state(back, "b"), SL_PENDING);

    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* A crash leaves records that the state tables do not hold yet, in the
 * log file: a start applies them (moving them into the log table) before
 * it loads. The store's files are copied while it is open with nothing
 * applied, as a kill -9 would leave them. */
static void restore_from_the_log(void **state)
{
    (void)state;
    char *dir = ts_tmpdir(), *copy = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine_opts o;
    opts_small(&o);
    sl_engine *eng = t_engine_opts(&o);
    ts_apply_commits = false;
    int64_t now = workload(eng, st);
    ts_apply_commits = true;
    int64_t records = (int64_t)sl_store_log_unapplied(st);
    assert_true(records >= 5);
    ts_copy_store(dir, copy);
    sl_store_close(st);

    sqlite3 *db = ts_db(copy);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM log"), 0); /* all in the log file */
    assert_int_equal(ts_int(db, "SELECT applied FROM meta"), 0);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims"), 0);
    sqlite3_close(db);

    st = ts_open(copy, SL_DURABILITY_NORMAL);
    sl_store_load_stats stats;
    sl_engine *back = ts_load(st, &o, now, &stats);
    assert_false(sl_engine_changes_pending(back));
    ts_same(eng, back);
    sl_engine_stats es;
    sl_engine_stats_get(eng, &es);
    assert_int_equal(stats.claims, es.claims);
    db = ts_db(copy);
    assert_int_equal(ts_int(db, "SELECT applied FROM meta"), records);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM log"), records);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims"), (int64_t)es.claims);
    sqlite3_close(db);
    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
    ts_rmdir(copy);
}

/* The same continuation compared event by event, against an engine loaded
 * from a store that was written and reloaded twice. */
static void reload_twice(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine_opts o;
    opts_small(&o);
    sl_engine *eng = t_engine_opts(&o);
    int64_t now = workload(eng, st);

    sl_engine *mid = ts_load(st, &o, now, NULL);
    ts_same(eng, mid);
    t_release(mid, now + 1, "a");
    t_release(eng, now + 1, "a");
    ts_commit(st, mid);
    sl_engine_free(mid);
    sl_engine *back = ts_load(st, &o, now + 1, NULL);
    sl_engine_changes_clear(eng);
    ts_same(eng, back);

    t_release(eng, now + 2, "r2");
    t_release(back, now + 2, "r2");
    char a[4096];
    snprintf(a, sizeof(a), "%s", t_events(eng));
    assert_string_equal(t_events(back), a);
    assert_string_equal(a, "claim.released:r2 claim.acquired:r6"); /* u3, oldest */
    t_release(eng, now + 3, "b");
    t_release(back, now + 3, "b");
    snprintf(a, sizeof(a), "%s", t_events(eng));
    assert_string_equal(t_events(back), a);
    ts_same(eng, back);

    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* A held claim whose lease ran out while the server was down is given a
 * full lease from the restart; restore_done's batch holds what it did. */
static void restart_gives_a_lease(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    t_claim(eng, 100, "id=a m:x lease=1000");
    t_claim(eng, 100, "id=b m:x lease=1000 timeout=500");
    ts_commit(st, eng);
    sl_engine_free(eng);

    sl_engine *back = ts_load(st, NULL, 5000, NULL);
    assert_int_equal(t_state(back, "a"), SL_HELD);
    /* b's timeout counts from arrival and is not extended. */
    assert_string_equal(t_events(back), "claim.timed_out:b");
    sl_engine_advance(back, 5999);
    assert_int_equal(t_state(back, "a"), SL_HELD);
    sl_engine_advance(back, 6000);
    assert_int_equal(t_state(back, "a"), SL_EXPIRED);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

static uint64_t lock_token(sl_engine *eng, const char *mutex)
{
    sl_lock_view v;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_MUTEX, mutex, &v, NULL), 0);
    return v.token;
}

/* Tokens across a rise of the token floor: a lock granted before the floor
 * rose continues from its own saved token, below the floor; a lock made
 * before and never granted had no token to save and restarts from the
 * floor (a jump forward: tokens still never go backwards). */
static void tokens_across_the_floor(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine_opts o;
    sl_engine_opts_default(&o);
    o.idle_locks_max = 1;
    sl_engine *eng = t_engine_opts(&o);
    t_claim(eng, 1, "id=a m:kept");
    t_claim(eng, 1, "id=blk m:busy");
    t_claim(eng, 1, "id=w m:busy m:never");
    ts_commit(st, eng);
    for (int i = 0; i < 3; i++) {
        char spec[32], id[8];
        for (int k = 0; k < 2; k++) {
            snprintf(id, sizeof(id), "x%d%d", i, k);
            snprintf(spec, sizeof(spec), "id=%s m:old%d", id, i);
            t_claim(eng, 2, spec);
            t_release(eng, 2, id);
        }
        ts_commit(st, eng);
    }
    ts_commit(st, eng);                                 /* the last clear's evictions */
    assert_int_equal(lock_token(eng, "never/used"), 2); /* the floor */
    assert_int_equal(lock_token(eng, "kept"), 1);
    assert_int_equal(lock_token(eng, "never"), 0);

    sl_engine *back = ts_load(st, &o, 3, NULL);
    assert_int_equal(lock_token(back, "never/used"), 2);
    assert_int_equal(lock_token(back, "kept"), 1);
    assert_int_equal(lock_token(back, "busy"), 1);
    assert_int_equal(lock_token(back, "never"), 2);

    sl_engine *both[2] = {eng, back};
    for (int k = 0; k < 2; k++) {
        t_release(both[k], 4, "a");
        t_claim(both[k], 4, "id=a2 m:kept");
        t_release(both[k], 5, "blk");
        assert_int_equal(t_token(both[k], "a2", 0), 2);
        assert_int_equal(t_token(both[k], "w", 0), 2);
        sl_engine_changes_clear(both[k]);
    }
    assert_int_equal(t_token(eng, "w", 1), 1);
    assert_int_equal(t_token(back, "w", 1), 3);
    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* ---- damaged rows -------------------------------------------------------- */

static void expect_edata(const char *dir, const char *sql, const char *undo, const char *words1,
                         const char *words2)
{
    sqlite3 *db = ts_db(dir);
    ts_exec(db, sql);
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    assert_int_equal(sl_store_load(st, eng, 10, NULL), SL_STORE_EDATA);
    const char *msg = sl_store_error(st);
    if (!strstr(msg, words1) || !strstr(msg, words2))
        fail_msg("\"%s\" lacks \"%s\" or \"%s\"", msg, words1, words2);
    t_free(eng);
    sl_store_close(st);
    ts_exec(db, undo);
    sqlite3_close(db);
}

static void damaged_rows_refused(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    t_sem(eng, 1, "db", 2, SL_STRICT);
    t_claim(eng, 2, "id=good s:db tag=k=v");
    t_claim(eng, 3, "id=c s:db m:x");
    ts_commit(st, eng);
    sl_engine_free(eng);
    sl_store_close(st);

    expect_edata(dir, "UPDATE claims SET locks = '{\"locks\": 1}' WHERE id = 'c'",
                 "UPDATE claims SET locks = '[[1,\"db\",1,0,2],[0,\"x\",1,0,1]]' WHERE id = 'c'",
                 "claim c", "not a JSON array of arrays");
    expect_edata(dir, "UPDATE claims SET locks = '[[1,\"db\",1,0,2],[0,\"x\"' WHERE id = 'c'",
                 "UPDATE claims SET locks = '[[1,\"db\",1,0,2],[0,\"x\",1,0,1]]' WHERE id = 'c'",
                 "claim c", "lock 1 is malformed");
    expect_edata(dir, "UPDATE claims SET locks = '[[1,\"db\",0,0,2]]' WHERE id = 'c'",
                 "UPDATE claims SET locks = '[[1,\"db\",1,0,2],[0,\"x\",1,0,1]]' WHERE id = 'c'",
                 "claim c", "lock 0");
    expect_edata(dir, "UPDATE claims SET locks = '[[0,\"bad//name\",1,0,2]]' WHERE id = 'c'",
                 "UPDATE claims SET locks = '[[1,\"db\",1,0,2],[0,\"x\",1,0,1]]' WHERE id = 'c'",
                 "claim c", "malformed lock");
    expect_edata(dir, "UPDATE claims SET state = 42 WHERE id = 'c'",
                 "UPDATE claims SET state = 1 WHERE id = 'c'", "claim c", "column state");
    expect_edata(dir, "UPDATE claims SET holder = printf('%.300c', 'h') WHERE id = 'c'",
                 "UPDATE claims SET holder = 'c' WHERE id = 'c'", "claim c", "column holder");
    expect_edata(dir, "UPDATE claims SET tags = '[[\"k\"]]' WHERE id = 'good'",
                 "UPDATE claims SET tags = '[[\"k\",\"v\"]]' WHERE id = 'good'", "claim good",
                 "tag 0");
    expect_edata(dir, "UPDATE claims SET id = printf('%.80c', 'x') WHERE id = 'c'",
                 "UPDATE claims SET id = 'c' WHERE length(id) = 80", "arrival 2",
                 "id is missing or too long");
    expect_edata(dir, "UPDATE configs SET strategy = 9 WHERE name = 'db'",
                 "UPDATE configs SET strategy = 0 WHERE name = 'db'", "configuration db",
                 "column strategy");
    expect_edata(dir, "INSERT INTO locks (key, token) VALUES ('bogus', 3)",
                 "DELETE FROM locks WHERE key = 'bogus'", "lock bogus", "mtx/NAME");
    expect_edata(dir, "DELETE FROM meta", "INSERT INTO meta VALUES (1, 8, 4, 3, 0, 1)", "counters",
                 "missing");

    /* Mended, it loads. */
    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *back = ts_load(st, NULL, 10, NULL);
    assert_int_equal(t_state(back, "c"), SL_HELD);
    assert_int_equal(t_token(back, "c", 0), 2);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* Claims are read in batches on a thread of their own: a store of many
 * batches loads whole, and a damaged row far into it, or one the engine
 * refuses while the reader is batches ahead, still fails the load naming
 * that row (and stops the reader). */
static void damage_after_many_batches(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    char spec[64];
    for (int i = 0; i < 3000; i++) {
        snprintf(spec, sizeof spec, "id=c%04d m:m%d tag=k=v%d", i, i % 37, i % 3);
        t_claim(eng, 2 + i, spec);
        if (i % 500 == 499)
            ts_commit(st, eng);
    }
    ts_commit(st, eng);
    sl_store_close(st);

    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_store_load_stats stats;
    sl_engine *back = ts_load(st, NULL, 4000, &stats);
    assert_int_equal(stats.claims, 3000);
    assert_int_equal(stats.held, 37);
    assert_int_equal(stats.pending, 3000 - 37);
    ts_same(eng, back);
    sl_engine_free(eng);
    t_free(back); /* counts both engines' blocks */
    sl_store_close(st);

    expect_edata(dir, "UPDATE claims SET state = 42 WHERE id = 'c2711'",
                 "UPDATE claims SET state = 0 WHERE id = 'c2711'", "claim c2711", "column state");
    expect_edata(dir, "UPDATE claims SET locks = '[[0,\"m1\",1,0,0],[0,\"m1\",1,0,0]]'"
                      " WHERE id = 'c1001'",
                 "UPDATE claims SET locks = '[[0,\"m2\",1,0,0]]' WHERE id = 'c1001'",
                 "claim c1001", "the engine refused it");
    expect_edata(dir, "UPDATE claims SET locks = '[[0,\"m1\",1,0,0],[0,\"m1\",1,0,0]]'"
                      " WHERE id = 'c0003'",
                 "UPDATE claims SET locks = '[[0,\"m3\",1,0,0]]' WHERE id = 'c0003'",
                 "claim c0003", "the engine refused it");
    ts_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_TEST(round_trip),
        TS_TEST(restore_from_the_log),
        TS_TEST(reload_twice),
        TS_TEST(restart_gives_a_lease),
        TS_TEST(tokens_across_the_floor),
        TS_TEST(damaged_rows_refused),
        TS_TEST(damage_after_many_batches),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
