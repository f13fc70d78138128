/* server.c - sluiced's life: start (store, engine, configured semaphores,
 * listener), the event loop, and a clean stop on SIGTERM or SIGINT. */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <event2/event.h>

#include "server.h"
#include "tls_client.h"

int64_t sl_server_now(sl_server *srv)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    /* The wall clock may step back; engine time never does. */
    if (now < srv->last_now)
        now = srv->last_now;
    srv->last_now = now;
    return now;
}

void sl_server_touch(sl_server *srv)
{
    /* Active events run in the order they were activated, so the commit runs
     * after every request already read in this turn of the loop. */
    if (!srv->store_failed)
        event_active(srv->commit_ev, EV_TIMEOUT, 0);
}

static void commit_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_commit_run(arg);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_server *srv = arg;
    srv->armed_at = INT64_MAX;
    sl_engine_advance(srv->eng, sl_server_now(srv));
    sl_commit_run(srv);
}

static void prune_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_server *srv = arg;
    /* The writer prunes, in the next batch's transaction (commit.c). */
    srv->prune_due = true;
    srv->prune_before = sl_server_now(srv) - srv->conf->event_retention_ms;
    sl_server_touch(srv);
}

static void hup_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    sl_reload(arg);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_commit_retry(arg);
}

static void stop_cb(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    sl_server *srv = arg;
    if (srv->stopping)
        return;
    srv->stopping = true;
    sl_log(SL_LOG_INFO, "stopping on %s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
    event_base_loopexit(srv->base, NULL);
}

/* Splits "host:port" or "[v6]:port". */
static int parse_listen(const char *listen, char *host, size_t cap, unsigned *port)
{
    const char *colon = strrchr(listen, ':');
    if (!colon || colon == listen)
        return -1;
    const char *h = listen;
    size_t hl = (size_t)(colon - listen);
    if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
        h++;
        hl -= 2;
    }
    if (hl == 0 || hl >= cap)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    char *end;
    unsigned long p = strtoul(colon + 1, &end, 10);
    if (*end || p == 0 || p > 65535)
        return -1;
    *port = (unsigned)p;
    return 0;
}

/* The HTTP layer's own answers (malformed requests, over the limits, over
 * the connection cap) count in the metrics like the routes' answers. */
static void own_answer(void *ud, int status)
{
    sl_server *srv = ud;
    /* The request may not have been read far enough to know its method. */
    sl_metrics_http(&srv->metrics, SL_ROUTE_OTHER, SL_HTTP_OTHER, status);
}

/* Connections the layer closed to keep its slots (docs/security.md). */
static void refused(void *ud, sl_http_refusal why)
{
    sl_server *srv = ud;
    srv->metrics.conns_refused[why]++;
}

sl_http_opts sl_server_http_opts(sl_server *srv)
{
    const sl_conf *conf = srv->conf;
    return (sl_http_opts){
        .max_headers = conf->max_headers,
        .max_body = conf->max_body,
        .max_connections = conf->max_connections,
        .max_per_client = conf->max_connections_per_client,
        /* Without tokens no client can show one: nothing is kept. */
        .reserved = conf->ntokens ? conf->max_connections / 10 : 0,
        .idle_ms = conf->idle_timeout_ms,
        .header_ms = conf->header_timeout_ms,
        .handler = sl_routes_handle,
        .own_answer = own_answer,
        .admit = sl_auth_admit,
        .refused = refused,
        .ud = srv,
    };
}

static int open_http(sl_server *srv)
{
    char host[256];
    unsigned port;
    if (parse_listen(srv->conf->listen, host, sizeof(host), &port) != 0) {
        sl_log(SL_LOG_ERROR, "listen address \"%s\" is not HOST:PORT (e.g. 127.0.0.1:7700)",
               srv->conf->listen);
        return -1;
    }
    sl_http_opts o = sl_server_http_opts(srv);
    char err[256];
    if (sl_http_new(srv->base, &o, &srv->http) == 0 && sl_server_tls(srv, false) != 0)
        return -1; /* it said why */
    if (!srv->http || sl_http_listen(srv->http, host, port, err, sizeof(err)) != 0) {
        sl_log(SL_LOG_ERROR, "cannot listen on %s: %s (is another server using the port?)",
               srv->conf->listen, srv->http ? err : "out of memory");
        return -1;
    }
    if (!srv->conf->plain_listen)
        return 0;
    /* The configuration's check holds it to loopback and HOST:PORT. */
    snprintf(err, sizeof(err), "not HOST:PORT");
    if (parse_listen(srv->conf->plain_listen, host, sizeof(host), &port) != 0 ||
        sl_http_listen_plain(srv->http, host, port, err, sizeof(err)) != 0) {
        sl_log(SL_LOG_ERROR, "cannot listen on %s (plain_listen): %s", srv->conf->plain_listen,
               err);
        return -1;
    }
    return 0;
}

static sl_engine *engine_for(const sl_conf *conf)
{
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    uint64_t key[2];
    if (getrandom(key, sizeof(key), 0) == (ssize_t)sizeof(key)) {
        opts.hash_key[0] = key[0];
        opts.hash_key[1] = key[1];
    }
    opts.default_lease_ms = conf->default_lease_ms;
    opts.backdate_skew_ms = conf->backdate_skew_ms;
    opts.ended_retention_ms = conf->claim_retention_ms;
    opts.claims_max = conf->max_claims;
    /* The API's configurations are bounded by limits.max_semaphores
     * (quota.c); the file's always apply (F5). */
    opts.configs_max = SIZE_MAX;
    sl_engine *eng = NULL;
    sl_engine_new(&opts, &eng);
    return eng;
}

static bool in_file(const sl_conf *conf, const char *name)
{
    for (size_t i = 0; i < conf->nsemaphores; i++)
        if (strcmp(conf->semaphores[i].name, name) == 0)
            return true;
    return false;
}

/* Semaphores the file created and no longer lists are removed when unused.
 * Names are collected first: the engine's table must not change while it is
 * iterated. */
static void remove_dropped_semaphores(sl_server *srv, int64_t now)
{
    size_t cap = 0, n = 0;
    char **gone = NULL;
    for (const sl_config *cfg = sl_config_next(srv->eng, NULL); cfg;
         cfg = sl_config_next(srv->eng, cfg)) {
        sl_config_view v;
        sl_config_get(cfg, &v);
        bool found = false;
        sl_config_source src = SL_SOURCE_API;
        sl_store_config_source(srv->store, v.name, &found, &src);
        if (!found || src != SL_SOURCE_FILE || in_file(srv->conf, v.name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 8;
            gone = realloc(gone, cap * sizeof(*gone));
            if (!gone)
                abort();
        }
        gone[n] = strdup(v.name);
        if (!gone[n])
            abort();
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        sl_error err;
        if (sl_sem_delete(srv->eng, gone[i], now, &err) != 0)
            sl_log(SL_LOG_WARN, "semaphore %s is no longer in the file but is in use; kept",
                   gone[i]);
        else
            sl_log(SL_LOG_INFO, "semaphore %s is no longer in the file; removed", gone[i]);
        free(gone[i]);
    }
    free(gone);
}

/* The configuration file's semaphores, applied at start. The rule (see
 * docs/configuration.md): the file manages the semaphores it created; one
 * changed through the API belongs to the API from then on, and the file never
 * undoes that; one the file no longer lists is removed if unused. */
void sl_server_apply_file_semaphores(sl_server *srv, int64_t now)
{
    sl_store_set_source(srv->store, SL_SOURCE_FILE);
    for (size_t i = 0; i < srv->conf->nsemaphores; i++) {
        const sl_conf_sem *s = &srv->conf->semaphores[i];
        bool found = false;
        sl_config_source src = SL_SOURCE_FILE;
        sl_store_config_source(srv->store, s->name, &found, &src);
        if (found && src == SL_SOURCE_API) {
            sl_log(SL_LOG_WARN,
                   "semaphore %s was last set through the API; the file's values are not "
                   "applied (DELETE it through the API to let the file manage it again)",
                   s->name);
            continue;
        }
        sl_error err;
        /* The rules' weights point into srv->conf, alive through the call;
         * the engine keeps a copy of its own. */
        sl_sem_opts o = {.limit = s->limit,
                         .strategy = s->strategy,
                         .lease_ms = s->lease_ms,
                         .overtake_ms = s->overtake_ms,
                         .rules = s->rules};
        if (sl_sem_configure(srv->eng, s->name, &o, now, &err) != 0)
            sl_log(SL_LOG_ERROR, "semaphore %s from the file: %s%s%s", s->name, err.field,
                   *err.field ? ": " : "", err.what);
    }
    remove_dropped_semaphores(srv, now);
}

void sl_server_new_engine(sl_server *srv)
{
    sl_hist_stop(srv);
    sl_engine_free(srv->eng);
    srv->eng = engine_for(srv->conf);
}

static int open_store(sl_server *srv)
{
    char err[1024];
    sl_store_url_label(srv->conf->store, srv->store_label, sizeof(srv->store_label));
    sl_store_opts so = {srv->conf->store, srv->conf->durability};
    if (sl_store_open(&so, &srv->store, err, sizeof(err)) != 0) {
        sl_log(SL_LOG_ERROR, "cannot open the store %s: %s", srv->store_label, err);
        return -1;
    }
    /* No read of the log holds the loop longer than this many events
     * (F2): a reader that skips most of them gets a partial page. */
    sl_store_set_scan_budget(srv->store, srv->conf->max_event_scan);
    return 0;
}

/* Engine time goes on from the last event saved, if the clock went back
 * while the server was down, or another leader's clock was ahead (the
 * event log is read by time). */
static void clock_floor(sl_server *srv)
{
    int64_t floor = sl_store_last_time(srv->store);
    if (floor > srv->last_now)
        srv->last_now = floor;
}

int sl_server_rebuild(sl_server *srv)
{
    clock_floor(srv);
    int64_t now = sl_server_now(srv);
    sl_store_load_stats st;
    memset(&st, 0, sizeof(st));
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (sl_store_load(srv->store, srv->eng, now, &st) != 0) {
        sl_log(SL_LOG_ERROR, "cannot load the store %s: %s", srv->store_label,
               sl_store_error(srv->store));
        return -1;
    }
    clock_floor(srv); /* a shared store's, as of the load */
    now = sl_server_now(srv);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    long ms = (long)((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
    sl_log(SL_LOG_INFO, "store %s loaded in %ld ms: %zu claims (%zu held, %zu pending), "
                        "%zu semaphore configurations",
           srv->store_label, ms, st.claims, st.held, st.pending, st.configs);
    if (st.torn_bytes)
        sl_log(SL_LOG_WARN, "store %s: its log file ended in a write a crash cut short: the "
                            "%" PRIu64 " bytes after its last whole record were cut off",
               srv->store_label, st.torn_bytes);
    sl_server_apply_file_semaphores(srv, now);
    /* The file's semaphores are present at the start: their rate buckets
     * start empty, as restored ones do (docs/engine.md, "Rate limits"). */
    sl_engine_start_done(srv->eng);
    /* What restoring and the file changed is committed before anyone asks. */
    sl_changes ch;
    sl_engine_changes(srv->eng, &ch);
    if (sl_store_write(srv->store, srv->eng, &ch) != 0) {
        sl_log(SL_LOG_ERROR, "cannot write the store %s: %s", srv->store_label,
               sl_store_error(srv->store));
        return -1;
    }
    srv->seq_done = ch.next_seq;
    srv->seqs_arrival = ch.next_arrival;
    sl_engine_changes_clear(srv->eng);
    sl_store_set_source(srv->store, SL_SOURCE_API);
    sl_hist_rebuild(srv);
    return 0;
}

/* epoll with libevent's change list: a connection's read and write
 * interest is switched on and off several times while one request is
 * handled (reading, answering, flushing); the change list sends only the
 * net change to the kernel at the next epoll_wait, instead of an
 * epoll_ctl per switch (measured: 10 per claim+release cycle without it). */
static struct event_base *new_base(void)
{
    struct event_config *cfg = event_config_new();
    if (!cfg)
        return NULL;
    event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}

static struct event *new_event(sl_server *srv, evutil_socket_t fd, short what,
                               event_callback_fn cb)
{
    struct event *ev = event_new(srv->base, fd, what, cb, srv);
    if (!ev)
        abort();
    return ev;
}

int sl_server_init(sl_server *srv, sl_conf *conf)
{
    memset(srv, 0, sizeof(*srv));
    srv->conf = conf;
    srv->armed_at = INT64_MAX;
    sl_log_set_level(conf->log_level);
    srv->base = new_base();
    if (!srv->base)
        return -1;
    srv->role_pipe[0] = srv->role_pipe[1] = -1;
    srv->eng = engine_for(conf);
    srv->commit_ev = new_event(srv, -1, 0, commit_cb);
    srv->timer_ev = new_event(srv, -1, 0, timer_cb);
    srv->retry_ev = new_event(srv, -1, 0, retry_cb);
    srv->prune_ev = new_event(srv, -1, EV_PERSIST, prune_cb);
    srv->sigint_ev = new_event(srv, SIGINT, EV_SIGNAL, stop_cb);
    srv->sigterm_ev = new_event(srv, SIGTERM, EV_SIGNAL, stop_cb);
    srv->sighup_ev = new_event(srv, SIGHUP, EV_SIGNAL | EV_PERSIST, hup_cb);
    srv->gen_next = 1;
    srv->batch = sl_store_batch_new();
    if (!srv->batch)
        abort();
    sl_hist_start(srv);
    if (open_store(srv) != 0 || sl_role_start(srv) != 0)
        return -1;
    /* A shared store's server loads only once it leads (role.c). */
    if (srv->role == SL_ROLE_SINGLE &&
        (sl_server_rebuild(srv) != 0 || sl_writer_start(srv) != 0))
        return -1;
    if (sl_audit_open(srv) != 0)
        return -1; /* a path that cannot be written is a mistake to mend now */
    if (open_http(srv) != 0)
        return -1;
    struct timeval prune = {SL_EVENT_PRUNE_EVERY_MS / 1000, 0};
    if (srv->role == SL_ROLE_SINGLE)
        event_add(srv->prune_ev, &prune);
    event_add(srv->sigint_ev, NULL);
    event_add(srv->sigterm_ev, NULL);
    event_add(srv->sighup_ev, NULL);
    signal(SIGPIPE, SIG_IGN);
    /* A file size limit (ulimit -f) reached by the log file fails the
     * append (EFBIG: answered as a full disk is) instead of killing us. */
    signal(SIGXFSZ, SIG_IGN);
    sl_commit_rearm_timer(srv);
    return 0;
}

int sl_server_run(sl_server *srv)
{
    sl_log(SL_LOG_INFO, "sluiced %s listening on %s://%s, store %s (durability %s)%s",
           SL_VERSION, srv->conf->tls_cert ? "https" : "http", srv->conf->listen, srv->store_label,
           srv->conf->durability == SL_DURABILITY_FULL ? "full" : "normal",
           srv->role == SL_ROLE_SINGLE ? "" : ", shared mode");
    if (srv->conf->plain_listen)
        sl_log(SL_LOG_INFO, "plain HTTP also on http://%s", srv->conf->plain_listen);
    int rc = event_base_dispatch(srv->base);
    /* Whatever the last turns changed is committed before the process ends. */
    sl_commit_drain(srv);
    sl_log(SL_LOG_INFO, "sluiced stopped");
    return rc < 0 ? -1 : 0;
}

void sl_server_end_answers(sl_server *srv)
{
    sl_reply_flush(srv, 0, false); /* held answers may be waits not yet started */
    sl_waits_free_all(srv);
    sl_streams_free_all(srv);
    sl_reply_flush(srv, 0, false); /* answers the waits and streams gave at their end */
}

void sl_server_free(sl_server *srv)
{
    sl_writer_stop(srv); /* first: it may be writing with the store */
    /* A leader handing over applies its log first: the next one's rebuild
     * then has nothing left to apply (it would otherwise, the fence refusing
     * this server's apply once the lead has gone). */
    if (srv->role == SL_ROLE_LEADER && sl_store_apply(srv->store) != 0)
        sl_log(SL_LOG_WARN, "%s", sl_store_error(srv->store));
    sl_role_stop(srv);   /* then the lead goes: every commit of this server is done */
    sl_relay_free_all(srv);
    /* Shared mode: another server leads next. A wait already answering is
     * cut short and the rest told to ask again, so that a relaying follower
     * sends them to the next leader (a 200 whose body is an error would be
     * taken for the answer). */
    srv->stepping_down = srv->role != SL_ROLE_SINGLE;
    sl_server_end_answers(srv);
    if (srv->http)
        sl_http_free(srv->http);
    sl_tls_client_free(srv->peer_tls);
    sl_reply_free_scratch();
    struct event *evs[] = {srv->commit_ev, srv->timer_ev, srv->retry_ev,
                           srv->prune_ev,  srv->sigint_ev, srv->sigterm_ev, srv->sighup_ev};
    for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
        if (evs[i])
            event_free(evs[i]);
    if (srv->store)
        sl_store_close(srv->store);
    sl_store_batch_free(srv->batch);
    sl_hist_free(srv);
    sl_audit_close(srv);
    sl_quota_free_all(srv);
    free(srv->wake_ids);
    free(srv->wake_done);
    sl_engine_free(srv->eng);
    if (srv->base)
        event_base_free(srv->base);
}
