/* test_history_core.c - the per-lock history's pure core (src/server/history.c):
 * samples computed backward from the current values, the same whether the
 * events come as they happen or are replayed from the log (in any order a
 * rebuild sees them), wait statistics and their windows, the lock bound and
 * the idle drop. Times are injected to the millisecond. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "history.h"
#include "server.h"

#define STEP 1000
#define DAY (24 * 3600 * 1000LL)
#define T0 1800000000000LL /* a whole number of steps (and of coarse steps) */

typedef struct got {
    int64_t time[2000];
    sl_hist_vals v[2000];
    size_t n;
} got;

static void collect(void *ud, int64_t t, const sl_hist_vals *v)
{
    got *g = ud;
    if (g->n < 2000) {
        g->time[g->n] = t;
        g->v[g->n++] = *v;
    }
}

static got samples(const sl_history *h, const char *key, sl_hist_window w, int64_t now)
{
    got g;
    memset(&g, 0, sizeof(g));
    assert_true(sl_history_samples(h, key, w, now, collect, &g));
    return g;
}

static void ev(sl_history *h, int64_t t, sl_hist_kind kind, bool held, int64_t wait,
               const char *key, uint32_t slots)
{
    const char *keys[1] = {key};
    uint32_t s[1] = {slots};
    sl_hist_event e = {t, kind, held, wait, 1, keys, s};
    sl_history_event(h, &e, true);
}

static void sample(sl_history *h, int64_t now, const char *key, uint32_t used, uint32_t holders,
                   uint32_t pending)
{
    sl_history_sample_begin(h);
    sl_hist_vals v = {used, holders, pending};
    if (key)
        sl_history_sample_lock(h, key, &v, now);
    sl_history_sample_end(h, now);
}

static void assert_vals(const sl_hist_vals *v, uint32_t used, uint32_t holders, uint32_t pending)
{
    assert_int_equal(v->used, used);
    assert_int_equal(v->holders, holders);
    assert_int_equal(v->pending, pending);
}

/* The story of sem/a: a claim of 2 slots queues at +500 ms, is granted at
 * +1200 (after 700 ms), ends at +3000 exactly; a second queues at +2999
 * and is still pending. Now is +3500, the lock at (0, 0, 1). */
static void story_live(sl_history *h)
{
    ev(h, T0 + 500, SL_HIST_QUEUED, false, -1, "sem/a", 2);
    ev(h, T0 + 1200, SL_HIST_ACQUIRED, false, 700, "sem/a", 2);
    ev(h, T0 + 2999, SL_HIST_QUEUED, false, -1, "sem/a", 1);
    ev(h, T0 + 3000, SL_HIST_ENDED, true, -1, "sem/a", 2);
}

static void check_story(const sl_history *h, int64_t now)
{
    got g = samples(h, "sem/a", SL_HIST_1H, now);
    assert_int_equal(g.n, 360); /* 360 steps of 1 s */
    size_t last = g.n - 1;
    assert_int_equal(g.time[last], T0 + 3000);
    /* Boundary T is the state after every event before T. */
    assert_vals(&g.v[last - 4], 0, 0, 0); /* T0 - 1000 */
    assert_vals(&g.v[last - 3], 0, 0, 0); /* T0: the queue at +500 is after it */
    assert_vals(&g.v[last - 2], 0, 0, 1); /* T0 + 1000 */
    assert_vals(&g.v[last - 1], 2, 1, 0); /* T0 + 2000 */
    assert_vals(&g.v[last], 2, 1, 1);     /* T0 + 3000: the end at +3000 is not before it */
    got c = samples(h, "sem/a", SL_HIST_24H, now);
    assert_int_equal(c.n, 1440);
    assert_int_equal(c.time[c.n - 1], T0); /* 6 s coarse steps: T0 is the last boundary */
    assert_vals(&c.v[c.n - 1], 0, 0, 0);
}

static void samples_follow_the_events(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0 - 5000, false);
    story_live(h);
    sample(h, T0 + 3500, "sem/a", 0, 0, 1);
    check_story(h, T0 + 3500);
    assert_int_equal(sl_history_step(h, SL_HIST_1H), 1000);
    assert_int_equal(sl_history_step(h, SL_HIST_24H), 6000);
    sl_history_free(h);
}

/* Sampling at every step, late, or once at the end: the same samples. */
static void sampling_times_do_not_matter(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0 - 5000, false);
    ev(h, T0 + 500, SL_HIST_QUEUED, false, -1, "sem/a", 2);
    sample(h, T0 + 1005, "sem/a", 0, 0, 1); /* a timer 5 ms late */
    ev(h, T0 + 1200, SL_HIST_ACQUIRED, false, 700, "sem/a", 2);
    sample(h, T0 + 1300, "sem/a", 2, 1, 0); /* between boundaries: nothing new */
    ev(h, T0 + 2999, SL_HIST_QUEUED, false, -1, "sem/a", 1);
    ev(h, T0 + 3000, SL_HIST_ENDED, true, -1, "sem/a", 2);
    /* The timer for T0 + 3000 runs after the end at T0 + 3000 went in. */
    sample(h, T0 + 3002, "sem/a", 0, 0, 1);
    sample(h, T0 + 3500, "sem/a", 0, 0, 1);
    check_story(h, T0 + 3500);
    sl_history_free(h);
}

static sl_store_event sev(uint64_t seq, int64_t t, const char *type, const char *claim,
                          const char *locks, const char *slots, int held)
{
    sl_store_event e = {seq, t, type, claim, "holder", locks, "", slots, held, NULL};
    return e;
}

static int64_t no_arrival(void *ud, const char *claim)
{
    (void)ud;
    (void)claim;
    return -1;
}

/* The same events read back from the log: the same samples and waits. */
static void a_replay_gives_the_same(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0 + 3400, true);
    assert_true(sl_history_rebuilding(h));
    const char *locks = "[\"sem/a\"]";
    sl_store_event e[] = {
        sev(1, T0 - 100000, "semaphore.updated", NULL, locks, NULL, -1),
        sev(2, T0 + 500, "claim.queued", "c1", locks, "2", 0),
        sev(3, T0 + 500, "claim.waiting", "c1", locks, "2", 0),
        sev(4, T0 + 1200, "claim.acquired", "c1", locks, "2", 0),
        sev(5, T0 + 2999, "claim.queued", "c2", locks, "1", 0),
        sev(6, T0 + 3000, "claim.expired", "c1", locks, "2", 1),
    };
    /* An event of the moment goes in before the log is read (it is after
     * the rebuild's last seq): a claim queued at +3400 and withdrawn. */
    ev(h, T0 + 3400, SL_HIST_QUEUED, false, -1, "sem/a", 1);
    ev(h, T0 + 3401, SL_HIST_ENDED, false, -1, "sem/a", 1);
    for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
        sl_history_replay(h, &e[i], no_arrival, NULL);
    sample(h, T0 + 3450, "sem/a", 0, 0, 1); /* nothing while rebuilding */
    got g;
    memset(&g, 0, sizeof(g));
    sl_history_samples(h, "sem/a", SL_HIST_1H, T0 + 3450, collect, &g);
    assert_int_equal(g.n, 0);
    sl_history_replay_done(h);
    sample(h, T0 + 3500, "sem/a", 0, 0, 1);
    check_story(h, T0 + 3500);
    sl_hist_waits w;
    sl_history_waits(h, "sem/a", SL_HIST_1H, T0 + 3500, &w);
    assert_int_equal(w.count, 1);
    assert_int_equal(w.max_ms, 700);
    sl_history_free(h);
}

/* Records older than the slots and held fields: one slot per lock, and a
 * held claim's end told by the grant the replay saw. */
static void old_records_are_read_best_effort(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0, true);
    const char *locks = "[\"mtx/m\",\"sem/s\"]";
    sl_store_event e[] = {
        sev(1, T0 + 100, "claim.queued", "a", locks, NULL, -1),
        sev(2, T0 + 150, "claim.acquired", "a", locks, NULL, -1),
        sev(3, T0 + 200, "claim.queued", "b", locks, NULL, -1),
        sev(4, T0 + 1500, "claim.canceled", "a", locks, NULL, -1), /* held: its grant seen */
        sev(5, T0 + 1600, "claim.acquired", "b", locks, NULL, -1),
        sev(6, T0 + 2500, "claim.canceled", "z", locks, NULL, -1), /* before the log: held */
    };
    for (size_t i = 0; i < sizeof(e) / sizeof(e[0]); i++)
        sl_history_replay(h, &e[i], no_arrival, NULL);
    sl_history_replay_done(h);
    sample(h, T0 + 3000, "sem/s", 1, 1, 0);
    got g = samples(h, "sem/s", SL_HIST_1H, T0 + 3000);
    assert_vals(&g.v[g.n - 4], 1, 1, 0); /* T0: z held then */
    assert_vals(&g.v[g.n - 3], 2, 2, 1); /* T0 + 1000: z and a held, b pending */
    assert_vals(&g.v[g.n - 2], 2, 2, 0); /* T0 + 2000: z and b */
    assert_vals(&g.v[g.n - 1], 1, 1, 0); /* T0 + 3000 */
    sl_hist_waits w;
    sl_history_waits(h, "mtx/m", SL_HIST_1H, T0 + 3000, &w);
    assert_int_equal(w.count, 2);
    assert_int_equal(w.max_ms, 1400);
    sl_history_free(h);
}

/* A claim that queued before the log's start: its arrival comes from the
 * engine when it still knows it. */
static int64_t engine_arrival(void *ud, const char *claim)
{
    (void)ud;
    return strcmp(claim, "known") == 0 ? T0 - 60000 : -1;
}

static void waits_from_the_engine_when_the_log_lacks_the_arrival(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0, true);
    const char *locks = "[\"mtx/m\"]";
    sl_store_event a = sev(1, T0 + 100, "claim.acquired", "known", locks, "1", 0);
    sl_store_event b = sev(2, T0 + 200, "claim.acquired", "unknown", locks, "1", 0);
    sl_history_replay(h, &a, engine_arrival, NULL);
    sl_history_replay(h, &b, engine_arrival, NULL);
    sl_history_replay_done(h);
    sl_hist_waits w;
    sl_history_waits(h, "mtx/m", SL_HIST_1H, T0 + 300, &w);
    assert_int_equal(w.count, 1);
    assert_int_equal(w.max_ms, 60100);
    sl_history_free(h);
}

static void wait_quantiles_and_buckets(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(10000, DAY);
    sl_history_reset(h, T0, false);
    /* 100 waits: 0 ms x50, 850 ms x40, 4 s x9, 62 s x1. */
    for (int i = 0; i < 100; i++) {
        int64_t w = i < 50 ? 0 : i < 90 ? 850 : i < 99 ? 4000 : 62000;
        ev(h, T0 + i, SL_HIST_ACQUIRED, false, w, "sem/db", 1);
    }
    sl_hist_waits w;
    sl_history_waits(h, "sem/db", SL_HIST_1H, T0 + 1000, &w);
    assert_int_equal(w.count, 100);
    assert_int_equal(w.max_ms, 62000);
    assert_int_equal(w.counts[0], 50); /* <= 100 us */
    assert_int_equal(sl_hist_waits_quantile(&w, 0.50), 0);
    assert_int_equal(sl_hist_waits_quantile(&w, 0.51), 1000); /* the 1 s bucket */
    assert_int_equal(sl_hist_waits_quantile(&w, 0.90), 1000);
    assert_int_equal(sl_hist_waits_quantile(&w, 0.91), 5000);
    assert_int_equal(sl_hist_waits_quantile(&w, 0.99), 5000);
    assert_int_equal(sl_hist_waits_quantile(&w, 1.0), 62000); /* the 2 min bound, cut to max */
    sl_hist_waits none = {{0}, 0, -1};
    assert_int_equal(sl_hist_waits_quantile(&none, 0.5), -1);
    /* Every bound of metrics.c's histogram is one of these. */
    static const int64_t metrics_us[] = {100,     500,     1000,     5000,     10000,
                                         50000,   100000,  500000,   1000000,  5000000,
                                         30000000, 60000000, 600000000, 3600000000};
    for (size_t i = 0; i < sizeof(metrics_us) / sizeof(metrics_us[0]); i++) {
        bool found = false;
        for (size_t b = 0; b < SL_HIST_WAIT_BOUNDS; b++)
            found = found || sl_hist_wait_bounds_us[b] == metrics_us[i];
        assert_true(found);
    }
    assert_int_equal(sl_hist_wait_bounds_us[SL_HIST_WAIT_BOUNDS - 1], DAY * 1000);
    sl_history_free(h);
}

/* Waits age out: the 1 h window keeps the last six 10-minute slots, the
 * 24 h one the last 24 hours. */
static void waits_age_out(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(10000, DAY);
    sl_history_reset(h, T0, false);
    ev(h, T0 + 1, SL_HIST_ACQUIRED, false, 5, "mtx/m", 1);
    sl_hist_waits w;
    sl_history_waits(h, "mtx/m", SL_HIST_1H, T0 + 50 * 60000, &w);
    assert_int_equal(w.count, 1);
    sl_history_waits(h, "mtx/m", SL_HIST_1H, T0 + 60 * 60000, &w);
    assert_int_equal(w.count, 0);
    sl_history_waits(h, "mtx/m", SL_HIST_24H, T0 + 60 * 60000, &w);
    assert_int_equal(w.count, 1);
    sl_history_waits(h, "mtx/m", SL_HIST_24H, T0 + DAY, &w);
    assert_int_equal(w.count, 0);
    /* A new wait in the slot's place replaces the old one's counts. */
    ev(h, T0 + 60 * 60000 + 5, SL_HIST_ACQUIRED, false, 7, "mtx/m", 1);
    sl_history_waits(h, "mtx/m", SL_HIST_1H, T0 + 60 * 60000 + 10, &w);
    assert_int_equal(w.count, 1);
    assert_int_equal(w.max_ms, 7);
    sl_history_free(h);
}

static void locks_are_bounded_and_idle_ones_dropped(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0, false);
    char key[32];
    for (int i = 0; i <= SL_HIST_LOCKS_MAX; i++) {
        snprintf(key, sizeof(key), "mtx/l%d", i);
        ev(h, T0 + i, SL_HIST_QUEUED, false, -1, key, 1);
    }
    assert_int_equal(sl_history_nlocks(h), SL_HIST_LOCKS_MAX);
    got g;
    assert_false(sl_history_samples(h, "mtx/l0", SL_HIST_1H, T0 + 2000, collect, &g));
    assert_true(sl_history_samples(h, "mtx/l1000", SL_HIST_1H, T0 + 2000, collect, &g));
    /* All idle now; a day of quiet later only the one in use stays. */
    sample(h, T0 + 2000, NULL, 0, 0, 0);
    assert_int_equal(sl_history_nlocks(h), SL_HIST_LOCKS_MAX);
    sample(h, T0 + 2000 + DAY, "mtx/l5", 0, 1, 0);
    assert_int_equal(sl_history_nlocks(h), 1);
    assert_true(sl_history_samples(h, "mtx/l5", SL_HIST_1H, T0 + 2000 + DAY, collect, &g));
    sl_history_free(h);
}

/* F13: team-a/ and team-b/ are tenants; anything else is nobody's. */
static const char *two_tenants(void *ud, const char *key)
{
    (void)ud;
    if (strncmp(key + 4, "team-a/", 7) == 0)
        return "team-a/";
    if (strncmp(key + 4, "team-b/", 7) == 0)
        return "team-b/";
    return NULL;
}

/* F13: one tenant's churn through more locks than the table holds evicts
 * only its own: team-b's wait, older than all of team-a's locks, stays. */
static void one_tenant_evicts_only_its_own(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_set_tenants(h, two_tenants, NULL);
    sl_history_reset(h, T0, false);
    ev(h, T0, SL_HIST_ACQUIRED, false, 40, "mtx/team-b/hist", 1);
    char key[32];
    for (int i = 0; i < SL_HIST_LOCKS_MAX + 100; i++) {
        snprintf(key, sizeof(key), "mtx/team-a/l%d", i);
        ev(h, T0 + 1 + i, SL_HIST_ACQUIRED, false, 1, key, 1);
    }
    assert_int_equal(sl_history_nlocks(h), SL_HIST_LOCKS_MAX);
    sl_hist_waits w;
    sl_history_waits(h, "mtx/team-b/hist", SL_HIST_1H, T0 + 5000, &w);
    assert_int_equal(w.count, 1);
    assert_int_equal(w.max_ms, 40);
    /* team-a's oldest made room for its newest. */
    sl_history_waits(h, "mtx/team-a/l0", SL_HIST_1H, T0 + 5000, &w);
    assert_int_equal(w.count, 0);
    sl_history_waits(h, "mtx/team-a/l1099", SL_HIST_1H, T0 + 5000, &w);
    assert_int_equal(w.count, 1);
    /* A tenant over its share still yields to a newcomer of a tenant with
     * fewer: nobody's lock takes the room of team-a's stalest. */
    ev(h, T0 + 2000, SL_HIST_ACQUIRED, false, 3, "mtx/ops", 1);
    sl_history_waits(h, "mtx/ops", SL_HIST_1H, T0 + 5000, &w);
    assert_int_equal(w.count, 1);
    sl_history_waits(h, "mtx/team-a/l101", SL_HIST_1H, T0 + 5000, &w);
    assert_int_equal(w.count, 0);
    sl_history_waits(h, "mtx/team-a/l102", SL_HIST_1H, T0 + 5000, &w);
    assert_int_equal(w.count, 1);
    sl_history_waits(h, "mtx/team-b/hist", SL_HIST_1H, T0 + 5000, &w);
    assert_int_equal(w.count, 1);
    sl_history_free(h);
}

/* The windows reach no further back than the event log. */
static void windows_fit_the_retention(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(10000, 30 * 60000);
    assert_int_equal(sl_history_capacity(h, SL_HIST_1H), 180);
    assert_int_equal(sl_history_capacity(h, SL_HIST_24H), 30);
    sl_history_free(h);
    h = sl_history_new(10000, DAY);
    assert_int_equal(sl_history_capacity(h, SL_HIST_1H), SL_HIST_FINE_N);
    assert_int_equal(sl_history_capacity(h, SL_HIST_24H), SL_HIST_COARSE_N);
    sl_history_free(h);
}

/* Which locks exist, as /metrics asks: all of them, or those of a
 * NULL-terminated list. */
static bool all_live(void *ud, const char *key)
{
    (void)ud;
    (void)key;
    return true;
}

static bool live_in(void *ud, const char *key)
{
    const char *const *live = ud;
    for (; *live; live++)
        if (strcmp(*live, key) == 0)
            return true;
    return false;
}

static size_t count_of(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static const char *render(sl_history *h, sl_hist_live_fn live, void *ud, sl_buf *out)
{
    sl_buf_clear(out);
    sl_history_render_metrics(h, live, ud, out);
    sl_buf_add(out, "", 1);
    return sl_buf_data(out);
}

static void metrics_count_live_grants_only(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0, true);
    sl_store_event a = sev(1, T0 + 1, "claim.queued", "c", "[\"mtx/m\"]", "1", 0);
    sl_store_event b = sev(2, T0 + 4, "claim.acquired", "c", "[\"mtx/m\"]", "1", 0);
    sl_history_replay(h, &a, NULL, NULL);
    sl_history_replay(h, &b, NULL, NULL);
    sl_history_replay_done(h);
    ev(h, T0 + 10, SL_HIST_ACQUIRED, false, 1500, "mtx/m", 1);
    sl_buf out = {0};
    const char *text = render(h, all_live, NULL, &out);
    assert_non_null(strstr(text, "# TYPE sluice_lock_wait_seconds histogram\n"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_bucket{lock=\"mtx/m\",le=\"1\"} 0\n"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_bucket{lock=\"mtx/m\",le=\"2\"} 1\n"));
    assert_non_null(
        strstr(text, "sluice_lock_wait_seconds_bucket{lock=\"mtx/m\",le=\"+Inf\"} 1\n"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_sum{lock=\"mtx/m\"} 1.500000\n"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_count{lock=\"mtx/m\"} 1\n"));
    /* The counters outlive a reset (a takeover): since the process started. */
    sl_history_reset(h, T0 + 20, false);
    assert_non_null(strstr(render(h, all_live, NULL, &out),
                           "sluice_lock_wait_seconds_count{lock=\"mtx/m\"} 1\n"));
    sl_buf_free(&out);
    sl_history_free(h);
}

/* E5: one-off locks (a mutex per run) do not pile series up in /metrics:
 * a lock that went loses its series at the next scrape, its counts going
 * to lock="other", and at most SL_HIST_METRIC_LOCKS locks have one. */
static void metrics_keep_series_of_live_locks_only(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0, false);
    sl_buf out = {0};
    const char *text = render(h, all_live, NULL, &out);
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_count{lock=\"other\"} 0\n"));
    size_t idle_lines = count_of(text, "\n");
    char key[32];
    for (int i = 0; i < 50; i++) {
        snprintf(key, sizeof(key), "mtx/once-%d", i);
        ev(h, T0 + i, SL_HIST_ACQUIRED, false, 1500, key, 1);
    }
    ev(h, T0 + 60, SL_HIST_ACQUIRED, false, 20, "sem/s", 1);
    ev(h, T0 + 61, SL_HIST_ACQUIRED, false, 1500, "mtx/held", 1);
    const char *live[] = {"sem/s", "mtx/held", NULL};
    text = render(h, live_in, live, &out);
    assert_int_equal(count_of(text, "\n"), idle_lines + 2 * 32);
    assert_null(strstr(text, "once-"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_count{lock=\"sem/s\"} 1\n"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_count{lock=\"mtx/held\"} 1\n"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_count{lock=\"other\"} 50\n"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_sum{lock=\"other\"} 75.000000\n"));
    /* A lock that comes back starts again; "other" keeps what it had. */
    ev(h, T0 + 70, SL_HIST_ACQUIRED, false, 1500, "mtx/once-3", 1);
    text = render(h, all_live, NULL, &out);
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_count{lock=\"mtx/once-3\"} 1\n"));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_count{lock=\"other\"} 50\n"));
    /* Past the bound, the locks granted least recently make room: the three
     * above, granted before any of these. */
    for (int i = 0; i < SL_HIST_METRIC_LOCKS; i++) {
        snprintf(key, sizeof(key), "mtx/many-%d", i);
        ev(h, T0 + 100 + i, SL_HIST_ACQUIRED, false, 1500, key, 1);
    }
    text = render(h, all_live, NULL, &out);
    assert_int_equal(count_of(text, "_count{lock=\"mtx/many-"), SL_HIST_METRIC_LOCKS);
    assert_null(strstr(text, "lock=\"sem/s\""));
    assert_null(strstr(text, "lock=\"mtx/held\""));
    assert_null(strstr(text, "lock=\"mtx/once-3\""));
    assert_non_null(strstr(text, "lock=\"mtx/many-0\""));
    assert_non_null(strstr(text, "sluice_lock_wait_seconds_count{lock=\"other\"} 53\n"));
    sl_buf_free(&out);
    sl_history_free(h);
}

/* A sampling walks every lock of the engine: the server asks for one only
 * when a boundary has passed or a lock is new. */
static void sampling_is_due_at_boundaries_and_for_new_locks(void **state)
{
    (void)state;
    sl_history *h = sl_history_new(STEP, DAY);
    sl_history_reset(h, T0 + 100, true);
    assert_false(sl_history_due(h, T0 + 5000)); /* rebuilding */
    sl_history_replay_done(h);
    assert_true(sl_history_due(h, T0 + 200));
    sample(h, T0 + 200, NULL, 0, 0, 0);
    assert_false(sl_history_due(h, T0 + 999));
    assert_true(sl_history_due(h, T0 + 1000));
    ev(h, T0 + 300, SL_HIST_QUEUED, false, -1, "mtx/new", 1);
    assert_true(sl_history_due(h, T0 + 301));
    sample(h, T0 + 301, "mtx/new", 0, 0, 1);
    assert_false(sl_history_due(h, T0 + 302));
    got g = samples(h, "mtx/new", SL_HIST_1H, T0 + 302);
    assert_int_equal(g.n, 360);
    assert_int_equal(g.time[g.n - 1], T0);
    assert_vals(&g.v[g.n - 1], 0, 0, 0);
    sl_history_free(h);
}

/* The server's tenants (sl_auth_tenant): the longest prefix under which a
 * limited token makes locks, its `prefixes` or claim or configure (F7);
 * read and operate make none, so read: [""] is nobody's tenant. */
static void tenants_by_the_prefixes_that_make_locks(void **state)
{
    (void)state;
    char *a_pre[] = {"team-a/"}, *a_claim[] = {"shared/"}, *b_conf[] = {"team-b/"};
    char *all[] = {""};
    sl_conf_token t[3] = {
        {.name = "a", .prefixes = a_pre, .nprefixes = 1},
        {.name = "b"},
        {.name = "dash"},
    };
    t[0].perms[SL_PERM_CLAIM] = (sl_prefix_list){a_claim, 1};
    t[1].perms[SL_PERM_CONFIGURE] = (sl_prefix_list){b_conf, 1};
    t[2].perms[SL_PERM_READ] = (sl_prefix_list){all, 1};
    t[2].perms[SL_PERM_OPERATE] = (sl_prefix_list){all, 1};
    sl_conf conf = {.tokens = t, .ntokens = 3};
    assert_string_equal(sl_auth_tenant(&conf, "team-a/db"), "team-a/");
    assert_string_equal(sl_auth_tenant(&conf, "shared/runners"), "shared/");
    assert_string_equal(sl_auth_tenant(&conf, "team-b/x"), "team-b/");
    assert_null(sl_auth_tenant(&conf, "other/x"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(samples_follow_the_events),
        cmocka_unit_test(sampling_times_do_not_matter),
        cmocka_unit_test(a_replay_gives_the_same),
        cmocka_unit_test(old_records_are_read_best_effort),
        cmocka_unit_test(waits_from_the_engine_when_the_log_lacks_the_arrival),
        cmocka_unit_test(wait_quantiles_and_buckets),
        cmocka_unit_test(waits_age_out),
        cmocka_unit_test(locks_are_bounded_and_idle_ones_dropped),
        cmocka_unit_test(windows_fit_the_retention),
        cmocka_unit_test(metrics_count_live_grants_only),
        cmocka_unit_test(metrics_keep_series_of_live_locks_only),
        cmocka_unit_test(sampling_is_due_at_boundaries_and_for_new_locks),
        cmocka_unit_test(one_tenant_evicts_only_its_own),
        cmocka_unit_test(tenants_by_the_prefixes_that_make_locks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
