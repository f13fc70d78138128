/* role.c - this server's part when several share one store (shared mode,
 * docs/shared-mode.md): the one place where a request is served here or
 * relayed to the leader, and the moves between roles.
 *
 * The store's elector (a thread) campaigns; its view reaches the loop
 * through a pipe. Winning: the epoch goes into the store's fence, the
 * engine is rebuilt from the store (the same restore as a restart, which
 * gives every live claim at least a full lease from now: no client could
 * renew while nobody led), and only then is anything answered. Losing (the
 * lock session ended, a heartbeat found another epoch or went unanswered,
 * a commit was fenced): the store's connections are severed, every answer
 * held for a commit fails with 503 and Sluice-Retry (a relay sends it again
 * to the next leader), waits and streams end, and the engine is dropped:
 * nothing is answered from memory any more. A leader whose last heartbeat
 * is older than 0.6 T answers nothing new either (it holds requests) while
 * it does not know yet whether it still leads: CLOCK_MONOTONIC counts
 * through a SIGSTOP, so a leader that was stopped knows it at once. */
#define _GNU_SOURCE /* pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server.h"

static int64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

const char *sl_role_name(sl_role r)
{
    switch (r) {
    case SL_ROLE_LEADER: return "leader";
    case SL_ROLE_FOLLOWER: return "follower";
    case SL_ROLE_CAMPAIGNING: return "campaigning";
    default: return "single";
    }
}

bool sl_role_serves(const sl_server *srv)
{
    if (srv->role == SL_ROLE_SINGLE)
        return true;
    return srv->role == SL_ROLE_LEADER && !srv->fenced &&
           mono_ms() - srv->view.beat_ms < srv->conf->leader_timeout_ms * 6 / 10;
}

bool sl_role_leader_known(const sl_server *srv)
{
    if (srv->role == SL_ROLE_LEADER)
        return sl_role_serves(srv) && srv->leader_resolved;
    return srv->role == SL_ROLE_FOLLOWER && srv->leader_resolved;
}

void sl_role_headers(sl_server *srv, sl_http_req *req)
{
    if (srv->role == SL_ROLE_SINGLE || !srv->view.epoch)
        return;
    char epoch[24];
    snprintf(epoch, sizeof(epoch), "%" PRIu64, srv->view.epoch);
    if (srv->view.leader[0])
        sl_http_add_header(req, "Sluice-Leader", srv->view.leader);
    sl_http_add_header(req, "Sluice-Epoch", epoch);
}

void sl_role_metrics(const sl_server *srv, sl_buf *out)
{
    const sl_metrics *m = &srv->metrics;
    sl_buf_addf(out,
                "# HELP sluice_role This server's role (1 for the one it has): leader, follower,"
                " campaigning; a single server (SQLite) is the leader.\n"
                "# TYPE sluice_role gauge\n");
    static const sl_role roles[] = {SL_ROLE_LEADER, SL_ROLE_FOLLOWER, SL_ROLE_CAMPAIGNING};
    sl_role now = srv->role == SL_ROLE_SINGLE ? SL_ROLE_LEADER : srv->role;
    for (size_t i = 0; i < 3; i++)
        sl_buf_addf(out, "sluice_role{role=\"%s\"} %d\n", sl_role_name(roles[i]),
                    roles[i] == now);
    if (srv->role == SL_ROLE_SINGLE)
        return;
    int64_t age = srv->role == SL_ROLE_LEADER ? mono_ms() - srv->view.beat_ms : -1;
    sl_buf_addf(out,
                "# HELP sluice_leader_epoch The newest leader epoch this server has seen.\n"
                "# TYPE sluice_leader_epoch gauge\nsluice_leader_epoch %" PRIu64 "\n"
                "# HELP sluice_leads_total Times this server took the lead.\n"
                "# TYPE sluice_leads_total counter\nsluice_leads_total %" PRIu64 "\n"
                "# HELP sluice_step_downs_total Times this server gave the lead up.\n"
                "# TYPE sluice_step_downs_total counter\nsluice_step_downs_total %" PRIu64 "\n"
                "# HELP sluice_relay_retries_total Relayed requests sent again after the "
                "leader went away.\n"
                "# TYPE sluice_relay_retries_total counter\nsluice_relay_retries_total %" PRIu64
                "\n"
                "# HELP sluice_relay_refused_total Relayed requests answered 503 "
                "leader_unverified: the leader the database names was not proven (cluster.ca).\n"
                "# TYPE sluice_relay_refused_total counter\nsluice_relay_refused_total %" PRIu64
                "\n"
                "# HELP sluice_leader_heartbeat_age_seconds Age of the leader's last answered "
                "heartbeat on this server; -1 when it does not lead.\n"
                "# TYPE sluice_leader_heartbeat_age_seconds gauge\n"
                "sluice_leader_heartbeat_age_seconds %.3f\n",
                srv->view.epoch, m->leads, m->step_downs, m->relay_retries, m->relay_refused,
                age < 0 ? -1.0 : (double)age / 1000.0);
}

/* ---- where relays go ----------------------------------------------------- */

/* "http://host:port/..." or "https://..." into an address, once per
 * leader change (getaddrinfo may block on a name: not per request). Which
 * scheme the relay may use is relay.c's to decide. */
static void resolve_leader(sl_server *srv)
{
    srv->leader_resolved = false;
    const char *u = srv->view.leader;
    srv->leader_tls = strncmp(u, "https://", 8) == 0;
    if (!srv->leader_tls && strncmp(u, "http://", 7) != 0)
        return;
    u += srv->leader_tls ? 8 : 7;
    size_t n = strcspn(u, "/");
    if (n == 0 || n >= sizeof(srv->leader_host))
        return;
    memcpy(srv->leader_host, u, n);
    srv->leader_host[n] = '\0';
    char host[256];
    const char *port = srv->leader_tls ? "443" : "80";
    memcpy(host, u, n);
    host[n] = '\0';
    char *h = host;
    char *colon = strrchr(host, ':');
    if (host[0] == '[') {
        char *close = strchr(host, ']');
        if (!close)
            return;
        *close = '\0';
        h = host + 1;
        if (close[1] == ':')
            port = close + 2;
    } else if (colon) {
        *colon = '\0';
        port = colon + 1;
    }
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    snprintf(srv->leader_name, sizeof(srv->leader_name), "%s", h);
    if (getaddrinfo(h, port, &hints, &res) != 0 || !res) {
        sl_log(SL_LOG_WARN, "the leader's address %s does not resolve", srv->view.leader);
        return;
    }
    memcpy(&srv->leader_addr, res->ai_addr, res->ai_addrlen);
    srv->leader_addrlen = res->ai_addrlen;
    freeaddrinfo(res);
    srv->leader_resolved = true;
}

void sl_role_wait(sl_server *srv)
{
    if (!evtimer_pending(srv->hold_ev, NULL)) {
        struct timeval tv = {0, SL_RELAY_RETRY_MS * 1000};
        evtimer_add(srv->hold_ev, &tv);
    }
}

static void hold_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_server *srv = arg;
    sl_relay_kick(srv);
}

/* ---- taking and losing the lead -------------------------------------------- */

static void step_down(sl_server *srv, const char *why)
{
    sl_log(SL_LOG_WARN, "stepping down as leader (epoch %" PRIu64 "): %s", srv->lead_epoch,
           why && *why ? why : "the lead was lost");
    srv->metrics.step_downs++;
    srv->role = SL_ROLE_CAMPAIGNING;
    /* A commit blocked on a link that froze returns now, failed. */
    sl_store_sever(srv->store);
    sl_writer_stop(srv);
    srv->stepping_down = true;
    sl_server_end_answers(srv);
    srv->stepping_down = false;
    event_del(srv->timer_ev);
    event_del(srv->retry_ev);
    event_del(srv->prune_ev);
    srv->armed_at = INT64_MAX;
    srv->batch_gen = 0;
    srv->store_failed = false;
    srv->prune_due = false;
    srv->nwake = 0;
    sl_server_new_engine(srv);
    sl_store_set_epoch(srv->store, 0);
    srv->gave_up_epoch = srv->lead_epoch; /* never led again: a win brings a new epoch */
    srv->lead_epoch = 0;
    if (srv->fenced)
        sl_elector_resign(srv->elector);
    srv->fenced = false;
}

static void take_lead(sl_server *srv)
{
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sl_store_set_epoch(srv->store, srv->view.epoch);
    srv->lead_epoch = srv->view.epoch;
    sl_server_new_engine(srv);
    if (sl_server_rebuild(srv) != 0 || sl_writer_start(srv) != 0) {
        sl_log(SL_LOG_ERROR, "cannot take the lead (epoch %" PRIu64 "): giving it up",
               srv->view.epoch);
        srv->fenced = true;
        srv->role = SL_ROLE_LEADER;
        step_down(srv, "the rebuild failed");
        return;
    }
    srv->role = SL_ROLE_LEADER;
    srv->metrics.leads++;
    struct timeval prune = {SL_EVENT_PRUNE_EVERY_MS / 1000, 0};
    event_add(srv->prune_ev, &prune);
    sl_commit_rearm_timer(srv);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
    sl_log(SL_LOG_INFO, "leading (epoch %" PRIu64 ") after a rebuild of %ld ms", srv->lead_epoch,
           ms);
}

static void update(sl_server *srv)
{
    sl_elector_view v;
    sl_elector_get(srv->elector, &v);
    bool moved = v.epoch != srv->view.epoch || strcmp(v.leader, srv->view.leader) != 0;
    srv->view = v;
    if (srv->role == SL_ROLE_LEADER && (srv->fenced || !v.won || v.epoch != srv->lead_epoch))
        step_down(srv, srv->fenced ? "a write found a newer epoch" : v.problem);
    if (v.won && !srv->fenced && srv->role != SL_ROLE_LEADER && v.epoch != srv->gave_up_epoch)
        take_lead(srv);
    /* A leader row naming this server, which does not lead (it just lost
     * the lead, or cannot reach the database): nobody to relay to yet. */
    bool other = v.leader[0] && strcmp(v.leader, srv->advertise) != 0;
    if (srv->role != SL_ROLE_LEADER)
        srv->role = other && v.epoch && !v.won ? SL_ROLE_FOLLOWER : SL_ROLE_CAMPAIGNING;
    if (moved || !srv->leader_resolved)
        resolve_leader(srv);
    sl_relay_kick(srv);
}

static void role_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    char buf[64];
    while (read(fd, buf, sizeof(buf)) > 0)
        ;
    update(arg);
}

/* The elector's thread: only a byte into the pipe. */
static void changed(void *arg)
{
    sl_server *srv = arg;
    char b = 1;
    while (write(srv->role_pipe[1], &b, 1) < 0 && errno == EINTR)
        ;
}

void sl_role_fenced(sl_server *srv)
{
    if (srv->role != SL_ROLE_LEADER)
        return;
    srv->fenced = true;
    changed(srv); /* stepped down on the next turn, outside the commit's callback */
}

bool sl_role_route(sl_server *srv, sl_http_req *req, const char *path)
{
    if (sl_role_serves(srv))
        return true;
    if (sl_http_req_header(req, "Sluice-Forwarded")) {
        /* Relayed here by a server that took this one for the leader: it
         * tries the next, never a chain of relays. */
        sl_http_add_header(req, "Sluice-Retry", "leader");
        sl_http_add_header(req, "Retry-After", "1");
        static const char body[] =
            "{\"error\":{\"code\":\"not_leader\",\"message\":\"this server does not lead\"}}\n";
        sl_metrics_http(&srv->metrics, SL_ROUTE_RELAYED, sl_http_req_method(req), 503);
        sl_http_reply(req, 503, "application/json", body, sizeof(body) - 1);
        return false;
    }
    sl_relay_start(srv, req, path);
    return false;
}

int sl_role_start(sl_server *srv)
{
    if (srv->conf->advertise)
        snprintf(srv->advertise, sizeof(srv->advertise), "%s", srv->conf->advertise);
    else
        snprintf(srv->advertise, sizeof(srv->advertise), "%s://%s",
                 srv->conf->tls_cert ? "https" : "http", srv->conf->listen);
    srv->role_pipe[0] = srv->role_pipe[1] = -1;
    sl_elector_opts o = {srv->advertise, srv->conf->leader_timeout_ms, changed, srv};
    char err[600];
    if (pipe2(srv->role_pipe, O_NONBLOCK | O_CLOEXEC) != 0)
        return -1;
    srv->role_ev = event_new(srv->base, srv->role_pipe[0], EV_READ | EV_PERSIST, role_cb, srv);
    srv->hold_ev = evtimer_new(srv->base, hold_cb, srv);
    if (!srv->role_ev || !srv->hold_ev)
        abort();
    event_add(srv->role_ev, NULL);
    if (sl_store_elector_start(srv->store, &o, &srv->elector, err, sizeof(err)) != 0) {
        sl_log(SL_LOG_ERROR, "%s", err);
        return -1;
    }
    srv->role = srv->elector ? SL_ROLE_CAMPAIGNING : SL_ROLE_SINGLE;
    if (srv->elector)
        sl_log(SL_LOG_INFO, "shared mode: campaigning as %s (leader timeout %lld ms)",
               srv->advertise, (long long)srv->conf->leader_timeout_ms);
    return 0;
}

void sl_role_stop(sl_server *srv)
{
    /* The lock goes with the elector's session: the next server leads
     * within milliseconds of this. */
    sl_elector_stop(srv->elector);
    srv->elector = NULL;
    if (srv->role_ev)
        event_free(srv->role_ev);
    if (srv->hold_ev)
        event_free(srv->hold_ev);
    srv->role_ev = srv->hold_ev = NULL;
    for (int i = 0; i < 2; i++)
        if (srv->role_pipe[i] >= 0)
            close(srv->role_pipe[i]);
    srv->role_pipe[0] = srv->role_pipe[1] = -1;
}
