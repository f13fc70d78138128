/* listing.c - claims in order: every claim in arrival order (the list of
 * every claim, and resuming it after an arrival), and the pending claims
 * in the one total order (priority, created, arrival), kept unordered and
 * sorted on demand: only listings need that order, and a tree every claim
 * paid for would slow the hot path for them (engine_int.h, eng->phead). */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

const sl_claim *sl_claim_next(const sl_engine *eng, const sl_claim *prev)
{
    return prev ? prev->next : eng->chead;
}

const sl_claim *sl_claim_prev(const sl_engine *eng, const sl_claim *next)
{
    return next ? next->prev : eng->ctail;
}

void sl__pending_add(sl_engine *eng, sl_claim *c)
{
    c->pprev = NULL;
    c->pnext = eng->phead;
    if (eng->phead)
        eng->phead->pprev = c;
    eng->phead = c;
    eng->npending++;
    eng->psnap_ok = false;
    sl__actor_pending(c, true);
}

void sl__pending_remove(sl_engine *eng, sl_claim *c)
{
    if (c->pprev)
        c->pprev->pnext = c->pnext;
    else
        eng->phead = c->pnext;
    if (c->pnext)
        c->pnext->pprev = c->pprev;
    c->pprev = c->pnext = NULL;
    eng->npending--;
    eng->psnap_ok = false;
    sl__actor_pending(c, false);
}

static int snap_cmp(const void *a, const void *b)
{
    return sl__claim_order(*(sl_claim *const *)a, *(sl_claim *const *)b);
}

/* The pending claims sorted in the total order, rebuilt only when asked for
 * after a change: O(n log n) per listing instead of O(log n) per claim. */
static void snapshot(sl_engine *eng)
{
    if (eng->psnap_ok)
        return;
    if (eng->psnap_cap < eng->npending) {
        eng->psnap_cap = eng->npending * 2;
        eng->psnap = sl__realloc(&eng->mem, eng->psnap, eng->psnap_cap * sizeof(*eng->psnap));
    }
    size_t n = 0;
    for (sl_claim *c = eng->phead; c; c = c->pnext)
        eng->psnap[n++] = c;
    if (n > 1) /* psnap is NULL while nothing was ever pending: qsort wants a pointer */
        qsort(eng->psnap, n, sizeof(*eng->psnap), snap_cmp);
    for (size_t i = 0; i < n; i++)
        eng->psnap[i]->pidx = i;
    eng->psnap_ok = true;
}

const sl_claim *sl_pending_next(sl_engine *eng, const sl_claim *prev)
{
    snapshot(eng);
    size_t i = prev ? prev->pidx + 1 : 0;
    return i < eng->npending ? eng->psnap[i] : NULL;
}

const sl_claim *sl_pending_after(sl_engine *eng, int32_t priority, int64_t created,
                                 uint64_t arrival)
{
    snapshot(eng);
    sl_claim key = {.priority = priority, .created = created, .arrival = arrival};
    size_t lo = 0, hi = eng->npending; /* the first claim ordered after key */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sl__claim_order(eng->psnap[mid], &key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < eng->npending ? eng->psnap[lo] : NULL;
}

const sl_claim *sl_claim_after(const sl_engine *eng, uint64_t arrival)
{
    const sl_claim *head = eng->chead, *tail = eng->ctail;
    if (!head || tail->arrival <= arrival)
        return NULL;
    if (head->arrival > arrival)
        return head;
    /* Arrivals are numbered in order, so the nearer end is a fair guess of
     * the shorter walk. */
    if (tail->arrival - arrival < arrival - head->arrival) {
        const sl_claim *c = tail;
        while (c->prev && c->prev->arrival > arrival)
            c = c->prev;
        return c;
    }
    const sl_claim *c = head;
    while (c && c->arrival <= arrival)
        c = c->next;
    return c;
}

const sl_claim *sl_claim_before(const sl_engine *eng, uint64_t arrival)
{
    const sl_claim *head = eng->chead, *tail = eng->ctail;
    if (!head || head->arrival >= arrival)
        return NULL;
    if (tail->arrival < arrival)
        return tail;
    /* As sl_claim_after: walk from the nearer end. */
    if (tail->arrival - arrival < arrival - head->arrival) {
        const sl_claim *c = tail;
        while (c && c->arrival >= arrival)
            c = c->prev;
        return c;
    }
    const sl_claim *c = head;
    while (c->next && c->next->arrival < arrival)
        c = c->next;
    return c;
}

size_t sl_pending_position(sl_engine *eng, const sl_claim *c)
{
    if (c->state != SL_PENDING)
        return 0;
    snapshot(eng);
    return c->pidx + 1;
}
