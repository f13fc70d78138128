/* rebalance.c - the rebalanced strategy: fair shares between rebalance keys.
 *
 * docs/engine.md: each key among a lock's holders and waiters weighs its
 * weight (the lock's weights, else default_weight, else 1); with W the sum,
 * a key's quota is floor(limit * w / W), plus one slot for each of the R
 * waiting keys with the largest remainders (limit * w mod W; among equal
 * remainders, the keys whose oldest waiting claims are oldest), R being
 * what the floors leave of the limit. That is the largest remainder
 * method: every quota is within one slot of limit * w / W, so long-run
 * shares follow the weights even when the limit does not divide (handing
 * the R slots to the oldest waiters gave them to the light keys, whose
 * claims wait longest). With equal weights every remainder is equal: the
 * floors are floor(limit / K) and limit mod K go to the oldest waiters.
 * Keys with no waiter get none of the R slots. Free slots go to the oldest
 * waiting claim of a key below its quota; when no such key waits, to the
 * oldest waiting claim of any key, so no slot idles while someone waits.
 *
 * A rebalanced lock keeps one queue per key (oldest first) and the keys that
 * have waiters ordered by their oldest waiter. The order in which slots
 * would be handed out is not stored, because each choice changes the next
 * quota: sl__rk_walk computes it step by step from those queues, costing
 * O(keys waiting) per step. Admission only walks as far as the free slots
 * reach, so the cost follows the lock's limit, not the length of its queue. */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

typedef struct rk_cursor {
    sl_rkey *rk;
    sl_tnode *cur;  /* the next of its entries to be handed slots */
    uint64_t held;  /* slots the key holds, counting those handed out so far */
    uint64_t share; /* floor(limit * weight / W) */
    uint64_t rem;   /* limit * weight mod W: who gets a leftover slot first */
    uint64_t quota; /* share, plus one if it gets one of the leftover slots */
} rk_cursor;

static uint32_t weight_of(const sl_lock *l, const char *name)
{
    const sl_sem_rules *r = sl__lock_rules(l);
    for (size_t i = 0; i < r->nweights; i++)
        if (strcmp(r->weights[i].key, name) == 0)
            return r->weights[i].weight;
    return r->default_weight ? r->default_weight : 1;
}

static uint64_t share_of(const sl_lock *l, const sl_rkey *rk)
{
    return l->wsum ? (uint64_t)l->limit * rk->weight / l->wsum : 0;
}

static uint64_t rem_of(const sl_lock *l, const sl_rkey *rk)
{
    return l->wsum ? (uint64_t)l->limit * rk->weight % l->wsum : 0;
}

/* R: the slots the floors of every key's share leave of the limit. */
static uint64_t remainder_of(const sl_lock *l)
{
    if (sl__lock_rules(l)->nweights == 0) /* one weight for all: limit mod K */
        return l->limit % sl__hash_count(l->rkeys);
    uint64_t sum = 0;
    for (sl_hnode *n = sl__hash_first(l->rkeys); n; n = sl__hash_next(l->rkeys, n))
        sum += share_of(l, sl__container_of(n, sl_rkey, hnode));
    return l->limit > sum ? l->limit - sum : 0;
}

void sl__rk_reweigh(sl_lock *l)
{
    if (!l->rkeys)
        return;
    l->wsum = 0;
    for (sl_hnode *n = sl__hash_first(l->rkeys); n; n = sl__hash_next(l->rkeys, n)) {
        sl_rkey *rk = sl__container_of(n, sl_rkey, hnode);
        rk->weight = weight_of(l, rk->name);
        l->wsum += rk->weight;
    }
}

static const char *rk_hash_key(const sl_hnode *n, size_t *len)
{
    const sl_rkey *rk = sl__container_of(n, sl_rkey, hnode);
    *len = rk->len;
    return rk->name;
}

static const sl_claim *entry_claim(const sl_tnode *t)
{
    return sl__container_of(t, sl_centry, u.node)->claim;
}

static int entry_cmp(const sl_tnode *a, const sl_tnode *b)
{
    return sl__claim_age_order(entry_claim(a), entry_claim(b));
}

static int key_cmp(const sl_tnode *a, const sl_tnode *b)
{
    const sl_rkey *ka = sl__container_of(a, sl_rkey, onode);
    const sl_rkey *kb = sl__container_of(b, sl_rkey, onode);
    return sl__claim_age_order(entry_claim(sl__tree_first(&ka->pending)),
                               entry_claim(sl__tree_first(&kb->pending)));
}

static sl_rkey *rk_get(sl_engine *eng, sl_lock *l, const sl_claim *c)
{
    const char *name = c->rkey ? c->rkey : "";
    size_t len = strlen(name);
    if (!l->rkeys) {
        l->rkeys = sl__calloc(&eng->mem, 1, sizeof(*l->rkeys));
        sl__hash_init(l->rkeys, &eng->mem, rk_hash_key, eng->opts.hash_key[0],
                      eng->opts.hash_key[1]);
        sl__tree_init(&l->rkey_order, key_cmp);
    }
    sl_hnode *n = sl__hash_find(l->rkeys, name, len);
    if (n)
        return sl__container_of(n, sl_rkey, hnode);
    sl_rkey *rk = sl__calloc(&eng->mem, 1, sizeof(*rk) + len + 1);
    memcpy(rk->name, name, len);
    rk->len = (uint16_t)len;
    rk->weight = weight_of(l, rk->name);
    l->wsum += rk->weight;
    sl__tree_init(&rk->pending, entry_cmp);
    sl__hash_insert(l->rkeys, &rk->hnode);
    return rk;
}

static void rk_maybe_free(sl_engine *eng, sl_lock *l, sl_rkey *rk)
{
    if (rk->nheld > 0 || rk->npending > 0)
        return;
    l->wsum -= rk->weight;
    sl__hash_remove(l->rkeys, &rk->hnode);
    sl__free(&eng->mem, rk);
}

void sl__rk_add_pending(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    sl_rkey *rk = rk_get(eng, l, e->claim);
    /* The key's place among keys depends on its oldest waiter: take it out
     * while that may change. */
    if (rk->npending > 0)
        sl__tree_remove(&l->rkey_order, &rk->onode);
    sl__tree_insert(&rk->pending, &e->u.node, e->slots);
    rk->npending++;
    sl__tree_insert(&l->rkey_order, &rk->onode, 1);
    e->rk = rk;
}

void sl__rk_remove_pending(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    sl_rkey *rk = e->rk;
    sl__tree_remove(&l->rkey_order, &rk->onode);
    sl__tree_remove(&rk->pending, &e->u.node);
    rk->npending--;
    if (rk->npending > 0)
        sl__tree_insert(&l->rkey_order, &rk->onode, 1);
    e->rk = NULL;
    rk_maybe_free(eng, l, rk);
}

void sl__rk_add_held(sl_engine *eng, sl_centry *e)
{
    sl_rkey *rk = rk_get(eng, e->lock, e->claim);
    rk->held += e->slots;
    rk->nheld++;
    e->rk = rk;
}

void sl__rk_remove_held(sl_engine *eng, sl_centry *e)
{
    sl_rkey *rk = e->rk;
    rk->held -= e->slots;
    rk->nheld--;
    e->rk = NULL;
    rk_maybe_free(eng, e->lock, rk);
}

void sl__rk_free_all(sl_engine *eng, sl_lock *l)
{
    if (!l->rkeys)
        return;
    sl_pvec all = {0};
    for (sl_hnode *n = sl__hash_first(l->rkeys); n; n = sl__hash_next(l->rkeys, n))
        sl__pvec_push(&eng->mem, &all, sl__container_of(n, sl_rkey, hnode));
    for (size_t i = 0; i < all.n; i++)
        sl__free(&eng->mem, all.v[i]);
    sl__pvec_free(&eng->mem, &all);
    sl__hash_free(l->rkeys);
    sl__free(&eng->mem, l->rkeys);
    l->rkeys = NULL;
    l->wsum = 0;
}

static int cursor_cmp(const rk_cursor *a, const rk_cursor *b)
{
    return sl__claim_age_order(entry_claim(a->cur), entry_claim(b->cur));
}

/* The cursor at r has moved to a newer entry: slide it right to its place. */
static void cursor_resort(rk_cursor *v, size_t n, size_t r)
{
    rk_cursor moved = v[r];
    size_t i = r;
    while (i + 1 < n && cursor_cmp(&v[i + 1], &moved) < 0) {
        v[i] = v[i + 1];
        i++;
    }
    v[i] = moved;
}

/* The cursors' quotas: the `extra` leftover slots go one each to the
 * cursors with the largest remainders, and among equal remainders to the
 * first in v's order (oldest waiter first). rems holds the n remainders,
 * largest first. */
static void set_quotas(rk_cursor *v, size_t n, const uint64_t *rems, uint64_t extra)
{
    uint64_t t = 0; /* the smallest remainder that gets a slot */
    uint64_t ties = 0; /* of the remainders equal to t, how many get one */
    if (extra > 0 && extra < n) {
        t = rems[extra - 1];
        size_t above = 0;
        while (rems[above] > t)
            above++;
        ties = extra - above;
    }
    for (size_t r = 0; r < n; r++) {
        bool plus = extra >= n;
        if (!plus && extra > 0 && v[r].rem >= t)
            plus = v[r].rem > t || (ties > 0 && ties-- > 0);
        v[r].quota = v[r].share + (plus ? 1 : 0);
    }
}

static int rem_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* One cursor per waiting key, oldest waiter first, in eng->sim; their
 * remainders, largest first, right after the cursors. */
static rk_cursor *load_cursors(sl_engine *eng, const sl_lock *l, size_t n, uint64_t **rems)
{
    if (eng->simcap < n) {
        eng->simcap = n * 2;
        eng->sim = sl__realloc(&eng->mem, eng->sim,
                               eng->simcap * (sizeof(rk_cursor) + sizeof(uint64_t)));
    }
    rk_cursor *v = eng->sim;
    *rems = (uint64_t *)(v + eng->simcap);
    size_t i = 0;
    for (sl_tnode *t = sl__tree_first(&l->rkey_order); t; t = sl__tree_next(t), i++) {
        sl_rkey *rk = sl__container_of(t, sl_rkey, onode);
        v[i] = (rk_cursor){rk, sl__tree_first(&rk->pending), rk->held, share_of(l, rk),
                           rem_of(l, rk), 0};
        (*rems)[i] = v[i].rem;
    }
    qsort(*rems, n, sizeof(uint64_t), rem_desc);
    return v;
}

static void drop_rem(uint64_t *rems, size_t n, uint64_t rem)
{
    size_t i = 0;
    while (i + 1 < n && rems[i] != rem)
        i++;
    memmove(&rems[i], &rems[i + 1], (n - i - 1) * sizeof(*rems));
}

static size_t pick(rk_cursor *v, size_t n, const uint64_t *rems, uint64_t extra)
{
    set_quotas(v, n, rems, extra);
    for (size_t r = 0; r < n; r++)
        if (v[r].held < v[r].quota)
            return r;
    return 0;
}

void sl__rk_walk(sl_engine *eng, const sl_lock *l, sl_rk_visit visit, void *ud)
{
    size_t n = l->rkeys ? sl__tree_count(&l->rkey_order) : 0;
    if (n == 0)
        return;
    uint64_t *rems;
    rk_cursor *v = load_cursors(eng, l, n, &rems);
    uint64_t extra = remainder_of(l);
    uint64_t before = 0;
    for (size_t position = 1; n > 0; position++) {
        size_t r = pick(v, n, rems, extra);
        sl_centry *e = sl__container_of(v[r].cur, sl_centry, u.node);
        if (!visit(ud, e, position, before))
            return;
        before += e->slots;
        v[r].held += e->slots;
        v[r].cur = sl__tree_next(v[r].cur);
        if (v[r].cur) {
            cursor_resort(v, n, r);
        } else {
            drop_rem(rems, n, v[r].rem);
            memmove(&v[r], &v[r + 1], (n - r - 1) * sizeof(*v));
            n--;
        }
    }
}

uint64_t sl__rk_quota(sl_engine *eng, const sl_lock *l, const sl_rkey *rk, bool *someone_below)
{
    size_t n = l->rkeys ? sl__tree_count(&l->rkey_order) : 0;
    uint64_t quota = share_of(l, rk);
    *someone_below = false;
    if (n == 0)
        return quota;
    uint64_t *rems;
    rk_cursor *v = load_cursors(eng, l, n, &rems);
    set_quotas(v, n, rems, remainder_of(l));
    for (size_t r = 0; r < n; r++) {
        if (v[r].rk == rk)
            quota = v[r].quota;
        else if (v[r].held < v[r].quota)
            *someone_below = true;
    }
    return quota;
}
