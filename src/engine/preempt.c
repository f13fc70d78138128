/* preempt.c - priority preemption: an urgent waiter revokes lower-priority
 * holders rather than wait for them to finish (docs/engine.md).
 *
 * On a lock whose rules say preempt (strict or skip), the waiter at the head
 * of the line (the first in the total order) that cannot fit revokes holders
 * of strictly lower priority: the lowest priority first, and among equals
 * those that also hold a lock keeping it out elsewhere, then the most
 * recently granted, then any of those not needed after all (so
 * the set is minimal), until the free slots, the slots of holders already
 * revoking and the revoked ones cover what it asks for. Revoked holders
 * keep their slots for the lock's preempt_grace and end `canceled`, reason
 * preempted. It preempts only when every other lock of the claim would let
 * it in at once or by preempting too, counting on each the slots the
 * victims hold there (a revocation frees all of a victim's locks), and
 * only with a whole token of each preempting lock's rate: revoking work
 * that cannot lead to a grant at once would be pure loss, and every
 * revocation buys a grant. A preempted claim is never queued again by the
 * engine, so there is no cascade.
 *
 * When: a lock whose admission is looked at again (sl__lock_mark_dirty), a
 * waiter joining its queue, a candidate that failed elsewhere, a grant (its
 * claim may be the victim that frees a head's other lock) or the rate's
 * next token puts a preempting lock on eng->preempt; sl__settle runs
 * sl__preempt_pass once no more grants are possible. Nothing else can make
 * a preemption possible: priorities never change. */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

bool sl__lock_preempts(const sl_lock *l)
{
    return l->kind == SL_KIND_SEMAPHORE && l->strategy != SL_REBALANCED &&
           sl__lock_rules(l)->preempt;
}

void sl__preempt_mark(sl_engine *eng, sl_lock *l)
{
    if (l->preempt_marked || !sl__lock_preempts(l))
        return;
    l->preempt_marked = true;
    sl__pvec_push(&eng->mem, &eng->preempt, l);
}

/* A holder of c's locks starts revoking: the slots it will free count for
 * a waiting head there, which may now preempt the rest it needs. */
void sl__preempt_mark_claim(sl_engine *eng, const sl_claim *c)
{
    for (size_t i = 0; i < c->nlocks; i++)
        if (c->e[i].lock)
            sl__preempt_mark(eng, c->e[i].lock);
}

/* A head that would preempt but for another of its locks, which counts
 * the victims' slots there: any lock whose admission is looked at again
 * may be that one (its holders leave, its queue moves up), so its
 * preempting locks are looked at again then. */
static void retry_add(sl_engine *eng, const sl_claim *c)
{
    for (size_t i = 0; i < c->nlocks; i++) {
        sl_lock *l = c->e[i].lock;
        if (l && !l->preempt_retry && sl__lock_preempts(l)) {
            l->preempt_retry = true;
            sl__pvec_push(&eng->mem, &eng->preempt_retry, l);
        }
    }
}

void sl__preempt_retry_all(sl_engine *eng)
{
    sl_pvec *r = &eng->preempt_retry;
    for (size_t i = 0; i < r->n; i++) {
        sl_lock *l = r->v[i];
        l->preempt_retry = false;
        sl__preempt_mark(eng, l);
    }
    r->n = 0;
}

void sl__preempt_forget(sl_engine *eng, sl_lock *l)
{
    sl_pvec *r = &eng->preempt_retry;
    for (size_t i = 0; l->preempt_retry && i < r->n; i++)
        if (r->v[i] == l) {
            r->v[i] = r->v[--r->n];
            l->preempt_retry = false;
        }
}

static const sl_centry *head(const sl_lock *l)
{
    sl_tnode *t = sl__tree_first(&l->queue);
    return t ? sl__container_of(t, sl_centry, u.node) : NULL;
}

/* Holders first to go: lowest priority, then most recently granted. */
static int victim_cmp(const void *a, const void *b)
{
    const sl_claim *x = (*(const sl_centry *const *)a)->claim;
    const sl_claim *y = (*(const sl_centry *const *)b)->claim;
    if (x->priority != y->priority)
        return x->priority < y->priority ? -1 : 1;
    return x->grant_seq > y->grant_seq ? -1 : x->grant_seq < y->grant_seq;
}

/* Whether holder h's claim holds one of the locks that keep e's claim out
 * by themselves (blocked[k]: its lock k does not admit it now). */
static bool frees_blocked(const sl_centry *h, const sl_centry *e, const bool *blocked)
{
    const sl_claim *v = h->claim, *c = e->claim;
    for (size_t j = 0; j < v->nlocks; j++)
        for (size_t k = 0; k < c->nlocks; k++)
            if (blocked[k] && v->e[j].lock == c->e[k].lock)
                return true;
    return false;
}

/* Among victims of equal priority, those whose revocation also frees a lock
 * that keeps the head out elsewhere go first (S5: in a run queue the run
 * holding the urgent run's tenant slot, not merely the latest granted), in
 * their order otherwise. eng->victims past n is scratch. */
static void prefer_freeing(sl_engine *eng, const sl_centry *e, size_t base)
{
    const sl_claim *c = e->claim;
    bool blocked[SL_CLAIM_LOCKS_MAX] = {false}, any = false;
    for (size_t k = 0; k < c->nlocks; k++)
        if (&c->e[k] != e && !sl__queue_admissible(eng, &c->e[k]))
            any = blocked[k] = true;
    sl_pvec *v = &eng->victims;
    size_t n = v->n;
    for (size_t a = base, b; any && a < n; a = b) {
        int64_t prio = ((sl_centry *)v->v[a])->claim->priority;
        for (b = a; b < n && ((sl_centry *)v->v[b])->claim->priority == prio; b++)
            ;
        for (int pass = 0; pass < 2; pass++)
            for (size_t i = a; i < b; i++)
                if (frees_blocked(v->v[i], e, blocked) == (pass == 0))
                    sl__pvec_push(&eng->mem, v, v->v[i]);
        memcpy(&v->v[a], &v->v[n], (b - a) * sizeof(void *));
        v->n = n;
    }
}

/* What preemption means for entry e on its lock, and with a plan (WILL)
 * the holders to revoke in eng->victims (appended after base). */
static sl_preempt plan(sl_engine *eng, const sl_centry *e, size_t base, size_t *count)
{
    const sl_lock *l = e->lock;
    uint64_t free = sl__lock_free_slots(l), revoking = 0;
    *count = 0;
    /* Over its limit (lowered since), only what is above it frees nothing;
     * asking more than the limit, nothing will ever do. */
    if (!sl__lock_preempts(l) || e->slots <= free || e->slots > l->limit)
        return SL_PREEMPT_NONE;
    uint64_t need = l->used + e->slots - l->limit; /* slots that must be freed */
    sl_pvec *v = &eng->victims;
    bool below = false; /* a holder of lower priority, revoking or not */
    for (sl_centry *h = l->hhead; h; h = h->u.h.next) {
        below = below || h->claim->priority < e->claim->priority;
        if (h->claim->state == SL_REVOKING) {
            revoking += h->slots;
            ++*count;
        } else if (h->claim->priority < e->claim->priority) {
            sl__pvec_push(&eng->mem, v, h);
        }
    }
    /* A claim with no holder below it never preempts here: saying "would,
     * but" of it would mislead (S9). Only the head waits for the holders
     * that are revoking; their slots are kept for it. */
    if (!below && (revoking == 0 || head(l) != e)) {
        *count = 0;
        return SL_PREEMPT_NONE;
    }
    if (head(l) != e) {
        v->n = base;
        *count = 0;
        return SL_PREEMPT_NOT_HEAD;
    }
    if (revoking >= need) {
        v->n = base;
        return SL_PREEMPT_WAITING;
    }
    if (!below) {
        *count = 0;
        return SL_PREEMPT_NONE;
    }
    if (v->n - base > 1) {
        qsort(v->v + base, v->n - base, sizeof(void *), victim_cmp);
        prefer_freeing(eng, e, base);
    }
    uint64_t got = revoking;
    size_t n = base;
    while (n < v->n && got < need)
        got += ((sl_centry *)v->v[n++])->slots;
    v->n = n;
    if (got < need) {
        v->n = base;
        *count = 0;
        return SL_PREEMPT_TOO_FEW;
    }
    /* Minimal: the latest chosen (least eager to go) leave the set first. */
    for (size_t i = n; i-- > base;) {
        uint64_t s = ((sl_centry *)v->v[i])->slots;
        if (got - s >= need) {
            got -= s;
            if (v->n - i - 1 > 0)
                memmove(&v->v[i], &v->v[i + 1], (v->n - i - 1) * sizeof(void *));
            v->n--;
        }
    }
    *count = v->n - base;
    return SL_PREEMPT_WILL;
}

sl_preempt sl__preempt_status(sl_engine *eng, const sl_centry *e, size_t *count)
{
    size_t base = eng->victims.n;
    sl_preempt p = plan(eng, e, base, count);
    eng->victims.n = base;
    return p;
}

static void revoke(sl_engine *eng, sl_centry *h, const sl_claim *by, int64_t now)
{
    sl_claim *v = h->claim;
    if (v->state != SL_HELD)
        return; /* revoked (or ended) already for another lock of the same claim */
    int64_t grace = sl__lock_rules(h->lock)->preempt_grace_ms;
    eng->preemptions++;
    if (grace == 0) {
        sl__claim_end(eng, v, SL_CANCELED, SL_REASON_PREEMPTED, by->id, now);
        return;
    }
    v->state = SL_REVOKING;
    v->reason = SL_REASON_PREEMPTED;
    v->by = sl__strndup(&eng->mem, by->id, by->idlen);
    v->revoke_at = now + grace;
    sl__preempt_mark_claim(eng, v);
    sl_event *ev = sl__event_add(eng, SL_EV_CLAIM_REVOKING, v, now);
    ev->reason = SL_REASON_PREEMPTED;
    sl__claim_touch(eng, v);
    sl__claim_rearm(eng, v);
}

/* The slots on entry e's lock that the planned victims (eng->victims from
 * base) hold: a victim's revocation frees every one of its locks, not only
 * the one it was chosen on (S5). A claim chosen on two locks counts once. */
static uint64_t victims_slots(const sl_engine *eng, size_t base, const sl_centry *e)
{
    uint64_t slots = 0;
    for (size_t i = base; i < eng->victims.n; i++) {
        const sl_claim *v = ((const sl_centry *)eng->victims.v[i])->claim;
        bool seen = false;
        for (size_t j = base; j < i && !seen; j++)
            seen = ((const sl_centry *)eng->victims.v[j])->claim == v;
        for (size_t k = 0; k < v->nlocks && !seen; k++)
            if (v->e[k].lock == e->lock)
                slots += v->e[k].slots;
    }
    return slots;
}

/* Plans c's preemptions on every lock; executes them when each of its
 * locks would then let it in at once, the rate included: a revocation that
 * must wait for a token would idle the slot it frees (S4). Returns whether
 * it revoked anyone. */
static bool try_claim(sl_engine *eng, sl_claim *c, int64_t now)
{
    size_t base = eng->victims.n;
    bool any = false, waiting = false, ok = true;
    bool by_itself[SL_CLAIM_LOCKS_MAX] = {false}; /* must let it in without preempting */
    for (size_t i = 0; i < c->nlocks; i++) {
        size_t n;
        sl_preempt p = plan(eng, &c->e[i], eng->victims.n, &n);
        if (p == SL_PREEMPT_WILL) {
            any = true;
            if (!sl__rate_allows(eng, c->e[i].lock)) {
                sl__rate_arm(eng, c->e[i].lock); /* looked at again with the token */
                ok = false;
            }
        } else if (p == SL_PREEMPT_WAITING) {
            waiting = true;
        } else {
            by_itself[i] = true;
        }
    }
    /* Its other locks, with what the victims hold there freed. */
    for (size_t i = 0; i < c->nlocks && ok; i++)
        if (by_itself[i] &&
            !sl__queue_admissible_freed(eng, &c->e[i], victims_slots(eng, base, &c->e[i]))) {
            sl__rate_arm(eng, c->e[i].lock); /* a rate that holds it back wakes it */
            if (any)
                retry_add(eng, c);
            ok = false;
        }
    if (!ok) {
        eng->victims.n = base;
        return false;
    }
    for (size_t i = base; i < eng->victims.n; i++)
        revoke(eng, eng->victims.v[i], c, now);
    eng->victims.n = base;
    /* Waiting at the head for revoked holders to leave (a restore forgets
     * who revoked them): the slots they free are kept for it too. */
    c->preempting = c->preempting || any || waiting;
    return any;
}

static int head_cmp(const void *a, const void *b)
{
    const sl_centry *x = head(*(const sl_lock *const *)a), *y = head(*(const sl_lock *const *)b);
    if (!x || !y)
        return !x - !y;
    return sl__claim_order(x->claim, y->claim);
}

/* The marked locks' heads in the total order, until one preempts: then
 * admission runs before the next (sl__settle), so that each head plans
 * against what the one before it left. Where two heads want the same
 * holders, the one first in line gets them. */
bool sl__preempt_pass(sl_engine *eng, int64_t now)
{
    size_t n = eng->preempt.n, i = 0;
    bool changed = false;
    if (n > 1)
        qsort(eng->preempt.v, n, sizeof(void *), head_cmp);
    while (i < n && !changed) {
        sl_lock *l = eng->preempt.v[i++];
        l->preempt_marked = false;
        const sl_centry *e = head(l);
        changed = e && sl__lock_preempts(l) && try_claim(eng, e->claim, now);
    }
    /* Those not tried yet stay marked, with the marks made meanwhile. */
    if (eng->preempt.n > i)
        memmove(eng->preempt.v, eng->preempt.v + i, (eng->preempt.n - i) * sizeof(void *));
    eng->preempt.n -= i;
    return changed;
}
