/* capture.c - an engine batch copied into a store batch (store_int.h):
 * the operations a record holds (record.h) and their parameters, for any
 * backend. It runs on the engine's thread; the copy lets the engine's
 * batch be cleared and the engine go on while the batch is committed.
 *
 * Deletions come before upserts: a purged claim's id may already belong to
 * a new claim of the same batch, and an evicted lock's key may have been
 * made again and granted, so the new row must be the one left. A changed
 * claim that is no longer the one its id finds was purged in this batch
 * and is not written. */
#include <stdio.h>
#include <string.h>

#include "record.h"
#include "rows_json.h"
#include "store_int.h"

static int too_big(sl_store *st, sl_store_batch *b, const char *what, const char *id)
{
    return sl__batch_fail(b, SL_STORE_EIO,
                          "the store %s: the %s of claim %.64s do not fit in %d bytes of JSON",
                          st->label, what, id, SL_ROWS_JSON_MAX);
}

static int capture_claim(sl_store *st, sl_engine *eng, const sl_claim *c, sl_store_batch *b)
{
    sl_claim_view v;
    sl_claim_get(c, &v);
    if (sl_claim_find(eng, v.id) != c)
        return 0; /* purged: its row is deleted */
    sl__rows_locks_json(c, v.nlocks, &st->locks_json);
    sl__rows_tags_json(c, v.ntags, &st->tags_json);
    if (st->locks_json.over)
        return too_big(st, b, "locks", v.id);
    if (st->tags_json.over)
        return too_big(st, b, "tags", v.id);
    sl__batch_op(b, SL_REC_CLAIM_UPSERT);
    sl__batch_int(b, (int64_t)v.arrival);
    sl__batch_str(b, v.id);
    sl__batch_str(b, v.holder);
    sl__batch_int(b, v.state);
    sl__batch_int(b, v.priority);
    sl__batch_int(b, v.created_ms);
    sl__batch_int(b, v.arrived_ms);
    sl__batch_str(b, v.rebalance_key);
    sl__batch_str(b, v.group);
    sl__batch_int(b, v.cancel);
    sl__batch_int(b, v.grace_ms);
    sl__batch_int(b, v.lease_ms);
    sl__batch_int(b, v.timeout_ms);
    sl__batch_int(b, v.life_ms);
    sl__batch_int(b, v.granted_ms);
    sl__batch_int(b, (int64_t)v.grant_seq);
    sl__batch_int(b, v.revoke_at_ms);
    sl__batch_int(b, v.ended_ms);
    sl__batch_int(b, v.reason);
    sl__batch_str(b, v.by);
    sl__batch_text(b, st->locks_json.p, st->locks_json.n);
    sl__batch_text(b, st->tags_json.p, st->tags_json.n);
    sl__batch_str(b, v.idem);
    sl__batch_int(b, (int64_t)v.idem_fp);
    sl__batch_str(b, v.actor);
    return 0;
}

static void capture_key(sl_store_batch *b, sl_rec_op which, const char *key)
{
    sl__batch_op(b, which);
    sl__batch_str(b, key);
}

static void capture_lock(sl_store_batch *b, const sl_lock *l)
{
    sl_lock_view lv;
    sl_lock_get(l, &lv);
    sl__batch_op(b, SL_REC_LOCK_UPSERT);
    sl__batch_str(b, lv.key);
    sl__batch_int(b, (int64_t)lv.token);
}

static int capture_config(sl_store *st, sl_engine *eng, const char *name, sl_store_batch *b)
{
    const sl_config *cfg = sl_config_find(eng, name);
    if (!cfg) {
        capture_key(b, SL_REC_CONFIG_DELETE, name);
        return 0;
    }
    sl_config_view cv;
    sl_config_get(cfg, &cv);
    bool rules = sl__rows_rules_json(&cv.rules, &st->locks_json);
    if (st->locks_json.over) /* cannot happen within the engine's bounds */
        return sl__batch_fail(b, SL_STORE_EIO,
                              "the store %s: the rules of configuration %.64s do not fit in %d "
                              "bytes of JSON",
                              st->label, cv.name, SL_RULES_JSON_MAX);
    sl__batch_op(b, SL_REC_CONFIG_UPSERT);
    sl__batch_str(b, cv.name);
    sl__batch_int(b, cv.limit);
    sl__batch_int(b, cv.strategy);
    sl__batch_int(b, cv.lease_ms);
    sl__batch_int(b, st->source);
    sl__batch_int(b, cv.overtake_ms);
    sl__batch_text(b, rules ? st->locks_json.p : NULL, st->locks_json.n); /* none: NULL */
    return 0;
}

/* The slots a claim takes on each of its locks, as "1,2", parallel to the
 * event's lock keys: with the held flag below, a reader of the log can
 * replay each lock's occupancy (the server's history rebuild). */
static void event_slots(const sl_claim *c, size_t nlocks, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < nlocks && len < cap; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(c, i, &lv);
        int w = snprintf(buf + len, cap - len, "%s%u", i ? "," : "", (unsigned)lv.slots);
        if (w < 0)
            break;
        len += (size_t)w;
    }
}

/* Whether the claim held its locks just before this event: what tells a
 * held claim's end from a pending one's (expired and canceled can be
 * either). An end is a claim's last event and a grant is never undone, so
 * a claim ending with a grant time held until then; a claim's other events
 * say it by their type. */
static int64_t event_held(const sl_event *ev, const sl_claim_view *v)
{
    switch (ev->type) {
    case SL_EV_CLAIM_QUEUED:
    case SL_EV_CLAIM_WAITING:
    case SL_EV_CLAIM_ACQUIRED:
        return 0;
    default:
        return v->granted_ms >= 0;
    }
}

static int capture_event(sl_store *st, sl_engine *eng, const sl_event *ev, sl_store_batch *b)
{
    sl_claim_view v;
    memset(&v, 0, sizeof(v));
    if (ev->claim)
        sl_claim_get(ev->claim, &v);
    sl__rows_event_locks_json(ev, v.nlocks, &st->locks_json);
    if (st->locks_json.over)
        return too_big(st, b, "lock keys", v.id ? v.id : "(none)");
    char reason[SL_ROWS_REASON_MAX];
    sl_store_event_reason(eng, ev, reason, sizeof(reason));
    sl__batch_op(b, SL_REC_EVENT);
    sl__batch_int(b, (int64_t)ev->seq);
    sl__batch_int(b, ev->time_ms);
    sl__batch_str(b, sl_event_type_name(ev->type));
    sl__batch_str(b, v.id);
    sl__batch_str(b, v.holder);
    sl__batch_text(b, st->locks_json.p, st->locks_json.n);
    sl__batch_str(b, reason);
    if (ev->claim) {
        char slots[SL_ROWS_SLOTS_MAX + 1];
        event_slots(ev->claim, v.nlocks, slots, sizeof(slots));
        sl__batch_str(b, slots);
        sl__batch_int(b, event_held(ev, &v));
    } else {
        sl__batch_str(b, NULL);
        sl__batch_str(b, NULL);
    }
    size_t alen = ev->actor ? strlen(ev->actor) : 0;
    sl__batch_text(b, ev->actor, alen < SL_ACTOR_MAX ? alen : SL_ACTOR_MAX);
    b->nevents++;
    if (ev->time_ms > b->time_hi)
        b->time_hi = ev->time_ms;
    return 0;
}

static void capture_counters(const sl_changes *ch, sl_store_batch *b)
{
    sl__batch_op(b, SL_REC_COUNTERS);
    sl__batch_int(b, (int64_t)ch->next_seq);
    sl__batch_int(b, (int64_t)ch->next_arrival);
    sl__batch_int(b, (int64_t)ch->next_grant);
    sl__batch_int(b, (int64_t)ch->token_floor);
    b->seq_hi = ch->next_seq - 1;
}

int sl__capture(sl_store *st, sl_engine *eng, const sl_changes *ch, sl_store_batch *b)
{
    int rc = 0;
    if (!ch->nclaims && !ch->npurged && !ch->nlocks && !ch->nevicted && !ch->nconfigs &&
        !ch->nevents)
        return 0; /* counters move only with something in the batch */
    for (size_t i = 0; i < ch->npurged; i++)
        capture_key(b, SL_REC_CLAIM_DELETE, ch->purged[i]);
    for (size_t i = 0; rc == 0 && i < ch->nclaims; i++)
        rc = capture_claim(st, eng, ch->claims[i], b);
    for (size_t i = 0; rc == 0 && i < ch->nevicted; i++)
        capture_key(b, SL_REC_LOCK_DELETE, ch->evicted[i]);
    for (size_t i = 0; rc == 0 && i < ch->nlocks; i++)
        capture_lock(b, ch->locks[i]);
    for (size_t i = 0; rc == 0 && i < ch->nconfigs; i++)
        rc = capture_config(st, eng, ch->configs[i], b);
    for (size_t i = 0; rc == 0 && i < ch->nevents; i++)
        rc = capture_event(st, eng, &ch->events[i], b);
    if (rc == 0)
        capture_counters(ch, b);
    return rc;
}

