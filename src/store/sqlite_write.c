/* sqlite_write.c - one engine batch, one SQLite transaction, in two steps.
 *
 * Capture (on the engine's thread) turns the batch into the statements to
 * run and their parameters, copied (store_int.h's sl_store_batch); commit
 * (on any one thread) runs them on the write connection in one transaction.
 * Deletions come before upserts: a purged claim's id may already belong to
 * a new claim of the same batch, and an evicted lock's key may have been
 * made again and granted, so the new row must be the one left. A changed
 * claim that is no longer the one its id finds was purged in this batch
 * and is not written. Any failure rolls the whole batch back. */
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
    sl__batch_op(b, SQ_CLAIM_UPSERT);
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

static void capture_key(sl_store_batch *b, sq_stmt which, const char *key)
{
    sl__batch_op(b, which);
    sl__batch_str(b, key);
}

static void capture_lock(sl_store_batch *b, const sl_lock *l)
{
    sl_lock_view lv;
    sl_lock_get(l, &lv);
    sl__batch_op(b, SQ_LOCK_UPSERT);
    sl__batch_str(b, lv.key);
    sl__batch_int(b, (int64_t)lv.token);
}

static void capture_config(sl_sqlite *sq, sl_engine *eng, const char *name, sl_store_batch *b)
{
    const sl_config *cfg = sl_config_find(eng, name);
    if (!cfg) {
        capture_key(b, SQ_CONFIG_DELETE, name);
        return;
    }
    sl_config_view cv;
    sl_config_get(cfg, &cv);
    sl__batch_op(b, SQ_CONFIG_UPSERT);
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
    sl__batch_op(b, SQ_EVENT_INSERT);
    sl__batch_int(b, (int64_t)ev->seq);
    sl__batch_int(b, ev->time_ms);
    sl__batch_str(b, sl_event_type_name(ev->type));
    sl__batch_str(b, v.id);
    sl__batch_str(b, v.holder);
    sl__batch_text(b, sq->locks_json.p, sq->locks_json.n);
    sl__batch_str(b, reason);
    return 0;
}

static void capture_counters(const sl_changes *ch, sl_store_batch *b)
{
    sl__batch_op(b, SQ_META_UPDATE);
    sl__batch_int(b, (int64_t)ch->next_seq);
    sl__batch_int(b, (int64_t)ch->next_arrival);
    sl__batch_int(b, (int64_t)ch->next_grant);
    sl__batch_int(b, (int64_t)ch->token_floor);
}

int sl__sqlite_capture(sl_store *st, sl_engine *eng, const sl_changes *ch, sl_store_batch *b)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    int rc = 0;
    if (!ch->nclaims && !ch->npurged && !ch->nlocks && !ch->nevicted && !ch->nconfigs &&
        !ch->nevents)
        return 0; /* counters move only with something in the batch */
    for (size_t i = 0; i < ch->npurged; i++)
        capture_key(b, SQ_CLAIM_DELETE, ch->purged[i]);
    for (size_t i = 0; rc == 0 && i < ch->nclaims; i++)
        rc = capture_claim(sq, eng, ch->claims[i], b);
    for (size_t i = 0; rc == 0 && i < ch->nevicted; i++)
        capture_key(b, SQ_LOCK_DELETE, ch->evicted[i]);
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

static const char *doing(uint32_t stmt)
{
    switch (stmt) {
    case SQ_CLAIM_UPSERT: return "cannot save a claim";
    case SQ_CLAIM_DELETE: return "cannot delete a purged claim";
    case SQ_LOCK_UPSERT: return "cannot save a lock's token";
    case SQ_LOCK_DELETE: return "cannot delete an evicted lock";
    case SQ_CONFIG_UPSERT: return "cannot save a configuration";
    case SQ_CONFIG_DELETE: return "cannot delete a configuration";
    case SQ_EVENT_INSERT: return "cannot save an event";
    case SQ_META_UPDATE: return "cannot save the counters";
    default: return "cannot write a batch";
    }
}

static int run_op(sl_sqlite *sq, sl_store_batch *b, const sb_op *op)
{
    sqlite3_stmt *s = sq->wstmt[op->stmt];
    for (uint32_t i = 0; i < op->nparams; i++) {
        const sb_param *p = &b->params[op->first + i];
        if (p->type == SB_INT)
            sqlite3_bind_int64(s, (int)i + 1, p->i);
        else if (p->type == SB_TEXT)
            sqlite3_bind_text(s, (int)i + 1, b->text + p->off, (int)p->len, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, (int)i + 1);
    }
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, b, doing(op->stmt));
    sl__sqlite_reset(s);
    if (rc == 0 && op->stmt == SQ_META_UPDATE && sqlite3_changes(sq->wdb) != 1)
        rc = sl__batch_fail(b, SL_STORE_EIO,
                            "the store %s: its counters row is missing: restore the file "
                            "from a backup",
                            sq->path);
    return rc;
}

static int run_plain(sl_sqlite *sq, sq_stmt which, sl_store_batch *b, const char *what)
{
    sqlite3_stmt *s = sq->wstmt[which];
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, b, what);
    sqlite3_reset(s);
    return rc;
}

int sl__sqlite_commit(sl_store *st, sl_store_batch *b)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    if (sl_store_batch_empty(b))
        return 0;
    int rc = run_plain(sq, SQ_BEGIN, b, "cannot start a transaction");
    if (rc)
        return rc;
    for (size_t i = 0; rc == 0 && i < b->nops; i++)
        rc = run_op(sq, b, &b->ops[i]);
    if (rc == 0 && b->prune)
        rc = sl__sqlite_prune_in(sq, b->prune_before, &b->pruned, b);
    if (rc == 0)
        rc = run_plain(sq, SQ_COMMIT, b, "cannot commit a batch");
    if (rc && !sqlite3_get_autocommit(sq->wdb)) {
        /* The message is kept; SQLite may already have rolled back. */
        sqlite3_step(sq->wstmt[SQ_ROLLBACK]);
        sqlite3_reset(sq->wstmt[SQ_ROLLBACK]);
    }
    return rc;
}
