/* test_pg_rules.c - a configuration's scheduling rules survive the
 * PostgreSQL store as they do the SQLite one (test_sqlite_rules.c): from
 * the log (as a follower taking over replays it) and from the tables, a
 * record of an older build (its upsert one parameter short) applies, a
 * database of schema 1 migrates, a damaged value is refused.
 *
 * It needs a database it may empty: SLUICE_TEST_PG_URL (run_with_pg.py
 * makes a throwaway PostgreSQL for store-pg/rules); without it every test
 * is skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "postgres_int.h"
#include "store_support.h"
#include "support.h"

static const char *url(void)
{
    const char *u = getenv("SLUICE_TEST_PG_URL");
    if (!u || !*u)
        skip();
    return u;
}

static PGconn *raw(void)
{
    PGconn *c = PQconnectdb(url());
    if (PQstatus(c) != CONNECTION_OK)
        fail_msg("cannot connect: %s", PQerrorMessage(c));
    return c;
}

static void exec_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
}

/* The first column of the first row, "(null)" for NULL (static buffer). */
static const char *text_of(PGconn *c, const char *sql)
{
    static char buf[4096];
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) < 1)
        fail_msg("%s: %s", sql, PQresultErrorMessage(r));
    snprintf(buf, sizeof(buf), "%s", PQgetisnull(r, 0, 0) ? "(null)" : PQgetvalue(r, 0, 0));
    PQclear(r);
    return buf;
}

/* Nothing of the store left in the database. */
static void empty_db(void)
{
    PGconn *c = raw();
    exec_ok(c, "SET client_min_messages = warning; DROP SCHEMA public CASCADE;"
               " CREATE SCHEMA public");
    PQfinish(c);
}

static sl_store *open_pg(void)
{
    sl_store_opts o = {url(), SL_DURABILITY_NORMAL};
    sl_store *st = NULL;
    char err[1024];
    int rc = sl_store_open(&o, &st, err, sizeof(err));
    if (rc)
        fail_msg("sl_store_open: %d %s", rc, err);
    return st;
}

static sl_config_view config_of(sl_engine *eng, const char *name)
{
    const sl_config *c = sl_config_find(eng, name);
    if (!c)
        fail_msg("configuration %s is missing", name);
    sl_config_view v;
    sl_config_get(c, &v);
    return v;
}

/* "pool" rebalanced with weights, "db" strict with preempt, "plain" none. */
static void configure(sl_engine *eng)
{
    sl_sem_opts o;
    sl_error err;
    sl_weight w[2] = {{"paying", 3}, {"odd \"key\\", 7}};
    sl_sem_opts_default(&o, 4);
    o.strategy = SL_REBALANCED;
    o.rules = (sl_sem_rules){.preempt_grace_ms = 30000,
                             .max_pending = 5,
                             .on_full = SL_ON_FULL_DROP_OLDEST,
                             .default_weight = 2,
                             .weights = w,
                             .nweights = 2,
                             .rate_count = 100,
                             .rate_period_ms = 60000,
                             .rate_burst = 10,
                             .backdate_ms = 3600000};
    assert_int_equal(sl_sem_configure(eng, "pool", &o, 1, &err), 0);
    sl_sem_opts_default(&o, 2);
    o.rules = (sl_sem_rules){.preempt = true,
                             .preempt_grace_ms = 5000,
                             .max_pending = 7,
                             .rate_count = 50,
                             .rate_period_ms = 1000,
                             .backdate_ms = 1};
    assert_int_equal(sl_sem_configure(eng, "db", &o, 1, &err), 0);
    t_sem(eng, 1, "plain", 2, SL_STRICT);
}

static void round_trip(void **state)
{
    (void)state;
    empty_db();
    sl_store *st = open_pg();
    assert_int_equal(sl_store_schema_version(st), sl__pg_nmigrations);
    sl_engine *eng = t_engine();
    configure(eng);
    /* Left in the log (a clean close would apply it): a second store on the
     * database applies it before it loads, as a new leader does. */
    ts_apply_commits = false;
    ts_commit(st, eng);
    ts_apply_commits = true;
    sl_store *next = open_pg();
    sl_store_load_stats stats;
    sl_engine *back = ts_load(next, NULL, 2, &stats);
    sl_store_close(next);
    sl_store_close(st);
    st = open_pg();
    assert_int_equal(stats.configs, 3);
    ts_same(eng, back);
    sl_config_view v = config_of(back, "pool");
    assert_int_equal(v.rules.nweights, 2);
    assert_string_equal(v.rules.weights[1].key, "odd \"key\\");
    assert_int_equal(v.rules.rate_burst, 10);
    assert_true(config_of(back, "db").rules.preempt);
    sl_store_close(st);

    PGconn *c = raw();
    assert_string_equal(text_of(c, "SELECT rules FROM configs WHERE name = 'db'"),
                        "{\"preempt\":true,\"preempt_grace_ms\":5000,\"max_pending\":7,"
                        "\"rate_count\":50,\"rate_period_ms\":1000,\"backdate_ms\":1}");
    assert_string_equal(text_of(c, "SELECT rules FROM configs WHERE name = 'plain'"), "(null)");
    PQfinish(c);

    /* From the tables this time. */
    st = open_pg();
    sl_engine *again = ts_load(st, NULL, 3, NULL);
    ts_same(eng, again);
    sl_engine_free(eng);
    sl_engine_free(back);
    t_free(again);
    sl_store_close(st);
}

/* A record of an older build: six parameters, the seventh (rules) bound
 * NULL by the apply. */
static void record_without_rules_applies(void **state)
{
    (void)state;
    empty_db();
    sl_store *st = open_pg();
    sl_engine *eng = t_engine();
    configure(eng);
    ts_commit(st, eng);
    sl_store_close(st);

    sl_store_batch *b = sl_store_batch_new();
    sl__batch_op(b, SL_REC_CONFIG_UPSERT);
    sl__batch_str(b, "pool");
    sl__batch_int(b, 6);
    sl__batch_int(b, SL_STRICT);
    sl__batch_int(b, 0);
    sl__batch_int(b, SL_SOURCE_API);
    sl__batch_int(b, SL_OVERTAKE_DEFAULT_MS);
    sl_rec_buf rec = {0};
    sl_rec_encode(b, &rec);
    PGconn *c = raw();
    const char *v[1] = {(const char *)rec.p};
    int len[1] = {(int)rec.n}, fmt[1] = {1};
    PGresult *r = PQexecParams(c,
                               "INSERT INTO log (id, seq_hi, time_hi, events, rec)"
                               " SELECT id + 1, seq_hi, time_hi, 0, $1 FROM log"
                               " ORDER BY id DESC LIMIT 1",
                               1, NULL, v, len, fmt, 0);
    assert_int_equal(PQresultStatus(r), PGRES_COMMAND_OK);
    assert_string_equal(PQcmdTuples(r), "1");
    PQclear(r);
    sl_rec_buf_free(&rec);
    sl_store_batch_free(b);

    st = open_pg();
    sl_engine *back = ts_load(st, NULL, 2, NULL);
    sl_config_view pool = config_of(back, "pool");
    assert_int_equal(pool.limit, 6);
    assert_int_equal(pool.rules.nweights, 0);
    assert_int_equal(pool.rules.max_pending, 0);
    assert_int_equal(config_of(back, "db").rules.max_pending, 7);
    sl_store_close(st);
    assert_string_equal(text_of(c, "SELECT rules FROM configs WHERE name = 'pool'"), "(null)");
    PQfinish(c);
    sl_engine_free(eng);
    t_free(back);
}

/* A database of schema 1 gets the column; its configurations have none. */
static void version_1_migrates(void **state)
{
    (void)state;
    empty_db();
    PGconn *c = raw();
    exec_ok(c, "CREATE TABLE schema_version (id integer PRIMARY KEY CHECK (id = 1),"
               " version integer NOT NULL); INSERT INTO schema_version VALUES (1, 1)");
    exec_ok(c, sl__pg_migrations[0]);
    exec_ok(c, "INSERT INTO configs VALUES ('pool', 4, 2, 0, 0, 60000)");
    sl_store *st = open_pg();
    assert_int_equal(sl_store_schema_version(st), sl__pg_nmigrations);
    char newest[16];
    snprintf(newest, sizeof(newest), "%d", sl__pg_nmigrations);
    assert_string_equal(text_of(c, "SELECT version FROM schema_version"), newest);
    /* ... and its claims the actor column (none: NULL). */
    assert_string_equal(text_of(c, "SELECT count(actor) FROM claims"), "0");
    sl_engine *back = ts_load(st, NULL, 2, NULL);
    assert_int_equal(config_of(back, "pool").limit, 4);
    assert_int_equal(config_of(back, "pool").rules.nweights, 0);
    t_free(back);
    sl_store_close(st);
    PQfinish(c);
}

static void damaged_rules_refused(void **state)
{
    (void)state;
    empty_db();
    sl_store *st = open_pg();
    sl_engine *eng = t_engine();
    configure(eng);
    ts_commit(st, eng);
    sl_engine_free(eng);
    sl_store_close(st);

    static const struct {
        const char *rules, *words;
    } bad[] = {
        {"'{\"max_pending\":5'", "not a JSON object"},
        {"'{\"on_full\":5}'", "rule on_full is malformed"},
        {"'{\"nope\":1}'", "which is no rule"},
        {"'{\"preempt\":true}'", "the engine refused it"},
    };
    PGconn *c = raw();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char sql[256];
        snprintf(sql, sizeof(sql), "UPDATE configs SET rules = %s WHERE name = 'pool'",
                 bad[i].rules);
        exec_ok(c, sql);
        st = open_pg();
        sl_engine *e = t_engine();
        assert_int_equal(sl_store_load(st, e, 10, NULL), SL_STORE_EDATA);
        const char *msg = sl_store_error(st);
        if (!strstr(msg, "configuration pool") || !strstr(msg, bad[i].words))
            fail_msg("for %s: \"%s\" lacks \"%s\"", bad[i].rules, msg, bad[i].words);
        t_free(e);
        sl_store_close(st);
    }
    PQfinish(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_TEST(round_trip),
        TS_TEST(record_without_rules_applies),
        TS_TEST(version_1_migrates),
        TS_TEST(damaged_rules_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
