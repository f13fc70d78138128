/* locks.c - /v1/semaphores and /v1/mutexes: configure, read, list, delete. */
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

static int check(sl_client *c, const char *name, const void *out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    if (name && !*name)
        return sl__err_set(err, SL_CLIENT_EINVAL, "a lock name is required");
    return SL_CLIENT_OK;
}

/* "/v1/semaphores/NAME" or "/v1/mutexes/NAME" (NULL name: the listing). */
static void lock_path(sl__buf *b, bool semaphore, const char *name)
{
    sl__buf_str(b, semaphore ? "/v1/semaphores" : "/v1/mutexes");
    if (name) {
        sl__buf_str(b, "/");
        sl__buf_escape(b, name, true);
    }
}

/* A request answered with one lock. */
static int one_lock(sl_client *c, const char *method, bool semaphore, const char *name,
                    json_t *body, sl_client_lock **out, sl_client_error *err)
{
    *out = NULL;
    sl__buf path = {0};
    lock_path(&path, semaphore, name);
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    json_t *root = NULL;
    int rc = sl__http_json(c, method, path.p, body, 0, &root, err);
    sl__buf_free(&path);
    if (rc == SL_CLIENT_OK) {
        sl_client_lock *l = malloc(sizeof(*l));
        if (!l)
            rc = sl__err_oom(err);
        else if ((rc = sl__parse_lock(root, l, err)) != SL_CLIENT_OK)
            free(l);
        else
            *out = l;
    }
    json_decref(root);
    return rc;
}

static int listing(sl_client *c, bool semaphore, sl_client_lock_list *out, sl_client_error *err)
{
    out->items = NULL;
    out->n = 0;
    sl__buf path = {0};
    lock_path(&path, semaphore, NULL);
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    json_t *root = NULL;
    int rc = sl__http_json(c, "GET", path.p, NULL, 0, &root, err);
    sl__buf_free(&path);
    const char *field = semaphore ? "semaphores" : "mutexes";
    const json_t *arr = json_object_get(root, field);
    size_t n = json_array_size(arr);
    if (rc == SL_CLIENT_OK && !json_is_array(arr))
        rc = sl__err_set(err, SL_CLIENT_EPROTO, "the answer has no \"%s\" array", field);
    if (rc == SL_CLIENT_OK && n > 0) {
        out->items = calloc(n, sizeof(*out->items));
        if (!out->items)
            rc = sl__err_oom(err);
        for (size_t i = 0; out->items && i < n; i++) {
            rc = sl__parse_lock(json_array_get(arr, i), &out->items[i], err);
            if (rc != SL_CLIENT_OK) {
                sl_client_lock_list_free(out);
                break;
            }
            out->n = i + 1;
        }
    }
    json_decref(root);
    return rc;
}

/* Adds key: a string when s is set. */
static int put_str(json_t *body, const char *key, const char *s)
{
    return s ? json_object_set_new(body, key, json_string(s)) : 0;
}

/* Adds key: a whole number when n is above 0. */
static int put_uint(json_t *body, const char *key, uint64_t n)
{
    return n ? json_object_set_new(body, key, json_integer((json_int_t)n)) : 0;
}

int sl_client_semaphore_put(sl_client *c, const char *name, const sl_client_semaphore_config *cfg,
                            sl_client_lock **out, sl_client_error *err)
{
    int rc = check(c, name ? name : "", out, err);
    if (rc != SL_CLIENT_OK)
        return rc;
    *out = NULL;
    if (!cfg)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the configuration must not be NULL");
    const uint64_t max = (uint64_t)INT64_MAX;
    if (cfg->limit > max || cfg->max_pending > max || cfg->default_weight > max || cfg->burst > max)
        return sl__err_set(err, SL_CLIENT_EINVAL,
                           "limit, max_pending, default_weight and burst must be below 2^63");
    const char *strs[] = {cfg->strategy, cfg->lease, cfg->overtake_limit, cfg->preempt_grace,
                          cfg->on_full,  cfg->rate,  cfg->backdate};
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
        if (strs[i] && !sl__utf8_valid(strs[i]))
            return sl__err_set(err, SL_CLIENT_EINVAL, "the configuration's strings must be UTF-8");
    if (cfg->nweights && !cfg->weights)
        return sl__err_set(err, SL_CLIENT_EINVAL, "nweights is %zu but weights is NULL",
                           cfg->nweights);
    for (size_t i = 0; i < cfg->nweights; i++) {
        const char *k = cfg->weights[i].key;
        if (!k || !*k || !sl__utf8_valid(k))
            return sl__err_set(err, SL_CLIENT_EINVAL,
                               "weights[%zu]: a key must be a non-empty UTF-8 string", i);
        if (cfg->weights[i].weight > max)
            return sl__err_set(err, SL_CLIENT_EINVAL, "weights[%zu] (%s): the weight is too large",
                               i, k);
    }
    json_t *body = json_object();
    json_t *weights = cfg->nweights ? json_object() : NULL;
    bool bad = !body || (cfg->nweights && !weights);
    bad = bad || json_object_set_new(body, "limit", json_integer((json_int_t)cfg->limit)) != 0;
    bad = bad || put_str(body, "strategy", cfg->strategy) != 0;
    bad = bad || put_str(body, "lease", cfg->lease) != 0;
    bad = bad || put_str(body, "overtake_limit", cfg->overtake_limit) != 0;
    bad = bad || (cfg->preempt && json_object_set_new(body, "preempt", json_true()) != 0);
    bad = bad || put_str(body, "preempt_grace", cfg->preempt_grace) != 0;
    bad = bad || put_uint(body, "max_pending", cfg->max_pending) != 0;
    bad = bad || put_str(body, "on_full", cfg->on_full) != 0;
    for (size_t i = 0; !bad && i < cfg->nweights; i++)
        bad = json_object_set_new(weights, cfg->weights[i].key,
                                  json_integer((json_int_t)cfg->weights[i].weight)) != 0;
    if (!bad && weights) {
        bad = json_object_set_new(body, "weights", weights) != 0;
        weights = NULL; /* the body owns it now, even on failure */
    }
    bad = bad || put_uint(body, "default_weight", cfg->default_weight) != 0;
    bad = bad || put_str(body, "rate", cfg->rate) != 0;
    bad = bad || put_uint(body, "burst", cfg->burst) != 0;
    bad = bad || put_str(body, "backdate", cfg->backdate) != 0;
    json_decref(weights);
    if (bad) {
        json_decref(body);
        return sl__err_oom(err);
    }
    rc = one_lock(c, "PUT", true, name, body, out, err);
    json_decref(body);
    return rc;
}

int sl_client_semaphore_set(sl_client *c, const char *name, uint64_t limit, const char *strategy,
                            const char *lease, sl_client_lock **out, sl_client_error *err)
{
    sl_client_semaphore_config cfg = {.limit = limit, .strategy = strategy, .lease = lease};
    return sl_client_semaphore_put(c, name, &cfg, out, err);
}

int sl_client_semaphore_get(sl_client *c, const char *name, sl_client_lock **out,
                            sl_client_error *err)
{
    int rc = check(c, name ? name : "", out, err);
    return rc != SL_CLIENT_OK ? rc : one_lock(c, "GET", true, name, NULL, out, err);
}

int sl_client_mutex_get(sl_client *c, const char *name, sl_client_lock **out, sl_client_error *err)
{
    int rc = check(c, name ? name : "", out, err);
    return rc != SL_CLIENT_OK ? rc : one_lock(c, "GET", false, name, NULL, out, err);
}

int sl_client_semaphore_delete(sl_client *c, const char *name, sl_client_error *err)
{
    int rc = check(c, name ? name : "", c, err);
    if (rc != SL_CLIENT_OK)
        return rc;
    sl__buf path = {0};
    lock_path(&path, true, name);
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    json_t *root = NULL;
    rc = sl__http_json(c, "DELETE", path.p, NULL, 0, &root, err);
    sl__buf_free(&path);
    json_decref(root);
    return rc;
}

int sl_client_semaphores(sl_client *c, sl_client_lock_list *out, sl_client_error *err)
{
    int rc = check(c, NULL, out, err);
    return rc != SL_CLIENT_OK ? rc : listing(c, true, out, err);
}

int sl_client_mutexes(sl_client *c, sl_client_lock_list *out, sl_client_error *err)
{
    int rc = check(c, NULL, out, err);
    return rc != SL_CLIENT_OK ? rc : listing(c, false, out, err);
}
