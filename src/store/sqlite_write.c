/* sqlite_write.c - one engine batch, one SQLite transaction.
 *
 * Deletions come before upserts: a purged claim's id may already belong to
 * a new claim of the same batch, and an evicted lock's key may have been
 * made again and granted, so the new row must be the one left. A changed
 * claim that is no longer the one its id finds was purged in this batch
 * and is not written. Any failure rolls the whole batch back. */
#include <string.h>

#include "sqlite_int.h"

/* ---- statements ---------------------------------------------------------- */

static int run(sl_sqlite *sq, sq_stmt which, const char *doing)
{
    sqlite3_stmt *s = sq->stmt[which];
    int rc = sqlite3_step(s);
    rc = rc == SQLITE_DONE ? 0 : sl__sqlite_fail(sq, doing);
    sl__sqlite_reset(s);
    return rc;
}

static void bind_text(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static int too_big(sl_sqlite *sq, const char *what, const char *id)
{
    return sl__store_fail(&sq->base, SL_STORE_EIO,
                          "the store %s: the %s of claim %.64s do not fit in %d bytes of JSON",
                          sq->path, what, id, SQ_JSON_MAX);
}

static int write_claim(sl_sqlite *sq, sl_engine *eng, const sl_claim *c)
{
    sl_claim_view v;
    sl_claim_get(c, &v);
    if (sl_claim_find(eng, v.id) != c)
        return 0; /* purged: its row is deleted */
    sl__sq_locks_json(c, v.nlocks, &sq->locks_json);
    sl__sq_tags_json(c, v.ntags, &sq->tags_json);
    if (sq->locks_json.over)
        return too_big(sq, "locks", v.id);
    if (sq->tags_json.over)
        return too_big(sq, "tags", v.id);
    sqlite3_stmt *s = sq->stmt[SQ_CLAIM_UPSERT];
    sqlite3_bind_int64(s, 1, (int64_t)v.arrival);
    bind_text(s, 2, v.id);
    bind_text(s, 3, v.holder);
    sqlite3_bind_int64(s, 4, v.state);
    sqlite3_bind_int64(s, 5, v.priority);
    sqlite3_bind_int64(s, 6, v.created_ms);
    sqlite3_bind_int64(s, 7, v.arrived_ms);
    bind_text(s, 8, v.rebalance_key);
    bind_text(s, 9, v.group);
    sqlite3_bind_int64(s, 10, v.cancel);
    sqlite3_bind_int64(s, 11, v.grace_ms);
    sqlite3_bind_int64(s, 12, v.lease_ms);
    sqlite3_bind_int64(s, 13, v.timeout_ms);
    sqlite3_bind_int64(s, 14, v.life_ms);
    sqlite3_bind_int64(s, 15, v.granted_ms);
    sqlite3_bind_int64(s, 16, (int64_t)v.grant_seq);
    sqlite3_bind_int64(s, 17, v.revoke_at_ms);
    sqlite3_bind_int64(s, 18, v.ended_ms);
    sqlite3_bind_int64(s, 19, v.reason);
    bind_text(s, 20, v.by);
    sqlite3_bind_text(s, 21, sq->locks_json.p, (int)sq->locks_json.n, SQLITE_STATIC);
    sqlite3_bind_text(s, 22, sq->tags_json.p, (int)sq->tags_json.n, SQLITE_STATIC);
    return run(sq, SQ_CLAIM_UPSERT, "cannot save a claim");
}

static int delete_key(sl_sqlite *sq, sq_stmt which, const char *key, const char *doing)
{
    bind_text(sq->stmt[which], 1, key);
    return run(sq, which, doing);
}

static int write_lock(sl_sqlite *sq, const sl_lock *l)
{
    sl_lock_view lv;
    sl_lock_get(l, &lv);
    sqlite3_stmt *s = sq->stmt[SQ_LOCK_UPSERT];
    bind_text(s, 1, lv.key);
    sqlite3_bind_int64(s, 2, (int64_t)lv.token);
    return run(sq, SQ_LOCK_UPSERT, "cannot save a lock's token");
}

static int write_config(sl_sqlite *sq, sl_engine *eng, const char *name)
{
    const sl_config *cfg = sl_config_find(eng, name);
    if (!cfg)
        return delete_key(sq, SQ_CONFIG_DELETE, name, "cannot delete a configuration");
    sl_config_view cv;
    sl_config_get(cfg, &cv);
    sqlite3_stmt *s = sq->stmt[SQ_CONFIG_UPSERT];
    bind_text(s, 1, cv.name);
    sqlite3_bind_int64(s, 2, cv.limit);
    sqlite3_bind_int64(s, 3, cv.strategy);
    sqlite3_bind_int64(s, 4, cv.lease_ms);
    sqlite3_bind_int64(s, 5, sq->base.source);
    return run(sq, SQ_CONFIG_UPSERT, "cannot save a configuration");
}

static int write_event(sl_sqlite *sq, sl_engine *eng, const sl_event *ev)
{
    sl_claim_view v;
    memset(&v, 0, sizeof(v));
    if (ev->claim)
        sl_claim_get(ev->claim, &v);
    sl__sq_event_locks_json(ev, v.nlocks, &sq->locks_json);
    if (sq->locks_json.over)
        return too_big(sq, "lock keys", v.id ? v.id : "(none)");
    char reason[SQ_REASON_MAX];
    sl_store_event_reason(eng, ev, reason, sizeof(reason));
    sqlite3_stmt *s = sq->stmt[SQ_EVENT_INSERT];
    sqlite3_bind_int64(s, 1, (int64_t)ev->seq);
    sqlite3_bind_int64(s, 2, ev->time_ms);
    bind_text(s, 3, sl_event_type_name(ev->type));
    bind_text(s, 4, v.id);
    bind_text(s, 5, v.holder);
    sqlite3_bind_text(s, 6, sq->locks_json.p, (int)sq->locks_json.n, SQLITE_STATIC);
    bind_text(s, 7, reason);
    return run(sq, SQ_EVENT_INSERT, "cannot save an event");
}

static int write_counters(sl_sqlite *sq, const sl_changes *ch)
{
    sqlite3_stmt *s = sq->stmt[SQ_META_UPDATE];
    sqlite3_bind_int64(s, 1, (int64_t)ch->next_seq);
    sqlite3_bind_int64(s, 2, (int64_t)ch->next_arrival);
    sqlite3_bind_int64(s, 3, (int64_t)ch->next_grant);
    sqlite3_bind_int64(s, 4, (int64_t)ch->token_floor);
    int rc = run(sq, SQ_META_UPDATE, "cannot save the counters");
    if (rc == 0 && sqlite3_changes(sq->db) != 1)
        rc = sl__store_fail(&sq->base, SL_STORE_EIO,
                            "the store %s: its counters row is missing: restore the file "
                            "from a backup",
                            sq->path);
    return rc;
}

static int write_batch(sl_sqlite *sq, sl_engine *eng, const sl_changes *ch)
{
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < ch->npurged; i++)
        rc = delete_key(sq, SQ_CLAIM_DELETE, ch->purged[i], "cannot delete a purged claim");
    for (size_t i = 0; rc == 0 && i < ch->nclaims; i++)
        rc = write_claim(sq, eng, ch->claims[i]);
    for (size_t i = 0; rc == 0 && i < ch->nevicted; i++)
        rc = delete_key(sq, SQ_LOCK_DELETE, ch->evicted[i], "cannot delete an evicted lock");
    for (size_t i = 0; rc == 0 && i < ch->nlocks; i++)
        rc = write_lock(sq, ch->locks[i]);
    for (size_t i = 0; rc == 0 && i < ch->nconfigs; i++)
        rc = write_config(sq, eng, ch->configs[i]);
    for (size_t i = 0; rc == 0 && i < ch->nevents; i++)
        rc = write_event(sq, eng, &ch->events[i]);
    if (rc == 0)
        rc = write_counters(sq, ch);
    return rc;
}

int sl__sqlite_write(sl_store *st, sl_engine *eng, const sl_changes *ch)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    if (!ch->nclaims && !ch->npurged && !ch->nlocks && !ch->nevicted && !ch->nconfigs &&
        !ch->nevents)
        return 0; /* counters move only with something in the batch */
    int rc = run(sq, SQ_BEGIN, "cannot start a transaction");
    if (rc)
        return rc;
    rc = write_batch(sq, eng, ch);
    if (rc == 0)
        rc = run(sq, SQ_COMMIT, "cannot commit a batch");
    if (rc && !sqlite3_get_autocommit(sq->db)) {
        /* The message is kept; SQLite may already have rolled back. */
        sqlite3_step(sq->stmt[SQ_ROLLBACK]);
        sqlite3_reset(sq->stmt[SQ_ROLLBACK]);
    }
    return rc;
}
