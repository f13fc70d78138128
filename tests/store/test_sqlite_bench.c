/* test_sqlite_bench.c - the SQLite store at size: 200,000 claims written
 * and loaded back whole (checked claim by claim), and the write rate of
 * small batches with each durability. Times are printed for the record,
 * never asserted (machines differ); what is asserted is that the big store
 * loads into the same engine. The clock is read here only to print.
 * SLUICE_BENCH_CLAIMS overrides the number of claims (the ASan run sets
 * 20 000: tests/store/CMakeLists.txt). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "store_support.h"
#include "support.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t bench_claims(void)
{
    const char *s = getenv("SLUICE_BENCH_CLAIMS");
    if (!s || !*s)
        return 200000;
    char *end = NULL;
    unsigned long long n = strtoull(s, &end, 10);
    assert_true(end && *end == '\0' && n > 0);
    return (size_t)n;
}

/* Mutexes shared by 40 claims (one holds, the rest wait), per-name
 * semaphores from a pattern, a tag limit, a group on every tenth claim;
 * every seventh claim is released at once and stays as ended. */
static void make_claim(sl_engine *eng, size_t i, int64_t now)
{
    char m[32], s[32], team[16], group[32], id[32];
    snprintf(id, sizeof(id), "claim-%07zu", i);
    snprintf(m, sizeof(m), "m/%zu", i % 5000);
    snprintf(s, sizeof(s), "s/%zu", i % 1000);
    snprintf(team, sizeof(team), "t%zu", i % 50);
    snprintf(group, sizeof(group), "g/%zu", i % 1000);
    sl_lock_req locks[2] = {{SL_KIND_MUTEX, m, 1, 0}, {SL_KIND_SEMAPHORE, s, 1, 0}};
    sl_tag tags[1] = {{"team", team}};
    sl_claim_req req;
    memset(&req, 0, sizeof(req));
    req.id = id;
    req.holder = id;
    req.locks = locks;
    req.nlocks = 2;
    req.tags = tags;
    req.ntags = 1;
    req.group = i % 10 == 0 ? group : NULL;
    req.priority = (int32_t)(i % 5);
    req.grace_ms = -1;
    req.lease_ms = -1;
    sl_claim *c = NULL;
    sl_error err;
    if (sl_claim_create(eng, &req, now, &c, &err) != 0)
        fail_msg("claim %s: %s", id, err.what);
    if (i % 7 == 0)
        assert_int_equal(sl_claim_release(eng, c, SL_REASON_RELEASED, now), 0);
}

static void big_store_loads(void **state)
{
    (void)state;
    size_t n = bench_claims();
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine_opts o;
    sl_engine_opts_default(&o);
    o.ended_retention_ms = INT64_MAX / 4; /* keep every ended claim */
    sl_engine *eng = t_engine_opts(&o);
    t_sem(eng, 0, "s/*", 4, SL_STRICT);
    t_sem(eng, 0, "tag/team=*", 20, SL_SKIP);

    double t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        make_claim(eng, i, (int64_t)(i / 1000) + 1);
        if (i % 1000 == 999 || i + 1 == n)
            ts_commit(st, eng);
    }
    double t1 = now_s();
    sl_store_close(st);

    st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *back = t_engine_opts(&o);
    sl_store_load_stats stats;
    double t2 = now_s();
    int rc = sl_store_load(st, back, (int64_t)n, &stats);
    double t3 = now_s();
    if (rc)
        fail_msg("load: %s", sl_store_error(st));
    assert_int_equal(stats.claims, n);
    assert_int_equal(stats.ended, (n + 6) / 7);
    assert_int_equal(stats.configs, 2);
    ts_same(eng, back);
    print_message("%zu claims (%zu pending, %zu held, %zu ended): written in %.2f s "
                  "(batches of 1000), loaded in %.3f s\n",
                  stats.claims, stats.pending, stats.held, stats.ended, t1 - t0, t3 - t2);
    sl_engine_free(eng);
    t_free(back);
    sl_store_close(st);
    ts_rmdir(dir);
}

/* Batches of ten new held claims each (ten claim rows, ten lock tokens,
 * twenty events): one transaction per batch, as the server writes them. */
static double batches_per_s(sl_durability d, int batches)
{
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, d);
    sl_engine *eng = t_engine();
    double t0 = now_s();
    for (int b = 0; b < batches; b++) {
        for (int k = 0; k < 10; k++) {
            char spec[64];
            snprintf(spec, sizeof(spec), "id=b%d-%d m:lock/%d/%d tag=k=v", b, k, b, k);
            t_claim(eng, b, spec);
        }
        sl_changes ch;
        sl_engine_changes(eng, &ch);
        assert_int_equal(ch.nclaims, 10);
        assert_int_equal(ch.nevents, 20);
        ts_commit(st, eng);
    }
    double rate = batches / (now_s() - t0);
    uint64_t last = 0;
    assert_int_equal(sl_store_last_seq(st, &last), 0);
    assert_int_equal(last, (uint64_t)batches * 20);
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
    return rate;
}

static void write_rates(void **state)
{
    (void)state;
    double normal = batches_per_s(SL_DURABILITY_NORMAL, 2000);
    double full = batches_per_s(SL_DURABILITY_FULL, 300);
    print_message("batches of 10 claims + 20 events: %.0f/s NORMAL, %.0f/s FULL\n", normal, full);
}

/* A rebalanced lock with many waiters: every write of a new waiter asks
 * the engine for its locks (sl_claim_lock_get), which computes positions,
 * O(position x keys) on a rebalanced lock. Printed to keep an eye on it. */
static void rebalanced_write_cost(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "fair", 10, SL_REBALANCED);
    const int waiters = 5000;
    for (int i = 0; i < waiters; i++) {
        char spec[64];
        snprintf(spec, sizeof(spec), "id=f%d s:fair key=u%d", i, i % 10);
        t_claim(eng, 1, spec);
        if (i % 1000 == 999)
            ts_commit(st, eng);
    }
    double engine = 0, store = 0;
    for (int i = 0; i < 100; i++) {
        char spec[64];
        snprintf(spec, sizeof(spec), "id=late%d s:fair key=u%d", i, i % 10);
        double t0 = now_s();
        t_claim(eng, 2, spec);
        double t1 = now_s();
        ts_commit(st, eng);
        engine += t1 - t0;
        store += now_s() - t1;
    }
    print_message("rebalanced lock, %d waiters in 10 keys, one new waiter: engine %.2f ms, "
                  "store write %.2f ms\n",
                  waiters, engine * 10, store * 10);
    t_free(eng);
    sl_store_close(st);
    ts_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_TEST(big_store_loads),
        TS_TEST(write_rates),
        TS_TEST(rebalanced_write_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
