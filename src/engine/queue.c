/* queue.c - queues and admission: who may be granted, and granting them.
 *
 * A pending claim is granted when it is admissible on every one of its locks
 * at the same moment (DESIGN.md). Any change that could let someone in (a
 * release, a raised limit, a new or departed waiter) marks the lock dirty;
 * sl__settle then takes, from each dirty lock, the waiters that fit in its
 * free slots by its strategy (the candidates), and tries them in the one
 * total order, each against the state left by the grants before it.
 *
 * Why one ordered pass is exact for strict and skip: granting a claim moves
 * its slots from "asked for ahead of me" to "used", which leaves every
 * strict waiter behind it where it was and only shrinks what skip waiters
 * can have, so a waiter refused in the pass stays refused. Rebalanced locks
 * reorder as keys gain slots, so a grant there marks the lock dirty and the
 * pass runs again until nothing more can be granted. */
#include <stdlib.h>

#include "engine_int.h"

uint64_t sl__lock_free_slots(const sl_lock *l)
{
    return l->limit > l->used ? l->limit - l->used : 0;
}

void sl__queue_add(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    l->npending++;
    if (l->strategy == SL_REBALANCED)
        sl__rk_add_pending(eng, e);
    else
        sl__tree_insert(&l->queue, &e->u.node, e->slots);
    sl__lock_mark_dirty(eng, l);
    sl__lock_check_idle(eng, l);
}

void sl__queue_remove(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    l->npending--;
    if (e->rk)
        sl__rk_remove_pending(eng, e);
    else
        sl__tree_remove(&l->queue, &e->u.node);
    sl__lock_mark_dirty(eng, l);
}

static bool collect_pending(void *ud, sl_centry *e, size_t position, uint64_t slots_before)
{
    (void)position;
    (void)slots_before;
    sl__pvec_push(&((sl_engine *)ud)->mem, &((sl_engine *)ud)->cand, e);
    return true;
}

/* Changes a lock's strategy: its waiters are queued again in the order the
 * new strategy keeps, and a rebalanced lock's holders are counted per key. */
void sl__queue_requeue(sl_engine *eng, sl_lock *l, sl_strategy strategy)
{
    size_t base = eng->cand.n;
    if (l->strategy == SL_REBALANCED)
        sl__rk_walk(eng, l, collect_pending, eng);
    else
        for (sl_tnode *t = sl__tree_first(&l->queue); t; t = sl__tree_next(t))
            sl__pvec_push(&eng->mem, &eng->cand, sl__container_of(t, sl_centry, u.node));
    for (size_t i = base; i < eng->cand.n; i++)
        sl__queue_remove(eng, eng->cand.v[i]);
    for (sl_centry *h = l->hhead; h; h = h->u.h.next)
        if (h->rk)
            sl__rk_remove_held(eng, h);
    l->strategy = strategy;
    for (sl_centry *h = l->hhead; h; h = h->u.h.next)
        if (strategy == SL_REBALANCED)
            sl__rk_add_held(eng, h);
    for (size_t i = base; i < eng->cand.n; i++)
        sl__queue_add(eng, eng->cand.v[i]);
    eng->cand.n = base;
}

typedef struct find_ctx {
    const sl_centry *target;
    uint64_t free;
    size_t position;
    uint64_t before;
    bool fits;
} find_ctx;

/* Walks a rebalanced lock's order of choice up to target. With free set,
 * stops as soon as the slots handed out before would leave no room. */
static bool find_visit(void *ud, sl_centry *e, size_t position, uint64_t slots_before)
{
    find_ctx *f = ud;
    if (e == f->target) {
        f->position = position;
        f->before = slots_before;
        f->fits = slots_before + e->slots <= f->free;
        return false;
    }
    return !(f->free != UINT64_MAX && slots_before + e->slots > f->free);
}

bool sl__queue_admissible(sl_engine *eng, const sl_centry *e)
{
    const sl_lock *l = e->lock;
    uint64_t free = sl__lock_free_slots(l);
    if (e->slots > free)
        return false;
    switch (l->strategy) {
    case SL_STRICT:
        return sl__tree_sum_before(&e->u.node) + e->slots <= free;
    case SL_SKIP:
        return true;
    case SL_REBALANCED: {
        find_ctx f = {e, free, 0, 0, false};
        sl__rk_walk(eng, l, find_visit, &f);
        return f.fits;
    }
    }
    return false;
}

size_t sl__queue_position(sl_engine *eng, const sl_centry *e)
{
    if (e->lock->strategy != SL_REBALANCED)
        return sl__tree_rank(&e->u.node) + 1;
    find_ctx f = {e, UINT64_MAX, 0, 0, false};
    sl__rk_walk(eng, e->lock, find_visit, &f);
    return f.position;
}

uint64_t sl__queue_ahead_slots(sl_engine *eng, const sl_centry *e)
{
    if (e->lock->strategy != SL_REBALANCED)
        return sl__tree_sum_before(&e->u.node);
    find_ctx f = {e, UINT64_MAX, 0, 0, false};
    sl__rk_walk(eng, e->lock, find_visit, &f);
    return f.before;
}

static void candidate(sl_engine *eng, sl_claim *c)
{
    if (c->candidate)
        return;
    c->candidate = true;
    sl__pvec_push(&eng->mem, &eng->cand, c);
}

typedef struct collect_ctx {
    sl_engine *eng;
    uint64_t free;
} collect_ctx;

static bool collect_visit(void *ud, sl_centry *e, size_t position, uint64_t slots_before)
{
    collect_ctx *cc = ud;
    (void)position;
    if (slots_before + e->slots > cc->free)
        return false;
    candidate(cc->eng, e->claim);
    return true;
}

/* The waiters of l that its strategy would let in now, were their other
 * locks free. Strict: the prefix of the queue that fits. Skip: every waiter
 * that fits by itself (the amortised walk DESIGN.md allows). Rebalanced:
 * the prefix of the order of choice that fits. */
static void collect(sl_engine *eng, sl_lock *l)
{
    uint64_t free = sl__lock_free_slots(l);
    if (free == 0 || l->npending == 0)
        return;
    if (l->strategy == SL_REBALANCED) {
        collect_ctx cc = {eng, free};
        sl__rk_walk(eng, l, collect_visit, &cc);
        return;
    }
    uint64_t sum = 0;
    for (sl_tnode *t = sl__tree_first(&l->queue); t; t = sl__tree_next(t)) {
        sl_centry *e = sl__container_of(t, sl_centry, u.node);
        if (l->strategy == SL_STRICT) {
            sum += e->slots;
            if (sum > free)
                break;
        } else if (e->slots > free) {
            continue;
        }
        candidate(eng, e->claim);
    }
}

static int cand_cmp(const void *a, const void *b)
{
    return sl__claim_order(*(const sl_claim *const *)a, *(const sl_claim *const *)b);
}

static bool admissible_everywhere(sl_engine *eng, const sl_claim *c)
{
    for (size_t i = 0; i < c->nlocks; i++)
        if (!sl__queue_admissible(eng, &c->e[i]))
            return false;
    return true;
}

static void grant(sl_engine *eng, sl_claim *c, int64_t now)
{
    for (size_t i = 0; i < c->nlocks; i++)
        sl__queue_remove(eng, &c->e[i]);
    sl__tree_remove(&eng->pending, &c->pnode);
    for (size_t i = 0; i < c->nlocks; i++)
        sl__lock_holder_add(eng, &c->e[i]);
    c->state = SL_HELD;
    c->granted = now;
    c->grant_seq = eng->next_grant++;
    eng->grants++;
    eng->nheld++;
    sl__event_add(eng, SL_EV_CLAIM_ACQUIRED, c, now);
    sl__claim_touch(eng, c);
    sl__claim_rearm(eng, c);
}

/* Grants a claim with no locks at all (tags that add none). */
void sl__queue_grant_now(sl_engine *eng, sl_claim *c, int64_t now)
{
    grant(eng, c, now);
}

void sl__settle(sl_engine *eng, int64_t now)
{
    while (eng->dirty.n > 0) {
        for (size_t i = 0; i < eng->dirty.n; i++) {
            sl_lock *l = eng->dirty.v[i];
            l->dirty = false;
            collect(eng, l);
        }
        eng->dirty.n = 0;
        if (eng->cand.n == 0)
            break;
        qsort(eng->cand.v, eng->cand.n, sizeof(*eng->cand.v), cand_cmp);
        for (size_t i = 0; i < eng->cand.n; i++) {
            sl_claim *c = eng->cand.v[i];
            c->candidate = false;
            if (c->state == SL_PENDING && admissible_everywhere(eng, c))
                grant(eng, c, now);
        }
        eng->cand.n = 0;
    }
    for (size_t i = 0; i < eng->dirty.n; i++)
        ((sl_lock *)eng->dirty.v[i])->dirty = false;
    eng->dirty.n = 0;
}
