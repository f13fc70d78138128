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

#include "claim_row.h"
#include "postgres_int.h"

#define PAGE "10000"

typedef sl_claim_row claim_row;

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

/* The engine takes a configuration with its rules (NULL: none). */
static int restore_config(sl_pg *pg, const PGresult *r, int i, sl_engine *eng, const char *name,
                          sl_sem_opts *o)
{
    const char *text;
    if (!text_at(r, i, 5, SL_RULES_JSON_MAX, true, &text))
        return bad_row(pg, "configuration", name, "its rules are too long");
    char why[160];
    size_t len = text ? (size_t)PQgetlength(r, i, 5) : 0;
    if (sl__rows_restore_config(eng, name, o, text, len, why, sizeof(why)) != 0)
        return bad_row(pg, "configuration", name, why);
    return 0;
}

static int load_configs(sl_pg *pg, sl_engine *eng, sl_store_load_stats *stats, char *why,
                        size_t cap)
{
    PGresult *r = query(pg, "SELECT name, lim, strategy, lease_ms, overtake_ms, rules FROM configs",
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
        else if ((rc = restore_config(pg, r, i, eng, name,
                                      &(sl_sem_opts){.limit = (uint32_t)lim,
                                                     .strategy = (sl_strategy)strategy,
                                                     .lease_ms = lease,
                                                     .overtake_ms = overtake})) == 0)
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

/* The claim reader's accessors (claim_row.h) over one row of a result. */
typedef struct pg_row {
    const PGresult *r;
    int i;
} pg_row;

static bool cc_int(void *src, int col, int64_t lo, int64_t hi, int64_t *out)
{
    const pg_row *p = src;
    return int_at(p->r, p->i, col, lo, hi, out);
}

static bool cc_text(void *src, int col, size_t max, bool nullable, const char **out, size_t *len)
{
    const pg_row *p = src;
    *len = (size_t)PQgetlength(p->r, p->i, col);
    return text_at(p->r, p->i, col, max, nullable, out);
}

static const char *cc_name(void *src, int col)
{
    return PQfname(((const pg_row *)src)->r, col);
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
                      "DECLARE sl_claims NO SCROLL CURSOR FOR SELECT " SL_CLAIM_COLUMNS
                      " FROM claims ORDER BY arrival",
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
            pg_row src = {r, i};
            sl_claim_cols cols = {cc_int, cc_text, cc_name, &src};
            if (!sl__claim_row_read(&cols, row))
                rc = bad_row(pg, "claim", row->rec.v.id ? row->rec.v.id : "(no id)", row->what);
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
