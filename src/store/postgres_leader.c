/* postgres_leader.c - shared mode's election on PostgreSQL: one thread,
 * two sessions of its own.
 *
 * The lock session campaigns with a blocking pg_advisory_lock; the server
 * whose session gets it bumps the epoch in the leader row (with its
 * advertised URL and a NOTIFY) and leads. Its session must end when the
 * server can no longer act, which PostgreSQL sees only for a process that
 * died: a stopped (SIGSTOP) server or one behind a frozen link keeps its
 * session, the kernel answering keepalives. So the lock session sets
 * idle_session_timeout = T, and the leader sends a heartbeat (a read of the
 * leader row) every T/5: a leader that stops, or whose link stops, loses
 * the session T after its last query, and with it the lock. A heartbeat
 * that finds another epoch, fails, or is not answered within 0.6 T drops
 * the session at once; it is never silently made again as if the lock had
 * come back (advisory locks stack: a second lock is never taken either).
 *
 * The watch session (only while not leading) LISTENs for the new leader's
 * NOTIFY and reads the leader row every second in case a notification is
 * lost. Every query is sent without blocking and given a deadline, so no
 * link that freezes can stop the heartbeat: the thread polls both sockets
 * and a pipe that wakes it for resign and stop. Connecting does block
 * (connect_timeout), but only while this server does not lead. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "postgres_int.h"

#define LOCK_SQL "SELECT pg_advisory_lock(1936487779, 1)" /* "sluc", 1 */
#define CHANNEL "sluice_leader"
#define RETRY_MS 250     /* between attempts to connect */
#define POLL_EVERY_MS 1000

typedef enum { Q_NONE, Q_CAMPAIGN, Q_BUMP, Q_BEAT, Q_LISTEN, Q_POLL } q_kind;

typedef struct session {
    PGconn *c;
    q_kind q;      /* the query in flight */
    PGresult *res; /* its result, kept until the query's end (a NULL result) */
    int64_t sent;  /* when it was sent (monotonic ms) */
    int64_t retry_at;
} session;

struct sl_elector {
    char *conninfo;
    char advertise[256];
    int64_t t_ms;
    void (*changed)(void *arg);
    void *arg;
    pthread_t thread;
    pthread_mutex_t mu;
    sl_elector_view view; /* under mu */
    int wake_r, wake_w;
    atomic_bool quit, resign;
    /* The thread's own. */
    session lock, watch;
    bool won;
    uint64_t epoch;
    int64_t next_beat, next_poll;
};

static void publish(sl_elector *e, void (*edit)(sl_elector_view *v, const void *arg),
                    const void *arg)
{
    pthread_mutex_lock(&e->mu);
    edit(&e->view, arg);
    pthread_mutex_unlock(&e->mu);
    if (e->changed)
        e->changed(e->arg);
}

static void set_problem(sl_elector_view *v, const void *arg)
{
    snprintf(v->problem, sizeof(v->problem), "%.255s", (const char *)arg);
}

static void problem(sl_elector *e, const char *what, PGconn *c)
{
    char msg[256];
    const char *m = c ? PQerrorMessage(c) : "";
    snprintf(msg, sizeof(msg), "%s%s%.*s", what, *m ? ": " : "", (int)strcspn(m, "\n"), m);
    publish(e, set_problem, msg);
}

static void drop(session *s, int64_t now)
{
    PQclear(s->res);
    s->res = NULL;
    PQfinish(s->c);
    s->c = NULL;
    s->q = Q_NONE;
    s->retry_at = now + RETRY_MS;
}

static int send_q(session *s, q_kind q, const char *sql, int n, const char *const *v, int64_t now)
{
    if (!PQsendQueryParams(s->c, sql, n, NULL, v, NULL, NULL, 0))
        return -1;
    s->q = q;
    s->sent = now;
    return 0;
}

/* ---- leading and not leading ------------------------------------------- */

static void set_lost(sl_elector_view *v, const void *arg)
{
    v->won = false;
    set_problem(v, arg);
}

/* Steps down: the session goes (and the lock with it), now. */
static void lose(sl_elector *e, const char *why, int64_t now)
{
    drop(&e->lock, now);
    e->lock.retry_at = now; /* campaign again at once: the lock is someone else's */
    if (!e->won)
        return;
    e->won = false;
    publish(e, set_lost, why);
}

typedef struct win_arg {
    uint64_t epoch;
    const char *addr;
    int64_t now;
} win_arg;

static void set_won(sl_elector_view *v, const void *arg)
{
    const win_arg *w = arg;
    v->won = true;
    v->epoch = w->epoch;
    snprintf(v->leader, sizeof(v->leader), "%s", w->addr);
    v->beat_ms = w->now;
    v->wins++;
    v->problem[0] = '\0';
}

static void set_beat(sl_elector_view *v, const void *arg)
{
    v->beat_ms = *(const int64_t *)arg;
}

typedef struct seen_arg {
    uint64_t epoch;
    const char *addr;
} seen_arg;

static void set_seen(sl_elector_view *v, const void *arg)
{
    const seen_arg *s = arg;
    v->epoch = s->epoch;
    snprintf(v->leader, sizeof(v->leader), "%s", s->addr);
    v->problem[0] = '\0';
}

/* ---- results ------------------------------------------------------------- */

static void on_lock_result(sl_elector *e, PGresult *r, int64_t now)
{
    bool ok = PQresultStatus(r) == PGRES_TUPLES_OK;
    q_kind q = e->lock.q;
    e->lock.q = Q_NONE;
    if (!ok) {
        char msg[256];
        const char *m = PQresultErrorMessage(r);
        snprintf(msg, sizeof(msg), "the lock session failed: %.*s", (int)strcspn(m, "\n"), m);
        lose(e, msg, now);
        return;
    }
    if (q == Q_CAMPAIGN) {
        /* The lock is ours: a new epoch, our address, and the doorbell. */
        const char *v[1] = {e->advertise};
        if (send_q(&e->lock, Q_BUMP,
                   "WITH b AS (UPDATE sluice_leader SET epoch = epoch + 1, addr = $1 WHERE id = 1"
                   " RETURNING epoch) SELECT epoch, pg_notify('" CHANNEL "', epoch::text) FROM b",
                   1, v, now) != 0)
            lose(e, "the lock session failed sending the epoch bump", now);
        return;
    }
    if (PQntuples(r) != 1) {
        lose(e, "the leader row is missing", now);
        return;
    }
    uint64_t epoch = strtoull(PQgetvalue(r, 0, 0), NULL, 10);
    /* The lead holds until T after the session's last query, which is
     * later than when that query was sent: the sending time is the safe
     * one to count the lead from (an answer read late, after a SIGSTOP,
     * proves nothing about the time in between). */
    int64_t sent = e->lock.sent;
    if (q == Q_BUMP) {
        e->won = true;
        e->epoch = epoch;
        e->next_beat = now + e->t_ms / 5;
        drop(&e->watch, now); /* a leader reads the row on its own session */
        win_arg w = {epoch, e->advertise, sent};
        publish(e, set_won, &w);
    } else if (q == Q_BEAT) {
        if (epoch != e->epoch) {
            char msg[128];
            snprintf(msg, sizeof(msg), "another server leads (epoch %" PRIu64 ")", epoch);
            lose(e, msg, now);
            return;
        }
        publish(e, set_beat, &sent);
    }
}

static void on_watch_result(sl_elector *e, PGresult *r, int64_t now)
{
    q_kind q = e->watch.q;
    e->watch.q = Q_NONE;
    ExecStatusType st = PQresultStatus(r);
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        problem(e, "the watch session failed", e->watch.c);
        drop(&e->watch, now);
        return;
    }
    if (q == Q_LISTEN) {
        e->next_poll = now; /* read the row once listening */
        return;
    }
    if (q == Q_POLL && PQntuples(r) == 1 && !e->won) {
        seen_arg s = {strtoull(PQgetvalue(r, 0, 0), NULL, 10), PQgetvalue(r, 0, 1)};
        publish(e, set_seen, &s);
    }
}

/* Reads what arrived on a session; -1 when it broke. */
static int consume(sl_elector *e, session *s, int64_t now)
{
    if (!PQconsumeInput(s->c))
        return -1;
    if (s == &e->watch) {
        PGnotify *n;
        while ((n = PQnotifies(s->c)) != NULL) {
            PQfreemem(n);
            e->next_poll = now; /* the doorbell: read the row now */
        }
    }
    /* A query's result is handled at its end (the NULL result), when the
     * session is free for the next query; never a blocking PQgetResult. */
    while (s->c && s->q != Q_NONE && !PQisBusy(s->c)) {
        PGresult *r = PQgetResult(s->c);
        if (r) {
            if (s->res)
                PQclear(r);
            else
                s->res = r;
            continue;
        }
        PGresult *res = s->res;
        s->res = NULL;
        if (!res)
            return -1;
        if (s == &e->lock)
            on_lock_result(e, res, now);
        else
            on_watch_result(e, res, now);
        PQclear(res);
    }
    return 0;
}

/* ---- connecting ---------------------------------------------------------- */

static PGconn *connect_session(sl_elector *e, bool lock, char *err, size_t cap)
{
    PGconn *c = sl__pg_connect(e->conninfo, err, cap);
    if (!c)
        return NULL;
    char sql[160];
    int64_t a = 0, b = 0, rec = 0;
    snprintf(sql, sizeof(sql),
             "SET idle_session_timeout = %" PRId64 "; SET statement_timeout = 0;"
             " SET idle_in_transaction_session_timeout = 0",
             e->t_ms);
    if ((lock && sl__pg_simple(c, sql, err, cap) != 0) ||
        sl__pg_query_int(c, "SELECT pg_backend_pid()", &a, err, cap) < 0 ||
        sl__pg_query_int(c, "SELECT pg_is_in_recovery()::int", &rec, err, cap) < 0 ||
        sl__pg_query_int(c, "SELECT pg_backend_pid()", &b, err, cap) < 0) {
        PQfinish(c);
        return NULL;
    }
    if (a != b || rec) {
        snprintf(err, cap, "%s",
                 rec ? "the server is in recovery (a standby): point the URL at the primary"
                     : sl__pg_pooler_message);
        PQfinish(c);
        return NULL;
    }
    return c;
}

static void ensure_sessions(sl_elector *e, int64_t now)
{
    char err[512];
    if (!e->lock.c && now >= e->lock.retry_at) {
        e->lock.c = connect_session(e, true, err, sizeof(err));
        if (!e->lock.c) {
            e->lock.retry_at = now + RETRY_MS;
            publish(e, set_problem, err);
        }
    }
    if (!e->won && !e->watch.c && now >= e->watch.retry_at) {
        e->watch.c = connect_session(e, false, err, sizeof(err));
        if (!e->watch.c) {
            e->watch.retry_at = now + RETRY_MS;
            publish(e, set_problem, err);
        } else if (send_q(&e->watch, Q_LISTEN, "LISTEN " CHANNEL, 0, NULL, now) != 0) {
            drop(&e->watch, now);
        }
    }
}

/* ---- the thread ---------------------------------------------------------- */

/* Sends what is due and gives up on what is late; the poll timeout. */
static int64_t tick(sl_elector *e, int64_t now)
{
    if (atomic_exchange(&e->resign, false) && e->won)
        lose(e, "resigned: a write found another epoch, or the server doubted its lead", now);
    ensure_sessions(e, now);
    int64_t wait = 200;
    if (e->lock.c && e->lock.q == Q_NONE && !e->won &&
        send_q(&e->lock, Q_CAMPAIGN, LOCK_SQL, 0, NULL, now) != 0)
        lose(e, "the lock session failed", now);
    if (e->won && e->lock.q == Q_NONE && now >= e->next_beat) {
        if (send_q(&e->lock, Q_BEAT, "SELECT epoch FROM sluice_leader WHERE id = 1", 0, NULL,
                   now) != 0)
            lose(e, "the heartbeat could not be sent", now);
        e->next_beat = now + e->t_ms / 5;
    }
    if (e->watch.c && e->watch.q == Q_NONE && now >= e->next_poll) {
        if (send_q(&e->watch, Q_POLL,
                   "SELECT epoch, coalesce(addr, '') FROM sluice_leader WHERE id = 1", 0, NULL,
                   now) != 0)
            drop(&e->watch, now);
        e->next_poll = now + POLL_EVERY_MS;
    }
    if (e->won && e->next_beat - now < wait)
        wait = e->next_beat - now;
    return wait < 1 ? 1 : wait;
}

/* What is late, checked after what arrived was read (a thread resumed
 * after a SIGSTOP finds its answer waiting, not late). */
static void check_late(sl_elector *e, int64_t now)
{
    /* A heartbeat or the epoch bump unanswered for 0.6 T: the lead is in
     * doubt, and the server has stopped answering already (the same age). */
    if ((e->lock.q == Q_BEAT || e->lock.q == Q_BUMP) && now - e->lock.sent >= e->t_ms * 6 / 10)
        lose(e, "the heartbeat went unanswered for 0.6 of the leader timeout", now);
    if (e->watch.c && e->watch.q != Q_NONE && now - e->watch.sent >= e->t_ms)
        drop(&e->watch, now); /* a frozen link: connect again */
}

static void *elector_main(void *arg)
{
    sl_elector *e = arg;
    pthread_setname_np(pthread_self(), "sluiced-elect");
    while (!atomic_load(&e->quit)) {
        int64_t now = sl__pg_now_ms();
        int64_t wait = tick(e, now);
        struct pollfd p[3] = {{e->wake_r, POLLIN, 0}, {-1, POLLIN, 0}, {-1, POLLIN, 0}};
        /* The lock session is watched between queries too: a session that
         * PostgreSQL ended (a restart, a reset link, an administrator) is
         * seen at once, not at the next heartbeat, while another server
         * may already be taking the lead. */
        if (e->lock.c)
            p[1].fd = PQsocket(e->lock.c);
        if (e->watch.c)
            p[2].fd = PQsocket(e->watch.c);
        if (poll(p, 3, (int)wait) < 0 && errno != EINTR)
            break;
        now = sl__pg_now_ms();
        if (p[0].revents) {
            char buf[64];
            while (read(e->wake_r, buf, sizeof(buf)) > 0)
                ;
        }
        if (p[1].revents && e->lock.c &&
            (consume(e, &e->lock, now) != 0 ||
             (e->lock.c && PQstatus(e->lock.c) != CONNECTION_OK)))
            lose(e, "the lock session broke", now);
        if (p[2].revents && e->watch.c && consume(e, &e->watch, now) != 0) {
            problem(e, "the watch session broke", e->watch.c);
            drop(&e->watch, now);
        }
        check_late(e, now);
    }
    /* A graceful stop: the session ends, and the next server's blocked
     * pg_advisory_lock returns within milliseconds. */
    PQfinish(e->lock.c);
    PQfinish(e->watch.c);
    return NULL;
}

static void wake(sl_elector *e)
{
    char b = 1;
    while (write(e->wake_w, &b, 1) < 0 && errno == EINTR)
        ;
}

int sl__pg_elector_start(sl_store *st, const sl_elector_opts *o, sl_elector **out, char *err,
                         size_t cap)
{
    sl_pg *pg = (sl_pg *)st;
    sl_elector *e = calloc(1, sizeof(*e));
    if (!e)
        abort();
    e->conninfo = strdup(pg->conninfo);
    if (!e->conninfo)
        abort();
    snprintf(e->advertise, sizeof(e->advertise), "%s", o->advertise ? o->advertise : "");
    e->t_ms = o->timeout_ms > 0 ? o->timeout_ms : 5000;
    pg->txn_timeout_ms = e->t_ms; /* set on the writer's session when it leads */
    e->changed = o->changed;
    e->arg = o->arg;
    pthread_mutex_init(&e->mu, NULL);
    int fds[2];
    char why[512];
    /* The checks that refuse to start (a pooler, a standby, a PostgreSQL
     * without idle_session_timeout) run here, where the error can stop the
     * server; the thread then keeps the session. */
    e->lock.c = connect_session(e, true, why, sizeof(why));
    if (!e->lock.c || pipe2(fds, O_NONBLOCK | O_CLOEXEC) != 0) {
        snprintf(err, cap, "shared mode cannot start on the store %s: %s", pg->label,
                 e->lock.c ? "no pipe" : why);
        PQfinish(e->lock.c);
        pthread_mutex_destroy(&e->mu);
        free(e->conninfo);
        free(e);
        return SL_STORE_EIO;
    }
    e->wake_r = fds[0];
    e->wake_w = fds[1];
    if (pthread_create(&e->thread, NULL, elector_main, e) != 0)
        abort();
    *out = e;
    return 0;
}

void sl_elector_get(sl_elector *e, sl_elector_view *out)
{
    pthread_mutex_lock(&e->mu);
    *out = e->view;
    pthread_mutex_unlock(&e->mu);
}

void sl_elector_resign(sl_elector *e)
{
    atomic_store(&e->resign, true);
    wake(e);
}

void sl_elector_stop(sl_elector *e)
{
    if (!e)
        return;
    atomic_store(&e->quit, true);
    wake(e);
    pthread_join(e->thread, NULL);
    close(e->wake_r);
    close(e->wake_w);
    pthread_mutex_destroy(&e->mu);
    free(e->conninfo);
    free(e);
}
