/* routes.c - from an HTTP request to a handler: method and path, auth, the request's time, and the
 * helpers handlers share for query parameters and JSON bodies. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "json_depth.h"
#include "server.h"

const char *sl_query_get(const sl_ctx *c, const char *key)
{
    return sl_query_find(c->query, key);
}

int sl_query_duration(sl_ctx *c, const char *key, int64_t *ms)
{
    const char *v = sl_query_get(c, key);
    if (!v)
        return 0;
    const char *problem = sl_duration_problem(v);
    if (problem) {
        sl_reply_error(c, 400, "bad_request",
                       "query parameter %s=\"%.64s\" %s; use a duration such as 250ms, 20s, 5m, "
                       "1h30m or a number of seconds",
                       key, v, problem);
        return -1;
    }
    return sl_duration_parse(v, ms);
}

/* "a, b and c" into buf. */
static void word_list(const char *const *names, char *buf, size_t cap)
{
    size_t n = 0, len = 0;
    while (names && names[n])
        n++;
    buf[0] = '\0';
    for (size_t i = 0; i < n && len < cap; i++) {
        int w = snprintf(buf + len, cap - len, "%s%s",
                         i == 0       ? ""
                         : i + 1 == n ? " and "
                                      : ", ",
                         names[i]);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

bool sl_query_only(sl_ctx *c, const char *const *known)
{
    const sl_query *q = c->query;
    for (size_t k = 0; k < q->n; k++) {
        bool ok = false;
        for (size_t i = 0; known && known[i] && !ok; i++)
            ok = strcmp(q->key[k], known[i]) == 0;
        char takes[160];
        word_list(known, takes, sizeof(takes));
        if (!ok) {
            /* As with unknown body fields: a misspelt "?wiat=20s" must not
             * silently become a request without its wait. */
            sl_reply_error(c, 400, "bad_request",
                           "unknown query parameter \"%.64s\"; %s takes %s%s", q->key[k], c->path,
                           takes[0] ? "only " : "no query parameters", takes);
            return false;
        }
        for (size_t o = k + 1; o < q->n; o++) {
            if (strcmp(q->key[o], q->key[k]) == 0) {
                sl_reply_error(c, 400, "bad_request",
                               "query parameter %s is given twice; give it once", q->key[k]);
                return false;
            }
        }
    }
    return true;
}

int sl_query_uint_in(sl_ctx *c, const char *key, uint64_t min, uint64_t max, uint64_t *out)
{
    const char *v = sl_query_get(c, key);
    if (!v)
        return 0;
    char *end = NULL;
    unsigned long long n = strtoull(v, &end, 10);
    if (!isdigit((unsigned char)v[0]) || *end || n < min || n > max) {
        sl_reply_error(c, 400, "bad_request",
                       "query parameter %s=\"%s\" is not a whole number from %llu to %llu", key, v,
                       (unsigned long long)min, (unsigned long long)max);
        return -1;
    }
    *out = n;
    return 0;
}

int sl_query_uint(sl_ctx *c, const char *key, uint64_t max, uint64_t *out)
{
    return sl_query_uint_in(c, key, 0, max, out);
}

json_t *sl_body_json(sl_ctx *c)
{
    size_t n = 0;
    const char *p = sl_http_req_body(c->req, &n);
    if (n > c->srv->conf->max_body) { /* the HTTP layer refuses these first */
        sl_reply_error(c, 413, "too_large", "the body is %zu bytes; at most %zu are accepted", n,
                       c->srv->conf->max_body);
        return NULL;
    }
    if (n == 0) {
        sl_reply_error(c, 400, "bad_request", "a JSON object body is required");
        return NULL;
    }
    if (sl_json_depth(p, n) > SL_JSON_DEPTH_MAX) {
        sl_reply_error(c, 400, "bad_request", "the JSON is nested deeper than %d levels",
                       SL_JSON_DEPTH_MAX);
        return NULL;
    }
    json_error_t jerr;
    json_t *body = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        sl_reply_error(c, 400, "bad_request", "malformed JSON at line %d, column %d: %s", jerr.line,
                       jerr.column, jerr.text);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        sl_reply_error(c, 400, "bad_request", "the body must be a JSON object");
        return NULL;
    }
    return body;
}

bool sl_holder_of_run(const char *run, const char *holder)
{
    size_t n = strlen(run);
    return holder && strncmp(holder, run, n) == 0 && (holder[n] == '\0' || holder[n] == '/');
}

bool sl_query_run(sl_ctx *c, const char **run)
{
    *run = sl_query_get(c, "run");
    if (*run && (!**run || strlen(*run) > SL_HOLDER_MAX)) {
        sl_reply_error(c, 400, "bad_request",
                       "run= must be 1 to %d characters: RUN stands for the claims of holder "
                       "RUN and of holders RUN/...",
                       SL_HOLDER_MAX);
        return false;
    }
    return true;
}

void sl_allow(sl_ctx *c, const char *methods)
{
    char buf[64];
    const char *get = strstr(methods, "GET");
    if (get && (get[3] == '\0' || get[3] == ',')) {
        snprintf(buf, sizeof(buf), "%.*s, HEAD%s", (int)(get - methods + 3), methods, get + 3);
        methods = buf;
    }
    sl_http_add_header(c->req, "Allow", methods);
}

static const char *prefixed(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0)
        return NULL;
    if (path[n] == '\0')
        return path + n;
    if (path[n] == '/')
        return path + n + 1;
    return NULL;
}

static void dispatch(sl_ctx *c)
{
    const char *p = c->path;
    const char *rest;
    if ((rest = prefixed(p, "/v1/claims")))
        sl_route_claims(c, rest);
    else if ((rest = prefixed(p, "/v1/semaphores")))
        sl_route_semaphores(c, rest);
    else if ((rest = prefixed(p, "/v1/mutexes")))
        sl_route_mutexes(c, rest);
    else if ((rest = prefixed(p, "/v1/events")))
        sl_route_events(c, rest);
    else if (strcmp(p, "/v1/queue") == 0)
        sl_route_queue(c);
    else if (strcmp(p, "/v1/status") == 0)
        sl_route_status(c);
    else if (strcmp(p, "/v1/history") == 0)
        sl_route_history(c);
    else if (strcmp(p, "/v1/whoami") == 0)
        sl_route_whoami(c);
    else if (strcmp(p, "/metrics") == 0)
        sl_route_metrics(c);
    else
        sl_reply_error(c, 404, "not_found",
                       "no such endpoint: %s; the endpoints are /v1/semaphores, /v1/mutexes, "
                       "/v1/claims, /v1/queue, /v1/events, /v1/history, /v1/status, /v1/whoami, "
                       "/healthz and /metrics",
                       p);
}

/* The plain listener beside TLS (plain_listen) is for local health checks:
 * the rest of the API goes over TLS, where a client certificate, when the
 * server asks for one, is checked. Answers 403 and returns true for what
 * it does not serve. */
static bool plain_beside_tls(sl_ctx *c)
{
    if (!c->srv->conf->tls_cert || sl_http_req_tls(c->req) || strcmp(c->path, "/healthz") == 0 ||
        strcmp(c->path, "/metrics") == 0)
        return false;
    sl_reply_error(c, 403, "forbidden",
                   "this listener (plain_listen) serves /healthz and /metrics only; use the TLS "
                   "listener, https://%s",
                   c->srv->conf->listen);
    return true;
}

static bool changes(sl_http_method m)
{
    return m == SL_HTTP_POST || m == SL_HTTP_PUT || m == SL_HTTP_PATCH || m == SL_HTTP_DELETE;
}

void sl_routes_handle(void *ud, sl_http_req *req)
{
    sl_server *srv = ud;
    sl_ctx c = {.srv = srv, .req = req, .method = sl_http_req_method(req)};
    sl_query query;
    char path[2048];
    const char *why = NULL;
    c.query = &query;
    c.path = "the request";
    if (sl_target_parse(sl_http_req_target(req), path, sizeof(path), &query, &why) != 0) {
        query.n = 0;
        sl_reply_error(&c, 400, "bad_request", "%s", why);
        return;
    }
    c.path = path;
    /* Before any relay: the leader is sent none of the headers it reads. */
    if (sl_browser_check(&c) != 0)
        return;
    if (plain_beside_tls(&c) || sl_forward_refuses(&c))
        return;
    /* HEAD is a GET whose body the HTTP layer leaves out: every route that
     * takes GET takes HEAD (RFC 9110, 9.3.2). */
    if (c.method == SL_HTTP_HEAD) {
        c.method = SL_HTTP_GET;
        c.head = true;
    }
    /* Shared mode: the API is the leader's; a server that does not lead
     * relays it there (role.c), /metrics too unless ?server=self asks for
     * this server's own. Its /healthz and dashboard files are its own. */
    bool api = strncmp(path, "/v1/", 4) == 0 ||
               (strcmp(path, "/metrics") == 0 && !sl_query_find(&query, "server"));
    if (api && !sl_role_route(srv, req, path))
        return;
    sl_role_headers(srv, req);
    c.now = sl_server_now(srv);
    /* Timers due by now fire before the request is looked at, so that it sees
     * the state the engine's rules say holds at this moment. */
    sl_engine_advance(srv->eng, c.now);
    if (sl_engine_changes_pending(srv->eng))
        sl_server_touch(srv);
    if (strcmp(path, "/healthz") == 0) {
        c.route = SL_ROUTE_HEALTHZ;
        sl_route_health(&c);
    } else if (strncmp(path, "/v1/", 4) != 0 && strcmp(path, "/metrics") != 0) {
        c.route = SL_ROUTE_UI;
        sl_route_ui(&c);
    } else if (sl_auth_check(&c) == 0) {
        /* F11: what the request's engine calls do carries its principal;
         * after it, what the server does on its own carries its own. The
         * audit line, written when the answer goes, names it too. */
        if (sl_audit_on(srv))
            sl_http_req_set_label(req, sl_auth_actor(&c));
        if (!sl_quota_request(&c) || (changes(c.method) && sl_audit_refuses(&c)))
            return;
        sl_engine_act_as(srv->eng, sl_auth_actor(&c));
        dispatch(&c);
        sl_engine_act_as(srv->eng, NULL);
    }
}
