/* conns.c - open connections: counted against the limit, and watched for
 * clients that go away.
 *
 * evhttp in libevent 2.1 has no connection limit and no per-connection
 * user data, so each connection seen in a request is recorded here (a
 * tsearch tree keyed by its evhttp_connection) with a close callback that
 * forgets it. A connection over the limit is answered 503 and closed. A
 * long poll registers a "gone" callback: when the client hangs up, the wait
 * learns it at once (the wait sends its headers first; see waits.c). */
#define _GNU_SOURCE /* tdestroy */
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <search.h>
#include <stdlib.h>
#include <sys/socket.h>

#include <event2/bufferevent.h>
#include <event2/http.h>

#include "server.h"

typedef struct sl_conn {
    struct evhttp_connection *evcon;
    sl_server *srv;
    sl_conn_gone_fn gone;
    void *gone_arg;
} sl_conn;

static int conn_cmp(const void *a, const void *b)
{
    const struct evhttp_connection *x = ((const sl_conn *)a)->evcon;
    const struct evhttp_connection *y = ((const sl_conn *)b)->evcon;
    return x < y ? -1 : x > y ? 1 : 0;
}

static sl_conn *conn_find(sl_server *srv, struct evhttp_connection *evcon)
{
    sl_conn key = {.evcon = evcon};
    void *found = tfind(&key, &srv->conns, conn_cmp);
    return found ? *(sl_conn **)found : NULL;
}

static void on_close(struct evhttp_connection *evcon, void *arg)
{
    sl_conn *conn = arg;
    sl_server *srv = conn->srv;
    tdelete(conn, &srv->conns, conn_cmp);
    srv->nconns--;
    sl_conn_gone_fn gone = conn->gone;
    void *gone_arg = conn->gone_arg;
    free(conn);
    (void)evcon;
    if (gone)
        gone(gone_arg);
}

/* A long poll writes its headers at once and its body at the grant. With
 * Nagle's algorithm on, that body waits for the client to acknowledge the
 * headers, which a delayed ACK holds back up to 40 ms: every handoff would
 * take 40 ms. Answers here are whole messages, so small writes go at once. */
static void no_delay(struct evhttp_connection *evcon)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool sl_conn_admit(sl_server *srv, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    if (!evcon || conn_find(srv, evcon))
        return true;
    sl_conn *conn = calloc(1, sizeof(*conn));
    if (!conn)
        abort();
    conn->evcon = evcon;
    conn->srv = srv;
    if (!tsearch(conn, &srv->conns, conn_cmp))
        abort();
    srv->nconns++;
    evhttp_connection_set_closecb(evcon, on_close, conn);
    no_delay(evcon);
    return srv->nconns <= srv->conf->max_connections;
}

void sl_conn_on_gone(sl_server *srv, struct evhttp_request *req, sl_conn_gone_fn fn, void *arg)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    sl_conn *conn = evcon ? conn_find(srv, evcon) : NULL;
    if (!conn)
        return;
    conn->gone = fn;
    conn->gone_arg = arg;
}

static void free_conn(void *p)
{
    sl_conn *conn = p;
    evhttp_connection_set_closecb(conn->evcon, NULL, NULL);
    free(conn);
}

void sl_conns_free_all(sl_server *srv)
{
    tdestroy(srv->conns, free_conn);
    srv->conns = NULL;
    srv->nconns = 0;
}

/* ---- writing answers at once --------------------------------------------- */

struct bufferevent *sl_conn_bev(struct evhttp_request *req)
{
    struct evhttp_connection *evcon = req ? evhttp_request_get_connection(req) : NULL;
    return evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
}

/* A bufferevent writes when its socket next polls writable: an epoll_ctl to
 * watch for it, a turn of the loop, the write, an epoll_ctl to stop. An
 * answer is small and the socket almost always has room, so it is written
 * here and then, and evhttp's "written" callback is run as the bufferevent
 * would have run it (deferred, so that evhttp frees the request after the
 * caller is done with it). Whatever does not fit is left to the
 * bufferevent. Measured: two fewer epoll_ctl and one fewer loop turn per
 * answer. */
void sl_conn_write_now(struct bufferevent *bev)
{
    if (!bev)
        return;
    struct evbuffer *out = bufferevent_get_output(bev);
    evutil_socket_t fd = bufferevent_getfd(bev);
    if (fd < 0 || evbuffer_get_length(out) == 0)
        return;
    while (evbuffer_get_length(out) > 0)
        if (evbuffer_write(out, fd) <= 0)
            break;
    if (evbuffer_get_length(out) == 0) {
        bufferevent_disable(bev, EV_WRITE);
        bufferevent_trigger(bev, EV_WRITE, BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
    }
}
