/* lock.c - locks: found or made by key, their holders, their tokens, and
 * the idle ones remembered for their tokens.
 *
 * A lock exists while it has holders, waiters or an exact configuration
 * (the active list). When it has none it moves to the idle list, where it
 * keeps only its fencing token so that the next grant continues from it.
 * The idle list is bounded: past opts.idle_locks_max the oldest idle locks
 * are forgotten and their tokens folded into token_floor, where every new
 * lock starts. Tokens therefore never go backwards, even for forgotten names,
 * and memory does not grow with every name ever used. */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

void sl__lock_key(sl_kind kind, const char *name, size_t len, char *out, size_t *outlen)
{
    memcpy(out, kind == SL_KIND_MUTEX ? "mtx/" : "sem/", 4);
    memcpy(out + 4, name, len);
    out[4 + len] = '\0';
    *outlen = 4 + len;
}

sl_lock *sl__lock_find(const sl_engine *eng, const char *key, size_t len)
{
    sl_hnode *n = sl__hash_find(&eng->locks, key, len);
    return n ? sl__container_of(n, sl_lock, hnode) : NULL;
}

static int queue_cmp(const sl_tnode *a, const sl_tnode *b)
{
    return sl__claim_order(sl__container_of(a, sl_centry, u.node)->claim,
                           sl__container_of(b, sl_centry, u.node)->claim);
}

static void list_remove(sl_engine *eng, sl_lock *l)
{
    sl_lock **head = l->idle ? &eng->idle_head : &eng->active_head;
    sl_lock **tail = l->idle ? &eng->idle_tail : &eng->active_tail;
    if (l->prev)
        l->prev->next = l->next;
    else
        *head = l->next;
    if (l->next)
        l->next->prev = l->prev;
    else
        *tail = l->prev;
    l->prev = l->next = NULL;
    if (l->idle)
        eng->nidle--;
    else
        eng->nactive--;
}

static void list_append(sl_engine *eng, sl_lock *l, bool idle)
{
    sl_lock **head = idle ? &eng->idle_head : &eng->active_head;
    sl_lock **tail = idle ? &eng->idle_tail : &eng->active_tail;
    l->idle = idle;
    l->prev = *tail;
    l->next = NULL;
    if (*tail)
        (*tail)->next = l;
    else
        *head = l;
    *tail = l;
    if (idle)
        eng->nidle++;
    else
        eng->nactive++;
}

/* An inline limit makes a semaphore no configuration covers, for as long
 * as it has holders or waiters (sl__lock_check_idle forgets it). */
void sl__lock_set_inline(sl_engine *eng, sl_lock *l, uint32_t limit)
{
    if (limit == 0 || l->cfg || l->inline_limit == limit)
        return;
    l->inline_limit = l->limit = limit;
    sl__lock_mark_dirty(eng, l);
}

const sl_sem_rules *sl__lock_rules(const sl_lock *l)
{
    static const sl_sem_rules none;
    return l->cfg ? &l->cfg->rules : &none;
}

bool sl__lock_busy(const sl_lock *l)
{
    return l->nholders > 0 || l->npending > 0;
}

static bool lock_kept_active(const sl_lock *l)
{
    /* A rate's bucket is state: a semaphore forgotten and made again would
     * start full. */
    return sl__lock_busy(l) || (l->cfg && !l->cfg->pattern) || sl__lock_rated(l);
}

void sl__lock_check_idle(sl_engine *eng, sl_lock *l)
{
    bool idle = !lock_kept_active(l);
    if (!sl__lock_busy(l) && l->inline_limit > 0 && !l->cfg)
        l->inline_limit = l->limit = 0; /* gone with its last claim */
    if (idle == l->idle)
        return;
    list_remove(eng, l);
    list_append(eng, l, idle);
}

sl_lock *sl__lock_get(sl_engine *eng, const char *key, size_t len)
{
    sl_lock *l = sl__lock_find(eng, key, len);
    if (l)
        return l;
    l = sl__calloc(&eng->mem, 1, sizeof(*l) + len + 1);
    memcpy(l->key, key, len);
    l->keylen = (uint16_t)len;
    l->kind = key[0] == 'm' ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
    l->limit = l->kind == SL_KIND_MUTEX ? 1 : 0;
    l->strategy = SL_STRICT;
    l->token = eng->token_floor;
    sl__timer_init(&l->rate_timer, eng->lock_seq++);
    sl__tree_init(&l->queue, queue_cmp);
    sl__hash_insert(&eng->locks, &l->hnode);
    list_append(eng, l, true);
    if (l->kind == SL_KIND_SEMAPHORE)
        sl__lock_apply_config(eng, l, sl__config_resolve(eng, key + 4, len - 4));
    return l;
}

void sl__lock_mark_dirty(sl_engine *eng, sl_lock *l)
{
    sl__preempt_mark(eng, l); /* its own mark: a dirty lock may need a new look */
    sl__preempt_retry_all(eng); /* it may be what held a head back */
    if (l->dirty)
        return;
    l->dirty = true;
    sl__pvec_push(&eng->mem, &eng->dirty, l);
}

/* Binds a semaphore to its (new) configuration and takes its values; a
 * semaphore with no configuration keeps its last values until it is idle. */
void sl__lock_apply_config(sl_engine *eng, sl_lock *l, const sl_config *cfg)
{
    l->cfg = cfg;
    if (cfg) {
        l->inline_limit = 0; /* configured now: the configuration rules it */
        if (cfg->strategy != l->strategy)
            sl__queue_requeue(eng, l, cfg->strategy);
        /* Any value may let someone in (rules too: weights, a rate, preempt). */
        sl__lock_mark_dirty(eng, l);
        if (l->strategy == SL_REBALANCED)
            sl__rk_reweigh(l);
        l->limit = cfg->limit;
        l->lease_ms = cfg->lease_ms;
        l->overtake_ms = cfg->overtake_ms;
    }
    sl__lock_check_idle(eng, l);
}

void sl__lock_holder_add(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    e->u.h.next = NULL;
    e->u.h.prev = l->htail;
    if (l->htail)
        l->htail->u.h.next = e;
    else
        l->hhead = e;
    l->htail = e;
    l->nholders++;
    l->used += e->slots;
    e->token = ++l->token;
    if (l->strategy == SL_REBALANCED)
        sl__rk_add_held(eng, e);
    sl__changes_lock(eng, l);
}

/* Restoring: holders come in whatever order the store keeps; each is put
 * at the back, and sl__lock_holders_sort puts the list in grant order once
 * they are all in (an insertion in order here would cost O(holders) each
 * when they come backwards). */
void sl__lock_holder_append(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    e->u.h.next = NULL;
    e->u.h.prev = l->htail;
    if (l->htail)
        l->htail->u.h.next = e;
    else
        l->hhead = e;
    l->htail = e;
    l->nholders++;
    l->used += e->slots;
    if (e->token > l->token)
        l->token = e->token;
    if (l->strategy == SL_REBALANCED)
        sl__rk_add_held(eng, e);
    sl__lock_check_idle(eng, l);
}

static int grant_order(const void *a, const void *b)
{
    uint64_t x = (*(const sl_centry *const *)a)->claim->grant_seq;
    uint64_t y = (*(const sl_centry *const *)b)->claim->grant_seq;
    return x < y ? -1 : x > y;
}

void sl__lock_holders_sort(sl_engine *eng, sl_lock *l)
{
    bool sorted = true;
    for (sl_centry *e = l->hhead; e && e->u.h.next && sorted; e = e->u.h.next)
        sorted = e->claim->grant_seq < e->u.h.next->claim->grant_seq;
    if (sorted)
        return;
    sl_pvec v = {0};
    for (sl_centry *e = l->hhead; e; e = e->u.h.next)
        sl__pvec_push(&eng->mem, &v, e);
    qsort(v.v, v.n, sizeof(*v.v), grant_order);
    l->hhead = l->htail = NULL;
    for (size_t i = 0; i < v.n; i++) {
        sl_centry *e = v.v[i];
        e->u.h.prev = l->htail;
        e->u.h.next = NULL;
        if (l->htail)
            l->htail->u.h.next = e;
        else
            l->hhead = e;
        l->htail = e;
    }
    sl__pvec_free(&eng->mem, &v);
}

void sl__lock_holder_remove(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    if (e->u.h.prev)
        e->u.h.prev->u.h.next = e->u.h.next;
    else
        l->hhead = e->u.h.next;
    if (e->u.h.next)
        e->u.h.next->u.h.prev = e->u.h.prev;
    else
        l->htail = e->u.h.prev;
    l->nholders--;
    l->used -= e->slots;
    if (e->rk)
        sl__rk_remove_held(eng, e);
    sl__lock_mark_dirty(eng, l);
}

static void lock_free(sl_engine *eng, sl_lock *l)
{
    sl__heap_cancel(&eng->rate_timers, &l->rate_timer);
    sl__preempt_forget(eng, l);
    sl__hash_remove(&eng->locks, &l->hnode);
    list_remove(eng, l);
    sl__rk_free_all(eng, l);
    sl__free(&eng->mem, l);
}

void sl__lock_evict_excess(sl_engine *eng)
{
    while (eng->nidle > eng->opts.idle_locks_max) {
        sl_lock *l = eng->idle_head;
        if (l->token > eng->token_floor)
            eng->token_floor = l->token;
        sl__pvec_push(&eng->mem, &eng->evicted, sl__batch_strdup(eng, l->key, l->keylen));
        lock_free(eng, l);
    }
}

void sl__lock_free_all(sl_engine *eng)
{
    while (eng->active_head)
        lock_free(eng, eng->active_head);
    while (eng->idle_head)
        lock_free(eng, eng->idle_head);
}

int sl_engine_restore_token(sl_engine *eng, const char *key, uint64_t token)
{
    size_t len = key ? strlen(key) : 0;
    if (len < 5 || (memcmp(key, "mtx/", 4) != 0 && memcmp(key, "sem/", 4) != 0) ||
        !sl__name_valid_saved(key + 4, len - 4, false))
        return SL_EINVAL;
    sl_lock *l = sl__lock_get(eng, key, len);
    /* The saved token is this lock's own last one: put it back as it was,
     * even below token_floor (the floor is where locks made later start;
     * this one was made before the floor rose). Holders only raise it. */
    if (l->nholders == 0 || token > l->token)
        l->token = token;
    return 0;
}

/* ---- views --------------------------------------------------------------- */

static void view_fill(const sl_engine *eng, sl_kind kind, const char *key, size_t klen,
                      const sl_config *cfg, sl_lock_view *out)
{
    memset(out, 0, sizeof(*out));
    out->kind = kind;
    memcpy(out->key, key, klen + 1);
    out->name = out->key + 4;
    out->limit = kind == SL_KIND_MUTEX ? 1 : 0;
    out->strategy = SL_STRICT;
    out->token = eng ? eng->token_floor : 0;
    if (cfg) {
        out->configured = true;
        out->limit = cfg->limit;
        out->strategy = cfg->strategy;
        out->lease_ms = cfg->lease_ms;
        out->overtake_ms = cfg->overtake_ms;
        out->from_pattern = cfg->pattern ? cfg->name : NULL;
        out->rules = cfg->rules;
    }
}

void sl_lock_get(const sl_lock *l, sl_lock_view *out)
{
    view_fill(NULL, l->kind, l->key, l->keylen, l->cfg, out);
    out->limit = l->limit;
    out->strategy = l->strategy;
    out->lease_ms = l->lease_ms;
    out->overtake_ms = l->overtake_ms;
    out->used = l->used;
    out->token = l->token;
    out->inline_limit = l->inline_limit;
    out->nholders = l->nholders;
    out->npending = l->npending;
}

int sl_lock_lookup(const sl_engine *eng, sl_kind kind, const char *name, sl_lock_view *out,
                   const sl_lock **lock)
{
    size_t len = name ? strlen(name) : 0;
    if (lock)
        *lock = NULL;
    if (!sl_name_valid(name, len, kind == SL_KIND_SEMAPHORE))
        return SL_EINVAL;
    char key[SL_LOCK_KEY_MAX + 1];
    size_t klen;
    sl__lock_key(kind, name, len, key, &klen);
    const sl_lock *l = sl__lock_find(eng, key, klen);
    const sl_config *cfg = kind == SL_KIND_SEMAPHORE ? sl__config_resolve(eng, name, len) : NULL;
    if (kind == SL_KIND_SEMAPHORE && !cfg && !(l && l->inline_limit))
        return SL_ENOTFOUND;
    if (l && (kind == SL_KIND_MUTEX || l->cfg || l->inline_limit)) {
        sl_lock_get(l, out);
        if (lock)
            *lock = l;
        return 0;
    }
    view_fill(eng, kind, key, klen, cfg, out);
    if (l)
        out->token = l->token;
    return 0;
}

const sl_lock *sl_lock_next(const sl_engine *eng, const sl_lock *prev)
{
    return prev ? prev->next : eng->active_head;
}

size_t sl_lock_holders(const sl_lock *l, size_t offset, sl_holder_view *out, size_t max)
{
    size_t n = 0, i = 0;
    for (const sl_centry *e = l->hhead; e && n < max; e = e->u.h.next, i++) {
        if (i < offset)
            continue;
        out[n].claim = e->claim;
        out[n].slots = e->slots;
        out[n].token = e->token;
        out[n].since_ms = e->claim->granted;
        n++;
    }
    return n;
}

typedef struct waiters_ctx {
    size_t offset, max, n;
    sl_waiter_view *out;
} waiters_ctx;

static bool waiters_visit(void *ud, sl_centry *e, size_t position, uint64_t slots_before)
{
    waiters_ctx *w = ud;
    (void)slots_before;
    if (position <= w->offset)
        return true;
    if (w->n == w->max)
        return false;
    w->out[w->n].claim = e->claim;
    w->out[w->n].slots = e->slots;
    w->out[w->n].position = position;
    w->n++;
    return true;
}

size_t sl_lock_waiters(sl_engine *eng, const sl_lock *l, size_t offset, sl_waiter_view *out,
                       size_t max)
{
    waiters_ctx w = {offset, max, 0, out};
    if (l->strategy == SL_REBALANCED) {
        sl__rk_walk(eng, l, waiters_visit, &w);
        return w.n;
    }
    size_t pos = offset + 1;
    for (sl_tnode *t = sl__tree_at(&l->queue, offset); t && w.n < max; t = sl__tree_next(t))
        waiters_visit(&w, sl__container_of(t, sl_centry, u.node), pos++, 0);
    return w.n;
}
