/* waits.c - long polls: POST /v1/claims?wait, GET /v1/claims/{id}?wait and
 * GET /v1/events?wait, answered the moment the state changes.
 *
 * A wait starts once the change that made it is committed: its status line
 * and headers go out then (a client learns at once that its request is
 * durable and parked, and a POST's Location names the claim), the body
 * when it is woken or its time runs out. The HTTP layer reads on while a
 * request is parked, so a client that hangs up is seen at once: a pending
 * claim whose creator vanished is withdrawn, a grant that would reach
 * nobody is released.
 *
 * Waits on a claim hang off the claim (sl_claim_udata), so waking them after
 * a commit costs nothing per unrelated claim. Answering a wait never changes
 * the engine's batch (sl_claim_watch records nothing), since it happens
 * while a committed batch is being read. */
#include <stdlib.h>
#include <string.h>

#include "server.h"

struct sl_wait {
    sl_server *srv;
    sl_http_req *req;
    sl_wait_kind kind;
    sl_route_id route;
    int status;
    sl_claim *claim; /* claim waits */
    sl_state seen;
    uint64_t since; /* event waits */
    char claim_id[SL_ID_MAX + 1];
    size_t limit;
    sl_event_scope *scope; /* what of the log the reader may see */
    const sl_conf_token *token; /* admitted with (NULL: no tokens); a reload moves it */
    sl_quota_use *use;          /* its token's long polls count it (NULL: none) */
    int refused; /* a reload took its right away before it started: 401 or 404 then */
    struct event *timer;
    struct timeval wait_tv;
    sl_wait *prev, *next;
    bool armed;     /* started: committed, headers sent, its timer running */
    bool unwatched; /* the claim's watch has ended */
    bool gone;         /* the client hung up before the answer */
    json_t *final;     /* the claim as it was when purged before the wait started */
    bool release_next; /* the creator hung up unseen: release on the next turn */
};

static sl_wait **head_of(sl_wait *w)
{
    return w->kind == SL_WAIT_EVENTS ? &w->srv->event_waits : NULL;
}

static void unlink_wait(sl_wait *w)
{
    if (w->kind != SL_WAIT_EVENTS && !w->claim)
        return; /* detached from its purged claim */
    if (w->prev)
        w->prev->next = w->next;
    else if (head_of(w))
        *head_of(w) = w->next;
    else
        sl_claim_set_udata(w->claim, w->next);
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

static void link_wait(sl_wait *w)
{
    sl_wait *head = head_of(w) ? *head_of(w) : sl_claim_udata(w->claim);
    w->next = head;
    w->prev = NULL;
    if (head)
        head->prev = w;
    if (head_of(w))
        *head_of(w) = w;
    else
        sl_claim_set_udata(w->claim, w);
}

/* A wait's start and end move the claim's lease deadline (the lease cannot
 * run out while a request waits, and counts again from the wait's end), so
 * the loop's timer follows at once: a timer left on the old deadline would
 * let a dead client's claim outlive its lease until some other request came. */
static void watch(sl_server *srv, sl_claim *claim, int delta)
{
    sl_claim_watch(srv->eng, claim, delta, sl_server_now(srv));
    sl_commit_rearm_timer(srv);
}

static void unwatch(sl_wait *w)
{
    if (w->kind != SL_WAIT_EVENTS && !w->unwatched && w->claim)
        watch(w->srv, w->claim, -1);
    w->unwatched = true;
}

/* Forgets the wait; its request is answered next. */
static void finish(sl_wait *w)
{
    unlink_wait(w);
    unwatch(w);
    if (!w->gone)
        sl_http_req_on_gone(w->req, NULL, NULL);
    event_free(w->timer);
    json_decref(w->final);
    sl_event_scope_free(w->scope);
    sl_quota_count(w->use, SL_QUOTA_LONG_POLLS, -1);
    free(w);
}

static json_t *events_page(sl_wait *w, size_t *count)
{
    json_t *page = sl_events_page(w->srv, w->since, w->claim_id[0] ? w->claim_id : NULL,
                                  w->limit, w->scope, count);
    return page ? page : json_pack("{s:[],s:I}", "events", "next", (json_int_t)w->since);
}

/* Answers with the body written into buf (the wait is forgotten first):
 * held until what it shows is committed. A started wait sends the body
 * after its headers (status is theirs then). */
static void answer_buffer(sl_wait *w, int status, const sl_buf *body)
{
    sl_server *srv = w->srv;
    sl_http_req *req = w->req;
    sl_route_id route = w->route;
    bool armed = w->armed;
    finish(w);
    if (armed)
        sl_reply_chunk_end(srv, req, body);
    else
        sl_reply_send_buffer(srv, req, route, status, body);
}

static void answer_with(sl_wait *w, int status, json_t *body)
{
    sl_buf *buf = sl_reply_scratch();
    sl_json_to_buffer(body, buf);
    json_decref(body);
    answer_buffer(w, status, buf);
}

/* A request whose client has gone is still answered once; the layer drops
 * the answer. */
static void drop_answer(sl_wait *w)
{
    sl_http_req *req = w->req;
    bool armed = w->armed;
    finish(w);
    if (armed)
        sl_http_stream_end(req);
    else
        sl_http_reply(req, 503, NULL, NULL, 0);
}

/* A creator that hung up would never learn of its grant, which nobody could
 * then release: the claim is released instead. Not now: a wait is answered
 * while the committed batch is read, which must not change; the wait's
 * timer does it on the next turn (timeout_cb). */
static bool release_if_creator_gone(sl_wait *w)
{
    if (w->kind != SL_WAIT_CREATE || w->release_next || !w->claim)
        return false;
    sl_claim_view v;
    sl_claim_get(w->claim, &v);
    if (sl_state_ended(v.state) || !sl_http_req_hung_up(w->req))
        return false;
    w->release_next = true;
    evtimer_del(w->timer);
    struct timeval now = {0, 0};
    evtimer_add(w->timer, &now);
    return true;
}

/* The wait's end is a sign of life: the claim is read after it, so that
 * its `expires` counts from now. */
static void answer(sl_wait *w)
{
    size_t count = 0;
    if (release_if_creator_gone(w))
        return;
    unwatch(w);
    if (w->final) {
        json_t *final = w->final;
        w->final = NULL;
        answer_with(w, w->status, final);
        return;
    }
    if (w->kind == SL_WAIT_EVENTS) {
        answer_with(w, w->status, events_page(w, &count));
        return;
    }
    sl_buf *buf = sl_reply_scratch();
    sl_json_claim_write(w->srv, w->claim, buf);
    answer_buffer(w, w->status, buf);
}

static bool satisfied(sl_wait *w)
{
    if (w->kind == SL_WAIT_EVENTS) {
        size_t count = 0;
        json_decref(events_page(w, &count));
        return count > 0 || sl_store_read_partial(w->srv->store);
    }
    if (!w->claim)
        return true; /* purged: nothing more will happen to it */
    sl_claim_view v;
    sl_claim_get(w->claim, &v);
    if (w->kind == SL_WAIT_CREATE)
        return v.state != SL_PENDING;
    return v.state != w->seen;
}

static void timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_wait *w = arg;
    if (w->release_next && w->claim) {
        sl_claim_release(w->srv->eng, w->claim, SL_REASON_CLIENT_GONE, sl_server_now(w->srv));
        sl_server_touch(w->srv);
    }
    answer(w);
}

/* The client hung up. If it created the claim it never learnt the id, so
 * nobody else could release it: withdraw or release it now. A wait not
 * started yet finds out when it starts. */
static void gone_cb(void *arg)
{
    sl_wait *w = arg;
    w->gone = true;
    if (w->kind == SL_WAIT_CREATE && w->claim) {
        sl_claim_release(w->srv->eng, w->claim, SL_REASON_CLIENT_GONE, sl_server_now(w->srv));
        sl_server_touch(w->srv);
    }
    if (w->armed)
        drop_answer(w);
}

/* The answer of a request whose token a reload removed (401) or narrowed
 * away from its claim (404, as for a claim it never could see). */
static void answer_refused(sl_wait *w)
{
    bool gone = w->refused == 401;
    if (gone)
        sl_http_add_header(w->req, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
    answer_with(w, w->refused,
                json_pack("{s:{s:s,s:s}}", "error", "code", gone ? "unauthorized" : "not_found",
                          "message",
                          gone ? "the token is not one this server knows"
                               : "no claim with this id: it never existed, or it ended more "
                                 "than the retention ago"));
}

/* Once the change that made the wait is committed: answer at once when the
 * state already moved (or 503 if the commit failed), else send the headers
 * and start the clock. */
static void start(void *arg, bool committed)
{
    sl_wait *w = arg;
    if (w->gone) {
        drop_answer(w);
        return;
    }
    if (w->refused) {
        answer_refused(w);
        return;
    }
    if (!committed) {
        answer_with(w, 503,
                    json_pack("{s:{s:s,s:s}}", "error", "code", "unavailable", "message",
                              "the store could not commit; retry once /healthz answers 200"));
        return;
    }
    if (satisfied(w)) {
        answer(w);
        return;
    }
    sl_http_add_header(w->req, "Cache-Control", "no-store");
    sl_metrics_http(&w->srv->metrics, w->route, sl_http_req_method(w->req), w->status);
    if (sl_audit_on(w->srv)) {
        sl_claim_view v = {.id = NULL};
        if (w->claim)
            sl_claim_get(w->claim, &v);
        sl_audit_answer(w->srv, w->req, w->status, NULL, 0, v.id);
    }
    w->armed = true;
    evtimer_add(w->timer, &w->wait_tv);
    sl_http_stream_start(w->req, w->status, "application/json"); /* may find it gone */
}

static sl_wait *wait_new(sl_ctx *c, sl_wait_kind kind, int status, int64_t wait_ms)
{
    sl_wait *w = calloc(1, sizeof(*w));
    if (!w)
        abort();
    w->srv = c->srv;
    w->req = c->req;
    w->kind = kind;
    w->route = c->route;
    w->status = status;
    w->token = c->auth.token;
    w->use = sl_quota_use_of(c->srv, c->auth.token);
    sl_quota_count(w->use, SL_QUOTA_LONG_POLLS, +1);
    w->timer = evtimer_new(c->srv->base, timeout_cb, w);
    w->wait_tv.tv_sec = (time_t)(wait_ms / 1000);
    w->wait_tv.tv_usec = (suseconds_t)((wait_ms % 1000) * 1000);
    sl_http_req_on_gone(c->req, gone_cb, w);
    return w;
}

void sl_wait_claim(sl_ctx *c, sl_wait_kind kind, sl_claim *claim, sl_state seen,
                   int64_t wait_ms, int status)
{
    if (!sl_quota_long_poll(c))
        return;
    sl_wait *w = wait_new(c, kind, status, wait_ms);
    w->claim = claim;
    w->seen = seen;
    link_wait(w);
    watch(c->srv, claim, +1);
    sl_reply_after_commit(c->srv, start, w);
}

void sl_wait_events(sl_ctx *c, uint64_t since, const char *claim_id, size_t limit,
                    int64_t wait_ms)
{
    if (!sl_quota_long_poll(c))
        return;
    sl_wait *w = wait_new(c, SL_WAIT_EVENTS, 200, wait_ms);
    w->since = since;
    w->limit = limit;
    w->scope = sl_auth_event_scope(c);
    if (claim_id)
        snprintf(w->claim_id, sizeof(w->claim_id), "%s", claim_id);
    link_wait(w);
    sl_reply_after_commit(c->srv, start, w);
}

void sl_waits_claim_changed(sl_server *srv, sl_claim *claim)
{
    (void)srv;
    sl_wait *w = sl_claim_udata(claim);
    while (w) {
        sl_wait *next = w->next;
        if (w->armed && satisfied(w))
            answer(w);
        w = next;
    }
}

/* A wait that has not started yet (its start is held until a batch
 * commits) keeps the claim's last state and lets go of the claim, which
 * is freed when the batch that purges it is captured. */
void sl_waits_claim_purged(sl_server *srv, const sl_claim *claim)
{
    sl_wait *w = sl_claim_udata(claim);
    while (w) {
        sl_wait *next = w->next;
        if (w->armed) {
            answer(w);
        } else {
            unwatch(w);
            w->final = sl_json_claim(srv, claim);
            w->prev = w->next = NULL;
            w->claim = NULL;
        }
        w = next;
    }
    sl_claim_set_udata((sl_claim *)claim, NULL);
}

/* Event waits are woken by any new event and answer when their page is
 * not empty (a claim filter may leave it empty), or partial: the read
 * stopped at the scan budget, and its next moves the reader on. */
void sl_waits_events_changed(sl_server *srv)
{
    sl_wait *w = srv->event_waits;
    while (w) {
        sl_wait *next = w->next;
        if (w->armed) {
            size_t count = 0;
            json_t *page = events_page(w, &count);
            if (count > 0 || sl_store_read_partial(srv->store))
                answer_with(w, w->status, page);
            else
                json_decref(page);
        }
        w = next;
    }
}

/* A leader stepping down: what already started is cut short (its client
 * asks again, a relay sends it to the next leader), the rest told to. */
static void answer_stepping_down(sl_wait *w, const sl_buf *body)
{
    if (w->armed) {
        sl_http_req *req = w->req;
        finish(w);
        sl_http_stream_abort(req);
        return;
    }
    sl_http_add_header(w->req, "Sluice-Retry", "leader");
    sl_http_add_header(w->req, "Retry-After", "1");
    answer_buffer(w, 503, body);
}

/* A server stopping: a wait not started is told to retry (503); a started
 * one has sent its status already (a creation's 201), so it ends as its
 * time running out would, with the claim as it is now (or the events so
 * far), and its client asks again where it would have. An error after a
 * 201 would read as a claim without an id. */
static void answer_at_shutdown(sl_wait *w, const sl_buf *body)
{
    if (w->armed)
        answer(w);
    else
        answer_buffer(w, 503, body);
}

void sl_waits_free_all(sl_server *srv)
{
    if (srv->stepping_down) {
        sl_buf body = {0};
        sl_buf_adds(&body, "{\"error\":{\"code\":\"leader_changed\",\"message\":\"this server "
                           "stopped leading; ask again\"}}\n");
        while (srv->event_waits)
            answer_stepping_down(srv->event_waits, &body);
        for (const sl_claim *c = sl_claim_next(srv->eng, NULL); c;
             c = sl_claim_next(srv->eng, c))
            while (sl_claim_udata(c))
                answer_stepping_down(sl_claim_udata(c), &body);
        sl_buf_free(&body);
        return;
    }
    json_t *bye = json_pack("{s:{s:s,s:s}}", "error", "code", "unavailable", "message",
                            "the server is shutting down; retry in a moment");
    sl_buf body = {0};
    sl_json_to_buffer(bye, &body);
    json_decref(bye);
    while (srv->event_waits)
        answer_at_shutdown(srv->event_waits, &body);
    for (const sl_claim *c = sl_claim_next(srv->eng, NULL); c; c = sl_claim_next(srv->eng, c))
        while (sl_claim_udata(c))
            answer_at_shutdown(sl_claim_udata(c), &body);
    sl_buf_free(&body);
}

/* F9: what a reload does to a parked request. Its token gone (or, for a
 * claim wait, its claim now outside the token's prefixes), it ends: one
 * that has not started is answered 401 (404) when it would start; one that
 * has started has sent its status line already, so its connection is
 * closed before the body, and the client's next request learns why. An
 * event wait whose token was narrowed reads with the new prefixes. */
static void reauth(sl_wait *w, const sl_conf *old)
{
    int refused = 0;
    if (sl_auth_token_again(old, w->srv->conf, &w->token) != 0)
        refused = 401;
    else if (w->kind == SL_WAIT_EVENTS) {
        sl_event_scope_free(w->scope);
        w->scope = sl_auth_token_scope(w->token);
    } else if (w->claim && !sl_auth_token_allows_claim(w->token, w->claim))
        refused = 404;
    if (!refused)
        return;
    if (refused == 401)
        w->token = NULL;
    if (!w->armed) {
        w->refused = refused;
        return;
    }
    sl_http_req *req = w->req;
    finish(w);
    sl_http_stream_abort(req);
}

void sl_waits_reauth(sl_server *srv, const sl_conf *old)
{
    for (sl_wait *w = srv->event_waits, *next; w; w = next) {
        next = w->next;
        reauth(w, old);
    }
    for (const sl_claim *c = srv->eng ? sl_claim_next(srv->eng, NULL) : NULL; c;
         c = sl_claim_next(srv->eng, c))
        for (sl_wait *w = sl_claim_udata(c), *next; w; w = next) {
            next = w->next;
            reauth(w, old);
        }
}
