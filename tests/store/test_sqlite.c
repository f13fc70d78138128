/* test_sqlite.c - the SQLite store's file and log: URLs, opening and
 * creating, migrations and a schema too new, durability pragmas,
 * configuration sources, the event log (rows, reasons, since/claim/limit and
 * `next`), pruning, and a failed batch leaving nothing behind. Rebuilding
 * the engine is test_sqlite_restore.c; killed writers test_sqlite_crash.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <dirent.h>

#include "disk_fault.h"
#include "sqlite_int.h"
#include "store_support.h"
#include "support.h"

/* ---- opening ------------------------------------------------------------- */

static int try_open(const char *url, sl_store **st, char *err, size_t cap)
{
    sl_store_opts o = {url, SL_DURABILITY_NORMAL};
    return sl_store_open(&o, st, err, cap);
}

static void urls_refused(void **state)
{
    (void)state;
    sl_store *st = (sl_store *)1;
    char err[512];
    assert_int_equal(try_open("mysql://localhost/sluice", &st, err, sizeof(err)), SL_STORE_EURL);
    assert_null(st);
    assert_non_null(strstr(err, "mysql://localhost/sluice"));
    assert_non_null(strstr(err, "supported are sqlite:PATH"));
    assert_non_null(strstr(err, "postgres://USER@HOST/DB"));
    /* A PostgreSQL URL is a store; one that cannot be reached says so. */
    assert_int_equal(try_open("postgres://nobody@127.0.0.1:1/none", &st, err, sizeof(err)),
                     SL_STORE_EIO);
    assert_null(st);
    assert_non_null(strstr(err, "cannot connect"));
    assert_int_equal(try_open("sqlite:", &st, err, sizeof(err)), SL_STORE_EURL);
    assert_non_null(strstr(err, "names no file"));
    assert_int_equal(try_open("", &st, err, sizeof(err)), SL_STORE_EURL);
    assert_int_equal(try_open(NULL, &st, err, sizeof(err)), SL_STORE_EURL);
    assert_non_null(strstr(err, "sqlite:PATH"));
}

/* What logs and /healthz show of a store URL: never a password. */
static void url_labels(void **state)
{
    (void)state;
    static const char *const cases[][2] = {
        {"sqlite:/var/lib/sluice/sluice.db", "sqlite:/var/lib/sluice/sluice.db"},
        {"postgres://u:secret@db:5432/sluice", "postgres://u@db:5432/sluice"},
        {"postgresql://u@db/sluice", "postgresql://u@db/sluice"},
        {"postgres://u@db/s?password=secret&sslmode=require",
         "postgres://u@db/s?password=&sslmode=require"},
        {"host=db password=secret dbname=s password=again", "host=db password= dbname=s password="},
        {"postgres://db/s", "postgres://db/s"},
    };
    char out[128];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        sl_store_url_label(cases[i][0], out, sizeof(out));
        assert_string_equal(out, cases[i][1]);
    }
    for (size_t cap = 1; cap < 26; cap++) { /* cut anywhere, still no part of it */
        sl_store_url_label("postgres://u:secret@db/s", out, cap);
        assert_null(strstr(out, ":s"));
    }
}

static void missing_directory_refused(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    char url[4200], err[512];
    snprintf(url, sizeof(url), "sqlite:%s/nope/sluice.db", dir);
    sl_store *st = NULL;
    assert_int_equal(try_open(url, &st, err, sizeof(err)), SL_STORE_EIO);
    assert_null(st);
    assert_non_null(strstr(err, "/nope"));
    assert_non_null(strstr(err, "create it"));
    ts_rmdir(dir);
}

static void create_then_reopen(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    assert_int_equal(sl_store_current_schema(), sl__sqlite_nmigrations);
    assert_int_equal(sl_store_schema_version(st), sl__sqlite_nmigrations);
    assert_string_equal(sl_store_error(st), "");

    sqlite3 *db = ts_db(dir);
    assert_string_equal(ts_text(db, "PRAGMA journal_mode"), "wal");
    assert_int_equal(ts_int(db, "SELECT version FROM schema_version"), sl__sqlite_nmigrations);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM schema_version"), 1);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                "name IN ('meta', 'configs', 'locks', 'claims', 'log')"),
                     5);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'events'"), 0);
    assert_int_equal(ts_int(db, "SELECT next_seq FROM meta"), 1);
    sqlite3_close(db);

    /* Something written survives a reopen, which does not migrate again. */
    sl_engine *eng = t_engine();
    t_sem(eng, 1, "db", 2, SL_STRICT);
    ts_commit(st, eng);
    sl_store_close(st);
    st = ts_open(dir, SL_DURABILITY_FULL);
    assert_int_equal(sl_store_schema_version(st), sl__sqlite_nmigrations);
    sl_engine *back = ts_load(st, NULL, 2, NULL);
    ts_same(eng, back);
    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* "sqlite::memory:" is a whole store that lives as long as it is open
 * (tests of the layers above use it); there is no WAL in memory. */
static void memory_store(void **state)
{
    (void)state;
    sl_store_opts o = {"sqlite::memory:", SL_DURABILITY_NORMAL};
    sl_store *st = NULL;
    char err[512];
    assert_int_equal(sl_store_open(&o, &st, err, sizeof(err)), 0);
    assert_int_equal(sl_store_schema_version(st), sl__sqlite_nmigrations);
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a m:x");
    ts_commit(st, eng);
    sl_engine *back = ts_load(st, NULL, 2, NULL);
    ts_same(eng, back);
    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
}

/* synchronous is per connection: read it on the store's own. */
static void durability_pragmas(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sqlite3 *db = ((sl_sqlite *)st)->db;
    assert_int_equal(ts_int(db, "PRAGMA synchronous"), 1);
    assert_string_equal(ts_text(db, "PRAGMA journal_mode"), "wal");
    assert_true(ts_int(db, "PRAGMA busy_timeout") > 0);
    assert_int_equal(ts_int(db, "PRAGMA journal_size_limit"), 64 * 1024 * 1024);
    sl_store_close(st);
    st = ts_open(dir, SL_DURABILITY_FULL);
    assert_int_equal(ts_int(((sl_sqlite *)st)->db, "PRAGMA synchronous"), 2);
    sl_store_close(st);
    ts_rmdir(dir);
}

static void foreign_files_refused(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    char url[4200], err[1024];
    snprintf(url, sizeof(url), "sqlite:%s", ts_path(dir));
    FILE *f = fopen(ts_path(dir), "w");
    assert_non_null(f);
    fputs("this is not a database, it is a long enough line of text to be read as one\n", f);
    for (int i = 0; i < 100; i++)
        fputs("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n", f);
    fclose(f);
    sl_store *st = NULL;
    assert_int_equal(try_open(url, &st, err, sizeof(err)), SL_STORE_EIO);
    assert_null(st);
    assert_non_null(strstr(err, "not a database"));
    ts_rmdir(dir);

    /* An SQLite file of someone else's: refused, and left as it was. */
    dir = ts_tmpdir();
    snprintf(url, sizeof(url), "sqlite:%s", ts_path(dir));
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(ts_path(dir), &db), SQLITE_OK);
    ts_exec(db, "CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT)");
    assert_int_equal(try_open(url, &st, err, sizeof(err)), SL_STORE_EIO);
    assert_non_null(strstr(err, "not a sluice store"));
    assert_int_equal(ts_int(db, "SELECT count(*) FROM sqlite_master"), 1);
    sqlite3_close(db);
    ts_rmdir(dir);
}

static void newer_schema_refused(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store_close(ts_open(dir, SL_DURABILITY_NORMAL));
    sqlite3 *db = ts_db(dir);
    /* One past this build's newest, whichever that is. */
    const int n = sl__sqlite_nmigrations;
    char sql[64], newer[32], known[32];
    snprintf(sql, sizeof(sql), "UPDATE schema_version SET version = %d", n + 1);
    snprintf(newer, sizeof(newer), "schema version %d", n + 1);
    snprintf(known, sizeof(known), "up to %d", n);
    ts_exec(db, sql);
    char err[1024];
    sl_store *st = (sl_store *)1;
    assert_int_equal(try_open(ts_url(dir), &st, err, sizeof(err)), SL_STORE_EVERSION);
    assert_null(st);
    assert_non_null(strstr(err, newer));
    assert_non_null(strstr(err, known));
    assert_non_null(strstr(err, "newer sluice"));
    assert_int_equal(ts_int(db, "SELECT version FROM schema_version"), n + 1);

    /* A damaged version table is refused too, not "migrated". */
    ts_exec(db, "DELETE FROM schema_version");
    assert_int_equal(try_open(ts_url(dir), &st, err, sizeof(err)), SL_STORE_EIO);
    assert_non_null(strstr(err, "damaged"));
    sqlite3_close(db);
    ts_rmdir(dir);
}

/* The runner with a longer list than this build's: each step is one
 * transaction with its version, a failing step leaves the version before
 * it, and the store then refuses the file as too new. */
static void migrations_step_by_step(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store_close(ts_open(dir, SL_DURABILITY_NORMAL));
    sqlite3 *db = ts_db(dir);
    /* This build's scripts, then two more: the file is at n already. */
    const int n = sl__sqlite_nmigrations;
    const char *scripts[16];
    assert_true(n + 2 <= 16);
    for (int i = 0; i < n; i++)
        scripts[i] = sl__sqlite_migrations[i];
    scripts[n] = "CREATE TABLE extra (x INTEGER); INSERT INTO extra VALUES (7);";
    scripts[n + 1] = "CREATE TABLE extra2 (x INTEGER); INSERT INTO no_such_table VALUES (1);";
    char err[512], want[64];
    int version = 0;
    assert_int_equal(sl__sqlite_migrate(db, scripts, n + 1, &version, err, sizeof(err)), 0);
    assert_int_equal(version, n + 1);
    assert_int_equal(ts_int(db, "SELECT x FROM extra"), 7);
    assert_int_equal(ts_int(db, "SELECT version FROM schema_version"), n + 1);

    assert_int_equal(sl__sqlite_migrate(db, scripts, n + 2, &version, err, sizeof(err)),
                     SL_STORE_EIO);
    snprintf(want, sizeof(want), "from schema version %d to %d", n + 1, n + 2);
    assert_non_null(strstr(err, want));
    assert_non_null(strstr(err, "no_such_table"));
    assert_int_equal(ts_int(db, "SELECT version FROM schema_version"), n + 1);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'extra2'"), 0);
    /* The connection is usable: the failed step left no transaction open. */
    assert_int_equal(sqlite3_get_autocommit(db), 1);

    assert_int_equal(sl__sqlite_migrate(db, scripts, n, &version, err, sizeof(err)),
                     SL_STORE_EVERSION);
    sqlite3_close(db);

    /* A new file goes from nothing to the last version, all steps. */
    sqlite3 *fresh = NULL;
    assert_int_equal(sqlite3_open(":memory:", &fresh), SQLITE_OK);
    assert_int_equal(sl__sqlite_migrate(fresh, scripts, n + 1, &version, err, sizeof(err)), 0);
    assert_int_equal(version, n + 1);
    assert_int_equal(ts_int(fresh, "SELECT x FROM extra"), 7);
    assert_int_equal(ts_int(fresh, "SELECT count(*) FROM meta"), 1);
    sqlite3_close(fresh);
    ts_rmdir(dir);
}

/* A file of the first release (version 1) is brought to this build's
 * version when opened, and its claims load with no idempotency key. */
static void version_1_file_migrates(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(ts_path(dir), &db), SQLITE_OK);
    const char *v1[] = {sl__sqlite_migrations[0]};
    char err[512];
    int version = 0;
    assert_int_equal(sl__sqlite_migrate(db, v1, 1, &version, err, sizeof(err)), 0);
    ts_exec(db, "INSERT INTO claims (arrival, id, holder, state, priority, created, arrived,"
                " cancel, grace, lease, timeout, life, granted, grant_seq, revoke_at, ended,"
                " reason, locks, tags) VALUES (1, 'old', 'h', 1, 0, 5, 5, 0, 30000, 0, 0, 5, 5,"
                " 1, -1, -1, 0, '[[0,\"m\",1,0,1]]', '[]')");
    ts_exec(db, "UPDATE meta SET next_arrival = 2, next_grant = 2");
    sqlite3_close(db);
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    assert_int_equal(sl_store_schema_version(st), sl_store_current_schema());
    sl_engine *eng = t_engine();
    sl_store_load_stats stats;
    assert_int_equal(sl_store_load(st, eng, 100, &stats), 0);
    sl_claim_view v = t_view(eng, "old");
    assert_int_equal(v.state, SL_HELD);
    assert_null(v.idem);
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* ---- configuration sources ----------------------------------------------- */

static sl_config_source source_of(sl_store *st, const char *name, bool *found)
{
    sl_config_source src = (sl_config_source)99;
    /* Sources are read from the state as applied from the log. */
    assert_int_equal(sl_store_apply(st), 0);
    assert_int_equal(sl_store_config_source(st, name, found, &src), 0);
    return src;
}

static void config_sources(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    bool found = true;

    sl_store_set_source(st, SL_SOURCE_FILE);
    t_sem(eng, 1, "from-file", 2, SL_STRICT);
    t_sem(eng, 1, "jobs/*", 4, SL_SKIP);
    ts_commit(st, eng);
    sl_store_set_source(st, SL_SOURCE_API);
    t_sem(eng, 2, "from-api", 3, SL_REBALANCED);
    ts_commit(st, eng);

    assert_int_equal(source_of(st, "from-file", &found), SL_SOURCE_FILE);
    assert_true(found);
    assert_int_equal(source_of(st, "jobs/*", &found), SL_SOURCE_FILE);
    assert_int_equal(source_of(st, "from-api", &found), SL_SOURCE_API);
    source_of(st, "nothing", &found);
    assert_false(found);

    /* Changed through the API, a file's configuration becomes the API's. */
    t_sem(eng, 3, "from-file", 5, SL_STRICT);
    ts_commit(st, eng);
    assert_int_equal(source_of(st, "from-file", &found), SL_SOURCE_API);
    /* Deleted: gone from the store. */
    sl_error err;
    assert_int_equal(sl_sem_delete(eng, "jobs/*", 4, &err), 0);
    ts_commit(st, eng);
    source_of(st, "jobs/*", &found);
    assert_false(found);

    sl_store_close(st);
    st = ts_open(dir, SL_DURABILITY_NORMAL);
    assert_int_equal(source_of(st, "from-file", &found), SL_SOURCE_API);
    assert_true(found);
    sl_engine *back = ts_load(st, NULL, 5, NULL);
    ts_same(eng, back);
    assert_null(sl_config_find(back, "jobs/*"));
    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* ---- the event log ------------------------------------------------------- */

#define SEEN_MAX 64

typedef struct seen {
    char rows[SEEN_MAX][640];
    uint64_t seqs[SEEN_MAX];
    size_t n;
    size_t stop_after; /* 0: never stop */
    const char *skip;  /* events of this holder are passed over (a reader who may not see them) */
} seen;

static int collect(void *ud, const sl_store_event *ev)
{
    seen *s = ud;
    if (s->skip && (!ev->holder || strcmp(ev->holder, s->skip) == 0))
        return SL_STORE_EVENT_SKIP;
    assert_true(s->n < SEEN_MAX);
    snprintf(s->rows[s->n], sizeof(s->rows[0]), "%llu %lld %s %s %s %s %s",
             (unsigned long long)ev->seq, (long long)ev->time_ms, ev->type,
             ev->claim ? ev->claim : "-", ev->holder ? ev->holder : "-", ev->locks, ev->reason);
    s->seqs[s->n++] = ev->seq;
    return s->stop_after && s->n >= s->stop_after;
}

/* The seqs passed and `next`, as "4 5 7 | 9". */
static const char *query_skipping(sl_store *st, uint64_t since, const char *claim,
                                  size_t limit, size_t stop_after, const char *skip)
{
    static char out[512];
    seen s;
    memset(&s, 0, sizeof(s));
    s.stop_after = stop_after;
    s.skip = skip;
    uint64_t next = 12345;
    assert_int_equal(sl_store_events(st, since, claim, limit, collect, &s, &next), 0);
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < s.n; i++)
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%llu ", (unsigned long long)s.seqs[i]);
    snprintf(out + n, sizeof(out) - n, "| %llu", (unsigned long long)next);
    return out;
}

static const char *query(sl_store *st, uint64_t since, const char *claim, size_t limit,
                         size_t stop_after)
{
    return query_skipping(st, since, claim, limit, stop_after, NULL);
}

static void events_rows_and_paging(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();

    uint64_t last = 99;
    assert_int_equal(sl_store_last_seq(st, &last), 0);
    assert_int_equal(last, 0);
    assert_string_equal(query(st, 0, NULL, 10, 0), "| 0");
    assert_string_equal(query(st, 5, NULL, 10, 0), "| 5");

    sl_error err;
    assert_int_equal(sl_sem_set(eng, "db", 1, SL_STRICT, 30000, 10, &err), 0); /* 1 */
    t_claim(eng, 20, "id=a holder=wf/a s:db");                                 /* 2 3 */
    t_claim(eng, 30, "id=b holder=wf/b s:db m:deploy");                        /* 4 5 */
    ts_commit(st, eng);
    t_release(eng, 40, "a");                                    /* 6 7 */
    t_sem(eng, 50, "other", 2, SL_SKIP);                        /* 8 */
    assert_int_equal(sl_sem_delete(eng, "other", 60, &err), 0); /* 9 */
    ts_commit(st, eng);

    seen s;
    memset(&s, 0, sizeof(s));
    uint64_t next = 0;
    assert_int_equal(sl_store_events(st, 0, NULL, 100, collect, &s, &next), 0);
    assert_int_equal(s.n, 9);
    assert_int_equal(next, 9);
    assert_string_equal(s.rows[0], "1 10 semaphore.updated - - [\"sem/db\"] "
                                   "limit 1, strategy strict, lease 30s");
    assert_string_equal(s.rows[1], "2 20 claim.queued a wf/a [\"sem/db\"] ");
    assert_string_equal(s.rows[2], "3 20 claim.acquired a wf/a [\"sem/db\"] granted");
    assert_string_equal(s.rows[3], "4 30 claim.queued b wf/b [\"sem/db\",\"mtx/deploy\"] ");
    assert_string_equal(s.rows[4],
                        "5 30 claim.waiting b wf/b [\"sem/db\",\"mtx/deploy\"] at_limit on sem/db");
    assert_string_equal(s.rows[5],
                        "6 40 claim.released a wf/a [\"sem/db\"] released by its holder");
    assert_string_equal(s.rows[6],
                        "7 40 claim.acquired b wf/b [\"sem/db\",\"mtx/deploy\"] granted");
    assert_string_equal(s.rows[7], "8 50 semaphore.updated - - [\"sem/other\"] "
                                   "limit 2, strategy skip, no lease");
    assert_string_equal(s.rows[8], "9 60 semaphore.deleted - - [\"sem/other\"] "
                                   "configuration removed");

    /* since and limit: next is the last seq passed when the limit is hit. */
    assert_string_equal(query(st, 3, NULL, 2, 0), "4 5 | 5");
    assert_string_equal(query(st, 5, NULL, 2, 0), "6 7 | 7");
    assert_string_equal(query(st, 7, NULL, 5, 0), "8 9 | 9");
    assert_string_equal(query(st, 9, NULL, 5, 0), "| 9");
    assert_string_equal(query(st, 100, NULL, 5, 0), "| 100");
    assert_string_equal(query(st, 0, NULL, 0, 0), "| 0");
    /* A claim's events: the end of the log moves next past the others. */
    assert_string_equal(query(st, 0, "b", 100, 0), "4 5 7 | 9");
    assert_string_equal(query(st, 0, "b", 2, 0), "4 5 | 5");
    assert_string_equal(query(st, 5, "b", 1, 0), "7 | 7");
    assert_string_equal(query(st, 7, "b", 1, 0), "| 9");
    assert_string_equal(query(st, 0, "nobody", 10, 0), "| 9");
    /* Events the reader passes over (wf/a's, and the semaphores' with no
     * holder) count as examined but not toward the limit. */
    assert_string_equal(query_skipping(st, 0, NULL, 2, 0, "wf/a"), "4 5 | 5");
    assert_string_equal(query_skipping(st, 5, NULL, 2, 0, "wf/a"), "7 | 9");
    assert_string_equal(query_skipping(st, 7, NULL, 2, 0, "wf/a"), "| 9");
    assert_string_equal(query_skipping(st, 0, "a", 10, 0, "wf/a"), "| 9");
    /* The callback stops early: next is the last it saw. */
    assert_string_equal(query(st, 0, NULL, 100, 2), "1 2 | 2");
    assert_string_equal(query(st, 0, "a", 100, 1), "2 | 2");

    /* The log and its sequence survive a reopen. */
    sl_store_close(st);
    st = ts_open(dir, SL_DURABILITY_NORMAL);
    assert_int_equal(sl_store_last_seq(st, &last), 0);
    assert_int_equal(last, 9);
    assert_string_equal(query(st, 8, NULL, 10, 0), "9 | 9");
    sl_engine *back = ts_load(st, NULL, 70, NULL);
    t_release(back, 80, "b");
    ts_commit(st, back);
    assert_string_equal(query(st, 9, NULL, 10, 0), "10 | 10");

    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* The reason words of every kind of event, straight from the engine's. */
static const char *reasons(sl_engine *eng)
{
    static char out[2048];
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < ch.nevents; i++) {
        char r[SL_ROWS_REASON_MAX];
        sl_store_event_reason(eng, &ch.events[i], r, sizeof(r));
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s: %s", i ? "; " : "",
                              sl_event_type_name(ch.events[i].type), r);
    }
    sl_engine_changes_clear(eng);
    return out;
}

/* Many records: a read finds its first one by binary search on seq (and on
 * time for one claim's events) and reads on from there. Every since, and
 * every claim with its own window, gives what a scan from the start gives. */
static void events_over_many_records(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    char spec[64], id[16];
    const int n = 300;
    for (int i = 0; i < n; i++) {
        /* The last 40 batches stay unapplied: a claim the engine forgot is
         * found through claim_log and in the records after it. */
        ts_apply_commits = i < n - 40;
        snprintf(spec, sizeof(spec), "id=c%d m:k%d", i, i % 7);
        t_claim(eng, 10 * i, spec); /* queued + acquired (or waiting) */
        ts_commit(st, eng);
        if (i % 3 == 0) { /* some batches hold a release too */
            snprintf(id, sizeof(id), "c%d", i);
            t_release(eng, 10 * i + 5, id);
        }
    }
    ts_commit(st, eng);
    ts_apply_commits = true;
    uint64_t last = 0;
    assert_int_equal(sl_store_last_seq(st, &last), 0);
    for (uint64_t since = 0; since <= last; since++) {
        seen s;
        memset(&s, 0, sizeof(s));
        uint64_t next = 0;
        assert_int_equal(sl_store_events(st, since, NULL, 3, collect, &s, &next), 0);
        if (since == last) {
            assert_int_equal(s.n, 0);
            continue;
        }
        assert_int_equal(s.seqs[0], since + 1);
    }
    for (int i = 0; i < n; i += (i < n - 45 ? 17 : 1)) {
        snprintf(id, sizeof(id), "c%d", i);
        sl_claim_view v = t_view(eng, id);
        int64_t to = v.ended_ms >= 0 ? v.ended_ms : INT64_MAX;
        char whole[512], windowed[512];
        snprintf(whole, sizeof(whole), "%s", query(st, 0, id, 100, 0));
        seen s;
        memset(&s, 0, sizeof(s));
        uint64_t next = 0;
        assert_int_equal(
            sl_store_claim_events(st, 0, id, v.arrived_ms, to, 100, collect, &s, &next), 0);
        size_t k = 0;
        for (size_t j = 0; j < s.n; j++)
            k += (size_t)snprintf(windowed + k, sizeof(windowed) - k, "%llu ",
                                  (unsigned long long)s.seqs[j]);
        snprintf(windowed + k, sizeof(windowed) - k, "| %llu", (unsigned long long)next);
        assert_string_equal(windowed, whole);
        assert_true(s.n >= 2);
    }
    /* Pruned records take their claims' rows in claim_log with them. */
    assert_int_equal(sl_store_apply(st), 0);
    sqlite3 *db = ts_db(dir);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claim_log"), n);
    uint64_t deleted = 0;
    assert_int_equal(sl_store_prune_events(st, 10 * 100, &deleted), 0);
    assert_true(deleted > 0);
    t_claim(eng, 10 * n, "id=late m:late");
    ts_commit(st, eng);
    assert_true(ts_int(db, "SELECT count(*) FROM claim_log") < n - 90);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claim_log WHERE first < "
                                "(SELECT min(id) FROM log)"),
                     0);
    sqlite3_close(db);
    /* c0's records are gone: none of its events, and next is the log's end. */
    uint64_t newest = 0;
    assert_int_equal(sl_store_last_seq(st, &newest), 0);
    char want[32];
    snprintf(want, sizeof(want), "| %llu", (unsigned long long)newest);
    assert_string_equal(query(st, 0, "c0", 100, 0), want);
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* A claim's events read by the seqs the engine noted (the read of
 * ?claim=ID) when the records holding them are still in the log file, not
 * yet applied: found there too, in one page, the others between them not
 * walked through. w's arrival is applied, its grant is not; u's events are
 * all in the file. */
static void claim_events_at_in_unapplied_records(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=early m:k");
    t_claim(eng, 1, "id=w m:k");
    ts_commit(st, eng);
    ts_apply_commits = false;
    t_claim(eng, 2, "id=u m:k");
    ts_commit(st, eng);
    char spec[64], id[16];
    for (int i = 0; i < 120; i++) { /* 240 events of others between */
        if (i == 40)
            t_release(eng, 10 * i, "early"); /* w acquired */
        if (i == 80)
            t_release(eng, 10 * i, "w"); /* u acquired */
        if (i == 100) /* as on a loaded machine, the loop took a second so far: */
            ((sl_sqlite *)st)->applied_at_ms -= 2 * SQ_APPLY_AFTER_MS; /* records are due */
        snprintf(spec, sizeof(spec), "id=o%d m:o%d", i, i);
        snprintf(id, sizeof(id), "o%d", i);
        t_claim(eng, 10 * i + 1, spec);
        t_release(eng, 10 * i + 2, id);
        ts_commit(st, eng);
    }
    ts_apply_commits = true;
    assert_true(sl_store_log_unapplied(st) > 100);
    sl_store_set_scan_budget(st, 20);
    const char *ids[] = {"w", "u"};
    for (size_t k = 0; k < 2; k++) {
        uint64_t buf[8];
        sl_store_seqs at = {.seq = buf};
        at.n = sl_claim_event_seqs(sl_claim_find(eng, ids[k]), buf, 8, &at.more);
        assert_true(at.n >= 3);
        sl_claim_view v = t_view(eng, ids[k]);
        seen s;
        memset(&s, 0, sizeof(s));
        uint64_t next = 0;
        assert_int_equal(sl_store_claim_events_at(st, 0, ids[k], &at, v.arrived_ms, INT64_MAX,
                                                  100, collect, &s, &next),
                         0);
        assert_int_equal(s.n, at.n);
        for (size_t j = 0; j < at.n; j++)
            assert_int_equal(s.seqs[j], buf[j]);
        assert_false(sl_store_read_partial(st));
        /* From the middle: the seqs up to since are passed over. */
        memset(&s, 0, sizeof(s));
        assert_int_equal(sl_store_claim_events_at(st, buf[1], ids[k], &at, v.arrived_ms,
                                                  INT64_MAX, 100, collect, &s, &next),
                         0);
        assert_int_equal(s.n, at.n - 2);
        assert_int_equal(s.seqs[0], buf[2]);
    }
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* The store's log file reopened with segments of 2 KiB (the store's own
 * are 64 MiB), so that a test's records rotate through several. */
static void small_segments(sl_store *st)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    sl_journal_close(sq->journal);
    sl_journal_opts o = {.dir = sq->log_dir, .first_id = (uint64_t)sq->applied + 1,
                         .segment_bytes = 2048,
                         .fill_bytes = sq->full ? SL_JOURNAL_FILL_BYTES : 0};
    char err[512];
    if (sl_journal_open(&o, &sq->journal, err, sizeof(err)) != 0)
        fail_msg("reopening the log with small segments: %s", err);
}

/* Records of others' claims, one claim and its release each, n of them. */
static void others(sl_store *st, sl_engine *eng, int from, int n)
{
    char spec[64], id[16];
    for (int i = from; i < from + n; i++) {
        snprintf(spec, sizeof(spec), "id=o%d m:o%d", i, i);
        snprintf(id, sizeof(id), "o%d", i);
        t_claim(eng, 10 * i + 1, spec);
        t_release(eng, 10 * i + 2, id);
        ts_commit(st, eng);
    }
}

/* The seqs sl_store_events passes from since on (limit 5), all claims'. */
static void expect_events_since(sl_store *st, uint64_t since, uint64_t newest)
{
    char want[128] = "";
    size_t k = 0;
    uint64_t last = since + 5 < newest ? since + 5 : newest;
    for (uint64_t q = since + 1; q <= last; q++)
        k += (size_t)snprintf(want + k, sizeof(want) - k, "%llu ", (unsigned long long)q);
    snprintf(want + k, sizeof(want) - k, "| %llu", (unsigned long long)last);
    assert_string_equal(query(st, since, NULL, 5, 0), want);
}

/* Claim id's events as the engine lists them, read from the store by
 * their seqs, by walking and by since, from before each; and every event
 * since a seq around each. */
static void expect_claim_events(sl_store *st, sl_engine *eng, const char *id)
{
    uint64_t buf[8], newest = 0;
    sl_store_seqs at = {.seq = buf};
    at.n = sl_claim_event_seqs(sl_claim_find(eng, id), buf, 8, &at.more);
    assert_true(at.n >= 3 && !at.more);
    assert_int_equal(sl_store_last_seq(st, &newest), 0);
    assert_int_equal(buf[at.n - 1], newest);
    sl_claim_view v = t_view(eng, id);
    for (size_t from = 0; from < at.n; from++) {
        uint64_t since = from ? buf[from - 1] : 0, next = 0;
        seen s, walked;
        memset(&s, 0, sizeof(s));
        memset(&walked, 0, sizeof(walked));
        assert_int_equal(sl_store_claim_events_at(st, since, id, &at, v.arrived_ms, INT64_MAX,
                                                  100, collect, &s, &next),
                         0);
        assert_int_equal(sl_store_claim_events(st, since, id, v.arrived_ms, INT64_MAX, 100,
                                               collect, &walked, &next),
                         0);
        assert_int_equal(s.n, at.n - from);
        assert_int_equal(walked.n, at.n - from);
        for (size_t j = 0; j < s.n; j++) {
            assert_int_equal(s.seqs[j], buf[from + j]);
            assert_string_equal(s.rows[j], walked.rows[j]);
        }
        expect_events_since(st, buf[from] - 2, newest);
        expect_events_since(st, buf[from] - 1, newest);
    }
}

/* A claim's events while its records are in three places at once: w's
 * arrival applied (the log table), its grant unapplied in an older segment
 * of the log file, its release unapplied in the newest. Read by its seqs
 * (?claim=ID), by walking (sl_store_claim_events) and by since, from
 * before each: exactly its events, and every event since a seq in each
 * place. */
static void claim_events_in_three_places(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    small_segments(st);
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:k");
    t_claim(eng, 1, "id=w m:k");
    ts_commit(st, eng);
    ts_apply_commits = false;
    others(st, eng, 0, 20);
    t_release(eng, 300, "h"); /* w acquired */
    ts_commit(st, eng);
    others(st, eng, 40, 40);
    t_release(eng, 900, "w");
    ts_commit(st, eng);
    ts_apply_commits = true;
    assert_int_equal(((sl_sqlite *)st)->applied, 1);
    char log[4200];
    snprintf(log, sizeof(log), "%s/sluice.db-log", dir);
    assert_true(ts_count_segments(log) >= 4);
    expect_claim_events(st, eng, "w");
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* The engine's batch committed as --durability full does when its sync
 * fails: appended, the sync failing (the record is cut off the log file,
 * journal.h), then the same batch appended and synced again (the server's
 * retry, commit.c). Meanwhile nothing of it is read. */
static void commit_cut_then_retried(sl_store *st, sl_engine *eng)
{
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    sl_store_batch *b = sl_store_batch_new();
    assert_non_null(b);
    assert_int_equal(sl_store_capture(st, eng, &ch, b), 0);
    uint64_t before = 0, after = 0;
    assert_int_equal(sl_store_last_seq(st, &before), 0);
    assert_int_equal(sl_store_append(st, b), 0);
    ts_syncs_fail = true;
    int rc = sl_store_sync(st, b);
    ts_syncs_fail = false;
    assert_int_equal(rc, SL_STORE_EIO);
    assert_non_null(strstr(sl_store_batch_error(b), "cannot sync the log"));
    assert_int_equal(sl_store_last_seq(st, &after), 0);
    assert_int_equal(after, before);
    char want[64];
    snprintf(want, sizeof(want), "%llu | %llu", (unsigned long long)before,
             (unsigned long long)before);
    assert_string_equal(query(st, before - 1, NULL, 5, 0), want);
    assert_int_equal(sl_store_append(st, b), 0);
    assert_int_equal(sl_store_sync(st, b), 0);
    sl_store_batch_free(b);
    sl_engine_changes_clear(eng);
}

/* --durability full, a failed sync cutting the log file's record 33 (one
 * its index keeps: every 16th), w's grant, committed again by the retry:
 * w's events, by their seqs, by walking and by since, from before, inside
 * and after the cut, are exactly the engine's, unapplied in the log file
 * and after a restart (which applies it). */
static void claim_events_after_failed_sync(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_FULL);
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=h m:k");
    t_claim(eng, 1, "id=w m:k");
    ts_commit(st, eng); /* record 1 */
    ts_apply_commits = false;
    others(st, eng, 0, 31); /* records 2..32 */
    t_release(eng, 400, "h"); /* w acquired: record 33 */
    commit_cut_then_retried(st, eng);
    others(st, eng, 41, 40);
    t_release(eng, 900, "w");
    ts_commit(st, eng);
    ts_apply_commits = true;
    assert_int_equal(sl_store_log_unapplied(st), 73);
    expect_claim_events(st, eng, "w");
    sl_store_close(st);
    st = ts_open(dir, SL_DURABILITY_FULL);
    assert_int_equal(sl_store_log_unapplied(st), 0);
    expect_claim_events(st, eng, "w");
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* The first record of the log file (dir's only segment), its first
 * payload byte changed: a read that passes it fails. */
static void damage_first_record(const char *dir)
{
    char seg[4200];
    snprintf(seg, sizeof(seg), "%s/sluice.db-log/%020d.seg", dir, 1);
    FILE *f = fopen(seg, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, SL_JOURNAL_HEADER + SL_JOURNAL_FRAME, SEEK_SET), 0);
    assert_int_equal(fputc('#', f), '#');
    fclose(f);
}

/* A read of the log file's unapplied tail starts at the record holding the
 * events asked for, found by seq and sought to, not at the first unapplied
 * record: with that first record damaged, the last claim's events of a
 * long unapplied tail read back whole, by their seqs and by since, while
 * a read of the tail from its start fails. */
static void unapplied_tail_read_seeks(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    ts_apply_commits = false;
    char spec[64], id[16];
    for (int i = 0; i < 600; i++) {
        snprintf(spec, sizeof(spec), "id=o%d m:o%d", i, i);
        snprintf(id, sizeof(id), "o%d", i);
        t_claim(eng, 10 * i + 1, spec);
        t_release(eng, 10 * i + 2, id);
        ts_commit(st, eng);
    }
    t_claim(eng, 7000, "id=last m:k");
    ts_commit(st, eng);
    t_release(eng, 7001, "last");
    ts_commit(st, eng);
    ts_apply_commits = true;
    assert_true(sl_store_log_unapplied(st) > 600);
    damage_first_record(dir);
    uint64_t buf[8], next = 0;
    sl_store_seqs at = {.seq = buf};
    at.n = sl_claim_event_seqs(sl_claim_find(eng, "last"), buf, 8, &at.more);
    assert_true(at.n >= 3);
    seen s;
    memset(&s, 0, sizeof(s));
    assert_int_equal(sl_store_claim_events_at(st, 0, "last", &at, 7000, INT64_MAX, 100, collect,
                                              &s, &next),
                     0);
    assert_int_equal(s.n, at.n);
    for (size_t j = 0; j < at.n; j++)
        assert_int_equal(s.seqs[j], buf[j]);
    memset(&s, 0, sizeof(s));
    assert_int_equal(sl_store_events(st, buf[0] - 1, NULL, 100, collect, &s, &next), 0);
    assert_int_equal(s.n, at.n);
    assert_int_equal(s.seqs[at.n - 1], buf[at.n - 1]);
    memset(&s, 0, sizeof(s));
    assert_int_equal(sl_store_events(st, 0, NULL, 100, collect, &s, &next), SL_STORE_EDATA);
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* S14: a semaphore.updated names what changed; set again as it is, the
 * semaphore records no event at all. */
static void semaphore_change_reasons(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_error err;
    sl_sem_opts o;
    sl_sem_opts_default(&o, 10);
    o.rules.rate_count = 6;
    o.rules.rate_period_ms = 60000;
    o.rules.rate_burst = 2;
    assert_int_equal(sl_sem_configure(eng, "api", &o, 1, &err), 0);
    assert_string_equal(reasons(eng), "semaphore.updated: limit 10, strategy strict, no lease; "
                                      "rate 6/1m added, burst 2");
    assert_int_equal(sl_sem_configure(eng, "api", &o, 2, &err), 0);
    assert_string_equal(reasons(eng), "");
    o.limit = 12;
    o.rules.rate_count = 10;
    o.rules.rate_burst = 0;
    o.rules.preempt = true;
    o.rules.preempt_grace_ms = 30000;
    o.rules.max_pending = 5;
    o.lease_ms = 90000;
    assert_int_equal(sl_sem_configure(eng, "api", &o, 3, &err), 0);
    assert_string_equal(reasons(eng),
                        "semaphore.updated: limit 10 → 12; lease 1m30s added; preempt on; "
                        "max_pending 5 added, on_full reject; rate 6/1m → 10/1m; "
                        "burst 2 → 10");
    o.rules.rate_count = 0;
    o.rules.max_pending = 0;
    o.lease_ms = 0;
    assert_int_equal(sl_sem_configure(eng, "api", &o, 4, &err), 0);
    assert_string_equal(reasons(eng), "semaphore.updated: lease removed; max_pending removed; "
                                      "rate removed");
    t_free(eng);
}

static void event_reasons(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 1, "pool", 2, SL_STRICT);
    assert_string_equal(reasons(eng), "semaphore.updated: limit 2, strategy strict, no lease");
    sl_error err;
    assert_int_equal(sl_sem_set(eng, "slow", 1, SL_REBALANCED, 1500, 1, &err), 0);
    assert_string_equal(reasons(eng),
                        "semaphore.updated: limit 1, strategy rebalanced, lease 1500ms");

    t_claim(eng, 2, "id=h1 s:pool*2");
    t_claim(eng, 3, "id=w1 s:pool");
    assert_string_equal(reasons(eng), "claim.queued: ; claim.acquired: granted; "
                                      "claim.queued: ; claim.waiting: at_limit on sem/pool");
    t_claim(eng, 4, "id=g1 m:x group=G lease=100");
    t_claim(eng, 5, "id=g2 m:y group=G");
    t_claim(eng, 6, "id=g3 m:z group=G cancel=pending");
    assert_string_equal(reasons(eng),
                        "claim.queued: ; claim.acquired: granted; "
                        "claim.queued: ; claim.waiting: at_limit on mtx/group/G; "
                        "claim.queued: ; "
                        "claim.superseded: superseded by a newer claim of its group (g3); "
                        "claim.waiting: at_limit on mtx/group/G");
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "g1"), 50), 0);
    assert_string_equal(reasons(eng), "claim.renewed: lease renewed");
    t_claim(eng, 60, "id=g4 m:w group=G cancel=in-progress grace=0");
    assert_string_equal(reasons(eng),
                        "claim.queued: ; "
                        "claim.superseded: superseded by a newer claim of its group (g4); "
                        "claim.canceled: revoked by a newer claim of its group (g4); "
                        "claim.acquired: granted");
    /* With a grace: revoking first, then canceled when the grace runs out
     * or when its holder lets go. */
    t_claim(eng, 61, "id=k1 m:k1 group=K");
    t_claim(eng, 61, "id=k2 m:k2 group=K2");
    reasons(eng);
    t_claim(eng, 62, "id=k3 m:k3 group=K cancel=in-progress grace=10");
    t_claim(eng, 62, "id=k4 m:k4 group=K2 cancel=in-progress grace=10");
    assert_string_equal(reasons(eng), "claim.queued: ; "
                                      "claim.revoking: revoked by a newer claim of its group (k3); "
                                      "claim.waiting: at_limit on mtx/group/K; "
                                      "claim.queued: ; "
                                      "claim.revoking: revoked by a newer claim of its group (k4); "
                                      "claim.waiting: at_limit on mtx/group/K2");
    t_release(eng, 63, "k2");
    sl_engine_advance(eng, 72);
    assert_string_equal(reasons(eng),
                        "claim.canceled: revoked by a newer claim of its group, and released "
                        "by its holder (revoked by k4); claim.acquired: granted; "
                        "claim.canceled: revoked by a newer claim of its group, and its "
                        "grace ran out (revoked by k3); claim.acquired: granted");
    t_claim(eng, 70, "id=t1 m:q lease=10");
    t_claim(eng, 70, "id=t2 m:q timeout=5");
    reasons(eng);
    sl_engine_advance(eng, 90);
    assert_string_equal(reasons(eng),
                        "claim.timed_out: it waited longer than its timeout; "
                        "claim.expired: its lease ran out: no renewal or wait from its client");
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "w1"), 91), 0);
    assert_string_equal(reasons(eng), "claim.canceled: canceled by an operator");
    t_release(eng, 92, "h1");
    assert_string_equal(reasons(eng), "claim.released: released by its holder");
    assert_int_equal(sl_sem_delete(eng, "slow", 93, &err), 0);
    assert_string_equal(reasons(eng), "semaphore.deleted: configuration removed");

    /* Cut to the buffer, never past it. */
    t_claim(eng, 94, "id=w2 s:pool*2");
    t_claim(eng, 94, "id=w3 s:pool*2");
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    char small[8];
    memset(small, 'X', sizeof(small));
    sl_store_event_reason(eng, &ch.events[3], small, 6);
    assert_string_equal(small, "at_li");
    assert_int_equal(small[6], 'X');
    sl_engine_changes_clear(eng);
    t_free(eng);
}

static void prune_keeps_newest(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    uint64_t deleted = 99;
    assert_int_equal(sl_store_prune_events(st, 1000, &deleted), 0); /* empty log */
    assert_int_equal(deleted, 0);
    /* One batch, one record: pruning goes by records. */
    t_claim(eng, 100, "id=a m:x"); /* 1 2 at 100 */
    ts_commit(st, eng);
    t_claim(eng, 200, "id=b m:x"); /* 3 4 at 200 */
    ts_commit(st, eng);
    t_release(eng, 300, "a"); /* 5 6 at 300 */
    ts_commit(st, eng);

    assert_int_equal(sl_store_prune_events(st, 100, &deleted), 0);
    assert_int_equal(deleted, 0);
    assert_int_equal(sl_store_prune_events(st, 201, &deleted), 0);
    assert_int_equal(deleted, 4);
    assert_string_equal(query(st, 0, NULL, 10, 0), "5 6 | 6");
    /* Everything is old: the newest record stays, so the sequence is never
     * lost. */
    assert_int_equal(sl_store_prune_events(st, INT64_MAX, &deleted), 0);
    assert_int_equal(deleted, 0);
    assert_string_equal(query(st, 0, NULL, 10, 0), "5 6 | 6");
    uint64_t last = 0;
    assert_int_equal(sl_store_last_seq(st, &last), 0);
    assert_int_equal(last, 6);

    t_release(eng, 400, "b");
    ts_commit(st, eng);
    assert_string_equal(query(st, 0, NULL, 10, 0), "5 6 7 | 7");
    sl_store_close(st);
    ts_rmdir(dir);
    t_free(eng);
}

/* The internal fields that let a reader replay lock occupancy (the server's
 * history): each claim event's slots per lock, parallel to its lock keys,
 * and whether the claim held its locks just before the event; semaphore
 * events have neither. */
typedef struct replay_seen {
    char rows[SEEN_MAX][128];
    size_t n;
} replay_seen;

static int collect_replay(void *ud, const sl_store_event *ev)
{
    replay_seen *s = ud;
    assert_true(s->n < SEEN_MAX);
    snprintf(s->rows[s->n++], sizeof(s->rows[0]), "%s %s %d %s", ev->type,
             ev->slots ? ev->slots : "-", ev->held, ev->actor ? ev->actor : "-");
    return 0;
}

static void events_record_slots_and_held(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    sl_error err;
    sl_engine_act_as(eng, "ops"); /* F11: and who asked for each event */
    assert_int_equal(sl_sem_set(eng, "db", 3, SL_STRICT, 0, 10, &err), 0);
    sl_engine_act_as(eng, "team");
    t_claim(eng, 20, "id=a holder=h s:db*2 m:m");
    t_claim(eng, 30, "id=b holder=h s:db*2");
    ts_commit(st, eng);
    sl_engine_act_as(eng, "admin");
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "b"), 40), 0); /* pending */
    assert_int_equal(sl_claim_cancel(eng, t_find(eng, "a"), 50), 0); /* held */
    ts_commit(st, eng);
    replay_seen s;
    memset(&s, 0, sizeof(s));
    uint64_t next = 0;
    assert_int_equal(sl_store_events(st, 0, NULL, 100, collect_replay, &s, &next), 0);
    assert_int_equal(s.n, 7);
    assert_string_equal(s.rows[0], "semaphore.updated - -1 ops");
    assert_string_equal(s.rows[1], "claim.queued 2,1 0 team");
    assert_string_equal(s.rows[2], "claim.acquired 2,1 0 team");
    assert_string_equal(s.rows[3], "claim.queued 2 0 team");
    assert_string_equal(s.rows[4], "claim.waiting 2 0 team");
    assert_string_equal(s.rows[5], "claim.canceled 2 0 admin");
    assert_string_equal(s.rows[6], "claim.canceled 2,1 1 admin");
    sl_store_close(st);
    ts_rmdir(dir);
    t_free(eng);
}

/* A file at version 2 keeps its event log: each event becomes a record of
 * its own with the same seq and fields, time_hi never goes down (an event
 * time that went back, as a clock stepping back between runs leaves it,
 * included), the state is as applied, and a new batch goes on from it. */
static void version_2_events_migrate(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(ts_path(dir), &db), SQLITE_OK);
    const char *v2[] = {sl__sqlite_migrations[0], sl__sqlite_migrations[1]};
    char err[512];
    int version = 0;
    assert_int_equal(sl__sqlite_migrate(db, v2, 2, &version, err, sizeof(err)), 0);
    ts_exec(db, "INSERT INTO events VALUES (3, 100, 'claim.queued', 'x', 'h', '[\"mtx/m\"]', ''),"
                " (4, 100, 'claim.acquired', 'x', 'h', '[\"mtx/m\"]', 'granted'),"
                " (5, 90, 'semaphore.updated', NULL, NULL, '[\"sem/s\"]', 'limit 1'),"
                " (6, 120, 'claim.released', 'x', 'h', '[\"mtx/m\"]', 'released by its holder')");
    ts_exec(db, "UPDATE meta SET next_seq = 7");
    sqlite3_close(db);

    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    assert_int_equal(sl_store_schema_version(st), sl_store_current_schema());
    db = ts_db(dir);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM log"), 4);
    assert_int_equal(ts_int(db, "SELECT applied FROM meta"), 6);
    assert_int_equal(ts_int(db, "SELECT time_hi FROM log WHERE id = 5"), 100);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM sqlite_master WHERE name = 'events'"), 0);
    sqlite3_close(db);
    seen s;
    memset(&s, 0, sizeof(s));
    uint64_t next = 0;
    assert_int_equal(sl_store_events(st, 0, NULL, 100, collect, &s, &next), 0);
    assert_int_equal(s.n, 4);
    assert_int_equal(next, 6);
    assert_string_equal(s.rows[0], "3 100 claim.queued x h [\"mtx/m\"] ");
    assert_string_equal(s.rows[2], "5 90 semaphore.updated - - [\"sem/s\"] limit 1");
    assert_string_equal(s.rows[3], "6 120 claim.released x h [\"mtx/m\"] released by its holder");
    assert_string_equal(query(st, 4, "x", 10, 0), "6 | 6");
    /* Records from before the replay fields and the actor: none, read as unknown. */
    replay_seen rs;
    memset(&rs, 0, sizeof(rs));
    assert_int_equal(sl_store_events(st, 0, NULL, 100, collect_replay, &rs, &next), 0);
    assert_string_equal(rs.rows[1], "claim.acquired - -1 -");
    sl_engine *eng = t_engine();
    assert_int_equal(sl_store_load(st, eng, 200, NULL), 0);
    t_claim(eng, 200, "id=y m:n");
    ts_commit(st, eng);
    assert_string_equal(query(st, 6, NULL, 10, 0), "7 8 | 8");
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* ---- a failed batch ------------------------------------------------------ */

static void failed_batch_rolls_back(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    t_sem(eng, 1, "db", 1, SL_STRICT);
    t_claim(eng, 2, "id=a s:db m:one");
    ts_commit(st, eng);

    /* The batch: a released (its row updated, the lock's token unchanged),
     * b granted (a new row, tokens moved), a new configuration, and the
     * events. Its append to the log file fails (the file size limit stands
     * in for a full disk): nothing of it is in the log. */
    sqlite3 *db = ts_db(dir);
    char seg[4200];
    snprintf(seg, sizeof(seg), "%s-log/%020d.seg", ts_path(dir), 1);
    struct stat sb;
    assert_int_equal(stat(seg, &sb), 0);
    t_release(eng, 3, "a");
    t_claim(eng, 4, "id=b s:db m:two");
    t_sem(eng, 5, "new", 4, SL_SKIP);
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    ts_log_full(dir, true);
    int rc = sl_store_write(st, eng, &ch);
    ts_log_full(dir, false);
    assert_int_equal(rc, SL_STORE_EIO);
    assert_non_null(strstr(sl_store_error(st), "cannot append to the log"));
    assert_non_null(strstr(sl_store_error(st), "File too large"));
    struct stat after;
    assert_int_equal(stat(seg, &after), 0);
    assert_int_equal(after.st_size, sb.st_size);
    assert_int_equal(sl_store_log_unapplied(st), 0);

    /* The batch is still the engine's: once the fault is gone it goes in. */
    assert_int_equal(sl_store_write(st, eng, &ch), 0);
    sl_engine_changes_clear(eng);
    assert_int_equal(sl_store_log_unapplied(st), 1);
    uint64_t seq = 0;
    assert_int_equal(sl_store_last_seq(st, &seq), 0);
    assert_int_equal(seq, 7);

    /* Applying it fails late (on b's row, after a's): none of it is in the
     * state, which stays as of the record before; then it goes in whole. */
    ts_exec(db, "CREATE TRIGGER boom BEFORE INSERT ON claims WHEN NEW.id = 'b'"
                " BEGIN SELECT RAISE(ABORT, 'boom: the disk is on fire'); END");
    assert_int_equal(sl_store_apply(st), SL_STORE_EIO);
    assert_non_null(strstr(sl_store_error(st), "boom: the disk is on fire"));
    assert_non_null(strstr(sl_store_error(st), "cannot save a claim"));
    assert_int_equal(ts_int(db, "SELECT state FROM claims WHERE id = 'a'"), SL_HELD);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims"), 1);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM configs"), 1);
    assert_int_equal(ts_int(db, "SELECT token FROM locks WHERE key = 'sem/db'"), 1);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM locks WHERE key = 'mtx/two'"), 0);
    assert_int_equal(ts_int(db, "SELECT next_seq FROM meta"), 4);
    assert_int_equal(ts_int(db, "SELECT applied FROM meta"), 1);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM log"), 1);
    ts_exec(db, "DROP TRIGGER boom");
    assert_int_equal(sl_store_apply(st), 0);
    assert_int_equal(ts_int(db, "SELECT state FROM claims WHERE id = 'a'"), SL_RELEASED);
    assert_int_equal(ts_int(db, "SELECT state FROM claims WHERE id = 'b'"), SL_HELD);
    assert_int_equal(ts_int(db, "SELECT token FROM locks WHERE key = 'sem/db'"), 2);
    assert_int_equal(ts_int(db, "SELECT source FROM configs WHERE name = 'new'"), 0);
    assert_int_equal(ts_int(db, "SELECT next_seq FROM meta"), 8);
    assert_int_equal(ts_int(db, "SELECT applied FROM meta"), 2);
    assert_int_equal(ts_int(db, "SELECT max(seq_hi) FROM log"), 7);
    sqlite3_close(db);

    sl_engine *back = ts_load(st, NULL, 6, NULL);
    ts_same(eng, back);
    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* A store another connection keeps locked: commits go on (they append to
 * the log file), the apply fails after the busy timeout instead of waiting
 * for ever, nothing is half-applied, and it goes in once the lock goes. */
static void locked_store_fails_cleanly(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sqlite3_busy_timeout(((sl_sqlite *)st)->wdb, 1); /* keep the test short */
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a m:x");
    sqlite3 *db = ts_db(dir);
    ts_exec(db, "BEGIN IMMEDIATE");
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(sl_store_write(st, eng, &ch), 0);
    sl_engine_changes_clear(eng);
    assert_int_equal(sl_store_apply(st), SL_STORE_EIO);
    assert_non_null(strstr(sl_store_error(st), "locked"));
    assert_int_equal(sl_store_log_unapplied(st), 1);
    ts_exec(db, "COMMIT");
    assert_int_equal(sl_store_apply(st), 0);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM claims"), 1);
    sqlite3_close(db);
    sl_store_close(st);
    ts_rmdir(dir);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_TEST(urls_refused),
        TS_TEST(url_labels),
        TS_TEST(missing_directory_refused),
        TS_TEST(create_then_reopen),
        TS_TEST(memory_store),
        TS_TEST(durability_pragmas),
        TS_TEST(foreign_files_refused),
        TS_TEST(newer_schema_refused),
        TS_TEST(migrations_step_by_step),
        TS_TEST(version_1_file_migrates),
        TS_TEST(config_sources),
        TS_TEST(events_rows_and_paging),
        TS_TEST(events_over_many_records),
        TS_TEST(claim_events_at_in_unapplied_records),
        TS_TEST(unapplied_tail_read_seeks),
        TS_TEST(claim_events_in_three_places),
        TS_TEST(claim_events_after_failed_sync),
        TS_TEST(events_record_slots_and_held),
        TS_TEST(version_2_events_migrate),
        TS_TEST(event_reasons),
        TS_TEST(semaphore_change_reasons),
        TS_TEST(prune_keeps_newest),
        TS_TEST(failed_batch_rolls_back),
        TS_TEST(locked_store_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
