/* parse_claims.c - claims, why a claim waits, events and a release by
 * holder prefix, from the server's JSON (parse.c tells the rules). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "parse_int.h"

/* ---- claims ----------------------------------------------------------------------- */

void sl__claim_clear(sl_client_claim *c)
{
    free(c->id);
    free(c->state);
    free(c->holder);
    free(c->group);
    free(c->rebalance_key);
    free(c->reason);
    free(c->by);
    for (size_t i = 0; i < c->nlocks; i++)
        free(c->locks[i].name);
    free(c->locks);
    for (size_t i = 0; i < c->ntags; i++) {
        free(c->tags[i].key);
        free(c->tags[i].value);
    }
    free(c->tags);
    for (size_t i = 0; i < c->ngroups; i++) {
        free(c->groups[i].name);
        free(c->groups[i].cancel);
    }
    free(c->groups);
    free(c->rule);
    free(c->json);
    memset(c, 0, sizeof(*c));
}

void sl_client_claim_free(sl_client_claim *claim)
{
    if (!claim)
        return;
    sl__claim_clear(claim);
    free(claim);
}

static void claim_locks(pctx *p, const json_t *arr, sl_client_claim *c)
{
    size_t n = json_array_size(arr);
    c->locks = sl__pf_alloc(p, n, sizeof(*c->locks));
    for (size_t i = 0; c->locks && i < n && !p->rc; i++) {
        const json_t *l = json_array_get(arr, i);
        sl_client_claim_lock *cl = &c->locks[i];
        if (!sl__pf_object(p, l))
            break;
        const char *kind = json_string_value(json_object_get(l, "kind"));
        if (!kind || (strcmp(kind, "mutex") != 0 && strcmp(kind, "semaphore") != 0)) {
            sl__pf_fail(p, SL_CLIENT_EPROTO, "locks[].kind", "mutex or semaphore");
            break;
        }
        cl->semaphore = strcmp(kind, "semaphore") == 0;
        cl->name = sl__pf_str(p, l, "name", true, false);
        if (cl->name)
            c->nlocks = i + 1; /* what to free */
        cl->slots = (unsigned)sl__pf_uint(p, l, "slots", false, 1, NULL);
        cl->token = sl__pf_uint(p, l, "token", false, 0, &cl->has_token);
        cl->position = (size_t)sl__pf_uint(p, l, "position", false, 0, NULL);
        cl->limit = (unsigned)sl__pf_uint(p, l, "limit", false, 0, NULL);
    }
}

/* "groups", sent only for a claim in more than one group. */
static void claim_groups(pctx *p, const json_t *arr, sl_client_claim *c)
{
    size_t n = json_array_size(arr);
    c->groups = sl__pf_alloc(p, n, sizeof(*c->groups));
    for (size_t i = 0; c->groups && i < n && !p->rc; i++) {
        const json_t *g = json_array_get(arr, i);
        if (!sl__pf_object(p, g))
            break;
        c->groups[i].name = sl__pf_str(p, g, "name", true, false);
        c->groups[i].cancel = sl__pf_str(p, g, "cancel", true, false);
        c->ngroups = i + 1; /* what to free */
    }
}

static void claim_tags(pctx *p, const json_t *obj, sl_client_claim *c)
{
    if (p->rc || !obj || json_is_null(obj))
        return;
    if (!json_is_object(obj)) {
        sl__pf_fail(p, SL_CLIENT_EPROTO, "tags", "an object");
        return;
    }
    size_t n = json_object_size(obj);
    c->tags = sl__pf_alloc(p, n, sizeof(*c->tags));
    const char *key;
    json_t *value;
    size_t i = 0;
    json_object_foreach((json_t *)obj, key, value)
    {
        if (!c->tags || p->rc || i >= n)
            break;
        if (!json_is_string(value)) {
            sl__pf_fail(p, SL_CLIENT_EPROTO, "tags", "string values");
            break;
        }
        c->tags[i].key = sl__pf_dup(p, key);
        c->tags[i].value = sl__pf_dup(p, json_string_value(value));
        c->ntags = ++i;
    }
}

int sl__parse_claim(const json_t *o, sl_client_claim *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "claim"};
    if (!sl__pf_object(&p, o))
        return p.rc;
    out->id = sl__pf_str(&p, o, "id", true, false);
    out->state = sl__pf_str(&p, o, "state", true, false);
    out->holder = sl__pf_str(&p, o, "holder", true, false);
    out->group = sl__pf_str(&p, o, "group", false, false);
    out->rebalance_key = sl__pf_str(&p, o, "rebalance_key", false, false);
    out->reason = sl__pf_str(&p, o, "reason", false, true);
    out->by = sl__pf_str(&p, o, "by", false, false);
    out->priority = (int)sl__pf_int(&p, o, "priority", 0);
    out->created_ms = sl__pf_time(&p, o, "created");
    out->expires_ms = sl__pf_time(&p, o, "expires");
    out->revoke_at_ms = sl__pf_time(&p, o, "revoke_at");
    out->lease_ms = sl__pf_duration(&p, o, "lease");
    out->timeout_ms = sl__pf_duration(&p, o, "timeout");
    claim_locks(&p, sl__pf_array(&p, o, "locks", true), out);
    claim_tags(&p, json_object_get(o, "tags"), out);
    claim_groups(&p, sl__pf_array(&p, o, "groups", false), out);
    out->queue_position = (size_t)sl__pf_uint(&p, o, "position", false, 0, NULL);
    out->rule = sl__pf_str(&p, o, "rule", false, false);
    out->json = sl__pf_dump(&p, o);
    if (p.rc)
        sl__claim_clear(out);
    return p.rc;
}

int sl__claim_new(const json_t *o, sl_client_claim **out, sl_client_error *err)
{
    *out = NULL;
    sl_client_claim *c = malloc(sizeof(*c));
    if (!c)
        return sl__err_oom(err);
    int rc = sl__parse_claim(o, c, err);
    if (rc != SL_CLIENT_OK) {
        free(c);
        return rc;
    }
    *out = c;
    return SL_CLIENT_OK;
}

int sl__parse_claims(const json_t *arr, sl_client_claim_list *out, sl_client_error *err)
{
    out->items = NULL;
    out->n = 0;
    if (!json_is_array(arr))
        return sl__err_set(err, SL_CLIENT_EPROTO, "the server's listing is not an array");
    size_t n = json_array_size(arr);
    if (n == 0)
        return SL_CLIENT_OK;
    out->items = calloc(n, sizeof(*out->items));
    if (!out->items)
        return sl__err_oom(err);
    for (size_t i = 0; i < n; i++) {
        int rc = sl__parse_claim(json_array_get(arr, i), &out->items[i], err);
        if (rc != SL_CLIENT_OK) {
            sl_client_claim_list_free(out);
            return rc;
        }
        out->n = i + 1;
    }
    return SL_CLIENT_OK;
}

void sl_client_claim_list_free(sl_client_claim_list *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        sl__claim_clear(&list->items[i]);
    free(list->items);
    list->items = NULL;
    list->n = 0;
}

/* ---- why ------------------------------------------------------------------------------ */

static void why_clear(sl_client_why *w)
{
    free(w->state);
    for (size_t i = 0; i < w->nreasons; i++) {
        sl_client_why_reason *r = &w->reasons[i];
        free(r->lock);
        free(r->rule);
        free(r->message);
        free(r->preempt_status);
        sl__pf_free_strings(r->ahead, r->nahead);
    }
    free(w->reasons);
    free(w->json);
    memset(w, 0, sizeof(*w));
}

void sl_client_why_free(sl_client_why *why)
{
    if (!why)
        return;
    why_clear(why);
    free(why);
}

int sl__parse_why(const json_t *o, sl_client_why *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "why answer"};
    if (!sl__pf_object(&p, o))
        return p.rc;
    out->state = sl__pf_str(&p, o, "state", true, false);
    const json_t *arr = sl__pf_array(&p, o, "reasons", true);
    size_t n = json_array_size(arr);
    out->reasons = sl__pf_alloc(&p, n, sizeof(*out->reasons));
    for (size_t i = 0; out->reasons && i < n && !p.rc; i++) {
        const json_t *r = json_array_get(arr, i);
        sl_client_why_reason *d = &out->reasons[i];
        if (!sl__pf_object(&p, r))
            break;
        out->nreasons = i + 1;
        d->lock = sl__pf_str(&p, r, "lock", true, false);
        d->rule = sl__pf_str(&p, r, "rule", true, false);
        d->message = sl__pf_str(&p, r, "message", false, true);
        d->used = sl__pf_uint(&p, r, "used", false, 0, NULL);
        d->limit = sl__pf_uint(&p, r, "limit", false, 0, NULL);
        d->position = (size_t)sl__pf_uint(&p, r, "position", false, 0, NULL);
        d->ahead = sl__pf_strings(&p, sl__pf_array(&p, r, "ahead", false), "ahead", &d->nahead);
        bool has;
        d->ahead_count = (size_t)sl__pf_uint(&p, r, "ahead_count", false, 0, &has);
        if (!has)
            d->ahead_count = d->nahead;
        const json_t *pre = json_object_get(r, "preempt");
        if (pre && !json_is_null(pre)) {
            if (!sl__pf_object(&p, pre))
                break;
            d->preempt_status = sl__pf_str(&p, pre, "status", true, false);
            d->preempt_holders = sl__pf_uint(&p, pre, "holders", false, 0, NULL);
        }
        const json_t *share = json_object_get(r, "share");
        if (share && !json_is_null(share)) {
            if (!sl__pf_object(&p, share))
                break;
            d->has_share = true;
            d->share_quota = sl__pf_uint(&p, share, "quota", false, 0, NULL);
            d->share_held = sl__pf_uint(&p, share, "held", false, 0, NULL);
            d->share_weight = sl__pf_uint(&p, share, "weight", false, 0, NULL);
            d->share_weights = sl__pf_uint(&p, share, "weights", false, 0, NULL);
        }
        d->admit_at_ms = sl__pf_time(&p, r, "admit_at");
    }
    out->json = sl__pf_dump(&p, o);
    if (p.rc)
        why_clear(out);
    return p.rc;
}

/* ---- events --------------------------------------------------------------------------- */

void sl__event_clear(sl_client_event *ev)
{
    free(ev->type);
    free(ev->claim);
    free(ev->holder);
    sl__pf_free_strings(ev->locks, ev->nlocks);
    free(ev->reason);
    free(ev->json);
    free(ev->actor);
    memset(ev, 0, sizeof(*ev));
}

int sl__parse_event(const json_t *o, sl_client_event *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "event"};
    if (!sl__pf_object(&p, o))
        return p.rc;
    out->seq = sl__pf_uint(&p, o, "seq", true, 0, NULL);
    out->time_ms = sl__pf_time(&p, o, "time");
    out->type = sl__pf_str(&p, o, "type", true, false);
    out->claim = sl__pf_str(&p, o, "claim", false, false);
    out->holder = sl__pf_str(&p, o, "holder", false, false);
    out->locks = sl__pf_strings(&p, sl__pf_array(&p, o, "locks", false), "locks", &out->nlocks);
    out->reason = sl__pf_str(&p, o, "reason", false, true);
    out->actor = sl__pf_str(&p, o, "actor", false, false);
    out->json = sl__pf_dump(&p, o);
    if (p.rc)
        sl__event_clear(out);
    return p.rc;
}

void sl_client_event_page_free(sl_client_event_page *page)
{
    if (!page)
        return;
    for (size_t i = 0; i < page->n; i++)
        sl__event_clear(&page->items[i]);
    free(page->items);
    page->items = NULL;
    page->n = 0;
}

/* ---- a release by holder prefix --------------------------------------------------- */

void sl_client_release_counts_free(sl_client_release_counts *counts)
{
    if (!counts)
        return;
    free(counts->json);
    memset(counts, 0, sizeof(*counts));
}

int sl__parse_release_counts(const json_t *o, sl_client_release_counts *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "release answer"};
    if (!sl__pf_object(&p, o))
        return p.rc;
    /* These three are required: a count left out would read as nothing
     * done. canceled came later: a server before it counted revoking
     * claims under released. */
    out->released = sl__pf_uint(&p, o, "released", true, 0, NULL);
    out->withdrawn = sl__pf_uint(&p, o, "withdrawn", true, 0, NULL);
    out->skipped = sl__pf_uint(&p, o, "skipped", true, 0, NULL);
    out->canceled = sl__pf_uint(&p, o, "canceled", false, 0, NULL);
    out->json = sl__pf_dump(&p, o);
    if (p.rc)
        sl_client_release_counts_free(out);
    return p.rc;
}
