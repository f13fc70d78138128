/* bulk.c - ending a set of claims in one step (docs/engine.md, "Bulk operations").
 *
 * A run's cleanup and an operator's queue clear end many claims at once.
 * Ended one at a time, each end runs admission, and admission sees the rest
 * of the set still waiting: a withdrawn waiter lets the next member in (a
 * grant, a fencing token, a command run, for a claim being ended), a new
 * head of a preempting lock revokes an unrelated holder, and a rebalanced
 * lock hands a freed slot to a member in its order of choice, which no
 * order of cancels can avoid. So every member leaves first, through
 * sl__claim_end (which defers admission to its caller), and admission
 * with its preemption runs once after, among the claims outside the set.
 * Only the locks the members touched are looked at again (sl__claim_end
 * marks them), so the cost is that of the affected locks. */
#include "engine_int.h"

/* How member c ends, or false when it is left as it is. */
static bool bulk_end_of(const sl_claim *c, sl_bulk how, sl_state *state, sl_reason *reason)
{
    switch ((sl_state)c->state) {
    case SL_PENDING:
        *state = how == SL_BULK_RELEASE ? SL_WITHDRAWN : SL_CANCELED;
        *reason = how == SL_BULK_RELEASE ? SL_REASON_WITHDRAWN : SL_REASON_OPERATOR;
        return true;
    case SL_HELD:
        *state = SL_RELEASED;
        *reason = SL_REASON_RELEASED;
        return how == SL_BULK_RELEASE;
    case SL_REVOKING: /* as sl_claim_release: its revocation's reason is kept */
        *state = SL_CANCELED;
        *reason = c->reason == SL_REASON_PREEMPTED ? SL_REASON_PREEMPTED
                                                   : SL_REASON_REVOKED_FREED;
        return how == SL_BULK_RELEASE;
    default:
        return false;
    }
}

static void bulk_count(sl_bulk_counts *n, sl_state state)
{
    if (state == SL_WITHDRAWN)
        n->withdrawn++;
    else if (state == SL_RELEASED)
        n->released++;
    else
        n->canceled++;
}

int sl_claims_end(sl_engine *eng, sl_claim *const *set, size_t n, sl_bulk how, int64_t now,
                  sl_bulk_counts *out)
{
    sl_bulk_counts cnt = {0, 0, 0, 0};
    if (how != SL_BULK_RELEASE && how != SL_BULK_CLEAR)
        return SL_EINVAL;
    sl_engine_advance(eng, now);
    sl__acting(set, n, true);
    /* The waiters first, then the holders: all before anyone is let in. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n; i++) {
            sl_claim *c = set[i];
            sl_state state;
            sl_reason reason;
            if ((c->state == SL_PENDING) != (pass == 0) || !bulk_end_of(c, how, &state, &reason))
                continue;
            sl__claim_end(eng, c, state, reason, NULL, now);
            bulk_count(&cnt, state);
        }
    cnt.left = n - cnt.withdrawn - cnt.released - cnt.canceled;
    sl__acting(set, n, false);
    sl__settle(eng, now);
    if (out)
        *out = cnt;
    return 0;
}
