/* history.c - the per-lock history's pure core (history.h).
 *
 * Values are kept as uint32_t and changes are added modulo 2^32: a change
 * that takes a value down is added as its two's complement, so that
 * sample = current - sum(changes after it) holds with unsigned arithmetic
 * whatever the order the changes were added in. A lock's slots, holders or
 * pending count never reach 2^32 (limits are at most 10^9 slots, claims at
 * most the server's max_claims), so no value is ever wrapped when read. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "history.h"

const int64_t sl_hist_wait_bounds_us[SL_HIST_WAIT_BOUNDS] = {
    100,         200,         500,         1000,        2000,        5000,
    10000,       20000,       50000,       100000,      200000,      500000,
    1000000,     2000000,     5000000,     10000000,    20000000,    30000000,
    60000000,    120000000,   300000000,   600000000,   1200000000,  1800000000,
    3600000000,  7200000000,  14400000000, 43200000000, 86400000000,
};

enum { SERIES = 2, VALS = 3 };

/* The changes of one step not yet sampled. */
typedef struct hdelta {
    int64_t k; /* the step: its events are in [k * step, (k + 1) * step) */
    uint32_t d[VALS];
} hdelta;

typedef struct hseries {
    sl_hist_vals *ring; /* the sample of boundary k at ring[k % n] */
    int64_t last;       /* the newest boundary sampled */
    hdelta *deltas;     /* by step, ascending; all after last */
    size_t nd, capd;
} hseries;

/* Waits granted in one slot of time. */
typedef struct hwslot {
    int64_t slot; /* which slot of time it holds; -1 none */
    uint32_t counts[SL_HIST_WAIT_BUCKETS];
    uint32_t count;
    int64_t max_ms;
} hwslot;

typedef struct hlock {
    char *key;
    char *tenant; /* whose lock it is, for making room (sl_hist_tenant_fn) */
    hseries s[SERIES];
    sl_hist_vals now;    /* the current values, as of the last sampling */
    int64_t active_ms;   /* its last event, or the last sampling that found it in use */
    hwslot *wshort, *wlong;
} hlock;

/* /metrics' per-lock histogram since the process started (or since the
 * lock came back: a lock that went has its counts in `other`). */
typedef struct hcum {
    char *key;
    uint64_t counts[SL_HIST_WAIT_BUCKETS];
    uint64_t count;
    double sum; /* seconds */
    int64_t last_ms;
} hcum;

struct sl_history {
    int64_t step[SERIES];  /* fine, coarse */
    size_t n[SERIES];      /* samples kept */
    int64_t first[SERIES]; /* the oldest boundary the history knows */
    bool rebuilding;
    int64_t sampled;       /* the newest fine boundary sampled */
    bool fresh;            /* a lock tracked since: its samples are still to fill */
    hlock *locks;
    size_t nlocks;
    json_t *index;  /* key -> position in locks */
    json_t *claims; /* replay: claim id -> arrival time, or -1 once granted */
    hcum *cum; /* SL_HIST_METRIC_LOCKS at most */
    size_t ncum;
    json_t *cum_index;
    hcum other; /* the locks that went or made room, summed */
    sl_hist_tenant_fn tenant_fn;
    void *tenant_ud;
};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        abort();
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (!p)
        abort();
    memcpy(p, s, n);
    return p;
}

static json_t *xobject(void)
{
    json_t *o = json_object();
    if (!o)
        abort();
    return o;
}

/* floor(t / step), for times before the epoch too. */
static int64_t step_of(int64_t t, int64_t step)
{
    return t >= 0 ? t / step : -((-t + step - 1) / step);
}

/* k's place in a ring of n (k may be negative, before the epoch). */
static size_t ring_at(int64_t k, size_t n)
{
    int64_t m = k % (int64_t)n;
    return (size_t)(m < 0 ? m + (int64_t)n : m);
}

sl_history *sl_history_new(int64_t step_ms, int64_t retention_ms)
{
    sl_history *h = xcalloc(1, sizeof(*h));
    h->step[0] = step_ms > 0 ? step_ms : SL_HIST_STEP_MS;
    h->step[1] = h->step[0] * SL_HIST_COARSE_STEPS;
    static const size_t full[SERIES] = {SL_HIST_FINE_N, SL_HIST_COARSE_N};
    for (int s = 0; s < SERIES; s++) {
        /* No further back than the log reaches: a rebuild could not fill it. */
        int64_t fit = retention_ms > 0 ? retention_ms / h->step[s] : (int64_t)full[s];
        h->n[s] = fit < 1 ? 1 : fit < (int64_t)full[s] ? (size_t)fit : full[s];
    }
    h->locks = xcalloc(SL_HIST_LOCKS_MAX, sizeof(*h->locks));
    h->cum = xcalloc(SL_HIST_METRIC_LOCKS, sizeof(*h->cum));
    h->index = xobject();
    h->cum_index = xobject();
    sl_history_reset(h, 0, false);
    return h;
}

static void lock_free(hlock *l)
{
    free(l->key);
    free(l->tenant);
    for (int s = 0; s < SERIES; s++) {
        free(l->s[s].ring);
        free(l->s[s].deltas);
    }
    free(l->wshort);
    free(l->wlong);
}

void sl_history_reset(sl_history *h, int64_t now, bool rebuilding)
{
    for (size_t i = 0; i < h->nlocks; i++)
        lock_free(&h->locks[i]);
    h->nlocks = 0;
    json_object_clear(h->index);
    json_decref(h->claims);
    h->claims = rebuilding ? xobject() : NULL;
    h->rebuilding = rebuilding;
    for (int s = 0; s < SERIES; s++)
        h->first[s] = step_of(now, h->step[s]) - (int64_t)h->n[s] + 1;
    h->sampled = h->first[0] - 1;
}

bool sl_history_due(const sl_history *h, int64_t now)
{
    return !h->rebuilding && (h->fresh || step_of(now, h->step[0]) > h->sampled);
}

void sl_history_free(sl_history *h)
{
    if (!h)
        return;
    sl_history_reset(h, 0, false);
    for (size_t i = 0; i < h->ncum; i++)
        free(h->cum[i].key);
    json_decref(h->index);
    json_decref(h->cum_index);
    free(h->locks);
    free(h->cum);
    free(h);
}

bool sl_history_rebuilding(const sl_history *h)
{
    return h->rebuilding;
}

int64_t sl_history_step(const sl_history *h, sl_hist_window w)
{
    return h->step[w == SL_HIST_24H];
}

size_t sl_history_capacity(const sl_history *h, sl_hist_window w)
{
    return h->n[w == SL_HIST_24H];
}

size_t sl_history_nlocks(const sl_history *h)
{
    return h->nlocks;
}

/* ---- the lock table ------------------------------------------------------ */

static hlock *find(const sl_history *h, const char *key)
{
    json_t *i = json_object_get(h->index, key);
    return i ? &h->locks[json_integer_value(i)] : NULL;
}

static void set_index(json_t *index, const char *key, size_t i)
{
    if (json_object_set_new(index, key, json_integer((json_int_t)i)) != 0)
        abort();
}

static void drop(sl_history *h, size_t i)
{
    json_object_del(h->index, h->locks[i].key);
    lock_free(&h->locks[i]);
    if (i != --h->nlocks) {
        h->locks[i] = h->locks[h->nlocks];
        set_index(h->index, h->locks[i].key, i);
    }
}

static const char *tenant_of(const sl_history *h, const char *key)
{
    const char *t = h->tenant_fn ? h->tenant_fn(h->tenant_ud, key) : NULL;
    return t ? t : "";
}

void sl_history_set_tenants(sl_history *h, sl_hist_tenant_fn fn, void *ud)
{
    h->tenant_fn = fn;
    h->tenant_ud = ud;
    sl_history_retenant(h);
}

void sl_history_retenant(sl_history *h)
{
    for (size_t i = 0; i < h->nlocks; i++) {
        free(h->locks[i].tenant);
        h->locks[i].tenant = xstrdup(tenant_of(h, h->locks[i].key));
    }
}

/* The tenant that gives up a lock so that one of `newcomer`'s can be
 * tracked: the one with the most locks tracked, the newcomer's own on a
 * tie. So a tenant tracking no more than its share (SL_HIST_LOCKS_MAX over
 * the tenants in use) never loses a lock to another's churn. */
static const char *yielding_tenant(const sl_history *h, const char *newcomer)
{
    json_t *counts = xobject();
    const char *most = newcomer;
    json_int_t top = 0;
    for (size_t i = 0; i < h->nlocks; i++) {
        const char *t = h->locks[i].tenant;
        json_int_t n = json_integer_value(json_object_get(counts, t)) + 1;
        if (json_object_set_new(counts, t, json_integer(n)) != 0)
            abort();
        if (n > top) {
            top = n;
            most = t;
        }
    }
    json_int_t own = json_integer_value(json_object_get(counts, newcomer));
    json_decref(counts);
    return own == top ? newcomer : most;
}

/* The least recently active lock of that tenant: the one that makes room. */
static size_t stalest(const sl_history *h, const char *tenant)
{
    size_t best = h->nlocks;
    for (size_t i = 0; i < h->nlocks; i++)
        if (strcmp(h->locks[i].tenant, tenant) == 0 &&
            (best == h->nlocks || h->locks[i].active_ms < h->locks[best].active_ms))
            best = i;
    return best;
}

static hlock *track(sl_history *h, const char *key, int64_t now)
{
    hlock *l = find(h, key);
    if (l)
        return l;
    const char *tenant = tenant_of(h, key);
    if (h->nlocks == SL_HIST_LOCKS_MAX)
        drop(h, stalest(h, yielding_tenant(h, tenant)));
    l = &h->locks[h->nlocks];
    memset(l, 0, sizeof(*l));
    l->key = xstrdup(key);
    l->tenant = xstrdup(tenant);
    l->active_ms = now;
    for (int s = 0; s < SERIES; s++) {
        l->s[s].ring = xcalloc(h->n[s], sizeof(sl_hist_vals));
        /* Nothing sampled: the first sampling fills the window back to the
         * history's start from the changes since. */
        l->s[s].last = h->first[s] - 1;
    }
    l->wshort = xcalloc(SL_HIST_WAIT_SHORT_SLOTS, sizeof(hwslot));
    l->wlong = xcalloc(SL_HIST_WAIT_LONG_SLOTS, sizeof(hwslot));
    for (size_t i = 0; i < SL_HIST_WAIT_SHORT_SLOTS; i++)
        l->wshort[i].slot = -1;
    for (size_t i = 0; i < SL_HIST_WAIT_LONG_SLOTS; i++)
        l->wlong[i].slot = -1;
    set_index(h->index, key, h->nlocks);
    h->nlocks++;
    h->fresh = true;
    return l;
}

/* ---- changes ------------------------------------------------------------- */

/* Adds a change to step k's entry, keeping the entries in order: events
 * come in time order, except while rebuilding, when the events of the
 * moment are added before older ones read back from the log. */
static void add_delta(hseries *s, int64_t k, const uint32_t d[VALS])
{
    if (k <= s->last)
        return; /* that boundary and those before are sampled already */
    size_t i = s->nd;
    while (i > 0 && s->deltas[i - 1].k > k)
        i--;
    if (i == 0 || s->deltas[i - 1].k != k) {
        if (s->nd == s->capd) {
            s->capd = s->capd ? s->capd * 2 : 4;
            s->deltas = realloc(s->deltas, s->capd * sizeof(*s->deltas));
            if (!s->deltas)
                abort();
        }
        memmove(&s->deltas[i + 1], &s->deltas[i], (s->nd - i) * sizeof(*s->deltas));
        s->deltas[i] = (hdelta){k, {0, 0, 0}};
        s->nd++;
        i++;
    }
    for (int v = 0; v < VALS; v++)
        s->deltas[i - 1].d[v] += d[v];
}

static size_t bucket_of(int64_t wait_ms)
{
    int64_t us = wait_ms > INT64_MAX / 1000 ? INT64_MAX : wait_ms * 1000;
    size_t i = 0;
    while (i < SL_HIST_WAIT_BOUNDS && us > sl_hist_wait_bounds_us[i])
        i++;
    return i;
}

static void wslot_add(hwslot *ring, size_t n, int64_t slot, size_t b, int64_t wait_ms)
{
    hwslot *w = &ring[ring_at(slot, n)];
    if (w->slot > slot)
        return; /* older than the window the ring holds */
    if (w->slot != slot) {
        memset(w, 0, sizeof(*w));
        w->slot = slot;
        w->max_ms = -1;
    }
    w->counts[b]++;
    w->count++;
    if (wait_ms > w->max_ms)
        w->max_ms = wait_ms;
}

/* Folds the series at `at` into `other` and takes it out (the last one
 * moves into its place). */
static void cum_fold(sl_history *h, size_t at)
{
    hcum *c = &h->cum[at];
    for (size_t b = 0; b < SL_HIST_WAIT_BUCKETS; b++)
        h->other.counts[b] += c->counts[b];
    h->other.count += c->count;
    h->other.sum += c->sum;
    json_object_del(h->cum_index, c->key);
    free(c->key);
    h->ncum--;
    if (at != h->ncum) {
        *c = h->cum[h->ncum];
        set_index(h->cum_index, c->key, at);
    }
}

static hcum *cum_track(sl_history *h, const char *key)
{
    json_t *i = json_object_get(h->cum_index, key);
    if (i)
        return &h->cum[json_integer_value(i)];
    if (h->ncum == SL_HIST_METRIC_LOCKS) { /* the one granted least recently makes room */
        size_t old = 0;
        for (size_t j = 1; j < h->ncum; j++)
            if (h->cum[j].last_ms < h->cum[old].last_ms)
                old = j;
        cum_fold(h, old);
    }
    size_t at = h->ncum++;
    memset(&h->cum[at], 0, sizeof(h->cum[at]));
    h->cum[at].key = xstrdup(key);
    set_index(h->cum_index, key, at);
    return &h->cum[at];
}

static void observe_wait(sl_history *h, hlock *l, const char *key, int64_t t, int64_t wait_ms,
                         bool live)
{
    if (wait_ms < 0)
        return;
    size_t b = bucket_of(wait_ms);
    int64_t slot_short = step_of(t, h->step[0] * SL_HIST_WAIT_SHORT_STEPS);
    int64_t slot_long = step_of(t, h->step[0] * SL_HIST_WAIT_LONG_STEPS);
    wslot_add(l->wshort, SL_HIST_WAIT_SHORT_SLOTS, slot_short, b, wait_ms);
    wslot_add(l->wlong, SL_HIST_WAIT_LONG_SLOTS, slot_long, b, wait_ms);
    if (!live)
        return;
    hcum *c = cum_track(h, key);
    c->counts[b]++;
    c->count++;
    c->sum += (double)wait_ms / 1000.0;
    c->last_ms = t;
}

/* The change an event makes to one lock: used, holders, pending. */
static void change_of(const sl_hist_event *ev, uint32_t slots, uint32_t d[VALS])
{
    const uint32_t minus1 = UINT32_MAX; /* -1 modulo 2^32 */
    d[0] = d[1] = d[2] = 0;
    switch (ev->kind) {
    case SL_HIST_QUEUED:
        d[2] = 1;
        break;
    case SL_HIST_ACQUIRED:
        d[0] = slots;
        d[1] = 1;
        d[2] = minus1;
        break;
    case SL_HIST_ENDED:
        if (ev->held) {
            d[0] = 0u - slots;
            d[1] = minus1;
        } else {
            d[2] = minus1;
        }
        break;
    }
}

void sl_history_event(sl_history *h, const sl_hist_event *ev, bool live)
{
    for (size_t i = 0; i < ev->nlocks; i++) {
        hlock *l = track(h, ev->keys[i], ev->time_ms);
        if (ev->time_ms > l->active_ms)
            l->active_ms = ev->time_ms;
        uint32_t d[VALS];
        change_of(ev, ev->slots[i], d);
        for (int s = 0; s < SERIES; s++)
            add_delta(&l->s[s], step_of(ev->time_ms, h->step[s]), d);
        if (ev->kind == SL_HIST_ACQUIRED)
            observe_wait(h, l, ev->keys[i], ev->time_ms, ev->wait_ms, live);
    }
}

/* ---- events from the engine and from the log ----------------------------- */

void sl_history_engine_event(sl_history *h, const sl_event *ev)
{
    sl_hist_event he = {.time_ms = ev->time_ms, .wait_ms = -1};
    switch (ev->type) {
    case SL_EV_CLAIM_QUEUED:
        he.kind = SL_HIST_QUEUED;
        break;
    case SL_EV_CLAIM_ACQUIRED:
        he.kind = SL_HIST_ACQUIRED;
        break;
    case SL_EV_CLAIM_RELEASED:
    case SL_EV_CLAIM_WITHDRAWN:
    case SL_EV_CLAIM_EXPIRED:
    case SL_EV_CLAIM_TIMED_OUT:
    case SL_EV_CLAIM_SUPERSEDED:
    case SL_EV_CLAIM_CANCELED:
        he.kind = SL_HIST_ENDED;
        break;
    default:
        return;
    }
    sl_claim_view v;
    sl_claim_get(ev->claim, &v);
    /* As the store records it (capture.c): a grant is never undone, and an
     * end is a claim's last event. */
    he.held = v.granted_ms >= 0;
    if (he.kind == SL_HIST_ACQUIRED)
        he.wait_ms = ev->time_ms - v.arrived_ms;
    const char *keys[SL_CLAIM_LOCKS_MAX];
    uint32_t slots[SL_CLAIM_LOCKS_MAX];
    size_t n = 0;
    for (; n < v.nlocks && n < SL_CLAIM_LOCKS_MAX; n++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(ev->claim, n, &lv);
        keys[n] = lv.key;
        slots[n] = lv.slots;
    }
    he.nlocks = n;
    he.keys = keys;
    he.slots = slots;
    sl_history_event(h, &he, true);
}

/* "1,2" into slots; missing entries (a record older than the field) count
 * 1, which is exact for mutexes and for most semaphore claims. */
static void parse_slots(const char *text, uint32_t *slots, size_t n)
{
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        slots[i] = 1;
        if (!p || !*p)
            continue;
        char *end;
        unsigned long v = strtoul(p, &end, 10);
        if (end != p && v <= UINT32_MAX)
            slots[i] = (uint32_t)v;
        p = *end == ',' ? end + 1 : NULL;
    }
}

static bool ends(const char *type)
{
    static const char *const end[] = {"claim.released", "claim.withdrawn", "claim.expired",
                                      "claim.timed_out", "claim.superseded", "claim.canceled"};
    for (size_t i = 0; i < sizeof(end) / sizeof(end[0]); i++)
        if (strcmp(type, end[i]) == 0)
            return true;
    return false;
}

/* A record older than the held flag: released ends a held claim;
 * withdrawn, timed out and superseded a pending one; expired and canceled
 * either, told by whether the replay saw its grant or only its arrival
 * (neither: it arrived before the log's start; taken as held). */
static bool guess_held(const sl_history *h, const sl_store_event *ev)
{
    if (strcmp(ev->type, "claim.released") == 0)
        return true;
    if (strcmp(ev->type, "claim.expired") != 0 && strcmp(ev->type, "claim.canceled") != 0)
        return false;
    json_t *seen = json_object_get(h->claims, ev->claim);
    return !seen || json_integer_value(seen) < 0;
}

/* Fills he from ev and updates the replay's claims; false when ev does not
 * change any lock. */
static bool replay_kind(sl_history *h, const sl_store_event *ev, sl_hist_event *he,
                        sl_hist_arrived_fn arrived, void *ud)
{
    if (strcmp(ev->type, "claim.queued") == 0) {
        he->kind = SL_HIST_QUEUED;
        json_object_set_new(h->claims, ev->claim, json_integer(ev->time_ms));
    } else if (strcmp(ev->type, "claim.acquired") == 0) {
        he->kind = SL_HIST_ACQUIRED;
        json_t *q = json_object_get(h->claims, ev->claim);
        int64_t at = q && json_integer_value(q) >= 0 ? json_integer_value(q)
                     : arrived                       ? arrived(ud, ev->claim)
                                                     : -1;
        he->wait_ms = at >= 0 && at <= ev->time_ms ? ev->time_ms - at : -1;
        json_object_set_new(h->claims, ev->claim, json_integer(-1));
    } else if (ends(ev->type)) {
        he->kind = SL_HIST_ENDED;
        he->held = ev->held >= 0 ? ev->held != 0 : guess_held(h, ev);
        json_object_del(h->claims, ev->claim);
    } else {
        return false;
    }
    return true;
}

void sl_history_replay(sl_history *h, const sl_store_event *ev, sl_hist_arrived_fn arrived,
                       void *ud)
{
    if (!ev->claim || !h->claims)
        return;
    sl_hist_event he = {.time_ms = ev->time_ms, .wait_ms = -1};
    if (!replay_kind(h, ev, &he, arrived, ud))
        return;
    json_t *arr = json_loads(ev->locks, JSON_DECODE_ANY, NULL);
    size_t n = json_array_size(arr);
    if (n > SL_CLAIM_LOCKS_MAX)
        n = SL_CLAIM_LOCKS_MAX;
    const char *keys[SL_CLAIM_LOCKS_MAX];
    uint32_t slots[SL_CLAIM_LOCKS_MAX];
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        const char *k = json_string_value(json_array_get(arr, i));
        if (k)
            keys[nk++] = k;
    }
    parse_slots(ev->slots, slots, nk);
    he.nlocks = nk;
    he.keys = keys;
    he.slots = slots;
    sl_history_event(h, &he, false);
    json_decref(arr);
}

void sl_history_replay_done(sl_history *h)
{
    json_decref(h->claims);
    h->claims = NULL;
    h->rebuilding = false;
}

/* ---- sampling ------------------------------------------------------------ */

void sl_history_sample_begin(sl_history *h)
{
    for (size_t i = 0; i < h->nlocks; i++)
        memset(&h->locks[i].now, 0, sizeof(h->locks[i].now));
}

static bool idle(const sl_hist_vals *v)
{
    return v->used == 0 && v->holders == 0 && v->pending == 0;
}

void sl_history_sample_lock(sl_history *h, const char *key, const sl_hist_vals *now_vals,
                            int64_t now)
{
    hlock *l = idle(now_vals) ? find(h, key) : track(h, key, now);
    if (!l)
        return;
    l->now = *now_vals;
    if (!idle(now_vals))
        l->active_ms = now;
}

static void vals_sub(sl_hist_vals *v, const uint32_t d[VALS])
{
    v->used -= d[0];
    v->holders -= d[1];
    v->pending -= d[2];
}

/* Boundaries last+1 .. k, newest first: each is the current values minus
 * the changes at or after it. */
static void sample_series(const sl_history *h, int s, hlock *l, int64_t k)
{
    hseries *se = &l->s[s];
    if (k <= se->last)
        return;
    int64_t from = se->last + 1;
    if (from < k - (int64_t)h->n[s] + 1)
        from = k - (int64_t)h->n[s] + 1;
    sl_hist_vals run = l->now;
    size_t i = se->nd;
    for (int64_t j = k; j >= from; j--) {
        while (i > 0 && se->deltas[i - 1].k >= j)
            vals_sub(&run, se->deltas[--i].d);
        se->ring[ring_at(j, h->n[s])] = run;
    }
    /* Entries after k stay (an event of this very moment's next step). */
    size_t keep = 0;
    while (keep < se->nd && se->deltas[se->nd - 1 - keep].k > k)
        keep++;
    memmove(se->deltas, &se->deltas[se->nd - keep], keep * sizeof(*se->deltas));
    se->nd = keep;
    se->last = k;
}

void sl_history_sample_end(sl_history *h, int64_t now)
{
    if (h->rebuilding)
        return; /* the changes read so far are kept; the replay's end samples */
    int64_t k[SERIES] = {step_of(now, h->step[0]), step_of(now, h->step[1])};
    int64_t quiet = now - (int64_t)h->n[1] * h->step[1];
    for (size_t i = h->nlocks; i-- > 0;) {
        hlock *l = &h->locks[i];
        for (int s = 0; s < SERIES; s++)
            sample_series(h, s, l, k[s]);
        if (idle(&l->now) && l->active_ms < quiet)
            drop(h, i); /* idle for the whole long window */
    }
    h->sampled = k[0];
    h->fresh = false;
}

/* ---- reading ------------------------------------------------------------- */

bool sl_history_samples(const sl_history *h, const char *key, sl_hist_window w, int64_t now,
                        sl_hist_sample_fn fn, void *ud)
{
    const hlock *l = find(h, key);
    if (!l)
        return false;
    int s = w == SL_HIST_24H;
    const hseries *se = &l->s[s];
    int64_t oldest = step_of(now, h->step[s]) - (int64_t)h->n[s] + 1;
    int64_t from = se->last - (int64_t)h->n[s] + 1;
    if (from < oldest)
        from = oldest;
    if (from < h->first[s])
        from = h->first[s];
    for (int64_t j = from; j <= se->last; j++)
        fn(ud, j * h->step[s], &se->ring[ring_at(j, h->n[s])]);
    return true;
}

static void waits_sum(const hwslot *ring, size_t n, int64_t cur, sl_hist_waits *out)
{
    for (size_t i = 0; i < n; i++) {
        const hwslot *ws = &ring[i];
        if (ws->slot < 0 || ws->slot > cur || ws->slot <= cur - (int64_t)n)
            continue;
        for (size_t b = 0; b < SL_HIST_WAIT_BUCKETS; b++)
            out->counts[b] += ws->counts[b];
        out->count += ws->count;
        if (ws->max_ms > out->max_ms)
            out->max_ms = ws->max_ms;
    }
}

void sl_history_waits(const sl_history *h, const char *key, sl_hist_window w, int64_t now,
                      sl_hist_waits *out)
{
    memset(out, 0, sizeof(*out));
    out->max_ms = -1;
    const hlock *l = find(h, key);
    if (!l)
        return;
    if (w == SL_HIST_24H)
        waits_sum(l->wlong, SL_HIST_WAIT_LONG_SLOTS,
                  step_of(now, h->step[0] * SL_HIST_WAIT_LONG_STEPS), out);
    else
        waits_sum(l->wshort, SL_HIST_WAIT_SHORT_SLOTS,
                  step_of(now, h->step[0] * SL_HIST_WAIT_SHORT_STEPS), out);
}

int64_t sl_hist_waits_quantile(const sl_hist_waits *w, double q)
{
    if (w->count == 0)
        return -1;
    double x = q * (double)w->count;
    uint64_t rank = (uint64_t)x; /* rounded up below (no libm for ceil) */
    if ((double)rank < x)
        rank++;
    if (rank < 1)
        rank = 1;
    uint64_t cum = 0;
    for (size_t b = 0; b < SL_HIST_WAIT_BOUNDS; b++) {
        cum += w->counts[b];
        if (cum >= rank) {
            int64_t bound = sl_hist_wait_bounds_us[b] / 1000;
            return bound < w->max_ms ? bound : w->max_ms;
        }
    }
    return w->max_ms;
}

static void render_cum(sl_buf *out, const char *name, const char *lock, const hcum *c)
{
    uint64_t cum = 0;
    for (size_t b = 0; b < SL_HIST_WAIT_BOUNDS; b++) {
        cum += c->counts[b];
        sl_buf_addf(out, "%s_bucket{lock=\"%s\",le=\"%g\"} %llu\n", name, lock,
                    (double)sl_hist_wait_bounds_us[b] / 1e6, (unsigned long long)cum);
    }
    cum += c->counts[SL_HIST_WAIT_BOUNDS];
    sl_buf_addf(out,
                "%s_bucket{lock=\"%s\",le=\"+Inf\"} %llu\n%s_sum{lock=\"%s\"} %.6f\n"
                "%s_count{lock=\"%s\"} %llu\n",
                name, lock, (unsigned long long)cum, name, lock, c->sum, name, lock,
                (unsigned long long)c->count);
}

/* Lock keys are [A-Za-z0-9._-/:=] after "mtx/" or "sem/": nothing to escape
 * in a label value, and none is "other". */
void sl_history_render_metrics(sl_history *h, sl_hist_live_fn live, void *ud, sl_buf *out)
{
    static const char name[] = "sluice_lock_wait_seconds";
    /* A lock gone since the last scrape takes its series with it: one-off
     * names (a mutex per run) would otherwise add series for ever. */
    for (size_t i = h->ncum; i-- > 0;)
        if (!live(ud, h->cum[i].key))
            cum_fold(h, i);
    sl_buf_addf(out,
                "# HELP %s Time from a claim's arrival to its grant, per live lock (at most %d; "
                "lock=\"other\" sums the locks that went or made room).\n# TYPE %s histogram\n",
                name, SL_HIST_METRIC_LOCKS, name);
    for (size_t i = 0; i < h->ncum; i++)
        render_cum(out, name, h->cum[i].key, &h->cum[i]);
    render_cum(out, name, "other", &h->other);
}
