/* queue.c - queues and admission: who may be granted, and granting them.
 *
 * A pending claim is granted when it is admissible on every one of its locks
 * at the same moment (docs/engine.md). The rule is that of full passes: try every
 * waiter in the one total order, each against the state left by the grants
 * before it, and pass again until a pass grants nothing. Trying every waiter
 * would cost O(n) per change, so a pass only tries the waiters that could be
 * admissible: any change that could let someone in (a release, a raised
 * limit, a waiter arriving or leaving) marks the lock dirty, and the pass
 * takes from each dirty lock the waiters that fit in its free slots by its
 * strategy (the candidates), in the total order (a heap).
 *
 * Why that is exact: on a strict or skip lock a grant never makes another
 * waiter admissible (it moves slots from "asked for ahead of me" to "used",
 * or shrinks what is free), so a waiter that is not a candidate could not
 * have been granted in a full pass. On a rebalanced lock a grant moves keys
 * toward their quotas and so reorders the order of choice: right after it,
 * the lock's new candidates that come later in the total order join this
 * pass, and the lock is marked dirty so that earlier ones are tried in the
 * next pass, exactly where a full pass would find them.
 *
 * A skip lock with an overtake limit keeps the slots of its first waiter
 * once that one has waited the limit (sl__skip_barrier): later waiters
 * get in only beside it. Time passing only ever makes that stricter, so
 * no timer is needed; a change of the first waiter (it leaves, or a new
 * one comes before it) can make it less strict, and marks the lock dirty. */
#include "engine_int.h"

uint64_t sl__lock_free_slots(const sl_lock *l)
{
    return l->limit > l->used ? l->limit - l->used : 0;
}

const sl_centry *sl__skip_barrier(const sl_engine *eng, const sl_lock *l)
{
    if (l->strategy != SL_SKIP || (l->overtake_ms <= 0 && !sl__lock_preempts(l)))
        return NULL;
    sl_tnode *t = sl__tree_first(&l->queue);
    if (!t)
        return NULL;
    const sl_centry *first = sl__container_of(t, sl_centry, u.node);
    if (first->claim->preempting)
        return first; /* the slots it revoked are for it */
    return l->overtake_ms > 0 && eng->now - first->claim->arrived >= l->overtake_ms ? first
                                                                                   : NULL;
}

/* The entry is its skip queue's first: the overtake barrier may change. */
static bool skip_first(const sl_lock *l, const sl_centry *e)
{
    return l->strategy == SL_SKIP && (l->overtake_ms > 0 || sl__lock_preempts(l)) &&
           sl__tree_first(&l->queue) == &e->u.node;
}

/* A waiter joining a strict or skip queue can only make itself admissible
 * there (it adds to what is asked ahead of those behind it, and leaves the
 * free slots alone), so it alone is a candidate: the lock's other waiters
 * are not walked again. On a rebalanced lock a new key changes every quota. */
void sl__queue_add(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    l->npending++;
    if (l->strategy == SL_REBALANCED) {
        sl__rk_add_pending(eng, e);
        sl__lock_mark_dirty(eng, l);
    } else {
        sl__tree_insert(&l->queue, &e->u.node, e->slots);
        sl__pvec_push(&eng->mem, &eng->arrivals, e->claim);
        sl__preempt_mark(eng, l);
        /* Before the first waiter, it lifts the barrier that one may be. */
        if (skip_first(l, e))
            sl__lock_mark_dirty(eng, l);
    }
    sl__lock_check_idle(eng, l);
}

/* Restoring: the entry is listed at the back of its queue, which
 * sl__queue_build makes a tree at once when every claim is in, and the lock
 * is marked for admission as a whole (nobody asks of a restored waiter
 * whether it alone got in: it was saved waiting). Rebalanced queues go in
 * one by one, as usual. */
void sl__queue_restore(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    if (l->strategy == SL_REBALANCED) {
        sl__queue_add(eng, e);
        return;
    }
    l->npending++;
    if (l->queue.root) /* built already: a restore ended early, then went on */
        sl__tree_insert(&l->queue, &e->u.node, e->slots);
    else
        sl__tree_defer(&l->queue, &e->u.node, e->slots);
    sl__lock_mark_dirty(eng, l);
    sl__lock_check_idle(eng, l);
}

void sl__queue_build(sl_lock *l)
{
    sl__tree_build(&l->queue);
}

/* A waiter leaving a skip queue changes nobody's chances there (they depend
 * on the free slots only) unless it was the first, which may have been the
 * overtake barrier; on a strict one those behind it move up. */
void sl__queue_remove(sl_engine *eng, sl_centry *e)
{
    sl_lock *l = e->lock;
    bool first = skip_first(l, e);
    l->npending--;
    if (e->rk)
        sl__rk_remove_pending(eng, e);
    else
        sl__tree_remove(&l->queue, &e->u.node);
    if (l->strategy != SL_SKIP || first)
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
    return sl__queue_admissible_freed(eng, e, 0);
}

/* Admissible once `freed` of the slots in use on its lock are free: those
 * of holders a preemption would revoke (preempt.c). */
bool sl__queue_admissible_freed(sl_engine *eng, const sl_centry *e, uint64_t freed)
{
    const sl_lock *l = e->lock;
    uint64_t used = l->used > freed ? l->used - freed : 0;
    uint64_t free = l->limit > used ? l->limit - used : 0;
    if (e->slots > free || !sl__rate_allows(eng, l))
        return false;
    switch (l->strategy) {
    case SL_STRICT:
        return sl__tree_sum_before(&e->u.node) + e->slots <= free;
    case SL_SKIP: {
        const sl_centry *b = sl__skip_barrier(eng, l);
        return !b || b == e || b->slots + e->slots <= free;
    }
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

static int cand_cmp(const void *a, const void *b)
{
    return sl__claim_order(*(const sl_claim *const *)a, *(const sl_claim *const *)b);
}

/* eng->cand is a binary min-heap in the total order: the pass takes the
 * candidates in that order while grants may add more behind the one taken. */
static void heap_push(sl_engine *eng, sl_claim *c)
{
    sl__pvec_push(&eng->mem, &eng->cand, c);
    void **v = eng->cand.v;
    size_t i = eng->cand.n - 1;
    while (i > 0 && cand_cmp(&v[i], &v[(i - 1) / 2]) < 0) {
        void *t = v[i];
        v[i] = v[(i - 1) / 2];
        v[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static sl_claim *heap_pop(sl_engine *eng)
{
    void **v = eng->cand.v;
    sl_claim *top = v[0];
    v[0] = v[--eng->cand.n];
    size_t n = eng->cand.n, i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && cand_cmp(&v[l], &v[m]) < 0)
            m = l;
        if (r < n && cand_cmp(&v[r], &v[m]) < 0)
            m = r;
        if (m == i)
            break;
        void *t = v[i];
        v[i] = v[m];
        v[m] = t;
        i = m;
    }
    return top;
}

/* A candidate of this pass; with a floor, only one that comes after it in
 * the total order (one before it waits for the next pass). */
static void candidate(sl_engine *eng, sl_claim *c, const sl_claim *floor)
{
    if (c->candidate || (floor && sl__claim_order(c, floor) <= 0))
        return;
    c->candidate = true;
    heap_push(eng, c);
}

typedef struct collect_ctx {
    sl_engine *eng;
    uint64_t free;
    const sl_claim *floor;
} collect_ctx;

static bool collect_visit(void *ud, sl_centry *e, size_t position, uint64_t slots_before)
{
    collect_ctx *cc = ud;
    (void)position;
    if (slots_before + e->slots > cc->free)
        return false;
    candidate(cc->eng, e->claim, cc->floor);
    return true;
}

/* The waiters of l that its strategy would let in now, were their other
 * locks free. Strict: the prefix of the queue that fits. Skip: every waiter
 * that fits by itself (the amortised walk docs/engine.md allows). Rebalanced:
 * the prefix of the order of choice that fits. */
static void collect(sl_engine *eng, sl_lock *l, const sl_claim *floor)
{
    uint64_t free = sl__lock_free_slots(l);
    if (free == 0 || l->npending == 0)
        return;
    if (!sl__rate_allows(eng, l)) {
        sl__rate_arm(eng, l); /* tried again when a token is whole */
        return;
    }
    if (l->strategy == SL_REBALANCED) {
        collect_ctx cc = {eng, free, floor};
        sl__rk_walk(eng, l, collect_visit, &cc);
        return;
    }
    uint64_t sum = 0;
    /* skip: behind a barrier, only what fits beside the slots it keeps. */
    const sl_centry *b = sl__skip_barrier(eng, l);
    for (sl_tnode *t = sl__tree_first(&l->queue); t; t = sl__tree_next(t)) {
        sl_centry *e = sl__container_of(t, sl_centry, u.node);
        if (l->strategy == SL_STRICT) {
            sum += e->slots;
            if (sum > free)
                break;
        } else if (b && e != b) {
            if (b->slots >= free)
                break;
            if (e->slots > free - b->slots)
                continue;
        } else if (e->slots > free) {
            continue;
        }
        candidate(eng, e->claim, floor);
    }
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
    sl__pending_remove(eng, c);
    for (size_t i = 0; i < c->nlocks; i++) {
        sl__lock_holder_add(eng, &c->e[i]);
        sl__rate_take(eng, c->e[i].lock);
    }
    c->state = SL_HELD;
    c->granted = now;
    c->grant_seq = eng->next_grant++;
    eng->grants++;
    eng->nheld++;
    sl__event_add(eng, SL_EV_CLAIM_ACQUIRED, c, now);
    sl__claim_touch(eng, c);
    sl__claim_rearm(eng, c);
    /* A new holder of lower priority may be the victim whose other locks
     * let a head in (preempt.c counts all of a victim's slots). */
    sl__preempt_mark_claim(eng, c);
}

/* Grants a claim with no locks at all (tags that add none). */
void sl__queue_grant_now(sl_engine *eng, sl_claim *c, int64_t now)
{
    grant(eng, c, now);
}

/* A grant on a rebalanced lock can move waiters up its order of choice;
 * those that come after the granted claim in the total order are tried in
 * this pass, as a full pass over every waiter would. */
static void grant_and_follow(sl_engine *eng, sl_claim *c, int64_t now)
{
    grant(eng, c, now);
    for (size_t i = 0; i < c->nlocks; i++)
        if (c->e[i].lock->strategy == SL_REBALANCED)
            collect(eng, c->e[i].lock, c);
}

/* A candidate admissible on one lock but not everywhere: its preempting
 * locks may now let it preempt (the one that held it back was freed), and
 * a rate that holds it back wakes it when its next token is whole. */
static void candidate_refused(sl_engine *eng, const sl_claim *c)
{
    for (size_t i = 0; i < c->nlocks; i++) {
        sl__preempt_mark(eng, c->e[i].lock);
        sl__rate_arm(eng, c->e[i].lock);
    }
}

static void settle_once(sl_engine *eng, int64_t now);

/* Admission, then preemption once nothing more can be granted; a
 * preemption with no grace frees slots at once, so admission runs again. */
void sl__settle(sl_engine *eng, int64_t now)
{
    do
        settle_once(eng, now);
    while (eng->preempt.n > 0 && sl__preempt_pass(eng, now));
}

static void settle_once(sl_engine *eng, int64_t now)
{
    if (now > eng->now)
        eng->now = now;
    while (eng->dirty.n > 0 || eng->arrivals.n > 0) {
        for (size_t i = 0; i < eng->dirty.n; i++) {
            sl_lock *l = eng->dirty.v[i];
            l->dirty = false;
            collect(eng, l, NULL);
        }
        eng->dirty.n = 0;
        for (size_t i = 0; i < eng->arrivals.n; i++) {
            sl_claim *c = eng->arrivals.v[i];
            if (c->state == SL_PENDING)
                candidate(eng, c, NULL);
        }
        eng->arrivals.n = 0;
        if (eng->cand.n == 0)
            break;
        while (eng->cand.n > 0) {
            sl_claim *c = heap_pop(eng);
            c->candidate = false;
            if (c->state == SL_PENDING && admissible_everywhere(eng, c))
                grant_and_follow(eng, c, now);
            else if (c->state == SL_PENDING)
                candidate_refused(eng, c);
        }
    }
    for (size_t i = 0; i < eng->dirty.n; i++)
        ((sl_lock *)eng->dirty.v[i])->dirty = false;
    eng->dirty.n = 0;
}
