/* store_support.h - helpers shared by the store tests: temporary store
 * directories, committing an engine's batch, raw SQL on a store file, and
 * comparing a live engine with one rebuilt from the store. */
#ifndef SL_TEST_STORE_SUPPORT_H
#define SL_TEST_STORE_SUPPORT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "store.h"

/* A new directory under /tmp; ts_rmdir removes it with its files and frees
 * the string. */
char *ts_tmpdir(void);
void ts_rmdir(char *dir);
/* "DIR/sluice.db" and "sqlite:DIR/sluice.db" (static buffers). */
const char *ts_path(const char *dir);
const char *ts_url(const char *dir);

/* Opens the store in dir; fails the test on error. */
sl_store *ts_open(const char *dir, sl_durability d);
/* Writes the engine's batch (one record of the log), clears it, and applies
 * the log to the state tables (which a server does in the background); fails
 * the test on error. */
void ts_commit(sl_store *st, sl_engine *eng);
/* false: ts_commit leaves the log unapplied, as a crash would. */
extern bool ts_apply_commits;
/* Appends to the store's log file fail from now on (the file size limit
 * stands in for a full disk: "File too large") or work again. */
void ts_log_full(const char *dir, bool full);
/* Copies a store's file, its WAL and its log directory as they are now (an
 * open store that does not write meanwhile): what a kill -9 would leave. */
void ts_copy_store(const char *from_dir, const char *to_dir);

/* Run after every store test, passed or failed (TS_TEST): puts back what a
 * test may have changed for the whole process (ts_apply_commits, the file
 * size limit), so that a test that fails halfway does not fail the ones
 * after it. */
int ts_teardown(void **state);
#define TS_TEST(f) cmocka_unit_test_teardown(f, ts_teardown)
/* A new engine (t_engine_opts with opts, or the defaults when NULL) loaded
 * from the store at now; fails the test on error. */
sl_engine *ts_load(sl_store *st, sl_engine_opts *opts, int64_t now, sl_store_load_stats *stats);

/* Asserts that b holds what a holds: every claim (fields but its last sign
 * of life, locks with tokens and positions, tags) in the same arrival and
 * pending order, every live lock (values, holders in grant order, waiters
 * in queue order), every configuration with its rules, the counters. */
void ts_same(sl_engine *a, sl_engine *b);
/* Fails the test unless x and y are the same rules (weights in order). */
void ts_same_rules(const char *name, const sl_sem_rules *x, const sl_sem_rules *y);

/* A raw connection to the store file in dir, and one-value queries on it. */
sqlite3 *ts_db(const char *dir);
void ts_exec(sqlite3 *db, const char *sql);
int64_t ts_int(sqlite3 *db, const char *sql);
/* The first column of the first row as text, "" for none (static buffer). */
const char *ts_text(sqlite3 *db, const char *sql);

#endif
