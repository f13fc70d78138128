/* timers.c - deadlines: leases, pending timeouts, grace, and the purge of
 * ended claims.
 *
 * Each claim has one timer, armed at the earliest deadline that applies to
 * its state. When the timer fires, the claim ends as that deadline says, at
 * the deadline's own time (not at whatever `now` the embedder passed), and
 * admission runs at once so the freed slots go to the next in line. A lease
 * never runs out while a request waits on the claim (watchers > 0). */
#include "engine_int.h"

static int64_t lease_deadline(const sl_claim *c)
{
    return c->lease > 0 && c->watchers == 0 ? c->life + c->lease : INT64_MAX;
}

static int64_t timeout_deadline(const sl_claim *c)
{
    return c->state == SL_PENDING && c->timeout > 0 ? c->arrived + c->timeout : INT64_MAX;
}

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t claim_deadline(const sl_engine *eng, const sl_claim *c)
{
    if (sl_state_ended((sl_state)c->state))
        return c->ended + eng->opts.ended_retention_ms;
    int64_t d = min64(lease_deadline(c), timeout_deadline(c));
    if (c->state == SL_REVOKING)
        d = min64(d, c->revoke_at);
    return d;
}

void sl__claim_rearm(sl_engine *eng, sl_claim *c)
{
    int64_t d = claim_deadline(eng, c);
    if (d == INT64_MAX)
        sl__heap_cancel(&eng->timers, &c->timer);
    else
        sl__heap_set(&eng->timers, &c->timer, d);
}

/* An ended claim past its retention is forgotten; its memory waits for the
 * batch to be cleared, since the batch may still point at it. */
static void purge(sl_engine *eng, sl_claim *c)
{
    sl__heap_cancel(&eng->timers, &c->timer);
    sl__hash_remove(&eng->claims, &c->hnode);
    sl__idem_detach(eng, c);
    if (c->prev)
        c->prev->next = c->next;
    else
        eng->chead = c->next;
    if (c->next)
        c->next->prev = c->prev;
    else
        eng->ctail = c->prev;
    eng->nended--;
    sl__pvec_push(&eng->mem, &eng->purged, sl__batch_strdup(eng, c->id, c->idlen));
    sl__pvec_push(&eng->mem, &eng->purged_claims, c);
    c->grave_next = eng->grave;
    eng->grave = c;
}

/* At claims_max, a new claim takes the place of the oldest ended one
 * rather than being refused: ended claims are kept for reading, and history
 * should not stop work. Claims are listed in arrival order, and in a busy
 * server the oldest are long ended, so the search looks at the first
 * OLDEST_ENDED_SCAN only and the claim is refused when none of them has
 * ended (then the claims are live ones, and the limit is doing its job). */
#define OLDEST_ENDED_SCAN 64

sl_claim *sl__oldest_ended(const sl_engine *eng)
{
    if (eng->nended == 0)
        return NULL;
    sl_claim *c = eng->chead;
    for (int i = 0; c && i < OLDEST_ENDED_SCAN; i++, c = c->next)
        if (sl_state_ended((sl_state)c->state))
            return c;
    return NULL;
}

void sl__purge_early(sl_engine *eng, sl_claim *c)
{
    if (c)
        purge(eng, c);
}

static void fire(sl_engine *eng, sl_claim *c, int64_t at)
{
    if (sl_state_ended((sl_state)c->state))
        purge(eng, c);
    else if (c->state == SL_REVOKING && c->revoke_at <= at)
        sl__claim_end(eng, c, SL_CANCELED,
                      c->reason == SL_REASON_PREEMPTED ? SL_REASON_PREEMPTED : SL_REASON_GRACE,
                      NULL, at);
    else if (lease_deadline(c) <= at)
        sl__claim_end(eng, c, SL_EXPIRED, SL_REASON_LEASE, NULL, at);
    else if (timeout_deadline(c) <= at)
        sl__claim_end(eng, c, SL_TIMED_OUT, SL_REASON_TIMEOUT, NULL, at);
    else
        sl__claim_rearm(eng, c);
}

/* Claims' timers and locks' rate timers, in deadline order. At one
 * deadline the rate timers go first, all of them: they only mark their
 * locks, so the admission after each claim's timer sees every token that is
 * whole by then, as one pass at that time would. */
void sl__timers_fire(sl_engine *eng, int64_t now)
{
    for (;;) {
        sl_timer *t = sl__heap_peek(&eng->timers), *r = sl__heap_peek(&eng->rate_timers);
        int64_t at = t ? t->at : INT64_MAX;
        if (r && r->at < at)
            at = r->at;
        if (at > now)
            break;
        while ((r = sl__heap_peek(&eng->rate_timers)) && r->at == at)
            sl__rate_fire(eng, r);
        if ((t = sl__heap_peek(&eng->timers)) && t->at == at)
            fire(eng, sl__container_of(t, sl_claim, timer), at);
        sl__settle(eng, at);
    }
    if (now > eng->now)
        eng->now = now; /* what why and listings see (an overtake barrier) */
}
