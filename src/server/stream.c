/* stream.c - GET /v1/events/stream: the event log as server-sent events.
 *
 * Each event goes out as "id: SEQ\ndata: {json}\n\n" (no `event:` line, so a
 * browser's EventSource.onmessage sees every type). A stream first catches
 * up from `since` (or Last-Event-ID) a page at a time, one page per loop
 * turn, sending the next page only when the previous one has left the
 * socket; then it is fed after each commit. A page's read examines at most
 * limits.max_event_scan events (F2): a reader that may see few of them
 * (a limited token) goes through the log a bounded step per turn, and the
 * other connections are served between the steps. A reader that falls SL_STREAM_BACKLOG_MAX bytes behind is cut off
 * (it reconnects with Last-Event-ID and loses nothing), and a comment line
 * every SL_STREAM_HEARTBEAT_MS keeps proxies from closing an idle stream. */
#include <stdlib.h>

#include "server.h"

#define STREAM_PAGE 500

struct sl_stream {
    sl_server *srv;
    sl_http_req *req;
    uint64_t last; /* the last seq sent, or passed over as not for this reader */
    sl_event_scope *scope;
    const sl_conf_token *token; /* admitted with (NULL: no tokens); a reload moves it */
    sl_quota_use *use;          /* its token's streams count it (NULL: none) */
    struct event *heartbeat;
    struct event *resume; /* the next page, on the next loop turn */
    sl_stream *prev, *next;
    bool started, gone, catching_up;
    bool pumping; /* inside pump: a gone client is cut there */
    bool revoked; /* its token was removed before it started: 401 then */
};

typedef struct fill_ctx {
    sl_buf *buf;
    uint64_t last;
    size_t count;
    const sl_event_scope *scope;
} fill_ctx;

static int add_event(void *ud, const sl_store_event *ev)
{
    fill_ctx *f = ud;
    f->last = ev->seq;
    if (!sl_event_scope_allows(f->scope, ev))
        return SL_STORE_EVENT_SKIP;
    json_t *o = sl_json_event(ev);
    sl_buf_addf(f->buf, "id: %llu\ndata: ", (unsigned long long)ev->seq);
    sl_json_to_buffer(o, f->buf); /* one line, its newline included */
    sl_buf_add(f->buf, "\n", 1);
    json_decref(o);
    f->count++;
    return 0;
}

static void unlink_stream(sl_stream *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        s->srv->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    s->srv->nstreams--;
    sl_quota_count(s->use, SL_QUOTA_STREAMS, -1);
}

/* Forgets the stream; the caller then ends (or has lost) the reply. */
static void finish(sl_stream *s)
{
    unlink_stream(s);
    sl_http_req_on_gone(s->req, NULL, NULL);
    sl_http_on_drained(s->req, NULL, NULL);
    event_free(s->heartbeat);
    event_free(s->resume);
    sl_event_scope_free(s->scope);
    free(s);
}

/* Ends the stream's answer (or, before it started, answers 503). */
static void cut(sl_stream *s)
{
    sl_http_req *req = s->req;
    bool started = s->started;
    finish(s);
    if (started) {
        sl_http_stream_end(req);
        return;
    }
    static const char body[] = "{\"error\":{\"code\":\"unavailable\",\"message\":\"the store "
                               "could not commit; retry once /healthz answers 200\"}}\n";
    sl_http_reply(req, 503, "application/json", body, sizeof(body) - 1);
}

static void pump(sl_stream *s);

static void page_sent(void *arg)
{
    sl_stream *s = arg;
    s->catching_up = false;
    pump(s);
}

/* One page of what the log has after s->last; 1 when more may follow (the
 * page was full, or its read stopped at the scan budget), 0 when not, -1
 * when the stream must end. */
static int send_page(sl_stream *s)
{
    size_t unsent = sl_http_unsent(s->req);
    if (unsent > SL_STREAM_BACKLOG_MAX) {
        sl_log(SL_LOG_WARN, "an event stream fell %zu bytes behind; cut off", unsent);
        return -1;
    }
    fill_ctx f = {sl_reply_scratch(), s->last, 0, s->scope};
    uint64_t next = 0;
    if (sl_store_events(s->srv->store, s->last, NULL, STREAM_PAGE, add_event, &f, &next) != 0)
        return -1;
    s->last = f.last;
    if (f.count > 0)
        sl_http_stream_chunk(s->req, sl_buf_data(f.buf), sl_buf_size(f.buf));
    return f.count == STREAM_PAGE || sl_store_read_partial(s->srv->store);
}

static void resume_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    page_sent(arg);
}

/* Sends a page of what the log has after s->last; the next page follows
 * once the socket has taken this one, and never in the same loop turn, so
 * that catching up holds the loop one page's read at a time. Writing may
 * find the client gone: gone_cb then leaves the cut to this function
 * (s->pumping), which still holds s. */
static void pump(sl_stream *s)
{
    if (s->catching_up || s->pumping)
        return;
    s->pumping = true;
    int more = s->gone ? 0 : send_page(s);
    if (more == 1 && !s->gone) {
        s->catching_up = true;
        if (sl_http_unsent(s->req) > 0) {
            sl_http_on_drained(s->req, page_sent, s);
        } else {
            struct timeval now = {0, 0};
            evtimer_add(s->resume, &now);
        }
    }
    s->pumping = false;
    if (more < 0 || s->gone)
        cut(s);
}

static void heartbeat_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_stream *s = arg;
    sl_http_stream_chunk(s->req, ": keep-alive\n\n", 14); /* may end s (gone_cb) */
}

static void gone_cb(void *arg)
{
    sl_stream *s = arg;
    s->gone = true;
    if (s->started && !s->pumping)
        cut(s);
}

static void start(void *arg, bool committed)
{
    sl_stream *s = arg;
    if (s->revoked && !s->gone) {
        sl_http_req *req = s->req;
        finish(s);
        static const char body[] = "{\"error\":{\"code\":\"unauthorized\",\"message\":\"the "
                                   "token is not one this server knows\"}}\n";
        sl_http_add_header(req, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
        sl_audit_answer(s->srv, req, 401, body, sizeof(body) - 1, NULL);
        sl_http_reply(req, 401, "application/json", body, sizeof(body) - 1);
        return;
    }
    if (s->gone || !committed) {
        cut(s); /* a 503, dropped when the client has gone */
        return;
    }
    sl_http_add_header(s->req, "Cache-Control", "no-store");
    sl_http_add_header(s->req, "X-Accel-Buffering", "no");
    sl_metrics_http(&s->srv->metrics, SL_ROUTE_EVENTS_STREAM, sl_http_req_method(s->req),
                    200);
    sl_http_stream_start(s->req, 200, "text/event-stream");
    s->started = true;
    struct timeval hb = {SL_STREAM_HEARTBEAT_MS / 1000, 0};
    event_add(s->heartbeat, &hb);
    pump(s);
}

void sl_stream_open(sl_ctx *c, uint64_t since)
{
    sl_server *srv = c->srv;
    if (srv->nstreams >= srv->conf->max_streams) {
        sl_reply_error(c, 503, "unavailable",
                       "%zu event streams are open, the server's limit; poll GET /v1/events "
                       "with wait instead, or retry later",
                       srv->nstreams);
        return;
    }
    if (!sl_quota_stream(c))
        return;
    sl_stream *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->srv = srv;
    s->req = c->req;
    s->last = since;
    s->scope = sl_auth_event_scope(c);
    s->token = c->auth.token;
    s->heartbeat = event_new(srv->base, -1, EV_PERSIST, heartbeat_cb, s);
    s->resume = evtimer_new(srv->base, resume_cb, s);
    s->next = srv->streams;
    if (srv->streams)
        srv->streams->prev = s;
    srv->streams = s;
    srv->nstreams++;
    s->use = sl_quota_use_of(srv, c->auth.token);
    sl_quota_count(s->use, SL_QUOTA_STREAMS, +1);
    sl_http_req_on_gone(c->req, gone_cb, s);
    sl_reply_after_commit(srv, start, s);
}

void sl_streams_push(sl_server *srv)
{
    sl_stream *s = srv->streams;
    while (s) {
        sl_stream *next = s->next;
        if (s->started)
            pump(s);
        s = next;
    }
}

void sl_streams_free_all(sl_server *srv)
{
    while (srv->streams) {
        sl_stream *s = srv->streams;
        cut(s);
    }
}

/* F9: a stream of a token that a reload removed ends (one not started yet
 * is answered 401 when it would start); the others are filtered from now
 * on by their token's new prefixes, so a narrowed token's stream stops
 * showing what it may no longer see. */
void sl_streams_reauth(sl_server *srv, const sl_conf *old)
{
    sl_stream *s = srv->streams;
    while (s) {
        sl_stream *next = s->next;
        if (sl_auth_token_again(old, srv->conf, &s->token) != 0) {
            s->token = NULL;
            s->revoked = true;
            if (s->started)
                cut(s);
        } else {
            sl_event_scope_free(s->scope);
            s->scope = sl_auth_token_scope(s->token);
        }
        s = next;
    }
}
