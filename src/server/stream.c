/* stream.c - GET /v1/events/stream: the event log as server-sent events.
 *
 * Each event goes out as "id: SEQ\ndata: {json}\n\n" (no `event:` line, so a
 * browser's EventSource.onmessage sees every type). A stream first catches
 * up from `since` (or Last-Event-ID) a page at a time, sending the next page
 * only when the previous one has left the socket; then it is fed after each
 * commit. A reader that falls SL_STREAM_BACKLOG_MAX bytes behind is cut off
 * (it reconnects with Last-Event-ID and loses nothing), and a comment line
 * every SL_STREAM_HEARTBEAT_MS keeps proxies from closing an idle stream and
 * lets the server notice a client that has gone. */
#include <stdlib.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>

#include "server.h"

#define STREAM_PAGE 500

struct sl_stream {
    sl_server *srv;
    struct evhttp_request *req;
    uint64_t last; /* the last seq sent */
    struct event *heartbeat;
    sl_stream *prev, *next;
    bool started, gone, catching_up;
};

typedef struct fill_ctx {
    struct evbuffer *buf;
    uint64_t last;
    size_t count;
} fill_ctx;

static int add_event(void *ud, const sl_store_event *ev)
{
    fill_ctx *f = ud;
    json_t *o = sl_json_event(ev);
    char *text = json_dumps(o, JSON_COMPACT);
    evbuffer_add_printf(f->buf, "id: %llu\ndata: %s\n\n", (unsigned long long)ev->seq, text);
    free(text);
    json_decref(o);
    f->last = ev->seq;
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
}

/* Forgets the stream; the caller then ends (or has lost) the reply. */
static void finish(sl_stream *s)
{
    unlink_stream(s);
    if (!s->gone)
        sl_conn_on_gone(s->srv, s->req, NULL, NULL);
    event_free(s->heartbeat);
    free(s);
}

static void cut(sl_stream *s)
{
    struct evhttp_request *req = s->req;
    finish(s);
    evhttp_send_reply_end(req);
}

static size_t unsent(sl_stream *s)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(s->req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void pump(sl_stream *s);

static void page_sent(struct evhttp_connection *evcon, void *arg)
{
    (void)evcon;
    sl_stream *s = arg;
    s->catching_up = false;
    pump(s);
}

/* Sends what the log has after s->last, one page; if the page was full,
 * the next one follows when this one has been written out. */
static void pump(sl_stream *s)
{
    if (s->catching_up)
        return;
    if (unsent(s) > SL_STREAM_BACKLOG_MAX) {
        sl_log(SL_LOG_WARN, "an event stream fell %zu bytes behind; cut off", unsent(s));
        cut(s);
        return;
    }
    fill_ctx f = {evbuffer_new(), s->last, 0};
    uint64_t next = 0;
    if (sl_store_events(s->srv->store, s->last, NULL, STREAM_PAGE, add_event, &f, &next) != 0) {
        evbuffer_free(f.buf);
        cut(s);
        return;
    }
    s->last = f.last;
    if (f.count == STREAM_PAGE) {
        s->catching_up = true;
        evhttp_send_reply_chunk_with_cb(s->req, f.buf, page_sent, s);
    } else if (f.count > 0) {
        evhttp_send_reply_chunk(s->req, f.buf);
    }
    evbuffer_free(f.buf);
}

static void heartbeat_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_stream *s = arg;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, ": keep-alive\n\n", 14);
    evhttp_send_reply_chunk(s->req, b);
    evbuffer_free(b);
}

static void gone_cb(void *arg)
{
    sl_stream *s = arg;
    s->gone = true;
    if (s->started)
        cut(s);
}

static void start(void *arg, bool committed)
{
    sl_stream *s = arg;
    if (s->gone || !committed) {
        cut(s);
        return;
    }
    struct evkeyvalq *h = evhttp_request_get_output_headers(s->req);
    evhttp_add_header(h, "Content-Type", "text/event-stream");
    evhttp_add_header(h, "Cache-Control", "no-store");
    evhttp_add_header(h, "X-Accel-Buffering", "no");
    sl_metrics_http(&s->srv->metrics, SL_ROUTE_EVENTS_STREAM, 200);
    evhttp_send_reply_start(s->req, 200, "OK");
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
    sl_stream *s = calloc(1, sizeof(*s));
    if (!s)
        abort();
    s->srv = srv;
    s->req = c->req;
    s->last = since;
    s->heartbeat = event_new(srv->base, -1, EV_PERSIST, heartbeat_cb, s);
    s->next = srv->streams;
    if (srv->streams)
        srv->streams->prev = s;
    srv->streams = s;
    srv->nstreams++;
    sl_conn_on_gone(srv, c->req, gone_cb, s);
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
        if (s->started)
            cut(s);
        else
            finish(s);
    }
}
