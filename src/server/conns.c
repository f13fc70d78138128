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
#include <search.h>
#include <stdlib.h>

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
