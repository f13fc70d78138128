/* routes_lists.c - GET /v1/claims and GET /v1/queue, a page at a time.
 *
 * A listing answers at most `limit` entries (default SL_PAGE_DEFAULT, at
 * most SL_PAGE_MAX) and, when entries may remain, `next`: a cursor to pass
 * as `after` for the next page (absent when the listing is complete). Cursors are opaque to
 * clients and hold the sort key of the last entry sent, not a pointer to
 * it, so a page resumes in the right place even when that claim has ended
 * or been purged since:
 *   /v1/claims            "A.ID": arrival number and id of the last claim
 *   /v1/queue             "P.C.A.N": priority, created, arrival of the last
 *                         claim and its position N in the listing
 *   either, with ?lock=   "oN": the number of the lock's entries examined
 *                         (holders, then waiters); that queue moves as
 *                         claims are granted, so a page may repeat or skip
 *                         an entry that moved meanwhile. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "server.h"

#define SL_PAGE_DEFAULT 1000
#define SL_PAGE_MAX 10000
#define CURSOR_MAX 96

typedef struct page {
    size_t limit;      /* entries at most */
    const char *after; /* the cursor given, or NULL */
    json_t *arr;
    char next[CURSOR_MAX]; /* "" when the listing is complete */
} page;

/* limit= and after=; false when a 400 was sent. */
static bool page_args(sl_ctx *c, page *p)
{
    uint64_t limit = SL_PAGE_DEFAULT;
    if (sl_query_uint_in(c, "limit", 1, SL_PAGE_MAX, &limit) != 0)
        return false;
    p->limit = (size_t)limit;
    p->after = sl_query_get(c, "after");
    p->arr = json_array();
    p->next[0] = '\0';
    return true;
}

static void bad_cursor(sl_ctx *c, page *p)
{
    sl_reply_error(c, 400, "bad_request",
                   "after=\"%.96s\" is not a cursor of this listing: pass the \"next\" of the "
                   "previous page, unchanged",
                   p->after);
    json_decref(p->arr);
}

/* "next" only when entries may remain: a complete listing reads exactly as
 * it did before listings had pages. */
static void page_reply(sl_ctx *c, page *p, const char *key)
{
    json_t *o = json_pack("{s:o}", key, p->arr);
    if (p->next[0])
        json_object_set_new(o, "next", json_string(p->next));
    sl_reply_json(c, 200, o);
}

/* "oN" of the ?lock= listings. */
static bool offset_cursor(const char *s, size_t *off)
{
    if (!s) {
        *off = 0;
        return true;
    }
    char *end = NULL;
    errno = 0;
    unsigned long long v = s[0] == 'o' ? strtoull(s + 1, &end, 10) : 0;
    if (s[0] != 'o' || end == s + 1 || *end || errno)
        return false;
    *off = (size_t)v;
    return true;
}

/* A lock key of ?lock=: *kind and the name after "mtx/" or "sem/". */
static bool lock_key(const char *lock, sl_kind *kind)
{
    if (strncmp(lock, "mtx/", 4) != 0 && strncmp(lock, "sem/", 4) != 0)
        return false;
    *kind = lock[0] == 'm' ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
    return sl_name_valid(lock + 4, strlen(lock + 4), false);
}

/* The 400 for a ?lock= that is not a lock key, saying what it is. */
static void bad_lock_key(sl_ctx *c, const char *lock)
{
    size_t n = strlen(lock);
    if (n > 0 && lock[n - 1] == '*')
        sl_reply_error(c, 400, "bad_request",
                       "lock=\"%.64s\" is a pattern, and a pattern has no queue of its own: give "
                       "the key of one semaphore made from it, sem/NAME",
                       lock);
    else
        sl_reply_error(c, 400, "bad_request",
                       "lock=\"%.64s\" is not a lock key: use mtx/NAME or sem/NAME", lock);
}

/* What both listings take besides their filters: ?lock= (*by_lock, and the
 * lock, NULL when it has no state), limit and after, and for a ?lock=
 * listing the offset its cursor gives. false when a 400 was sent. */
static bool listing_args(sl_ctx *c, page *p, bool *by_lock, const sl_lock **l, size_t *off)
{
    const char *lock = sl_query_get(c, "lock");
    sl_kind kind = SL_KIND_MUTEX;
    *by_lock = lock != NULL;
    *l = NULL;
    *off = 0;
    if (lock && !lock_key(lock, &kind)) {
        bad_lock_key(c, lock);
        return false;
    }
    if (!page_args(c, p))
        return false;
    if (!lock)
        return true;
    if (!offset_cursor(p->after, off)) {
        bad_cursor(c, p);
        return false;
    }
    sl_lock_view lv;
    if (sl_lock_lookup(c->srv->eng, kind, lock + 4, &lv, l) != 0)
        *l = NULL;
    return true;
}

/* ---- /v1/claims ----------------------------------------------------------- */

typedef struct claim_filter {
    bool has_state;
    sl_state state;
    const char *holder;
    const char *run; /* holders RUN or RUN/STEP (the RUN/STEP convention of docs/ui.md) */
} claim_filter;

static bool claim_matches(sl_ctx *c, const sl_claim *claim, const claim_filter *f)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    if (f->has_state && v.state != f->state)
        return false;
    if (f->holder && strcmp(f->holder, v.holder) != 0)
        return false;
    if (f->run && !sl_holder_of_run(f->run, v.holder))
        return false;
    return sl_auth_allows_claim(c, claim);
}

/* The lock's holders then its waiters, from entry `off` on. */
static void claims_of_lock(sl_ctx *c, const sl_lock *lock, size_t off, const claim_filter *f,
                           page *p)
{
    size_t nheld = 0, examined = off;
    if (lock) {
        sl_lock_view lv;
        sl_lock_get(lock, &lv);
        nheld = lv.nholders;
    }
    enum { BATCH = 64 };
    while (lock && json_array_size(p->arr) < p->limit) {
        const sl_claim *got[BATCH];
        size_t n = 0;
        if (examined < nheld) {
            sl_holder_view hv[BATCH];
            n = sl_lock_holders(lock, examined, hv, BATCH);
            for (size_t i = 0; i < n; i++)
                got[i] = hv[i].claim;
        } else {
            sl_waiter_view wv[BATCH];
            n = sl_lock_waiters(c->srv->eng, lock, examined - nheld, wv, BATCH);
            for (size_t i = 0; i < n; i++)
                got[i] = wv[i].claim;
        }
        if (n == 0)
            return;
        for (size_t i = 0; i < n && json_array_size(p->arr) < p->limit; i++) {
            examined++;
            if (claim_matches(c, got[i], f))
                json_array_append_new(p->arr, sl_json_claim(c->srv, got[i]));
        }
    }
    if (lock)
        snprintf(p->next, sizeof(p->next), "o%zu", examined);
}

/* The first claim after an "A.ID" cursor: the cursor's claim itself when it
 * is still there (O(1)), else the first that arrived after it. */
/* newest: the listing runs backward, newest first (?order=newest). */
static const sl_claim *step(const sl_ctx *c, const sl_claim *cl, bool newest)
{
    return newest ? sl_claim_prev(c->srv->eng, cl) : sl_claim_next(c->srv->eng, cl);
}

static bool claims_resume(sl_ctx *c, const char *cursor, bool newest, const sl_claim **first)
{
    if (!cursor) {
        *first = step(c, NULL, newest);
        return true;
    }
    char *dot = NULL;
    errno = 0;
    unsigned long long arrival = strtoull(cursor, &dot, 10);
    if (dot == cursor || *dot != '.' || errno || strlen(dot + 1) > SL_ID_MAX)
        return false;
    const sl_claim *last = sl_claim_find(c->srv->eng, dot + 1);
    sl_claim_view v;
    if (last)
        sl_claim_get(last, &v);
    if (last && v.arrival == arrival)
        *first = step(c, last, newest);
    else if (newest)
        *first = sl_claim_before(c->srv->eng, arrival);
    else
        *first = sl_claim_after(c->srv->eng, arrival);
    return true;
}

static void claims_all(sl_ctx *c, const sl_claim *cl, bool newest, const claim_filter *f,
                       page *p)
{
    const sl_claim *last = NULL;
    for (; cl; cl = step(c, cl, newest)) {
        if (!claim_matches(c, cl, f))
            continue;
        if (json_array_size(p->arr) == p->limit) {
            sl_claim_view v;
            sl_claim_get(last, &v);
            snprintf(p->next, sizeof(p->next), "%" PRIu64 ".%s", v.arrival, v.id);
            return;
        }
        json_array_append_new(p->arr, sl_json_claim(c->srv, cl));
        last = cl;
    }
}

void sl_route_claims_list(sl_ctx *c)
{
    static const char *const known[] = {"state", "holder", "run",   "lock",
                                        "order", "limit",  "after", NULL};
    if (!sl_query_only(c, known))
        return;
    const char *s = sl_query_get(c, "state");
    claim_filter f = {s != NULL, SL_PENDING, sl_query_get(c, "holder"), NULL};
    if (!sl_query_run(c, &f.run))
        return;
    if (s && sl_state_parse(s, &f.state) != 0) {
        sl_reply_error(c, 400, "bad_request",
                       "state=\"%.64s\" is not a claim state: pending, held, revoking, released, "
                       "withdrawn, expired, timed_out, superseded or canceled",
                       s);
        return;
    }
    const char *order = sl_query_get(c, "order");
    bool newest = order && strcmp(order, "newest") == 0;
    if (order && !newest && strcmp(order, "oldest") != 0) {
        sl_reply_error(c, 400, "bad_request",
                       "order=\"%.64s\" is not an order: oldest (arrival order, the default) or "
                       "newest",
                       order);
        return;
    }
    page p;
    bool by_lock;
    const sl_lock *l;
    size_t off;
    if (!listing_args(c, &p, &by_lock, &l, &off))
        return;
    if (by_lock && newest) {
        sl_reply_error(c, 400, "bad_request",
                       "order=newest lists claims by arrival; with lock= the listing is the "
                       "lock's own order (holders, then waiters): leave one of them out");
        json_decref(p.arr);
        return;
    }
    if (by_lock) {
        claims_of_lock(c, l, off, &f, &p);
        /* Complete unless the page filled up with entries left to look at. */
        if (json_array_size(p.arr) < p.limit)
            p.next[0] = '\0';
    } else {
        const sl_claim *first = NULL;
        if (!claims_resume(c, p.after, newest, &first)) {
            bad_cursor(c, &p);
            return;
        }
        claims_all(c, first, newest, &f, &p);
    }
    page_reply(c, &p, "claims");
}

/* ---- /v1/queue ------------------------------------------------------------ */

static json_t *queue_entry(sl_ctx *c, const sl_claim *claim, size_t position)
{
    json_t *o = sl_json_claim(c->srv, claim);
    size_t lock = 0;
    sl_rule rule = sl_claim_main_rule(c->srv->eng, claim, &lock);
    json_object_set_new(o, "position", json_integer((json_int_t)position));
    json_object_set_new(o, "rule", json_string(sl_rule_name(rule)));
    return o;
}

static void queue_of_lock(sl_ctx *c, const sl_lock *l, size_t off, page *p)
{
    enum { BATCH = 64 };
    sl_waiter_view wv[BATCH];
    size_t n;
    while (l && json_array_size(p->arr) < p->limit &&
           (n = sl_lock_waiters(c->srv->eng, l, off, wv, BATCH)) > 0) {
        for (size_t i = 0; i < n && json_array_size(p->arr) < p->limit; i++) {
            off++;
            if (sl_auth_allows_claim(c, wv[i].claim))
                json_array_append_new(p->arr, queue_entry(c, wv[i].claim, wv[i].position));
        }
    }
    if (json_array_size(p->arr) == p->limit)
        snprintf(p->next, sizeof(p->next), "o%zu", off);
}

static void queue_all(sl_ctx *c, const sl_claim *cl, size_t pos, page *p)
{
    const sl_claim *last = NULL;
    for (; cl; cl = sl_pending_next(c->srv->eng, cl)) {
        if (!sl_auth_allows_claim(c, cl))
            continue;
        if (json_array_size(p->arr) == p->limit) {
            sl_claim_view v;
            sl_claim_get(last, &v);
            snprintf(p->next, sizeof(p->next), "%" PRId32 ".%" PRId64 ".%" PRIu64 ".%zu",
                     v.priority, v.created_ms, v.arrival, pos);
            return;
        }
        json_array_append_new(p->arr, queue_entry(c, cl, ++pos));
        last = cl;
    }
}

/* "P.C.A.N" into the claim to start from and the position before it. */
static bool queue_resume(sl_ctx *c, const char *cursor, const sl_claim **first, size_t *pos)
{
    if (!cursor) {
        *first = sl_pending_next(c->srv->eng, NULL);
        *pos = 0;
        return true;
    }
    long long prio, created;
    unsigned long long arrival, n;
    int used = 0;
    if (sscanf(cursor, "%lld.%lld.%llu.%llu%n", &prio, &created, &arrival, &n, &used) != 4 ||
        cursor[used] != '\0' || prio < INT32_MIN || prio > INT32_MAX)
        return false;
    *first = sl_pending_after(c->srv->eng, (int32_t)prio, created, arrival);
    *pos = (size_t)n;
    return true;
}

/* Whether a pending claim is one DELETE /v1/queue clears: on the lock
 * (when given), of the holder prefix (when given). */
static bool clears(const sl_claim *cl, const char *key, const char *prefix)
{
    sl_claim_view v;
    sl_claim_get(cl, &v);
    if (prefix && strncmp(v.holder, prefix, strlen(prefix)) != 0)
        return false;
    for (size_t i = 0; key && i < v.nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(cl, i, &lv);
        if (strcmp(lv.key, key) == 0)
            return true;
    }
    return !key;
}

/* DELETE /v1/queue?lock=KEY&holder_prefix=P: an operator empties a queue,
 * every pending claim on the lock (and/or of the prefix) canceled "by an
 * operator", one event each (in the total order), then admission once for
 * the claims left. It ends other people's work: an admin's, or a token's
 * with the operate permission (F7), which cancels only the claims whose
 * every lock it may operate. */
static bool may_clear(sl_ctx *c, const char *lock)
{
    if (c->auth.admin)
        return true;
    if (lock)
        return sl_auth_require(c, SL_PERM_OPERATE, lock + 4, "clearing a queue");
    bool any = sl_auth_has(c, SL_PERM_OPERATE);
    if (!any)
        sl_reply_error(c, 403, "forbidden",
                       "clearing a queue cancels other clients' claims: it needs the operate "
                       "permission, and this token has none (an admin may give it operate "
                       "prefixes)");
    return any;
}

static void queue_clear(sl_ctx *c)
{
    static const char *const known[] = {"lock", "holder_prefix", NULL};
    if (!sl_query_only(c, known))
        return;
    const char *lock = sl_query_get(c, "lock"), *prefix = sl_query_get(c, "holder_prefix");
    sl_kind kind;
    if (lock && !lock_key(lock, &kind)) {
        bad_lock_key(c, lock);
        return;
    }
    if ((!lock && !prefix) ||
        (prefix && (!*prefix || strlen(prefix) > SL_HOLDER_MAX))) {
        sl_reply_error(c, 400, "bad_request",
                       "DELETE /v1/queue needs lock=KEY (mtx/NAME or sem/NAME), "
                       "holder_prefix=P (1 to %d characters), or both: it cancels the pending "
                       "claims on that lock and/or of holders starting with P",
                       SL_HOLDER_MAX);
        return;
    }
    if (!may_clear(c, lock) || sl_refuse_if_store_failed(c))
        return;
    sl_engine *eng = c->srv->eng;
    size_t n = 0, cap = 0;
    sl_claim **all = NULL;
    for (const sl_claim *cl = sl_pending_next(eng, NULL); cl; cl = sl_pending_next(eng, cl)) {
        if (!clears(cl, lock, prefix) || !sl_auth_may_end(c, cl))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            sl_claim **grown = realloc(all, cap * sizeof(*all));
            if (!grown)
                abort();
            all = grown;
        }
        all[n++] = (sl_claim *)cl;
    }
    /* One engine step: every one of them leaves before anyone is let in, so
     * none is granted on the way out, whatever order a lock grants in. */
    sl_bulk_counts done = {0, 0, 0, 0};
    sl_claims_end(eng, all, n, SL_BULK_CLEAR, c->now, &done);
    size_t canceled = done.canceled;
    free(all);
    if (canceled)
        sl_server_touch(c->srv);
    sl_reply_json(c, 200, json_pack("{s:I}", "canceled", (json_int_t)canceled));
}

void sl_route_queue(sl_ctx *c)
{
    static const char *const known[] = {"lock", "limit", "after", NULL};
    c->route = SL_ROUTE_QUEUE;
    if (c->method == SL_HTTP_DELETE) {
        queue_clear(c);
        return;
    }
    if (c->method != SL_HTTP_GET) {
        sl_allow(c, "GET, DELETE");
        sl_reply_error(c, 405, "method_not_allowed", "/v1/queue takes GET and DELETE");
        return;
    }
    if (!sl_query_only(c, known))
        return;
    page p;
    bool by_lock;
    const sl_lock *l;
    size_t off;
    if (!listing_args(c, &p, &by_lock, &l, &off))
        return;
    if (by_lock) {
        queue_of_lock(c, l, off, &p);
    } else {
        const sl_claim *first = NULL;
        size_t pos = 0;
        if (!queue_resume(c, p.after, &first, &pos)) {
            bad_cursor(c, &p);
            return;
        }
        queue_all(c, first, pos, &p);
    }
    page_reply(c, &p, "queue");
}
