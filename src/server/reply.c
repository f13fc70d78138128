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

#include "duration.h"
#include "server.h"

struct sl_reply {
    sl_reply *next;
    uint64_t gen;             /* sent once this generation is committed */
    sl_after_commit_fn after; /* instead of an answer */
    void *after_arg;
    sl_http_req *req;         /* the layer keeps it until it is answered */
    bool chunk;               /* the body and end of a started answer (a wait's) */
    sl_route_id route;
    int status;
    sl_buf body;
    const char *ctype;
};

/* Delivered replies are kept for the next ones, with their body's space,
 * so that a loaded server allocates nothing per held answer. Bounded: at
 * most SPARE_MAX kept, none with a body space over SPARE_BODY_MAX. */
#define SPARE_MAX 1024
#define SPARE_BODY_MAX 16384
static sl_reply *spare;
static size_t nspare;

/* Answers given at once are written here and copied by the HTTP layer:
 * no allocation per answer once it has grown. */
static sl_buf scratch;

sl_buf *sl_reply_scratch(void)
{
    sl_buf_clear(&scratch);
    return &scratch;
}

void sl_reply_free_scratch(void)
{
    sl_buf_free(&scratch);
    while (spare) {
        sl_reply *r = spare;
        spare = r->next;
        sl_buf_free(&r->body);
        free(r);
    }
    nspare = 0;
}

/* Most bodies fit here: one dump into it and one copy into the buffer,
 * rather than an append per token. The loop is single-threaded. */
static char dump_space[16384];

static int dump_cb(const char *buf, size_t size, void *data)
{
    sl_buf_add(data, buf, size);
    return 0;
}

void sl_json_to_buffer(json_t *body, sl_buf *out)
{
    size_t n = json_dumpb(body, dump_space, sizeof(dump_space) - 1, JSON_COMPACT);
    if (n > 0 && n < sizeof(dump_space) - 1) {
        dump_space[n] = '\n';
        sl_buf_add(out, dump_space, n + 1);
        return;
    }
    json_dump_callback(body, dump_cb, out, JSON_COMPACT);
    sl_buf_add(out, "\n", 1);
}

static void send_bytes(sl_server *srv, sl_http_req *req, sl_route_id route, int status,
                       const char *ctype, const void *body, size_t len)
{
    sl_metrics_http(&srv->metrics, route, sl_http_req_method(req), status);
    sl_audit_answer(srv, req, status, body, len, NULL);
    sl_http_reply(req, status, ctype, body, len);
}

static void send_now(sl_server *srv, sl_http_req *req, sl_route_id route, int status,
                     const char *ctype, const sl_buf *body)
{
    send_bytes(srv, req, route, status, ctype, sl_buf_data(body), sl_buf_size(body));
}

/* The generation whose commit an answer given now must wait for, or 0
 * when everything in the engine is committed. */
static uint64_t hold_gen(const sl_server *srv)
{
    if (sl_engine_changes_pending(srv->eng) || srv->store_failed)
        return srv->gen_next;
    return srv->batch_gen;
}

static sl_reply *reply_new(sl_server *srv, uint64_t gen)
{
    sl_reply *r = spare;
    if (r) {
        spare = r->next;
        nspare--;
        sl_buf body = r->body;
        sl_buf_clear(&body);
        memset(r, 0, sizeof(*r));
        r->body = body;
    } else if (!(r = calloc(1, sizeof(*r)))) {
        abort();
    }
    r->gen = gen;
    if (srv->replies_tail)
        srv->replies_tail->next = r;
    else
        srv->replies_head = r;
    srv->replies_tail = r;
    sl_server_touch(srv);
    return r;
}

static void queue_bytes(sl_server *srv, sl_http_req *req, sl_route_id route, int status,
                        const char *ctype, const void *body, size_t len)
{
    uint64_t gen = hold_gen(srv);
    if (!gen) {
        send_bytes(srv, req, route, status, ctype, body, len);
        return;
    }
    sl_reply *r = reply_new(srv, gen);
    r->req = req;
    r->route = route;
    r->status = status;
    r->ctype = ctype;
    sl_buf_add(&r->body, body, len);
}

static void queue_or_send(sl_server *srv, sl_http_req *req, sl_route_id route, int status,
                          const char *ctype, const sl_buf *body)
{
    queue_bytes(srv, req, route, status, ctype, sl_buf_data(body), sl_buf_size(body));
}

static void send_chunk_end(sl_http_req *req, const void *body, size_t len)
{
    sl_http_stream_chunk(req, body, len);
    sl_http_stream_end(req);
}

void sl_reply_chunk_end(sl_server *srv, sl_http_req *req, const sl_buf *body)
{
    uint64_t gen = hold_gen(srv);
    if (!gen) {
        send_chunk_end(req, sl_buf_data(body), sl_buf_size(body));
        return;
    }
    sl_reply *r = reply_new(srv, gen);
    r->req = req;
    r->chunk = true;
    sl_buf_add(&r->body, sl_buf_data(body), sl_buf_size(body));
}

void sl_reply_after_commit(sl_server *srv, sl_after_commit_fn fn, void *arg)
{
    uint64_t gen = hold_gen(srv);
    if (!gen) {
        fn(arg, true);
        return;
    }
    sl_reply *r = reply_new(srv, gen);
    r->after = fn;
    r->after_arg = arg;
}

static const sl_buf *json_buffer(json_t *body)
{
    sl_buf *buf = sl_reply_scratch();
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
    sl_buf *buf = sl_reply_scratch();
    sl_json_claim_write(c->srv, claim, buf);
    queue_or_send(c->srv, c->req, c->route, status, "application/json", buf);
}

void sl_reply_send_buffer(sl_server *srv, sl_http_req *req, sl_route_id route, int status,
                          const sl_buf *body)
{
    queue_or_send(srv, req, route, status, "application/json", body);
}

void sl_reply_text(sl_ctx *c, int status, const char *ctype, const void *body, size_t len)
{
    queue_bytes(c->srv, c->req, c->route, status, ctype, body, len);
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
    send_now(c->srv, c->req, c->route, status, "application/json", json_buffer(body));
}

/* The engine's SL_EFORBIDDEN, in the words of tokens and prefixes. */
static void reply_forbidden(sl_ctx *c, const sl_error *err)
{
    if (err->name[0] && strlen(err->name) > 4 && sl_auth_allows(c, err->name + 4))
        sl_reply_error(c, 403, "forbidden",
                       "%s: this token may not claim %s: it may read it but has no claim "
                       "permission on it (the locks a claim's tags and group add count like the "
                       "locks it names)",
                       err->field, err->name);
    else if (err->name[0])
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

/* The engine's SL_EFULL and SL_EBACKDATE, with their numbers. */
static bool reply_rule_refusal(sl_ctx *c, const sl_error *err)
{
    if (err->code == SL_EFULL) {
        c->srv->metrics.queue_full_rejected++;
        char waiting[64] = "as many claims wait";
        if (err->asked > err->value) /* max_pending lowered below the waiters */
            snprintf(waiting, sizeof(waiting), "%lld claims wait", (long long)err->asked);
        sl_reply_error(c, 409, "queue_full",
                       "%s: its queue is full: max_pending is %lld and %s; retry later, or "
                       "raise max_pending",
                       err->name, (long long)err->value, waiting);
        return true;
    }
    if (err->code == SL_EINLINE) {
        sl_reply_error(c, 409, "conflict",
                       "%s (%s): it has limit %lld and this claim gives limit %lld: %s",
                       err->field, err->name, (long long)err->value, (long long)err->asked,
                       err->what);
        return true;
    }
    if (err->code != SL_EBACKDATE)
        return false;
    char back[32], may[32];
    sl_duration_format(err->value, back, sizeof(back));
    sl_duration_format(err->asked, may, sizeof(may));
    sl_reply_error(c, 403, "forbidden", "created is %s in the past and this claim may set it at "
                                        "most %s back: %s",
                   back, may, err->what);
    return true;
}

void sl_reply_engine_error(sl_ctx *c, const sl_error *err)
{
    if (err->code == SL_EFORBIDDEN) {
        reply_forbidden(c, err);
        return;
    }
    if (reply_rule_refusal(c, err))
        return;
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
                       "could never be granted; ask for at most %lld, or %s",
                       field ? field : "locks", name ? name : "?", (long long)err->asked,
                       (long long)err->value, (long long)err->value, err->what);
    else if (err->code == SL_EUNKNOWN && err->value > 0 && field && name)
        sl_reply_error(c, status, code,
                       "%s (%s): %s; give \"limit\": %lld as the other claims on it do, or "
                       "configure it with PUT /v1/semaphores/{name}",
                       field, name, err->what, (long long)err->value);
    else if (field && name)
        sl_reply_error(c, status, code, "%s (%s): %s", field, name, err->what);
    else if (field || name)
        sl_reply_error(c, status, code, "%s: %s", field ? field : name, err->what);
    else
        sl_reply_error(c, status, code, "%s", err->what);
}

static void deliver(sl_server *srv, sl_reply *r, bool committed)
{
    if (r->after) {
        r->after(r->after_arg, committed);
    } else if (committed) {
        if (r->chunk)
            send_chunk_end(r->req, sl_buf_data(&r->body), sl_buf_size(&r->body));
        else
            send_now(srv, r->req, r->route, r->status, r->ctype, &r->body);
    } else if (srv->stepping_down) {
        /* Another server leads now: a relay sends the request there. */
        if (r->chunk) {
            sl_http_stream_abort(r->req);
            return;
        }
        json_t *err = json_pack("{s:{s:s,s:s}}", "error", "code", "leader_changed", "message",
                                "this server stopped leading before the change was confirmed; "
                                "its outcome is not known: read the state again, or send it to "
                                "the new leader");
        sl_http_add_header(r->req, "Sluice-Retry", "leader");
        sl_http_add_header(r->req, "Retry-After", "1");
        send_now(srv, r->req, r->route, 503, "application/json", json_buffer(err));
    } else {
        /* A read changed nothing: it only may not show what is not stored. */
        sl_http_method m = sl_http_req_method(r->req);
        bool read = m == SL_HTTP_GET || m == SL_HTTP_HEAD;
        json_t *err = json_pack(
            "{s:{s:s,s:s}}", "error", "code", "unavailable", "message",
            read ? "the store cannot commit: this answer would show changes that are not "
                   "stored yet, so none is given. Ask again once /healthz answers 200"
                 : "the store could not commit this turn's changes; their outcome is not "
                   "confirmed. Read the state again once /healthz answers 200");
        const sl_buf *b = json_buffer(err);
        if (r->chunk) /* the status line went out already: the body says what happened */
            send_chunk_end(r->req, sl_buf_data(b), sl_buf_size(b));
        else
            send_now(srv, r->req, r->route, 503, "application/json", b);
    }
}

static void reply_done(sl_reply *r)
{
    if (nspare >= SPARE_MAX || r->body.cap > SPARE_BODY_MAX) {
        sl_buf_free(&r->body);
        free(r);
        return;
    }
    r->next = spare;
    spare = r;
    nspare++;
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
        reply_done(r);
    }
}
