/* postgres_events.c - the event log of the PostgreSQL store, read from the
 * log's records (log_read.c) on the reader's connection, and pruned in a
 * commit's transaction on the writer's. The first record of a read is one
 * index lookup (log_seq, log_time); records come a page at a time. The
 * rules are sqlite_events.c's: a claim's events between its arrival and
 * its end, a purged claim's from claim_log's record to its end event. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres_int.h"

static int64_t be64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | (unsigned char)p[i];
    return (int64_t)v;
}

static int read_fail(sl_pg *pg, const char *why)
{
    return sl__store_fail(&pg->base, SL_STORE_EIO, "the store %s: cannot read the events: %s",
                          pg->label, why);
}

/* One number (text result) from a prepared statement with one integer
 * parameter; 1 found, 0 none (or NULL), -1 error (message in why). */
static int one_int(sl_pg *pg, pq_stmt which, const char *arg, int64_t *out, char *why,
                   size_t cap)
{
    const char *v[1] = {arg};
    PGresult *r = sl__pg_exec(pg->rc, which, arg ? 1 : 0, v, NULL, NULL, 0, why, cap);
    if (!r)
        return -1;
    int found = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0);
    if (found)
        *out = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return found;
}

/* Reads the records from start to end (ids, inclusive), a page at a time. */
static int scan_range(sl_pg *pg, int64_t start, int64_t end, sl_log_scan *sc)
{
    int64_t prev_time = INT64_MIN, from = start;
    char why[512], arg[24];
    for (;;) {
        snprintf(arg, sizeof(arg), "%" PRId64, from);
        const char *v[1] = {arg};
        PGresult *r = sl__pg_exec(pg->rc, PQ_LOG_PAGE, 1, v, NULL, NULL, 1, why, sizeof(why));
        if (!r)
            return read_fail(pg, why);
        int n = PQntuples(r), rc = 0;
        bool done = n == 0;
        for (int i = 0; rc == 0 && !done && i < n; i++) {
            int64_t id = be64(PQgetvalue(r, i, 0));
            if (prev_time > sc->to_ms || id > end || sl__log_scan_done(sc)) {
                done = true;
                break;
            }
            prev_time = be64(PQgetvalue(r, i, 1));
            rc = sl__log_scan_record(&pg->base, pg->read_batch, id, PQgetvalue(r, i, 2),
                                     (size_t)PQgetlength(r, i, 2), sc);
            from = id + 1;
        }
        PQclear(r);
        if (rc)
            return rc;
        if (done || sl__log_scan_done(sc))
            return 0;
    }
}

int sl__pg_last_seq(sl_store *st, uint64_t *out)
{
    sl_pg *pg = (sl_pg *)st;
    char why[512];
    *out = 0;
    PGresult *r = sl__pg_exec(pg->rc, PQ_LOG_LAST, 0, NULL, NULL, NULL, 0, why, sizeof(why));
    if (!r)
        return read_fail(pg, why);
    if (PQntuples(r) > 0)
        *out = (uint64_t)strtoll(PQgetvalue(r, 0, 1), NULL, 10);
    PQclear(r);
    return 0;
}

/* Where a read starts: the first record with an event after since (and,
 * for a claim's window, no older than from_ms); 0 when none. */
static int find_start(sl_pg *pg, uint64_t since, int64_t from_ms, int64_t *start)
{
    char why[512], arg[24];
    int64_t by_seq = 0, by_time = 0;
    *start = 0;
    snprintf(arg, sizeof(arg), "%" PRIu64, since);
    int rc = one_int(pg, PQ_LOG_START_SEQ, arg, &by_seq, why, sizeof(why));
    if (rc <= 0)
        return rc < 0 ? read_fail(pg, why) : 0;
    if (from_ms != INT64_MIN) {
        snprintf(arg, sizeof(arg), "%" PRId64, from_ms);
        rc = one_int(pg, PQ_LOG_START_TIME, arg, &by_time, why, sizeof(why));
        if (rc <= 0)
            return rc < 0 ? read_fail(pg, why) : 0;
    }
    *start = by_time > by_seq ? by_time : by_seq;
    return 0;
}

static int scan_gone_claim(sl_pg *pg, int64_t start, sl_log_scan *sc)
{
    char why[512];
    int64_t first = 0, applied = 0;
    int found = one_int(pg, PQ_CLAIM_LOG_FIND, sc->claim, &first, why, sizeof(why));
    if (found < 0 || one_int(pg, PQ_APPLIED_GET, NULL, &applied, why, sizeof(why)) < 0)
        return read_fail(pg, why);
    if (!found)
        first = applied + 1;
    sc->to_end = true;
    return scan_range(pg, first > start ? first : start, INT64_MAX, sc);
}

/* The record holding seq, alone (sl_log_at_fn): one statement. */
static int read_at(sl_store *st, uint64_t seq, sl_log_scan *sc, bool *found)
{
    sl_pg *pg = (sl_pg *)st;
    char why[512], arg[24];
    snprintf(arg, sizeof(arg), "%" PRIu64, seq);
    const char *v[1] = {arg};
    PGresult *r = sl__pg_exec(pg->rc, PQ_LOG_AT, 1, v, NULL, NULL, 1, why, sizeof(why));
    if (!r)
        return read_fail(pg, why);
    int rc = 0;
    *found = PQntuples(r) > 0;
    if (*found)
        rc = sl__log_scan_record(st, pg->read_batch, be64(PQgetvalue(r, 0, 0)), PQgetvalue(r, 0, 1),
                                 (size_t)PQgetlength(r, 0, 1), sc);
    PQclear(r);
    return rc;
}

/* The records a read goes through, from sc->since: a claim's listed ones
 * (and the log after them when the list stops short), or those of the
 * window from from_ms on, or a purged claim's. */
static int scan(sl_pg *pg, const sl_store_seqs *at, int64_t from_ms, sl_log_scan *sc)
{
    bool walk = false;
    if (at) {
        int rc = sl__log_read_at(&pg->base, at, sc, read_at, &walk);
        if (rc || !walk)
            return rc;
    }
    int64_t start = 0;
    int rc = find_start(pg, sc->since, from_ms, &start);
    if (rc || !start)
        return rc;
    if (!at && sc->claim && from_ms == INT64_MIN)
        return scan_gone_claim(pg, start, sc);
    return scan_range(pg, start, INT64_MAX, sc);
}

int sl__pg_events(sl_store *st, uint64_t since, const char *claim, const sl_store_seqs *at,
                  int64_t from_ms, int64_t to_ms, size_t limit, sl_store_event_fn fn, void *ud,
                  uint64_t *next)
{
    sl_pg *pg = (sl_pg *)st;
    *next = since;
    if (limit == 0 || since >= (uint64_t)INT64_MAX)
        return 0;
    if (!pg->read_batch && !(pg->read_batch = sl_store_batch_new()))
        return sl__store_fail(st, SL_STORE_EIO, "out of memory for a log record");
    char why[512];
    if (sl__pg_ensure(pg, pg->rc, why, sizeof(why)) != 0)
        return read_fail(pg, why);
    sl_log_scan sc = {.since = since, .claim = claim, .to_ms = to_ms, .limit = limit,
                      .budget = st->scan_budget, .last = since, .fn = fn, .ud = ud};
    int rc = scan(pg, at, from_ms, &sc);
    if (rc)
        return rc;
    st->read_partial = sl__log_scan_spent(&sc) && !sc.stopped && sc.passed < limit;
    if (sc.stopped || sc.passed == limit || st->read_partial) {
        *next = sc.last;
        return 0;
    }
    uint64_t newest = 0;
    rc = sl__pg_last_seq(st, &newest);
    if (rc)
        return rc;
    *next = newest > since ? newest : since;
    return 0;
}

/* Inside the commit's transaction (postgres_write.c): the records whose
 * events are all older than before_ms, never the newest record nor one not
 * yet applied (as sqlite_events.c's). */
int sl__pg_prune_in(sl_pg *pg, int64_t before_ms, uint64_t *deleted, sl_store_batch *b)
{
    char why[512], arg[24];
    *deleted = 0;
    int64_t keep = b->nops ? pg->next_id : pg->next_id - 1;
    if (pg->applied + 1 < keep)
        keep = pg->applied + 1;
    snprintf(arg, sizeof(arg), "%" PRId64, before_ms);
    const char *v[1] = {arg};
    PGresult *r = sl__pg_exec(pg->wc, PQ_PRUNE_FIRST_KEPT, 1, v, NULL, NULL, 0, why, sizeof(why));
    if (!r)
        return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s", pg->label, why);
    if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) {
        int64_t first = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        if (first < keep)
            keep = first;
    }
    PQclear(r);
    snprintf(arg, sizeof(arg), "%" PRId64, keep);
    r = sl__pg_exec(pg->wc, PQ_PRUNE_COUNT, 1, v, NULL, NULL, 0, why, sizeof(why));
    if (!r)
        return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s", pg->label, why);
    uint64_t n = (uint64_t)strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    r = sl__pg_exec(pg->wc, PQ_PRUNE, 1, v, NULL, NULL, 0, why, sizeof(why));
    if (!r)
        return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s", pg->label, why);
    PQclear(r);
    *deleted = n;
    return 0;
}
