/* restore.c - rebuilding the engine from what the store saved.
 *
 * The store saves counters (next event sequence, arrival, grant order and
 * the token floor), configurations, each lock's last token and every claim
 * with its expanded locks and tokens. Restoring puts waiters back in their
 * queues and holders back in grant order without moving any token, so that
 * tokens, queue order and the event sequence continue as if nothing had
 * happened. Then every live claim gets a full lease from now: its client
 * could not renew while the server was down. */
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

static int check_rec(const sl_engine *eng, const sl_claim_rec *rec, sl_xlock *x, sl_error *err)
{
    const sl_claim_view *v = &rec->v;
    if (!v->id || !*v->id || strlen(v->id) > SL_ID_MAX || sl_claim_find(eng, v->id) ||
        !v->holder || (unsigned)v->state > SL_CANCELED || v->nlocks > SL_CLAIM_LOCKS_MAX ||
        v->ntags > SL_TAGS_MAX) {
        sl__error_set(err, SL_EINVAL, "a saved claim is malformed or repeated", "id", v->id, 0);
        return SL_EINVAL;
    }
    for (size_t i = 0; i < v->nlocks; i++) {
        const sl_claim_lock_rec *lr = &rec->locks[i];
        size_t len = lr->name ? strlen(lr->name) : 0;
        bool twice = false;
        if (sl_name_valid(lr->name, len, false)) {
            sl__lock_key(lr->kind, lr->name, len, x[i].key, &x[i].keylen);
            for (size_t j = 0; j < i; j++)
                twice |= x[j].keylen == x[i].keylen && memcmp(x[j].key, x[i].key, x[i].keylen) == 0;
        }
        /* As sl_claim_create would have it: a known kind and origin, and no
         * lock twice (the queues assume one entry per claim and lock). */
        if (!sl_name_valid(lr->name, len, false) || lr->slots == 0 ||
            (unsigned)lr->kind > SL_KIND_SEMAPHORE || (unsigned)lr->via > SL_VIA_GROUP || twice) {
            sl__error_set(err, SL_EINVAL, "a saved claim has a malformed lock", "locks",
                          lr->name, 0);
            return SL_EINVAL;
        }
        x[i].slots = lr->slots;
        x[i].via = lr->via;
        x[i].cfg_lease = 0;
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

static void rec_place(sl_engine *eng, sl_claim *c)
{
    if (sl_state_ended((sl_state)c->state)) {
        eng->nended++;
        return;
    }
    for (size_t i = 0; i < c->nlocks; i++) {
        sl_centry *e = &c->e[i];
        e->lock = sl__lock_get(eng, e->key, strlen(e->key));
        if (c->state == SL_PENDING)
            sl__queue_add(eng, e);
        else
            sl__lock_holder_insert(eng, e);
    }
    if (c->state == SL_PENDING)
        sl__pending_add(eng, c);
    else
        eng->nheld++;
}

int sl_engine_restore_claim(sl_engine *eng, const sl_claim_rec *rec, sl_error *err)
{
    sl_xlock *x = sl__xlocks(eng);
    int rc = check_rec(eng, rec, x, err);
    if (rc)
        return rc;
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
    sl__claim_link(eng, c, sl__hash_of(&eng->claims, c->id, c->idlen));
    rec_place(eng, c);
    return 0;
}

void sl_engine_restore_done(sl_engine *eng, int64_t now)
{
    for (sl_claim *c = eng->chead; c; c = c->next) {
        c->watchers = 0;
        if (!sl_state_ended((sl_state)c->state) && c->life < now)
            c->life = now;
        sl__claim_rearm(eng, c);
    }
    sl__timers_fire(eng, now);
    sl__settle(eng, now);
}
