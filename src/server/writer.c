/* writer.c - the store's work that must not hold the event loop, on a
 * thread of its own.
 *
 * What runs here depends on the store (docs/store.md):
 * - SQLite with its log file (sl_store_commit_inline): the loop appends
 *   each batch itself (one pwritev; --durability normal ends there). With
 *   --durability full a second thread, sluiced-sync (sync_main), does the
 *   group commit's fdatasync: while it syncs batch N the loop serves and
 *   gathers batch N + 1, whose append waits for the sync to end; answers
 *   leave after it. This thread runs the checkpoints: the applier, which
 *   moves the log's records into SQLite, beside any sync.
 * - PostgreSQL: the whole commit (an INSERT, a round trip) runs here, as
 *   the one job the loop hands over at a time (commit.c).
 * The loop and the writer share one job slot under a mutex; the writer
 * says it is done through a pipe that the loop watches, so libevent needs
 * no locking of its own. An in-memory store cannot be written from another
 * connection (sl_store_commit_overlaps): it commits on the loop instead,
 * and the result arrives the same way, on the loop's next turn. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

struct sl_writer {
    sl_server *srv;
    bool threaded;
    pthread_t thread;
    /* --durability full with a log file: the syncs run on a thread of their
     * own (sync_main), beside the writer's checkpoints, so that a sync
     * never waits for an apply to end. */
    bool syncing;
    pthread_t sync_thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;  /* the writer's work, and sl_writer_wait's end */
    pthread_cond_t scv; /* the sync thread's work: each thread wakes for its own only */
    bool waiting;       /* the loop waits in sl_writer_wait */
    sl_store_batch *job;  /* given to the writer; NULL when it has none */
    sl_store_batch *sjob; /* appended already, given to the sync thread */
    atomic_bool job_waits; /* job is set: read by a checkpoint without the lock */
    bool outstanding;    /* (loop only) submitted, result not yet taken */
    bool ckpt_wanted;    /* the WAL is long: checkpoint when no job waits */
    bool checkpointing;  /* the writer is checkpointing: the connection is busy */
    bool quit;
    bool abandon;        /* quit without writing what waits (a leader stepping down) */
    int rc;         /* the last job's result */
    double seconds; /* and how long its commit took */
    int pipe_r, pipe_w;
    struct event *done_ev;
};

static double since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void notify(sl_writer *w)
{
    char byte = 1;
    while (write(w->pipe_w, &byte, 1) < 0 && errno == EINTR)
        ;
}

static void commit_job(sl_writer *w, sl_store_batch *job)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    w->rc = sl_store_commit(w->srv->store, job);
    w->seconds = since(&t0);
}

/* The group commit of --durability full with a log file: the loop has
 * appended the batch, this thread syncs it; the loop meanwhile serves and
 * gathers the next batch, whose append waits for this sync to end. The
 * writer may be applying the log meanwhile: the sync does not wait for it
 * (a sync that waited for an apply of a thousand records, or stopped it
 * after a record or two, cost every request of the turn). */
static void *sync_main(void *arg)
{
    sl_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->sjob && !w->quit)
            pthread_cond_wait(&w->scv, &w->mu);
        if (!w->sjob)
            break;
        if (w->abandon) {
            w->sjob = NULL;
            w->rc = SL_STORE_EFENCED;
            pthread_cond_broadcast(&w->cv);
            break;
        }
        pthread_mutex_unlock(&w->mu); /* the loop does not touch sjob or rc meanwhile */
        struct timespec t0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        int rc = sl_store_sync(w->srv->store, w->sjob);
        double seconds = since(&t0);
        bool due = sl_store_checkpoint_due(w->srv->store);
        pthread_mutex_lock(&w->mu);
        w->rc = rc;
        w->seconds += seconds;
        w->sjob = NULL;
        if ((due && !w->ckpt_wanted) || w->waiting)
            pthread_cond_broadcast(&w->cv); /* the writer's checkpoint, sl_writer_wait */
        w->ckpt_wanted |= due;
        notify(w);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Checkpoints (the store's log applied to its state, the WAL copied into
 * the database) run here, after the answers of the commit that made them
 * due are on their way, and never on the loop (sqlite.c's WAL hook). */
static void checkpoint(sl_writer *w)
{
    w->ckpt_wanted = false;
    w->checkpointing = true;
    pthread_mutex_unlock(&w->mu);
    if (sl_store_checkpoint(w->srv->store) != 0)
        sl_log(SL_LOG_WARN, "%s; the next checkpoint tries again",
               sl_store_checkpoint_error(w->srv->store));
    pthread_mutex_lock(&w->mu);
    w->checkpointing = false;
}

/* A checkpoint applying the store's log stops between records when a
 * commit waits: the commit is the answer someone waits for. */
static bool commit_waits(void *arg)
{
    return atomic_load(&((sl_writer *)arg)->job_waits);
}

static void *writer_main(void *arg)
{
    sl_writer *w = arg;
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->job && !w->quit && !w->ckpt_wanted)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->abandon) {
            w->job = NULL;
            w->rc = SL_STORE_EFENCED;
            pthread_cond_broadcast(&w->cv);
            break;
        }
        if (w->job) {
            sl_store_batch *job = w->job;
            pthread_mutex_unlock(&w->mu);
            commit_job(w, job); /* the loop does not touch job or rc meanwhile */
            bool due = sl_store_checkpoint_due(w->srv->store);
            pthread_mutex_lock(&w->mu);
            w->job = NULL;
            atomic_store(&w->job_waits, false);
            w->ckpt_wanted |= due;
            pthread_cond_broadcast(&w->cv); /* sl_writer_wait */
            notify(w);
        } else if (w->ckpt_wanted) {
            checkpoint(w);
        } else {
            break; /* quit, with nothing left to do */
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void done_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    sl_writer *w = arg;
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    if (!w->outstanding)
        return;
    pthread_mutex_lock(&w->mu);
    bool busy = w->job || w->sjob;
    int rc = w->rc;
    double seconds = w->seconds;
    pthread_mutex_unlock(&w->mu);
    if (busy)
        return;
    w->outstanding = false;
    sl_commit_done(w->srv, rc, seconds);
}

int sl_writer_start(sl_server *srv)
{
    sl_writer *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    w->srv = srv;
    int fds[2];
    if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(w);
        return -1;
    }
    w->pipe_r = fds[0];
    w->pipe_w = fds[1];
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    pthread_cond_init(&w->scv, NULL);
    w->done_ev = event_new(srv->base, w->pipe_r, EV_READ | EV_PERSIST, done_cb, w);
    if (!w->done_ev)
        abort();
    event_add(w->done_ev, NULL);
    w->threaded = sl_store_commit_overlaps(srv->store);
    sl_store_set_yield(srv->store, commit_waits, w);
    if (w->threaded && pthread_create(&w->thread, NULL, writer_main, w) != 0)
        w->threaded = false; /* commits on the loop: slower, still correct */
    if (w->threaded)
        pthread_setname_np(w->thread, "sluiced-writer"); /* for top -H and perf */
    w->syncing = w->threaded && sl_store_commit_inline(srv->store) &&
                 srv->conf->durability == SL_DURABILITY_FULL &&
                 pthread_create(&w->sync_thread, NULL, sync_main, w) == 0;
    if (w->syncing)
        pthread_setname_np(w->sync_thread, "sluiced-sync");
    srv->writer = w;
    return 0;
}

/* Handing a batch over costs two thread wake-ups, which on a small VM take
 * longer than a small commit itself (without fsync) takes. So a batch of a
 * few rows, typical of a lock handed from one waiter to the next, is
 * committed on the loop; the loop would wait for it anyway, having nothing
 * else to do. Measured (8 clients on one mutex, 2 vCPUs): handoff p50
 * 305-330 us through the writer, 167-196 us here; cycles/s 2.6-2.8k vs
 * 4.1-4.8k; unchanged with 32 connections, whose batches go to the writer.
 * With --durability full a commit waits for fsync: always the writer. */
#define SL_COMMIT_HERE_ROWS 16

static bool commit_here(sl_writer *w, const sl_store_batch *b)
{
    if (w->srv->conf->durability == SL_DURABILITY_FULL ||
        sl_store_batch_rows(b) > SL_COMMIT_HERE_ROWS)
        return false;
    pthread_mutex_lock(&w->mu);
    bool idle = !w->checkpointing && !w->ckpt_wanted;
    pthread_mutex_unlock(&w->mu);
    return idle;
}

/* After a commit on the loop: a checkpoint it made due goes to the writer. */
static void checkpoint_if_due(sl_writer *w)
{
    if (!sl_store_checkpoint_due(w->srv->store))
        return;
    pthread_mutex_lock(&w->mu);
    w->ckpt_wanted = true;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

/* An append to the log file (sl_store_commit_inline) is made on the loop:
 * no thread hand-over is worth it, and the checkpoint's connection is not
 * the commit's. Only a sync (--durability full) goes to a thread: the sync
 * thread (sync_main). */
static void append_here(sl_writer *w, sl_store_batch *b)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    w->rc = sl_store_append(w->srv->store, b);
    bool full = w->srv->conf->durability == SL_DURABILITY_FULL;
    if (w->rc == 0 && full && !w->syncing) /* no thread for it: here, slower */
        w->rc = sl_store_sync(w->srv->store, b);
    w->seconds = since(&t0);
    if (w->rc == 0 && full && w->syncing) {
        w->outstanding = true;
        pthread_mutex_lock(&w->mu);
        w->sjob = b;
        /* Not job_waits: the apply goes on beside the sync (sync_main). */
        pthread_cond_signal(&w->scv);
        pthread_mutex_unlock(&w->mu);
        return;
    }
    checkpoint_if_due(w);
    sl_commit_done(w->srv, w->rc, w->seconds);
}

void sl_writer_submit(sl_server *srv, sl_store_batch *b)
{
    sl_writer *w = srv->writer;
    if (w->threaded && sl_store_commit_inline(srv->store)) {
        append_here(w, b);
        return;
    }
    if (w->threaded && commit_here(w, b)) {
        commit_job(w, b); /* the writer is idle: the connection is free */
        checkpoint_if_due(w);
        sl_commit_done(srv, w->rc, w->seconds);
        return;
    }
    w->outstanding = true;
    if (!w->threaded) {
        commit_job(w, b);
        if (sl_store_checkpoint_due(srv->store))
            sl_store_checkpoint(srv->store);
        notify(w);
        return;
    }
    pthread_mutex_lock(&w->mu);
    w->job = b;
    atomic_store(&w->job_waits, true);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

void sl_writer_wait(sl_server *srv)
{
    sl_writer *w = srv->writer;
    if (!w || !w->outstanding)
        return;
    pthread_mutex_lock(&w->mu);
    w->waiting = true;
    while (w->job || w->sjob)
        pthread_cond_wait(&w->cv, &w->mu);
    w->waiting = false;
    pthread_mutex_unlock(&w->mu);
    done_cb(w->pipe_r, EV_READ, w);
}

bool sl_writer_syncs_apart(const sl_server *srv)
{
    return srv->writer && srv->writer->syncing;
}

bool sl_writer_busy(const sl_server *srv)
{
    return srv->writer && srv->writer->outstanding;
}

void sl_writer_stop(sl_server *srv)
{
    sl_writer *w = srv->writer;
    if (!w)
        return;
    sl_store_set_yield(srv->store, NULL, NULL); /* w goes */
    if (w->threaded) {
        pthread_mutex_lock(&w->mu);
        w->quit = true;
        w->abandon = srv->role != SL_ROLE_LEADER && srv->role != SL_ROLE_SINGLE;
        pthread_cond_broadcast(&w->cv);
        pthread_cond_broadcast(&w->scv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->thread, NULL);
        if (w->syncing)
            pthread_join(w->sync_thread, NULL);
    }
    event_free(w->done_ev);
    close(w->pipe_r);
    close(w->pipe_w);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->scv);
    free(w);
    srv->writer = NULL;
}
