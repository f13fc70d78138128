/* commit.c - the end of each turn: write the engine's batch to the store in
 * one transaction, then answer.
 *
 * Order matters. The batch is written first; only after it commits are the
 * held answers sent, the long-poll waits on changed claims woken and the
 * event streams fed, so nobody learns of a change a crash could undo. When
 * the store fails, the answers of the turn get 503, the batch is kept, no new
 * change is accepted (routes.c checks store_failed) and the commit is retried
 * every second until it succeeds. */
#include <time.h>

#include "server.h"

void sl_commit_rearm_timer(sl_server *srv)
{
    int64_t next = sl_engine_next_deadline(srv->eng);
    if (next == srv->armed_at)
        return;
    srv->armed_at = next;
    if (next == INT64_MAX) {
        event_del(srv->timer_ev);
        return;
    }
    int64_t delay = next - sl_server_now(srv);
    if (delay < 0)
        delay = 0;
    struct timeval tv = {(time_t)(delay / 1000), (suseconds_t)((delay % 1000) * 1000)};
    event_add(srv->timer_ev, &tv);
}

static double elapsed(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void commit_failed(sl_server *srv)
{
    srv->metrics.commit_failures++;
    if (!srv->store_failed)
        sl_log(SL_LOG_ERROR, "store commit failed, refusing changes until it recovers: %s",
               sl_store_error(srv->store));
    srv->store_failed = true;
    sl_reply_flush(srv, false);
    struct timeval retry = {1, 0};
    event_add(srv->retry_ev, &retry);
}

/* Wakes what the committed batch changed. The batch's claims stay valid
 * until it is cleared, purged ones included. */
static void wake(sl_server *srv, const sl_changes *ch)
{
    for (size_t i = 0; i < ch->nclaims; i++)
        sl_waits_claim_changed(srv, ch->claims[i]);
    for (size_t i = 0; i < ch->npurged; i++)
        sl_waits_claim_purged(srv, ch->purged_claims[i]);
    if (ch->nevents) {
        sl_waits_events_changed(srv);
        sl_streams_push(srv);
    }
}

void sl_commit_run(sl_server *srv)
{
    if (sl_engine_changes_pending(srv->eng)) {
        sl_changes ch;
        sl_engine_changes(srv->eng, &ch);
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = sl_store_write(srv->store, srv->eng, &ch);
        sl_histogram_observe(&srv->metrics.commit, elapsed(&t0));
        if (rc != 0) {
            commit_failed(srv);
            return;
        }
        if (srv->store_failed)
            sl_log(SL_LOG_INFO, "store commits again; accepting changes");
        srv->store_failed = false;
        srv->metrics.commits++;
        srv->metrics.events_written += ch.nevents;
        sl_metrics_events(&srv->metrics, ch.events, ch.nevents);
        wake(srv, &ch);
        sl_engine_changes_clear(srv->eng);
    }
    sl_reply_flush(srv, true);
    /* Waking may itself change things (a grant to a client already gone is
     * released): those go in the next turn's batch. */
    if (sl_engine_changes_pending(srv->eng))
        sl_server_touch(srv);
    sl_commit_rearm_timer(srv);
}
