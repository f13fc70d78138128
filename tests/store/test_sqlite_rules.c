/* test_sqlite_rules.c - a configuration's scheduling rules (sl_sem_rules)
 * survive the SQLite store: every rule and the weights come back from the
 * state tables and from the log alike, a configuration without rules has
 * NULL in configs.rules, a record written before the rules were (its
 * upsert one parameter short) still applies, a file of schema 3 migrates
 * and loads, and a damaged rules value is refused naming the row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "sqlite_int.h"
#include "store_support.h"
#include "support.h"

/* The engine takes preempt on strict and skip semaphores only, and
 * weights on rebalanced ones only: "pool" has every rule but preempt,
 * "db" preempt and the rules that are not about weights. */
static const char pool_json[] =
    "{\"preempt_grace_ms\":30000,\"max_pending\":5,\"on_full\":1,"
    "\"default_weight\":2,\"weights\":{\"paying\":3,\"odd \\u0022key\\u005c\":7},"
    "\"rate_count\":100,\"rate_period_ms\":60000,\"rate_burst\":10,\"backdate_ms\":3600000}";
static const char db_json[] = "{\"preempt\":true,\"preempt_grace_ms\":5000,\"max_pending\":7,"
                              "\"rate_count\":50,\"rate_period_ms\":1000,\"backdate_ms\":1}";

/* pool's rules, two weighted keys (one needing escapes). */
static void pool_rules(sl_sem_opts *o, sl_weight w[2])
{
    sl_sem_opts_default(o, 4);
    o->strategy = SL_REBALANCED;
    w[0] = (sl_weight){"paying", 3};
    w[1] = (sl_weight){"odd \"key\\", 7};
    o->rules = (sl_sem_rules){.preempt_grace_ms = 30000,
                              .max_pending = 5,
                              .on_full = SL_ON_FULL_DROP_OLDEST,
                              .default_weight = 2,
                              .weights = w,
                              .nweights = 2,
                              .rate_count = 100,
                              .rate_period_ms = 60000,
                              .rate_burst = 10,
                              .backdate_ms = 3600000};
}

/* "pool" and "db" with rules, "plain" with none, "q*" with one. */
static void configure(sl_engine *eng)
{
    sl_sem_opts o;
    sl_weight w[2];
    sl_error err;
    pool_rules(&o, w);
    assert_int_equal(sl_sem_configure(eng, "pool", &o, 1, &err), 0);
    sl_sem_opts_default(&o, 2);
    o.rules = (sl_sem_rules){.preempt = true,
                             .preempt_grace_ms = 5000,
                             .max_pending = 7,
                             .on_full = SL_ON_FULL_REJECT,
                             .rate_count = 50,
                             .rate_period_ms = 1000,
                             .backdate_ms = 1};
    assert_int_equal(sl_sem_configure(eng, "db", &o, 1, &err), 0);
    t_sem(eng, 1, "plain", 2, SL_STRICT);
    sl_sem_opts_default(&o, 1);
    o.rules.max_pending = 9;
    assert_int_equal(sl_sem_configure(eng, "q*", &o, 1, &err), 0);
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

static void check_no_rules(sl_engine *eng, const char *name)
{
    sl_config_view v = config_of(eng, name);
    sl_sem_rules none = {0};
    ts_same_rules(name, &v.rules, &none);
    assert_null(v.rules.weights);
}

/* Each field of the rules given back, against the values set. */
static void check_every_rule(sl_engine *eng)
{
    sl_config_view v = config_of(eng, "pool");
    const sl_sem_rules *r = &v.rules;
    assert_int_equal(v.strategy, SL_REBALANCED);
    assert_int_equal(v.limit, 4);
    assert_false(r->preempt);
    assert_int_equal(r->preempt_grace_ms, 30000);
    assert_int_equal(r->max_pending, 5);
    assert_int_equal(r->on_full, SL_ON_FULL_DROP_OLDEST);
    assert_int_equal(r->default_weight, 2);
    assert_int_equal(r->nweights, 2);
    assert_string_equal(r->weights[0].key, "paying");
    assert_int_equal(r->weights[0].weight, 3);
    assert_string_equal(r->weights[1].key, "odd \"key\\");
    assert_int_equal(r->weights[1].weight, 7);
    assert_int_equal(r->rate_count, 100);
    assert_int_equal(r->rate_period_ms, 60000);
    assert_int_equal(r->rate_burst, 10);
    assert_int_equal(r->backdate_ms, 3600000);

    v = config_of(eng, "db");
    assert_int_equal(v.strategy, SL_STRICT);
    assert_true(r->preempt);
    assert_int_equal(r->preempt_grace_ms, 5000);
    assert_int_equal(r->max_pending, 7);
    assert_int_equal(r->on_full, SL_ON_FULL_REJECT);
    assert_int_equal(r->default_weight, 0);
    assert_int_equal(r->nweights, 0);
    assert_int_equal(r->rate_count, 50);
    assert_int_equal(r->rate_period_ms, 1000);
    assert_int_equal(r->rate_burst, 0);
    assert_int_equal(r->backdate_ms, 1);

    check_no_rules(eng, "plain");
    assert_int_equal(config_of(eng, "q*").rules.max_pending, 9);
}

static void round_trip(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    configure(eng);
    ts_commit(st, eng);
    sl_store_close(st);

    sqlite3 *db = ts_db(dir);
    assert_string_equal(ts_text(db, "SELECT rules FROM configs WHERE name = 'pool'"), pool_json);
    assert_string_equal(ts_text(db, "SELECT rules FROM configs WHERE name = 'db'"), db_json);
    assert_int_equal(ts_int(db, "SELECT rules IS NULL FROM configs WHERE name = 'plain'"), 1);
    assert_string_equal(ts_text(db, "SELECT rules FROM configs WHERE name = 'q*'"),
                        "{\"max_pending\":9}");
    sqlite3_close(db);

    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_store_load_stats stats;
    sl_engine *back = ts_load(st, NULL, 2, &stats);
    assert_int_equal(stats.configs, 4);
    check_every_rule(back);
    ts_same(eng, back);

    /* Rules taken away are gone after the next restart too. */
    t_sem(back, 3, "pool", 4, SL_REBALANCED);
    ts_commit(st, back);
    sl_store_close(st);
    db = ts_db(dir);
    assert_int_equal(ts_int(db, "SELECT rules IS NULL FROM configs WHERE name = 'pool'"), 1);
    sqlite3_close(db);
    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *again = ts_load(st, NULL, 4, NULL);
    ts_same(back, again);
    sl_engine_free(eng);
    sl_engine_free(back);
    t_free(again);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* A crash before the apply: the rules come from the log's records (as a
 * follower in shared mode replays them). */
static void from_the_log(void **state)
{
    (void)state;
    char *dir = ts_tmpdir(), *copy = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    ts_apply_commits = false;
    configure(eng);
    ts_commit(st, eng);
    ts_apply_commits = true;
    ts_copy_store(dir, copy);
    sl_store_close(st);

    sqlite3 *db = ts_db(copy);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM configs"), 0);
    sqlite3_close(db);
    st = ts_open(copy, SL_DURABILITY_NORMAL);
    sl_engine *back = ts_load(st, NULL, 2, NULL);
    check_every_rule(back);
    ts_same(eng, back);
    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
    ts_rmdir(copy);
}

/* Appends to the log of the store in dir (closed) a record written as a
 * build before the rules would: a configuration upsert of six parameters. */
static void append_old_record(const char *dir, const char *name, int64_t limit)
{
    sl_store_batch *b = sl_store_batch_new();
    sl__batch_op(b, SL_REC_CONFIG_UPSERT);
    sl__batch_str(b, name);
    sl__batch_int(b, limit);
    sl__batch_int(b, SL_STRICT);
    sl__batch_int(b, 0);
    sl__batch_int(b, SL_SOURCE_API);
    sl__batch_int(b, SL_OVERTAKE_DEFAULT_MS);
    sl_rec_buf rec = {0};
    sl_rec_encode(b, &rec);
    sqlite3 *db = ts_db(dir);
    sqlite3_stmt *s = NULL;
    assert_int_equal(sqlite3_prepare_v2(db,
                                        "INSERT INTO log (id, seq_hi, time_hi, events, rec)"
                                        " SELECT id + 1, seq_hi, time_hi, 0, ?1 FROM log"
                                        " ORDER BY id DESC LIMIT 1",
                                        -1, &s, NULL),
                     SQLITE_OK);
    sqlite3_bind_blob(s, 1, rec.p, (int)rec.n, SQLITE_STATIC);
    assert_int_equal(sqlite3_step(s), SQLITE_DONE);
    assert_int_equal(sqlite3_changes(db), 1);
    sqlite3_finalize(s);
    sqlite3_close(db);
    sl_rec_buf_free(&rec);
    sl_store_batch_free(b);
}

static void record_without_rules_applies(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    configure(eng);
    ts_commit(st, eng);
    sl_store_close(st);
    append_old_record(dir, "pool", 6);
    append_old_record(dir, "older", 2);

    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *back = ts_load(st, NULL, 2, NULL);
    sl_config_view v = config_of(back, "pool");
    assert_int_equal(v.limit, 6);
    assert_int_equal(v.strategy, SL_STRICT);
    check_no_rules(back, "pool");
    check_no_rules(back, "older");
    assert_int_equal(config_of(back, "q*").rules.max_pending, 9);
    sl_store_close(st);
    sqlite3 *db = ts_db(dir);
    assert_int_equal(ts_int(db, "SELECT count(*) FROM configs WHERE rules IS NULL"), 3);
    sqlite3_close(db);
    sl_engine_free(eng);
    t_free(back);
    ts_rmdir(dir);
}

/* A file of schema 3 (before the rules) gets the column, its
 * configurations load with none, and rules set then are kept. */
static void version_3_file_migrates(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open(ts_path(dir), &db), SQLITE_OK);
    const char *v3[] = {sl__sqlite_migrations[0], sl__sqlite_migrations[1],
                        sl__sqlite_migrations[2]};
    char err[512];
    int version = 0;
    assert_int_equal(sl__sqlite_migrate(db, v3, 3, &version, err, sizeof(err)), 0);
    assert_int_equal(version, 3);
    ts_exec(db, "INSERT INTO configs (name, lim, strategy, lease_ms, source, overtake_ms)"
                " VALUES ('pool', 4, 2, 0, 0, 60000), ('db', 2, 0, 5000, 1, 0)");
    sqlite3_close(db);

    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    assert_int_equal(sl_store_schema_version(st), sl__sqlite_nmigrations); /* the newest */
    sl_store_load_stats stats;
    sl_engine *back = ts_load(st, NULL, 2, &stats);
    assert_int_equal(stats.configs, 2);
    check_no_rules(back, "pool");
    assert_int_equal(config_of(back, "db").lease_ms, 5000);

    sl_sem_opts o;
    sl_weight w[2];
    sl_error e;
    pool_rules(&o, w);
    assert_int_equal(sl_sem_configure(back, "pool", &o, 3, &e), 0);
    ts_commit(st, back);
    sl_store_close(st);
    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *again = ts_load(st, NULL, 4, NULL);
    ts_same(back, again);
    assert_int_equal(config_of(again, "pool").rules.rate_burst, 10);
    sl_engine_free(back);
    t_free(again);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* ---- damaged values ------------------------------------------------------ */

static void expect_refused(const char *dir, const char *rules, const char *words)
{
    sqlite3 *db = ts_db(dir);
    char sql[8192];
    snprintf(sql, sizeof(sql), "UPDATE configs SET rules = %s WHERE name = 'pool'", rules);
    ts_exec(db, sql);
    sqlite3_close(db);
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    assert_int_equal(sl_store_load(st, eng, 10, NULL), SL_STORE_EDATA);
    const char *msg = sl_store_error(st);
    if (!strstr(msg, "configuration pool") || !strstr(msg, words))
        fail_msg("for %s: \"%s\" lacks \"configuration pool\" or \"%s\"", rules, msg, words);
    t_free(eng);
    sl_store_close(st);
}

static void damaged_rules_refused(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    configure(eng);
    ts_commit(st, eng);
    sl_engine_free(eng);
    sl_store_close(st);

    static const struct {
        const char *rules, *words;
    } bad[] = {
        {"'[1]'", "not a JSON object"},
        {"'{\"preempt\":true'", "not a JSON object"},
        {"'{\"preempt\":true} x'", "not a JSON object"},
        {"'{\"preempt\":true,}'", "not a JSON object"},
        {"'{\"preempt\" true}'", "not a JSON object"},
        {"''", "not a JSON object"},
        {"'{\"preempt\":1}'", "rule preempt is malformed"},
        {"'{\"on_full\":2}'", "rule on_full is malformed"},
        {"'{\"max_pending\":-1}'", "rule max_pending is malformed"},
        {"'{\"rate_count\":1000000001}'", "rule rate_count"},
        {"'{\"backdate_ms\":1.5}'", "not a JSON object"},
        {"'{\"preempt_grace_ms\":99999999999999999999}'", "rule preempt_grace_ms"},
        {"'{\"weights\":{\"a\":0}}'", "rule weights is malformed"},
        {"'{\"weights\":[[\"a\",1]]}'", "rule weights is malformed"},
        {"'{\"weights\":{\"a\":1000001}}'", "rule weights is malformed"},
        {"'{\"turbo\":true}'", "\"turbo\", which is no rule"},
        {"'{\"max_pending\":1,\"max_pending\":2}'", "max_pending twice"},
        {"'{\"rate_burst\":3}'", "the engine refused it"},              /* a burst needs a rate */
        {"'{\"preempt\":true}'", "the engine refused it"},              /* not when rebalanced */
        {"'{\"weights\":{\"a\":1,\"a\":2}}'", "the engine refused it"}, /* weighted twice */
        {"42", "not a JSON object"}, /* the column's affinity makes it '42' */
        {"x'7b7d'", "column rules"}, /* a blob */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expect_refused(dir, bad[i].rules, bad[i].words);

    /* More weights than a configuration may have. */
    char many[8192] = "'{\"weights\":{";
    for (int i = 0; i <= SL_WEIGHTS_MAX; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s\"k%d\":1", i ? "," : "", i);
    snprintf(many + strlen(many), sizeof(many) - strlen(many), "}}'");
    expect_refused(dir, many, "more than 256 keys");

    /* Mended (an empty object is no rule either), it loads. */
    sqlite3 *db = ts_db(dir);
    ts_exec(db, "UPDATE configs SET rules = ' { } ' WHERE name = 'pool'");
    sqlite3_close(db);
    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *back = ts_load(st, NULL, 10, NULL);
    assert_int_equal(config_of(back, "pool").rules.nweights, 0);
    assert_int_equal(config_of(back, "q*").rules.max_pending, 9);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_TEST(round_trip),
        TS_TEST(from_the_log),
        TS_TEST(record_without_rules_applies),
        TS_TEST(version_3_file_migrates),
        TS_TEST(damaged_rules_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
