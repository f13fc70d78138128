/* commit.c - after each turn: capture the engine's batch, commit it
 * (writer.c: appended to the SQLite store's log file on the loop and, with
 * --durability full, synced on the writer thread; committed on the writer
 * thread for PostgreSQL), then answer and wake.
 *
 * Order matters. Nobody learns of a change before the batch holding it is
 * committed: answers are held in reply.c's queue, each tagged with the
 * generation (the number of the batch) its state depends on, and leave when
 * that batch commits; the long-poll waits and event streams of a batch are
 * woken only after its commit, and what they answer is held the same way.
 * One batch is written at a time: while it is, the engine gathers the next
 * one, captured the moment the writer is done, so a commit's cost is paid
 * once per batch however many requests came in meanwhile (docs/engine.md's
 * "one transaction per turn" becomes one per writer round: docs/api.md).
 *
 * When the store fails, the held answers get 503, the captured batch is
 * kept, no new change is accepted (routes check store_failed) and the
 * same batch is committed again every second until it succeeds. */
#include <stdio.h>
#include <string.h>
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

static void commit_failed(sl_server *srv, const char *why)
{
    srv->metrics.commit_failures++;
    snprintf(srv->store_error, sizeof(srv->store_error), "%s",
             why && *why ? why : "no reason given by the store");
    if (!srv->store_failed)
        sl_log(SL_LOG_ERROR, "store commit failed, refusing changes until it recovers: %s", why);
    srv->store_failed = true;
    /* The answers of a batch committed before this one failed (they wait
     * while the next batch is submitted: sl_commit_done) go as they are. */
    sl_reply_flush(srv, srv->gen_done, true);
    sl_reply_flush(srv, 0, false);
    struct timeval retry = {1, 0};
    event_add(srv->retry_ev, &retry);
}

/* The ids of the batch's changed claims, to wake their waits once it is
 * committed: by then the claim objects may have changed again or gone. */
static void keep_wake_ids(sl_server *srv, const sl_changes *ch)
{
    const size_t w = SL_ID_MAX + 1;
    if (ch->nclaims > srv->capwake) {
        char *p = realloc(srv->wake_ids, ch->nclaims * w);
        if (!p)
            abort();
        srv->wake_ids = p;
        srv->capwake = ch->nclaims;
    }
    srv->nwake = 0;
    for (size_t i = 0; i < ch->nclaims; i++) {
        sl_claim_view v;
        sl_claim_get(ch->claims[i], &v);
        size_t n = strlen(v.id);
        if (n > SL_ID_MAX)
            continue; /* cannot happen: ids are bounded at creation */
        memcpy(srv->wake_ids + srv->nwake++ * w, v.id, n + 1);
    }
}

/* Copies the engine's batch into srv->batch and clears it: the engine may
 * change while the batch is written. -1 when it cannot be captured (the
 * engine's batch is then kept, to be captured again). */
static int capture(sl_server *srv)
{
    sl_changes ch;
    sl_engine_changes(srv->eng, &ch);
    if (sl_store_capture(srv->store, srv->eng, &ch, srv->batch) != 0) {
        commit_failed(srv, sl_store_batch_error(srv->batch));
        return -1;
    }
    /* Purged claims are freed with the engine's batch: their waits answer
     * now (the claim's end was committed long ago; what they send is held
     * until this batch commits). */
    for (size_t i = 0; i < ch.npurged; i++)
        sl_waits_claim_purged(srv, ch.purged_claims[i]);
    keep_wake_ids(srv, &ch);
    srv->batch_events = ch.nevents;
    srv->batch_seq = ch.next_seq;
    sl_metrics_events(&srv->metrics, ch.events, ch.nevents);
    sl_hist_feed(srv, ch.events, ch.nevents);
    if (srv->prune_due) {
        sl_store_batch_prune(srv->batch, srv->prune_before);
        srv->prune_due = false;
    }
    sl_engine_changes_clear(srv->eng);
    srv->batch_gen = srv->gen_next++;
    return 0;
}

void sl_commit_run(sl_server *srv)
{
    if (!srv->writer)
        return; /* shared mode, not leading: nothing is written */
    if (!sl_writer_busy(srv) && !srv->batch_gen) {
        if (sl_engine_changes_pending(srv->eng) || srv->prune_due) {
            if (capture(srv) == 0)
                sl_writer_submit(srv, srv->batch);
        } else {
            /* Nothing pending, nothing being written: every held answer
             * shows committed state. */
            sl_reply_flush(srv, UINT64_MAX, true);
        }
    }
    sl_commit_rearm_timer(srv);
}

void sl_commit_retry(sl_server *srv)
{
    if (!srv->writer || sl_writer_busy(srv))
        return;
    if (srv->batch_gen)
        sl_writer_submit(srv, srv->batch);
    else
        sl_commit_run(srv);
}

/* Wakes what a committed batch changed: the claims of ids (n of them), and
 * the event waits and streams when it had events. */
static void wake(sl_server *srv, const char *ids, size_t n, size_t events)
{
    const size_t w = SL_ID_MAX + 1;
    for (size_t i = 0; i < n; i++) {
        sl_claim *c = sl_claim_find(srv->eng, ids + i * w);
        if (c)
            sl_waits_claim_changed(srv, c);
    }
    if (events) {
        sl_waits_events_changed(srv);
        sl_streams_push(srv);
    }
}

/* --durability full, syncs on a thread of their own: the next batch (what
 * came in during this one's sync) is captured, appended and its sync
 * started first, then this one's waits wake and its answers go, while the
 * disk syncs the next (the answers of 32 connections took as long as a
 * third of a sync, the disk idle meanwhile). The answers woken waits give
 * now show the next batch's state too: they are held for it. */
static void next_then_answer(sl_server *srv)
{
    char *ids = srv->wake_ids;
    size_t cap = srv->capwake, events = srv->batch_events;
    srv->wake_ids = srv->wake_done;
    srv->capwake = srv->capwake_done;
    srv->wake_done = ids;
    srv->capwake_done = cap;
    srv->nwake_done = srv->nwake;
    srv->nwake = 0;
    sl_commit_run(srv);
    wake(srv, srv->wake_done, srv->nwake_done, events);
    srv->nwake_done = 0;
    sl_reply_flush(srv, srv->gen_done, true);
    if (!sl_writer_busy(srv))
        sl_commit_run(srv); /* nothing was in flight: what waking changed */
}

void sl_commit_done(sl_server *srv, int rc, double seconds)
{
    sl_histogram_observe(&srv->metrics.commit, seconds);
    if (rc == SL_STORE_EFENCED) {
        /* Another server leads: the answers held for this batch tell their
         * relays to go there; the step down follows on the next turn. */
        sl_log(SL_LOG_WARN, "%s", sl_store_batch_error(srv->batch));
        sl_role_fenced(srv);
        srv->stepping_down = true;
        sl_reply_flush(srv, 0, false);
        srv->stepping_down = false;
        srv->store_failed = true; /* nothing more is accepted until then */
        return;
    }
    if (rc != 0) {
        commit_failed(srv, sl_store_batch_error(srv->batch));
        return;
    }
    if (srv->store_failed)
        sl_log(SL_LOG_INFO, "store commits again; accepting changes");
    srv->store_failed = false;
    srv->metrics.commits++;
    srv->metrics.events_written += srv->batch_events;
    if (sl_store_batch_pruned(srv->batch))
        sl_log(SL_LOG_DEBUG, "pruned %llu events older than the retention",
               (unsigned long long)sl_store_batch_pruned(srv->batch));
    srv->gen_done = srv->batch_gen;
    srv->seq_done = srv->batch_seq;
    srv->batch_gen = 0;
    /* What came in meanwhile (and what waking changed) is the next batch.
     * A batch committed on the loop calls this from sl_commit_run: one
     * level of that is enough, the rest waits for the end of the turn. */
    static int depth;
    if (depth == 0 && sl_writer_syncs_apart(srv)) {
        depth++;
        next_then_answer(srv);
        depth--;
        return;
    }
    wake(srv, srv->wake_ids, srv->nwake, srv->batch_events);
    srv->nwake = 0;
    sl_reply_flush(srv, srv->gen_done, true);
    if (depth > 0) {
        sl_server_touch(srv);
        return;
    }
    depth++;
    sl_commit_run(srv);
    depth--;
}

void sl_commit_drain(sl_server *srv)
{
    for (;;) {
        if (sl_writer_busy(srv)) {
            sl_writer_wait(srv);
            continue;
        }
        if (srv->store_failed || (!sl_engine_changes_pending(srv->eng) && !srv->prune_due))
            break;
        sl_commit_run(srv);
        if (!sl_writer_busy(srv))
            break; /* could not capture */
    }
    sl_reply_flush(srv, srv->store_failed ? 0 : UINT64_MAX, !srv->store_failed);
}
