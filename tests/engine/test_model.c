/* test_model.c - a randomised model test: the engine against a reference.
 *
 * The reference below is deliberately naive: plain arrays, O(n^2) and worse,
 * every rule written the way docs/engine.md states it. Admission is plain
 * full passes over every waiter in the total order until one grants
 * nothing. The rebalanced order of choice is simulated step by step; timers
 * are found by scanning every claim.
 *
 * Random operation sequences (claims on random subsets of semaphores s0..s3
 * and mutexes m0..m2 with random slots, priority, created, rebalance key,
 * lease, timeout and group with cancel none/pending/in-progress; releases,
 * renewals, watches, operator cancels, clock jumps, limit and strategy
 * changes; requests the engine must refuse) run against both. After every
 * step the test compares every claim's view, every token, every lock's
 * used/token/limit, every queue position and the global pending order, and
 * checks invariants that need no reference (all-or-none, no overtaking on
 * strict locks, used within the limit, tokens dense and growing, terminal
 * states final); every few steps it drains the batch and checks the events
 * against the reference's, their sequence numbers and each claim's story.
 *
 * Reproducible: seeds 1..SL_MODEL_SEQS (default 1000), or SL_MODEL_SEED=n
 * for one; SL_MODEL_STEPS sets the steps per sequence (default 200);
 * SL_MODEL_COVERAGE=1 prints how often the interesting cases came up. A
 * failure prints the seed, the step, the last operations, then a shrunk
 * sequence of operations that still fails. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

#define SEQS_DEFAULT 1000
#define STEPS_DEFAULT 200
#define STEPS_MAX 1000
#define CLAIMS_MAX STEPS_MAX
#define EV_MAX (STEPS_MAX * 64)
#define CLOCKS_MAX 6 /* locks in one claim: 3 explicit, 1 duplicate, 1 group */
#define NEVER INT64_MAX
#define RETENTION_MS 3600000 /* engine default: ended claims readable 1 h */
#define GRACE_DEFAULT_MS 30000

/* The locks of the model: semaphores s0..s3 (configured by exact name),
 * mutexes m0..m2, and the two group locks: mutexes group/g0 and group/g1,
 * or semaphores configured by the pattern "group/" + "*" in some sequences. */
enum { NSEM = 4, NMTX = 3, NGRP = 2, NLK = NSEM + NMTX + NGRP, LK_GROUP = NSEM + NMTX };
enum { NKEYS = 3 }; /* rebalance keys: none (""), "J", "K" */

static const char *const lock_names[NLK] = {"s0", "s1", "s2",       "s3",      "m0",
                                            "m1", "m2", "group/g0", "group/g1"};
static const char *const group_names[NGRP] = {"g0", "g1"};
static const char *const key_names[NKEYS] = {NULL, "J", "K"};

/* ---- a small, fast PRNG (splitmix64) ----------------------------------- */

typedef struct rng {
    uint64_t s;
} rng;

static uint64_t rnd(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static int64_t rr(rng *r, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd(r) % (uint64_t)(hi - lo + 1));
}

static bool chance(rng *r, int percent)
{
    return rr(r, 0, 99) < percent;
}

/* ---- operations, as data so that a failure can be replayed and shrunk -- */

typedef enum { OP_CREATE, OP_RELEASE, OP_RENEW, OP_WATCH, OP_CANCEL, OP_CLOCK, OP_LIMIT } op_kind;

typedef struct mop {
    op_kind kind;
    int64_t dt; /* the clock moves by dt before the operation */
    bool drain; /* check and clear the batch of events afterwards */
    /* create */
    int nl;
    int lk[CLOCKS_MAX - 1];
    uint32_t slots[CLOCKS_MAX - 1];
    int32_t prio;
    bool has_created;
    int64_t created;
    int key;
    int group; /* -1: none */
    sl_cancel cancel;
    int64_t grace, lease, timeout;
    int dup_of; /* reuse the id of the claim op dup_of created (SL_ECONFLICT), or -1 */
    /* release, renew, watch, cancel: the claim created by op `target` */
    int target;
    int delta;
    sl_reason reason;
    /* limit: semaphore 0..3, or NSEM for the pattern "group/" + "*" */
    int sem;
    uint32_t limit;
    sl_strategy strategy;
    int64_t slease;
    int64_t sovertake; /* skip: the overtake limit, 0 = none */
} mop;

typedef struct params {
    uint64_t seed;
    bool sem_on[NSEM]; /* configured at the start */
    uint32_t limit[NSEM];
    sl_strategy strat[NSEM];
    int64_t lease[NSEM];
    int64_t overtake[NSEM];
    bool busy;    /* a profile with bigger rebalanced semaphores, more contention */
    bool grp_sem; /* group locks are semaphores configured by the pattern */
    uint32_t glimit;
    sl_strategy gstrat;
    int64_t glease, govertake;
} params;

/* ---- the reference ------------------------------------------------------ */

typedef struct rclaim {
    char id[16];
    sl_claim *eng; /* the engine's claim */
    sl_state state;
    sl_reason reason;
    int by; /* the claim that first superseded or revoked it, -1 */
    int32_t prio;
    int64_t created, arrived;
    uint64_t arrival, grant_seq;
    int key;
    int group;
    sl_cancel cancel;
    int64_t grace, lease, timeout, life, granted, revoke_at, ended;
    int watchers;
    int nl;
    int lk[CLOCKS_MAX];
    uint32_t slots[CLOCKS_MAX];
    uint64_t tok[CLOCKS_MAX];
} rclaim;

typedef struct rlock {
    bool configured; /* semaphores: has a configuration */
    uint32_t limit;
    sl_strategy strat;
    int64_t lease;
    int64_t overtake; /* skip: the first waiter's wait before it keeps its slots */
    uint64_t used, token;
} rlock;

typedef struct revent {
    sl_event_type type;
    int claim; /* -1 for semaphore events */
    int64_t time;
    sl_reason reason;
    const char *name;
    uint32_t limit;
    sl_strategy strat;
} revent;

typedef struct model {
    rlock lk[NLK];
    bool grp_sem;
    uint32_t glimit;
    sl_strategy gstrat;
    int64_t glease, govertake;
    int64_t now; /* the time of the admission pass */
    rclaim c[CLAIMS_MAX];
    int nc;
    int by_op[STEPS_MAX]; /* op index -> claim, -1 */
    uint64_t next_arrival, next_grant;
    size_t nev;        /* events in EV since the last drain */
} model;

static model M;
static revent EV[EV_MAX]; /* the events the engine must have emitted */

/* How often the interesting cases came up, printed at the end so that a
 * change to the generator that starves a rule shows. */
typedef struct coverage {
    uint64_t refused[6]; /* by -code */
    uint64_t ended[SL_CANCELED + 1];
    uint64_t grants[3];    /* grants on a lock, by strategy */
    uint64_t overtake[3];  /* ... while a waiter ahead in the total order still waits */
    uint64_t extra_passes; /* admission passes after the first that granted */
    uint64_t revoking, rerevoked, lowered_over;
    uint64_t barrier; /* a skip waiter that fits kept out by an overtake barrier */
} coverage;

static coverage COV;

static int age_cmp(const rclaim *a, const rclaim *b)
{
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    if (a->arrival != b->arrival)
        return a->arrival < b->arrival ? -1 : 1;
    return 0;
}

/* The one total order: priority descending, created, arrival. */
static int total_cmp(const rclaim *a, const rclaim *b)
{
    if (a->prio != b->prio)
        return a->prio > b->prio ? -1 : 1;
    return age_cmp(a, b);
}

static int slot_of(const rclaim *c, int L)
{
    for (int s = 0; s < c->nl; s++)
        if (c->lk[s] == L)
            return s;
    return -1;
}

static bool holding(const rclaim *c)
{
    return c->state == SL_HELD || c->state == SL_REVOKING;
}

static uint64_t free_of(const rlock *l)
{
    return l->limit > l->used ? l->limit - l->used : 0;
}

static void r_event(sl_event_type type, int claim, int64_t time, sl_reason reason)
{
    if (M.nev < EV_MAX)
        EV[M.nev] = (revent){type, claim, time, reason, NULL, 0, SL_STRICT};
    M.nev++; /* an overflow is reported at the next drain */
}

/* Inserts claim i into out[0..n) kept in the total order. */
static size_t insert_total(int *out, size_t n, int i)
{
    size_t j = n;
    while (j > 0 && total_cmp(&M.c[out[j - 1]], &M.c[i]) > 0) {
        out[j] = out[j - 1];
        j--;
    }
    out[j] = i;
    return n + 1;
}

static size_t pending_all(int *out)
{
    size_t n = 0;
    for (int i = 0; i < M.nc; i++)
        if (M.c[i].state == SL_PENDING)
            n = insert_total(out, n, i);
    return n;
}

/* A strict or skip lock's queue: its pending claims in the total order. */
static size_t queue_of(int L, int *out)
{
    size_t n = 0;
    for (int i = 0; i < M.nc; i++)
        if (M.c[i].state == SL_PENDING && slot_of(&M.c[i], L) >= 0)
            n = insert_total(out, n, i);
    return n;
}

/* A rebalanced lock's order of choice, by simulation: K keys with holders
 * or waiters, quota limit/K, the limit%K extra slots to the keys whose
 * oldest waiters are oldest (ranked again after every choice; keys with no
 * waiter left rank last), the oldest waiter of the first key below its
 * quota is chosen, else the oldest waiter of all; its slots count for its
 * key from then on. */
static size_t choice_of(int L, int *out)
{
    static int rem[CLAIMS_MAX]; /* static, as all big scratch: ASan taxes big frames */
    size_t nrem = 0;
    uint64_t held[NKEYS] = {0};
    bool present[NKEYS] = {false};
    for (int i = 0; i < M.nc; i++) {
        const rclaim *c = &M.c[i];
        int s = slot_of(c, L);
        if (s < 0)
            continue;
        if (c->state == SL_PENDING) {
            rem[nrem++] = i;
            present[c->key] = true;
        } else if (holding(c)) {
            held[c->key] += c->slots[s];
            present[c->key] = true;
        }
    }
    if (nrem == 0)
        return 0;
    uint64_t keys = 0;
    for (int k = 0; k < NKEYS; k++)
        keys += present[k];
    uint64_t base = M.lk[L].limit / keys, extra = M.lk[L].limit % keys;
    size_t n = 0;
    while (nrem > 0) {
        int oldest[NKEYS] = {-1, -1, -1};
        for (size_t r = 0; r < nrem; r++) {
            int k = M.c[rem[r]].key;
            if (oldest[k] < 0 || age_cmp(&M.c[rem[r]], &M.c[oldest[k]]) < 0)
                oldest[k] = rem[r];
        }
        int ranked[NKEYS] = {0}; /* nrem > 0, so nk >= 1 below */
        size_t nk = 0;
        for (int k = 0; k < NKEYS; k++) {
            if (oldest[k] < 0)
                continue;
            size_t j = nk++;
            while (j > 0 && age_cmp(&M.c[oldest[ranked[j - 1]]], &M.c[oldest[k]]) > 0) {
                ranked[j] = ranked[j - 1];
                j--;
            }
            ranked[j] = k;
        }
        int pick = ranked[0];
        for (size_t r = 0; r < nk; r++) {
            if (held[ranked[r]] < base + (r < extra ? 1 : 0)) {
                pick = ranked[r];
                break;
            }
        }
        int chosen = oldest[pick];
        out[n++] = chosen;
        held[pick] += M.c[chosen].slots[slot_of(&M.c[chosen], L)];
        for (size_t r = 0; r < nrem; r++) {
            if (rem[r] == chosen) {
                rem[r] = rem[--nrem];
                break;
            }
        }
    }
    return n;
}

/* The lock's queue as the engine lists it: positions count in it. */
static size_t lock_order(int L, int *out)
{
    return M.lk[L].strat == SL_REBALANCED ? choice_of(L, out) : queue_of(L, out);
}

/* skip with an overtake limit: the queue's first waiter, once it has
 * waited that long, keeps its slots; -1 when there is no such waiter. */
static int skip_barrier(int L)
{
    static int order[CLAIMS_MAX];
    if (M.lk[L].overtake <= 0 || queue_of(L, order) == 0)
        return -1;
    return M.now - M.c[order[0]].arrived >= M.lk[L].overtake ? order[0] : -1;
}

/* docs/engine.md: strict, the slots of the waiters ahead plus its own fit
 * in limit - used; skip, its own fit (and, behind a first waiter that has
 * waited the overtake limit, beside that one's slots); rebalanced, the
 * slots before it in the order of choice plus its own fit. */
static bool admissible_on(int ci, int s)
{
    const rclaim *c = &M.c[ci];
    int L = c->lk[s];
    uint64_t fr = free_of(&M.lk[L]);
    if (M.lk[L].strat == SL_SKIP) {
        int b = skip_barrier(L);
        if (b < 0 || b == ci)
            return c->slots[s] <= fr;
        bool beside = M.c[b].slots[slot_of(&M.c[b], L)] + c->slots[s] <= fr;
        if (!beside && c->slots[s] <= fr)
            COV.barrier++;
        return beside;
    }
    if (M.lk[L].strat == SL_STRICT) {
        uint64_t ahead = 0;
        for (int i = 0; i < M.nc; i++) {
            const rclaim *x = &M.c[i];
            int t = slot_of(x, L);
            if (t >= 0 && x->state == SL_PENDING && total_cmp(x, c) < 0)
                ahead += x->slots[t];
        }
        return ahead + c->slots[s] <= fr;
    }
    static int order[CLAIMS_MAX];
    size_t n = lock_order(L, order);
    uint64_t before = 0;
    for (size_t i = 0; i < n && order[i] != ci; i++)
        before += M.c[order[i]].slots[slot_of(&M.c[order[i]], L)];
    return before + c->slots[s] <= fr;
}

static void r_grant(int ci, int64_t now)
{
    rclaim *c = &M.c[ci];
    for (int s = 0; s < c->nl; s++) {
        rlock *l = &M.lk[c->lk[s]];
        COV.grants[l->strat]++;
        for (int i = 0; i < M.nc; i++) {
            if (i != ci && M.c[i].state == SL_PENDING && slot_of(&M.c[i], c->lk[s]) >= 0 &&
                total_cmp(&M.c[i], c) < 0) {
                COV.overtake[l->strat]++;
                break;
            }
        }
        l->used += c->slots[s];
        c->tok[s] = ++l->token;
    }
    c->state = SL_HELD;
    c->granted = now;
    c->grant_seq = M.next_grant++;
    r_event(SL_EV_CLAIM_ACQUIRED, ci, now, SL_REASON_NONE);
}

static bool admissible_everywhere(int ci)
{
    for (int s = 0; s < M.c[ci].nl; s++)
        if (!admissible_on(ci, s))
            return false;
    return true;
}

/* Admission as docs/engine.md ("Granting") states it, in the plainest way:
 * full passes over every pending claim in the total order, each granted if
 * admissible on all its locks against the state the grants before it left,
 * until a pass grants nothing. */
static void r_settle(int64_t now)
{
    int passes = 0;
    M.now = now;
    for (;;) {
        static int order[CLAIMS_MAX];
        size_t n = pending_all(order);
        bool granted = false;
        for (size_t i = 0; i < n; i++) {
            int ci = order[i];
            if (M.c[ci].state == SL_PENDING && admissible_everywhere(ci)) {
                r_grant(ci, now);
                granted = true;
            }
        }
        if (!granted)
            return;
        if (passes++ >= 1)
            COV.extra_passes++; /* a pass after the first granted */
    }
}

static sl_event_type end_event(sl_state s)
{
    switch (s) {
    case SL_RELEASED:
        return SL_EV_CLAIM_RELEASED;
    case SL_WITHDRAWN:
        return SL_EV_CLAIM_WITHDRAWN;
    case SL_EXPIRED:
        return SL_EV_CLAIM_EXPIRED;
    case SL_TIMED_OUT:
        return SL_EV_CLAIM_TIMED_OUT;
    case SL_SUPERSEDED:
        return SL_EV_CLAIM_SUPERSEDED;
    default:
        return SL_EV_CLAIM_CANCELED;
    }
}

static void r_end(int ci, sl_state state, sl_reason reason, int by, int64_t now)
{
    rclaim *c = &M.c[ci];
    if (holding(c))
        for (int s = 0; s < c->nl; s++)
            M.lk[c->lk[s]].used -= c->slots[s];
    c->state = state;
    c->reason = reason;
    if (by >= 0 && c->by < 0)
        c->by = by;
    c->ended = now;
    c->revoke_at = -1;
    COV.ended[state]++;
    r_event(end_event(state), ci, now, reason);
}

static int64_t lease_dl(const rclaim *c)
{
    return c->lease > 0 && c->watchers == 0 ? c->life + c->lease : NEVER;
}

static int64_t timeout_dl(const rclaim *c)
{
    return c->state == SL_PENDING && c->timeout > 0 ? c->arrived + c->timeout : NEVER;
}

static int64_t deadline_of(const rclaim *c)
{
    if (sl_state_ended(c->state))
        return NEVER;
    int64_t d = lease_dl(c) < timeout_dl(c) ? lease_dl(c) : timeout_dl(c);
    if (c->state == SL_REVOKING && c->revoke_at < d)
        d = c->revoke_at;
    return d;
}

/* Fires the deadlines due at or before t one at a time, earliest first
 * (ties: earlier arrival), each at its own time, admission after each. On
 * one claim: grace first, then the lease, then the timeout. */
static void r_advance(int64_t t)
{
    for (;;) {
        int best = -1;
        int64_t bd = NEVER;
        for (int i = 0; i < M.nc; i++) {
            int64_t d = deadline_of(&M.c[i]);
            if (d <= t && d < bd) { /* claims are in arrival order: < keeps the older */
                best = i;
                bd = d;
            }
        }
        if (best < 0)
            return;
        rclaim *c = &M.c[best];
        if (c->state == SL_REVOKING && c->revoke_at <= bd)
            r_end(best, SL_CANCELED, SL_REASON_GRACE, -1, bd);
        else if (lease_dl(c) <= bd)
            r_end(best, SL_EXPIRED, SL_REASON_LEASE, -1, bd);
        else
            r_end(best, SL_TIMED_OUT, SL_REASON_TIMEOUT, -1, bd);
        r_settle(bd);
    }
}

static int64_t r_next_deadline(void)
{
    int64_t best = NEVER;
    for (int i = 0; i < M.nc; i++) {
        const rclaim *c = &M.c[i];
        int64_t d = sl_state_ended(c->state) ? c->ended + RETENTION_MS : deadline_of(c);
        if (d < best)
            best = d;
    }
    return best;
}

static bool lock_is_sem(int L)
{
    return L < NSEM || (L >= LK_GROUP && M.grp_sem);
}

/* cancel: pending supersedes the group's waiters older by (created,
 * arrival); in-progress also revokes its older holders (grace 0 ends them
 * at once; a second revocation keeps the earlier deadline). */
static void r_group_cancel(int ci, int64_t now)
{
    const rclaim *c = &M.c[ci];
    int G = LK_GROUP + c->group;
    static int v[CLAIMS_MAX];
    size_t nv = 0;
    for (int i = 0; i < M.nc; i++)
        if (i != ci && M.c[i].state == SL_PENDING && slot_of(&M.c[i], G) >= 0 &&
            age_cmp(&M.c[i], c) < 0)
            nv = insert_total(v, nv, i); /* the group lock's queue order */
    size_t npending = nv;
    if (c->cancel == SL_CANCEL_IN_PROGRESS) {
        for (int i = 0; i < M.nc; i++) {
            if (i == ci || !holding(&M.c[i]) || slot_of(&M.c[i], G) < 0 || age_cmp(&M.c[i], c) >= 0)
                continue;
            size_t j = nv++; /* holders in grant order */
            while (j > npending && M.c[v[j - 1]].grant_seq > M.c[i].grant_seq) {
                v[j] = v[j - 1];
                j--;
            }
            v[j] = i;
        }
    }
    for (size_t k = 0; k < nv; k++) {
        rclaim *h = &M.c[v[k]];
        if (k < npending) {
            r_end(v[k], SL_SUPERSEDED, SL_REASON_SUPERSEDED, ci, now);
        } else if (c->grace == 0) {
            r_end(v[k], SL_CANCELED, SL_REASON_REVOKED, ci, now);
        } else if (h->state == SL_REVOKING) {
            COV.rerevoked++;
            if (now + c->grace < h->revoke_at)
                h->revoke_at = now + c->grace;
        } else {
            h->state = SL_REVOKING;
            h->reason = SL_REASON_REVOKED;
            h->by = ci;
            h->revoke_at = now + c->grace;
            COV.revoking++;
            r_event(SL_EV_CLAIM_REVOKING, v[k], now, SL_REASON_REVOKED);
        }
    }
}

/* A new claim: refused as docs/engine.md says, else queued, its group
 * canceled, admission run. Returns the code the engine must return. */
static int r_create(const mop *op, int opi, int64_t now)
{
    r_advance(now);
    if (op->dup_of >= 0)
        return SL_ECONFLICT;
    rclaim c;
    memset(&c, 0, sizeof(c));
    int64_t cfg_lease = 0;
    for (int i = 0; i <= op->nl; i++) {
        int L;
        uint32_t slots;
        if (i < op->nl) {
            L = op->lk[i];
            slots = op->slots[i];
        } else if (op->group >= 0) {
            L = LK_GROUP + op->group;
            slots = 1;
        } else {
            break;
        }
        const rlock *l = &M.lk[L];
        bool sem = i < op->nl ? L < NSEM : lock_is_sem(L);
        uint32_t limit = 1;
        if (sem) {
            if (!l->configured)
                return SL_EUNKNOWN;
            limit = l->limit;
            if (l->lease > 0 && (cfg_lease == 0 || l->lease < cfg_lease))
                cfg_lease = l->lease;
        } else if (slots > 1) {
            return SL_EINVAL;
        }
        if (limit > 0 && slots > limit)
            return SL_EINVAL;
        for (int j = 0; j < c.nl; j++)
            if (c.lk[j] == L)
                return SL_EINVAL;
        c.lk[c.nl] = L;
        c.slots[c.nl] = slots;
        c.nl++;
    }
    int ci = M.nc++;
    snprintf(c.id, sizeof(c.id), "c%d", opi);
    c.state = SL_PENDING;
    c.by = -1;
    c.prio = op->prio;
    c.arrived = c.life = now;
    c.created = op->has_created ? op->created : now;
    c.arrival = M.next_arrival++;
    c.key = op->key;
    c.group = op->group;
    c.cancel = op->cancel;
    c.grace = op->grace >= 0 ? op->grace : GRACE_DEFAULT_MS;
    c.lease = op->lease >= 0 ? op->lease : cfg_lease; /* engine default lease: none */
    c.timeout = op->timeout;
    c.granted = c.revoke_at = c.ended = -1;
    M.c[ci] = c;
    M.by_op[opi] = ci;
    r_event(SL_EV_CLAIM_QUEUED, ci, now, SL_REASON_NONE);
    if (c.cancel != SL_CANCEL_NONE)
        r_group_cancel(ci, now);
    r_settle(now);
    if (M.c[ci].state == SL_PENDING)
        r_event(SL_EV_CLAIM_WAITING, ci, now, SL_REASON_NONE);
    return 0;
}

static void r_release(int ci, sl_reason reason, int64_t now)
{
    r_advance(now);
    bool gone = reason == SL_REASON_CLIENT_GONE;
    switch (M.c[ci].state) {
    case SL_PENDING:
        r_end(ci, SL_WITHDRAWN, gone ? reason : SL_REASON_WITHDRAWN, -1, now);
        break;
    case SL_HELD:
        r_end(ci, SL_RELEASED, gone ? reason : SL_REASON_RELEASED, -1, now);
        break;
    case SL_REVOKING:
        r_end(ci, SL_CANCELED, SL_REASON_REVOKED_FREED, -1, now);
        break;
    default:
        return;
    }
    r_settle(now);
}

static int r_cancel(int ci, int64_t now)
{
    r_advance(now);
    if (sl_state_ended(M.c[ci].state))
        return SL_ECONFLICT;
    r_end(ci, SL_CANCELED, SL_REASON_OPERATOR, -1, now);
    r_settle(now);
    return 0;
}

static int r_renew(int ci, int64_t now)
{
    r_advance(now);
    rclaim *c = &M.c[ci];
    if (c->state != SL_PENDING && c->state != SL_HELD)
        return SL_ECONFLICT;
    c->life = now;
    r_event(SL_EV_CLAIM_RENEWED, ci, now, SL_REASON_NONE);
    return 0;
}

/* engine.h: unlike the other calls, a watch fires no timers (the server
 * calls it while answering a committed batch); the sign of life never moves
 * the lease back. */
static void r_watch(int ci, int delta, int64_t now)
{
    rclaim *c = &M.c[ci];
    c->watchers += delta;
    if (c->watchers < 0)
        c->watchers = 0;
    if (!sl_state_ended(c->state) && now > c->life)
        c->life = now;
}

static void r_sem_set(int sem, uint32_t limit, sl_strategy strat, int64_t lease,
                      int64_t overtake, int64_t now)
{
    r_advance(now);
    const char *name = sem < NSEM ? lock_names[sem] : "group/*";
    if (M.nev < EV_MAX)
        EV[M.nev] = (revent){SL_EV_SEMAPHORE_UPDATED, -1, now, SL_REASON_NONE, name, limit, strat};
    M.nev++;
    if (sem < NSEM) {
        M.lk[sem].configured = true;
    } else {
        M.glimit = limit;
        M.gstrat = strat;
        M.glease = lease;
        M.govertake = overtake;
    }
    for (int L = 0; L < NLK; L++) {
        rlock *l = &M.lk[L];
        if (sem < NSEM ? L != sem : L < LK_GROUP)
            continue;
        l->limit = limit;
        l->strat = strat;
        l->lease = lease;
        l->overtake = overtake;
    }
    r_settle(now);
}

/* ---- the run: engine, reference, checks --------------------------------- */

/* What the engine showed after the previous step, for the checks that need
 * no reference (terminal states final, tokens dense, no overtaking). */
typedef struct esnap {
    bool exists;
    sl_state state;
    sl_reason reason;
    int64_t ended;
    /* from the events */
    int nevents, nterminal;
    bool acquired, revoking;
} esnap;

typedef struct run {
    const params *p;
    const mop *ops;
    size_t nops;
    size_t step;
    int64_t now;
    sl_engine *eng;
    jmp_buf fail;
    char msg[1024];
    esnap snap[CLAIMS_MAX];
    uint64_t tok_prev[NLK];    /* lock tokens after the previous step */
    uint64_t tok_drained[NLK]; /* ... at the previous drain */
    bool over[NLK];            /* used went above limit through a lowering */
    bool limit_touched[NLK];   /* this step changed the lock's configuration */
    int ngathered;             /* claims whose locks gather() has read */
    uint64_t next_seq;
} run;

static run R;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond))                                                                               \
            check_failed(__LINE__, #cond, __VA_ARGS__);                                            \
    } while (0)

static void check_failed(int line, const char *cond, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

static void check_failed(int line, const char *cond, const char *fmt, ...)
{
    int n = snprintf(R.msg, sizeof(R.msg), "line %d: %s: ", line, cond);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(R.msg))
        vsnprintf(R.msg + n, sizeof(R.msg) - (size_t)n, fmt, ap);
    va_end(ap);
    longjmp(R.fail, 1);
}

static const char *strat_short(sl_strategy s)
{
    return sl_strategy_name(s);
}

/* The operation as text; a create reads as a support.h spec. */
static void op_describe(const mop *op, size_t i, char *buf, size_t cap)
{
    int n = snprintf(buf, cap, "#%zu +%" PRId64 "ms%s ", i, op->dt, op->drain ? " [drain]" : "");
    if (n < 0 || (size_t)n >= cap)
        return;
    buf += n;
    cap -= (size_t)n;
    char tgt[16];
    snprintf(tgt, sizeof(tgt), "c%d", op->target);
    switch (op->kind) {
    case OP_CREATE: {
        int w = snprintf(buf, cap, "create id=c%d", op->dup_of >= 0 ? op->dup_of : (int)i);
        for (int k = 0; k < op->nl && w > 0 && (size_t)w < cap; k++) {
            int L = op->lk[k];
            w += snprintf(buf + w, cap - (size_t)w, " %s:%s", L < NSEM ? "s" : "m", lock_names[L]);
            if (op->slots[k] != 1 && (size_t)w < cap)
                w += snprintf(buf + w, cap - (size_t)w, "*%u", op->slots[k]);
        }
        if (w > 0 && (size_t)w < cap)
            w += snprintf(buf + w, cap - (size_t)w, " prio=%d", op->prio);
        if (op->has_created && w > 0 && (size_t)w < cap)
            w += snprintf(buf + w, cap - (size_t)w, " created=%" PRId64, op->created);
        if (op->key && w > 0 && (size_t)w < cap)
            w += snprintf(buf + w, cap - (size_t)w, " key=%s", key_names[op->key]);
        if (op->group >= 0 && w > 0 && (size_t)w < cap)
            w += snprintf(buf + w, cap - (size_t)w, " group=%s cancel=%s grace=%" PRId64,
                          group_names[op->group], sl_cancel_name(op->cancel), op->grace);
        if (op->lease >= 0 && w > 0 && (size_t)w < cap)
            w += snprintf(buf + w, cap - (size_t)w, " lease=%" PRId64, op->lease);
        if (op->timeout > 0 && w > 0 && (size_t)w < cap)
            snprintf(buf + w, cap - (size_t)w, " timeout=%" PRId64, op->timeout);
        break;
    }
    case OP_RELEASE:
        snprintf(buf, cap, "release %s%s", tgt,
                 op->reason == SL_REASON_CLIENT_GONE ? " (client gone)" : "");
        break;
    case OP_RENEW:
        snprintf(buf, cap, "renew %s", tgt);
        break;
    case OP_WATCH:
        snprintf(buf, cap, "watch %s %+d", tgt, op->delta);
        break;
    case OP_CANCEL:
        snprintf(buf, cap, "cancel %s", tgt);
        break;
    case OP_CLOCK:
        snprintf(buf, cap, "advance");
        break;
    case OP_LIMIT:
        snprintf(buf, cap, "sem %s limit=%u %s lease=%" PRId64 " overtake=%" PRId64,
                 op->sem < NSEM ? lock_names[op->sem] : "group/*", op->limit,
                 strat_short(op->strategy), op->slease, op->sovertake);
        break;
    }
}

static sl_kind kind_of(int L)
{
    return lock_is_sem(L) ? SL_KIND_SEMAPHORE : SL_KIND_MUTEX;
}

/* The model's index of a claim's lock, from what the engine says. */
static int lock_index(sl_kind kind, const char *name)
{
    for (int L = 0; L < NLK; L++)
        /* L < NLK bounds the index; the L < LK_GROUP after it picks the
         * kind of lock, it is no bounds check (cppcheck reads one). */
        // cppcheck-suppress arrayIndexThenCheck
        if (strcmp(lock_names[L], name) == 0 &&
            (L < LK_GROUP ? (L < NSEM) == (kind == SL_KIND_SEMAPHORE) : true))
            return L;
    return -1;
}

/* The claim index of an engine claim, through its id "c<op>". */
static int claim_index(const sl_claim *c)
{
    sl_claim_view v;
    sl_claim_get(c, &v);
    if (v.id[0] != 'c')
        return -1;
    char *end = NULL;
    long op = strtol(v.id + 1, &end, 10);
    if (*end || op < 0 || (size_t)op >= R.nops)
        return -1;
    return M.by_op[op];
}

static int64_t expires_of(const rclaim *c)
{
    return !sl_state_ended(c->state) && c->lease > 0 ? c->life + c->lease : -1;
}

/* What the engine shows after a step, read once and used by both the
 * comparison with the reference and the invariants. */
typedef struct eclaim {
    bool stale; /* ended before this step and not read again this time */
    sl_claim_view v;
    int L[CLOCKS_MAX];
    uint32_t slots[CLOCKS_MAX];
    uint64_t tok[CLOCKS_MAX];
    size_t pos[CLOCKS_MAX];
} eclaim;

typedef struct elock {
    int rc;
    sl_lock_view v;
} elock;

static eclaim E[CLAIMS_MAX];
static elock EL[NLK];

/* A claim that had ended by the previous step is read again (and compared,
 * and checked unchanged) only every few steps and at the end: there are
 * many of them and they do not change, and the run must stay fast under
 * the sanitizers. */
#define ENDED_EVERY 8

static void gather(bool all)
{
    for (int i = 0; i < M.nc; i++) {
        eclaim *e = &E[i];
        bool fresh = i >= R.ngathered;
        e->stale = !fresh && !all && sl_state_ended(R.snap[i].state) && R.step % ENDED_EVERY != 0;
        if (e->stale)
            continue;
        sl_claim_get(M.c[i].eng, &e->v);
        for (size_t s = 0; s < e->v.nlocks; s++) {
            sl_claim_lock_view lv;
            sl_claim_lock_get(R.eng, M.c[i].eng, s, &lv);
            if (fresh) { /* a claim's locks never change */
                e->L[s] = lock_index(lv.kind, lv.name);
                CHECK(e->L[s] >= 0, "%s: unknown lock %s", e->v.id, lv.key);
                e->slots[s] = lv.slots;
            }
            CHECK(lv.slots == e->slots[s], "%s: slots changed", e->v.id);
            e->tok[s] = lv.token;
            e->pos[s] = lv.position;
        }
    }
    R.ngathered = M.nc;
    for (int L = 0; L < NLK; L++)
        EL[L].rc = sl_lock_lookup(R.eng, kind_of(L), lock_names[L], &EL[L].v, NULL);
}

/* Everything the reference knows, against the engine. */
static void compare_all(void)
{
    static int order[NLK][CLAIMS_MAX];
    size_t norder[NLK];
    for (int L = 0; L < NLK; L++)
        norder[L] = lock_order(L, order[L]);
    for (int i = 0; i < M.nc; i++) {
        const rclaim *c = &M.c[i];
        const sl_claim_view *v = &E[i].v;
        const char *id = c->id;
        if (E[i].stale)
            continue;
        CHECK(strcmp(v->id, id) == 0, "id %s vs %s", v->id, id);
        CHECK(v->state == c->state, "%s: state %s, reference %s", id, sl_state_name(v->state),
              sl_state_name(c->state));
        CHECK(v->reason == c->reason, "%s: reason %s, reference %s", id, sl_reason_text(v->reason),
              sl_reason_text(c->reason));
        const char *by = c->by >= 0 ? M.c[c->by].id : NULL;
        CHECK((v->by == NULL) == (by == NULL) && (!by || strcmp(v->by, by) == 0),
              "%s: by %s, reference %s", id, v->by ? v->by : "-", by ? by : "-");
        CHECK(v->priority == c->prio && v->created_ms == c->created &&
                  v->arrived_ms == c->arrived && v->arrival == c->arrival,
              "%s: order fields", id);
        CHECK(v->lease_ms == c->lease, "%s: lease %" PRId64 ", reference %" PRId64, id, v->lease_ms,
              c->lease);
        CHECK(v->grace_ms == c->grace && v->timeout_ms == c->timeout, "%s: grace/timeout", id);
        CHECK(v->life_ms == c->life, "%s: life %" PRId64 ", reference %" PRId64, id, v->life_ms,
              c->life);
        CHECK(v->expires_ms == expires_of(c), "%s: expires %" PRId64 ", reference %" PRId64, id,
              v->expires_ms, expires_of(c));
        CHECK(v->granted_ms == c->granted, "%s: granted %" PRId64 ", reference %" PRId64, id,
              v->granted_ms, c->granted);
        CHECK(v->grant_seq == c->grant_seq, "%s: grant_seq %" PRIu64 ", reference %" PRIu64, id,
              v->grant_seq, c->grant_seq);
        CHECK(v->revoke_at_ms == c->revoke_at, "%s: revoke_at %" PRId64 ", reference %" PRId64, id,
              v->revoke_at_ms, c->revoke_at);
        CHECK(v->ended_ms == c->ended, "%s: ended %" PRId64 ", reference %" PRId64, id, v->ended_ms,
              c->ended);
        CHECK(v->watchers == c->watchers, "%s: watchers %d, reference %d", id, v->watchers,
              c->watchers);
        CHECK(v->nlocks == (size_t)c->nl, "%s: %zu locks, reference %d", id, v->nlocks, c->nl);
        for (int s = 0; s < c->nl; s++) {
            int L = c->lk[s];
            CHECK(E[i].L[s] == L && E[i].slots[s] == c->slots[s], "%s: lock %d is %s*%u", id, s,
                  E[i].L[s] >= 0 ? lock_names[E[i].L[s]] : "?", E[i].slots[s]);
            CHECK(E[i].tok[s] == c->tok[s], "%s: token on %s %" PRIu64 ", reference %" PRIu64, id,
                  lock_names[L], E[i].tok[s], c->tok[s]);
            size_t pos = 0;
            if (c->state == SL_PENDING)
                for (size_t k = 0; k < norder[L]; k++)
                    if (order[L][k] == i)
                        pos = k + 1;
            CHECK(E[i].pos[s] == pos, "%s: position on %s (%s) %zu, reference %zu", id,
                  lock_names[L], strat_short(M.lk[L].strat), E[i].pos[s], pos);
        }
    }
    size_t npend[NLK] = {0}, nhold[NLK] = {0};
    for (int i = 0; i < M.nc; i++) {
        for (int s = 0; s < M.c[i].nl; s++) {
            npend[M.c[i].lk[s]] += M.c[i].state == SL_PENDING;
            nhold[M.c[i].lk[s]] += holding(&M.c[i]);
        }
    }
    for (int L = 0; L < NLK; L++) {
        const rlock *l = &M.lk[L];
        const sl_lock_view *lv = &EL[L].v;
        int rc = EL[L].rc;
        if (lock_is_sem(L) && !l->configured) {
            CHECK(rc == SL_ENOTFOUND, "%s: lookup rc %d for an unconfigured semaphore",
                  lock_names[L], rc);
            continue;
        }
        CHECK(rc == 0, "%s: lookup rc %d", lock_names[L], rc);
        CHECK(lv->kind == kind_of(L), "%s: kind", lock_names[L]);
        CHECK(lv->used == l->used, "%s: used %" PRIu64 ", reference %" PRIu64, lock_names[L],
              lv->used, l->used);
        CHECK(lv->token == l->token, "%s: token %" PRIu64 ", reference %" PRIu64, lock_names[L],
              lv->token, l->token);
        CHECK(lv->limit == l->limit && lv->strategy == l->strat, "%s: limit %u %s, reference %u %s",
              lock_names[L], lv->limit, strat_short(lv->strategy), l->limit, strat_short(l->strat));
        CHECK(lv->npending == npend[L] && lv->nholders == nhold[L],
              "%s: %zu pending %zu holders, reference %zu %zu", lock_names[L], lv->npending,
              lv->nholders, npend[L], nhold[L]);
    }
    static int pend[CLAIMS_MAX];
    size_t np = pending_all(pend);
    size_t k = 0;
    for (const sl_claim *c = sl_pending_next(R.eng, NULL); c; c = sl_pending_next(R.eng, c), k++) {
        CHECK(k < np, "pending order: more than the reference's %zu", np);
        CHECK(c == M.c[pend[k]].eng, "pending order %zu: not %s", k + 1, M.c[pend[k]].id);
        CHECK(sl_pending_position(R.eng, c) == k + 1, "%s: pending position %zu, expected %zu",
              M.c[pend[k]].id, sl_pending_position(R.eng, c), k + 1);
    }
    CHECK(k == np, "pending order: %zu claims, reference %zu", k, np);
    CHECK(sl_engine_next_deadline(R.eng) == r_next_deadline(),
          "next deadline %" PRId64 ", reference %" PRId64, sl_engine_next_deadline(R.eng),
          r_next_deadline());
    sl_engine_stats st;
    sl_engine_stats_get(R.eng, &st);
    size_t held = 0, ended = 0;
    for (int i = 0; i < M.nc; i++) {
        held += holding(&M.c[i]);
        ended += sl_state_ended(M.c[i].state);
    }
    CHECK(st.claims == (size_t)M.nc && st.pending == np && st.held == held && st.ended == ended,
          "stats: %zu claims %zu pending %zu held %zu ended", st.claims, st.pending, st.held,
          st.ended);
}

static int eng_total_cmp(const sl_claim_view *a, const sl_claim_view *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    if (a->created_ms != b->created_ms)
        return a->created_ms < b->created_ms ? -1 : 1;
    return a->arrival < b->arrival ? -1 : a->arrival > b->arrival;
}

static bool view_holding(const sl_claim_view *v)
{
    return v->state == SL_HELD || v->state == SL_REVOKING;
}

/* Invariants read from the engine alone (the gathered views), comparing
 * with the previous step; the reference plays no part. */
static void check_invariants(void)
{
    uint64_t used[NLK] = {0};
    for (int i = 0; i < M.nc; i++) {
        const eclaim *e = &E[i];
        const char *id = e->v.id;
        bool held = view_holding(&e->v);
        for (size_t s = 0; s < e->v.nlocks; s++) {
            /* All or none: a held claim has a token on every lock, a
             * pending one none and a place in every queue. */
            if (held) {
                CHECK(e->tok[s] > 0 && e->pos[s] == 0, "%s held without a token on %s", id,
                      lock_names[e->L[s]]);
                used[e->L[s]] += e->slots[s];
            } else if (e->v.state == SL_PENDING) {
                CHECK(e->tok[s] == 0 && e->pos[s] > 0, "%s pending with a token on %s", id,
                      lock_names[e->L[s]]);
            } else {
                CHECK(e->pos[s] == 0, "%s ended with a position", id);
            }
        }
        /* A terminal state never changes. */
        const esnap *sn = &R.snap[i];
        if (sn->exists && sl_state_ended(sn->state))
            CHECK(e->v.state == sn->state && e->v.reason == sn->reason &&
                      e->v.ended_ms == sn->ended,
                  "%s changed after ending %s", id, sl_state_name(sn->state));
    }
    for (int L = 0; L < NLK; L++) {
        const sl_lock_view *lv = &EL[L].v;
        if (EL[L].rc != 0)
            continue;
        CHECK(lv->used == used[L], "%s: used %" PRIu64 " but its holders hold %" PRIu64,
              lock_names[L], lv->used, used[L]);
        /* used stays within the limit, unless a lowering left it above. */
        if (R.limit_touched[L] && lv->used > lv->limit && !R.over[L]) {
            R.over[L] = true;
            COV.lowered_over++;
        }
        if (lv->used <= lv->limit)
            R.over[L] = false;
        CHECK(lv->used <= lv->limit || R.over[L], "%s: used %" PRIu64 " above limit %u",
              lock_names[L], lv->used, lv->limit);
    }
    /* Tokens grow, and the grants of this step took exactly the tokens in
     * between, one each. */
    static bool seen[NLK][CLAIMS_MAX + 1];
    for (int L = 0; L < NLK; L++) {
        uint64_t from = R.tok_prev[L], to = EL[L].rc == 0 ? EL[L].v.token : from;
        CHECK(to >= from, "%s: token went back from %" PRIu64 " to %" PRIu64, lock_names[L], from,
              to);
        CHECK(to - from <= CLAIMS_MAX, "%s: token jumped", lock_names[L]);
        memset(seen[L], 0, (size_t)(to - from + 1));
    }
    for (int i = 0; i < M.nc; i++) {
        for (size_t s = 0; s < E[i].v.nlocks; s++) {
            int L = E[i].L[s];
            uint64_t from = R.tok_prev[L], to = EL[L].rc == 0 ? EL[L].v.token : from;
            if (E[i].tok[s] <= from)
                continue;
            CHECK(E[i].tok[s] <= to && !seen[L][E[i].tok[s] - from],
                  "%s: token %" PRIu64 " of %s twice or beyond the lock's %" PRIu64, lock_names[L],
                  E[i].tok[s], E[i].v.id, to);
            seen[L][E[i].tok[s] - from] = true;
        }
    }
    for (int L = 0; L < NLK; L++) {
        uint64_t from = R.tok_prev[L], to = EL[L].rc == 0 ? EL[L].v.token : from;
        for (uint64_t t = from + 1; t <= to; t++)
            CHECK(seen[L][t - from], "%s: token %" PRIu64 " granted to no claim", lock_names[L], t);
        R.tok_prev[L] = to;
    }
    /* No overtaking: each claim granted during this step fit, at its grant,
     * with the slots of the claims granted before it that still hold, and
     * on a strict lock with the waiters ahead of it that still wait (they
     * waited then too). */
    for (int i = 0; i < M.nc; i++) {
        const eclaim *h = &E[i];
        if (!view_holding(&h->v) || (R.snap[i].exists && R.snap[i].state != SL_PENDING))
            continue;
        for (size_t s = 0; s < h->v.nlocks; s++) {
            int L = h->L[s];
            const sl_lock_view *lv = &EL[L].v;
            if (R.limit_touched[L] || EL[L].rc != 0)
                continue;
            uint64_t before = 0, ahead = 0;
            for (int j = 0; j < M.nc; j++) {
                const eclaim *x = &E[j];
                for (size_t t = 0; t < x->v.nlocks; t++) {
                    if (x->L[t] != L)
                        continue;
                    if (view_holding(&x->v) && x->v.grant_seq < h->v.grant_seq)
                        before += x->slots[t];
                    if (lv->strategy == SL_STRICT && x->v.state == SL_PENDING && R.snap[j].exists &&
                        R.snap[j].state == SL_PENDING && eng_total_cmp(&x->v, &h->v) < 0)
                        ahead += x->slots[t];
                }
            }
            CHECK(before + ahead + h->slots[s] <= lv->limit,
                  "%s granted on %s (%s, limit %u) past %" PRIu64 " held and %" PRIu64
                  " asked ahead",
                  h->v.id, lock_names[L], strat_short(lv->strategy), lv->limit, before, ahead);
        }
    }
    for (int i = 0; i < M.nc; i++) {
        R.snap[i].exists = true;
        R.snap[i].state = E[i].v.state;
        R.snap[i].reason = E[i].v.reason;
        R.snap[i].ended = E[i].v.ended_ms;
    }
}

static bool is_terminal_event(sl_event_type t)
{
    switch (t) {
    case SL_EV_CLAIM_RELEASED:
    case SL_EV_CLAIM_WITHDRAWN:
    case SL_EV_CLAIM_EXPIRED:
    case SL_EV_CLAIM_TIMED_OUT:
    case SL_EV_CLAIM_SUPERSEDED:
    case SL_EV_CLAIM_CANCELED:
        return true;
    default:
        return false;
    }
}

/* The batch: exactly the reference's events, sequence numbers growing by
 * one across batches, each claim's story in order, and every claim and
 * token that moved listed once. */
static void drain(void)
{
    sl_changes ch;
    sl_engine_changes(R.eng, &ch);
    CHECK(M.nev <= EV_MAX, "reference event log overflow");
    for (size_t i = 0; i < ch.nevents && i < M.nev; i++) {
        const sl_event *ev = &ch.events[i];
        const revent *re = &EV[i];
        CHECK(ev->seq == R.next_seq, "event %zu: seq %" PRIu64 ", expected %" PRIu64, i, ev->seq,
              R.next_seq);
        R.next_seq++;
        const char *eid = "-";
        if (ev->claim) {
            sl_claim_view v;
            sl_claim_get(ev->claim, &v);
            eid = v.id;
        }
        const char *rid = re->claim >= 0 ? M.c[re->claim].id : "-";
        CHECK(ev->type == re->type && strcmp(eid, rid) == 0,
              "event %zu of %zu: %s:%s, reference %s:%s", i, ch.nevents,
              sl_event_type_name(ev->type), ev->name ? ev->name : eid, sl_event_type_name(re->type),
              re->name ? re->name : rid);
        CHECK(ev->time_ms == re->time, "event %zu %s:%s at %" PRId64 ", reference %" PRId64, i,
              sl_event_type_name(ev->type), eid, ev->time_ms, re->time);
        CHECK(ev->reason == re->reason, "event %zu %s:%s reason %s, reference %s", i,
              sl_event_type_name(ev->type), eid, sl_reason_text(ev->reason),
              sl_reason_text(re->reason));
        if (re->name)
            CHECK(ev->name && strcmp(ev->name, re->name) == 0 && ev->limit == re->limit &&
                      ev->strategy == re->strat,
                  "event %zu: semaphore event for %s", i, re->name);
        if (!ev->claim)
            continue;
        /* The claim's story, from the events alone. */
        int ci = claim_index(ev->claim);
        CHECK(ci >= 0, "event for an unknown claim %s", eid);
        esnap *sn = &R.snap[ci];
        sl_event_type t = ev->type;
        CHECK(sn->nterminal == 0, "%s: %s after its terminal event", eid, sl_event_type_name(t));
        CHECK((t == SL_EV_CLAIM_QUEUED) == (sn->nevents == 0), "%s: %s as event %d", eid,
              sl_event_type_name(t), sn->nevents + 1);
        if (t == SL_EV_CLAIM_WAITING || t == SL_EV_CLAIM_ACQUIRED)
            CHECK(!sn->acquired, "%s: %s after acquired", eid, sl_event_type_name(t));
        if (t == SL_EV_CLAIM_REVOKING || t == SL_EV_CLAIM_RELEASED)
            CHECK(sn->acquired && !sn->revoking, "%s: %s while not held", eid,
                  sl_event_type_name(t));
        if (t == SL_EV_CLAIM_WITHDRAWN || t == SL_EV_CLAIM_TIMED_OUT || t == SL_EV_CLAIM_SUPERSEDED)
            CHECK(!sn->acquired, "%s: %s after acquired", eid, sl_event_type_name(t));
        if (t == SL_EV_CLAIM_RENEWED)
            CHECK(!sn->revoking, "%s: renewed while revoking", eid);
        sn->nevents++;
        sn->acquired |= t == SL_EV_CLAIM_ACQUIRED;
        sn->revoking |= t == SL_EV_CLAIM_REVOKING;
        sn->nterminal += is_terminal_event(t);
        bool listed = false;
        for (size_t k = 0; k < ch.nclaims && !listed; k++)
            listed = ch.claims[k] == ev->claim;
        CHECK(listed, "%s: has an event but is not in the batch's claims", eid);
    }
    CHECK(ch.nevents == M.nev, "%zu events in the batch, reference %zu", ch.nevents, M.nev);
    CHECK(ch.next_seq == R.next_seq, "next_seq %" PRIu64 ", expected %" PRIu64, ch.next_seq,
          R.next_seq);
    for (size_t k = 0; k < ch.nclaims; k++)
        for (size_t j = k + 1; j < ch.nclaims; j++)
            CHECK(ch.claims[k] != ch.claims[j], "a claim listed twice in the batch");
    /* Locks whose token moved since the last drain, each listed once. */
    bool listed[NLK] = {false};
    for (size_t k = 0; k < ch.nlocks; k++) {
        sl_lock_view lv;
        sl_lock_get(ch.locks[k], &lv);
        int L = lock_index(lv.kind, lv.name);
        CHECK(L >= 0 && !listed[L], "batch lists lock %s twice or unknown", lv.key);
        listed[L] = true;
    }
    for (int L = 0; L < NLK; L++) {
        CHECK(listed[L] == (M.lk[L].token != R.tok_drained[L]),
              "%s: token moved %" PRIu64 " -> %" PRIu64 ", listed in the batch: %d", lock_names[L],
              R.tok_drained[L], M.lk[L].token, listed[L]);
        R.tok_drained[L] = M.lk[L].token;
    }
    sl_engine_changes_clear(R.eng);
    M.nev = 0;
}

static uint64_t env_u64(const char *name, uint64_t dflt);

static void setup(const params *p)
{
    memset(&M, 0, sizeof(M));
    for (size_t i = 0; i < STEPS_MAX; i++)
        M.by_op[i] = -1;
    M.next_arrival = 1;
    M.next_grant = 1;
    M.grp_sem = p->grp_sem;
    for (int L = 0; L < NLK; L++) {
        M.lk[L].limit = 1;
        M.lk[L].strat = SL_STRICT;
    }
    for (int s = 0; s < NSEM; s++)
        M.lk[s].limit = 0;
    memset(R.snap, 0, sizeof(R.snap));
    memset(R.tok_prev, 0, sizeof(R.tok_prev));
    memset(R.tok_drained, 0, sizeof(R.tok_drained));
    memset(R.over, 0, sizeof(R.over));
    R.next_seq = 1;
    R.now = 0;
    R.ngathered = 0;
    for (int s = 0; s < NSEM; s++) {
        if (!p->sem_on[s])
            continue;
        sl_error err;
        sl_sem_opts o = {.limit = p->limit[s], .strategy = p->strat[s], .lease_ms = p->lease[s], .overtake_ms = p->overtake[s]};
        CHECK(sl_sem_configure(R.eng, lock_names[s], &o, 0, &err) == 0, "setup %s",
              lock_names[s]);
        r_sem_set(s, p->limit[s], p->strat[s], p->lease[s], p->overtake[s], 0);
    }
    if (p->grp_sem) {
        sl_error err;
        sl_sem_opts o = {.limit = p->glimit, .strategy = p->gstrat, .lease_ms = p->glease, .overtake_ms = p->govertake};
        CHECK(sl_sem_configure(R.eng, "group/*", &o, 0, &err) == 0, "setup group/*");
        r_sem_set(NSEM, p->glimit, p->gstrat, p->glease, p->govertake, 0);
        for (int g = 0; g < NGRP; g++)
            M.lk[LK_GROUP + g].configured = true;
    }
}

/* Applies op i to the engine and the reference, then checks everything. */
static void apply(const mop *op, size_t i)
{
    R.step = i;
    R.now += op->dt;
    int64_t now = R.now;
    memset(R.limit_touched, 0, sizeof(R.limit_touched));
    int ci = -1;
    if (op->kind != OP_CREATE && op->kind != OP_CLOCK && op->kind != OP_LIMIT)
        ci = op->target >= 0 && (size_t)op->target < i ? M.by_op[op->target] : -1;
    bool skip = (op->kind == OP_CREATE && op->dup_of >= 0 && M.by_op[op->dup_of] < 0) ||
                (op->kind == OP_LIMIT && op->sem == NSEM && !M.grp_sem) ||
                (op->kind != OP_CREATE && op->kind != OP_CLOCK && op->kind != OP_LIMIT && ci < 0);
    if (skip) {
        /* In a shrunk replay the claim this op names may not exist. */
        sl_engine_advance(R.eng, now);
        r_advance(now);
    } else {
        switch (op->kind) {
        case OP_CREATE: {
            char id[24], ids[24];
            snprintf(id, sizeof(id), "c%zu", i);
            if (op->dup_of >= 0)
                snprintf(ids, sizeof(ids), "c%d", op->dup_of);
            sl_lock_req locks[CLOCKS_MAX];
            for (int k = 0; k < op->nl; k++) {
                int L = op->lk[k];
                locks[k] = (sl_lock_req){L < NSEM ? SL_KIND_SEMAPHORE : SL_KIND_MUTEX,
                                         lock_names[L], op->slots[k], 0};
            }
            sl_claim_req req = {
                .id = op->dup_of >= 0 ? ids : id,
                .holder = id,
                .locks = locks,
                .nlocks = (size_t)op->nl,
                .group = op->group >= 0 ? group_names[op->group] : NULL,
                .cancel = op->cancel,
                .grace_ms = op->grace,
                .priority = op->prio,
                .has_created = op->has_created,
                .created_ms = op->created,
                .rebalance_key = key_names[op->key],
                .lease_ms = op->lease,
                .timeout_ms = op->timeout,
            };
            sl_claim *c = NULL;
            sl_error err;
            int rc = sl_claim_create(R.eng, &req, now, &c, &err);
            int want = r_create(op, (int)i, now);
            CHECK(rc == want, "create: rc %d (%s), reference %d", rc, rc ? err.what : "ok", want);
            if (rc < 0 && -rc < 6)
                COV.refused[-rc]++;
            if (rc == 0)
                M.c[M.by_op[i]].eng = c;
            break;
        }
        case OP_RELEASE:
            CHECK(sl_claim_release(R.eng, M.c[ci].eng, op->reason, now) == 0, "release");
            r_release(ci, op->reason, now);
            break;
        case OP_RENEW: {
            int rc = sl_claim_renew(R.eng, M.c[ci].eng, now);
            int want = r_renew(ci, now);
            CHECK(rc == want, "renew: rc %d, reference %d", rc, want);
            break;
        }
        case OP_WATCH:
            sl_claim_watch(R.eng, M.c[ci].eng, op->delta, now);
            r_watch(ci, op->delta, now);
            break;
        case OP_CANCEL: {
            int rc = sl_claim_cancel(R.eng, M.c[ci].eng, now);
            int want = r_cancel(ci, now);
            CHECK(rc == want, "cancel: rc %d, reference %d", rc, want);
            break;
        }
        case OP_CLOCK:
            sl_engine_advance(R.eng, now);
            r_advance(now);
            break;
        case OP_LIMIT: {
            const char *name = op->sem < NSEM ? lock_names[op->sem] : "group/*";
            sl_error err;
            sl_sem_opts o = {.limit = op->limit, .strategy = op->strategy, .lease_ms = op->slease, .overtake_ms = op->sovertake};
            int rc = sl_sem_configure(R.eng, name, &o, now, &err);
            CHECK(rc == 0, "sem_set %s: rc %d", name, rc);
            if (op->sem < NSEM) {
                R.limit_touched[op->sem] = true;
            } else {
                for (int g = 0; g < NGRP; g++)
                    R.limit_touched[LK_GROUP + g] = true;
            }
            r_sem_set(op->sem, op->limit, op->strategy, op->slease, op->sovertake, now);
            break;
        }
        }
    }
    gather(false);
    compare_all();
    check_invariants();
    if (op->drain)
        drain();
}

/* At the end: every ended claim told its end exactly once, by the event
 * that matches its state. */
static void finish(void)
{
    gather(true);
    compare_all();
    check_invariants();
    drain();
    for (int i = 0; i < M.nc; i++) {
        sl_claim_view v;
        sl_claim_get(M.c[i].eng, &v);
        const esnap *sn = &R.snap[i];
        CHECK(sn->nevents >= 1, "%s: no events", v.id);
        CHECK(sn->nterminal == (sl_state_ended(v.state) ? 1 : 0), "%s (%s): %d terminal events",
              v.id, sl_state_name(v.state), sn->nterminal);
    }
}

/* ---- generation ----------------------------------------------------------- */

/* A skip lock's overtake limit: often none, else within the times a
 * sequence spans, so that first waiters do reach it. */
static int64_t overtake_of(rng *r)
{
    return chance(r, 40) ? 0 : rr(r, 5, 60);
}

static void gen_params(uint64_t seed, params *p)
{
    rng r = {seed * 0x2545f4914f6cdd1dull + 1};
    memset(p, 0, sizeof(*p));
    p->seed = seed;
    /* One sequence in four is busy: semaphores up to 6 slots, mostly
     * rebalanced, claims mostly on them, so that rebalanced admission needs
     * several passes now and then. */
    p->busy = chance(&r, 25);
    for (int s = 0; s < NSEM; s++) {
        p->sem_on[s] = p->busy || chance(&r, 92);
        p->limit[s] = chance(&r, 10) ? 0 : (uint32_t)rr(&r, 1, p->busy ? 6 : 4);
        p->strat[s] = p->busy && chance(&r, 70) ? SL_REBALANCED : (sl_strategy)rr(&r, 0, 2);
        p->lease[s] = chance(&r, 80) ? 0 : rr(&r, 10, 60);
        p->overtake[s] = overtake_of(&r);
    }
    p->grp_sem = chance(&r, 25);
    p->glimit = (uint32_t)rr(&r, 1, 3);
    /* Not rebalanced: cancel: pending walks a rebalanced group lock's
     * waiters in hash order, and the order of its superseded events is not
     * a documented rule. */
    p->gstrat = chance(&r, 50) ? SL_STRICT : SL_SKIP;
    p->glease = chance(&r, 80) ? 0 : rr(&r, 10, 60);
    p->govertake = overtake_of(&r);
}

/* A random claim of the reference, preferring live ones. */
static int pick_claim(rng *r, bool live_only)
{
    if (M.nc == 0)
        return -1;
    if (live_only) {
        static int live[CLAIMS_MAX];
        int n = 0;
        for (int i = 0; i < M.nc; i++)
            if (!sl_state_ended(M.c[i].state))
                live[n++] = i;
        if (n > 0)
            return live[rr(r, 0, n - 1)];
    }
    return (int)rr(r, 0, M.nc - 1);
}

static int op_of_claim(int ci)
{
    for (int i = 0; i < STEPS_MAX; i++)
        if (M.by_op[i] == ci)
            return i;
    return -1;
}

static void gen_create(rng *r, mop *op, size_t i)
{
    op->kind = OP_CREATE;
    op->dup_of = -1;
    int pool[NSEM + NMTX + NGRP];
    int npool = R.p->busy && chance(r, 80) ? NSEM : NSEM + NMTX;
    for (int L = 0; L < npool; L++)
        pool[L] = L;
    op->nl = (int)rr(r, 1, R.p->busy ? 2 : 3);
    for (int k = 0; k < op->nl; k++) {
        int j = (int)rr(r, k, npool - 1);
        int t = pool[k];
        pool[k] = pool[j];
        pool[j] = t;
        int L = pool[k];
        op->lk[k] = L;
        if (L < NSEM) {
            uint32_t lim = M.lk[L].limit;
            uint32_t hi = lim > 0 ? lim : 4;
            op->slots[k] = (uint32_t)rr(r, 1, hi < 3 ? hi : 3);
            if (chance(r, 20))
                op->slots[k] = (uint32_t)rr(r, 1, hi);
            if (chance(r, 4))
                op->slots[k] = hi + (uint32_t)rr(r, 1, 2); /* refused unless paused */
        } else {
            op->slots[k] = chance(r, 3) ? 2 : 1; /* a mutex has one slot */
        }
    }
    op->prio = (int32_t)rr(r, 0, 2);
    op->has_created = chance(r, 50);
    op->created = ((R.now + rr(r, -40, 10)) / 5) * 5; /* round: ties in created */
    op->key = (int)rr(r, 0, NKEYS - 1);
    op->group = chance(r, 35) ? (int)rr(r, 0, NGRP - 1) : -1;
    op->cancel = op->group >= 0 ? (sl_cancel)rr(r, 0, 2) : SL_CANCEL_NONE;
    op->grace = chance(r, 5) ? -1 : rr(r, 0, 20);
    int keep = R.p->busy ? 75 : 30; /* busy: waiters stay longer */
    op->lease = chance(r, keep) ? 0 : chance(r, 40) ? -1 : rr(r, 5, 50);
    op->timeout = chance(r, keep + 20) ? 0 : rr(r, 5, 50);
    if (chance(r, 2) && op->nl < 3) {
        /* The same lock twice: refused. */
        op->lk[op->nl] = op->lk[0];
        op->slots[op->nl] = 1;
        op->nl++;
    } else if (chance(r, 2) && op->group >= 0 && !M.grp_sem && op->nl < 3) {
        /* The group's mutex named explicitly too: the same lock twice. */
        op->lk[op->nl] = LK_GROUP + op->group;
        op->slots[op->nl] = 1;
        op->nl++;
    } else if (chance(r, 2) && M.nc > 0) {
        op->dup_of = op_of_claim((int)rr(r, 0, M.nc - 1));
    }
    (void)i;
}

static void gen_op(rng *r, mop *op, size_t i)
{
    memset(op, 0, sizeof(*op));
    op->group = -1;
    op->dup_of = -1;
    op->target = -1;
    op->dt = chance(r, 60) ? 0 : rr(r, 1, 5);
    op->drain = chance(r, 25);
    int w = (int)rr(r, 0, 99);
    int ci;
    if (w < 34 || M.nc == 0 || (R.p->busy && w < 45)) {
        gen_create(r, op, i);
        return;
    }
    if (w < 50) {
        op->kind = OP_RELEASE;
        ci = pick_claim(r, chance(r, 80));
        op->reason = chance(r, 15) ? SL_REASON_CLIENT_GONE : SL_REASON_RELEASED;
    } else if (w < 57) {
        op->kind = OP_RENEW;
        ci = pick_claim(r, chance(r, 85));
    } else if (w < 65) {
        op->kind = OP_WATCH;
        int watched[CLAIMS_MAX], n = 0;
        for (int k = 0; k < M.nc; k++)
            if (M.c[k].watchers > 0)
                watched[n++] = k;
        if (n > 0 && chance(r, 50)) {
            op->delta = -1; /* only after a +1 */
            ci = watched[rr(r, 0, n - 1)];
        } else {
            op->delta = 1;
            ci = pick_claim(r, chance(r, 90));
        }
    } else if (w < 70) {
        op->kind = OP_CANCEL;
        ci = pick_claim(r, chance(r, 85));
    } else if (w < (R.p->busy ? 82 : 88)) {
        op->kind = OP_CLOCK;
        op->dt = rr(r, 0, 30);
        return;
    } else {
        op->kind = OP_LIMIT;
        op->sem = M.grp_sem && chance(r, 20) ? NSEM : (int)rr(r, 0, NSEM - 1);
        if (op->sem < NSEM) {
            const rlock *l = &M.lk[op->sem];
            op->limit = (uint32_t)rr(r, 0, R.p->busy ? 6 : 4); /* raise, lower or pause */
            if (R.p->busy && chance(r, 50))
                op->limit = l->limit > 0 ? 0 : 6; /* pause, then let many in at once */
            op->strategy = !l->configured || chance(r, 30) ? (sl_strategy)rr(r, 0, 2) : l->strat;
            op->slease =
                !l->configured || chance(r, 20) ? (chance(r, 70) ? 0 : rr(r, 10, 60)) : l->lease;
            op->sovertake = !l->configured || chance(r, 20) ? overtake_of(r) : l->overtake;
        } else {
            op->limit = (uint32_t)rr(r, 0, 3);
            op->strategy = chance(r, 70) ? M.gstrat : (chance(r, 50) ? SL_STRICT : SL_SKIP);
            op->slease = M.glease;
            op->sovertake = chance(r, 80) ? M.govertake : overtake_of(r);
        }
        return;
    }
    op->target = op_of_claim(ci);
}

/* ---- running, replaying, shrinking ------------------------------------------ */

/* Runs a sequence: generated from the seed when gen is set (ops is filled
 * in), else replayed from ops. Returns the failing step, or -1. */
static long run_seq(const params *p, mop *ops, size_t nops, bool gen)
{
    R.p = p;
    R.ops = ops;
    R.nops = nops;
    R.step = 0;
    R.msg[0] = '\0';
    R.eng = t_engine();
    if (setjmp(R.fail)) {
        sl_engine_free(R.eng); /* every block back, so the next t_free still counts */
        R.eng = NULL;
        return (long)R.step;
    }
    setup(p);
    rng r = {p->seed};
    for (size_t i = 0; i < nops; i++) {
        if (gen)
            gen_op(&r, &ops[i], i);
        apply(&ops[i], i);
    }
    R.step = nops;
    finish();
    t_free(R.eng); /* every allocation came back */
    R.eng = NULL;
    return -1;
}

static void print_params(const params *p)
{
    fprintf(stderr, "  setup: ");
    for (int s = 0; s < NSEM; s++)
        if (p->sem_on[s])
            fprintf(stderr, "%s=%u/%s/lease %" PRId64 "/overtake %" PRId64 " ", lock_names[s],
                    p->limit[s], strat_short(p->strat[s]), p->lease[s], p->overtake[s]);
        else
            fprintf(stderr, "%s=unconfigured ", lock_names[s]);
    if (p->grp_sem)
        fprintf(stderr, "group/*=%u/%s/lease %" PRId64 "/overtake %" PRId64, p->glimit,
                strat_short(p->gstrat), p->glease, p->govertake);
    else
        fprintf(stderr, "groups are mutexes");
    fprintf(stderr, "\n");
}

static void print_ops(const mop *ops, size_t from, size_t to, const size_t *index)
{
    char buf[512];
    for (size_t i = from; i < to; i++) {
        op_describe(&ops[i], index ? index[i] : i, buf, sizeof(buf));
        fprintf(stderr, "    %s\n", buf);
    }
}

/* Removes chunks of operations while the sequence still fails (delta
 * debugging, at most a few thousand replays). Claim ids follow the index of
 * the op that creates them, so the ops are renumbered as they go. */
static size_t shrink(const params *p, mop *ops, size_t n, char *msg, size_t msgcap)
{
    static mop trial[STEPS_MAX];
    static int newidx[STEPS_MAX];
    int budget = 4000;
    for (size_t chunk = n / 2; chunk >= 1 && budget > 0; chunk = chunk > 1 ? chunk / 2 : 0) {
        bool removed = true;
        while (removed && budget > 0) {
            removed = false;
            for (size_t at = 0; at + chunk <= n && budget > 0;) {
                /* Renumber: ops name claims by the index of the op that
                 * created them. */
                size_t m = 0;
                for (size_t k = 0; k < n; k++) {
                    if (k >= at && k < at + chunk) {
                        newidx[k] = -1;
                        continue;
                    }
                    newidx[k] = (int)m;
                    trial[m++] = ops[k];
                }
                for (size_t k = 0; k < m; k++) {
                    mop *o = &trial[k];
                    bool lost = false;
                    if (o->target >= 0) {
                        o->target = newidx[o->target];
                        lost |= o->target < 0;
                    }
                    if (o->dup_of >= 0) {
                        o->dup_of = newidx[o->dup_of];
                        lost |= o->dup_of < 0;
                    }
                    /* An op whose claim is gone only moves the clock, as
                     * apply() would do: say so. */
                    if (lost) {
                        mop clock = {.kind = OP_CLOCK, .dt = o->dt, .drain = o->drain};
                        clock.group = clock.dup_of = clock.target = -1;
                        *o = clock;
                    }
                }
                budget--;
                if (run_seq(p, trial, m, false) >= 0) {
                    memcpy(ops, trial, m * sizeof(*trial));
                    n = m;
                    removed = true;
                    snprintf(msg, msgcap, "%s", R.msg);
                } else {
                    at += chunk;
                }
            }
        }
        if (chunk == 1)
            break;
    }
    return n;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return dflt;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    return end && *end == '\0' ? (uint64_t)v : dflt;
}

static mop ops_buf[STEPS_MAX];

static void random_sequences(void **state)
{
    (void)state;
    uint64_t one = env_u64("SL_MODEL_SEED", 0);
    uint64_t seqs = env_u64("SL_MODEL_SEQS", SEQS_DEFAULT);
    uint64_t steps = env_u64("SL_MODEL_STEPS", STEPS_DEFAULT);
    if (steps > STEPS_MAX - 1)
        steps = STEPS_MAX - 1;
    uint64_t first = one ? one : 1, last = one ? one : seqs;
    uint64_t claims = 0, grants = 0;
    for (uint64_t seed = first; seed <= last; seed++) {
        params p;
        gen_params(seed, &p);
        long at = run_seq(&p, ops_buf, (size_t)steps, true);
        if (at < 0) {
            claims += (uint64_t)M.nc;
            grants += M.next_grant - 1;
            continue;
        }
        char msg[1024];
        snprintf(msg, sizeof(msg), "%s", R.msg);
        fprintf(stderr, "model: seed %" PRIu64 " failed at step %ld: %s\n", seed, at, msg);
        print_params(&p);
        size_t upto = (size_t)at < steps ? (size_t)at + 1 : (size_t)steps;
        fprintf(stderr, "  last operations (replay with SL_MODEL_SEED=%" PRIu64 "):\n", seed);
        print_ops(ops_buf, upto > 20 ? upto - 20 : 0, upto, NULL);
        size_t n = shrink(&p, ops_buf, upto, msg, sizeof(msg));
        fprintf(stderr, "  shrunk to %zu operations, failing with: %s\n", n, msg);
        print_ops(ops_buf, 0, n, NULL);
        fail_msg("model: seed %" PRIu64 " failed at step %ld: %s", seed, at, msg);
    }
    print_message("model: %" PRIu64 " sequences of %" PRIu64 " steps, %" PRIu64 " claims, %" PRIu64
                  " grants\n",
                  last - first + 1, steps, claims, grants);
    if (env_u64("SL_MODEL_COVERAGE", 0)) {
        const coverage *k = &COV;
        print_message("  refused: einval %" PRIu64 " econflict %" PRIu64 " eunknown %" PRIu64 "\n",
                      k->refused[1], k->refused[3], k->refused[4]);
        print_message("  ended:");
        for (int st = SL_RELEASED; st <= SL_CANCELED; st++)
            print_message(" %s %" PRIu64, sl_state_name((sl_state)st), k->ended[st]);
        print_message("\n  grants strict/skip/rebalanced %" PRIu64 "/%" PRIu64 "/%" PRIu64
                      ", past a waiter ahead %" PRIu64 "/%" PRIu64 "/%" PRIu64 "\n",
                      k->grants[0], k->grants[1], k->grants[2], k->overtake[0], k->overtake[1],
                      k->overtake[2]);
        print_message("  extra passes %" PRIu64 ", revoking %" PRIu64 ", revoked again %" PRIu64
                      ", lowered below used %" PRIu64 ", kept out by an overtake barrier %" PRIu64
                      "\n",
                      k->extra_passes, k->revoking, k->rerevoked, k->lowered_over, k->barrier);
    }
}

/* A grant on a rebalanced lock reorders its order of choice within a pass.
 * Paused lock r, keys A and B, quota 2 each once the limit is 4. At the
 * raise the order of choice is c0 c1 c2 c3 and c0, c1, c2 fit; the pass
 * tries the waiters in the total order c1 c3 c0 c2. Granting c1 puts B at
 * its quota, so A's waiters move up: c3 (priority 2) now fits and is granted
 * in the same pass, then c2; c0 no longer fits. A full pass over every
 * waiter gives exactly this: c1 c3 c2. */
static void rebalanced_grant_reorders_within_a_pass(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "r", 0, SL_REBALANCED);
    t_claim(eng, 1, "id=c0 s:r key=B prio=1");
    t_claim(eng, 2, "id=c1 s:r*2 key=B prio=2");
    t_claim(eng, 3, "id=c2 s:r key=A prio=0");
    t_claim(eng, 4, "id=c3 s:r key=A prio=2");
    t_events(eng);
    t_sem(eng, 5, "r", 4, SL_REBALANCED);
    assert_string_equal(t_events(eng), "semaphore.updated:r claim.acquired:c1 "
                                       "claim.acquired:c3 claim.acquired:c2");
    assert_int_equal(t_token(eng, "c1", 0), 1);
    assert_int_equal(t_token(eng, "c3", 0), 2);
    assert_int_equal(t_token(eng, "c2", 0), 3);
    assert_int_equal(t_state(eng, "c0"), SL_PENDING);
    assert_int_equal(t_position(eng, "c0", 0), 1);
    assert_int_equal(t_used(eng, SL_KIND_SEMAPHORE, "r"), 4);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* First: on failure it frees its engine, so the block count that
         * t_free checks stays right for the test after it. */
        cmocka_unit_test(random_sequences),
        cmocka_unit_test(rebalanced_grant_reorders_within_a_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
