/* rate.c - rate limits: at most N grants per period on a semaphore, a
 * token bucket refilled smoothly, `burst` tokens at most (docs/engine.md).
 *
 * Each grant on the semaphore takes one token, whatever its slots. The
 * bucket is kept in exact integers: one token is `period` units, time adds
 * `count` units a millisecond, so no rounding ever lets one grant too many.
 * A waiter that the semaphore would otherwise let in waits with the rule
 * `rate`; the lock's rate timer fires when the next token is whole and
 * marks the lock for admission. A bucket present at a start (its
 * configuration restored as saved, or set by the server's file at start)
 * starts empty: the saved state does not say how full it was, and a
 * restart must never let more than the rate through. Only a bucket made on
 * a running server starts full. A change of configuration keeps the level
 * (sl__rate_settle before it), capped at the new burst. */
#include "engine_int.h"

bool sl__lock_rated(const sl_lock *l)
{
    return l->kind == SL_KIND_SEMAPHORE && sl__lock_rules(l)->rate_count > 0;
}

static uint64_t capacity(const sl_sem_rules *r)
{
    uint64_t burst = r->rate_burst ? r->rate_burst : r->rate_count;
    return burst * (uint64_t)r->rate_period_ms;
}

/* The bucket's level at `now`, in units. Unused, it is full, unless its
 * configuration was present at the start: then it filled from empty since
 * the start (the bucket may have been anywhere when the server stopped). */
static uint64_t level_at(const sl_engine *eng, const sl_lock *l, int64_t now)
{
    const sl_sem_rules *r = sl__lock_rules(l);
    if (r->rate_count == 0)
        return 0;
    uint64_t cap = capacity(r);
    uint64_t level = l->rate_init ? l->rate_level : 0;
    int64_t at = l->rate_init ? l->rate_at : eng->rate_origin;
    if (!l->rate_init && !(eng->rate_origin_set && l->cfg && l->cfg->at_start))
        return cap;
    if (l->rate_init && l->rate_unit != r->rate_period_ms) {
        /* counted with another period: its whole tokens, at most a burst */
        uint64_t tokens = l->rate_level / (uint64_t)l->rate_unit;
        level = (tokens < cap / (uint64_t)r->rate_period_ms ? tokens
                                                            : cap / (uint64_t)r->rate_period_ms) *
                (uint64_t)r->rate_period_ms;
    }
    if (now <= at || level >= cap)
        return level < cap ? level : cap;
    uint64_t room = cap - level, elapsed = (uint64_t)(now - at);
    if (elapsed >= room / r->rate_count + 1)
        return cap;
    uint64_t add = elapsed * r->rate_count;
    return add >= room ? cap : level + add;
}

bool sl__rate_allows(const sl_engine *eng, const sl_lock *l)
{
    return !sl__lock_rated(l) ||
           level_at(eng, l, eng->now) >= (uint64_t)sl__lock_rules(l)->rate_period_ms;
}

/* When k more tokens are whole: the time of the k-th waiter the rate holds
 * back, in the order they are let in, each taking one token as it comes
 * (S6: every waiter was told the next token's time). */
int64_t sl__rate_kth(const sl_engine *eng, const sl_lock *l, uint64_t k)
{
    if (!sl__lock_rated(l))
        return eng->now;
    const sl_sem_rules *r = sl__lock_rules(l);
    uint64_t level = level_at(eng, l, eng->now), token = (uint64_t)r->rate_period_ms;
    uint64_t want = k > UINT64_MAX / token ? UINT64_MAX : k * token;
    if (level >= want)
        return eng->now;
    uint64_t ms = (want - level) / r->rate_count + ((want - level) % r->rate_count != 0);
    return ms > (uint64_t)(INT64_MAX - eng->now) ? INT64_MAX : eng->now + (int64_t)ms;
}

int64_t sl__rate_next(const sl_engine *eng, const sl_lock *l)
{
    return sl__rate_kth(eng, l, 1);
}

void sl__rate_arm(sl_engine *eng, sl_lock *l)
{
    if (sl__lock_rated(l) && !sl__rate_allows(eng, l))
        sl__heap_set(&eng->rate_timers, &l->rate_timer, sl__rate_next(eng, l));
}

void sl__rate_take(sl_engine *eng, sl_lock *l)
{
    if (!sl__lock_rated(l))
        return;
    uint64_t token = (uint64_t)sl__lock_rules(l)->rate_period_ms;
    uint64_t level = level_at(eng, l, eng->now);
    l->rate_level = level >= token ? level - token : 0;
    l->rate_unit = (int64_t)token;
    l->rate_at = eng->now;
    l->rate_init = true;
    if (l->npending > 0)
        sl__rate_arm(eng, l);
}

void sl__rate_settle(sl_engine *eng, sl_lock *l, int64_t now)
{
    if (!sl__lock_rated(l))
        return;
    l->rate_level = level_at(eng, l, now);
    l->rate_unit = sl__lock_rules(l)->rate_period_ms;
    l->rate_at = now;
    l->rate_init = true;
}

void sl__rate_fire(sl_engine *eng, sl_timer *t)
{
    sl_lock *l = sl__container_of(t, sl_lock, rate_timer);
    sl__heap_cancel(&eng->rate_timers, t);
    sl__lock_mark_dirty(eng, l);
}
