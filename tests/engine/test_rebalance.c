/* test_rebalance.c - the rebalanced strategy (rebalance.c), per docs/engine.md and
 * docs/engine.md: quotas floor(limit / K) plus one for the limit mod K keys
 * whose oldest waiters are oldest (keys with no waiter rank last); free slots
 * to the oldest waiter of a key below its quota, else to the oldest waiter
 * of all (no slot idles while someone waits); quotas count slots; priority
 * ignored; claims without a key share one key; the claim chosen is not
 * overtaken while it waits for another lock; the lock's listing is the order
 * of choice; why's `quota` rule. Ends with the issue's scenario: limit 55,
 * keys J and K, shares converging to 28/27 as holders leave.
 *
 * Every expected number below is worked out from those rules in the
 * comments next to it, or (against_model) by a model of the rules. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

/* ---- helpers --------------------------------------------------------------- */

static const sl_lock *lock_of(sl_engine *eng, const char *name)
{
    sl_lock_view v;
    const sl_lock *l = NULL;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, name, &v, &l), 0);
    assert_non_null(l);
    return l;
}

static void view_of(sl_engine *eng, const char *name, sl_lock_view *out)
{
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, name, out, NULL), 0);
}

/* The lock's waiters in its order of choice, "id id ..."; checks that the
 * listing's positions count from 1 and agree with each claim's position. */
static const char *waiters(sl_engine *eng, const char *name)
{
    static char buf[4096];
    sl_waiter_view w[64];
    size_t n = sl_lock_waiters(eng, lock_of(eng, name), 0, w, 64);
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(w[i].position, i + 1);
        const char *id = t_id(w[i].claim);
        for (size_t k = 0; k < 8; k++) {
            sl_claim_lock_view lv;
            sl_claim_view cv;
            sl_claim_get(w[i].claim, &cv);
            if (k >= cv.nlocks)
                break;
            sl_claim_lock_get(eng, w[i].claim, k, &lv);
            if (strcmp(lv.key + 4, name) == 0 && lv.kind == SL_KIND_SEMAPHORE)
                assert_int_equal(lv.position, i + 1);
        }
        int k = snprintf(buf + len, sizeof(buf) - len, "%s%s", i ? " " : "", id);
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

/* Slots held on the lock by claims of rebalance key `key` (NULL: no key). */
static uint64_t key_held(sl_engine *eng, const char *name, const char *key)
{
    const sl_lock *l = lock_of(eng, name);
    sl_holder_view h[64];
    uint64_t sum = 0;
    size_t off = 0, n;
    while ((n = sl_lock_holders(l, off, h, 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            sl_claim_view v;
            sl_claim_get(h[i].claim, &v);
            bool same = key ? (v.rebalance_key && strcmp(v.rebalance_key, key) == 0)
                            : v.rebalance_key == NULL;
            if (same)
                sum += h[i].slots;
        }
        off += n;
    }
    return sum;
}

/* ---- the extra slot -------------------------------------------------------- */

/* Holders A 2, B 1, C 1 on a lock of 4, then waiters a, b, c (in that age
 * order) of keys A, B, C. K = 3. */
static sl_engine *three_keys(const char *order)
{
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 4, SL_REBALANCED);
    t_claim(eng, 1, "id=ah1 key=A s:R");
    t_claim(eng, 2, "id=ah2 key=A s:R");
    t_claim(eng, 3, "id=bh key=B s:R"); /* K=2: quota 2 each, B has 0 */
    t_claim(eng, 4, "id=ch key=C s:R"); /* K=3: 1 left, C the only one waiting */
    assert_string_equal(t_with_state(eng, SL_HELD), "ah1 ah2 bh ch");
    char spec[64];
    for (int i = 0; order[i]; i++) {
        snprintf(spec, sizeof(spec), "id=%c key=%c s:R", order[i], order[i] - 'a' + 'A');
        t_claim(eng, 10 + i, spec);
    }
    (void)t_events(eng);
    return eng;
}

/* limit 5, K 3: floor 1 each, and the 5 mod 3 = 2 extra slots go to the two
 * keys whose oldest waiters are oldest: A (a) and B (b). A holds 2 = its
 * quota 2; B holds 1 < 2; C holds 1 = its quota 1. So the slot the raise
 * frees goes to b, though a is older. */
static void extra_slots_to_oldest_waiting_keys(void **state)
{
    (void)state;
    sl_engine *eng = three_keys("abc");
    /* At limit 4 (one extra slot, A's): nobody is below quota, so a (oldest)
     * first; with A out of the walk, B has the oldest waiter and the extra:
     * b; then C, alone, has it: c. */
    assert_string_equal(waiters(eng, "R"), "a b c");
    sl_why wa = why_of(eng, "a", 0);
    assert_int_equal(wa.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(wa.quota, 2);
    assert_int_equal(wa.key_used, 2);
    sl_why wb = why_of(eng, "b", 0);
    assert_int_equal(wb.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(wb.quota, 1);
    assert_int_equal(wb.key_used, 1);

    t_sem(eng, 20, "R", 5, SL_REBALANCED);
    assert_string_equal(t_events(eng), "semaphore.updated:R claim.acquired:b");
    /* Left: a (A 2, quota 2) and c (C 1, quota 2: C's waiter is now the
     * second oldest of the waiting keys; B, with none, ranks last). */
    assert_string_equal(waiters(eng, "R"), "c a");
    wa = why_of(eng, "a", 0);
    assert_int_equal(wa.rule, SL_RULE_QUOTA);
    assert_int_equal(wa.quota, 2);
    assert_int_equal(wa.key_used, 2);
    assert_int_equal(wa.position, 2);
    assert_int_equal(wa.nshown, 1);
    assert_string_equal(t_id(wa.ahead[0]), "c");
    sl_why wc = why_of(eng, "c", 0);
    assert_int_equal(wc.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(wc.quota, 2);
    assert_int_equal(wc.key_used, 1);
    assert_int_equal(wc.position, 1);

    t_release(eng, 21, "bh");
    assert_string_equal(t_events(eng), "claim.released:bh claim.acquired:c");
    t_release(eng, 22, "ah1");
    assert_string_equal(t_events(eng), "claim.released:ah1 claim.acquired:a");
    t_free(eng);
}

/* The same with c older than b: the extra slots go to A and C, so the raise
 * lets c in (C 1 < 2) while b (B 1 = quota 1) waits. */
static void extra_slots_follow_waiter_age(void **state)
{
    (void)state;
    sl_engine *eng = three_keys("acb");
    assert_string_equal(waiters(eng, "R"), "a c b");
    t_sem(eng, 20, "R", 5, SL_REBALANCED);
    assert_string_equal(t_events(eng), "semaphore.updated:R claim.acquired:c");
    assert_string_equal(waiters(eng, "R"), "b a");
    assert_int_equal(why_of(eng, "a", 0).rule, SL_RULE_QUOTA);
    t_free(eng);
}

/* A key holding slots but waiting for none ranks after the waiting keys for
 * the extra slots, however old its holders. */
static void keys_without_waiters_rank_last(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 4, SL_REBALANCED);
    t_claim(eng, 1, "id=h1 key=H s:R"); /* oldest of all, key H */
    t_claim(eng, 2, "id=a1 key=A s:R");
    t_claim(eng, 3, "id=a2 key=A s:R");
    t_claim(eng, 4, "id=b1 key=B s:R");
    t_claim(eng, 10, "id=a3 key=A s:R");
    t_claim(eng, 11, "id=b2 key=B s:R");
    assert_string_equal(t_with_state(eng, SL_HELD), "h1 a1 a2 b1");
    (void)t_events(eng);
    /* limit 5, K 3: the 2 extra slots go to A and B (they wait), not H:
     * quotas A 2, B 2, H 1. B holds 1 < 2: b2 first. */
    t_sem(eng, 20, "R", 5, SL_REBALANCED);
    assert_string_equal(t_events(eng), "semaphore.updated:R claim.acquired:b2");
    assert_int_equal(key_held(eng, "R", "H"), 1);
    assert_int_equal(key_held(eng, "R", "A"), 2);
    assert_int_equal(key_held(eng, "R", "B"), 2);
    t_free(eng);
}

/* ---- choice of the next claim ---------------------------------------------- */

/* Quotas count slots, not claims: A holds one claim of 3 slots, above its
 * quota of 2, so B's newer waiter goes before A's older one. */
static void quota_counts_slots(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 4, SL_REBALANCED);
    t_claim(eng, 1, "id=a1 key=A s:R*3");
    t_claim(eng, 2, "id=b1 key=B s:R");
    t_claim(eng, 3, "id=a2 key=A s:R");
    t_claim(eng, 4, "id=b2 key=B s:R");
    assert_string_equal(t_with_state(eng, SL_HELD), "a1 b1");
    assert_string_equal(waiters(eng, "R"), "b2 a2");
    sl_why w = why_of(eng, "a2", 0);
    assert_int_equal(w.rule, SL_RULE_QUOTA);
    assert_int_equal(w.quota, 2);
    assert_int_equal(w.key_used, 3);
    (void)t_events(eng);
    t_release(eng, 5, "b1");
    assert_string_equal(t_events(eng), "claim.released:b1 claim.acquired:b2");
    t_release(eng, 6, "a1");
    assert_string_equal(t_events(eng), "claim.released:a1 claim.acquired:a2");
    t_free(eng);
}

/* Work-conserving: with no key below its quota waiting, a free slot goes to
 * the oldest waiter of all, even above its key's quota; a key below its
 * quota that then arrives goes first (`quota` for the others). */
static void work_conserving(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 4, SL_REBALANCED);
    t_claim(eng, 1, "id=b1 key=B s:R");
    t_claim(eng, 2, "id=b2 key=B s:R");
    t_claim(eng, 3, "id=a1 key=A s:R"); /* K=2, quota 2: A 0 < 2 */
    t_claim(eng, 4, "id=a2 key=A s:R");
    t_claim(eng, 5, "id=a3 key=A s:R");
    t_claim(eng, 6, "id=a4 key=A s:R");
    assert_string_equal(t_with_state(eng, SL_HELD), "b1 b2 a1 a2");
    /* A is at its quota, but nobody below quota waits: not `quota`. */
    sl_why w = why_of(eng, "a3", 0);
    assert_int_equal(w.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w.quota, 2);
    assert_int_equal(w.key_used, 2);
    (void)t_events(eng);

    /* B still holds 1 (K stays 2); the slot goes to a3, A now 3 > 2. */
    t_release(eng, 7, "b1");
    assert_string_equal(t_events(eng), "claim.released:b1 claim.acquired:a3");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "R"), 4);
    assert_int_equal(key_held(eng, "R", "A"), 3);

    /* b3 (B 1 < 2) goes ahead of the older a4 (A 3 >= 2). */
    t_claim(eng, 8, "id=b3 key=B s:R");
    assert_string_equal(waiters(eng, "R"), "b3 a4");
    w = why_of(eng, "a4", 0);
    assert_int_equal(w.rule, SL_RULE_QUOTA);
    assert_int_equal(w.quota, 2);
    assert_int_equal(w.key_used, 3);
    assert_int_equal(w.position, 2);
    assert_int_equal(w.nahead, 1);
    assert_string_equal(t_id(w.ahead[0]), "b3");
    w = why_of(eng, "b3", 0);
    assert_int_equal(w.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w.key_used, 1);
    assert_int_equal(w.position, 1);
    (void)t_events(eng);
    t_release(eng, 9, "a1");
    assert_string_equal(t_events(eng), "claim.released:a1 claim.acquired:b3");
    t_release(eng, 10, "a2");
    assert_string_equal(t_events(eng), "claim.released:a2 claim.acquired:a4");
    t_free(eng);
}

/* Priority plays no part on a rebalanced lock: the oldest goes first, while
 * the engine's total order (for strict and skip locks) still puts it first. */
static void priority_ignored(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 1, SL_REBALANCED);
    t_claim(eng, 1, "id=h key=A s:R");
    t_claim(eng, 10, "id=w1 key=A s:R");
    t_claim(eng, 20, "id=w2 key=A s:R prio=9");
    t_claim(eng, 30, "id=w3 key=B s:R prio=-5 created=5");
    /* K 2, limit 1: quota 0 for A and 1 for B (w3, created 5, is the oldest
     * waiter). B is below its quota: w3, then the rest oldest first. */
    assert_string_equal(waiters(eng, "R"), "w3 w1 w2");
    assert_string_equal(t_id(sl_pending_next(eng, NULL)), "w2");
    (void)t_events(eng);
    t_release(eng, 40, "h");
    assert_string_equal(t_events(eng), "claim.released:h claim.acquired:w3");
    t_release(eng, 41, "w3");
    assert_string_equal(t_events(eng), "claim.released:w3 claim.acquired:w1");
    t_release(eng, 42, "w1");
    assert_string_equal(t_events(eng), "claim.released:w1 claim.acquired:w2");
    t_free(eng);
}

/* Claims without a key share one key "": with n1..n3 holding 3 slots as one
 * key, B (1 slot) is below the quota of 2 and goes first. Were each keyless
 * claim its own key (K 5, quotas 1), n4's key (0) would. */
static void keyless_claims_share_a_key(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 4, SL_REBALANCED);
    t_claim(eng, 1, "id=n1 s:R");
    t_claim(eng, 2, "id=n2 s:R");
    t_claim(eng, 3, "id=n3 s:R");
    t_claim(eng, 4, "id=b1 key=B s:R"); /* K 2, quota 2: B 0 < 2 */
    t_claim(eng, 5, "id=b2 key=B s:R");
    t_claim(eng, 6, "id=n4 s:R");
    assert_string_equal(t_with_state(eng, SL_HELD), "n1 n2 n3 b1");
    assert_string_equal(waiters(eng, "R"), "b2 n4");
    sl_why w = why_of(eng, "n4", 0);
    assert_int_equal(w.rule, SL_RULE_QUOTA);
    assert_int_equal(w.quota, 2);
    assert_int_equal(w.key_used, 3);
    assert_int_equal(key_held(eng, "R", NULL), 3);
    (void)t_events(eng);
    t_release(eng, 7, "n1");
    assert_string_equal(t_events(eng), "claim.released:n1 claim.acquired:b2");
    t_release(eng, 8, "n2");
    assert_string_equal(t_events(eng), "claim.released:n2 claim.acquired:n4");
    t_free(eng);
}

/* The claim chosen on the lock is not overtaken while it waits for another
 * lock: its slots stay reserved in the order of choice, so a claim behind it
 * gets in only while there is room for both. */
static void chosen_claim_not_overtaken(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 2, SL_REBALANCED);
    t_claim(eng, 1, "id=hx m:X");
    t_claim(eng, 2, "id=a key=A s:R m:X");
    assert_int_equal(why_of(eng, "a", 0).rule, SL_RULE_OTHER_LOCK);
    /* K 2, quota 1 each: a (A 0 < 1) then b (B 0 < 1); 1 + 1 fit in 2. */
    t_claim(eng, 3, "id=b key=B s:R");
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    /* a (A 0 < 1) still first; c (B 1 = quota) after it: 1 + 1 > 1 free. */
    t_claim(eng, 4, "id=c key=B s:R");
    assert_int_equal(t_state(eng, "c"), SL_PENDING);
    assert_string_equal(waiters(eng, "R"), "a c");
    sl_why w = why_of(eng, "c", 0);
    assert_int_equal(w.rule, SL_RULE_QUOTA);
    assert_int_equal(w.quota, 1);
    assert_int_equal(w.key_used, 1);
    assert_int_equal(w.position, 2);
    assert_string_equal(t_id(w.ahead[0]), "a");
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "R"), 1);
    assert_string_equal(t_events(eng),
                        "semaphore.updated:R claim.queued:hx claim.acquired:hx "
                        "claim.queued:a claim.waiting:a claim.queued:b claim.acquired:b "
                        "claim.queued:c claim.waiting:c");
    t_release(eng, 5, "hx");
    assert_string_equal(t_events(eng), "claim.released:hx claim.acquired:a");
    t_release(eng, 6, "b");
    assert_string_equal(t_events(eng), "claim.released:b claim.acquired:c");
    t_free(eng);
}

/* Slots are reserved along the order of choice: B's 2-slot waiter comes
 * first (B below quota) and does not fit in the 1 free slot; A's 1-slot
 * waiter behind it would fit alone but waits. Both go in at one release. */
static void reservation_in_order_of_choice(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 4, SL_REBALANCED);
    t_claim(eng, 1, "id=ah key=A s:R*2");
    t_claim(eng, 2, "id=bh key=B s:R");
    t_claim(eng, 3, "id=b2 key=B s:R*2");
    t_claim(eng, 4, "id=a2 key=A s:R");
    assert_string_equal(waiters(eng, "R"), "b2 a2");
    sl_why w = why_of(eng, "b2", 0);
    assert_int_equal(w.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w.quota, 2);
    assert_int_equal(w.key_used, 1);
    w = why_of(eng, "a2", 0);
    assert_int_equal(w.rule, SL_RULE_QUOTA);
    assert_int_equal(w.key_used, 2);
    (void)t_events(eng);
    t_release(eng, 5, "ah");
    assert_string_equal(t_events(eng), "claim.released:ah claim.acquired:b2 claim.acquired:a2");
    assert_int_equal(key_held(eng, "R", "B"), 3);
    assert_int_equal(key_held(eng, "R", "A"), 1);
    t_free(eng);
}

/* The listing pages through the order of choice with positions from the
 * offset; K shrinks when a key's last claim leaves, and quotas grow. */
static void listing_pages_and_key_count(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 3, SL_REBALANCED);
    t_claim(eng, 1, "id=z1 key=Z s:R");
    t_claim(eng, 2, "id=z2 key=Z s:R");
    t_claim(eng, 3, "id=z3 key=Z s:R");
    t_claim(eng, 4, "id=a1 key=A s:R");
    t_claim(eng, 5, "id=a2 key=A s:R");
    t_claim(eng, 6, "id=b1 key=B s:R");
    t_claim(eng, 7, "id=b2 key=B s:R");
    /* K 3, quota 1 each. A (a1 oldest) and B are below: a1, b1; then nobody
     * is below: the oldest, a2, b2. */
    assert_string_equal(waiters(eng, "R"), "a1 b1 a2 b2");
    sl_waiter_view wv[4];
    assert_int_equal(sl_lock_waiters(eng, lock_of(eng, "R"), 2, wv, 4), 2);
    assert_string_equal(t_id(wv[0].claim), "a2");
    assert_int_equal(wv[0].position, 3);
    assert_string_equal(t_id(wv[1].claim), "b2");
    assert_int_equal(wv[1].position, 4);
    assert_int_equal(sl_lock_waiters(eng, lock_of(eng, "R"), 1, wv, 1), 1);
    assert_string_equal(t_id(wv[0].claim), "b1");
    assert_int_equal(wv[0].position, 2);
    assert_int_equal(sl_lock_waiters(eng, lock_of(eng, "R"), 4, wv, 4), 0);
    (void)t_events(eng);

    t_release(eng, 10, "z1");
    assert_string_equal(t_events(eng), "claim.released:z1 claim.acquired:a1");
    t_release(eng, 11, "z2");
    assert_string_equal(t_events(eng), "claim.released:z2 claim.acquired:b1");
    /* Z leaves: K 2, quotas 1 + the extra for A (a2 older than b2). */
    t_release(eng, 12, "z3");
    assert_string_equal(t_events(eng), "claim.released:z3 claim.acquired:a2");
    /* Now only B waits, so the extra slot is B's: quota 2, B holds 1, and
     * b2 waits only for a free slot. */
    sl_why w = why_of(eng, "b2", 0);
    assert_int_equal(w.quota, 2);
    assert_int_equal(w.key_used, 1);
    assert_int_equal(w.rule, SL_RULE_AT_LIMIT);
    t_release(eng, 13, "a1");
    assert_string_equal(t_events(eng), "claim.released:a1 claim.acquired:b2");
    t_free(eng);
}

/* ---- the issue's scenario -------------------------------------------------- */

/* J's waiters in age order: J56..J100, then J601..J700; K's: K101..K600. */
static int j_waiter(size_t i)
{
    return i < 45 ? 56 + (int)i : 601 + (int)(i - 45);
}

/* Slots J holds after release r (1-based), while J still has waiters:
 * r <= 27: each release frees a J slot (J1, J2, ... in grant order) and K,
 *   below its quota 27, takes it: J 55 - r. (The 55 mod 2 extra slot is J's:
 *   its oldest waiter, J56, is older than K's, K101.)
 * 28..99: J at 27 is below its quota 28: each J slot freed goes back to J
 *   (J56..J100) and each K slot back to K: J 28, K 27.
 * 100..311: J's last first-batch waiter, J100, went in at r=99; J's oldest
 *   waiter is now J601, newer than all of K's, so the extra slot is K's:
 *   at r=100 the J slot freed goes to K (K 27 < 28), then each key gets back
 *   what it frees: J 27, K 28. J's last waiter, J700, goes in at r=311 (the
 *   grants from r=101 repeat the holders' key pattern of period 55: J 10,
 *   K 27, J 17, K 1; 3 periods give J601..J681, then 10 + 9 more). */
static int j_expected(int r)
{
    if (r <= 27)
        return 55 - r;
    if (r <= 99)
        return 28;
    return 27;
}

static void issue_scenario(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "R", 55, SL_REBALANCED);
    (void)t_events(eng);
    char spec[96], want[160];
    /* J submits 100, K 500, J 100, 1 ms apart: created = arrival = c. The
     * first 55 of J find the lock free and no other key: K is 1, quota 55,
     * each goes in on arrival; everyone after waits. */
    for (int c = 1; c <= 700; c++) {
        char key = (c <= 100 || c > 600) ? 'J' : 'K';
        snprintf(spec, sizeof(spec), "id=%c%d key=%c created=%d s:R", key, c, key, c);
        t_claim(eng, c, spec);
        if (c <= 55)
            snprintf(want, sizeof(want), "claim.queued:%c%d claim.acquired:%c%d", key, c, key, c);
        else
            snprintf(want, sizeof(want), "claim.queued:%c%d claim.waiting:%c%d", key, c, key, c);
        assert_string_equal(t_events(eng), want);
    }
    sl_lock_view v;
    view_of(eng, "R", &v);
    assert_int_equal(v.used, 55);
    assert_int_equal(v.nholders, 55);
    assert_int_equal(v.npending, 645);
    assert_int_equal(key_held(eng, "R", "J"), 55);

    /* The order of choice: quotas J 28 (extra: J56 older than K101), K 27.
     * K is below: K101..K127 (27); nobody below: oldest, J56..J100 (45);
     * then K's waiter K128 is older than J601, so the extra is K's, K at 27
     * is below 28: K128, and K129..K600 as oldest; last J601..J700. */
    static sl_waiter_view all[700];
    assert_int_equal(sl_lock_waiters(eng, lock_of(eng, "R"), 0, all, 700), 645);
    struct {
        size_t pos;
        const char *id;
    } spots[] = {{1, "K101"},  {27, "K127"},  {28, "J56"},   {72, "J100"},
                 {73, "K128"}, {545, "K600"}, {546, "J601"}, {645, "J700"}};
    for (size_t i = 0; i < sizeof(spots) / sizeof(spots[0]); i++) {
        assert_int_equal(all[spots[i].pos - 1].position, spots[i].pos);
        assert_string_equal(t_id(all[spots[i].pos - 1].claim), spots[i].id);
    }
    assert_int_equal(t_position(eng, "J56", 0), 28);
    assert_int_equal(t_position(eng, "K128", 0), 73);
    sl_why w = why_of(eng, "J56", 0);
    assert_int_equal(w.rule, SL_RULE_QUOTA);
    assert_int_equal(w.quota, 28);
    assert_int_equal(w.key_used, 55);
    assert_int_equal(w.nahead, 27);
    assert_int_equal(w.nshown, SL_WHY_AHEAD_MAX);
    assert_string_equal(t_id(w.ahead[0]), "K101");
    w = why_of(eng, "K101", 0);
    assert_int_equal(w.rule, SL_RULE_AT_LIMIT);
    assert_int_equal(w.quota, 27);
    assert_int_equal(w.key_used, 0);

    /* Release the oldest holder, one at a time, 1 ms apart. */
    size_t jn = 0, kn = 0; /* next waiter of J (j_waiter) and of K (K101 + kn) */
    int jheld = 55;
    for (int r = 1; r <= 700; r++) {
        sl_holder_view h;
        assert_int_equal(sl_lock_holders(lock_of(eng, "R"), 0, &h, 1), 1);
        char victim[16];
        snprintf(victim, sizeof(victim), "%s", t_id(h.claim));
        int victim_j = victim[0] == 'J';
        t_release(eng, 1000 + r, victim);

        char got[16] = "";
        if (r <= 645) {
            /* Someone waited: exactly one claim goes in and no slot idles. */
            bool to_j;
            if (jn < 145) {
                int exp = j_expected(r);
                to_j = exp == jheld - victim_j + 1;
                if (!to_j)
                    assert_int_equal(exp, jheld - victim_j);
            } else {
                to_j = false; /* J waits for nothing: K takes every slot */
            }
            if (to_j)
                snprintf(got, sizeof(got), "J%d", j_waiter(jn++));
            else
                snprintf(got, sizeof(got), "K%d", 101 + (int)kn++);
            jheld += (to_j ? 1 : 0) - victim_j;
            snprintf(want, sizeof(want), "claim.released:%s claim.acquired:%s", victim, got);
        } else {
            jheld -= victim_j;
            snprintf(want, sizeof(want), "claim.released:%s", victim);
        }
        assert_string_equal(t_events(eng), want);
        view_of(eng, "R", &v);
        assert_int_equal(v.used, r <= 645 ? 55 : 700 - r);
        assert_int_equal(v.npending, r <= 645 ? 645 - r : 0);
        assert_int_equal(key_held(eng, "R", "J"), (uint64_t)jheld);
        assert_int_equal(key_held(eng, "R", "K"), v.used - (uint64_t)jheld);

        /* Converged while both keys wait: 28/27, the 28 with the key whose
         * oldest waiter is oldest (J until r=99, K from r=100). */
        if (r >= 27 && r <= 310) {
            assert_true(jn < 145 && kn < 500);
            assert_int_equal(jheld, r <= 99 ? 28 : 27);
        }
        /* The milestones worked out above. */
        if (r == 27)
            assert_string_equal(got, "K127");
        if (r == 28)
            assert_string_equal(got, "J56");
        if (r == 99)
            assert_string_equal(got, "J100");
        if (r == 100)
            assert_string_equal(got, "K155");
        if (r == 101)
            assert_string_equal(got, "J601");
        if (r == 310)
            assert_int_equal(jn, 144);
        if (r == 311) {
            assert_string_equal(got, "J700");
            assert_int_equal(jheld, 27);
            assert_int_equal(kn, 166); /* K101..K266 */
        }
        if (r == 645)
            assert_string_equal(got, "K600");
    }
    assert_int_equal(jheld, 0);
    sl_engine_stats st;
    sl_engine_stats_get(eng, &st);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.held, 0);
    assert_int_equal(st.grants, 700);
    t_free(eng);
}

/* ---- against a model of the rules ------------------------------------------ */

/* An independent model of docs/engine.md's rebalanced lock: the order of
 * choice computed from scratch from the claims, and granting as the page
 * describes it (collect the prefix of that order that fits in the free
 * slots, try it in the total order, each against the state the grants
 * before it left, repeat until nothing more is granted); strict and skip
 * for the walks that change strategy. A seeded random walk of arrivals
 * (random keys, slots, priorities and created times), releases,
 * withdrawals, limit and strategy changes must leave the engine and the
 * model agreeing on every claim's state and on the lock's listing. */
#define M_MAX 600
#define M_KEYS 5 /* index 0: no key; 1..4: keys K1..K4 */

typedef struct mclaim {
    char id[8];
    int key;
    uint32_t slots;
    int32_t prio;
    int64_t created;
    uint64_t arrival;
    sl_state state;
} mclaim;

typedef struct model {
    mclaim c[M_MAX];
    size_t n;
    uint32_t limit;
    sl_strategy strategy;
} model;

static int m_age_cmp(const mclaim *a, const mclaim *b)
{
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    return a->arrival < b->arrival ? -1 : a->arrival > b->arrival;
}

static int m_total_cmp(const mclaim *a, const mclaim *b)
{
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    return m_age_cmp(a, b);
}

static uint64_t m_used(const model *m)
{
    uint64_t u = 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->c[i].state == SL_HELD)
            u += m->c[i].slots;
    return u;
}

/* The lock's queue: the pending claims in the total order (strict, skip) or
 * the order of choice (rebalanced), as indexes into m->c; returns how many. */
static size_t m_order(const model *m, size_t *out)
{
    if (m->strategy != SL_REBALANCED) {
        size_t n = 0;
        for (size_t i = 0; i < m->n; i++) {
            if (m->c[i].state != SL_PENDING)
                continue;
            size_t j = n++;
            while (j > 0 && m_total_cmp(&m->c[i], &m->c[out[j - 1]]) < 0) {
                out[j] = out[j - 1];
                j--;
            }
            out[j] = i;
        }
        return n;
    }
    uint64_t held[M_KEYS] = {0};
    bool present[M_KEYS] = {false};
    size_t queue[M_KEYS][M_MAX], qn[M_KEYS] = {0}, cur[M_KEYS] = {0};
    for (size_t i = 0; i < m->n; i++) {
        const mclaim *c = &m->c[i];
        if (c->state == SL_HELD) {
            held[c->key] += c->slots;
            present[c->key] = true;
        } else if (c->state == SL_PENDING) {
            present[c->key] = true;
            /* insertion in age order */
            size_t j = qn[c->key]++;
            while (j > 0 && m_age_cmp(c, &m->c[queue[c->key][j - 1]]) < 0) {
                queue[c->key][j] = queue[c->key][j - 1];
                j--;
            }
            queue[c->key][j] = i;
        }
    }
    uint64_t k = 0;
    for (int i = 0; i < M_KEYS; i++)
        k += present[i];
    if (k == 0)
        return 0;
    uint64_t base = m->limit / k, extra = m->limit % k;
    size_t n = 0;
    for (;;) {
        /* waiting keys ranked by their oldest remaining waiter */
        int rank[M_KEYS];
        size_t nr = 0;
        for (int i = 0; i < M_KEYS; i++) {
            if (cur[i] == qn[i])
                continue;
            size_t j = nr++;
            while (j > 0 && m_age_cmp(&m->c[queue[i][cur[i]]],
                                      &m->c[queue[rank[j - 1]][cur[rank[j - 1]]]]) < 0) {
                rank[j] = rank[j - 1];
                j--;
            }
            rank[j] = i;
        }
        if (nr == 0)
            return n;
        int pickk = rank[0];
        for (size_t r = 0; r < nr; r++) {
            if (held[rank[r]] < base + (r < extra ? 1 : 0)) {
                pickk = rank[r];
                break;
            }
        }
        size_t ci = queue[pickk][cur[pickk]++];
        held[pickk] += m->c[ci].slots;
        out[n++] = ci;
    }
}

static bool m_admissible(const model *m, size_t ci)
{
    static size_t ord[M_MAX];
    size_t n = m_order(m, ord);
    uint64_t used = m_used(m), before = 0;
    uint64_t free = m->limit > used ? m->limit - used : 0;
    if (m->strategy == SL_SKIP)
        return m->c[ci].slots <= free;
    for (size_t i = 0; i < n; i++) {
        if (ord[i] == ci)
            return before + m->c[ci].slots <= free;
        before += m->c[ord[i]].slots;
    }
    return false;
}

static void m_settle(model *m)
{
    static size_t ord[M_MAX], cand[M_MAX];
    for (;;) {
        size_t n = m_order(m, ord), nc = 0;
        uint64_t used = m_used(m), sum = 0;
        uint64_t free = m->limit > used ? m->limit - used : 0;
        for (size_t i = 0; i < n; i++) {
            if (m->strategy == SL_SKIP) { /* every waiter that fits alone */
                if (m->c[ord[i]].slots <= free)
                    cand[nc++] = ord[i];
                continue;
            }
            if (sum + m->c[ord[i]].slots > free)
                break;
            sum += m->c[ord[i]].slots;
            cand[nc++] = ord[i];
        }
        if (nc == 0)
            return;
        for (size_t i = 1; i < nc; i++) /* insertion sort, total order */
            for (size_t j = i; j > 0 && m_total_cmp(&m->c[cand[j]], &m->c[cand[j - 1]]) < 0; j--) {
                size_t t = cand[j];
                cand[j] = cand[j - 1];
                cand[j - 1] = t;
            }
        bool any = false;
        for (size_t i = 0; i < nc; i++) {
            if (m->c[cand[i]].state == SL_PENDING && m_admissible(m, cand[i])) {
                m->c[cand[i]].state = SL_HELD;
                any = true;
            }
        }
        if (!any)
            return;
    }
}

static uint64_t rng_state;

static uint32_t rng(uint32_t n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)((rng_state >> 33) % n);
}

static void m_compare(sl_engine *eng, const model *m)
{
    static size_t ord[M_MAX];
    static sl_waiter_view w[M_MAX];
    for (size_t i = 0; i < m->n; i++)
        if (t_state(eng, m->c[i].id) != m->c[i].state)
            fail_msg("claim %s: engine %s, model %s", m->c[i].id,
                     sl_state_name(t_state(eng, m->c[i].id)), sl_state_name(m->c[i].state));
    size_t n = m_order(m, ord);
    assert_int_equal(sl_lock_waiters(eng, lock_of(eng, "R"), 0, w, M_MAX), n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(t_id(w[i].claim), m->c[ord[i]].id) != 0)
            fail_msg("position %zu: engine %s, model %s", i + 1, t_id(w[i].claim),
                     m->c[ord[i]].id);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "R"), m_used(m));
}

static void random_walk(uint64_t seed, int steps, bool strategies)
{
    static model m;
    memset(&m, 0, sizeof(m));
    rng_state = seed;
    sl_engine *eng = t_engine();
    m.limit = 1 + rng(6);
    m.strategy = SL_REBALANCED;
    t_sem(eng, 0, "R", m.limit, m.strategy);
    uint64_t arrival = 0;
    for (int step = 1; step <= steps; step++) {
        int64_t now = step;
        uint32_t op = rng(100);
        if (op < 50 && m.n < M_MAX) {
            mclaim *c = &m.c[m.n];
            snprintf(c->id, sizeof(c->id), "c%zu", m.n);
            c->key = (int)rng(M_KEYS);
            c->slots = 1 + rng(3);
            c->prio = (int32_t)rng(3) - 1;
            c->created = rng(4) == 0 ? now : (int64_t)rng((uint32_t)steps);
            char spec[128];
            if (c->key)
                snprintf(spec, sizeof(spec), "id=%s s:R*%u prio=%d created=%lld key=K%d", c->id,
                         c->slots, c->prio, (long long)c->created, c->key);
            else
                snprintf(spec, sizeof(spec), "id=%s s:R*%u prio=%d created=%lld", c->id, c->slots,
                         c->prio, (long long)c->created);
            if (m.limit > 0 && c->slots > m.limit) {
                assert_int_equal(t_claim_rc(eng, now, spec, NULL), SL_EINVAL);
                continue;
            }
            t_claim(eng, now, spec);
            c->arrival = ++arrival;
            c->state = SL_PENDING;
            m.n++;
        } else if (op < 90) {
            if (m.n == 0)
                continue;
            mclaim *c = &m.c[rng((uint32_t)m.n)];
            t_release(eng, now, c->id);
            if (c->state == SL_PENDING)
                c->state = SL_WITHDRAWN;
            else if (c->state == SL_HELD)
                c->state = SL_RELEASED;
        } else {
            if (op < 95 || !strategies)
                m.limit = rng(7);
            else
                m.strategy = (sl_strategy)rng(3);
            t_sem(eng, now, "R", m.limit, m.strategy);
        }
        m_settle(&m);
        m_compare(eng, &m);
        (void)t_events(eng);
    }
    t_free(eng);
}

static void against_model(void **state)
{
    (void)state;
    random_walk(1, 1000, false);
    random_walk(2, 1000, false);
    random_walk(42, 1000, false);
    /* This walk reaches a pass where trying the candidates in the total
     * order (priority first) grants differently from the order of choice. */
    random_walk(110, 1100, false);
    random_walk(20240601, 1000, false);
    /* The same with changes of strategy: the lock's claims are queued
     * again, and its holders counted per key or not. */
    random_walk(3, 1000, true);
    random_walk(77, 1000, true);
    random_walk(31337, 1000, true);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(extra_slots_to_oldest_waiting_keys),
        cmocka_unit_test(extra_slots_follow_waiter_age),
        cmocka_unit_test(keys_without_waiters_rank_last),
        cmocka_unit_test(quota_counts_slots),
        cmocka_unit_test(work_conserving),
        cmocka_unit_test(priority_ignored),
        cmocka_unit_test(keyless_claims_share_a_key),
        cmocka_unit_test(chosen_claim_not_overtaken),
        cmocka_unit_test(reservation_in_order_of_choice),
        cmocka_unit_test(listing_pages_and_key_count),
        cmocka_unit_test(issue_scenario),
        cmocka_unit_test(against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
