/* restore.c - rebuilding the engine from what the store saved.
 *
 * The store saves counters (next event sequence, arrival, grant order and
 * the token floor), configurations, each lock's last token and every claim
 * with its expanded locks and tokens. Restoring puts waiters back in their
 * queues and holders back in grant order without moving any token, so that
 * tokens, queue order and the event sequence continue as if nothing had
 * happened. Then every live claim gets a full lease from now: its client
 * could not renew while the server was down.
 *
 * A server restarts with a million claims, so each one must cost little:
 * claims are put at the back of the list of claims and of their locks'
 * holders, and waiters at the back of their queues (listed, not inserted
 * into the trees), comparing nothing. restore_done then sorts whatever came
 * out of order (nothing, when the store hands claims over in arrival
 * order) and builds every queue's tree in one pass, O(n) instead of a walk
 * to the root per waiter. */
#include <stdlib.h>
#include <string.h>

#include "engine_int.h"

void sl_engine_restore_counters(sl_engine *eng, uint64_t next_seq, uint64_t next_arrival,
                                uint64_t next_grant, uint64_t token_floor)
{
    if (next_seq > eng->next_seq)
        eng->next_seq = next_seq;
    if (next_arrival > eng->next_arrival)
        eng->next_arrival = next_arrival;
    if (next_grant > eng->next_grant)
        eng->next_grant = next_grant;
    if (token_floor > eng->token_floor)
        eng->token_floor = token_floor;
}

/* *idhash gets the id's hash, for the lookup here and the insert after. */
static int check_rec(const sl_engine *eng, const sl_claim_rec *rec, sl_xlock *x,
                     uint64_t *idhash, sl_error *err)
{
    const sl_claim_view *v = &rec->v;
    size_t idlen = v->id ? strlen(v->id) : 0;
    if (idlen > 0 && idlen <= SL_ID_MAX)
        *idhash = sl__hash_of(&eng->claims, v->id, idlen);
    if (idlen == 0 || idlen > SL_ID_MAX ||
        sl__hash_find_hashed(&eng->claims, v->id, idlen, *idhash) || !v->holder ||
        (unsigned)v->state > SL_CANCELED || v->nlocks > SL_CLAIM_LOCKS_MAX ||
        v->ntags > SL_TAGS_MAX || (v->idem && (!*v->idem || strlen(v->idem) > SL_IDEM_MAX)) ||
        sl__idem_taken(eng, v->idem) || (v->actor && strlen(v->actor) > SL_ACTOR_MAX)) {
        sl__error_set(err, SL_EINVAL, "a saved claim is malformed or repeated", "id", v->id, 0);
        return SL_EINVAL;
    }
    int group_seen = 0;
    for (size_t i = 0; i < v->nlocks; i++) {
        const sl_claim_lock_rec *lr = &rec->locks[i];
        size_t len = lr->name ? strlen(lr->name) : 0;
        bool valid = len > 0 && len <= SL_NAME_MAX, twice = false;
        x[i].lock = NULL;
        if (valid) {
            sl__lock_key(lr->kind, lr->name, len, x[i].key, &x[i].keylen);
            /* A lock that exists had its name checked when it was made;
             * rec_place takes it from here rather than looking it up again. */
            x[i].lock = sl__lock_find(eng, x[i].key, x[i].keylen);
            valid = x[i].lock || sl__name_valid_saved(lr->name, len, false);
            for (size_t j = 0; j < i; j++)
                twice |= x[j].keylen == x[i].keylen && memcmp(x[j].key, x[i].key, x[i].keylen) == 0;
        }
        /* As sl_claim_create would have it: a known kind and origin, and no
         * lock twice (the queues assume one entry per claim and lock). */
        if (!valid || lr->slots == 0 || (unsigned)lr->kind > SL_KIND_SEMAPHORE ||
            (unsigned)lr->via > SL_VIA_GROUP || twice) {
            sl__error_set(err, SL_EINVAL, "a saved claim has a malformed lock", "locks",
                          lr->name, 0);
            return SL_EINVAL;
        }
        x[i].slots = lr->slots;
        x[i].via = lr->via;
        x[i].cfg_lease = 0;
        x[i].inline_limit = lr->inline_limit <= SL_LIMIT_MAX ? lr->inline_limit : 0;
        x[i].cancel = (unsigned)lr->cancel <= SL_CANCEL_IN_PROGRESS ? (uint8_t)lr->cancel : 0;
        /* The first group's cancel is the claim's (rows saved before
         * several groups came carry it there only). */
        if (lr->via == SL_VIA_GROUP && !group_seen++ && x[i].cancel == SL_CANCEL_NONE &&
            (unsigned)v->cancel <= SL_CANCEL_IN_PROGRESS)
            x[i].cancel = (uint8_t)v->cancel;
    }
    /* Tags are copied with strlen: a missing key or value must stop here. */
    for (size_t i = 0; i < v->ntags; i++) {
        const sl_tag *t = &rec->tags[i];
        if (!t->key || !*t->key || !t->value || !*t->value) {
            sl__error_set(err, SL_EINVAL, "a saved claim has a malformed tag", "tags", t->key, 0);
            return SL_EINVAL;
        }
    }
    return 0;
}

static void rec_fields(sl_engine *eng, sl_claim *c, const sl_claim_rec *rec)
{
    const sl_claim_view *v = &rec->v;
    c->state = (uint8_t)v->state;
    c->priority = v->priority;
    c->created = v->created_ms;
    c->arrived = v->arrived_ms;
    c->arrival = v->arrival;
    c->cancel = (uint8_t)v->cancel;
    c->grace = v->grace_ms;
    c->lease = v->lease_ms;
    c->timeout = v->timeout_ms;
    c->life = v->life_ms;
    c->granted = v->granted_ms;
    c->grant_seq = v->grant_seq;
    c->revoke_at = v->revoke_at_ms;
    c->ended = v->ended_ms;
    c->reason = (uint8_t)v->reason;
    if (v->by && *v->by)
        c->by = sl__strndup(&eng->mem, v->by, strlen(v->by));
    for (size_t i = 0; i < c->nlocks; i++)
        c->e[i].token = rec->locks[i].token;
    if (v->arrival >= eng->next_arrival)
        eng->next_arrival = v->arrival + 1;
    if (v->grant_seq >= eng->next_grant)
        eng->next_grant = v->grant_seq + 1;
}

/* Indexes the claim and puts it at the back of the list of every claim;
 * restore_done sorts the list into arrival order if it came otherwise. */
static void rec_link(sl_engine *eng, sl_claim *c, uint64_t idhash)
{
    sl__hash_insert_hashed(&eng->claims, &c->hnode, idhash);
    if (eng->ctail && eng->ctail->arrival > c->arrival)
        eng->restore_unsorted = true;
    c->prev = eng->ctail;
    c->next = NULL;
    if (eng->ctail)
        eng->ctail->next = c;
    else
        eng->chead = c;
    eng->ctail = c;
    sl__timer_init(&c->timer, c->arrival);
}

static void rec_place(sl_engine *eng, sl_claim *c, const sl_xlock *x)
{
    if (sl_state_ended((sl_state)c->state)) {
        eng->nended++;
        return;
    }
    for (size_t i = 0; i < c->nlocks; i++) {
        sl_centry *e = &c->e[i];
        e->lock = x[i].lock ? x[i].lock : sl__lock_get(eng, x[i].key, x[i].keylen);
        sl__lock_set_inline(eng, e->lock, e->inl);
        if (c->state == SL_PENDING)
            sl__queue_restore(eng, e);
        else
            sl__lock_holder_append(eng, e);
    }
    if (c->state == SL_PENDING)
        sl__pending_add(eng, c);
    else
        eng->nheld++;
}

int sl_engine_restore_claim(sl_engine *eng, const sl_claim_rec *rec, sl_error *err)
{
    sl_xlock *x = sl__xlocks(eng);
    uint64_t idhash = 0;
    int rc = check_rec(eng, rec, x, &idhash, err);
    if (rc)
        return rc;
    eng->restoring = true;
    sl_claim_req req;
    memset(&req, 0, sizeof(req));
    req.id = rec->v.id;
    req.holder = rec->v.holder;
    req.group = rec->v.group;
    req.rebalance_key = rec->v.rebalance_key;
    req.tags = rec->tags;
    req.ntags = rec->v.ntags;
    sl_claim *c = sl__claim_alloc(eng, &req, x, rec->v.nlocks);
    rec_fields(eng, c, rec);
    rec_link(eng, c, idhash);
    sl__idem_attach(eng, c, rec->v.idem, rec->v.idem_fp);
    sl__actor_attach(eng, c, rec->v.actor);
    rec_place(eng, c, x);
    return 0;
}

static int arrival_order(const void *a, const void *b)
{
    uint64_t x = (*(const sl_claim *const *)a)->arrival;
    uint64_t y = (*(const sl_claim *const *)b)->arrival;
    return x < y ? -1 : x > y;
}

static void sort_claims(sl_engine *eng)
{
    sl_pvec v = {0};
    for (sl_claim *c = eng->chead; c; c = c->next)
        sl__pvec_push(&eng->mem, &v, c);
    qsort(v.v, v.n, sizeof(*v.v), arrival_order);
    eng->chead = eng->ctail = NULL;
    for (size_t i = 0; i < v.n; i++) {
        sl_claim *c = v.v[i];
        c->prev = eng->ctail;
        c->next = NULL;
        if (eng->ctail)
            eng->ctail->next = c;
        else
            eng->chead = c;
        eng->ctail = c;
    }
    sl__pvec_free(&eng->mem, &v);
}

/* Puts in order what restoring left listed: the claims, every live lock's
 * holders and queue. Locks with claims are all on the active list. */
void sl__restore_finish(sl_engine *eng)
{
    if (!eng->restoring)
        return;
    if (eng->restore_unsorted)
        sort_claims(eng);
    for (sl_lock *l = eng->active_head; l; l = l->next) {
        sl__lock_holders_sort(eng, l);
        sl__queue_build(l);
    }
    eng->restoring = eng->restore_unsorted = false;
}

void sl_engine_restore_done(sl_engine *eng, int64_t now)
{
    sl__restore_finish(eng);
    /* Rate buckets were not saved: empty from now, never fuller than real. */
    eng->rate_origin_set = true;
    eng->rate_origin = now;
    eng->starting = true;
    for (sl_claim *c = eng->chead; c; c = c->next) {
        c->watchers = 0;
        if (!sl_state_ended((sl_state)c->state) && c->life < now)
            c->life = now;
        sl__claim_rearm(eng, c);
    }
    sl__timers_fire(eng, now);
    sl__settle(eng, now);
}

void sl_engine_start_done(sl_engine *eng)
{
    eng->starting = false;
}
