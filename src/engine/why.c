/* why.c - why a pending claim waits, lock by lock, in docs/api.md's rules.
 *
 * at_limit: fewer free slots than it asks for. behind: enough free slots,
 * but claims ahead take them. quota (rebalanced, and it wins there): its key
 * holds its share while a key below its share waits. other_lock: admissible
 * here, blocked on another of its locks. rate: admissible here but for the
 * semaphore's rate. */
#include <string.h>

#include "engine_int.h"

typedef struct ahead_ctx {
    const sl_centry *target;
    sl_why *w;
} ahead_ctx;

static bool ahead_visit(void *ud, sl_centry *e, size_t position, uint64_t slots_before)
{
    ahead_ctx *a = ud;
    (void)position;
    (void)slots_before;
    if (e == a->target || a->w->nshown == SL_WHY_AHEAD_MAX)
        return false;
    a->w->ahead[a->w->nshown++] = e->claim;
    return true;
}

static void fill_ahead(sl_engine *eng, const sl_centry *e, sl_why *w)
{
    if (e->lock->strategy == SL_REBALANCED) {
        ahead_ctx a = {e, w};
        sl__rk_walk(eng, e->lock, ahead_visit, &a);
        return;
    }
    for (sl_tnode *t = sl__tree_first(&e->lock->queue); t && t != &e->u.node;
         t = sl__tree_next(t)) {
        if (w->nshown == SL_WHY_AHEAD_MAX)
            break;
        w->ahead[w->nshown++] = sl__container_of(t, sl_centry, u.node)->claim;
    }
}

/* The waiters the rate lets in before e on a skip lock, e included: those
 * ahead of it that fit in what the ones before them leave free. */
static uint64_t skip_rank(const sl_centry *e)
{
    uint64_t free = sl__lock_free_slots(e->lock), k = 1;
    for (sl_tnode *t = sl__tree_first(&e->lock->queue); t && t != &e->u.node;
         t = sl__tree_next(t)) {
        const sl_centry *x = sl__container_of(t, sl_centry, u.node);
        if (x->slots <= free - e->slots) {
            free -= x->slots;
            k++;
        }
    }
    return k;
}

/* The rule where the slots would let it in: other_lock, unless the rate
 * holds it back. Then it is let in with the k-th whole token, k counting
 * the waiters the rate holds back ahead of it on the lock (on strict and
 * rebalanced locks every one ahead of it: their slots fit before its own). */
static sl_rule admissible_or_rate(sl_engine *eng, const sl_centry *e, sl_why *w)
{
    const sl_lock *l = e->lock;
    if (sl__rate_allows(eng, l))
        return SL_RULE_OTHER_LOCK;
    if (w) {
        uint64_t k = l->strategy == SL_SKIP ? skip_rank(e) : w->position;
        w->admit_ms = sl__rate_kth(eng, l, k);
    }
    return SL_RULE_RATE;
}

/* A head that does not fit on a preempting lock with a rate: it preempts
 * only with a whole token (every revocation buys a grant, S4), so while
 * the rate holds it back that is its rule, the token's time its admit_at. */
static bool preempt_waits_for_rate(sl_engine *eng, const sl_centry *e, sl_why *w)
{
    size_t n;
    if (!sl__lock_rated(e->lock) || sl__rate_allows(eng, e->lock) ||
        !sl__lock_preempts(e->lock) || sl__preempt_status(eng, e, &n) != SL_PREEMPT_WILL)
        return false;
    if (w)
        w->admit_ms = sl__rate_next(eng, e->lock);
    return true;
}

static sl_rule rule_on(sl_engine *eng, const sl_centry *e, sl_why *w)
{
    const sl_lock *l = e->lock;
    uint64_t free = sl__lock_free_slots(l);
    if (w) {
        w->used = l->used;
        w->limit = l->limit;
        w->position = sl__queue_position(eng, e);
        w->nahead = w->position - 1;
    }
    bool fits_alone = e->slots <= free;
    if (l->strategy == SL_SKIP) {
        const sl_centry *b = sl__skip_barrier(eng, l);
        if (fits_alone && b && b != e && b->slots + e->slots > free) {
            if (w) {
                w->kept = true;
                w->kept_preempting = b->claim->preempting;
            }
            return SL_RULE_BEHIND; /* the first waiter's slots are kept for it */
        }
        if (fits_alone)
            return admissible_or_rate(eng, e, w);
        return preempt_waits_for_rate(eng, e, w) ? SL_RULE_RATE : SL_RULE_AT_LIMIT;
    }
    /* The slots asked ahead matter only when its own fit, so the walk that
     * sums them (O(log n); longer on a rebalanced lock) is skipped for a
     * claim that waits at the limit: every claim.waiting event asks this. */
    if (fits_alone && sl__queue_ahead_slots(eng, e) + e->slots <= free)
        return admissible_or_rate(eng, e, w);
    if (!fits_alone && preempt_waits_for_rate(eng, e, w))
        return SL_RULE_RATE;
    if (l->strategy == SL_REBALANCED) {
        bool below = false;
        uint64_t quota = sl__rk_quota(eng, l, e->rk, &below);
        if (w) {
            w->quota = quota;
            w->key_used = e->rk->held;
            w->weight = e->rk->weight;
            w->weights = l->wsum;
        }
        if (e->rk->held >= quota && below)
            return SL_RULE_QUOTA;
    }
    return fits_alone ? SL_RULE_BEHIND : SL_RULE_AT_LIMIT;
}

/* Of the lock's revoking holders, those revoking for a preemption: the
 * others were revoked by a newer claim of their group, and the words must
 * not call them preempted (S10). */
static size_t count_preempted(const sl_lock *l)
{
    size_t n = 0;
    for (const sl_centry *h = l->hhead; h; h = h->u.h.next)
        n += h->claim->state == SL_REVOKING && h->claim->reason == SL_REASON_PREEMPTED;
    return n;
}

size_t sl_claim_why(sl_engine *eng, const sl_claim *c, sl_why *out, size_t max)
{
    if (c->state != SL_PENDING)
        return 0;
    for (size_t i = 0; i < c->nlocks && i < max; i++) {
        sl_why *w = &out[i];
        memset(w, 0, sizeof(*w));
        w->lock = i;
        w->key = c->e[i].key;
        w->rule = rule_on(eng, &c->e[i], w);
        w->preempt = sl__preempt_status(eng, &c->e[i], &w->npreempt);
        if (w->preempt == SL_PREEMPT_WAITING)
            w->npreempted = count_preempted(c->e[i].lock);
        fill_ahead(eng, &c->e[i], w);
    }
    return c->nlocks;
}

sl_rule sl_claim_main_rule(sl_engine *eng, const sl_claim *c, size_t *lock)
{
    *lock = 0;
    if (c->state != SL_PENDING)
        return SL_RULE_NONE;
    for (size_t i = 0; i < c->nlocks; i++) {
        sl_rule r = rule_on(eng, &c->e[i], NULL);
        if (r != SL_RULE_OTHER_LOCK) {
            *lock = i;
            return r;
        }
    }
    return SL_RULE_OTHER_LOCK;
}
