/* test_queue.c - queues and admission on strict and skip locks (queue.c).
 *
 * Covers docs/design.md's "Who goes first" and docs/engine.md's "Order and
 * admission": strict (no overtaking, slots reserved by the waiters ahead even
 * while they wait for another lock, a waiter behind a blocked one let in only
 * when there is room for both), skip (first fit, blocked claims skipped),
 * weighted slots and several locks granted all or none, positions per lock,
 * the one total order, limit changes (raise, lower, pause, a claim bigger
 * than a lowered limit), changes of strategy with waiters, the refusals at
 * arrival, and the lock views and listings; then (against_model) a seeded
 * random walk checked against an independent model of those rules. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

/* ---- helpers --------------------------------------------------------------- */

static const sl_lock *lock_of(sl_engine *eng, sl_kind kind, const char *name)
{
    sl_lock_view v;
    const sl_lock *l = NULL;
    assert_int_equal(sl_lock_lookup(eng, kind, name, &v, &l), 0);
    assert_non_null(l);
    return l;
}

static void view_of(sl_engine *eng, sl_kind kind, const char *name, sl_lock_view *out)
{
    assert_int_equal(sl_lock_lookup(eng, kind, name, out, NULL), 0);
}

/* The lock's waiters as "id id ...", in its queue order; checks on the way
 * that positions count 1, 2, 3 ... and agree with each claim's own view. */
static const char *waiters(sl_engine *eng, sl_kind kind, const char *name)
{
    static char buf[4096];
    sl_waiter_view w[64];
    const sl_lock *l = lock_of(eng, kind, name);
    size_t n = sl_lock_waiters(eng, l, 0, w, 64);
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(w[i].position, i + 1);
        int k = snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "", t_id(w[i].claim));
        assert_true(k > 0 && (size_t)k < sizeof(buf) - len);
        len += (size_t)k;
    }
    return buf;
}

/* The lock's holders as "id:slots:token ...", oldest grant first. */
static const char *holders(sl_engine *eng, sl_kind kind, const char *name)
{
    static char buf[4096];
    sl_holder_view h[64];
    size_t n = sl_lock_holders(lock_of(eng, kind, name), 0, h, 64);
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        int k = snprintf(buf + len, sizeof(buf) - len, "%s%s:%u:%llu", i ? " " : "",
                         t_id(h[i].claim), h[i].slots, (unsigned long long)h[i].token);
        assert_true(k > 0 && (size_t)k < sizeof(buf) - len);
        len += (size_t)k;
    }
    return buf;
}

static sl_why why_of(sl_engine *eng, const char *id, size_t lock)
{
    sl_why w[8];
    size_t n = sl_claim_why(eng, t_find(eng, id), w, 8);
    assert_true(lock < n);
    return w[lock];
}

static sl_rule main_rule(sl_engine *eng, const char *id, size_t *lock)
{
    return sl_claim_main_rule(eng, t_find(eng, id), lock);
}

static void set_limit(sl_engine *eng, int64_t now, const char *name, uint32_t limit, sl_strategy s)
{
    t_sem(eng, now, name, limit, s);
}

/* What a refused call must leave untouched. */
typedef struct snapshot {
    sl_engine_stats st;
} snapshot;

static void snap(sl_engine *eng, snapshot *s)
{
    (void)t_events(eng); /* start from an empty batch */
    sl_engine_stats_get(eng, &s->st);
}

static void unchanged(sl_engine *eng, const snapshot *s)
{
    sl_engine_stats st;
    sl_engine_stats_get(eng, &st);
    assert_false(sl_engine_changes_pending(eng));
    assert_int_equal(st.claims, s->st.claims);
    assert_int_equal(st.pending, s->st.pending);
    assert_int_equal(st.held, s->st.held);
    assert_int_equal(st.locks, s->st.locks);
    assert_int_equal(st.configs, s->st.configs);
    assert_int_equal(st.next_seq, s->st.next_seq);
    assert_int_equal(st.grants, s->st.grants);
}

static int create_locks(sl_engine *eng, int64_t now, const char *id, const sl_lock_req *locks,
                        size_t n, sl_error *err)
{
    sl_claim_req r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.holder = id;
    r.locks = locks;
    r.nlocks = n;
    r.lease_ms = -1;
    r.grace_ms = -1;
    sl_claim *c = NULL;
    return sl_claim_create(eng, &r, now, &c, err);
}

/* ---- strict ---------------------------------------------------------------- */

/* No overtaking: a small claim waits behind a big one even though it would
 * fit in the free slots; both go in together once there is room for both. */
static void strict_no_overtaking(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 3, SL_STRICT);
    t_claim(eng, 1, "id=h s:S*2");
    t_claim(eng, 2, "id=a s:S*2");
    t_claim(eng, 3, "id=b s:S*1");
    assert_string_equal(t_events(eng), "semaphore.updated:S claim.queued:h claim.acquired:h "
                                       "claim.queued:a claim.waiting:a claim.queued:b "
                                       "claim.waiting:b");
    assert_int_equal(t_state(eng, "b"), SL_PENDING);
    sl_why wa = why_of(eng, "a", 0);
    assert_int_equal(wa.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(wa.position, 1);
    assert_int_equal(wa.nahead, 0);
    sl_why wb = why_of(eng, "b", 0);
    assert_int_equal(wb.rule, SL_RULE_BEHIND);
    assert_int_equal(wb.position, 2);
    assert_int_equal(wb.nahead, 1);
    assert_int_equal(wb.nshown, 1);
    assert_string_equal(t_id(wb.ahead[0]), "a");
    assert_int_equal(wb.used, 2);
    assert_int_equal(wb.limit, 3);
    assert_string_equal(wb.key, "sem/S");

    t_release(eng, 4, "h");
    assert_string_equal(t_events(eng), "claim.released:h claim.acquired:a claim.acquired:b");
    assert_string_equal(holders(eng, SL_KIND_SEMAPHORE, "S"), "a:2:2 b:1:3");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 3);
    t_free(eng);
}

/* A waiter blocked on another lock keeps its place and its slots: a claim
 * behind it gets in only while there is room for both. */
static void strict_reserves_for_blocked_waiter(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 3, SL_STRICT);
    t_claim(eng, 1, "id=hx m:X");
    t_claim(eng, 2, "id=a s:S*2 m:X");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 0);
    assert_int_equal(why_of(eng, "a", 0).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why_of(eng, "a", 1).rule, SL_RULE_AT_LIMIT);
    size_t at = 9;
    assert_int_equal(main_rule(eng, "a", &at), SL_RULE_AT_LIMIT);
    assert_int_equal(at, 1);

    /* 2 reserved for a plus 1 for b fit in 3. */
    t_claim(eng, 3, "id=b s:S*1");
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    /* Now 2 reserved for a plus 1 do not fit in the 2 left. */
    t_claim(eng, 4, "id=c s:S*1");
    assert_int_equal(t_state(eng, "c"), SL_PENDING);
    sl_why wc = why_of(eng, "c", 0);
    assert_int_equal(wc.rule, SL_RULE_BEHIND);
    assert_int_equal(wc.position, 2);
    assert_string_equal(t_id(wc.ahead[0]), "a");
    assert_int_equal(wc.used, 1);
    assert_string_equal(t_events(eng), "semaphore.updated:S claim.queued:hx claim.acquired:hx "
                                       "claim.queued:a claim.waiting:a claim.queued:b "
                                       "claim.acquired:b claim.queued:c claim.waiting:c");

    t_release(eng, 5, "hx");
    assert_string_equal(t_events(eng), "claim.released:hx claim.acquired:a");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 3);
    assert_int_equal(why_of(eng, "c", 0).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(t_position(eng, "c", 0), 1);
    t_release(eng, 6, "b");
    assert_string_equal(t_events(eng), "claim.released:b claim.acquired:c");
    t_free(eng);
}

/* Without room for both, the waiter behind a blocked one waits; when a claim
 * ahead leaves, the reservation shrinks and it goes in. */
static void strict_behind_blocked_until_room(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 2, SL_STRICT);
    t_claim(eng, 1, "id=hx m:X");
    t_claim(eng, 2, "id=a s:S m:X");
    t_claim(eng, 3, "id=b s:S*2");
    t_claim(eng, 4, "id=c s:S");
    assert_string_equal(t_with_state(eng, SL_PENDING), "a b c");
    assert_int_equal(why_of(eng, "b", 0).rule, SL_RULE_BEHIND);
    assert_int_equal(why_of(eng, "c", 0).rule, SL_RULE_BEHIND);
    assert_int_equal(why_of(eng, "c", 0).nahead, 2);
    (void)t_events(eng);
    /* b leaves: a's 1 reserved plus c's 1 fit in 2. */
    t_release(eng, 5, "b");
    assert_string_equal(t_events(eng), "claim.withdrawn:b claim.acquired:c");
    assert_int_equal(t_state(eng, "a"), SL_PENDING);
    assert_int_equal(t_position(eng, "a", 0), 1);
    t_free(eng);
}

/* A strict queue with weighted claims and a lock lowered below used: the
 * limit bounds what is handed out, nobody is let in while used >= limit. */
static void strict_weighted_all_or_none(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 4, SL_STRICT);
    t_claim(eng, 1, "id=h s:S*3");
    t_claim(eng, 2, "id=w s:S*2");
    /* No partial grant: one slot is free, w keeps none of it. */
    assert_int_equal(t_state(eng, "w"), SL_PENDING);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 3);
    assert_int_equal(t_token(eng, "w", 0), 0);
    sl_lock_view v;
    view_of(eng, SL_KIND_SEMAPHORE, "S", &v);
    assert_int_equal(v.token, 1);
    assert_int_equal(v.nholders, 1);
    assert_int_equal(v.npending, 1);

    t_release(eng, 3, "h");
    assert_int_equal(t_state(eng, "w"), SL_HELD);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 2);
    assert_int_equal(t_token(eng, "w", 0), 2);

    /* A claim of the whole limit waits for all of it, and blocks the small
     * one behind it. */
    t_claim(eng, 4, "id=x s:S*4");
    t_claim(eng, 5, "id=y s:S*1");
    assert_int_equal(why_of(eng, "x", 0).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(why_of(eng, "y", 0).rule, SL_RULE_BEHIND);
    (void)t_events(eng);
    t_release(eng, 6, "w");
    assert_string_equal(t_events(eng), "claim.released:w claim.acquired:x");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 4);
    assert_int_equal(t_token(eng, "x", 0), 3);
    t_release(eng, 7, "x");
    assert_string_equal(t_events(eng), "claim.released:x claim.acquired:y");
    t_free(eng);
}

/* ---- skip ------------------------------------------------------------------ */

/* First fit: a small claim passes a big one that does not fit; the big one
 * goes in when enough is free. */
static void skip_first_fit(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 3, SL_SKIP);
    t_claim(eng, 1, "id=h s:S*2");
    t_claim(eng, 2, "id=a s:S*2");
    t_claim(eng, 3, "id=b s:S*1");
    t_claim(eng, 4, "id=c s:S*1");
    assert_string_equal(t_events(eng), "semaphore.updated:S claim.queued:h claim.acquired:h "
                                       "claim.queued:a claim.waiting:a claim.queued:b "
                                       "claim.acquired:b claim.queued:c claim.waiting:c");
    assert_int_equal(why_of(eng, "a", 0).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(why_of(eng, "c", 0).rule, SL_RULE_AT_LIMIT);
    assert_string_equal(waiters(eng, SL_KIND_SEMAPHORE, "S"), "a c");
    assert_int_equal(t_position(eng, "c", 0), 2);

    /* One slot free: a (2) does not fit, c (1) does. */
    t_release(eng, 5, "b");
    assert_string_equal(t_events(eng), "claim.released:b claim.acquired:c");
    t_release(eng, 6, "h");
    assert_string_equal(t_events(eng), "claim.released:h claim.acquired:a");
    assert_string_equal(holders(eng, SL_KIND_SEMAPHORE, "S"), "c:1:3 a:2:4");
    t_free(eng);
}

/* Blocked claims are skipped, not waited for: b passes a, which waits for
 * X; on a strict lock the same bt waits behind at's reservation. */
static void skip_passes_blocked_claims(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 2, SL_SKIP);
    set_limit(eng, 0, "T", 2, SL_STRICT);
    t_claim(eng, 1, "id=hx m:X");
    t_claim(eng, 1, "id=hy m:Y");
    t_claim(eng, 2, "id=a s:S m:X");
    t_claim(eng, 3, "id=at s:T m:Y");
    assert_int_equal(why_of(eng, "a", 0).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why_of(eng, "at", 0).rule, SL_RULE_OTHER_LOCK);
    t_claim(eng, 4, "id=b s:S*2");
    t_claim(eng, 5, "id=bt s:T*2");
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    assert_int_equal(t_state(eng, "bt"), SL_PENDING);
    assert_int_equal(why_of(eng, "bt", 0).rule, SL_RULE_BEHIND);
    /* a is now at the limit on S too. */
    assert_int_equal(why_of(eng, "a", 0).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(why_of(eng, "a", 1).rule, SL_RULE_AT_LIMIT);
    (void)t_events(eng);

    /* X frees, but a has no room on S. */
    t_release(eng, 6, "hx");
    assert_string_equal(t_events(eng), "claim.released:hx");
    assert_int_equal(t_state(eng, "a"), SL_PENDING);
    assert_int_equal(why_of(eng, "a", 1).rule, SL_RULE_OTHER_LOCK);
    t_release(eng, 7, "b");
    assert_string_equal(t_events(eng), "claim.released:b claim.acquired:a");
    /* at goes in; bt (2) behind it does not fit in the 1 left. */
    t_release(eng, 8, "hy");
    assert_string_equal(t_events(eng), "claim.released:hy claim.acquired:at");
    assert_int_equal(why_of(eng, "bt", 0).rule, SL_RULE_AT_LIMIT);
    t_free(eng);
}

/* A skip lock lowered below its used slots admits nobody until used is
 * below the new limit, even a claim that would fit the limit alone. */
static void skip_lowered_limit_admits_nobody(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 3, SL_SKIP);
    t_claim(eng, 1, "id=a s:S");
    t_claim(eng, 2, "id=b s:S");
    t_claim(eng, 3, "id=c s:S");
    t_claim(eng, 4, "id=w s:S");
    set_limit(eng, 5, "S", 1, SL_SKIP);
    (void)t_events(eng);
    t_release(eng, 6, "a");
    t_release(eng, 7, "b");
    assert_string_equal(t_events(eng), "claim.released:a claim.released:b");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 1);
    assert_int_equal(why_of(eng, "w", 0).rule, SL_RULE_AT_LIMIT);
    t_release(eng, 8, "c");
    assert_string_equal(t_events(eng), "claim.released:c claim.acquired:w");
    t_free(eng);
}

/* ---- several locks --------------------------------------------------------- */

/* A claim on a semaphore and a held mutex takes nothing until it takes both,
 * then both at once in one event with a token on each. */
static void multi_lock_granted_at_once(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 2, SL_STRICT);
    t_claim(eng, 1, "id=hm m:M");
    t_claim(eng, 2, "id=c s:S*2 m:M");
    sl_lock_view v;
    view_of(eng, SL_KIND_SEMAPHORE, "S", &v);
    assert_int_equal(v.used, 0);
    assert_int_equal(v.token, 0);
    assert_int_equal(v.nholders, 0);
    assert_int_equal(v.npending, 1);
    view_of(eng, SL_KIND_MUTEX, "M", &v);
    assert_int_equal(v.used, 1);
    assert_int_equal(v.npending, 1);
    assert_int_equal(t_token(eng, "c", 0), 0);
    assert_int_equal(t_token(eng, "c", 1), 0);
    (void)t_events(eng);

    t_release(eng, 3, "hm");
    assert_string_equal(t_events(eng), "claim.released:hm claim.acquired:c");
    assert_int_equal(t_token(eng, "c", 0), 1);
    assert_int_equal(t_token(eng, "c", 1), 2);
    view_of(eng, SL_KIND_SEMAPHORE, "S", &v);
    assert_int_equal(v.used, 2);
    assert_int_equal(v.nholders, 1);
    assert_int_equal(v.npending, 0);
    /* Positions read 0 once held. */
    assert_int_equal(t_position(eng, "c", 0), 0);
    assert_int_equal(t_position(eng, "c", 1), 0);
    t_free(eng);
}

/* ---- positions and the total order ---------------------------------------- */

/* Positions count per lock from 1 and follow grants and withdrawals. */
static void positions_per_lock(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h m:M");
    t_claim(eng, 2, "id=g m:N");
    t_claim(eng, 3, "id=a m:M");
    t_claim(eng, 4, "id=b m:M m:N");
    t_claim(eng, 5, "id=c m:N");
    t_claim(eng, 6, "id=d m:M");
    assert_int_equal(t_position(eng, "a", 0), 1);
    assert_int_equal(t_position(eng, "b", 0), 2);
    assert_int_equal(t_position(eng, "b", 1), 1);
    assert_int_equal(t_position(eng, "c", 0), 2);
    assert_int_equal(t_position(eng, "d", 0), 3);
    assert_string_equal(waiters(eng, SL_KIND_MUTEX, "M"), "a b d");
    assert_string_equal(waiters(eng, SL_KIND_MUTEX, "N"), "b c");
    (void)t_events(eng);

    t_release(eng, 7, "a"); /* withdrawn */
    assert_int_equal(t_state(eng, "a"), SL_WITHDRAWN);
    assert_int_equal(t_position(eng, "a", 0), 0);
    assert_int_equal(t_position(eng, "b", 0), 1);
    assert_int_equal(t_position(eng, "d", 0), 2);

    /* M frees but b, first on M, still waits for N; d stays behind it. */
    t_release(eng, 8, "h");
    assert_string_equal(t_events(eng), "claim.withdrawn:a claim.released:h");
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "M"), 0);
    assert_int_equal(why_of(eng, "b", 0).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why_of(eng, "d", 0).rule, SL_RULE_BEHIND);

    t_release(eng, 9, "g");
    assert_string_equal(t_events(eng), "claim.released:g claim.acquired:b");
    assert_int_equal(t_position(eng, "c", 0), 1);
    assert_int_equal(t_position(eng, "d", 0), 1);
    assert_int_equal(why_of(eng, "d", 0).rule, SL_RULE_AT_LIMIT);
    t_free(eng);
}

/* The total order: priority descending, created ascending, arrival
 * ascending; an explicit created earlier than the waiters' moves ahead. */
static void global_order(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h m:M");
    t_claim(eng, 10, "id=a m:M");            /* created 10 */
    t_claim(eng, 20, "id=b m:M");            /* created 20 */
    t_claim(eng, 30, "id=c m:M created=5");  /* older than a and b */
    t_claim(eng, 40, "id=d m:M created=10"); /* ties a on created, arrived later */
    t_claim(eng, 50, "id=e m:M prio=1 created=900");
    t_claim(eng, 60, "id=f m:M prio=-1 created=0");
    assert_string_equal(waiters(eng, SL_KIND_MUTEX, "M"), "e c a d b f");
    const char *want[] = {"e", "c", "a", "d", "b", "f"};
    size_t i = 0;
    for (const sl_claim *c = sl_pending_next(eng, NULL); c; c = sl_pending_next(eng, c), i++) {
        assert_true(i < 6);
        assert_string_equal(t_id(c), want[i]);
        assert_int_equal(sl_pending_position(eng, c), i + 1);
    }
    assert_int_equal(i, 6);
    assert_int_equal(sl_pending_position(eng, t_find(eng, "h")), 0);
    (void)t_events(eng);

    /* Grants follow the same order. */
    const char *next = "h";
    for (i = 0; i < 6; i++) {
        char ev[128];
        t_release(eng, 100 + (int64_t)i, next);
        snprintf(ev, sizeof(ev), "claim.released:%s claim.acquired:%s", next, want[i]);
        assert_string_equal(t_events(eng), ev);
        next = want[i];
    }
    assert_int_equal(t_token(eng, "f", 0), 7);
    t_free(eng);
}

/* Claims on several locks share the one order on each lock, and a new claim
 * that is older than the waiters joins ahead of them. */
static void order_same_on_every_lock(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=h m:X m:Y");
    t_claim(eng, 2, "id=a m:X m:Y");
    t_claim(eng, 3, "id=b m:Y m:X");
    t_claim(eng, 4, "id=c m:Y created=1");
    assert_string_equal(waiters(eng, SL_KIND_MUTEX, "X"), "a b");
    assert_string_equal(waiters(eng, SL_KIND_MUTEX, "Y"), "c a b");
    assert_int_equal(t_position(eng, "b", 0), 3); /* b's first lock is Y */
    assert_int_equal(t_position(eng, "b", 1), 2);
    (void)t_events(eng);
    /* Both free: c comes first in the total order and takes Y, so a, first
     * on X, still waits for Y (and holds its place on X). */
    t_release(eng, 5, "h");
    assert_string_equal(t_events(eng), "claim.released:h claim.acquired:c");
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "X"), 0);
    assert_int_equal(why_of(eng, "a", 0).rule, SL_RULE_OTHER_LOCK);
    assert_int_equal(why_of(eng, "a", 1).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(why_of(eng, "b", 1).rule, SL_RULE_BEHIND);
    t_release(eng, 6, "c");
    assert_string_equal(t_events(eng), "claim.released:c claim.acquired:a");
    t_release(eng, 7, "a");
    assert_string_equal(t_events(eng), "claim.released:a claim.acquired:b");
    assert_int_equal(t_token(eng, "b", 0), 4); /* Y: h, c, a, b */
    assert_int_equal(t_token(eng, "b", 1), 3); /* X: h, a, b */
    t_free(eng);
}

/* ---- limit changes --------------------------------------------------------- */

/* Raising a limit grants at once, in the same call, in queue order. */
static void raise_limit_grants_in_same_call(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 1, SL_STRICT);
    t_claim(eng, 1, "id=a s:S");
    t_claim(eng, 2, "id=b s:S");
    t_claim(eng, 3, "id=c s:S");
    t_claim(eng, 4, "id=d s:S");
    (void)t_events(eng);
    set_limit(eng, 5, "S", 3, SL_STRICT);
    assert_string_equal(t_events(eng), "semaphore.updated:S claim.acquired:b claim.acquired:c");
    assert_int_equal(t_position(eng, "d", 0), 1);
    sl_lock_view v;
    view_of(eng, SL_KIND_SEMAPHORE, "S", &v);
    assert_int_equal(v.limit, 3);
    assert_int_equal(v.used, 3);
    assert_int_equal(v.token, 3);
    assert_int_equal(v.npending, 1);
    t_free(eng);
}

/* Lowering revokes nobody, and nobody goes in until used < limit. */
static void lower_limit_revokes_nobody(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 3, SL_STRICT);
    t_claim(eng, 1, "id=a s:S");
    t_claim(eng, 2, "id=b s:S");
    t_claim(eng, 3, "id=c s:S");
    t_claim(eng, 4, "id=d s:S");
    (void)t_events(eng);
    set_limit(eng, 5, "S", 1, SL_STRICT);
    assert_string_equal(t_events(eng), "semaphore.updated:S");
    assert_string_equal(t_with_state(eng, SL_HELD), "a b c");
    sl_lock_view v;
    view_of(eng, SL_KIND_SEMAPHORE, "S", &v);
    assert_int_equal(v.used, 3);
    assert_int_equal(v.limit, 1);
    sl_why w = why_of(eng, "d", 0);
    assert_int_equal(w.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w.used, 3);
    assert_int_equal(w.limit, 1);

    t_release(eng, 6, "a");
    assert_string_equal(t_events(eng), "claim.released:a");
    t_release(eng, 7, "b");
    assert_string_equal(t_events(eng), "claim.released:b"); /* used 1, not below 1 */
    t_release(eng, 8, "c");
    assert_string_equal(t_events(eng), "claim.released:c claim.acquired:d");
    t_free(eng);
}

/* Limit 0 pauses: holders stay, nobody goes in, and a claim of any size is
 * accepted while paused (the limit may be raised); raising resumes. */
static void limit_zero_pauses(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 2, SL_STRICT);
    t_claim(eng, 1, "id=a s:S");
    set_limit(eng, 2, "S", 0, SL_STRICT);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    t_claim(eng, 3, "id=b s:S");
    t_claim(eng, 4, "id=c s:S*5");
    assert_string_equal(t_with_state(eng, SL_PENDING), "b c");
    assert_int_equal(why_of(eng, "b", 0).rule, SL_RULE_AT_LIMIT);
    (void)t_events(eng);
    t_release(eng, 5, "a");
    assert_string_equal(t_events(eng), "claim.released:a");
    assert_int_equal(why_of(eng, "b", 0).rule, SL_RULE_AT_LIMIT);

    /* 5: b (1) fits; c (5) behind it does not. */
    set_limit(eng, 6, "S", 5, SL_STRICT);
    assert_string_equal(t_events(eng), "semaphore.updated:S claim.acquired:b");
    assert_int_equal(why_of(eng, "c", 0).rule, SL_RULE_AT_LIMIT);
    sl_error err;
    assert_int_equal(t_claim_rc(eng, 7, "id=x s:S*6", &err), SL_EINVAL);
    t_release(eng, 8, "b");
    assert_string_equal(t_events(eng), "claim.released:b claim.acquired:c");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 5);
    t_free(eng);
}

/* A claim bigger than a limit lowered after it arrived keeps its place and,
 * on a strict lock, blocks the waiters behind it until the limit rises. */
static void lowered_below_claim_keeps_place(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 3, SL_STRICT);
    t_claim(eng, 1, "id=h s:S");
    t_claim(eng, 2, "id=big s:S*3");
    t_claim(eng, 3, "id=small s:S");
    set_limit(eng, 4, "S", 2, SL_STRICT);
    (void)t_events(eng);
    t_release(eng, 5, "h");
    assert_string_equal(t_events(eng), "claim.released:h");
    assert_int_equal(t_state(eng, "big"), SL_PENDING);
    assert_int_equal(t_position(eng, "big", 0), 1);
    assert_int_equal(t_position(eng, "small", 0), 2);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "S"), 0);
    assert_int_equal(why_of(eng, "big", 0).rule, SL_RULE_AT_LIMIT);
    assert_int_equal(why_of(eng, "small", 0).rule, SL_RULE_BEHIND);
    /* A new claim bigger than the lowered limit is refused though. */
    assert_int_equal(t_claim_rc(eng, 6, "id=x s:S*3", NULL), SL_EINVAL);
    set_limit(eng, 7, "S", 4, SL_STRICT);
    assert_string_equal(t_events(eng),
                        "semaphore.updated:S claim.acquired:big claim.acquired:small");
    t_free(eng);
}

/* ---- strategy changes ------------------------------------------------------ */

/* strict -> skip -> rebalanced -> strict with waiters: every waiter stays,
 * and each change grants what the new strategy allows, in the same call. */
static void strategy_change_keeps_waiters(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 4, SL_STRICT);
    t_claim(eng, 1, "id=h s:S*2 key=A");
    t_claim(eng, 2, "id=w1 s:S*3 key=A");
    t_claim(eng, 3, "id=w2 s:S key=B");
    t_claim(eng, 4, "id=w3 s:S key=A");
    t_claim(eng, 5, "id=w4 s:S key=B");
    t_claim(eng, 6, "id=w5 s:S key=A");
    /* Strict: w1 (3) does not fit in 2, and nobody passes it. */
    assert_string_equal(t_with_state(eng, SL_PENDING), "w1 w2 w3 w4 w5");
    assert_string_equal(waiters(eng, SL_KIND_SEMAPHORE, "S"), "w1 w2 w3 w4 w5");
    (void)t_events(eng);

    /* Skip: first fit lets w2 and w3 in; w4 finds nothing left. */
    set_limit(eng, 10, "S", 4, SL_SKIP);
    assert_string_equal(t_events(eng), "semaphore.updated:S claim.acquired:w2 claim.acquired:w3");
    assert_string_equal(t_with_state(eng, SL_PENDING), "w1 w4 w5");
    assert_string_equal(waiters(eng, SL_KIND_SEMAPHORE, "S"), "w1 w4 w5");
    assert_int_equal(why_of(eng, "w4", 0).rule, SL_RULE_AT_LIMIT);

    /* Rebalanced with limit 5: keys A (h 2 + w3 1 = 3) and B (w2: 1).
     * Quotas floor(5/2) = 2, plus the 1 extra for A, whose oldest waiter
     * (w1) is older than B's (w4): A 3, B 2. B is below its quota, so w4
     * comes first and takes the free slot; then w1 and w5, oldest first. */
    set_limit(eng, 20, "S", 5, SL_REBALANCED);
    assert_string_equal(t_events(eng), "semaphore.updated:S claim.acquired:w4");
    assert_string_equal(waiters(eng, SL_KIND_SEMAPHORE, "S"), "w1 w5");
    assert_string_equal(t_with_state(eng, SL_PENDING), "w1 w5");
    sl_lock_view v;
    view_of(eng, SL_KIND_SEMAPHORE, "S", &v);
    assert_int_equal(v.used, 5);
    assert_int_equal(v.strategy, SL_REBALANCED);
    assert_int_equal(v.npending, 2);
    assert_int_equal(v.nholders, 4);

    /* Back to strict: the waiters keep the total order. */
    set_limit(eng, 30, "S", 5, SL_STRICT);
    assert_string_equal(t_events(eng), "semaphore.updated:S");
    assert_string_equal(waiters(eng, SL_KIND_SEMAPHORE, "S"), "w1 w5");
    t_release(eng, 31, "h"); /* 2 free: w1 (3) does not fit; w5 must wait behind */
    assert_string_equal(t_events(eng), "claim.released:h");
    assert_int_equal(why_of(eng, "w5", 0).rule, SL_RULE_BEHIND);
    t_release(eng, 32, "w2");
    assert_string_equal(t_events(eng), "claim.released:w2 claim.acquired:w1");
    t_release(eng, 33, "w3");
    assert_string_equal(t_events(eng), "claim.released:w3 claim.acquired:w5");
    assert_string_equal(holders(eng, SL_KIND_SEMAPHORE, "S"), "w4:1:4 w1:3:5 w5:1:6");
    t_free(eng);
}

/* ---- refusals at arrival --------------------------------------------------- */

static void refuse_same_lock_twice(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 3, SL_STRICT);
    set_limit(eng, 0, "tag/env=*", 2, SL_STRICT);
    snapshot s;
    sl_error err;
    snap(eng, &s);
    assert_int_equal(t_claim_rc(eng, 1, "id=a m:X m:Y m:X", &err), SL_EINVAL);
    assert_int_equal(err.code, SL_EINVAL);
    assert_string_equal(err.field, "locks[2]");
    unchanged(eng, &s);
    assert_int_equal(t_claim_rc(eng, 1, "id=a s:S s:S*2", &err), SL_EINVAL);
    assert_string_equal(err.field, "locks[1]");
    unchanged(eng, &s);
    /* The group's mutex named explicitly too. */
    assert_int_equal(t_claim_rc(eng, 1, "id=a m:group/g group=g", &err), SL_EINVAL);
    assert_string_equal(err.field, "group");
    unchanged(eng, &s);
    /* A tag's semaphore named explicitly too. */
    assert_int_equal(t_claim_rc(eng, 1, "id=a s:tag/env=prod tag=env=prod", &err), SL_EINVAL);
    assert_string_equal(err.field, "tags[0]");
    unchanged(eng, &s);
    assert_null(sl_claim_find(eng, "a"));
    /* A mutex and a semaphore of the same name are two locks. */
    set_limit(eng, 2, "X", 1, SL_STRICT);
    t_claim(eng, 3, "id=a m:X s:X");
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    t_free(eng);
}

static void refuse_mutex_slots(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    snapshot s;
    sl_error err;
    snap(eng, &s);
    assert_int_equal(t_claim_rc(eng, 1, "id=a m:X*2", &err), SL_EINVAL);
    assert_string_equal(err.field, "locks[0]");
    assert_int_equal(err.value, 2);
    unchanged(eng, &s);
    /* slots 1 (and 0, meaning 1) are fine. */
    t_claim(eng, 2, "id=b m:X*1");
    t_claim(eng, 3, "id=c m:Y*0");
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    assert_int_equal(t_state(eng, "c"), SL_HELD);
    t_free(eng);
}

static void refuse_slots_above_limit(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 3, SL_STRICT);
    t_claim(eng, 1, "id=h s:S");
    snapshot s;
    sl_error err;
    snap(eng, &s);
    assert_int_equal(t_claim_rc(eng, 2, "id=a m:X s:S*4", &err), SL_EINVAL);
    assert_string_equal(err.field, "locks[1]");
    assert_int_equal(err.value, 3);
    unchanged(eng, &s);
    /* Exactly the limit may wait for it. */
    t_claim(eng, 3, "id=b s:S*3");
    assert_int_equal(t_state(eng, "b"), SL_PENDING);
    t_free(eng);
}

static void refuse_unknown_semaphore(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "known", 1, SL_STRICT);
    snapshot s;
    sl_error err;
    snap(eng, &s);
    sl_lock_req locks[] = {
        {SL_KIND_SEMAPHORE, "known", 1, 0},
        {SL_KIND_SEMAPHORE, "nosuch", 1, 0},
    };
    assert_int_equal(create_locks(eng, 1, "a", locks, 2, &err), SL_EUNKNOWN);
    assert_int_equal(err.code, SL_EUNKNOWN);
    assert_non_null(err.name);
    assert_string_equal(err.name, "nosuch");
    assert_string_equal(err.field, "locks[1]");
    unchanged(eng, &s);
    /* A mutex of that name needs no configuration. */
    sl_lock_req m = {SL_KIND_MUTEX, "nosuch", 0, 0};
    assert_int_equal(create_locks(eng, 2, "a", &m, 1, &err), 0);
    t_free(eng);
}

static void refuse_duplicate_id(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a m:X");
    snapshot s;
    sl_error err;
    snap(eng, &s);
    assert_int_equal(t_claim_rc(eng, 2, "id=a m:Y", &err), SL_ECONFLICT);
    assert_string_equal(err.field, "id");
    unchanged(eng, &s);
    /* Still taken once the claim has ended (it stays readable). */
    t_release(eng, 3, "a");
    snap(eng, &s);
    assert_int_equal(t_claim_rc(eng, 4, "id=a m:Y", &err), SL_ECONFLICT);
    unchanged(eng, &s);
    assert_int_equal(t_state(eng, "a"), SL_RELEASED);
    t_free(eng);
}

static void refuse_malformed(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    snapshot s;
    sl_error err;
    snap(eng, &s);
    assert_int_equal(t_claim_rc(eng, 1, "id=a m:X cancel=pending", &err), SL_EINVAL);
    assert_string_equal(err.field, "cancel");
    unchanged(eng, &s);
    assert_int_equal(t_claim_rc(eng, 1, "id=a m:X cancel=in-progress", &err), SL_EINVAL);
    unchanged(eng, &s);
    assert_int_equal(t_claim_rc(eng, 1, "id=a", &err), SL_EINVAL);
    assert_string_equal(err.field, "locks");
    unchanged(eng, &s);
    assert_int_equal(t_claim_rc(eng, 1, "id=a holder=x prio=3 key=k", &err), SL_EINVAL);
    unchanged(eng, &s);
    assert_int_equal(t_claim_rc(eng, 1, "id=a m:X timeout=-1", &err), SL_EINVAL);
    unchanged(eng, &s);
    /* holder and id are required, each within its bound. */
    sl_lock_req x = {SL_KIND_MUTEX, "X", 1, 0};
    sl_claim_req r;
    memset(&r, 0, sizeof(r));
    r.id = "a";
    r.locks = &x;
    r.nlocks = 1;
    r.lease_ms = r.grace_ms = -1;
    sl_claim *c = NULL;
    assert_int_equal(sl_claim_create(eng, &r, 1, &c, &err), SL_EINVAL);
    assert_string_equal(err.field, "holder");
    r.holder = "";
    assert_int_equal(sl_claim_create(eng, &r, 1, &c, &err), SL_EINVAL);
    char id[SL_ID_MAX + 2];
    memset(id, 'i', SL_ID_MAX + 1);
    id[SL_ID_MAX + 1] = '\0';
    r.holder = "h";
    r.id = id;
    assert_int_equal(sl_claim_create(eng, &r, 1, &c, &err), SL_EINVAL);
    assert_string_equal(err.field, "id");
    r.id = NULL;
    assert_int_equal(sl_claim_create(eng, &r, 1, &c, &err), SL_EINVAL);
    unchanged(eng, &s);
    id[SL_ID_MAX] = '\0'; /* 64 is fine */
    r.id = id;
    assert_int_equal(sl_claim_create(eng, &r, 1, &c, &err), 0);
    assert_int_equal(t_state(eng, id), SL_HELD);
    t_release(eng, 1, id);
    /* cancel with a group is fine. */
    t_claim(eng, 2, "id=a m:X group=g cancel=pending");
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    t_free(eng);
}

/* 64 explicit locks is the most; 65 is refused with nothing changed. */
static void refuse_too_many_locks(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    static char names[SL_LOCKS_MAX + 1][8];
    sl_lock_req locks[SL_LOCKS_MAX + 1];
    for (size_t i = 0; i <= SL_LOCKS_MAX; i++) {
        snprintf(names[i], sizeof(names[i]), "l%zu", i);
        locks[i] = (sl_lock_req){SL_KIND_MUTEX, names[i], 1, 0};
    }
    snapshot s;
    sl_error err;
    snap(eng, &s);
    assert_int_equal(create_locks(eng, 1, "a", locks, SL_LOCKS_MAX + 1, &err), SL_EINVAL);
    assert_string_equal(err.field, "locks");
    assert_int_equal(err.value, 65);
    unchanged(eng, &s);
    assert_int_equal(create_locks(eng, 2, "b", locks, SL_LOCKS_MAX, &err), 0);
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    sl_claim_view v;
    sl_claim_get(t_find(eng, "b"), &v);
    assert_int_equal(v.nlocks, 64);
    assert_int_equal(t_token(eng, "b", 63), 1);
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "l63"), 1);
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "l64"), 0);
    t_free(eng);
}

static void refuse_bad_names(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    char long_name[SL_NAME_MAX + 2];
    memset(long_name, 'n', SL_NAME_MAX + 1);
    long_name[SL_NAME_MAX + 1] = '\0'; /* 254 characters */
    const char *bad[] = {"", "/a", "a/", "a//b", "a b", "a*", "a\n", "caf\xc3\xa9", long_name};
    snapshot s;
    sl_error err;
    snap(eng, &s);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_lock_req l = {SL_KIND_MUTEX, bad[i], 1, 0};
        assert_int_equal(create_locks(eng, 1, "a", &l, 1, &err), SL_EINVAL);
        assert_string_equal(err.field, "locks[0]");
        l.kind = SL_KIND_SEMAPHORE;
        assert_int_equal(create_locks(eng, 1, "a", &l, 1, &err), SL_EINVAL);
        unchanged(eng, &s);
    }
    sl_lock_req nul = {SL_KIND_MUTEX, NULL, 1, 0};
    assert_int_equal(create_locks(eng, 1, "a", &nul, 1, &err), SL_EINVAL);
    assert_int_equal(t_claim_rc(eng, 1, "id=a m:X group=a//b", &err), SL_EINVAL);
    assert_string_equal(err.field, "group");
    unchanged(eng, &s);
    /* 253 characters and every allowed character are fine. */
    long_name[SL_NAME_MAX] = '\0';
    sl_lock_req ok[] = {{SL_KIND_MUTEX, long_name, 1, 0}, {SL_KIND_MUTEX, "Az09._-/:=x", 1, 0}};
    assert_int_equal(create_locks(eng, 2, "ok", ok, 2, &err), 0);
    assert_int_equal(t_state(eng, "ok"), SL_HELD);
    t_free(eng);
}

/* ---- views ----------------------------------------------------------------- */

static void lock_views_and_listings(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    set_limit(eng, 0, "S", 5, SL_STRICT);
    t_claim(eng, 10, "id=a s:S*2");
    t_claim(eng, 11, "id=b s:S*1");
    t_claim(eng, 12, "id=c s:S*3");
    t_claim(eng, 13, "id=d s:S*1");
    t_claim(eng, 14, "id=x m:M");
    t_claim(eng, 15, "id=y m:M");

    sl_lock_view v;
    const sl_lock *l = NULL;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, "S", &v, &l), 0);
    assert_non_null(l);
    assert_int_equal(v.kind, SL_KIND_SEMAPHORE);
    assert_string_equal(v.key, "sem/S");
    assert_string_equal(v.name, "S");
    assert_true(v.configured);
    assert_null(v.from_pattern);
    assert_int_equal(v.limit, 5);
    assert_int_equal(v.strategy, SL_STRICT);
    assert_int_equal(v.used, 3);
    assert_int_equal(v.token, 2);
    assert_int_equal(v.nholders, 2);
    assert_int_equal(v.npending, 2);

    sl_holder_view h[4];
    assert_int_equal(sl_lock_holders(l, 0, h, 4), 2);
    assert_string_equal(t_id(h[0].claim), "a");
    assert_int_equal(h[0].slots, 2);
    assert_int_equal(h[0].token, 1);
    assert_int_equal(h[0].since_ms, 10);
    assert_string_equal(t_id(h[1].claim), "b");
    assert_int_equal(h[1].token, 2);
    assert_int_equal(h[1].since_ms, 11);
    assert_int_equal(sl_lock_holders(l, 1, h, 4), 1);
    assert_string_equal(t_id(h[0].claim), "b");
    assert_int_equal(sl_lock_holders(l, 0, h, 1), 1);
    assert_string_equal(t_id(h[0].claim), "a");
    assert_int_equal(sl_lock_holders(l, 2, h, 4), 0);

    sl_waiter_view w[4];
    assert_int_equal(sl_lock_waiters(eng, l, 0, w, 4), 2);
    assert_string_equal(t_id(w[0].claim), "c");
    assert_int_equal(w[0].slots, 3);
    assert_int_equal(w[0].position, 1);
    assert_string_equal(t_id(w[1].claim), "d");
    assert_int_equal(w[1].position, 2);
    assert_int_equal(sl_lock_waiters(eng, l, 1, w, 4), 1);
    assert_string_equal(t_id(w[0].claim), "d");
    assert_int_equal(w[0].position, 2);
    assert_int_equal(sl_lock_waiters(eng, l, 0, w, 1), 1);
    assert_string_equal(t_id(w[0].claim), "c");
    assert_int_equal(sl_lock_waiters(eng, l, 2, w, 4), 0);

    view_of(eng, SL_KIND_MUTEX, "M", &v);
    assert_int_equal(v.kind, SL_KIND_MUTEX);
    assert_string_equal(v.key, "mtx/M");
    assert_false(v.configured);
    assert_int_equal(v.limit, 1);
    assert_int_equal(v.used, 1);
    assert_int_equal(v.token, 1);
    assert_int_equal(v.nholders, 1);
    assert_int_equal(v.npending, 1);
    assert_string_equal(holders(eng, SL_KIND_MUTEX, "M"), "x:1:1");
    assert_string_equal(waiters(eng, SL_KIND_MUTEX, "M"), "y");

    /* After everything leaves, the lock reads empty but keeps its token. */
    t_release(eng, 20, "d");
    t_release(eng, 21, "c");
    t_release(eng, 22, "a");
    t_release(eng, 23, "b");
    view_of(eng, SL_KIND_SEMAPHORE, "S", &v);
    assert_int_equal(v.used, 0);
    assert_int_equal(v.token, 2);
    assert_int_equal(v.nholders, 0);
    assert_int_equal(v.npending, 0);
    t_free(eng);
}

/* ---- against a model of the rules ------------------------------------------ */

/* An independent model of strict and skip admission over several locks: a
 * pending claim is granted when, on each of its locks, its slots fit in
 * limit - used and (strict) the slots of the waiters ahead of it in the
 * total order plus its own fit too; claims are tried in the total order,
 * each against the state the grants before it left. A seeded random walk of
 * arrivals on random sets of locks (two semaphores, two mutexes), releases,
 * withdrawals, limit and strategy changes must leave the engine and the
 * model agreeing on every state, every lock's queue and its used slots. */
#define Q_MAX 600
#define Q_LOCKS 4 /* S, T: semaphores; X, Y: mutexes */

static const char *const q_names[Q_LOCKS] = {"S", "T", "X", "Y"};

typedef struct qclaim {
    char id[8];
    uint32_t slots[Q_LOCKS]; /* 0: not on that lock */
    int32_t prio;
    int64_t created;
    uint64_t arrival;
    sl_state state;
} qclaim;

typedef struct qmodel {
    qclaim c[Q_MAX];
    size_t n;
    uint32_t limit[Q_LOCKS];
    sl_strategy strategy[Q_LOCKS];
} qmodel;

static int q_cmp(const qclaim *a, const qclaim *b)
{
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    return a->arrival < b->arrival ? -1 : a->arrival > b->arrival;
}

static uint64_t q_used(const qmodel *m, int l)
{
    uint64_t u = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i].state == SL_HELD)
            u += m->c[i].slots[l];
    return u;
}

static bool q_admissible(const qmodel *m, const qclaim *c)
{
    for (int l = 0; l < Q_LOCKS; l++) {
        if (!c->slots[l])
            continue;
        uint64_t used = q_used(m, l);
        uint64_t free = m->limit[l] > used ? m->limit[l] - used : 0;
        if (c->slots[l] > free)
            return false;
        if (m->strategy[l] == SL_SKIP)
            continue;
        uint64_t ahead = 0;
        for (size_t i = 0; i < m->n; i++)
            if (m->c[i].state == SL_PENDING && m->c[i].slots[l] && q_cmp(&m->c[i], c) < 0)
                ahead += m->c[i].slots[l];
        if (ahead + c->slots[l] > free)
            return false;
    }
    return true;
}

/* Pending claims on lock l (or all, l < 0) in the total order. */
static size_t q_pending(const qmodel *m, int l, size_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        if (m->c[i].state != SL_PENDING || (l >= 0 && !m->c[i].slots[l]))
            continue;
        size_t j = n++;
        while (j > 0 && q_cmp(&m->c[i], &m->c[out[j - 1]]) < 0) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = i;
    }
    return n;
}

static void q_settle(qmodel *m)
{
    static size_t order[Q_MAX];
    bool any = true;
    while (any) {
        any = false;
        size_t n = q_pending(m, -1, order);
        for (size_t i = 0; i < n; i++) {
            if (q_admissible(m, &m->c[order[i]])) {
                m->c[order[i]].state = SL_HELD;
                any = true;
            }
        }
    }
}

static uint64_t q_rng_state;

static uint32_t q_rng(uint32_t n)
{
    q_rng_state = q_rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((q_rng_state >> 33) % n);
}

static void q_compare(sl_engine *eng, const qmodel *m)
{
    static size_t order[Q_MAX];
    static sl_waiter_view w[Q_MAX];
    for (size_t i = 0; i < m->n; i++)
        if (t_state(eng, m->c[i].id) != m->c[i].state)
            fail_msg("claim %s: engine %s, model %s", m->c[i].id,
                     sl_state_name(t_state(eng, m->c[i].id)), sl_state_name(m->c[i].state));
    for (int l = 0; l < Q_LOCKS; l++) {
        sl_kind kind = l < 2 ? SL_KIND_SEMAPHORE : SL_KIND_MUTEX;
        size_t n = q_pending(m, l, order);
        sl_lock_view v;
        const sl_lock *lk = NULL;
        assert_int_equal(sl_lock_lookup(eng, kind, q_names[l], &v, &lk), 0);
        assert_int_equal(v.used, q_used(m, l));
        assert_int_equal(v.npending, n);
        if (!lk) {
            assert_int_equal(n, 0);
            continue;
        }
        assert_int_equal(sl_lock_waiters(eng, lk, 0, w, Q_MAX), n);
        for (size_t i = 0; i < n; i++)
            if (strcmp(t_id(w[i].claim), m->c[order[i]].id) != 0)
                fail_msg("%s position %zu: engine %s, model %s", q_names[l], i + 1,
                         t_id(w[i].claim), m->c[order[i]].id);
    }
}

static void q_walk(uint64_t seed, int steps)
{
    static qmodel m;
    memset(&m, 0, sizeof(m));
    q_rng_state = seed;
    sl_engine *eng = t_engine();
    for (int l = 0; l < Q_LOCKS; l++) {
        m.limit[l] = l < 2 ? 1 + q_rng(4) : 1;
        m.strategy[l] = l == 1 ? SL_SKIP : SL_STRICT;
        if (l < 2)
            set_limit(eng, 0, q_names[l], m.limit[l], m.strategy[l]);
    }
    uint64_t arrival = 0;
    for (int step = 1; step <= steps; step++) {
        int64_t now = step;
        uint32_t op = q_rng(100);
        if (op < 45 && m.n < Q_MAX) {
            qclaim *c = &m.c[m.n];
            memset(c, 0, sizeof(*c));
            snprintf(c->id, sizeof(c->id), "q%zu", m.n);
            c->prio = (int32_t)q_rng(3) - 1;
            c->created = q_rng(3) == 0 ? now : (int64_t)q_rng((uint32_t)steps);
            char spec[160];
            int len = snprintf(spec, sizeof(spec), "id=%s prio=%d created=%lld", c->id, c->prio,
                               (long long)c->created);
            bool refused = false;
            int first = (int)q_rng(Q_LOCKS), nl = 1 + (int)q_rng(3);
            for (int k = 0; k < nl; k++) { /* a rotation of the locks: any order */
                int l = (first + k) % Q_LOCKS;
                c->slots[l] = l < 2 ? 1 + q_rng(3) : 1;
                if (l < 2 && m.limit[l] > 0 && c->slots[l] > m.limit[l])
                    refused = true;
                len += snprintf(spec + len, sizeof(spec) - (size_t)len, " %s:%s*%u",
                                l < 2 ? "s" : "m", q_names[l], c->slots[l]);
            }
            if (refused) {
                assert_int_equal(t_claim_rc(eng, now, spec, NULL), SL_EINVAL);
                continue;
            }
            t_claim(eng, now, spec);
            c->arrival = ++arrival;
            c->state = SL_PENDING;
            m.n++;
        } else if (op < 85) {
            if (m.n == 0)
                continue;
            qclaim *c = &m.c[q_rng((uint32_t)m.n)];
            t_release(eng, now, c->id);
            if (c->state == SL_PENDING)
                c->state = SL_WITHDRAWN;
            else if (c->state == SL_HELD)
                c->state = SL_RELEASED;
        } else {
            int l = (int)q_rng(2);
            if (op < 95)
                m.limit[l] = q_rng(5);
            else
                m.strategy[l] = m.strategy[l] == SL_STRICT ? SL_SKIP : SL_STRICT;
            set_limit(eng, now, q_names[l], m.limit[l], m.strategy[l]);
        }
        q_settle(&m);
        q_compare(eng, &m);
        (void)t_events(eng);
    }
    t_free(eng);
}

static void against_model(void **state)
{
    (void)state;
    q_walk(1, 1000);
    q_walk(7, 1000);
    q_walk(99, 1000);
    q_walk(20240601, 1000);
}

/* skip with an overtake limit: the first waiter is passed by smaller ones
 * until it has waited the limit (to the millisecond), then its slots are
 * kept for it; it leaving lifts the barrier at once. */
static void skip_overtake_limit(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_sem_opts o;
    sl_sem_opts_default(&o, 3);
    o.strategy = SL_SKIP;
    o.overtake_ms = 100;
    sl_error err;
    assert_int_equal(sl_sem_configure(eng, "q", &o, 0, &err), 0);
    t_claim(eng, 0, "id=h1 s:q");
    t_claim(eng, 0, "id=h2 s:q");
    t_claim(eng, 1, "id=big s:q*3");
    t_claim(eng, 50, "id=s1 s:q"); /* big has waited 49 ms: passed */
    assert_int_equal(t_state(eng, "s1"), SL_HELD);
    t_release(eng, 60, "s1");
    t_claim(eng, 100, "id=s2 s:q"); /* 99 ms: passed */
    assert_int_equal(t_state(eng, "s2"), SL_HELD);
    t_release(eng, 100, "s2");
    t_claim(eng, 101, "id=s3 s:q"); /* 100 ms: its slots are kept */
    assert_int_equal(t_state(eng, "s3"), SL_PENDING);
    size_t lock = 9;
    assert_int_equal(sl_claim_main_rule(eng, t_find(eng, "s3"), &lock), SL_RULE_BEHIND);
    sl_why w;
    assert_int_equal(sl_claim_why(eng, t_find(eng, "s3"), &w, 1), 1);
    assert_int_equal(w.rule, SL_RULE_BEHIND);
    assert_true(w.kept);
    assert_string_equal(t_id(w.ahead[0]), "big");
    t_release(eng, 110, "h1");
    assert_int_equal(t_state(eng, "s3"), SL_PENDING);
    t_release(eng, 120, "h2");
    assert_int_equal(t_state(eng, "big"), SL_HELD);
    assert_int_equal(t_state(eng, "s3"), SL_PENDING);
    t_release(eng, 130, "big");
    assert_int_equal(t_state(eng, "s3"), SL_HELD);
    t_free(eng);
}

/* The barrier leaves with its claim: a first waiter that times out lets
 * the small ones behind it in at that moment. 0 is no bound. */
static void skip_barrier_leaves_with_its_claim(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_sem_opts o;
    sl_sem_opts_default(&o, 2);
    o.strategy = SL_SKIP;
    o.overtake_ms = 10;
    sl_error err;
    assert_int_equal(sl_sem_configure(eng, "q", &o, 0, &err), 0);
    t_claim(eng, 0, "id=h s:q");
    t_claim(eng, 0, "id=big s:q*2 timeout=50");
    t_claim(eng, 20, "id=s s:q"); /* big has waited 20 >= 10 */
    assert_int_equal(t_state(eng, "s"), SL_PENDING);
    t_events(eng);
    sl_engine_advance(eng, 50);
    assert_int_equal(t_state(eng, "big"), SL_TIMED_OUT);
    assert_int_equal(t_state(eng, "s"), SL_HELD);
    assert_string_equal(t_events(eng), "claim.timed_out:big claim.acquired:s");
    t_release(eng, 60, "s");
    /* overtake 0: the plain first fit, however long the first one waits. */
    o.overtake_ms = 0;
    assert_int_equal(sl_sem_configure(eng, "q", &o, 60, &err), 0);
    t_claim(eng, 60, "id=big2 s:q*2");
    t_claim(eng, 10000, "id=s2 s:q");
    assert_int_equal(t_state(eng, "s2"), SL_HELD);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strict_no_overtaking),
        cmocka_unit_test(strict_reserves_for_blocked_waiter),
        cmocka_unit_test(strict_behind_blocked_until_room),
        cmocka_unit_test(strict_weighted_all_or_none),
        cmocka_unit_test(skip_first_fit),
        cmocka_unit_test(skip_passes_blocked_claims),
        cmocka_unit_test(skip_lowered_limit_admits_nobody),
        cmocka_unit_test(multi_lock_granted_at_once),
        cmocka_unit_test(positions_per_lock),
        cmocka_unit_test(global_order),
        cmocka_unit_test(order_same_on_every_lock),
        cmocka_unit_test(raise_limit_grants_in_same_call),
        cmocka_unit_test(lower_limit_revokes_nobody),
        cmocka_unit_test(limit_zero_pauses),
        cmocka_unit_test(lowered_below_claim_keeps_place),
        cmocka_unit_test(strategy_change_keeps_waiters),
        cmocka_unit_test(refuse_same_lock_twice),
        cmocka_unit_test(refuse_mutex_slots),
        cmocka_unit_test(refuse_slots_above_limit),
        cmocka_unit_test(refuse_unknown_semaphore),
        cmocka_unit_test(refuse_duplicate_id),
        cmocka_unit_test(refuse_malformed),
        cmocka_unit_test(refuse_too_many_locks),
        cmocka_unit_test(refuse_bad_names),
        cmocka_unit_test(lock_views_and_listings),
        cmocka_unit_test(against_model),
        cmocka_unit_test(skip_overtake_limit),
        cmocka_unit_test(skip_barrier_leaves_with_its_claim),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
