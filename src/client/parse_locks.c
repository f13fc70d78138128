/* parse_locks.c - locks, the server's status and a cleared queue, from
 * the server's JSON (parse.c tells the rules). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "parse_int.h"

/* ---- locks --------------------------------------------------------------------------- */

void sl__lock_clear(sl_client_lock *l)
{
    free(l->name);
    free(l->strategy);
    free(l->from_pattern);
    for (size_t i = 0; i < l->nholders; i++) {
        free(l->holders[i].claim);
        free(l->holders[i].holder);
    }
    free(l->holders);
    for (size_t i = 0; i < l->npending; i++) {
        free(l->pending[i].claim);
        free(l->pending[i].holder);
        free(l->pending[i].reason);
    }
    free(l->pending);
    free(l->json);
    free(l->on_full);
    for (size_t i = 0; i < l->nweights; i++)
        free(l->weights[i].key);
    free(l->weights);
    free(l->rate);
    memset(l, 0, sizeof(*l));
}

static void lock_holders(pctx *p, const json_t *arr, sl_client_lock *l)
{
    size_t n = json_array_size(arr);
    l->holders = sl__pf_alloc(p, n, sizeof(*l->holders));
    for (size_t i = 0; l->holders && i < n && !p->rc; i++) {
        const json_t *h = json_array_get(arr, i);
        sl_client_holder *d = &l->holders[i];
        if (!sl__pf_object(p, h))
            break;
        l->nholders = i + 1;
        d->claim = sl__pf_str(p, h, "claim", true, false);
        d->holder = sl__pf_str(p, h, "holder", true, false);
        d->slots = (unsigned)sl__pf_uint(p, h, "slots", false, 1, NULL);
        d->token = sl__pf_uint(p, h, "token", false, 0, NULL);
        d->since_ms = sl__pf_time(p, h, "since");
        d->expires_ms = sl__pf_time(p, h, "expires");
    }
}

static void lock_pending(pctx *p, const json_t *arr, sl_client_lock *l)
{
    size_t n = json_array_size(arr);
    l->pending = sl__pf_alloc(p, n, sizeof(*l->pending));
    for (size_t i = 0; l->pending && i < n && !p->rc; i++) {
        const json_t *w = json_array_get(arr, i);
        sl_client_waiter *d = &l->pending[i];
        if (!sl__pf_object(p, w))
            break;
        l->npending = i + 1;
        d->claim = sl__pf_str(p, w, "claim", true, false);
        d->holder = sl__pf_str(p, w, "holder", true, false);
        d->reason = sl__pf_str(p, w, "reason", false, true);
        d->slots = (unsigned)sl__pf_uint(p, w, "slots", false, 1, NULL);
        d->position = (size_t)sl__pf_uint(p, w, "position", false, 0, NULL);
        d->priority = (int)sl__pf_int(p, w, "priority", 0);
        d->created_ms = sl__pf_time(p, w, "created");
    }
}

/* "weights": {key: weight} of a rebalanced semaphore. */
static void lock_weights(pctx *p, const json_t *obj, sl_client_lock *l)
{
    if (p->rc || !obj || json_is_null(obj))
        return;
    if (!json_is_object(obj)) {
        sl__pf_fail(p, SL_CLIENT_EPROTO, "weights", "an object");
        return;
    }
    size_t n = json_object_size(obj);
    l->weights = sl__pf_alloc(p, n, sizeof(*l->weights));
    const char *key;
    json_t *value;
    size_t i = 0;
    json_object_foreach((json_t *)obj, key, value)
    {
        if (!l->weights || p->rc || i >= n)
            break;
        if (!json_is_integer(value) || json_integer_value(value) < 0) {
            sl__pf_fail(p, SL_CLIENT_EPROTO, "weights", "whole-number values");
            break;
        }
        l->weights[i].key = sl__pf_dup(p, key);
        l->weights[i].weight = (uint64_t)json_integer_value(value);
        l->nweights = ++i;
    }
}

/* The semaphore's rules (absent on a mutex and from older servers: off). */
static void lock_rules(pctx *p, const json_t *o, sl_client_lock *l)
{
    l->inline_limit = json_is_true(json_object_get(o, "inline"));
    l->preempt = json_is_true(json_object_get(o, "preempt"));
    l->overtake_limit_ms = -1;
    if (json_object_get(o, "overtake_limit"))
        l->overtake_limit_ms = sl__pf_duration(p, o, "overtake_limit");
    l->preempt_grace_ms = sl__pf_duration(p, o, "preempt_grace");
    l->max_pending = sl__pf_uint(p, o, "max_pending", false, 0, NULL);
    l->on_full = sl__pf_str(p, o, "on_full", false, false);
    lock_weights(p, json_object_get(o, "weights"), l);
    l->default_weight = sl__pf_uint(p, o, "default_weight", false, 0, NULL);
    l->rate = sl__pf_str(p, o, "rate", false, false);
    l->burst = sl__pf_uint(p, o, "burst", false, 0, NULL);
    l->backdate_ms = sl__pf_duration(p, o, "backdate");
}

int sl__parse_lock(const json_t *o, sl_client_lock *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "lock"};
    if (!sl__pf_object(&p, o))
        return p.rc;
    const char *kind = json_string_value(json_object_get(o, "kind"));
    out->semaphore = !kind || strcmp(kind, "mutex") != 0;
    out->name = sl__pf_str(&p, o, "name", true, false);
    out->strategy = sl__pf_str(&p, o, "strategy", false, true);
    out->from_pattern = sl__pf_str(&p, o, "from_pattern", false, false);
    out->limit = sl__pf_uint(&p, o, "limit", true, 0, NULL);
    out->used = sl__pf_uint(&p, o, "used", false, 0, NULL);
    out->token = sl__pf_uint(&p, o, "token", false, 0, NULL);
    out->lease_ms = sl__pf_duration(&p, o, "lease");
    lock_rules(&p, o, out);
    lock_holders(&p, sl__pf_array(&p, o, "holders", false), out);
    lock_pending(&p, sl__pf_array(&p, o, "pending", false), out);
    bool has;
    out->holders_count = (size_t)sl__pf_uint(&p, o, "holders_count", false, 0, &has);
    if (!has)
        out->holders_count = out->nholders;
    out->pending_count = (size_t)sl__pf_uint(&p, o, "pending_count", false, 0, &has);
    if (!has)
        out->pending_count = out->npending;
    out->json = sl__pf_dump(&p, o);
    if (p.rc)
        sl__lock_clear(out);
    return p.rc;
}

void sl_client_lock_free(sl_client_lock *lock)
{
    if (!lock)
        return;
    sl__lock_clear(lock);
    free(lock);
}

void sl_client_lock_list_free(sl_client_lock_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        sl__lock_clear(&list->items[i]);
    free(list->items);
    list->items = NULL;
    list->n = 0;
}

/* ---- status --------------------------------------------------------------------------- */

static void status_clear(sl_client_status *st)
{
    free(st->status);
    free(st->version);
    free(st->store);
    free(st->json);
    free(st->role);
    free(st->leader);
    free(st->self);
    memset(st, 0, sizeof(*st));
}

void sl_client_status_free(sl_client_status *st)
{
    if (!st)
        return;
    status_clear(st);
    free(st);
}

int sl__parse_status(const json_t *o, sl_client_status *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "status"};
    if (!sl__pf_object(&p, o))
        return p.rc;
    out->status = sl__pf_str(&p, o, "status", true, false);
    out->version = sl__pf_str(&p, o, "version", false, true);
    out->store = sl__pf_str(&p, o, "store", false, true);
    const json_t *claims = json_object_get(o, "claims");
    if (claims && !json_is_object(claims))
        sl__pf_fail(&p, SL_CLIENT_EPROTO, "claims", "an object");
    out->pending = sl__pf_uint(&p, claims, "pending", false, 0, NULL);
    out->held = sl__pf_uint(&p, claims, "held", false, 0, NULL);
    out->ended = sl__pf_uint(&p, claims, "ended", false, 0, NULL);
    out->next_seq = sl__pf_uint(&p, o, "next_seq", false, 0, NULL);
    out->counted = claims != NULL;
    out->role = sl__pf_str(&p, o, "role", false, false);
    out->epoch = sl__pf_uint(&p, o, "epoch", false, 0, NULL);
    out->leader = sl__pf_str(&p, o, "leader", false, false); /* null while none leads */
    out->self = sl__pf_str(&p, o, "self", false, false);
    out->json = sl__pf_dump(&p, o);
    if (p.rc)
        status_clear(out);
    return p.rc;
}

/* ---- clearing a queue ------------------------------------------------------------- */

void sl_client_queue_cleared_free(sl_client_queue_cleared *cleared)
{
    if (!cleared)
        return;
    free(cleared->json);
    memset(cleared, 0, sizeof(*cleared));
}

int sl__parse_queue_cleared(const json_t *o, sl_client_queue_cleared *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "queue clearing answer"};
    if (!sl__pf_object(&p, o))
        return p.rc;
    /* Required: a count left out would read as nothing canceled. */
    out->canceled = sl__pf_uint(&p, o, "canceled", true, 0, NULL);
    out->json = sl__pf_dump(&p, o);
    if (p.rc)
        sl_client_queue_cleared_free(out);
    return p.rc;
}
