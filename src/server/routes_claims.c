/* routes_claims.c - /v1/claims and /v1/queue: claim, wait, renew, release,
 * an operator's cancel, why, and the listings. */
#include <stdlib.h>
#include <string.h>


#include "claim_body.h"
#include "claim_id.h"
#include "server.h"

/* The answer to a creation, or to its replay: 201 and the claim, or a
 * wait until it is held or ends. */
static void answer_created(sl_ctx *c, sl_claim *claim, int64_t wait_ms)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    char loc[SL_ID_MAX + 16];
    snprintf(loc, sizeof(loc), "/v1/claims/%s", v.id);
    sl_http_add_header(c->req, "Location", loc);
    int64_t wait = wait_ms < c->srv->conf->max_wait_ms ? wait_ms : c->srv->conf->max_wait_ms;
    if (wait > 0 && v.state == SL_PENDING)
        sl_wait_claim(c, SL_WAIT_CREATE, claim, SL_PENDING, wait, 201);
    else
        sl_reply_claim(c, 201, claim);
}

static void create(sl_ctx *c, sl_claim_body *b, const sl_idem_req *idem)
{
    char id[SL_CLAIM_ID_LEN + 1];
    sl_claim_id_new(c->now, id);
    b->req.id = id;
    if (!b->has_timeout)
        b->req.timeout_ms = c->srv->conf->default_timeout_ms;
    if (idem->key[0]) {
        b->req.idem = idem->key;
        b->req.idem_fp = idem->fp;
    }
    /* Only an admin token sets `created` far back: no token is one when
     * the server has no tokens, so a plain client cannot jump the queue. */
    b->req.backdate_any = c->auth.token && c->auth.token->admin;
    /* Who made it: kept and saved with the claim, so that its token's
     * quotas count it, after a restart too (quota.c). */
    b->req.actor = c->auth.token ? c->auth.token->name : NULL;
    if (!sl_auth_allows_holder(c, b->req.holder) || !sl_auth_allows_priority(c, b->req.priority) ||
        !sl_quota_claim(c, b->wait_ms > 0))
        return;
    sl_auth_claim auth;
    sl_auth_bind_claim(c, &b->req, &auth);
    sl_claim *claim = NULL;
    sl_error eerr;
    if (sl_claim_create(c->srv->eng, &b->req, c->now, &claim, &eerr) != 0) {
        sl_reply_engine_error(c, &eerr);
        return;
    }
    sl_server_touch(c->srv);
    answer_created(c, claim, b->wait_ms);
}

static void claim_post(sl_ctx *c)
{
    if (!sl_query_only(c, NULL) || sl_refuse_if_store_failed(c))
        return;
    json_t *body = sl_body_json(c);
    if (!body)
        return;
    /* The loop is one thread and a handler never re-enters itself: one
     * of each serves every request, with no allocation (they are large). */
    static sl_claim_body b_space;
    static sl_idem_req idem_space;
    sl_claim_body *b = &b_space;
    sl_idem_req *idem = &idem_space;
    char err[512];
    bool conflict = false;
    sl_claim *replayed = NULL;
    if (sl_claim_body_parse(body, b, err, sizeof(err)) != 0)
        sl_reply_error(c, 400, "bad_request", "%s", err);
    else if (sl_idem_from_request(c, body, idem) < 0)
        ; /* answered */
    else if ((replayed = sl_idem_replay(c, idem, &conflict)))
        answer_created(c, replayed, b->wait_ms);
    else if (!conflict)
        create(c, b, idem);
    json_decref(body);
}

static sl_claim *find_claim(sl_ctx *c, const char *id)
{
    /* A claim outside the token's prefixes is answered as one that does
     * not exist, word for word: a 403 would tell another tenant's claim ids
     * from made-up ones (F8). */
    sl_claim *claim = sl_claim_find(c->srv->eng, id);
    if (!claim || !sl_auth_allows_claim(c, claim)) {
        sl_reply_error(c, 404, "not_found",
                       "no claim %s: it never existed, or it ended more than the retention ago",
                       id);
        return NULL;
    }
    return claim;
}

static void claim_get(sl_ctx *c, sl_claim *claim)
{
    static const char *const known[] = {"wait", "seen", NULL};
    int64_t wait = 0;
    if (!sl_query_only(c, known) || sl_query_duration(c, "wait", &wait) != 0)
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
    if (!sl_auth_require_end(c, claim, "releasing"))
        return;
    if (!sl_state_ended(v.state)) {
        if (sl_refuse_if_store_failed(c))
            return;
        sl_claim_release(c->srv->eng, claim, SL_REASON_RELEASED, c->now);
        sl_server_touch(c->srv);
    }
    sl_reply_claim(c, 200, claim);
}

/* DELETE /v1/claims?holder_prefix=P: a run's cleanup in one call (its
 * holders named RUN/STEP: holder_prefix=RUN/). Every live claim whose holder
 * starts with P ends as its client's DELETE would end it: pending ones
 * withdrawn, held ones released, revoking ones canceled (the reason of
 * their revocation kept), one event each, counted under withdrawn,
 * released and canceled. A limited token's claims outside its read
 * permission are left alone and not counted anywhere, since a count of
 * what the token may not see would spell out other tenants' holder names a
 * guess at a time (F8). Those it may see but not end (another holder's
 * without the operate permission, F7) are left alone and counted as
 * `skipped`. The claims are gathered first, then
 * ended in one engine step (sl_claims_end): the whole set leaves before
 * anyone is let in, so none of them is granted on the way out and none,
 * leaving, preempts a holder outside it. */
static void claims_delete_prefix(sl_ctx *c)
{
    static const char *const known[] = {"holder_prefix", NULL};
    if (!sl_query_only(c, known))
        return;
    const char *prefix = sl_query_get(c, "holder_prefix");
    if (!prefix || !*prefix || strlen(prefix) > SL_HOLDER_MAX) {
        sl_reply_error(c, 400, "bad_request",
                       "DELETE /v1/claims needs holder_prefix=P (1 to %d characters): it ends "
                       "every live claim whose holder starts with P, such as a run's "
                       "(holder_prefix=run-42/); DELETE /v1/claims/{id} ends one claim",
                       SL_HOLDER_MAX);
        return;
    }
    if (!sl_auth_has(c, SL_PERM_CLAIM) && !sl_auth_has(c, SL_PERM_OPERATE)) {
        sl_reply_error(c, 403, "forbidden",
                       "ending claims needs the claim permission (for its own) or operate (for "
                       "others'), and this token has neither: it may only read");
        return;
    }
    if (sl_refuse_if_store_failed(c))
        return;
    size_t n = 0, cap = 0, skipped = 0;
    sl_claim **mine = NULL;
    size_t plen = strlen(prefix);
    for (const sl_claim *cl = sl_claim_next(c->srv->eng, NULL); cl;
         cl = sl_claim_next(c->srv->eng, cl)) {
        sl_claim_view v;
        sl_claim_get(cl, &v);
        if (sl_state_ended(v.state) || strncmp(v.holder, prefix, plen) != 0)
            continue;
        if (!sl_auth_allows_claim(c, cl))
            continue;
        if (!sl_auth_may_end(c, cl)) {
            skipped++;
            continue;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            sl_claim **grown = realloc(mine, cap * sizeof(*mine));
            if (!grown)
                abort();
            mine = grown;
        }
        mine[n++] = (sl_claim *)cl;
    }
    sl_bulk_counts done = {0, 0, 0, 0};
    sl_claims_end(c->srv->eng, mine, n, SL_BULK_RELEASE, c->now, &done);
    free(mine);
    if (done.released + done.withdrawn + done.canceled)
        sl_server_touch(c->srv);
    sl_reply_json(c, 200,
                  json_pack("{s:I,s:I,s:I,s:I}", "released", (json_int_t)done.released, "withdrawn",
                            (json_int_t)done.withdrawn, "canceled", (json_int_t)done.canceled,
                            "skipped", (json_int_t)skipped));
}

/* POST /v1/claims/{id}/cancel: an operator's cancel. A live claim
 * (pending, held or revoking) ends `canceled`, "canceled by an operator",
 * whoever its client is; an ended one is answered as it is, like DELETE.
 * Unlike DELETE, the claim's own client learns that someone else stopped
 * it. The same auth rule as DELETE (find_claim); no body is read. */
static void claim_cancel(sl_ctx *c, const char *id)
{
    c->route = SL_ROUTE_CLAIM_CANCEL;
    if (c->method != SL_HTTP_POST) {
        sl_allow(c, "POST");
        sl_reply_error(c, 405, "method_not_allowed", "%s takes POST", c->path);
        return;
    }
    if (!sl_query_only(c, NULL))
        return;
    sl_claim *claim = find_claim(c, id);
    if (!claim || !sl_auth_require_end(c, claim, "canceling"))
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
    if (!sl_auth_require_end(c, claim, "renewing") || sl_refuse_if_store_failed(c))
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
        v.state != SL_REVOKING
            ? "the claim has ended and cannot be renewed: stop using what it held"
        : v.reason == SL_REASON_PREEMPTED
            ? "the claim is being revoked for a waiting claim of higher priority (preempted): "
              "stop, then release it"
            : "the claim is being revoked by a newer claim of its group: stop, then release it",
        "claim", sl_json_claim(c->srv, claim));
    sl_reply_json(c, 409, body);
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
    bool get = !action && c->method == SL_HTTP_GET; /* takes wait and seen */
    if (!get && !sl_query_only(c, NULL))
        return;
    sl_claim *claim = find_claim(c, id);
    if (!claim)
        return;
    if (get)
        claim_get(c, claim);
    else if (!action && c->method == SL_HTTP_DELETE)
        claim_delete(c, claim);
    else if (action && action[0] == 'r' && c->method == SL_HTTP_POST)
        claim_renew(c, claim);
    else if (action && action[0] == 'w' && c->method == SL_HTTP_GET)
        sl_reply_json(c, 200, sl_json_why(c->srv, claim));
    else {
        const char *allow = !action ? "GET, DELETE" : action[0] == 'r' ? "POST" : "GET";
        sl_allow(c, allow);
        sl_reply_error(c, 405, "method_not_allowed", "%s takes %s", c->path, allow);
    }
}

void sl_route_claims(sl_ctx *c, const char *rest)
{
    if (*rest == '\0') {
        c->route = SL_ROUTE_CLAIMS;
        if (c->method == SL_HTTP_POST)
            claim_post(c);
        else if (c->method == SL_HTTP_GET)
            sl_route_claims_list(c);
        else if (c->method == SL_HTTP_DELETE)
            claims_delete_prefix(c);
        else {
            sl_allow(c, "GET, POST, DELETE");
            sl_reply_error(c, 405, "method_not_allowed", "/v1/claims takes GET, POST and DELETE");
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
