/* group.c - concurrency groups: a newer claim cancels what it supersedes.
 *
 * A group is a lock (group/NAME) every claim of the group takes; a claim
 * may be in several groups, each with its own cancel. A claim
 * with `cancel: pending` supersedes the group's waiters that come before it
 * (earlier created, then earlier arrival); with `cancel: in-progress` it also
 * revokes the group's holders that come before it. A revoked holder keeps
 * its slots until it releases or the new claim's grace runs out; grace 0
 * frees them at once. Holders and waiters that come after the new claim
 * (a re-run of an older commit, say) are left alone: the newer work wins. */
#include <string.h>

#include "engine_int.h"

static void collect_pending(const sl_lock *l, sl_claim *c, sl_pvec *out, sl_mem *m)
{
    if (l->strategy != SL_REBALANCED) {
        for (sl_tnode *t = sl__tree_first(&l->queue); t; t = sl__tree_next(t)) {
            sl_claim *p = sl__container_of(t, sl_centry, u.node)->claim;
            if (sl__claim_age_order(p, c) < 0)
                sl__pvec_push(m, out, p);
        }
        return;
    }
    for (sl_hnode *n = sl__hash_first(l->rkeys); n; n = sl__hash_next(l->rkeys, n)) {
        const sl_rkey *rk = sl__container_of(n, sl_rkey, hnode);
        for (sl_tnode *t = sl__tree_first(&rk->pending); t; t = sl__tree_next(t)) {
            sl_claim *p = sl__container_of(t, sl_centry, u.node)->claim;
            if (sl__claim_age_order(p, c) < 0)
                sl__pvec_push(m, out, p);
        }
    }
}

static void revoke(sl_engine *eng, sl_claim *h, const sl_claim *c, int64_t now)
{
    if (c->grace == 0) {
        sl__claim_end(eng, h, SL_CANCELED, SL_REASON_REVOKED, c->id, now);
        return;
    }
    int64_t at = now + c->grace;
    if (h->state == SL_REVOKING) {
        if (at < h->revoke_at) {
            h->revoke_at = at;
            sl__claim_touch(eng, h);
            sl__claim_rearm(eng, h);
        }
        return;
    }
    h->state = SL_REVOKING;
    h->reason = SL_REASON_REVOKED;
    h->by = sl__strndup(&eng->mem, c->id, c->idlen);
    h->revoke_at = at;
    sl__preempt_mark_claim(eng, h);
    sl_event *ev = sl__event_add(eng, SL_EV_CLAIM_REVOKING, h, now);
    ev->reason = SL_REASON_REVOKED;
    sl__claim_touch(eng, h);
    sl__claim_rearm(eng, h);
}

/* Applies one group's cancel: the group's waiters before c are
 * superseded, and with in-progress its holders before c revoked. */
static void cancel_in(sl_engine *eng, sl_claim *c, const sl_centry *g, int64_t now)
{
    sl_lock *l = sl__lock_find(eng, g->key, strlen(g->key));
    if (!l)
        return;
    sl_pvec victims = {0};
    collect_pending(l, c, &victims, &eng->mem);
    size_t npending = victims.n;
    if (g->cancel == SL_CANCEL_IN_PROGRESS)
        for (sl_centry *h = l->hhead; h; h = h->u.h.next)
            if (sl__claim_age_order(h->claim, c) < 0)
                sl__pvec_push(&eng->mem, &victims, h->claim);
    for (size_t i = 0; i < victims.n; i++) {
        sl_claim *v = victims.v[i];
        if (i < npending)
            sl__claim_end(eng, v, SL_SUPERSEDED, SL_REASON_SUPERSEDED, c->id, now);
        else
            revoke(eng, v, c, now);
    }
    sl__pvec_free(&eng->mem, &victims);
}

/* Each group of the claim is its own lock with its own cancel (the first
 * one's is the claim's `cancel`). */
void sl__group_cancel(sl_engine *eng, sl_claim *c, int64_t now)
{
    for (size_t i = 0; i < c->nlocks; i++)
        if (c->e[i].via == SL_VIA_GROUP && c->e[i].cancel != SL_CANCEL_NONE)
            cancel_in(eng, c, &c->e[i], now);
}
