/* test_restore.c - saving the engine batch by batch and rebuilding it
 * (restore.c).
 *
 * The test plays the store: after every operation on engine A it takes the
 * batch and keeps, in memory it owns, what a store would write (each changed
 * claim with its locks, tokens and tags; purged ids deleted; lock tokens;
 * evicted keys deleted; configurations; the counters). Engine B is then
 * rebuilt from that copy alone, with the claims in a shuffled order, and
 * must be A again: states, tokens, queue and holder order, the event
 * sequence and the next tokens continue exactly. What restore changes on
 * purpose: every live claim gets one full lease from the restore time
 * (docs/engine.md: "held claims get at least one full lease to reconnect"), while
 * revocation deadlines stay absolute. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support.h"

/* ---- the in-test store --------------------------------------------------- */

#define ST_CLAIMS 3072 /* many_claims_in_any_order's */
#define ST_CLAIM_LOCKS 8
#define ST_TAGS 4
#define ST_TOKENS 64
#define ST_CONFIGS 16

typedef struct st_claim {
    bool used;
    sl_claim_view v; /* its strings point into the buffers below */
    char id[SL_ID_MAX + 1], holder[64], group[64], rkey[64], by[SL_ID_MAX + 1];
    sl_claim_lock_rec locks[ST_CLAIM_LOCKS];
    char names[ST_CLAIM_LOCKS][SL_NAME_MAX + 1];
    sl_tag tags[ST_TAGS];
    char tk[ST_TAGS][32], tv[ST_TAGS][32];
} st_claim;

typedef struct st_token {
    bool used;
    char key[SL_LOCK_KEY_MAX + 1];
    uint64_t token;
} st_token;

typedef struct st_config {
    bool used;
    char name[SL_NAME_MAX + 1];
    uint32_t limit;
    sl_strategy strategy;
    int64_t lease_ms, overtake_ms;
} st_config;

typedef struct store {
    st_claim claims[ST_CLAIMS];
    st_token tokens[ST_TOKENS];
    st_config configs[ST_CONFIGS];
    uint64_t next_seq, next_arrival, next_grant, token_floor;
} store;

static const char *copy(char *dst, size_t cap, const char *s)
{
    if (!s)
        return NULL;
    assert_true(strlen(s) < cap);
    memcpy(dst, s, strlen(s) + 1);
    return dst;
}

static st_claim *st_claim_slot(store *st, const char *id, bool create)
{
    st_claim *free_slot = NULL;
    for (size_t i = 0; i < ST_CLAIMS; i++) {
        if (st->claims[i].used && strcmp(st->claims[i].id, id) == 0)
            return &st->claims[i];
        if (!st->claims[i].used && !free_slot)
            free_slot = &st->claims[i];
    }
    if (!create)
        return NULL;
    assert_non_null(free_slot);
    return free_slot;
}

static void st_save_claim(store *st, sl_engine *eng, const sl_claim *c)
{
    sl_claim_view v;
    sl_claim_get(c, &v);
    st_claim *s = st_claim_slot(st, v.id, true);
    memset(s, 0, sizeof(*s));
    s->used = true;
    s->v = v;
    s->v.id = copy(s->id, sizeof(s->id), v.id);
    s->v.holder = copy(s->holder, sizeof(s->holder), v.holder);
    s->v.group = copy(s->group, sizeof(s->group), v.group);
    s->v.rebalance_key = copy(s->rkey, sizeof(s->rkey), v.rebalance_key);
    s->v.by = copy(s->by, sizeof(s->by), v.by);
    assert_true(v.nlocks <= ST_CLAIM_LOCKS && v.ntags <= ST_TAGS);
    for (size_t i = 0; i < v.nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_get(eng, c, i, &lv);
        s->locks[i].kind = lv.kind;
        s->locks[i].name = copy(s->names[i], sizeof(s->names[i]), lv.name);
        s->locks[i].slots = lv.slots;
        s->locks[i].via = lv.via;
        s->locks[i].token = lv.token;
    }
    for (size_t i = 0; i < v.ntags; i++) {
        sl_tag t;
        sl_claim_tag_get(c, i, &t);
        s->tags[i].key = copy(s->tk[i], sizeof(s->tk[i]), t.key);
        s->tags[i].value = copy(s->tv[i], sizeof(s->tv[i]), t.value);
    }
}

static void st_put_token(store *st, const char *key, uint64_t token, bool drop)
{
    st_token *free_slot = NULL;
    for (size_t i = 0; i < ST_TOKENS; i++) {
        st_token *t = &st->tokens[i];
        if (t->used && strcmp(t->key, key) == 0) {
            t->used = !drop;
            t->token = token;
            return;
        }
        if (!t->used && !free_slot)
            free_slot = t;
    }
    if (drop)
        return;
    assert_non_null(free_slot);
    free_slot->used = true;
    copy(free_slot->key, sizeof(free_slot->key), key);
    free_slot->token = token;
}

static void st_put_config(store *st, const char *name, const sl_config *cfg)
{
    st_config *slot = NULL, *free_slot = NULL;
    for (size_t i = 0; i < ST_CONFIGS; i++) {
        if (st->configs[i].used && strcmp(st->configs[i].name, name) == 0)
            slot = &st->configs[i];
        else if (!st->configs[i].used && !free_slot)
            free_slot = &st->configs[i];
    }
    if (!cfg) {
        if (slot)
            slot->used = false;
        return;
    }
    if (!slot) {
        assert_non_null(free_slot);
        slot = free_slot;
    }
    sl_config_view cv;
    sl_config_get(cfg, &cv);
    slot->used = true;
    copy(slot->name, sizeof(slot->name), cv.name);
    slot->limit = cv.limit;
    slot->strategy = cv.strategy;
    slot->lease_ms = cv.lease_ms;
    slot->overtake_ms = cv.overtake_ms;
}

static int restore_config(sl_engine *eng, const char *name, uint32_t limit, sl_strategy s,
                          int64_t lease_ms, int64_t overtake_ms)
{
    sl_sem_opts o = {.limit = limit, .strategy = s, .lease_ms = lease_ms, .overtake_ms = overtake_ms};
    return sl_engine_restore_config(eng, name, &o);
}

/* Writes one batch the way a store must: evictions happened when the last
 * batch was cleared, so they go before this batch's token moves (a name
 * forgotten then may have been used again since); a claim purged in this
 * batch is deleted even if it also changed in it. */
static void capture(store *st, sl_engine *eng)
{
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    for (size_t i = 0; i < ch.nevicted; i++)
        st_put_token(st, ch.evicted[i], 0, true);
    for (size_t i = 0; i < ch.nlocks; i++) {
        sl_lock_view lv;
        sl_lock_get(ch.locks[i], &lv);
        st_put_token(st, lv.key, lv.token, false);
    }
    for (size_t i = 0; i < ch.nclaims; i++) {
        sl_claim_view v;
        sl_claim_get(ch.claims[i], &v);
        if (sl_claim_find(eng, v.id) == ch.claims[i])
            st_save_claim(st, eng, ch.claims[i]);
    }
    for (size_t i = 0; i < ch.npurged; i++) {
        st_claim *s = st_claim_slot(st, ch.purged[i], false);
        if (s)
            s->used = false;
    }
    for (size_t i = 0; i < ch.nconfigs; i++)
        st_put_config(st, ch.configs[i], sl_config_find(eng, ch.configs[i]));
    st->next_seq = ch.next_seq;
    st->next_arrival = ch.next_arrival;
    st->next_grant = ch.next_grant;
    st->token_floor = ch.token_floor;
    sl_engine_changes_clear(eng);
}

static store *st_new(void)
{
    store *st = calloc(1, sizeof(*st));
    assert_non_null(st);
    return st;
}

static size_t st_nclaims(const store *st)
{
    size_t n = 0;
    for (size_t i = 0; i < ST_CLAIMS; i++)
        n += st->claims[i].used;
    return n;
}

/* Builds engine B from the store alone; claims go in a shuffled order, or
 * with seed 0 in the store's own (arrival order, as slots are taken), or
 * with BACKWARDS in the reverse of that. */
#define BACKWARDS 0xffffffffu
static sl_engine *rebuild(const store *st, const sl_engine_opts *base, int64_t now, unsigned seed)
{
    sl_engine_opts opts = *base;
    sl_engine *eng = t_engine_opts(&opts);
    sl_engine_restore_counters(eng, st->next_seq, st->next_arrival, st->next_grant,
                               st->token_floor);
    for (size_t i = 0; i < ST_CONFIGS; i++) {
        const st_config *c = &st->configs[i];
        if (c->used)
            assert_int_equal(
                restore_config(eng, c->name, c->limit, c->strategy, c->lease_ms, c->overtake_ms),
                0);
    }
    for (size_t i = 0; i < ST_TOKENS; i++)
        if (st->tokens[i].used)
            assert_int_equal(sl_engine_restore_token(eng, st->tokens[i].key, st->tokens[i].token),
                             0);
    static size_t order[ST_CLAIMS];
    size_t n = 0;
    for (size_t i = 0; i < ST_CLAIMS; i++)
        if (st->claims[i].used)
            order[n++] = i;
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = seed && seed != BACKWARDS ? n : 0; i > 1; i--) {
        x = x * 1103515245u + 12345u;
        size_t j = (x >> 8) % i;
        size_t tmp = order[i - 1];
        order[i - 1] = order[j];
        order[j] = tmp;
    }
    for (size_t k = 0; k < n; k++) {
        const st_claim *s = &st->claims[order[seed == BACKWARDS ? n - 1 - k : k]];
        sl_claim_rec rec = {s->v, s->locks, s->tags};
        sl_error err;
        int rc = sl_engine_restore_claim(eng, &rec, &err);
        if (rc != 0)
            fail_msg("restore %s: %d %s", s->id, rc, err.what);
    }
    sl_engine_restore_done(eng, now);
    return eng;
}

/* ---- comparing two engines ----------------------------------------------- */

static void same_str(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

/* Everything of a claim but its lease clock (life and expiry); with `times`
 * false also not its creation, grant and end times, for engines that ran
 * the same operations at different times. */
static void same_claim(sl_engine *ea, sl_engine *eb, const sl_claim *ca, const sl_claim *cb,
                       bool times)
{
    sl_claim_view a, b;
    sl_claim_get(ca, &a);
    sl_claim_get(cb, &b);
    assert_string_equal(a.id, b.id);
    assert_string_equal(a.holder, b.holder);
    assert_int_equal(a.state, b.state);
    assert_int_equal(a.priority, b.priority);
    if (times) {
        assert_int_equal(a.created_ms, b.created_ms);
        assert_int_equal(a.arrived_ms, b.arrived_ms);
    }
    assert_int_equal(a.arrival, b.arrival);
    same_str(a.rebalance_key, b.rebalance_key);
    same_str(a.group, b.group);
    assert_int_equal(a.cancel, b.cancel);
    assert_int_equal(a.grace_ms, b.grace_ms);
    assert_int_equal(a.lease_ms, b.lease_ms);
    assert_int_equal(a.timeout_ms, b.timeout_ms);
    assert_int_equal(a.grant_seq, b.grant_seq);
    assert_int_equal(a.revoke_at_ms, b.revoke_at_ms);
    if (times) {
        assert_int_equal(a.granted_ms, b.granted_ms);
        assert_int_equal(a.ended_ms, b.ended_ms);
    }
    assert_int_equal(a.reason, b.reason);
    same_str(a.by, b.by);
    assert_int_equal(a.nlocks, b.nlocks);
    assert_int_equal(a.ntags, b.ntags);
    for (size_t i = 0; i < a.nlocks; i++) {
        sl_claim_lock_view la, lb;
        sl_claim_lock_get(ea, ca, i, &la);
        sl_claim_lock_get(eb, cb, i, &lb);
        assert_int_equal(la.kind, lb.kind);
        assert_string_equal(la.key, lb.key);
        assert_int_equal(la.slots, lb.slots);
        assert_int_equal(la.via, lb.via);
        assert_int_equal(la.token, lb.token);
        assert_int_equal(la.position, lb.position);
    }
    for (size_t i = 0; i < a.ntags; i++) {
        sl_tag ta, tb;
        sl_claim_tag_get(ca, i, &ta);
        sl_claim_tag_get(cb, i, &tb);
        assert_string_equal(ta.key, tb.key);
        assert_string_equal(ta.value, tb.value);
    }
    if (a.state == SL_PENDING) {
        size_t la = 0, lb = 0;
        assert_int_equal(sl_claim_main_rule(ea, ca, &la), sl_claim_main_rule(eb, cb, &lb));
        assert_int_equal(la, lb);
    }
}

static void same_lock(sl_engine *ea, sl_engine *eb, const sl_lock *la, bool times)
{
    sl_lock_view a, b;
    sl_lock_get(la, &a);
    const sl_lock *lb = NULL;
    assert_int_equal(sl_lock_lookup(eb, a.kind, a.name, &b, &lb), 0);
    assert_non_null(lb);
    assert_string_equal(a.key, b.key);
    assert_int_equal(a.limit, b.limit);
    assert_int_equal(a.strategy, b.strategy);
    assert_int_equal(a.configured, b.configured);
    same_str(a.from_pattern, b.from_pattern);
    assert_int_equal(a.used, b.used);
    assert_int_equal(a.token, b.token);
    assert_int_equal(a.nholders, b.nholders);
    assert_int_equal(a.npending, b.npending);

    sl_holder_view ha[16], hb[16];
    size_t nh = sl_lock_holders(la, 0, ha, 16);
    assert_int_equal(sl_lock_holders(lb, 0, hb, 16), nh);
    for (size_t i = 0; i < nh; i++) {
        assert_string_equal(t_id(ha[i].claim), t_id(hb[i].claim));
        assert_int_equal(ha[i].slots, hb[i].slots);
        assert_int_equal(ha[i].token, hb[i].token);
        if (times)
            assert_int_equal(ha[i].since_ms, hb[i].since_ms);
    }
    sl_waiter_view wa[16], wb[16];
    size_t nw = sl_lock_waiters(ea, la, 0, wa, 16);
    assert_int_equal(sl_lock_waiters(eb, lb, 0, wb, 16), nw);
    for (size_t i = 0; i < nw; i++) {
        assert_string_equal(t_id(wa[i].claim), t_id(wb[i].claim));
        assert_int_equal(wa[i].slots, wb[i].slots);
        assert_int_equal(wa[i].position, wb[i].position);
    }
}

static void same_engine(sl_engine *ea, sl_engine *eb, bool times)
{
    /* Every claim, in arrival order. */
    const sl_claim *ca = sl_claim_next(ea, NULL), *cb = sl_claim_next(eb, NULL);
    for (; ca; ca = sl_claim_next(ea, ca), cb = sl_claim_next(eb, cb)) {
        assert_non_null(cb);
        same_claim(ea, eb, ca, cb, times);
    }
    assert_null(cb);
    /* The one total order of pending claims. */
    ca = sl_pending_next(ea, NULL);
    cb = sl_pending_next(eb, NULL);
    for (; ca; ca = sl_pending_next(ea, ca), cb = sl_pending_next(eb, cb)) {
        assert_non_null(cb);
        assert_string_equal(t_id(ca), t_id(cb));
        assert_int_equal(sl_pending_position(ea, ca), sl_pending_position(eb, cb));
    }
    assert_null(cb);
    /* Every live lock, with its holders and waiters. */
    size_t na = 0, nb = 0;
    for (const sl_lock *l = sl_lock_next(ea, NULL); l; l = sl_lock_next(ea, l), na++)
        same_lock(ea, eb, l, times);
    for (const sl_lock *l = sl_lock_next(eb, NULL); l; l = sl_lock_next(eb, l))
        nb++;
    assert_int_equal(na, nb);
    sl_engine_stats sa, sb;
    sl_engine_stats_get(ea, &sa);
    sl_engine_stats_get(eb, &sb);
    assert_int_equal(sa.claims, sb.claims);
    assert_int_equal(sa.pending, sb.pending);
    assert_int_equal(sa.held, sb.held);
    assert_int_equal(sa.ended, sb.ended);
    assert_int_equal(sa.configs, sb.configs);
    assert_int_equal(sa.next_seq, sb.next_seq);
    sl_changes ha, hb;
    sl_engine_changes(ea, &ha);
    sl_engine_changes(eb, &hb);
    assert_int_equal(ha.next_arrival, hb.next_arrival);
    assert_int_equal(ha.next_grant, hb.next_grant);
    assert_int_equal(ha.token_floor, hb.token_floor);
}

/* The batches of A and B hold the same events, seq for seq, B's `dt` later. */
static void same_events(sl_engine *ea, sl_engine *eb, int64_t dt, const char *want)
{
    sl_changes a, b;
    sl_engine_changes(ea, &a);
    sl_engine_changes(eb, &b);
    assert_int_equal(a.nevents, b.nevents);
    for (size_t i = 0; i < a.nevents; i++) {
        assert_int_equal(a.events[i].seq, b.events[i].seq);
        assert_int_equal(a.events[i].type, b.events[i].type);
        assert_int_equal(a.events[i].reason, b.events[i].reason);
        assert_int_equal(a.events[i].time_ms + dt, b.events[i].time_ms);
        assert_string_equal(t_id(a.events[i].claim), t_id(b.events[i].claim));
    }
    assert_int_equal(a.nevicted, b.nevicted);
    for (size_t i = 0; i < a.nevicted; i++)
        assert_string_equal(a.evicted[i], b.evicted[i]);
    assert_int_equal(a.token_floor, b.token_floor);
    sl_engine_changes_clear(eb);
    assert_string_equal(t_events(ea), want);
}

/* ---- the workload -------------------------------------------------------- */

static void w_sem(sl_engine *eng, store *st, int64_t now, const char *name, uint32_t limit,
                  sl_strategy s)
{
    t_sem(eng, now, name, limit, s);
    capture(st, eng);
}

static void w_claim(sl_engine *eng, store *st, int64_t now, const char *spec)
{
    t_claim(eng, now, spec);
    capture(st, eng);
}

static void w_release(sl_engine *eng, store *st, int64_t now, const char *id)
{
    t_release(eng, now, id);
    capture(st, eng);
}

static void restore_opts(sl_engine_opts *opts)
{
    sl_engine_opts_default(opts);
    opts->idle_locks_max = 2;
}

/* Configurations (exact, patterns, a rebalanced one, one deleted), holders,
 * waiters in several orders, a revoking holder, ended claims of four kinds,
 * tags, a group, tokens that moved, idle and forgotten locks. */
static void workload(sl_engine *a, store *st)
{
    sl_error err;
    w_sem(a, st, 100, "pool", 3, SL_STRICT);
    w_sem(a, st, 100, "tenant/*", 2, SL_SKIP);
    w_sem(a, st, 100, "fair", 2, SL_REBALANCED);
    w_sem(a, st, 100, "tag/env=*", 1, SL_STRICT);
    w_sem(a, st, 100, "deleted-sem", 1, SL_STRICT);
    w_claim(a, st, 110, "id=old1 m:old");
    w_release(a, st, 120, "old1");
    assert_int_equal(sl_sem_delete(a, "deleted-sem", 130, &err), 0);
    capture(st, a);
    const char *counter[] = {"c1", "c2", "c3"};
    for (int i = 0; i < 3; i++) {
        char spec[32];
        snprintf(spec, sizeof(spec), "id=%s m:counter", counter[i]);
        w_claim(a, st, 140 + 10 * i, spec);
        w_release(a, st, 145 + 10 * i, counter[i]);
    }
    w_claim(a, st, 200, "id=h1 m:deploy s:pool*2 lease=60000 tag=env=prod tag=team=core");
    w_claim(a, st, 210, "id=p1 m:deploy s:pool lease=60000");
    w_claim(a, st, 220, "id=p2 s:pool*2 prio=5 lease=60000");
    w_claim(a, st, 230, "id=t1 s:tenant/x*2 key=K");
    w_claim(a, st, 240, "id=f1 s:fair key=A lease=60000");
    w_claim(a, st, 250, "id=f2 s:fair key=A lease=60000");
    w_claim(a, st, 260, "id=f3 s:fair key=A");
    w_claim(a, st, 270, "id=f4 s:fair key=B");
    w_claim(a, st, 280, "id=f5 s:fair key=B");
    w_claim(a, st, 300, "id=g1 group=ci lease=60000");
    w_claim(a, st, 310, "id=g2 group=ci cancel=in-progress grace=1000000 lease=60000");
    w_claim(a, st, 320, "id=e1 m:tmp");
    w_release(a, st, 330, "e1");
    w_claim(a, st, 340, "id=e2 m:deploy");
    w_release(a, st, 350, "e2");
    w_claim(a, st, 360, "id=e3 m:deploy timeout=100");
    sl_engine_advance(a, 460);
    capture(st, a);
    w_claim(a, st, 470, "id=e5 m:deploy");
    assert_int_equal(sl_claim_cancel(a, t_find(a, "e5"), 475), 0);
    capture(st, a);
    w_claim(a, st, 480, "id=w1 m:deploy prio=-1 created=10 lease=60000");
    sl_claim_watch(a, t_find(a, "w1"), +1, 490);
    capture(st, a);
    capture(st, a); /* the evictions of the last clear */
}

/* What A looks like before anything is restored: the workload did what it
 * meant to. */
static void check_workload(sl_engine *a)
{
    assert_string_equal(t_with_state(a, SL_HELD), "h1 t1 f1 f2");
    assert_string_equal(t_with_state(a, SL_PENDING), "p1 p2 f3 f4 f5 g2 w1");
    assert_string_equal(t_with_state(a, SL_REVOKING), "g1");
    assert_string_equal(t_with_state(a, SL_RELEASED), "old1 c1 c2 c3 e1");
    assert_string_equal(t_with_state(a, SL_WITHDRAWN), "e2");
    assert_string_equal(t_with_state(a, SL_TIMED_OUT), "e3");
    assert_string_equal(t_with_state(a, SL_CANCELED), "e5");
    sl_changes ch;
    sl_engine_changes(a, &ch);
    assert_int_equal(ch.token_floor, 1); /* mtx/old was forgotten */
    assert_false(sl_engine_changes_pending(a));
    sl_lock_view v;
    const sl_lock *l;
    assert_int_equal(sl_lock_lookup(a, SL_KIND_MUTEX, "counter", &v, &l), 0);
    assert_int_equal(v.token, 3);
    assert_int_equal(v.nholders + v.npending, 0); /* idle, remembered */
    assert_int_equal(sl_lock_lookup(a, SL_KIND_MUTEX, "old", &v, &l), 0);
    assert_null(l);
    /* Locks made after that start from the floor: deploy (made at 200) gave
     * h1 token 2, pool (made at 100, before) gave it 1. */
    assert_int_equal(t_token(a, "h1", 0), 2);
    assert_int_equal(t_token(a, "h1", 1), 1);
    assert_int_equal(t_token(a, "h1", 2), 2);
    assert_int_equal(t_token(a, "g1", 0), 2);
    /* The rebalanced order of choice: B below its share goes first. */
    assert_int_equal(sl_lock_lookup(a, SL_KIND_SEMAPHORE, "fair", &v, &l), 0);
    sl_waiter_view w[4];
    assert_int_equal(sl_lock_waiters(a, l, 0, w, 4), 3);
    assert_string_equal(t_id(w[0].claim), "f4");
    assert_string_equal(t_id(w[1].claim), "f3");
    assert_string_equal(t_id(w[2].claim), "f5");
}

static void rebuilt_engine_equals_the_original(void **state)
{
    (void)state;
    sl_engine_opts opts;
    restore_opts(&opts);
    sl_engine *a = t_engine_opts(&opts);
    store *st = st_new();
    workload(a, st);
    check_workload(a);
    assert_int_equal(st_nclaims(st), 20);

    const int64_t tb = 500000; /* A's leases would all have run out by then */
    sl_engine *b = rebuild(st, &opts, tb, 7);
    /* Nothing was due: restoring emits nothing and changes nothing. */
    assert_false(sl_engine_changes_pending(b));
    same_engine(a, b, true);

    /* Held and pending claims got a full lease from the restore time. */
    sl_claim_view va, vb;
    sl_claim_get(t_find(a, "h1"), &va);
    sl_claim_get(t_find(b, "h1"), &vb);
    assert_int_equal(va.expires_ms, 60200);
    assert_int_equal(vb.expires_ms, tb + 60000);
    assert_int_equal(vb.life_ms, tb);
    sl_claim_get(t_find(b, "p1"), &vb);
    assert_int_equal(vb.expires_ms, tb + 60000);
    sl_claim_get(t_find(b, "t1"), &vb);
    assert_int_equal(vb.expires_ms, -1);
    /* The grace deadline stays where it was. */
    sl_claim_get(t_find(b, "g1"), &vb);
    assert_int_equal(vb.revoke_at_ms, 310 + 1000000);
    assert_int_equal(sl_engine_next_deadline(b), tb + 60000);
    /* Waiters do not bring their watchers back: the server's waits died. */
    sl_claim_get(t_find(b, "w1"), &vb);
    assert_int_equal(vb.watchers, 0);

    /* From here both engines must go on identically. */
    sl_changes ch;
    sl_engine_changes(a, &ch);
    uint64_t next = ch.next_seq;
    const int64_t ta = 1000, dt = tb - ta;
    t_release(a, ta, "h1");
    t_release(b, ta + dt, "h1");
    sl_engine_changes(b, &ch);
    assert_int_equal(ch.events[0].seq, next);
    same_events(a, b, dt, "claim.released:h1 claim.acquired:p2 claim.acquired:p1");
    for (int k = 0; k < 2; k++) {
        sl_engine *e = k ? b : a;
        assert_int_equal(t_token(e, "p2", 0), 2); /* pool continues */
        assert_int_equal(t_token(e, "p1", 1), 3);
        assert_int_equal(t_token(e, "p1", 0), 3); /* deploy continues */
    }
    t_release(a, ta + 1, "g1");
    t_release(b, ta + dt + 1, "g1");
    /* h1's release left tag/env=prod idle, a third idle lock: the clear
     * forgot the oldest, counter (token 3), in both engines alike. */
    sl_engine_changes(b, &ch);
    assert_int_equal(ch.nevicted, 1);
    assert_string_equal(ch.evicted[0], "mtx/counter");
    assert_int_equal(ch.token_floor, 3);
    same_events(a, b, dt, "claim.canceled:g1 claim.acquired:g2");
    assert_int_equal(t_token(b, "g2", 0), 3);
    t_release(a, ta + 2, "f1");
    t_release(b, ta + dt + 2, "f1");
    same_events(a, b, dt, "claim.released:f1 claim.acquired:f4");
    assert_int_equal(t_token(b, "f4", 0), 3);
    /* Idle locks continue their tokens, forgotten ones the floor. */
    const char *more[] = {"id=n1 m:counter", "id=n2 m:old", "id=n3 m:tmp", "id=n4 m:deploy"};
    for (size_t i = 0; i < 4; i++) {
        t_claim(a, ta + 3, more[i]);
        t_claim(b, ta + dt + 3, more[i]);
    }
    same_events(a, b, dt,
                "claim.queued:n1 claim.acquired:n1 claim.queued:n2 "
                "claim.acquired:n2 claim.queued:n3 claim.acquired:n3 "
                "claim.queued:n4 claim.waiting:n4");
    assert_int_equal(t_token(b, "n1", 0), 4);
    assert_int_equal(t_token(b, "n2", 0), 4);
    assert_int_equal(t_token(b, "n3", 0), 3);
    same_engine(a, b, false);

    free(st);
    sl_engine_free(a); /* t_free counts both engines' blocks */
    t_free(b);
}

/* The result may not depend on the order in which the store hands the
 * claims over. */
static void any_record_order_gives_the_same_engine(void **state)
{
    (void)state;
    sl_engine_opts opts;
    restore_opts(&opts);
    sl_engine *a = t_engine_opts(&opts);
    store *st = st_new();
    workload(a, st);
    for (unsigned seed = 0; seed < 12; seed++) {
        sl_engine *b = rebuild(st, &opts, 2000, seed);
        assert_false(sl_engine_changes_pending(b));
        same_engine(a, b, true);
        sl_engine_free(b);
    }
    free(st);
    t_free(a);
}

/* Many claims: long queues of mixed priorities and creation times (so the
 * queue order is not the arrival order), claims on two locks, a semaphore
 * with many holders, skip and rebalanced queues, ended claims. */
static void bulk_workload(sl_engine *a, store *st)
{
    char spec[160];
    int64_t t = 1000;
    w_sem(a, st, t, "pool", 6, SL_STRICT);
    w_sem(a, st, t, "skip", 4, SL_SKIP);
    w_sem(a, st, t, "fair", 3, SL_REBALANCED);
    w_sem(a, st, t, "wide", 300, SL_STRICT);
    uint32_t x = 12345;
    for (int i = 0; i < 2600; i++) {
        x = x * 1103515245u + 12345u;
        unsigned r = x >> 8;
        int prio = (int)(r % 5) - 2, created = (int)((r / 5) % 1000);
        switch (i % 8) {
        case 0:
        case 1:
        case 2:
            snprintf(spec, sizeof spec, "id=c%d m:m%u prio=%d created=%d", i, (r / 7) % 9, prio,
                     created);
            break;
        case 3:
            snprintf(spec, sizeof spec, "id=c%d m:m%u s:pool*%u prio=%d", i, (r / 7) % 9,
                     1 + (r / 11) % 3, prio);
            break;
        case 4:
            snprintf(spec, sizeof spec, "id=c%d s:skip*%u created=%d", i, 1 + (r / 11) % 4,
                     created);
            break;
        case 5:
            snprintf(spec, sizeof spec, "id=c%d s:fair key=k%u", i, (r / 13) % 5);
            break;
        default:
            snprintf(spec, sizeof spec, "id=c%d s:wide prio=%d", i, prio);
            break;
        }
        w_claim(a, st, ++t, spec);
        if (r % 17 == 0) { /* some end: released, withdrawn */
            snprintf(spec, sizeof spec, "c%d", i);
            w_release(a, st, ++t, spec);
        }
    }
}

/* The batches of A and B hold the same events, type and claim for claim. */
static void same_batch(sl_engine *ea, sl_engine *eb)
{
    sl_changes a, b;
    sl_engine_changes(ea, &a);
    sl_engine_changes(eb, &b);
    assert_int_equal(a.nevents, b.nevents);
    for (size_t i = 0; i < a.nevents; i++) {
        assert_int_equal(a.events[i].seq, b.events[i].seq);
        assert_int_equal(a.events[i].type, b.events[i].type);
        assert_string_equal(t_id(a.events[i].claim), t_id(b.events[i].claim));
    }
    sl_engine_changes_clear(ea);
    sl_engine_changes_clear(eb);
}

static size_t a_held(sl_engine *a)
{
    sl_engine_stats st;
    sl_engine_stats_get(a, &st);
    return st.held;
}

/* Restoring many claims in arrival order, shuffled, or backwards (queues
 * built in bulk, holders and claims sorted at the end) gives the engine
 * that made them; and the rebuilt queues keep working: releasing every
 * holder in turn grants the same claims, in the same order, as in A. */
static void many_claims_in_any_order(void **state)
{
    (void)state;
    sl_engine_opts opts;
    restore_opts(&opts);
    sl_engine *a = t_engine_opts(&opts);
    store *st = st_new();
    bulk_workload(a, st);
    sl_engine_stats sa;
    sl_engine_stats_get(a, &sa);
    assert_true(sa.pending > 1500 && sa.held > 250 && sa.ended > 100);
    for (unsigned seed = 0; seed < 3; seed++) {
        sl_engine *b = rebuild(st, &opts, 500000, seed);
        assert_false(sl_engine_changes_pending(b));
        same_engine(a, b, true);
        sl_engine_free(b);
    }
    /* Backwards: the worst order for one-by-one insertion. */
    sl_engine *b = rebuild(st, &opts, 500000, BACKWARDS);
    same_engine(a, b, true);
    sl_changes ch;
    sl_engine_changes(a, &ch);
    int64_t ta = 100000, dt = 500000 - ta;
    for (int pass = 0; pass < 2000 && a_held(a) > 0; pass++) {
        for (const sl_claim *c = sl_claim_next(a, NULL); c; c = sl_claim_next(a, c)) {
            sl_claim_view v;
            sl_claim_get(c, &v);
            if (v.state != SL_HELD)
                continue;
            char id[SL_ID_MAX + 1];
            snprintf(id, sizeof id, "%s", v.id);
            t_release(a, ++ta, id);
            t_release(b, ta + dt, id);
            same_batch(a, b);
            c = t_find(a, id); /* still there: ended claims are kept */
        }
    }
    sl_engine_stats_get(a, &sa);
    assert_int_equal(sa.held + sa.pending, 0);
    same_engine(a, b, false);
    free(st);
    sl_engine_free(a);
    t_free(b);
}

/* Deadlines that passed while the server was down fire at their own time,
 * in the first batch after restore, with the sequence continuing. */
static void deadlines_due_during_downtime_fire_at_their_time(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    sl_engine *a = t_engine_opts(&opts);
    store *st = st_new();
    w_claim(a, st, 0, "id=h group=g lease=500");
    w_claim(a, st, 100, "id=n group=g cancel=in-progress grace=1000");
    w_claim(a, st, 150, "id=e m:x");
    w_release(a, st, 200, "e");
    uint64_t next = st->next_seq;

    /* At 2000, h's grace (1100) is past, but not e's retention. */
    sl_engine *b = rebuild(st, &opts, 2000, 1);
    sl_changes ch;
    sl_engine_changes(b, &ch);
    assert_int_equal(ch.nevents, 2);
    assert_int_equal(ch.events[0].seq, next);
    assert_int_equal(ch.events[1].seq, next + 1);
    assert_int_equal(ch.events[0].time_ms, 1100);
    assert_int_equal(ch.events[1].time_ms, 1100);
    assert_int_equal(ch.events[0].reason, SL_REASON_GRACE);
    assert_int_equal(ch.npurged, 0);
    assert_string_equal(t_events(b), "claim.canceled:h claim.acquired:n");
    sl_claim_view v;
    sl_claim_get(t_find(b, "n"), &v);
    assert_int_equal(v.granted_ms, 1100);
    assert_int_equal(t_token(b, "n", 0), 2);
    /* h's lease (500 from its creation) was never due: restore renewed it. */
    sl_claim_get(t_find(b, "h"), &v);
    assert_int_equal(v.reason, SL_REASON_GRACE);

    /* Restored past e's retention, e is purged in that first batch too. */
    sl_engine *c = rebuild(st, &opts, 200 + 3600000, 2);
    sl_engine_changes(c, &ch);
    assert_int_equal(ch.npurged, 1);
    assert_string_equal(ch.purged[0], "e");
    assert_null(sl_claim_find(c, "e"));
    assert_string_equal(t_events(c), "claim.canceled:h claim.acquired:n");

    free(st);
    sl_engine_free(a);
    sl_engine_free(b);
    t_free(c);
}

/* Exactly one full lease from the restore time, to the millisecond. */
static void restore_gives_one_full_lease(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    sl_engine *a = t_engine_opts(&opts);
    store *st = st_new();
    w_claim(a, st, 0, "id=h m:x lease=1000");
    w_claim(a, st, 10, "id=p m:x lease=1000");
    /* A timeout is not a lease: it counts from arrival, restart or not. */
    w_claim(a, st, 20, "id=k m:y");
    w_claim(a, st, 30, "id=q m:y timeout=8000");
    sl_engine *b = rebuild(st, &opts, 5000, 3);
    assert_false(sl_engine_changes_pending(b));
    assert_int_equal(t_state(b, "h"), SL_HELD);
    sl_engine_advance(b, 5999);
    assert_string_equal(t_events(b), "");
    sl_engine_advance(b, 6000);
    /* Both ran out at 6000; the older goes first, so p is let in then
     * expires at once in the same millisecond. */
    assert_string_equal(t_events(b), "claim.expired:h claim.acquired:p claim.expired:p");
    sl_claim_view v;
    sl_claim_get(t_find(b, "h"), &v);
    assert_int_equal(v.ended_ms, 6000);
    sl_engine_advance(b, 8029);
    assert_int_equal(t_state(b, "q"), SL_PENDING);
    sl_engine_advance(b, 8030);
    assert_string_equal(t_events(b), "claim.timed_out:q");
    free(st);
    sl_engine_free(a);
    t_free(b);
}

/* A lock made before token_floor last rose keeps a token below the floor;
 * restored, it must continue from its own token, not jump to the floor. */
static void tokens_below_the_floor_continue_exactly(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.idle_locks_max = 0;
    sl_engine *a = t_engine_opts(&opts);
    store *st = st_new();
    w_sem(a, st, 0, "db", 2, SL_STRICT);
    w_claim(a, st, 1, "id=h s:db");
    w_claim(a, st, 2, "id=idle m:x");
    w_release(a, st, 3, "idle");
    for (int i = 0; i < 4; i++) {
        char spec[32];
        snprintf(spec, sizeof(spec), "id=x%d m:x", i);
        w_claim(a, st, 4 + i, spec);
        snprintf(spec, sizeof(spec), "x%d", i);
        w_release(a, st, 4 + i, spec);
    }
    capture(st, a);
    assert_int_equal(st->token_floor, 5); /* mtx/x reached 5, forgotten */
    sl_engine *b = rebuild(st, &opts, 100, 4);
    same_engine(a, b, true);
    sl_lock_view v;
    assert_int_equal(sl_lock_lookup(b, SL_KIND_SEMAPHORE, "db", &v, NULL), 0);
    assert_int_equal(v.token, 1);
    t_claim(a, 101, "id=n s:db");
    t_claim(b, 101, "id=n s:db");
    assert_int_equal(t_token(a, "n", 0), 2);
    assert_int_equal(t_token(b, "n", 0), 2);
    /* A name forgotten in A starts from the floor in both. */
    t_claim(a, 102, "id=m m:x");
    t_claim(b, 102, "id=m m:x");
    assert_int_equal(t_token(b, "m", 0), 6);
    same_engine(a, b, true);
    free(st);
    sl_engine_free(a);
    t_free(b);
}

/* ---- refusals -------------------------------------------------------------- */

typedef struct rec_buf {
    sl_claim_rec rec;
    sl_claim_lock_rec lock;
    sl_tag tag;
} rec_buf;

static void good_rec(rec_buf *r, const char *id)
{
    memset(r, 0, sizeof(*r));
    r->rec.v.id = id;
    r->rec.v.holder = "wf";
    r->rec.v.state = SL_HELD;
    r->rec.v.created_ms = r->rec.v.arrived_ms = r->rec.v.life_ms = 10;
    r->rec.v.granted_ms = 10;
    r->rec.v.arrival = 1;
    r->rec.v.grant_seq = 1;
    r->rec.v.revoke_at_ms = r->rec.v.ended_ms = r->rec.v.expires_ms = -1;
    r->rec.v.grace_ms = 30000;
    r->rec.v.nlocks = 1;
    r->rec.v.ntags = 1;
    r->lock = (sl_claim_lock_rec){SL_KIND_MUTEX, "x", 1, SL_VIA_LOCK, 5, 0, 0};
    r->tag = (sl_tag){"env", "prod"};
    r->rec.locks = &r->lock;
    r->rec.tags = &r->tag;
}

static void refused_rec(sl_engine *eng, const rec_buf *r)
{
    sl_engine_stats before, after;
    sl_engine_stats_get(eng, &before);
    sl_error err;
    memset(&err, 0, sizeof(err));
    assert_int_equal(sl_engine_restore_claim(eng, &r->rec, &err), SL_EINVAL);
    assert_int_equal(err.code, SL_EINVAL);
    assert_non_null(err.what);
    sl_engine_stats_get(eng, &after);
    assert_int_equal(after.claims, before.claims);
    assert_int_equal(after.locks, before.locks);
    assert_int_equal(after.held, before.held);
    assert_int_equal(after.mem_blocks, before.mem_blocks);
    assert_false(sl_engine_changes_pending(eng));
}

static void bad_records_are_refused_and_change_nothing(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_engine_restore_counters(eng, 10, 2, 2, 0);
    rec_buf *r = test_malloc(sizeof(*r));
    good_rec(r, "a");
    sl_error err;
    assert_int_equal(sl_engine_restore_claim(eng, &r->rec, &err), 0);

    /* The same id again, even with other contents. */
    good_rec(r, "a");
    r->rec.v.state = SL_RELEASED;
    refused_rec(eng, r);
    char longid[80];
    memset(longid, 'i', SL_ID_MAX + 1);
    longid[SL_ID_MAX + 1] = '\0';
    const char *ids[] = {"", NULL, longid};
    for (size_t i = 0; i < 3; i++) {
        good_rec(r, ids[i]);
        refused_rec(eng, r);
    }
    good_rec(r, "b");
    r->rec.v.holder = NULL;
    refused_rec(eng, r);
    good_rec(r, "b");
    r->rec.v.state = (sl_state)42;
    refused_rec(eng, r);
    good_rec(r, "b");
    r->lock.slots = 0;
    refused_rec(eng, r);
    const char *names[] = {"a//b", "/x", "", NULL, "x*"};
    for (size_t i = 0; i < 5; i++) {
        good_rec(r, "b");
        r->lock.name = names[i];
        refused_rec(eng, r);
    }
    good_rec(r, "b");
    r->lock.kind = (sl_kind)7;
    refused_rec(eng, r);
    good_rec(r, "b");
    r->lock.via = (sl_via)9;
    refused_rec(eng, r);
    /* A tag without a key or a value (a NULL from a damaged row). */
    good_rec(r, "b");
    r->tag.key = NULL;
    refused_rec(eng, r);
    good_rec(r, "b");
    r->tag.value = NULL;
    refused_rec(eng, r);
    /* The same lock twice, which sl_claim_create never lets in. */
    sl_claim_lock_rec twice[2] = {{SL_KIND_MUTEX, "y", 1, SL_VIA_LOCK, 0, 0, 0},
                                  {SL_KIND_MUTEX, "y", 1, SL_VIA_GROUP, 0, 0, 0}};
    good_rec(r, "b");
    r->rec.v.state = SL_PENDING;
    r->rec.v.nlocks = 2;
    r->rec.locks = twice;
    refused_rec(eng, r);
    good_rec(r, "b");
    r->rec.v.nlocks = SL_CLAIM_LOCKS_MAX + 1;
    refused_rec(eng, r);
    good_rec(r, "b");
    r->rec.v.ntags = SL_TAGS_MAX + 1;
    refused_rec(eng, r);

    /* Tokens and configurations are checked too. */
    const char *keys[] = {"xyz/a", "mtx/", "mtx/a//b", "mtx", NULL};
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(sl_engine_restore_token(eng, keys[i], 9), SL_EINVAL);
    assert_int_equal(restore_config(eng, "bad//", 1, SL_STRICT, 0, 0), SL_EINVAL);
    assert_int_equal(restore_config(eng, "ok", 1, SL_STRICT, -1, 0), SL_EINVAL);
    assert_int_equal(restore_config(eng, "ok", 1, SL_STRICT, 0, 0), 0);
    assert_int_equal(restore_config(eng, "ok", 2, SL_STRICT, 0, 0), SL_ECONFLICT);

    /* What was accepted works: a holds x with token 5, and the next grant
     * continues from it; the event sequence from the counter. */
    sl_engine_restore_done(eng, 100);
    assert_false(sl_engine_changes_pending(eng));
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    sl_tag t;
    sl_claim_tag_get(t_find(eng, "a"), 0, &t);
    assert_string_equal(t.value, "prod");
    assert_int_equal(t_used(eng, SL_KIND_MUTEX, "x"), 1);
    t_claim(eng, 110, "id=n m:x");
    t_release(eng, 120, "a");
    assert_int_equal(t_token(eng, "n", 0), 6);
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.events[0].seq, 10);
    sl_claim_view v;
    sl_claim_get(t_find(eng, "n"), &v);
    assert_int_equal(v.arrival, 2);
    assert_int_equal(v.grant_seq, 2);
    test_free(r);
    t_free(eng);
}

/* Names with "." or ".." segments are refused today, but a store written
 * before may hold them: they are restored (a server must start on it). */
static void saved_dotted_names_are_restored(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_engine_restore_counters(eng, 10, 2, 2, 0);
    assert_int_equal(restore_config(eng, "team-a/../db", 2, SL_STRICT, 0, 0), 0);
    assert_int_equal(sl_engine_restore_token(eng, "mtx/a/./b", 4), 0);
    rec_buf *r = test_malloc(sizeof(*r));
    good_rec(r, "a");
    r->lock.name = "a/./b";
    sl_error err;
    assert_int_equal(sl_engine_restore_claim(eng, &r->rec, &err), 0);
    sl_engine_restore_done(eng, 100);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    /* ... and never made anew. */
    assert_int_equal(t_claim_rc(eng, 110, "id=n m:a/../c", NULL), SL_EINVAL);
    sl_error serr;
    assert_int_equal(sl_sem_set(eng, "x/./y", 1, SL_STRICT, 0, 110, &serr), SL_EINVAL);
    test_free(r);
    t_free(eng);
}

/* Counters never go backwards, even if a record claims more than they say. */
static void counters_cover_the_records(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_engine_restore_counters(eng, 50, 3, 3, 7);
    rec_buf *r = test_malloc(sizeof(*r));
    good_rec(r, "a");
    r->rec.v.arrival = 40;
    r->rec.v.grant_seq = 30;
    sl_error err;
    assert_int_equal(sl_engine_restore_claim(eng, &r->rec, &err), 0);
    sl_engine_restore_done(eng, 100);
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.next_seq, 50);
    assert_int_equal(ch.next_arrival, 41);
    assert_int_equal(ch.next_grant, 31);
    assert_int_equal(ch.token_floor, 7);
    /* A never-used lock starts from the floor. */
    t_claim(eng, 110, "id=n m:fresh");
    assert_int_equal(t_token(eng, "n", 0), 8);
    test_free(r);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rebuilt_engine_equals_the_original),
        cmocka_unit_test(any_record_order_gives_the_same_engine),
        cmocka_unit_test(many_claims_in_any_order),
        cmocka_unit_test(deadlines_due_during_downtime_fire_at_their_time),
        cmocka_unit_test(restore_gives_one_full_lease),
        cmocka_unit_test(tokens_below_the_floor_continue_exactly),
        cmocka_unit_test(bad_records_are_refused_and_change_nothing),
        cmocka_unit_test(saved_dotted_names_are_restored),
        cmocka_unit_test(counters_cover_the_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
