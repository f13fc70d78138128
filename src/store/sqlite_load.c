/* sqlite_load.c - rebuilding an empty engine from the SQLite store.
 *
 * One read transaction (a consistent snapshot): counters, configurations,
 * lock tokens, then claims in arrival order (the table's own order, in
 * which the engine links each restored claim in O(1)), then
 * sl_engine_restore_done. Every value read back is checked for its type,
 * range and length before the engine sees it: a row that fails names
 * itself in SL_STORE_EDATA, and the engine, partly rebuilt, must then be
 * freed by the caller. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sqlite_int.h"

/* One claim row turned into a restore record; strings point into the row
 * and the parsed JSON until the next row. */
typedef struct claim_row {
    sl_claim_rec rec;
    sl_claim_lock_rec locks[SL_CLAIM_LOCKS_MAX];
    sl_tag tags[SL_TAGS_MAX];
    char what[160];                /* why the row was refused */
    char scratch[SQ_JSON_MAX + 1]; /* the decoded strings of locks, then tags */
    char scratch2[SQ_JSON_MAX + 1];
} claim_row;

enum {
    C_ARRIVAL,
    C_ID,
    C_HOLDER,
    C_STATE,
    C_PRIORITY,
    C_CREATED,
    C_ARRIVED,
    C_RKEY,
    C_GROUP,
    C_CANCEL,
    C_GRACE,
    C_LEASE,
    C_TIMEOUT,
    C_LIFE,
    C_GRANTED,
    C_GRANT_SEQ,
    C_REVOKE_AT,
    C_ENDED,
    C_REASON,
    C_BY,
    C_LOCKS,
    C_TAGS,
};

static const char claims_sql[] =
    "SELECT arrival, id, holder, state, priority, created, arrived, rebalance_key, grp,"
    " cancel, grace, lease, timeout, life, granted, grant_seq, revoke_at, ended, reason,"
    " by_claim, locks, tags FROM claims ORDER BY arrival";

static bool col_text(sqlite3_stmt *s, int i, size_t max, bool nullable, const char **out)
{
    int t = sqlite3_column_type(s, i);
    *out = NULL;
    if (t == SQLITE_NULL)
        return nullable;
    if (t != SQLITE_TEXT)
        return false;
    const char *p = (const char *)sqlite3_column_text(s, i);
    size_t n = (size_t)sqlite3_column_bytes(s, i);
    if (!p || n > max || strlen(p) != n)
        return false;
    *out = p;
    return true;
}

static bool col_int(sqlite3_stmt *s, int i, int64_t lo, int64_t hi, int64_t *out)
{
    if (sqlite3_column_type(s, i) != SQLITE_INTEGER)
        return false;
    int64_t v = sqlite3_column_int64(s, i);
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int bad_row(sl_sqlite *sq, const char *what, const char *name, const char *why)
{
    return sl__store_fail(&sq->base, SL_STORE_EDATA,
                          "the store %s: saved %s %.260s could not be restored: %s", sq->path, what,
                          name, why);
}

static int bad_column(sl_sqlite *sq, sqlite3_stmt *s, int col, const char *what, const char *name)
{
    char why[96];
    snprintf(why, sizeof(why), "its column %s is missing, too long or out of range",
             sqlite3_column_name(s, col));
    return bad_row(sq, what, name, why);
}

static int step_fail(sl_sqlite *sq, sqlite3_stmt *s, const char *doing)
{
    int rc = sl__sqlite_fail(sq, doing);
    sqlite3_finalize(s);
    return rc;
}

static int prepare(sl_sqlite *sq, const char *sql, sqlite3_stmt **s)
{
    if (sqlite3_prepare_v2(sq->db, sql, -1, s, NULL) == SQLITE_OK)
        return 0;
    return sl__sqlite_fail(sq, "cannot read it");
}

static int load_counters(sl_sqlite *sq, sl_engine *eng)
{
    sqlite3_stmt *s;
    int rc = prepare(sq,
                     "SELECT next_seq, next_arrival, next_grant, token_floor FROM meta"
                     " WHERE id = 1",
                     &s);
    if (rc)
        return rc;
    rc = sqlite3_step(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return step_fail(sq, s, "cannot read the counters");
    int64_t v[4];
    for (int i = 0; i < 4; i++)
        if (rc != SQLITE_ROW || !col_int(s, i, INT64_MIN, INT64_MAX, &v[i])) {
            sqlite3_finalize(s);
            return bad_row(sq, "counters", "(meta)", "the row is missing or damaged");
        }
    sl_engine_restore_counters(eng, (uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2], (uint64_t)v[3]);
    sqlite3_finalize(s);
    return 0;
}

static int load_configs(sl_sqlite *sq, sl_engine *eng, sl_store_load_stats *stats)
{
    sqlite3_stmt *s;
    int rc = prepare(sq, "SELECT name, lim, strategy, lease_ms FROM configs", &s);
    while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = 0;
        const char *name;
        int64_t lim, strategy, lease;
        if (!col_text(s, 0, SL_NAME_MAX, false, &name))
            rc = bad_column(sq, s, 0, "configuration", "(unreadable name)");
        else if (!col_int(s, 1, 0, SL_LIMIT_MAX, &lim))
            rc = bad_column(sq, s, 1, "configuration", name);
        else if (!col_int(s, 2, SL_STRICT, SL_REBALANCED, &strategy))
            rc = bad_column(sq, s, 2, "configuration", name);
        else if (!col_int(s, 3, 0, INT64_MAX, &lease))
            rc = bad_column(sq, s, 3, "configuration", name);
        else if (sl_engine_restore_config(eng, name, (uint32_t)lim, (sl_strategy)strategy, lease) !=
                 0)
            rc = bad_row(sq, "configuration", name,
                         "the engine refused it (a bad or repeated name, or too many)");
        else
            stats->configs++;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        return step_fail(sq, s, "cannot read the configurations");
    sqlite3_finalize(s);
    return rc;
}

static int load_locks(sl_sqlite *sq, sl_engine *eng, sl_store_load_stats *stats)
{
    sqlite3_stmt *s;
    int rc = prepare(sq, "SELECT key, token FROM locks", &s);
    while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = 0;
        const char *key;
        int64_t token;
        if (!col_text(s, 0, SL_LOCK_KEY_MAX, false, &key))
            rc = bad_column(sq, s, 0, "lock", "(unreadable key)");
        else if (!col_int(s, 1, INT64_MIN, INT64_MAX, &token))
            rc = bad_column(sq, s, 1, "lock", key);
        else if (sl_engine_restore_token(eng, key, (uint64_t)token) != 0)
            rc = bad_row(sq, "lock", key, "the key is not mtx/NAME or sem/NAME");
        else
            stats->locks++;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        return step_fail(sq, s, "cannot read the lock tokens");
    sqlite3_finalize(s);
    return rc;
}

/* ---- claims -------------------------------------------------------------- */

/* The words for a JSON column's parse result (sl__sq_parse_*'s codes). */
static bool row_json(claim_row *r, const char *what, const char *shape, int rc, size_t n)
{
    if (rc == 0)
        return true;
    if (rc == -1)
        snprintf(r->what, sizeof(r->what), "its %ss are not a JSON array of arrays", what);
    else if (rc == -2)
        snprintf(r->what, sizeof(r->what), "it has too many %ss", what);
    else
        snprintf(r->what, sizeof(r->what), "its %s %zu is malformed (not %s)", what, n, shape);
    return false;
}

static bool row_locks(sqlite3_stmt *s, claim_row *r)
{
    const char *text;
    if (!col_text(s, C_LOCKS, SQ_JSON_MAX, false, &text)) {
        snprintf(r->what, sizeof(r->what), "its locks are missing or too long");
        return false;
    }
    size_t n = 0;
    int rc = sl__sq_parse_locks(text, (size_t)sqlite3_column_bytes(s, C_LOCKS), r->scratch,
                                r->locks, SL_CLAIM_LOCKS_MAX, &n);
    r->rec.v.nlocks = n;
    return row_json(r, "lock", "[kind, name, slots, via, token]", rc, n);
}

static bool row_tags(sqlite3_stmt *s, claim_row *r)
{
    const char *text;
    if (!col_text(s, C_TAGS, SQ_JSON_MAX, false, &text)) {
        snprintf(r->what, sizeof(r->what), "its tags are missing or too long");
        return false;
    }
    size_t n = 0;
    int rc = sl__sq_parse_tags(text, (size_t)sqlite3_column_bytes(s, C_TAGS), r->scratch2, r->tags,
                               SL_TAGS_MAX, &n);
    r->rec.v.ntags = n;
    return row_json(r, "tag", "[key, value]", rc, n);
}

/* The row's scalar columns into r->rec.v; the first bad one is named. */
static bool row_fields(sqlite3_stmt *s, claim_row *r)
{
    sl_claim_view *v = &r->rec.v;
    int64_t x[C_TAGS + 1];
    static const struct {
        int col;
        int64_t lo, hi;
    } ints[] = {
        {C_ARRIVAL, INT64_MIN, INT64_MAX},
        {C_STATE, SL_PENDING, SL_CANCELED},
        {C_PRIORITY, INT32_MIN, INT32_MAX},
        {C_CREATED, INT64_MIN, INT64_MAX},
        {C_ARRIVED, INT64_MIN, INT64_MAX},
        {C_CANCEL, SL_CANCEL_NONE, SL_CANCEL_IN_PROGRESS},
        {C_GRACE, INT64_MIN, INT64_MAX},
        {C_LEASE, INT64_MIN, INT64_MAX},
        {C_TIMEOUT, INT64_MIN, INT64_MAX},
        {C_LIFE, INT64_MIN, INT64_MAX},
        {C_GRANTED, INT64_MIN, INT64_MAX},
        {C_GRANT_SEQ, INT64_MIN, INT64_MAX},
        {C_REVOKE_AT, INT64_MIN, INT64_MAX},
        {C_ENDED, INT64_MIN, INT64_MAX},
        {C_REASON, SL_REASON_NONE, SL_REASON_OPERATOR},
    };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
        if (!col_int(s, ints[i].col, ints[i].lo, ints[i].hi, &x[ints[i].col])) {
            snprintf(r->what, sizeof(r->what),
                     "its column %s is missing, of the wrong type or out of range",
                     sqlite3_column_name(s, ints[i].col));
            return false;
        }
    static const struct {
        int col;
        size_t max;
        bool nullable;
    } texts[] = {{C_HOLDER, SL_HOLDER_MAX, false},
                 {C_RKEY, SL_NAME_MAX, true},
                 {C_GROUP, SL_NAME_MAX, true},
                 {C_BY, SL_ID_MAX, true}};
    const char *t[C_TAGS + 1];
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (!col_text(s, texts[i].col, texts[i].max, texts[i].nullable, &t[texts[i].col])) {
            snprintf(r->what, sizeof(r->what), "its column %s is missing or too long",
                     sqlite3_column_name(s, texts[i].col));
            return false;
        }
    v->holder = t[C_HOLDER];
    v->rebalance_key = t[C_RKEY];
    v->group = t[C_GROUP];
    v->by = t[C_BY];
    v->arrival = (uint64_t)x[C_ARRIVAL];
    v->state = (sl_state)x[C_STATE];
    v->priority = (int32_t)x[C_PRIORITY];
    v->created_ms = x[C_CREATED];
    v->arrived_ms = x[C_ARRIVED];
    v->cancel = (sl_cancel)x[C_CANCEL];
    v->grace_ms = x[C_GRACE];
    v->lease_ms = x[C_LEASE];
    v->timeout_ms = x[C_TIMEOUT];
    v->life_ms = x[C_LIFE];
    v->expires_ms = -1; /* derived by the engine */
    v->granted_ms = x[C_GRANTED];
    v->grant_seq = (uint64_t)x[C_GRANT_SEQ];
    v->revoke_at_ms = x[C_REVOKE_AT];
    v->ended_ms = x[C_ENDED];
    v->reason = (sl_reason)x[C_REASON];
    return true;
}

static int load_claim(sl_sqlite *sq, sl_engine *eng, sqlite3_stmt *s, claim_row *r,
                      sl_store_load_stats *stats)
{
    memset(&r->rec.v, 0, sizeof(r->rec.v));
    const char *id;
    if (!col_text(s, C_ID, SL_ID_MAX, false, &id)) {
        char name[48];
        snprintf(name, sizeof(name), "(arrival %lld)", (long long)sqlite3_column_int64(s, 0));
        return bad_row(sq, "claim", name, "its id is missing or too long");
    }
    r->rec.v.id = id;
    bool ok = row_fields(s, r) && row_locks(s, r) && row_tags(s, r);
    int rc = 0;
    if (!ok) {
        rc = bad_row(sq, "claim", id, r->what);
    } else {
        sl_error err;
        memset(&err, 0, sizeof(err));
        if (sl_engine_restore_claim(eng, &r->rec, &err) != 0) {
            char why[400];
            snprintf(why, sizeof(why), "the engine refused it: %.100s%s%.253s",
                     err.what ? err.what : "(no reason given)", err.name[0] ? ": " : "", err.name);
            rc = bad_row(sq, "claim", id, why);
        }
    }
    if (rc)
        return rc;
    stats->claims++;
    if (r->rec.v.state == SL_PENDING)
        stats->pending++;
    else if (sl_state_ended(r->rec.v.state))
        stats->ended++;
    else
        stats->held++;
    return 0;
}

static int load_claims(sl_sqlite *sq, sl_engine *eng, sl_store_load_stats *stats)
{
    sqlite3_stmt *s;
    int rc = prepare(sq, claims_sql, &s);
    if (rc)
        return rc;
    claim_row *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    r->rec.locks = r->locks;
    r->rec.tags = r->tags;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = load_claim(sq, eng, s, r, stats);
        if (rc)
            break;
    }
    free(r);
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        return step_fail(sq, s, "cannot read the claims");
    sqlite3_finalize(s);
    return rc;
}

int sl__sqlite_load(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    sl_store_load_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    /* A read transaction: the four reads see one snapshot. */
    if (sqlite3_exec(sq->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return sl__sqlite_fail(sq, "cannot start reading");
    int rc = load_counters(sq, eng);
    if (rc == 0)
        rc = load_configs(sq, eng, stats);
    if (rc == 0)
        rc = load_locks(sq, eng, stats);
    if (rc == 0)
        rc = load_claims(sq, eng, stats);
    if (!sqlite3_get_autocommit(sq->db))
        sqlite3_exec(sq->db, "COMMIT", NULL, NULL, NULL);
    if (rc == 0)
        sl_engine_restore_done(eng, now);
    return rc;
}
