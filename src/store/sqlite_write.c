/* sqlite_write.c - one engine batch, one row of the log, in two steps.
 *
 * Capture (on the engine's thread) turns the batch into the operations to
 * apply and their parameters, copied (store_int.h's sl_store_batch); commit
 * (on any one thread) writes them as one record (record.h) into one new
 * row of the log table: a single append, whatever the batch holds. The
 * state tables (claims, locks, configs, meta) are brought forward from the
 * log later and in bulk (sqlite_apply.c), and the event log is read from
 * the records themselves (sqlite_events.c).
 *
 * Deletions come before upserts: a purged claim's id may already belong to
 * a new claim of the same batch, and an evicted lock's key may have been
 * made again and granted, so the new row must be the one left. A changed
 * claim that is no longer the one its id finds was purged in this batch
 * and is not written. */
#include <string.h>

#include "sqlite_int.h"

/* ---- capture ------------------------------------------------------------- */

static int too_big(sl_sqlite *sq, sl_store_batch *b, const char *what, const char *id)
{
    return sl__batch_fail(b, SL_STORE_EIO,
                          "the store %s: the %s of claim %.64s do not fit in %d bytes of JSON",
                          sq->path, what, id, SQ_JSON_MAX);
}

static int capture_claim(sl_sqlite *sq, sl_engine *eng, const sl_claim *c, sl_store_batch *b)
{
    sl_claim_view v;
    sl_claim_get(c, &v);
    if (sl_claim_find(eng, v.id) != c)
        return 0; /* purged: its row is deleted */
    sl__sq_locks_json(c, v.nlocks, &sq->locks_json);
    sl__sq_tags_json(c, v.ntags, &sq->tags_json);
    if (sq->locks_json.over)
        return too_big(sq, b, "locks", v.id);
    if (sq->tags_json.over)
        return too_big(sq, b, "tags", v.id);
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
    sl__batch_text(b, sq->locks_json.p, sq->locks_json.n);
    sl__batch_text(b, sq->tags_json.p, sq->tags_json.n);
    sl__batch_str(b, v.idem);
    sl__batch_int(b, (int64_t)v.idem_fp);
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

static void capture_config(sl_sqlite *sq, sl_engine *eng, const char *name, sl_store_batch *b)
{
    const sl_config *cfg = sl_config_find(eng, name);
    if (!cfg) {
        capture_key(b, SL_REC_CONFIG_DELETE, name);
        return;
    }
    sl_config_view cv;
    sl_config_get(cfg, &cv);
    sl__batch_op(b, SL_REC_CONFIG_UPSERT);
    sl__batch_str(b, cv.name);
    sl__batch_int(b, cv.limit);
    sl__batch_int(b, cv.strategy);
    sl__batch_int(b, cv.lease_ms);
    sl__batch_int(b, sq->base.source);
    sl__batch_int(b, cv.overtake_ms);
}

static int capture_event(sl_sqlite *sq, sl_engine *eng, const sl_event *ev, sl_store_batch *b)
{
    sl_claim_view v;
    memset(&v, 0, sizeof(v));
    if (ev->claim)
        sl_claim_get(ev->claim, &v);
    sl__sq_event_locks_json(ev, v.nlocks, &sq->locks_json);
    if (sq->locks_json.over)
        return too_big(sq, b, "lock keys", v.id ? v.id : "(none)");
    char reason[SQ_REASON_MAX];
    sl_store_event_reason(eng, ev, reason, sizeof(reason));
    sl__batch_op(b, SL_REC_EVENT);
    sl__batch_int(b, (int64_t)ev->seq);
    sl__batch_int(b, ev->time_ms);
    sl__batch_str(b, sl_event_type_name(ev->type));
    sl__batch_str(b, v.id);
    sl__batch_str(b, v.holder);
    sl__batch_text(b, sq->locks_json.p, sq->locks_json.n);
    sl__batch_str(b, reason);
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

int sl__sqlite_capture(sl_store *st, sl_engine *eng, const sl_changes *ch, sl_store_batch *b)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    int rc = 0;
    if (!ch->nclaims && !ch->npurged && !ch->nlocks && !ch->nevicted && !ch->nconfigs &&
        !ch->nevents)
        return 0; /* counters move only with something in the batch */
    for (size_t i = 0; i < ch->npurged; i++)
        capture_key(b, SL_REC_CLAIM_DELETE, ch->purged[i]);
    for (size_t i = 0; rc == 0 && i < ch->nclaims; i++)
        rc = capture_claim(sq, eng, ch->claims[i], b);
    for (size_t i = 0; rc == 0 && i < ch->nevicted; i++)
        capture_key(b, SL_REC_LOCK_DELETE, ch->evicted[i]);
    for (size_t i = 0; rc == 0 && i < ch->nlocks; i++)
        capture_lock(b, ch->locks[i]);
    for (size_t i = 0; rc == 0 && i < ch->nconfigs; i++)
        capture_config(sq, eng, ch->configs[i], b);
    for (size_t i = 0; rc == 0 && i < ch->nevents; i++)
        rc = capture_event(sq, eng, &ch->events[i], b);
    if (rc == 0)
        capture_counters(ch, b);
    return rc;
}

/* ---- commit -------------------------------------------------------------- */

static int wfail(sl_sqlite *sq, sl_store_batch *b, const char *doing)
{
    return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s: %s", sq->path, doing,
                          sqlite3_errmsg(sq->wdb));
}

static int run_plain(sl_sqlite *sq, sq_stmt which, sl_store_batch *b, const char *what)
{
    sqlite3_stmt *s = sq->wstmt[which];
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, b, what);
    sqlite3_reset(s);
    return rc;
}

/* The batch as the next row of the log. time_hi never goes down (an event
 * log read by time relies on it), even if the clock did between runs. */
static int append(sl_sqlite *sq, sl_store_batch *b, int64_t time_hi)
{
    sl_rec_encode(b, &sq->rec);
    sqlite3_stmt *s = sq->wstmt[SQ_LOG_INSERT];
    sqlite3_bind_int64(s, 1, sq->next_id);
    sqlite3_bind_int64(s, 2, (int64_t)b->seq_hi);
    sqlite3_bind_int64(s, 3, time_hi);
    sqlite3_bind_int64(s, 4, b->nevents);
    sqlite3_bind_blob(s, 5, sq->rec.p, (int)sq->rec.n, SQLITE_STATIC);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, b, "cannot append a batch to the log");
    sl__sqlite_reset(s);
    return rc;
}

int sl__sqlite_commit(sl_store *st, sl_store_batch *b)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    if (sl_store_batch_empty(b))
        return 0;
    int64_t time_hi = b->time_hi > sq->last_time ? b->time_hi : sq->last_time;
    /* One append is a transaction by itself; a prune joins it in one. */
    int rc = b->prune ? run_plain(sq, SQ_BEGIN, b, "cannot start a transaction") : 0;
    if (rc == 0 && b->nops)
        rc = append(sq, b, time_hi);
    if (rc == 0 && b->prune)
        rc = sl__sqlite_prune_in(sq, b->prune_before, &b->pruned, b);
    if (rc == 0 && b->prune)
        rc = run_plain(sq, SQ_COMMIT, b, "cannot commit a batch");
    if (rc && !sqlite3_get_autocommit(sq->wdb)) {
        /* The message is kept; SQLite may already have rolled back. */
        sqlite3_step(sq->wstmt[SQ_ROLLBACK]);
        sqlite3_reset(sq->wstmt[SQ_ROLLBACK]);
    }
    if (rc == 0 && b->nops) {
        sq->next_id++;
        sq->last_time = time_hi;
    }
    return rc;
}
