/* parse.c - the server's JSON into the public structs.
 *
 * Every string is copied (the structs outlive the JSON), times become Unix
 * milliseconds (-1 for null) and durations milliseconds, with small parsers
 * of the server's own formats: no strtod (its decimal point follows the
 * locale) and no timegm (not ISO C). A field of the wrong type, or a
 * required one missing, is SL_CLIENT_EPROTO naming the field; a parse that
 * fails frees what it had allocated and leaves the struct zeroed. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* ---- durations and times ------------------------------------------------------ */

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* digits[.digits] at *p: *ipart, and the fraction as nanounits (9 digits). */
static int number(const char **p, int64_t *ipart, int64_t *frac)
{
    const char *s = *p;
    int64_t v = 0, f = 0;
    int n = 0, k = 0;
    for (; is_digit(*s); s++) {
        if (++n > 15)
            return -1;
        v = v * 10 + (*s - '0');
    }
    if (n == 0)
        return -1;
    if (*s == '.') {
        for (s++; is_digit(*s); s++) {
            if (++k > 9)
                return -1;
            f = f * 10 + (*s - '0');
        }
        if (k == 0)
            return -1;
        for (; k < 9; k++)
            f *= 10;
    }
    *ipart = v;
    *frac = f;
    *p = s;
    return 0;
}

int sl__duration_parse(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return -1;
    static const int64_t unit_ms[] = {3600000, 60000, 1000, 1};
    const char *p = s;
    int64_t total = 0;
    size_t next = 0; /* units largest first, each at most once */
    bool first = true;
    while (*p) {
        int64_t ipart, frac;
        if (number(&p, &ipart, &frac) != 0)
            return -1;
        size_t u;
        if (*p == '\0') {
            if (!first)
                return -1; /* "1m30" is not a duration */
            u = 2;         /* a bare number is seconds */
        } else if (p[0] == 'm' && p[1] == 's') {
            u = 3;
            p += 2;
        } else if (*p == 'h' || *p == 'm' || *p == 's') {
            u = *p == 'h' ? 0 : *p == 'm' ? 1 : 2;
            p++;
        } else {
            return -1;
        }
        if (u < next)
            return -1;
        next = u + 1;
        first = false;
        if (ipart > (INT64_MAX / 2) / unit_ms[u])
            return -1;
        /* frac * unit fits: 1e9 * 3.6e6 < 9.2e18. Rounded half up. */
        int64_t part = ipart * unit_ms[u] + (frac * unit_ms[u] + 500000000) / 1000000000;
        if (part > INT64_MAX / 2 - total)
            return -1;
        total += part;
    }
    *ms = total;
    return 0;
}

static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int sep(const char **p, char a, char b)
{
    if (**p != a && **p != b)
        return -1;
    (*p)++;
    return 0;
}

/* Days from 1970-01-01 (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int sl__time_parse(const char *s, int64_t *ms)
{
    if (!s)
        return -1;
    const char *p = s;
    int y, mo, d, h, mi, sec;
    if (digits(&p, 4, &y) || sep(&p, '-', '-') || digits(&p, 2, &mo) || sep(&p, '-', '-') ||
        digits(&p, 2, &d) || sep(&p, 'T', 't') || digits(&p, 2, &h) || sep(&p, ':', ':') ||
        digits(&p, 2, &mi) || sep(&p, ':', ':') || digits(&p, 2, &sec))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    int64_t milli = 0;
    if (*p == '.') {
        int k = 0;
        int64_t nano = 0;
        for (p++; is_digit(*p); p++) {
            if (++k > 9)
                return -1;
            nano = nano * 10 + (*p - '0');
        }
        if (k == 0)
            return -1;
        for (; k < 9; k++)
            nano *= 10;
        milli = (nano + 500000) / 1000000;
    }
    int offset_min = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh) || sep(&p, ':', ':') || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        offset_min = sign * (oh * 60 + om);
    } else {
        return -1;
    }
    if (*p)
        return -1;
    if (sec == 60) { /* a leap second: the minute's last millisecond, as the server reads it */
        sec = 59;
        milli = 999;
    }
    int64_t days = days_from_civil(y, mo, d);
    *ms = ((days * 24 + h) * 60 + mi - offset_min) * 60000 + sec * 1000LL + milli;
    return 0;
}

/* ---- fields -------------------------------------------------------------------- */

/* The first failure of a parse; later field reads are no-ops. */
typedef struct pctx {
    sl_client_error *err;
    int rc;
    const char *what; /* "claim", "lock", ... for messages */
} pctx;

static void fail(pctx *p, int rc, const char *field, const char *expected)
{
    if (p->rc != SL_CLIENT_OK)
        return;
    p->rc = rc;
    if (rc == SL_CLIENT_ENOMEM)
        sl__err_oom(p->err);
    else
        sl__err_set(p->err, rc, "the server's %s has no valid \"%s\" (%s expected)", p->what, field,
                    expected);
}

static char *dup_or_fail(pctx *p, const char *s)
{
    char *d = strdup(s);
    if (!d)
        fail(p, SL_CLIENT_ENOMEM, "", "");
    return d;
}

/* A string field: required ones must be strings; optional ones may be null
 * or missing (then NULL, or "" when empty_default). */
static char *str_field(pctx *p, const json_t *o, const char *key, bool required, bool empty_default)
{
    if (p->rc)
        return NULL;
    const json_t *v = json_object_get(o, key);
    if (json_is_string(v))
        return dup_or_fail(p, json_string_value(v));
    if (required || (v && !json_is_null(v))) {
        fail(p, SL_CLIENT_EPROTO, key, "a string");
        return NULL;
    }
    return empty_default ? dup_or_fail(p, "") : NULL;
}

/* A whole number >= 0; missing or null gives dflt unless required. */
static uint64_t uint_field(pctx *p, const json_t *o, const char *key, bool required, uint64_t dflt,
                           bool *present)
{
    if (present)
        *present = false;
    if (p->rc)
        return dflt;
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        if (present)
            *present = true;
        return (uint64_t)json_integer_value(v);
    }
    if (required || (v && !json_is_null(v)))
        fail(p, SL_CLIENT_EPROTO, key, "a whole number");
    return dflt;
}

static int64_t int_field(pctx *p, const json_t *o, const char *key, int64_t dflt)
{
    if (p->rc)
        return dflt;
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (v && !json_is_null(v))
        fail(p, SL_CLIENT_EPROTO, key, "a whole number");
    return dflt;
}

/* A time: -1 when null or missing. */
static int64_t time_field(pctx *p, const json_t *o, const char *key)
{
    if (p->rc)
        return -1;
    const json_t *v = json_object_get(o, key);
    int64_t ms;
    if (!v || json_is_null(v))
        return -1;
    if (!json_is_string(v) || sl__time_parse(json_string_value(v), &ms) != 0) {
        fail(p, SL_CLIENT_EPROTO, key, "an RFC 3339 time");
        return -1;
    }
    return ms;
}

/* A duration: 0 when missing; a string or a number of seconds. */
static int64_t duration_field(pctx *p, const json_t *o, const char *key)
{
    if (p->rc)
        return 0;
    const json_t *v = json_object_get(o, key);
    int64_t ms = 0;
    if (!v || json_is_null(v))
        return 0;
    /* Seconds past INT64_MAX / 1000 have no milliseconds: not a duration. */
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= INT64_MAX / 1000)
        return (int64_t)json_integer_value(v) * 1000;
    if (!json_is_string(v) || sl__duration_parse(json_string_value(v), &ms) != 0)
        fail(p, SL_CLIENT_EPROTO, key, "a duration");
    return ms;
}

static char *dump(pctx *p, const json_t *o)
{
    if (p->rc)
        return NULL;
    char *s = json_dumps(o, JSON_COMPACT);
    if (!s)
        fail(p, SL_CLIENT_ENOMEM, "", "");
    return s;
}

/* calloc for n items (n may be 0: NULL is then fine). */
static void *array_alloc(pctx *p, size_t n, size_t size)
{
    if (p->rc || n == 0)
        return NULL;
    void *a = calloc(n, size);
    if (!a)
        fail(p, SL_CLIENT_ENOMEM, "", "");
    return a;
}

static const json_t *array_field(pctx *p, const json_t *o, const char *key, bool required)
{
    if (p->rc)
        return NULL;
    const json_t *v = json_object_get(o, key);
    if (json_is_array(v))
        return v;
    if (required || (v && !json_is_null(v)))
        fail(p, SL_CLIENT_EPROTO, key, "an array");
    return NULL;
}

static void free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* An array of strings into a new char* array. */
static char **strings(pctx *p, const json_t *arr, const char *key, size_t *n)
{
    *n = 0;
    size_t count = json_array_size(arr);
    char **v = array_alloc(p, count, sizeof(*v));
    for (size_t i = 0; v && i < count && !p->rc; i++) {
        const json_t *s = json_array_get(arr, i);
        if (!json_is_string(s)) {
            fail(p, SL_CLIENT_EPROTO, key, "strings");
            break;
        }
        v[i] = dup_or_fail(p, json_string_value(s));
        if (v[i])
            *n = i + 1;
    }
    return v;
}

static bool need_object(pctx *p, const json_t *o)
{
    if (json_is_object(o))
        return true;
    if (!p->rc) {
        p->rc = SL_CLIENT_EPROTO;
        sl__err_set(p->err, SL_CLIENT_EPROTO, "the server's %s is not a JSON object", p->what);
    }
    return false;
}

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
    c->locks = array_alloc(p, n, sizeof(*c->locks));
    for (size_t i = 0; c->locks && i < n && !p->rc; i++) {
        const json_t *l = json_array_get(arr, i);
        sl_client_claim_lock *cl = &c->locks[i];
        if (!need_object(p, l))
            break;
        const char *kind = json_string_value(json_object_get(l, "kind"));
        if (!kind || (strcmp(kind, "mutex") != 0 && strcmp(kind, "semaphore") != 0)) {
            fail(p, SL_CLIENT_EPROTO, "locks[].kind", "mutex or semaphore");
            break;
        }
        cl->semaphore = strcmp(kind, "semaphore") == 0;
        cl->name = str_field(p, l, "name", true, false);
        if (cl->name)
            c->nlocks = i + 1; /* what to free */
        cl->slots = (unsigned)uint_field(p, l, "slots", false, 1, NULL);
        cl->token = uint_field(p, l, "token", false, 0, &cl->has_token);
        cl->position = (size_t)uint_field(p, l, "position", false, 0, NULL);
        cl->limit = (unsigned)uint_field(p, l, "limit", false, 0, NULL);
    }
}

/* "groups", sent only for a claim in more than one group. */
static void claim_groups(pctx *p, const json_t *arr, sl_client_claim *c)
{
    size_t n = json_array_size(arr);
    c->groups = array_alloc(p, n, sizeof(*c->groups));
    for (size_t i = 0; c->groups && i < n && !p->rc; i++) {
        const json_t *g = json_array_get(arr, i);
        if (!need_object(p, g))
            break;
        c->groups[i].name = str_field(p, g, "name", true, false);
        c->groups[i].cancel = str_field(p, g, "cancel", true, false);
        c->ngroups = i + 1; /* what to free */
    }
}

static void claim_tags(pctx *p, const json_t *obj, sl_client_claim *c)
{
    if (p->rc || !obj || json_is_null(obj))
        return;
    if (!json_is_object(obj)) {
        fail(p, SL_CLIENT_EPROTO, "tags", "an object");
        return;
    }
    size_t n = json_object_size(obj);
    c->tags = array_alloc(p, n, sizeof(*c->tags));
    const char *key;
    json_t *value;
    size_t i = 0;
    json_object_foreach((json_t *)obj, key, value)
    {
        if (!c->tags || p->rc || i >= n)
            break;
        if (!json_is_string(value)) {
            fail(p, SL_CLIENT_EPROTO, "tags", "string values");
            break;
        }
        c->tags[i].key = dup_or_fail(p, key);
        c->tags[i].value = dup_or_fail(p, json_string_value(value));
        c->ntags = ++i;
    }
}

int sl__parse_claim(const json_t *o, sl_client_claim *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "claim"};
    if (!need_object(&p, o))
        return p.rc;
    out->id = str_field(&p, o, "id", true, false);
    out->state = str_field(&p, o, "state", true, false);
    out->holder = str_field(&p, o, "holder", true, false);
    out->group = str_field(&p, o, "group", false, false);
    out->rebalance_key = str_field(&p, o, "rebalance_key", false, false);
    out->reason = str_field(&p, o, "reason", false, true);
    out->by = str_field(&p, o, "by", false, false);
    out->priority = (int)int_field(&p, o, "priority", 0);
    out->created_ms = time_field(&p, o, "created");
    out->expires_ms = time_field(&p, o, "expires");
    out->revoke_at_ms = time_field(&p, o, "revoke_at");
    out->lease_ms = duration_field(&p, o, "lease");
    out->timeout_ms = duration_field(&p, o, "timeout");
    claim_locks(&p, array_field(&p, o, "locks", true), out);
    claim_tags(&p, json_object_get(o, "tags"), out);
    claim_groups(&p, array_field(&p, o, "groups", false), out);
    out->queue_position = (size_t)uint_field(&p, o, "position", false, 0, NULL);
    out->rule = str_field(&p, o, "rule", false, false);
    out->json = dump(&p, o);
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
    l->holders = array_alloc(p, n, sizeof(*l->holders));
    for (size_t i = 0; l->holders && i < n && !p->rc; i++) {
        const json_t *h = json_array_get(arr, i);
        sl_client_holder *d = &l->holders[i];
        if (!need_object(p, h))
            break;
        l->nholders = i + 1;
        d->claim = str_field(p, h, "claim", true, false);
        d->holder = str_field(p, h, "holder", true, false);
        d->slots = (unsigned)uint_field(p, h, "slots", false, 1, NULL);
        d->token = uint_field(p, h, "token", false, 0, NULL);
        d->since_ms = time_field(p, h, "since");
        d->expires_ms = time_field(p, h, "expires");
    }
}

static void lock_pending(pctx *p, const json_t *arr, sl_client_lock *l)
{
    size_t n = json_array_size(arr);
    l->pending = array_alloc(p, n, sizeof(*l->pending));
    for (size_t i = 0; l->pending && i < n && !p->rc; i++) {
        const json_t *w = json_array_get(arr, i);
        sl_client_waiter *d = &l->pending[i];
        if (!need_object(p, w))
            break;
        l->npending = i + 1;
        d->claim = str_field(p, w, "claim", true, false);
        d->holder = str_field(p, w, "holder", true, false);
        d->reason = str_field(p, w, "reason", false, true);
        d->slots = (unsigned)uint_field(p, w, "slots", false, 1, NULL);
        d->position = (size_t)uint_field(p, w, "position", false, 0, NULL);
        d->priority = (int)int_field(p, w, "priority", 0);
        d->created_ms = time_field(p, w, "created");
    }
}

/* "weights": {key: weight} of a rebalanced semaphore. */
static void lock_weights(pctx *p, const json_t *obj, sl_client_lock *l)
{
    if (p->rc || !obj || json_is_null(obj))
        return;
    if (!json_is_object(obj)) {
        fail(p, SL_CLIENT_EPROTO, "weights", "an object");
        return;
    }
    size_t n = json_object_size(obj);
    l->weights = array_alloc(p, n, sizeof(*l->weights));
    const char *key;
    json_t *value;
    size_t i = 0;
    json_object_foreach((json_t *)obj, key, value)
    {
        if (!l->weights || p->rc || i >= n)
            break;
        if (!json_is_integer(value) || json_integer_value(value) < 0) {
            fail(p, SL_CLIENT_EPROTO, "weights", "whole-number values");
            break;
        }
        l->weights[i].key = dup_or_fail(p, key);
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
        l->overtake_limit_ms = duration_field(p, o, "overtake_limit");
    l->preempt_grace_ms = duration_field(p, o, "preempt_grace");
    l->max_pending = uint_field(p, o, "max_pending", false, 0, NULL);
    l->on_full = str_field(p, o, "on_full", false, false);
    lock_weights(p, json_object_get(o, "weights"), l);
    l->default_weight = uint_field(p, o, "default_weight", false, 0, NULL);
    l->rate = str_field(p, o, "rate", false, false);
    l->burst = uint_field(p, o, "burst", false, 0, NULL);
    l->backdate_ms = duration_field(p, o, "backdate");
}

int sl__parse_lock(const json_t *o, sl_client_lock *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "lock"};
    if (!need_object(&p, o))
        return p.rc;
    const char *kind = json_string_value(json_object_get(o, "kind"));
    out->semaphore = !kind || strcmp(kind, "mutex") != 0;
    out->name = str_field(&p, o, "name", true, false);
    out->strategy = str_field(&p, o, "strategy", false, true);
    out->from_pattern = str_field(&p, o, "from_pattern", false, false);
    out->limit = uint_field(&p, o, "limit", true, 0, NULL);
    out->used = uint_field(&p, o, "used", false, 0, NULL);
    out->token = uint_field(&p, o, "token", false, 0, NULL);
    out->lease_ms = duration_field(&p, o, "lease");
    lock_rules(&p, o, out);
    lock_holders(&p, array_field(&p, o, "holders", false), out);
    lock_pending(&p, array_field(&p, o, "pending", false), out);
    bool has;
    out->holders_count = (size_t)uint_field(&p, o, "holders_count", false, 0, &has);
    if (!has)
        out->holders_count = out->nholders;
    out->pending_count = (size_t)uint_field(&p, o, "pending_count", false, 0, &has);
    if (!has)
        out->pending_count = out->npending;
    out->json = dump(&p, o);
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
        free_strings(r->ahead, r->nahead);
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
    if (!need_object(&p, o))
        return p.rc;
    out->state = str_field(&p, o, "state", true, false);
    const json_t *arr = array_field(&p, o, "reasons", true);
    size_t n = json_array_size(arr);
    out->reasons = array_alloc(&p, n, sizeof(*out->reasons));
    for (size_t i = 0; out->reasons && i < n && !p.rc; i++) {
        const json_t *r = json_array_get(arr, i);
        sl_client_why_reason *d = &out->reasons[i];
        if (!need_object(&p, r))
            break;
        out->nreasons = i + 1;
        d->lock = str_field(&p, r, "lock", true, false);
        d->rule = str_field(&p, r, "rule", true, false);
        d->message = str_field(&p, r, "message", false, true);
        d->used = uint_field(&p, r, "used", false, 0, NULL);
        d->limit = uint_field(&p, r, "limit", false, 0, NULL);
        d->position = (size_t)uint_field(&p, r, "position", false, 0, NULL);
        d->ahead = strings(&p, array_field(&p, r, "ahead", false), "ahead", &d->nahead);
        bool has;
        d->ahead_count = (size_t)uint_field(&p, r, "ahead_count", false, 0, &has);
        if (!has)
            d->ahead_count = d->nahead;
        const json_t *pre = json_object_get(r, "preempt");
        if (pre && !json_is_null(pre)) {
            if (!need_object(&p, pre))
                break;
            d->preempt_status = str_field(&p, pre, "status", true, false);
            d->preempt_holders = uint_field(&p, pre, "holders", false, 0, NULL);
        }
        const json_t *share = json_object_get(r, "share");
        if (share && !json_is_null(share)) {
            if (!need_object(&p, share))
                break;
            d->has_share = true;
            d->share_quota = uint_field(&p, share, "quota", false, 0, NULL);
            d->share_held = uint_field(&p, share, "held", false, 0, NULL);
            d->share_weight = uint_field(&p, share, "weight", false, 0, NULL);
            d->share_weights = uint_field(&p, share, "weights", false, 0, NULL);
        }
        d->admit_at_ms = time_field(&p, r, "admit_at");
    }
    out->json = dump(&p, o);
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
    free_strings(ev->locks, ev->nlocks);
    free(ev->reason);
    free(ev->json);
    memset(ev, 0, sizeof(*ev));
}

int sl__parse_event(const json_t *o, sl_client_event *out, sl_client_error *err)
{
    memset(out, 0, sizeof(*out));
    pctx p = {err, SL_CLIENT_OK, "event"};
    if (!need_object(&p, o))
        return p.rc;
    out->seq = uint_field(&p, o, "seq", true, 0, NULL);
    out->time_ms = time_field(&p, o, "time");
    out->type = str_field(&p, o, "type", true, false);
    out->claim = str_field(&p, o, "claim", false, false);
    out->holder = str_field(&p, o, "holder", false, false);
    out->locks = strings(&p, array_field(&p, o, "locks", false), "locks", &out->nlocks);
    out->reason = str_field(&p, o, "reason", false, true);
    out->json = dump(&p, o);
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
    if (!need_object(&p, o))
        return p.rc;
    out->status = str_field(&p, o, "status", true, false);
    out->version = str_field(&p, o, "version", false, true);
    out->store = str_field(&p, o, "store", false, true);
    const json_t *claims = json_object_get(o, "claims");
    if (claims && !json_is_object(claims))
        fail(&p, SL_CLIENT_EPROTO, "claims", "an object");
    out->pending = uint_field(&p, claims, "pending", false, 0, NULL);
    out->held = uint_field(&p, claims, "held", false, 0, NULL);
    out->ended = uint_field(&p, claims, "ended", false, 0, NULL);
    out->next_seq = uint_field(&p, o, "next_seq", false, 0, NULL);
    out->counted = claims != NULL;
    out->role = str_field(&p, o, "role", false, false);
    out->epoch = uint_field(&p, o, "epoch", false, 0, NULL);
    out->leader = str_field(&p, o, "leader", false, false); /* null while none leads */
    out->self = str_field(&p, o, "self", false, false);
    out->json = dump(&p, o);
    if (p.rc)
        status_clear(out);
    return p.rc;
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
    if (!need_object(&p, o))
        return p.rc;
    /* These three are required: a count left out would read as nothing
     * done. canceled came later: a server before it counted revoking
     * claims under released. */
    out->released = uint_field(&p, o, "released", true, 0, NULL);
    out->withdrawn = uint_field(&p, o, "withdrawn", true, 0, NULL);
    out->skipped = uint_field(&p, o, "skipped", true, 0, NULL);
    out->canceled = uint_field(&p, o, "canceled", false, 0, NULL);
    out->json = dump(&p, o);
    if (p.rc)
        sl_client_release_counts_free(out);
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
    if (!need_object(&p, o))
        return p.rc;
    /* Required: a count left out would read as nothing canceled. */
    out->canceled = uint_field(&p, o, "canceled", true, 0, NULL);
    out->json = dump(&p, o);
    if (p.rc)
        sl_client_queue_cleared_free(out);
    return p.rc;
}
