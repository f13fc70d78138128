/* routes_locks.c - /v1/semaphores and /v1/mutexes: configure, read, list. */
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "json_fields.h"
#include "sem_rules.h"
#include "server.h"

bool sl_refuse_if_store_failed(sl_ctx *c)
{
    if (!c->srv->store_failed)
        return false;
    sl_reply_error(c, 503, "unavailable",
                   "the store cannot commit right now, so no change is accepted; retry once "
                   "/healthz answers 200");
    return true;
}

static bool name_ok(sl_ctx *c, const char *name, bool pattern)
{
    if (sl_name_valid(name, strlen(name), pattern))
        return true;
    sl_reply_error(c, 400, "bad_request",
                   "\"%s\" is not a lock name: 1 to 253 characters of A-Z a-z 0-9 . _ - / : =, "
                   "no leading or trailing '/', no '//', no '.' or '..' segment%s",
                   name, pattern ? ", optionally ending in '*'" : "");
    return false;
}

static bool allowed(sl_ctx *c, const char *name)
{
    return sl_auth_require(c, SL_PERM_READ, name, "reading a lock");
}

/* F7: a limited token changes only what it may configure, and never a
 * semaphore or pattern the configuration file lists: the operator's
 * settings would otherwise pass to the API for good (a PUT makes it the
 * API's, and the file no longer applies to it). */
static bool may_configure(sl_ctx *c, const char *name)
{
    if (!sl_auth_require(c, SL_PERM_CONFIGURE, name, "configuring a semaphore"))
        return false;
    const sl_conf *conf = c->srv->conf;
    for (size_t i = 0; !c->auth.admin && i < conf->nsemaphores; i++) {
        if (strcmp(conf->semaphores[i].name, name) == 0) {
            sl_reply_error(c, 403, "forbidden",
                           "semaphore %s is managed by the configuration file: change it there "
                           "and reload, or ask with an admin token",
                           name);
            return false;
        }
    }
    return true;
}

#define SEM_SHAPE                                                                          \
    "the body is {\"limit\": N, \"strategy\": \"strict\"|\"skip\"|\"rebalanced\", "          \
    "\"lease\": \"30s\", \"overtake_limit\": \"1m\"} and the rules \"preempt\", "              \
    "\"preempt_grace\", \"max_pending\", \"on_full\", \"weights\", \"default_weight\", "     \
    "\"rate\", \"burst\", \"backdate\"; only limit is required"

/* A PUT body's values; -1 and a message naming the field and the fix. */
static int sem_body(json_t *body, sl_sem_opts *o, sl_weight *weights, char *err, size_t cap)
{
    static const char *const fields[] = {"limit", "strategy", "lease", "overtake_limit",
                                         SL_SEM_RULE_FIELDS, NULL};
    if (sl_json_known_fields(body, fields, "", SEM_SHAPE, err, cap) != 0)
        return -1;
    json_t *lim = json_object_get(body, "limit"), *strategy = json_object_get(body, "strategy");
    char text[80];
    if (!lim) {
        snprintf(err, cap, "limit is required: {\"limit\": N} with N from 0 (paused) to %u",
                 SL_LIMIT_MAX);
        return -1;
    }
    if (!json_is_integer(lim) || json_integer_value(lim) < 0 ||
        json_integer_value(lim) > SL_LIMIT_MAX) {
        sl_json_value_text(lim, text, sizeof(text));
        snprintf(err, cap, "limit must be a whole number from 0 (paused) to %u, not %s",
                 SL_LIMIT_MAX, text);
        return -1;
    }
    o->limit = (uint32_t)json_integer_value(lim);
    if (strategy && (!json_is_string(strategy) ||
                     sl_strategy_parse(json_string_value(strategy), &o->strategy) != 0)) {
        sl_json_value_text(strategy, text, sizeof(text));
        snprintf(err, cap, "strategy must be \"strict\", \"skip\" or \"rebalanced\", not %s",
                 text);
        return -1;
    }
    json_t *overtake = json_object_get(body, "overtake_limit");
    if (overtake && o->strategy != SL_SKIP) {
        snprintf(err, cap, "overtake_limit applies to the skip strategy only (this semaphore is "
                           "%s); leave it out",
                 sl_strategy_name(o->strategy));
        return -1;
    }
    if (sl_body_duration(overtake, "overtake_limit", &o->overtake_ms, err, cap) != 0 ||
        sl_sem_rules_parse(body, o, weights, err, cap) != 0)
        return -1;
    return sl_body_lease(json_object_get(body, "lease"), &o->lease_ms, err, cap);
}

static void sem_put(sl_ctx *c, const char *name)
{
    if (!name_ok(c, name, true) || !may_configure(c, name) || sl_refuse_if_store_failed(c))
        return;
    json_t *body = sl_body_json(c);
    if (!body)
        return;
    sl_sem_opts o;
    sl_sem_opts_default(&o, 0);
    static sl_weight weights[SL_WEIGHTS_MAX]; /* one handler at a time: the loop's thread */
    char msg[512];
    if (sem_body(body, &o, weights, msg, sizeof(msg)) != 0) {
        sl_reply_error(c, 400, "bad_request", "%s", msg);
    } else if (sl_quota_semaphore(c, name)) {
        sl_error err;
        if (sl_sem_configure(c->srv->eng, name, &o, c->now, &err) != 0) {
            sl_reply_engine_error(c, &err);
        } else {
            sl_server_touch(c->srv);
            sl_route_semaphores(c, NULL); /* answers with the semaphore as GET does */
        }
    }
    json_decref(body);
}

/* The query a lock's GET takes: limit= bounds its holders and pending
 * lists (their counts are always whole). */
static const char *const lock_query[] = {"limit", NULL};

static void lock_get(sl_ctx *c, sl_kind kind, const char *name)
{
    uint64_t list_max = SL_LIST_MAX;
    if (!name_ok(c, name, kind == SL_KIND_SEMAPHORE) || !allowed(c, name) ||
        sl_query_uint(c, "limit", SL_LIST_MAX, &list_max) != 0)
        return;
    size_t len = strlen(name);
    if (kind == SL_KIND_SEMAPHORE && name[len - 1] == '*') {
        const sl_config *cfg = sl_config_find(c->srv->eng, name);
        if (!cfg) {
            sl_reply_error(c, 404, "not_found", "no pattern %s is configured", name);
            return;
        }
        json_t *o = sl_json_config_entry(c->srv, cfg);
        json_object_set_new(o, "holders", json_array());
        json_object_set_new(o, "pending", json_array());
        sl_reply_json(c, 200, o);
        return;
    }
    sl_lock_view v;
    const sl_lock *lock = NULL;
    if (sl_lock_lookup(c->srv->eng, kind, name, &v, &lock) != 0) {
        /* Only a semaphore can be missing: every valid mutex name exists, unused. */
        if (kind == SL_KIND_SEMAPHORE)
            sl_reply_error(c, 404, "not_found",
                           "no semaphore %s: configure it with PUT /v1/semaphores/%s or a "
                           "pattern (a semaphore made by claims' inline limit is gone once it "
                           "has no holders and no waiters)",
                           name, name);
        else
            sl_reply_error(c, 404, "not_found", "no mutex %s", name);
        return;
    }
    json_t *o = sl_json_lock(c->srv, &v, lock, (size_t)list_max);
    if (list_max == 0) {
        json_object_set_new(o, "holders", json_array());
        json_object_set_new(o, "pending", json_array());
    }
    sl_reply_json(c, 200, o);
}

static int by_name(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "name"));
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "name"));
    return strcmp(x, y);
}

/* A listing sorted by name, so that it reads the same every time. */
static json_t *sorted(json_t *arr)
{
    size_t n = json_array_size(arr);
    json_t **v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        abort();
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(arr, i));
    qsort(v, n, sizeof(*v), by_name);
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(out, v[i]);
    free(v);
    json_decref(arr);
    return out;
}

/* Every configured semaphore and pattern, and every semaphore made from a
 * pattern or an inline limit while it has holders or waiters. */
static void sem_list(sl_ctx *c)
{
    sl_engine *eng = c->srv->eng;
    json_t *arr = json_array();
    for (const sl_config *cfg = sl_config_next(eng, NULL); cfg; cfg = sl_config_next(eng, cfg)) {
        sl_config_view cv;
        sl_config_get(cfg, &cv);
        if (!sl_auth_allows(c, cv.name))
            continue;
        sl_lock_view v;
        const sl_lock *lock = NULL;
        if (cv.pattern)
            json_array_append_new(arr, sl_json_config_entry(c->srv, cfg));
        else if (sl_lock_lookup(eng, SL_KIND_SEMAPHORE, cv.name, &v, &lock) == 0)
            json_array_append_new(arr, sl_json_lock(c->srv, &v, lock, 0));
    }
    for (const sl_lock *l = sl_lock_next(eng, NULL); l; l = sl_lock_next(eng, l)) {
        sl_lock_view v;
        sl_lock_get(l, &v);
        if (v.kind == SL_KIND_SEMAPHORE && (v.from_pattern || v.inline_limit) &&
            (v.nholders || v.npending) && sl_auth_allows(c, v.name))
            json_array_append_new(arr, sl_json_lock(c->srv, &v, l, 0));
    }
    sl_reply_json(c, 200, json_pack("{s:o}", "semaphores", sorted(arr)));
}

static void mutex_list(sl_ctx *c)
{
    sl_engine *eng = c->srv->eng;
    json_t *arr = json_array();
    for (const sl_lock *l = sl_lock_next(eng, NULL); l; l = sl_lock_next(eng, l)) {
        sl_lock_view v;
        sl_lock_get(l, &v);
        if (v.kind == SL_KIND_MUTEX && (v.nholders || v.npending) && sl_auth_allows(c, v.name))
            json_array_append_new(arr, sl_json_lock(c->srv, &v, l, 0));
    }
    sl_reply_json(c, 200, json_pack("{s:o}", "mutexes", sorted(arr)));
}

static void sem_delete(sl_ctx *c, const char *name)
{
    if (!name_ok(c, name, true) || !may_configure(c, name) || sl_refuse_if_store_failed(c))
        return;
    sl_error err;
    if (sl_sem_delete(c->srv->eng, name, c->now, &err) != 0) {
        sl_reply_engine_error(c, &err);
        return;
    }
    sl_server_touch(c->srv);
    sl_reply_empty(c, 204);
}

static void method_not_allowed(sl_ctx *c, const char *allow)
{
    sl_allow(c, allow);
    sl_reply_error(c, 405, "method_not_allowed", "%s takes %s", c->path, allow);
}

/* rest == NULL: answer the semaphore just configured (after a PUT). */
void sl_route_semaphores(sl_ctx *c, const char *rest)
{
    bool one = rest && *rest && c->method == SL_HTTP_GET;
    if (rest && !sl_query_only(c, one ? lock_query : NULL))
        return;
    if (!rest) {
        lock_get(c, SL_KIND_SEMAPHORE, c->path + strlen("/v1/semaphores/"));
        return;
    }
    if (*rest == '\0') {
        c->route = SL_ROUTE_SEMAPHORES;
        if (c->method == SL_HTTP_GET)
            sem_list(c);
        else
            method_not_allowed(c, "GET");
        return;
    }
    c->route = SL_ROUTE_SEMAPHORE;
    switch (c->method) {
    case SL_HTTP_GET:
        lock_get(c, SL_KIND_SEMAPHORE, rest);
        break;
    case SL_HTTP_PUT:
        sem_put(c, rest);
        break;
    case SL_HTTP_DELETE:
        sem_delete(c, rest);
        break;
    default:
        method_not_allowed(c, "GET, PUT, DELETE");
    }
}

void sl_route_mutexes(sl_ctx *c, const char *rest)
{
    c->route = *rest ? SL_ROUTE_MUTEX : SL_ROUTE_MUTEXES;
    if (!sl_query_only(c, *rest && c->method == SL_HTTP_GET ? lock_query : NULL))
        return;
    if (c->method != SL_HTTP_GET) {
        method_not_allowed(c, "GET");
        return;
    }
    if (*rest)
        lock_get(c, SL_KIND_MUTEX, rest);
    else
        mutex_list(c);
}
