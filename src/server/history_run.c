/* history_run.c - the per-lock history (history.h) in the server: the
 * engine's events go in as each batch is captured, a timer samples every
 * step, and a rebuild reads the event log back after a restart or a
 * takeover.
 *
 * Every event goes in exactly once, in the same form whether it happens now
 * or is read back: events up to hist_fed are in. The rebuild reads the log
 * up to the last event the store held when the engine was rebuilt, a page
 * per turn of the loop (a zero timer: requests are served between pages);
 * the events of the moment go in meanwhile, and the samples are computed
 * when the read is done. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "history.h"
#include "server.h"

/* Events read per turn of the loop while rebuilding: decoding one costs
 * about a microsecond, and reading a page from PostgreSQL a few more, so a
 * page holds the loop for a few milliseconds. */
#define HIST_PAGE 2000

/* How long after a rebuild of the engine the history's rebuild starts. */
#define HIST_DELAY_MS 500

/* The fine step: 10 s, or SLUICE_HISTORY_STEP_MS (undocumented, for tests
 * that cannot wait 10 s per sample). */
static int64_t step_ms(void)
{
    const char *e = getenv("SLUICE_HISTORY_STEP_MS");
    if (!e || !*e)
        return SL_HIST_STEP_MS;
    char *end;
    long long v = strtoll(e, &end, 10);
    if (*end || v < 10 || v > 3600000) {
        sl_log(SL_LOG_WARN, "SLUICE_HISTORY_STEP_MS=%s is not 10 to 3600000; using %d", e,
               SL_HIST_STEP_MS);
        return SL_HIST_STEP_MS;
    }
    return v;
}

void sl_hist_feed(sl_server *srv, const sl_event *events, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (events[i].seq <= srv->hist_fed)
            continue;
        sl_history_engine_event(srv->history, &events[i]);
        srv->hist_fed = events[i].seq;
    }
}

void sl_hist_catch_up(sl_server *srv, int64_t now)
{
    if (!srv->writer)
        return; /* not leading: no engine to read */
    /* Events of the engine not yet captured go in first: a sample at a
     * boundary subtracts every change after it from the current values. */
    sl_changes ch;
    sl_engine_changes(srv->eng, &ch);
    sl_hist_feed(srv, ch.events, ch.nevents);
    sl_history *h = srv->history;
    if (!sl_history_due(h, now))
        return; /* rebuilding, or no boundary passed: nothing to sample (a walk of every lock) */
    sl_history_sample_begin(h);
    for (const sl_lock *l = sl_lock_next(srv->eng, NULL); l; l = sl_lock_next(srv->eng, l)) {
        sl_lock_view v;
        sl_lock_get(l, &v);
        sl_hist_vals hv = {(uint32_t)v.used, (uint32_t)v.nholders, (uint32_t)v.npending};
        sl_history_sample_lock(h, v.key, &hv, now);
    }
    sl_history_sample_end(h, now);
}

static void sample_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_server *srv = arg;
    if (sl_role_serves(srv))
        sl_hist_catch_up(srv, sl_server_now(srv));
}

/* ---- the rebuild --------------------------------------------------------- */

typedef struct page {
    sl_server *srv;
    bool past; /* an event after the rebuild's last: done */
} page;

static int64_t arrived(void *ud, const char *claim)
{
    const sl_claim *c = sl_claim_find(((sl_server *)ud)->eng, claim);
    if (!c)
        return -1;
    sl_claim_view v;
    sl_claim_get(c, &v);
    return v.arrived_ms;
}

/* A restored claim's event: the engine notes its seq, so that its events
 * are read from their records (routes_events.c). */
static void note_seq(sl_server *srv, const sl_store_event *ev)
{
    sl_claim *c = ev->claim ? sl_claim_find(srv->eng, ev->claim) : NULL;
    if (!c)
        return;
    sl_claim_view v;
    sl_claim_get(c, &v);
    if (v.arrival < srv->seqs_arrival)
        sl_claim_note_event(srv->eng, c, ev->seq);
}

static int replay_one(void *ud, const sl_store_event *ev)
{
    page *p = ud;
    if (ev->seq > p->srv->hist_upto) {
        p->past = true;
        return 1;
    }
    sl_history_replay(p->srv->history, ev, arrived, p->srv);
    note_seq(p->srv, ev);
    return 0;
}

static void rebuild_done(sl_server *srv, const char *problem)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    int64_t ms = (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000 - srv->hist_started;
    sl_history_replay_done(srv->history);
    sl_hist_catch_up(srv, sl_server_now(srv));
    if (!problem)
        srv->seqs_arrival = 0; /* every claim's event seqs are known */
    if (problem)
        sl_log(SL_LOG_WARN, "the lock history is partial: reading the event log failed: %s",
               problem);
    else
        sl_log(SL_LOG_INFO, "lock history rebuilt from the event log in %lld ms (%zu locks)",
               (long long)ms, sl_history_nlocks(srv->history));
}

static void page_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_server *srv = arg;
    if (!sl_history_rebuilding(srv->history))
        return;
    page p = {srv, false};
    uint64_t next = srv->hist_since;
    if (sl_store_events(srv->store, srv->hist_since, NULL, HIST_PAGE, replay_one, &p, &next) !=
        0) {
        rebuild_done(srv, sl_store_error(srv->store));
        return;
    }
    if (p.past || next >= srv->hist_upto || next <= srv->hist_since) {
        rebuild_done(srv, NULL);
        return;
    }
    srv->hist_since = next;
    struct timeval now = {0, 0};
    evtimer_add(srv->hist_page_ev, &now);
}

void sl_hist_rebuild(sl_server *srv)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    srv->hist_started = (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
    sl_history_reset(srv->history, sl_server_now(srv), true);
    /* Events before seq_done are in the store: they come from the log. */
    srv->hist_upto = srv->seq_done > 0 ? srv->seq_done - 1 : 0;
    srv->hist_fed = srv->hist_upto;
    srv->hist_since = 0;
    /* Not at once: right after a takeover the relayed requests of the
     * leaderless gap arrive together, and the log's pages would hold the
     * loop between them. The history waits a little; they do not. */
    struct timeval later = {0, HIST_DELAY_MS * 1000};
    evtimer_add(srv->hist_page_ev, &later);
}

void sl_hist_stop(sl_server *srv)
{
    if (!srv->history)
        return;
    evtimer_del(srv->hist_page_ev);
    sl_history_reset(srv->history, sl_server_now(srv), false);
}

/* A lock's tenant, by the tokens' prefixes ("mtx/NAME": the name). */
static const char *lock_tenant(void *ud, const char *key)
{
    const sl_server *srv = ud;
    return strlen(key) > 4 ? sl_auth_tenant(srv->conf, key + 4) : NULL;
}

void sl_hist_start(sl_server *srv)
{
    int64_t step = step_ms();
    srv->history = sl_history_new(step, srv->conf->event_retention_ms);
    sl_history_set_tenants(srv->history, lock_tenant, srv);
    srv->hist_ev = event_new(srv->base, -1, EV_PERSIST, sample_cb, srv);
    srv->hist_page_ev = evtimer_new(srv->base, page_cb, srv);
    if (!srv->hist_ev || !srv->hist_page_ev)
        abort();
    struct timeval tv = {step / 1000, (step % 1000) * 1000};
    event_add(srv->hist_ev, &tv);
}

void sl_hist_free(sl_server *srv)
{
    if (srv->hist_ev)
        event_free(srv->hist_ev);
    if (srv->hist_page_ev)
        event_free(srv->hist_page_ev);
    sl_history_free(srv->history);
    srv->hist_ev = srv->hist_page_ev = NULL;
    srv->history = NULL;
}
