/* sqlite_events.c - reading and pruning the event log of the SQLite store.
 *
 * The event log is the log of batches itself: each row's record holds its
 * batch's events (record.h), and the row says the highest seq given out so
 * far (seq_hi) and the newest event time (time_hi), both never going down
 * along the ids. A read finds its first row by binary search on seq (and
 * on time for one claim's events), with probes by rowid, and decodes rows
 * from there. */
#include <stdio.h>
#include <string.h>

#include "log_read.h"
#include "sqlite_int.h"

typedef struct probe {
    int64_t id;
    uint64_t seq_hi;
    int64_t time_hi;
} probe;

/* The first row at or after id; 1 when found, 0 when none, -1 on error. */
static int probe_at(sl_sqlite *sq, sq_stmt which, int64_t id, probe *out)
{
    sqlite3_stmt *s = sq->stmt[which];
    if (which == SQ_LOG_PROBE)
        sqlite3_bind_int64(s, 1, id);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        out->id = sqlite3_column_int64(s, 0);
        out->seq_hi = (uint64_t)sqlite3_column_int64(s, 1);
        out->time_hi = sqlite3_column_int64(s, 2);
    }
    sl__sqlite_reset(s);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* Whether the row at or after id is already where the read starts. */
static bool past(const probe *p, uint64_t since, int64_t from_ms)
{
    return p->seq_hi > since && p->time_hi >= from_ms;
}

/* The first row that may hold an event with seq > since and time >=
 * from_ms; 0 in *start when none does. */
static int find_start(sl_sqlite *sq, uint64_t since, int64_t from_ms, int64_t *start)
{
    probe last, p;
    *start = 0;
    int rc = probe_at(sq, SQ_LOG_LAST, 0, &last);
    if (rc <= 0 || !past(&last, since, from_ms))
        return rc < 0 ? -1 : 0;
    sqlite3_stmt *f = sq->stmt[SQ_LOG_FIRST];
    int64_t lo = sqlite3_step(f) == SQLITE_ROW ? sqlite3_column_int64(f, 0) : 1;
    sl__sqlite_reset(f);
    int64_t hi = last.id;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if ((rc = probe_at(sq, SQ_LOG_PROBE, mid, &p)) < 0)
            return -1;
        if (rc == 1 && past(&p, since, from_ms))
            hi = mid;
        else
            lo = mid + 1;
    }
    *start = lo;
    return 0;
}

/* Reads the records from start to end (ids, inclusive). */
static int scan_range(sl_sqlite *sq, int64_t start, int64_t end, sl_log_scan *sc)
{
    sqlite3_stmt *s = sq->stmt[SQ_LOG_FROM];
    sqlite3_bind_int64(s, 1, start);
    int rc = 0, step = SQLITE_DONE;
    int64_t prev_time = INT64_MIN;
    while (rc == 0 && !sl__log_scan_done(sc) && (step = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        /* A record's events are no older than the previous record's
         * newest: past the claim's end, nothing more of it can come. */
        if (prev_time > sc->to_ms || id > end) {
            step = SQLITE_DONE;
            break;
        }
        prev_time = sqlite3_column_int64(s, 1);
        rc = sl__log_scan_record(&sq->base, sq->read_batch, id, sqlite3_column_blob(s, 2),
                                 (size_t)sqlite3_column_bytes(s, 2), sc);
    }
    if (rc == 0 && !sl__log_scan_done(sc) && step != SQLITE_DONE)
        rc = sl__sqlite_fail(sq, "cannot read the events");
    sl__sqlite_reset(s);
    return rc;
}

/* One int64 from a one-row read; 1 when found, 0 when not, -1. */
static int read_one(sqlite3_stmt *s, int64_t *out)
{
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    sl__sqlite_reset(s);
    return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
}

/* A claim the engine no longer has (purged, or never made): from the
 * record of its first event (claim_log) to its end, or, when claim_log
 * has no row for it (never made, or made after the apply's last record),
 * the records the apply has not reached. Never the whole log. */
static int scan_gone_claim(sl_sqlite *sq, int64_t start, sl_log_scan *sc)
{
    int64_t first = 0, applied = 0;
    sqlite3_stmt *f = sq->stmt[SQ_CLAIM_LOG_FIND];
    sqlite3_bind_text(f, 1, sc->claim, -1, SQLITE_STATIC);
    int found = read_one(f, &first);
    if (found < 0 || read_one(sq->stmt[SQ_APPLIED_GET], &applied) < 0)
        return sl__sqlite_fail(sq, "cannot find a claim's records");
    if (!found)
        first = applied + 1;
    sc->to_end = true;
    return scan_range(sq, first > start ? first : start, INT64_MAX, sc);
}

/* The record holding seq, alone (sl_log_at_fn). */
static int read_at(sl_store *st, uint64_t seq, sl_log_scan *sc, bool *found)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    int64_t at = 0;
    if (find_start(sq, seq - 1, INT64_MIN, &at) != 0)
        return sl__sqlite_fail(sq, "cannot find where to read the events");
    *found = at != 0;
    return at ? scan_range(sq, at, at, sc) : 0;
}

/* The records a read goes through, from sc->since: a claim's listed ones
 * (and the log after them when the list stops short), or those of the
 * window from from_ms on, or a purged claim's. */
static int scan(sl_sqlite *sq, const sl_store_seqs *at, int64_t from_ms, sl_log_scan *sc)
{
    bool walk = false;
    if (at) {
        int rc = sl__log_read_at(&sq->base, at, sc, read_at, &walk);
        if (rc || !walk)
            return rc;
    }
    int64_t start = 0;
    if (find_start(sq, sc->since, from_ms, &start) != 0)
        return sl__sqlite_fail(sq, "cannot find where to read the events");
    if (!start)
        return 0;
    if (!at && sc->claim && from_ms == INT64_MIN)
        return scan_gone_claim(sq, start, sc);
    return scan_range(sq, start, INT64_MAX, sc);
}

static int last_seq(sl_sqlite *sq, uint64_t *out)
{
    probe last;
    int rc = probe_at(sq, SQ_LOG_LAST, 0, &last);
    if (rc < 0)
        return sl__sqlite_fail(sq, "cannot read the newest event");
    *out = rc == 1 ? last.seq_hi : 0;
    return 0;
}

int sl__sqlite_last_seq(sl_store *st, uint64_t *out)
{
    *out = 0;
    return last_seq((sl_sqlite *)st, out);
}

int sl__sqlite_events(sl_store *st, uint64_t since, const char *claim, const sl_store_seqs *at,
                      int64_t from_ms, int64_t to_ms, size_t limit, sl_store_event_fn fn,
                      void *ud, uint64_t *next)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    *next = since;
    /* Sequences are stored as signed 64-bit: nothing lies past INT64_MAX. */
    if (limit == 0 || since >= (uint64_t)INT64_MAX)
        return 0;
    if (!sq->read_batch && !(sq->read_batch = sl_store_batch_new()))
        return sl__store_fail(st, SL_STORE_EIO, "out of memory for a log record");
    sl_log_scan sc = {.since = since, .claim = claim, .to_ms = to_ms, .limit = limit,
                      .budget = st->scan_budget, .last = since, .fn = fn, .ud = ud};
    int rc = scan(sq, at, from_ms, &sc);
    if (rc)
        return rc;
    st->read_partial = sl__log_scan_spent(&sc) && !sc.stopped && sc.passed < limit;
    if (sc.stopped || sc.passed == limit || st->read_partial) {
        *next = sc.last;
        return 0;
    }
    /* The end of the log was reached (or nothing more of the claim can
     * come): everything up to its newest event counts as examined. */
    uint64_t newest = 0;
    rc = last_seq(sq, &newest);
    if (rc)
        return rc;
    *next = newest > since ? newest : since;
    return 0;
}

/* ---- pruning, inside the write connection's transaction --------------------- */

static int prune_fail(sl_sqlite *sq, sl_store_batch *b, sqlite3_stmt *s, const char *doing)
{
    sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s: %s", sq->path, doing,
                   sqlite3_errmsg(sq->wdb));
    sl__sqlite_reset(s);
    return SL_STORE_EIO;
}

/* Deletes the records whose events are all older than before_ms, but never
 * the newest record (it holds the sequence) nor one not yet applied to the
 * state tables. */
int sl__sqlite_prune_in(sl_sqlite *sq, int64_t before_ms, uint64_t *deleted, sl_store_batch *b)
{
    *deleted = 0;
    int64_t keep = b->nops ? sq->next_id : sq->next_id - 1; /* the newest (its own, if any) */
    if (sq->applied + 1 < keep)
        keep = sq->applied + 1;
    sqlite3_stmt *s = sq->wstmt[SQ_PRUNE_FIRST_KEPT];
    sqlite3_bind_int64(s, 1, before_ms);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW && sqlite3_column_int64(s, 0) < keep)
        keep = sqlite3_column_int64(s, 0);
    else if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return prune_fail(sq, b, s, "cannot find the events to prune");
    sl__sqlite_reset(s);
    s = sq->wstmt[SQ_PRUNE_COUNT];
    sqlite3_bind_int64(s, 1, keep);
    if (sqlite3_step(s) != SQLITE_ROW)
        return prune_fail(sq, b, s, "cannot count the events to prune");
    uint64_t n = (uint64_t)sqlite3_column_int64(s, 0);
    sl__sqlite_reset(s);
    s = sq->wstmt[SQ_PRUNE];
    sqlite3_bind_int64(s, 1, keep);
    if (sqlite3_step(s) != SQLITE_DONE)
        return prune_fail(sq, b, s, "cannot prune the events");
    sl__sqlite_reset(s);
    *deleted = n;
    return 0;
}
