/* reply.c - answers: JSON bodies, error bodies, and answers held until the
 * turn's changes are committed.
 *
 * docs/api.md: effects are applied and committed before the response is sent. A
 * handler answers as soon as it has called the engine; when the engine has
 * changes not yet in the store, the answer waits in a queue that the commit
 * (commit.c) flushes once the transaction is durable, or fails with 503 if it
 * is not. Reads wait too while changes are pending, so no answer can show a
 * state that a crash could take back. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "server.h"

struct sl_reply {
    sl_reply *next;
    uint64_t gen;             /* sent once this generation is committed */
    sl_after_commit_fn after; /* instead of an answer */
    void *after_arg;
    bool chunk;               /* the body and end of a started reply */
    struct evhttp_request *req;
    sl_route_id route;
    int status;
    struct evbuffer *body;
    const char *ctype;
};

static const char *status_text(int status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 422: return "Unprocessable Entity";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Unknown";
    }
}

static int dump_cb(const char *buf, size_t size, void *data)
{
    return evbuffer_add(data, buf, size);
}

/* Most bodies fit here: one dump into it and one copy into the buffer,
 * rather than an evbuffer_add per token (measured: a third of the cost of
 * answering a claim). The loop is single-threaded. */
static char dump_space[16384];

void sl_json_to_buffer(json_t *body, struct evbuffer *out)
{
    size_t n = json_dumpb(body, dump_space, sizeof(dump_space) - 1, JSON_COMPACT);
    if (n > 0 && n < sizeof(dump_space) - 1) {
        dump_space[n] = '\n';
        evbuffer_add(out, dump_space, n + 1);
        return;
    }
    json_dump_callback(body, dump_cb, out, JSON_COMPACT);
    evbuffer_add(out, "\n", 1);
}

void sl_reply_add_header(struct evhttp_request *req, const char *name, const char *value)
{
    evhttp_add_header(evhttp_request_get_output_headers(req), name, value);
}

static void send_now(sl_server *srv, struct evhttp_request *req, sl_route_id route, int status,
                     const char *ctype, struct evbuffer *body)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    if (ctype && !evhttp_find_header(h, "Content-Type"))
        evhttp_add_header(h, "Content-Type", ctype);
    sl_metrics_http(&srv->metrics, route, status);
    struct bufferevent *bev = sl_conn_bev(req);
    evhttp_send_reply(req, status, status_text(status), status == 204 ? NULL : body);
    sl_conn_write_now(bev);
}

/* The generation whose commit an answer given now must wait for, or 0
 * when everything in the engine is committed. */
static uint64_t hold_gen(const sl_server *srv)
{
    if (sl_engine_changes_pending(srv->eng) || srv->store_failed)
        return srv->gen_next;
    return srv->batch_gen;
}

static void enqueue(sl_server *srv, sl_reply *r, uint64_t gen)
{
    r->gen = gen;
    if (srv->replies_tail)
        srv->replies_tail->next = r;
    else
        srv->replies_head = r;
    srv->replies_tail = r;
    sl_server_touch(srv);
}

static void queue_or_send(sl_server *srv, struct evhttp_request *req, sl_route_id route,
                          int status, const char *ctype, struct evbuffer *body)
{
    uint64_t gen = hold_gen(srv);
    if (!gen) {
        send_now(srv, req, route, status, ctype, body);
        evbuffer_free(body);
        return;
    }
    sl_reply *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    r->req = req;
    r->route = route;
    r->status = status;
    r->body = body;
    r->ctype = ctype;
    enqueue(srv, r, gen);
}

static void send_chunk_end(struct evhttp_request *req, struct evbuffer *body)
{
    struct bufferevent *bev = sl_conn_bev(req);
    evhttp_send_reply_chunk(req, body);
    evhttp_send_reply_end(req);
    sl_conn_write_now(bev);
}

void sl_reply_chunk_end(sl_server *srv, struct evhttp_request *req, struct evbuffer *body)
{
    uint64_t gen = hold_gen(srv);
    if (!gen) {
        send_chunk_end(req, body);
        evbuffer_free(body);
        return;
    }
    /* evhttp keeps a started request until its end is sent, even when the
     * client has gone, so req stays valid while held. */
    sl_reply *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    r->req = req;
    r->body = body;
    r->chunk = true;
    enqueue(srv, r, gen);
}

void sl_reply_after_commit(sl_server *srv, sl_after_commit_fn fn, void *arg)
{
    uint64_t gen = hold_gen(srv);
    if (!gen) {
        fn(arg, true);
        return;
    }
    sl_reply *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    r->after = fn;
    r->after_arg = arg;
    enqueue(srv, r, gen);
}

static struct evbuffer *json_buffer(json_t *body)
{
    struct evbuffer *buf = evbuffer_new();
    if (!buf)
        abort();
    if (body) {
        sl_json_to_buffer(body, buf);
        json_decref(body);
    }
    return buf;
}

void sl_reply_json(sl_ctx *c, int status, json_t *body)
{
    queue_or_send(c->srv, c->req, c->route, status, "application/json", json_buffer(body));
}

void sl_reply_claim(sl_ctx *c, int status, const sl_claim *claim)
{
    struct evbuffer *buf = evbuffer_new();
    if (!buf)
        abort();
    sl_json_claim_write(c->srv, claim, buf);
    queue_or_send(c->srv, c->req, c->route, status, "application/json", buf);
}

void sl_reply_send_buffer(sl_server *srv, struct evhttp_request *req, sl_route_id route,
                          int status, struct evbuffer *body)
{
    queue_or_send(srv, req, route, status, "application/json", body);
}

void sl_reply_send(sl_server *srv, struct evhttp_request *req, sl_route_id route, int status,
                   json_t *body)
{
    queue_or_send(srv, req, route, status, "application/json", json_buffer(body));
}

void sl_reply_text(sl_ctx *c, int status, const char *ctype, struct evbuffer *body)
{
    struct evbuffer *own = evbuffer_new();
    if (!own)
        abort();
    evbuffer_add_buffer(own, body);
    queue_or_send(c->srv, c->req, c->route, status, ctype, own);
}

void sl_reply_empty(sl_ctx *c, int status)
{
    queue_or_send(c->srv, c->req, c->route, status, NULL, json_buffer(NULL));
}

void sl_reply_error(sl_ctx *c, int status, const char *code, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *body = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
    /* Errors change nothing, so they need not wait for a commit. */
    struct evbuffer *buf = json_buffer(body);
    send_now(c->srv, c->req, c->route, status, "application/json", buf);
    evbuffer_free(buf);
}

/* The engine's SL_EFORBIDDEN, in the words of tokens and prefixes. */
static void reply_forbidden(sl_ctx *c, const sl_error *err)
{
    if (err->name[0])
        sl_reply_error(c, 403, "forbidden",
                       "%s: this token may not use %s: it is outside the token's prefixes (the "
                       "locks a claim's tags and group add count like the locks it names)",
                       err->field, err->name);
    else
        sl_reply_error(c, 403, "forbidden",
                       "this claim takes no lock (no semaphore is configured for its tags), so "
                       "it belongs to its holder's namespace: give a holder under one of this "
                       "token's prefixes");
}

void sl_reply_engine_error(sl_ctx *c, const sl_error *err)
{
    if (err->code == SL_EFORBIDDEN) {
        reply_forbidden(c, err);
        return;
    }
    int status = 400;
    const char *code = "bad_request";
    switch (err->code) {
    case SL_ENOTFOUND: status = 404; code = "not_found"; break;
    case SL_ECONFLICT: status = 409; code = "conflict"; break;
    case SL_EUNKNOWN: status = 422; code = "unknown_semaphore"; break;
    case SL_ELIMIT: status = 503; code = "unavailable"; break;
    default: break;
    }
    const char *field = err->field[0] ? err->field : NULL;
    const char *name = err->name[0] ? err->name : NULL;
    if (err->asked > 0)
        sl_reply_error(c, status, code,
                       "%s (%s): asks for %lld slots but the semaphore's limit is %lld, so it "
                       "could never be granted; ask for at most %lld, or raise the limit first",
                       field ? field : "locks", name ? name : "?", (long long)err->asked,
                       (long long)err->value, (long long)err->value);
    else if (field && name)
        sl_reply_error(c, status, code, "%s (%s): %s", field, name, err->what);
    else if (field || name)
        sl_reply_error(c, status, code, "%s: %s", field ? field : name, err->what);
    else
        sl_reply_error(c, status, code, "%s", err->what);
}

static struct evbuffer *unavailable(void)
{
    return json_buffer(json_pack(
        "{s:{s:s,s:s}}", "error", "code", "unavailable", "message",
        "the store could not commit this turn's changes; their outcome is not "
        "confirmed. Read the state again once /healthz answers 200"));
}

static void deliver(sl_server *srv, sl_reply *r, bool committed)
{
    if (r->after) {
        r->after(r->after_arg, committed);
        return;
    }
    if (r->chunk) {
        /* The status line went out already: the body says what happened. */
        struct evbuffer *err = committed ? NULL : unavailable();
        send_chunk_end(r->req, err ? err : r->body);
        if (err)
            evbuffer_free(err);
    } else if (committed) {
        send_now(srv, r->req, r->route, r->status, r->ctype, r->body);
    } else {
        struct evbuffer *err = unavailable();
        send_now(srv, r->req, r->route, 503, "application/json", err);
        evbuffer_free(err);
    }
    evbuffer_free(r->body);
}

void sl_reply_flush(sl_server *srv, uint64_t upto, bool committed)
{
    /* Generations only grow along the queue. An answer delivered may hold
     * new ones (a wait starting): they join the tail, behind this walk's
     * end only if their generation is newer. */
    while (srv->replies_head && (!committed || srv->replies_head->gen <= upto)) {
        sl_reply *r = srv->replies_head;
        srv->replies_head = r->next;
        if (!srv->replies_head)
            srv->replies_tail = NULL;
        deliver(srv, r, committed);
        free(r);
    }
}
