/* postgres_load.c - the engine rebuilt from the PostgreSQL store: what a
 * crash left unapplied goes into the tables first, then the counters,
 * configurations, tokens and claims are read in one REPEATABLE READ
 * transaction (one snapshot), the claims in arrival order through a cursor,
 * a page at a time, each row checked as sqlite_load.c checks its rows. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres_int.h"

#define PAGE "10000"

enum {
    C_ARRIVAL, C_ID, C_HOLDER, C_STATE, C_PRIORITY, C_CREATED, C_ARRIVED, C_RKEY, C_GROUP,
    C_CANCEL, C_GRACE, C_LEASE, C_TIMEOUT, C_LIFE, C_GRANTED, C_GRANT_SEQ, C_REVOKE_AT, C_ENDED,
    C_REASON, C_BY, C_LOCKS, C_TAGS, C_IDEM, C_IDEM_FP, C_COUNT
};

typedef struct claim_row {
    sl_claim_rec rec;
    sl_claim_lock_rec locks[SL_CLAIM_LOCKS_MAX];
    sl_tag tags[SL_TAGS_MAX];
    char what[160];
    char scratch[SL_ROWS_JSON_MAX + 1];
    char scratch2[SL_ROWS_JSON_MAX + 1];
} claim_row;

static int bad_row(sl_pg *pg, const char *what, const char *name, const char *why)
{
    return sl__store_fail(&pg->base, SL_STORE_EDATA,
                          "the store %s: saved %s %.300s cannot be restored: %s", pg->label, what,
                          name, why);
}

static int fail(sl_pg *pg, const char *why)
{
    return sl__store_fail(&pg->base, SL_STORE_EIO, "the store %s: %s", pg->label, why);
}

static PGresult *query(sl_pg *pg, const char *sql, char *why, size_t cap)
{
    PGresult *r = PQexec(pg->rc, sql);
    if (r && PQresultStatus(r) == PGRES_TUPLES_OK)
        return r;
    const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(pg->rc);
    snprintf(why, cap, "%s: %.*s", sql, (int)strcspn(m, "\n"), m);
    PQclear(r);
    return NULL;
}

static bool int_at(const PGresult *r, int row, int col, int64_t lo, int64_t hi, int64_t *out)
{
    if (PQgetisnull(r, row, col))
        return false;
    const char *s = PQgetvalue(r, row, col);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool text_at(const PGresult *r, int row, int col, size_t max, bool nullable,
                    const char **out)
{
    *out = NULL;
    if (PQgetisnull(r, row, col))
        return nullable;
    if ((size_t)PQgetlength(r, row, col) > max)
        return false;
    *out = PQgetvalue(r, row, col);
    return true;
}

static int load_counters(sl_pg *pg, sl_engine *eng, char *why, size_t cap)
{
    PGresult *r = query(pg, "SELECT next_seq, next_arrival, next_grant, token_floor FROM meta"
                            " WHERE id = 1", why, cap);
    if (!r)
        return fail(pg, why);
    int64_t v[4];
    bool ok = PQntuples(r) == 1;
    for (int i = 0; ok && i < 4; i++)
        ok = int_at(r, 0, i, INT64_MIN, INT64_MAX, &v[i]);
    PQclear(r);
    if (!ok)
        return bad_row(pg, "counters", "(meta)", "the row is missing or damaged");
    sl_engine_restore_counters(eng, (uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2], (uint64_t)v[3]);
    return 0;
}

static int load_configs(sl_pg *pg, sl_engine *eng, sl_store_load_stats *stats, char *why,
                        size_t cap)
{
    PGresult *r = query(pg, "SELECT name, lim, strategy, lease_ms, overtake_ms FROM configs",
                        why, cap);
    if (!r)
        return fail(pg, why);
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        const char *name;
        int64_t lim, strategy, lease, overtake;
        if (!text_at(r, i, 0, SL_NAME_MAX, false, &name))
            rc = bad_row(pg, "configuration", "(unreadable name)", "its name is missing");
        else if (!int_at(r, i, 1, 0, SL_LIMIT_MAX, &lim) ||
                 !int_at(r, i, 2, SL_STRICT, SL_REBALANCED, &strategy) ||
                 !int_at(r, i, 3, 0, INT64_MAX, &lease) || !int_at(r, i, 4, 0, INT64_MAX, &overtake))
            rc = bad_row(pg, "configuration", name, "a column is missing or out of range");
        else if (sl_engine_restore_config(eng, name,
                                          &(sl_sem_opts){(uint32_t)lim, (sl_strategy)strategy,
                                                         lease, overtake}) != 0)
            rc = bad_row(pg, "configuration", name,
                         "the engine refused it (a bad or repeated name, or too many)");
        else
            stats->configs++;
    }
    PQclear(r);
    return rc;
}

static int load_locks(sl_pg *pg, sl_engine *eng, sl_store_load_stats *stats, char *why,
                      size_t cap)
{
    PGresult *r = query(pg, "SELECT key, token FROM locks", why, cap);
    if (!r)
        return fail(pg, why);
    int rc = 0;
    for (int i = 0; rc == 0 && i < PQntuples(r); i++) {
        const char *key;
        int64_t token;
        if (!text_at(r, i, 0, SL_LOCK_KEY_MAX, false, &key) ||
            !int_at(r, i, 1, INT64_MIN, INT64_MAX, &token))
            rc = bad_row(pg, "lock", key ? key : "(unreadable key)", "a column is damaged");
        else if (sl_engine_restore_token(eng, key, (uint64_t)token) != 0)
            rc = bad_row(pg, "lock", key, "the key is not mtx/NAME or sem/NAME");
        else
            stats->locks++;
    }
    PQclear(r);
    return rc;
}

static bool row_json(claim_row *row, const char *what, int rc, size_t n)
{
    if (rc == 0)
        return true;
    snprintf(row->what, sizeof(row->what), "its %s %s", what,
             rc == -1 ? "are not a JSON array of arrays"
             : rc == -2 ? "are too many"
                        : "are malformed");
    (void)n;
    return false;
}

/* One claims row into row->rec; false with row->what when damaged. */
static bool read_claim(const PGresult *r, int i, claim_row *row)
{
    static const struct {
        int col;
        int64_t lo, hi;
    } ints[] = {
        {C_ARRIVAL, INT64_MIN, INT64_MAX},     {C_STATE, SL_PENDING, SL_CANCELED},
        {C_PRIORITY, INT32_MIN, INT32_MAX},    {C_CREATED, INT64_MIN, INT64_MAX},
        {C_ARRIVED, INT64_MIN, INT64_MAX},     {C_CANCEL, SL_CANCEL_NONE, SL_CANCEL_IN_PROGRESS},
        {C_GRACE, INT64_MIN, INT64_MAX},       {C_LEASE, INT64_MIN, INT64_MAX},
        {C_TIMEOUT, INT64_MIN, INT64_MAX},     {C_LIFE, INT64_MIN, INT64_MAX},
        {C_GRANTED, INT64_MIN, INT64_MAX},     {C_GRANT_SEQ, INT64_MIN, INT64_MAX},
        {C_REVOKE_AT, INT64_MIN, INT64_MAX},   {C_ENDED, INT64_MIN, INT64_MAX},
        {C_REASON, SL_REASON_NONE, SL_REASON_OPERATOR}, {C_IDEM_FP, INT64_MIN, INT64_MAX},
    };
    static const struct {
        int col;
        size_t max;
        bool nullable;
    } texts[] = {{C_ID, SL_ID_MAX, false},       {C_HOLDER, SL_HOLDER_MAX, false},
                 {C_RKEY, SL_NAME_MAX, true},    {C_GROUP, SL_NAME_MAX, true},
                 {C_BY, SL_ID_MAX, true},        {C_IDEM, SL_IDEM_MAX, true},
                 {C_LOCKS, SL_ROWS_JSON_MAX, false}, {C_TAGS, SL_ROWS_JSON_MAX, false}};
    int64_t x[C_COUNT] = {0};
    const char *t[C_COUNT] = {0};
    for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++)
        if (!int_at(r, i, ints[k].col, ints[k].lo, ints[k].hi, &x[ints[k].col])) {
            snprintf(row->what, sizeof(row->what),
                     "its column %s is missing or out of range", PQfname(r, ints[k].col));
            return false;
        }
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++)
        if (!text_at(r, i, texts[k].col, texts[k].max, texts[k].nullable, &t[texts[k].col])) {
            snprintf(row->what, sizeof(row->what), "its column %s is missing or too long",
                     PQfname(r, texts[k].col));
            return false;
        }
    sl_claim_view *v = &row->rec.v;
    memset(&row->rec, 0, sizeof(row->rec));
    v->id = t[C_ID];
    v->holder = t[C_HOLDER];
    v->rebalance_key = t[C_RKEY];
    v->group = t[C_GROUP];
    v->by = t[C_BY];
    v->idem = t[C_IDEM];
    v->idem_fp = (uint64_t)x[C_IDEM_FP];
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
    v->expires_ms = -1;
    v->granted_ms = x[C_GRANTED];
    v->grant_seq = (uint64_t)x[C_GRANT_SEQ];
    v->revoke_at_ms = x[C_REVOKE_AT];
    v->ended_ms = x[C_ENDED];
    v->reason = (sl_reason)x[C_REASON];
    size_t n = 0;
    int rc = sl__rows_parse_locks(t[C_LOCKS], (size_t)PQgetlength(r, i, C_LOCKS), row->scratch,
                                  row->locks, SL_CLAIM_LOCKS_MAX, &n);
    v->nlocks = n;
    if (!row_json(row, "locks", rc, n))
        return false;
    rc = sl__rows_parse_tags(t[C_TAGS], (size_t)PQgetlength(r, i, C_TAGS), row->scratch2,
                             row->tags, SL_TAGS_MAX, &n);
    v->ntags = n;
    if (!row_json(row, "tags", rc, n))
        return false;
    row->rec.locks = row->locks;
    row->rec.tags = row->tags;
    return true;
}

static void count(sl_store_load_stats *stats, sl_state state)
{
    stats->claims++;
    if (state == SL_PENDING)
        stats->pending++;
    else if (state == SL_HELD || state == SL_REVOKING)
        stats->held++;
    else
        stats->ended++;
}

static int load_claims(sl_pg *pg, sl_engine *eng, sl_store_load_stats *stats, char *why,
                       size_t cap)
{
    if (sl__pg_simple(pg->rc,
                      "DECLARE sl_claims NO SCROLL CURSOR FOR SELECT arrival, id, holder, state,"
                      " priority, created, arrived, rebalance_key, grp, cancel, grace, lease,"
                      " timeout, life, granted, grant_seq, revoke_at, ended, reason, by_claim,"
                      " locks, tags, idem, idem_fp FROM claims ORDER BY arrival",
                      why, cap) != 0)
        return fail(pg, why);
    claim_row *row = malloc(sizeof(*row));
    if (!row)
        abort();
    int rc = 0;
    for (;;) {
        PGresult *r = query(pg, "FETCH " PAGE " FROM sl_claims", why, cap);
        if (!r) {
            rc = fail(pg, why);
            break;
        }
        int n = PQntuples(r);
        for (int i = 0; rc == 0 && i < n; i++) {
            sl_error err;
            if (!read_claim(r, i, row))
                rc = bad_row(pg, "claim", PQgetisnull(r, i, C_ID) ? "(no id)" : PQgetvalue(r, i, C_ID),
                             row->what);
            else if (sl_engine_restore_claim(eng, &row->rec, &err) != 0)
                rc = bad_row(pg, "claim", row->rec.v.id, err.what);
            else
                count(stats, row->rec.v.state);
        }
        PQclear(r);
        if (rc || n == 0)
            break;
    }
    free(row);
    return rc;
}

int sl__pg_load(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats)
{
    sl_pg *pg = (sl_pg *)st;
    sl_store_load_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    /* A new leader loads what the last one wrote: where the log ends now. */
    char ewhy[512];
    if (sl__pg_ensure_live(pg, pg->wc, ewhy, sizeof(ewhy)) != 0 ||
        sl__pg_writer_settings(pg, ewhy, sizeof(ewhy)) != 0 ||
        sl__pg_ensure_live(pg, pg->rc, ewhy, sizeof(ewhy)) != 0 ||
        sl__pg_read_log_ends(pg, ewhy, sizeof(ewhy)) != 0)
        return fail(pg, ewhy);
    int rc = sl__pg_apply(pg, 0);
    if (rc)
        return sl__store_fail(st, rc, "%s", pg->apply_err);
    /* Shared mode: the log is applied under this server's epoch before the
     * state is read (an apply with nothing to do checked nothing). */
    if (pg->epoch > 0 && sl__pg_check_epoch(pg, ewhy, sizeof(ewhy)) != 0)
        return sl__store_fail(st, SL_STORE_EFENCED, "the store %s: %s", pg->label, ewhy);
    char why[512];
    if (sl__pg_simple(pg->rc, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", why,
                      sizeof(why)) != 0)
        return fail(pg, why);
    rc = load_counters(pg, eng, why, sizeof(why));
    if (rc == 0)
        rc = load_configs(pg, eng, stats, why, sizeof(why));
    if (rc == 0)
        rc = load_locks(pg, eng, stats, why, sizeof(why));
    if (rc == 0)
        rc = load_claims(pg, eng, stats, why, sizeof(why));
    sl__pg_simple(pg->rc, rc ? "ROLLBACK" : "COMMIT", why, sizeof(why));
    if (rc == 0)
        sl_engine_restore_done(eng, now);
    return rc;
}
