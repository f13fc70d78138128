/* routes_claims.c - /v1/claims and /v1/queue: claim, wait, renew, release,
 * an operator's cancel, why, and the listings. */
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>

#include "claim_body.h"
#include "claim_id.h"
#include "server.h"

static bool claim_allowed(sl_ctx *c, sl_claim_body *b)
{
    for (size_t i = 0; i < b->req.nlocks; i++) {
        if (!sl_auth_allows(c, b->locks[i].name)) {
            sl_reply_error(c, 403, "forbidden",
                           "locks[%zu]: this token may not claim \"%s\": it is outside its "
                           "prefixes",
                           i, b->locks[i].name);
            return false;
        }
    }
    if (b->req.group && !sl_auth_allows(c, b->req.group)) {
        sl_reply_error(c, 403, "forbidden",
                       "group: this token may not use group \"%s\": it is outside its prefixes",
                       b->req.group);
        return false;
    }
    return true;
}

static void claim_post(sl_ctx *c)
{
    if (sl_refuse_if_store_failed(c))
        return;
    json_t *body = sl_body_json(c);
    if (!body)
        return;
    sl_claim_body *b = malloc(sizeof(*b));
    if (!b)
        abort();
    char err[512];
    if (sl_claim_body_parse(body, b, err, sizeof(err)) != 0) {
        sl_reply_error(c, 400, "bad_request", "%s", err);
    } else if (claim_allowed(c, b)) {
        char id[SL_CLAIM_ID_LEN + 1];
        sl_claim_id_new(c->now, id);
        b->req.id = id;
        if (!b->has_timeout)
            b->req.timeout_ms = c->srv->conf->default_timeout_ms;
        sl_claim *claim = NULL;
        sl_error eerr;
        if (sl_claim_create(c->srv->eng, &b->req, c->now, &claim, &eerr) != 0) {
            sl_reply_engine_error(c, &eerr);
        } else {
            sl_server_touch(c->srv);
            char loc[64];
            snprintf(loc, sizeof(loc), "/v1/claims/%s", id);
            sl_reply_add_header(c->req, "Location", loc);
            int64_t wait = b->wait_ms < c->srv->conf->max_wait_ms ? b->wait_ms
                                                                   : c->srv->conf->max_wait_ms;
            sl_claim_view v;
            sl_claim_get(claim, &v);
            if (wait > 0 && v.state == SL_PENDING)
                sl_wait_claim(c, SL_WAIT_CREATE, claim, SL_PENDING, wait, 201);
            else
                sl_reply_claim(c, 201, claim);
        }
    }
    free(b);
    json_decref(body);
}

static sl_claim *find_claim(sl_ctx *c, const char *id)
{
    sl_claim *claim = sl_claim_find(c->srv->eng, id);
    if (!claim) {
        sl_reply_error(c, 404, "not_found",
                       "no claim %s: it never existed, or it ended more than the retention ago",
                       id);
        return NULL;
    }
    if (!sl_auth_allows_claim(c, claim)) {
        sl_reply_error(c, 403, "forbidden", "this token may not touch claim %s", id);
        return NULL;
    }
    return claim;
}

static void claim_get(sl_ctx *c, sl_claim *claim)
{
    int64_t wait = 0;
    if (sl_query_duration(c, "wait", &wait) != 0)
        return;
    sl_claim_view v;
    sl_claim_get(claim, &v);
    sl_state seen = v.state;
    const char *s = sl_query_get(c, "seen");
    if (s && sl_state_parse(s, &seen) != 0) {
        sl_reply_error(c, 400, "bad_request",
                       "seen=\"%s\" is not a state: pending, held, revoking, released, "
                       "withdrawn, expired, timed_out, superseded or canceled",
                       s);
        return;
    }
    if (wait > c->srv->conf->max_wait_ms)
        wait = c->srv->conf->max_wait_ms;
    if (wait > 0 && seen == v.state)
        sl_wait_claim(c, SL_WAIT_CLAIM, claim, seen, wait, 200);
    else
        sl_reply_claim(c, 200, claim);
}

static void claim_delete(sl_ctx *c, sl_claim *claim)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    if (!sl_state_ended(v.state)) {
        if (sl_refuse_if_store_failed(c))
            return;
        sl_claim_release(c->srv->eng, claim, SL_REASON_RELEASED, c->now);
        sl_server_touch(c->srv);
    }
    sl_reply_claim(c, 200, claim);
}

/* POST /v1/claims/{id}/cancel: an operator's cancel. A live claim
 * (pending, held or revoking) ends `canceled`, "canceled by an operator",
 * whoever its client is; an ended one is answered as it is, like DELETE.
 * Unlike DELETE, the claim's own client learns that someone else stopped
 * it. The same auth rule as DELETE (find_claim); no body is read. */
static void claim_cancel(sl_ctx *c, const char *id)
{
    c->route = SL_ROUTE_CLAIM_CANCEL;
    if (c->method != EVHTTP_REQ_POST) {
        sl_reply_add_header(c->req, "Allow", "POST");
        sl_reply_error(c, 405, "method_not_allowed", "%s takes POST", c->path);
        return;
    }
    sl_claim *claim = find_claim(c, id);
    if (!claim)
        return;
    sl_claim_view v;
    sl_claim_get(claim, &v);
    if (!sl_state_ended(v.state)) {
        if (sl_refuse_if_store_failed(c))
            return;
        sl_claim_cancel(c->srv->eng, claim, c->now);
        sl_server_touch(c->srv);
    }
    sl_reply_claim(c, 200, claim);
}

static void claim_renew(sl_ctx *c, sl_claim *claim)
{
    if (sl_refuse_if_store_failed(c))
        return;
    if (sl_claim_renew(c->srv->eng, claim, c->now) == 0) {
        sl_server_touch(c->srv);
        sl_reply_claim(c, 200, claim);
        return;
    }
    sl_claim_view v;
    sl_claim_get(claim, &v);
    json_t *body = json_pack(
        "{s:{s:s,s:s},s:o}", "error", "code", "conflict", "message",
        v.state == SL_REVOKING
            ? "the claim is being revoked by a newer claim of its group: stop, then release it"
            : "the claim has ended and cannot be renewed: stop using what it held",
        "claim", sl_json_claim(c->srv, claim));
    sl_reply_json(c, 409, body);
}

static bool claim_matches(sl_ctx *c, const sl_claim *claim, bool has_state, sl_state state,
                          const char *holder)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    if (has_state && v.state != state)
        return false;
    if (holder && strcmp(holder, v.holder) != 0)
        return false;
    return sl_auth_allows_claim(c, claim);
}

/* With ?lock= only that lock's holders and waiters are looked at. */
static void claims_of_lock(sl_ctx *c, const char *key, json_t *arr, bool has_state,
                           sl_state state, const char *holder)
{
    sl_kind kind = strncmp(key, "mtx/", 4) == 0 ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
    sl_lock_view lv;
    const sl_lock *lock = NULL;
    if (sl_lock_lookup(c->srv->eng, kind, key + 4, &lv, &lock) != 0 || !lock)
        return;
    sl_holder_view hv[64];
    for (size_t off = 0, n; (n = sl_lock_holders(lock, off, hv, 64)) > 0; off += n)
        for (size_t i = 0; i < n; i++)
            if (claim_matches(c, hv[i].claim, has_state, state, holder))
                json_array_append_new(arr, sl_json_claim(c->srv, hv[i].claim));
    sl_waiter_view wv[64];
    for (size_t off = 0, n; (n = sl_lock_waiters(c->srv->eng, lock, off, wv, 64)) > 0; off += n)
        for (size_t i = 0; i < n; i++)
            if (claim_matches(c, wv[i].claim, has_state, state, holder))
                json_array_append_new(arr, sl_json_claim(c->srv, wv[i].claim));
}

static void claims_list(sl_ctx *c)
{
    const char *s = sl_query_get(c, "state"), *holder = sl_query_get(c, "holder");
    const char *lock = sl_query_get(c, "lock");
    sl_state state = SL_PENDING;
    if (s && sl_state_parse(s, &state) != 0) {
        sl_reply_error(c, 400, "bad_request", "state=\"%s\" is not a claim state", s);
        return;
    }
    if (lock && ((strncmp(lock, "mtx/", 4) != 0 && strncmp(lock, "sem/", 4) != 0) ||
                 !sl_name_valid(lock + 4, strlen(lock + 4), false))) {
        sl_reply_error(c, 400, "bad_request",
                       "lock=\"%s\" is not a lock key: use mtx/NAME or sem/NAME", lock);
        return;
    }
    json_t *arr = json_array();
    if (lock) {
        claims_of_lock(c, lock, arr, s != NULL, state, holder);
    } else {
        size_t n = 0;
        for (const sl_claim *cl = sl_claim_next(c->srv->eng, NULL); cl && n < SL_LIST_MAX;
             cl = sl_claim_next(c->srv->eng, cl))
            if (claim_matches(c, cl, s != NULL, state, holder)) {
                json_array_append_new(arr, sl_json_claim(c->srv, (sl_claim *)cl));
                n++;
            }
    }
    sl_reply_json(c, 200, json_pack("{s:o}", "claims", arr));
}

static json_t *queue_entry(sl_ctx *c, const sl_claim *claim, size_t position)
{
    json_t *o = sl_json_claim(c->srv, claim);
    size_t lock = 0;
    sl_rule rule = sl_claim_main_rule(c->srv->eng, claim, &lock);
    json_object_set_new(o, "position", json_integer((json_int_t)position));
    json_object_set_new(o, "rule", json_string(sl_rule_name(rule)));
    return o;
}

void sl_route_queue(sl_ctx *c)
{
    c->route = SL_ROUTE_QUEUE;
    if (c->method != EVHTTP_REQ_GET) {
        sl_reply_add_header(c->req, "Allow", "GET");
        sl_reply_error(c, 405, "method_not_allowed", "/v1/queue takes GET");
        return;
    }
    const char *lock = sl_query_get(c, "lock");
    json_t *arr = json_array();
    if (lock) {
        sl_kind kind = strncmp(lock, "mtx/", 4) == 0 ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
        sl_lock_view lv;
        const sl_lock *l = NULL;
        if ((strncmp(lock, "mtx/", 4) != 0 && strncmp(lock, "sem/", 4) != 0) ||
            sl_lock_lookup(c->srv->eng, kind, lock + 4, &lv, &l) == SL_EINVAL) {
            json_decref(arr);
            sl_reply_error(c, 400, "bad_request",
                           "lock=\"%s\" is not a lock key: use mtx/NAME or sem/NAME", lock);
            return;
        }
        sl_waiter_view wv[64];
        for (size_t off = 0, n; l && (n = sl_lock_waiters(c->srv->eng, l, off, wv, 64)) > 0;
             off += n)
            for (size_t i = 0; i < n; i++)
                if (sl_auth_allows_claim(c, wv[i].claim))
                    json_array_append_new(arr, queue_entry(c, wv[i].claim, wv[i].position));
    } else {
        size_t pos = 0;
        for (const sl_claim *cl = sl_pending_next(c->srv->eng, NULL); cl && pos < SL_LIST_MAX;
             cl = sl_pending_next(c->srv->eng, cl))
            if (sl_auth_allows_claim(c, cl))
                json_array_append_new(arr, queue_entry(c, cl, ++pos));
    }
    sl_reply_json(c, 200, json_pack("{s:o}", "queue", arr));
}

static void one_claim(sl_ctx *c, const char *id, const char *action)
{
    if (action && strcmp(action, "cancel") == 0) {
        claim_cancel(c, id);
        return;
    }
    c->route = !action ? SL_ROUTE_CLAIM
                       : strcmp(action, "renew") == 0 ? SL_ROUTE_CLAIM_RENEW : SL_ROUTE_CLAIM_WHY;
    if (action && strcmp(action, "renew") != 0 && strcmp(action, "why") != 0) {
        sl_reply_error(c, 404, "not_found", "no such endpoint: %s", c->path);
        return;
    }
    sl_claim *claim = find_claim(c, id);
    if (!claim)
        return;
    if (!action && c->method == EVHTTP_REQ_GET)
        claim_get(c, claim);
    else if (!action && c->method == EVHTTP_REQ_DELETE)
        claim_delete(c, claim);
    else if (action && action[0] == 'r' && c->method == EVHTTP_REQ_POST)
        claim_renew(c, claim);
    else if (action && action[0] == 'w' && c->method == EVHTTP_REQ_GET)
        sl_reply_json(c, 200, sl_json_why(c->srv, claim));
    else {
        const char *allow = !action ? "GET, DELETE" : action[0] == 'r' ? "POST" : "GET";
        sl_reply_add_header(c->req, "Allow", allow);
        sl_reply_error(c, 405, "method_not_allowed", "%s takes %s", c->path, allow);
    }
}

void sl_route_claims(sl_ctx *c, const char *rest)
{
    if (*rest == '\0') {
        c->route = SL_ROUTE_CLAIMS;
        if (c->method == EVHTTP_REQ_POST)
            claim_post(c);
        else if (c->method == EVHTTP_REQ_GET)
            claims_list(c);
        else {
            sl_reply_add_header(c->req, "Allow", "GET, POST");
            sl_reply_error(c, 405, "method_not_allowed", "/v1/claims takes GET and POST");
        }
        return;
    }
    char id[SL_ID_MAX + 1];
    const char *slash = strchr(rest, '/');
    size_t len = slash ? (size_t)(slash - rest) : strlen(rest);
    if (len == 0 || len > SL_ID_MAX) {
        c->route = SL_ROUTE_CLAIM;
        sl_reply_error(c, 404, "not_found", "no claim %.*s", (int)(len > 64 ? 64 : len), rest);
        return;
    }
    memcpy(id, rest, len);
    id[len] = '\0';
    one_claim(c, id, slash ? slash + 1 : NULL);
}
