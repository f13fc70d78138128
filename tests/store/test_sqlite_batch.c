/* test_sqlite_batch.c - batches captured on one thread and committed on
 * another (store.h): the capture is a copy (the engine may change at once),
 * a commit on its own thread never shows half a batch to the reads that run
 * meanwhile, a failed commit can be committed again, and pruning rides in
 * a batch. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "store_support.h"
#include "support.h"

static int count_one(void *ud, const sl_store_event *ev)
{
    (void)ev;
    (*(size_t *)ud)++;
    return 0;
}

static size_t count_events(sl_store *st)
{
    size_t n = 0;
    uint64_t next = 0, since = 0;
    for (;;) {
        size_t before = n;
        int rc = sl_store_events(st, since, NULL, 1000, count_one, &n, &next);
        if (rc)
            fail_msg("%s", sl_store_error(st));
        if (n == before || next == since)
            break;
        since = next;
    }
    return n;
}

static void overlaps_only_on_files(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    assert_true(sl_store_commit_overlaps(st));
    sl_store_close(st);
    sl_store_opts o = {"sqlite::memory:", SL_DURABILITY_NORMAL};
    char err[256];
    assert_int_equal(sl_store_open(&o, &st, err, sizeof(err)), 0);
    assert_false(sl_store_commit_overlaps(st));
    sl_store_close(st);
    ts_rmdir(dir);
}

/* What is committed is what the engine held at capture, whatever it did
 * after. */
static void capture_is_a_copy(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    t_claim(eng, 10, "id=a m:x lease=60000");
    t_claim(eng, 10, "id=b m:x lease=60000");
    sl_store_batch *b = sl_store_batch_new();
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(sl_store_capture(st, eng, &ch, b), 0);
    assert_false(sl_store_batch_empty(b));
    sl_engine_changes_clear(eng);
    t_release(eng, 20, "a"); /* not in b */
    assert_int_equal(sl_store_commit(st, b), 0);
    sl_engine *back = ts_load(st, NULL, 30, NULL);
    sl_claim_view v;
    sl_claim_get(t_find(back, "a"), &v);
    assert_int_equal(v.state, SL_HELD);
    sl_claim_get(t_find(back, "b"), &v);
    assert_int_equal(v.state, SL_PENDING);
    sl_engine_free(back);
    /* The next batch brings the release. */
    ts_commit(st, eng);
    back = ts_load(st, NULL, 30, NULL);
    sl_claim_get(t_find(back, "b"), &v);
    assert_int_equal(v.state, SL_HELD);
    sl_engine_free(back);
    sl_store_batch_free(b);
    sl_engine_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

typedef struct job {
    sl_store *st;
    sl_store_batch *b;
    int rc;
} job;

static void *commit_thread(void *arg)
{
    job *j = arg;
    j->rc = sl_store_commit(j->st, j->b);
    return NULL;
}

/* Reads during a commit on another thread see all of a batch or none. */
static void commit_beside_reads(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    sl_store_batch *b = sl_store_batch_new();
    size_t expect = 0;
    for (int round = 0; round < 20; round++) {
        char spec[64];
        for (int i = 0; i < 200; i++) {
            snprintf(spec, sizeof(spec), "id=r%dc%d m:k%d", round, i, i);
            t_claim(eng, 100 + round, spec);
        }
        sl_changes ch;
        sl_engine_changes(eng, &ch);
        size_t in_batch = ch.nevents;
        assert_int_equal(sl_store_capture(st, eng, &ch, b), 0);
        sl_engine_changes_clear(eng);
        job j = {st, b, -1};
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, commit_thread, &j), 0);
        for (int k = 0; k < 5; k++) {
            size_t seen = count_events(st);
            assert_true(seen == expect || seen == expect + in_batch);
        }
        pthread_join(t, NULL);
        assert_int_equal(j.rc, 0);
        expect += in_batch;
        assert_int_equal(count_events(st), expect);
    }
    sl_store_batch_free(b);
    sl_engine_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* A commit that fails leaves nothing, says why in the batch, and the same
 * batch commits once the cause is gone. */
static void failed_commit_retried(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    t_claim(eng, 10, "id=a m:x");
    sl_store_batch *b = sl_store_batch_new();
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(sl_store_capture(st, eng, &ch, b), 0);
    sl_engine_changes_clear(eng);
    sqlite3 *db = ts_db(dir);
    ts_log_full(dir, true);
    int rc = sl_store_commit(st, b);
    ts_log_full(dir, false);
    assert_int_equal(rc, SL_STORE_EIO);
    assert_non_null(strstr(sl_store_batch_error(b), "File too large"));
    assert_int_equal(sl_store_log_unapplied(st), 0);
    assert_int_equal(sl_store_commit(st, b), 0);
    assert_string_equal(sl_store_batch_error(b), "");
    assert_int_equal(sl_store_log_unapplied(st), 1);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM log"), 0); /* in the log file */
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims"), 0); /* not applied yet */
    assert_int_equal(sl_store_apply(st), 0);
    /* One record, with the id the failed commit would have had. */
    assert_int_equal(ts_int(db, "SELECT count(*) FROM log"), 1);
    assert_int_equal(ts_int(db, "SELECT id FROM log"), 1);
    assert_int_equal(ts_int(db, "SELECT events FROM log"), 2);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims"), 1);
    assert_int_equal(ts_int(db, "SELECT applied FROM meta"), 1);
    sqlite3_close(db);
    sl_store_batch_free(b);
    sl_engine_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

static void prune_in_a_batch(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    t_claim(eng, 100, "id=a m:x");
    ts_commit(st, eng);
    /* Records not yet applied to the state are never pruned. */
    assert_int_equal(sl_store_prune_events(st, 200, &(uint64_t){0}), 0);
    assert_int_equal(count_events(st), 2);
    assert_int_equal(sl_store_apply(st), 0);
    t_claim(eng, 300, "id=b m:y");
    sl_store_batch *b = sl_store_batch_new();
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(sl_store_capture(st, eng, &ch, b), 0);
    sl_engine_changes_clear(eng);
    sl_store_batch_prune(b, 200);
    assert_int_equal(sl_store_commit(st, b), 0);
    assert_int_equal(sl_store_batch_pruned(b), 2); /* a's queued and acquired */
    assert_int_equal(count_events(st), 2);
    /* A batch with only a prune is not empty. */
    sl_store_batch *p = sl_store_batch_new();
    assert_true(sl_store_batch_empty(p));
    sl_store_batch_prune(p, 1000);
    assert_false(sl_store_batch_empty(p));
    assert_int_equal(sl_store_commit(st, p), 0);
    assert_int_equal(sl_store_batch_pruned(p), 0); /* the newest record stays, b's two */
    assert_int_equal(count_events(st), 2);
    sl_store_batch_free(p);
    sl_store_batch_free(b);
    sl_engine_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* Commits never checkpoint by themselves: the store says when records wait
 * to be applied (or the WAL is long enough), and a checkpoint, run where
 * commits run, applies them and resets that. */
static void checkpoint_when_due(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    sl_store_batch *b = sl_store_batch_new();
    assert_false(sl_store_checkpoint_due(st));
    int n = 0;
    char spec[64];
    for (; n < 50000 && !sl_store_checkpoint_due(st); n++) {
        snprintf(spec, sizeof(spec), "id=c%d m:k%d", n, n % 50);
        t_claim(eng, 100 + n, spec);
        sl_changes ch;
        sl_engine_changes(eng, &ch);
        assert_int_equal(sl_store_capture(st, eng, &ch, b), 0);
        sl_engine_changes_clear(eng);
        assert_int_equal(sl_store_commit(st, b), 0);
    }
    assert_true(sl_store_checkpoint_due(st));
    assert_true(n > 100); /* thousands of frames, not a few commits */
    assert_int_equal(sl_store_checkpoint(st), 0);
    assert_false(sl_store_checkpoint_due(st));
    sqlite3 *db = ts_db(dir);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims"), n);
    sqlite3_close(db);
    sl_store_batch_free(b);
    sl_engine_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_TEST(overlaps_only_on_files),
        TS_TEST(capture_is_a_copy),
        TS_TEST(commit_beside_reads),
        TS_TEST(failed_commit_retried),
        TS_TEST(prune_in_a_batch),
        TS_TEST(checkpoint_when_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
