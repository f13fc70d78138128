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
static int find_start(sl_sqlite *sq, uint64_t since, int64_t from_ms, int64_t *start,
                      int64_t *table_last)
{
    probe last, p;
    *start = 0;
    int rc = probe_at(sq, SQ_LOG_LAST, 0, &last);
    *table_last = rc == 1 ? last.id : 0;
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

/* Where a read of the table left off, for the log file's records after
 * it (the ones not yet applied): the last id read, the last record's
 * newest time, and whether the read goes on there. */
typedef struct walk {
    int64_t last_id;
    int64_t prev_time;
    bool on;
} walk;

/* Reads the records from start to end (ids, inclusive). */
static int scan_range(sl_sqlite *sq, int64_t start, int64_t end, sl_log_scan *sc, walk *w)
{
    sqlite3_stmt *s = sq->stmt[SQ_LOG_FROM];
    sqlite3_bind_int64(s, 1, start);
    int rc = 0, step = SQLITE_DONE;
    while (rc == 0 && !sl__log_scan_done(sc) && (step = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        /* A record's events are no older than the previous record's
         * newest: past the claim's end, nothing more of it can come. */
        if (w->prev_time > sc->to_ms || id > end) {
            step = SQLITE_DONE;
            w->on = false;
            break;
        }
        w->prev_time = sqlite3_column_int64(s, 1);
        w->last_id = id > w->last_id ? id : w->last_id;
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
static int scan_gone_claim(sl_sqlite *sq, int64_t start, sl_log_scan *sc, walk *w)
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
    return scan_range(sq, first > start ? first : start, INT64_MAX, sc, w);
}

typedef struct tail {
    sl_sqlite *sq;
    sl_log_scan *sc;
    walk *w;
    uint64_t since;
    int64_t from_ms;
    bool started; /* a record past since and from_ms was reached */
    /* read_at: only the records holding the listed seqs not read yet. */
    const sl_store_seqs *at;
    size_t next_at;
    int rc;
} tail;

/* Whether the record whose seqs reach seq_hi is one read_at wants: the
 * first to reach a listed seq not read yet. 0: no, 1: yes, -1: every
 * listed seq is read (stop). */
static int wanted(tail *t, uint64_t seq_hi)
{
    const sl_store_seqs *at = t->at;
    while (t->next_at < at->n &&
           (at->seq[t->next_at] <= t->sc->rec_hi || at->seq[t->next_at] <= t->sc->since))
        t->next_at++;
    if (t->next_at == at->n)
        return -1;
    return seq_hi >= at->seq[t->next_at];
}

static int tail_frame(void *ud, uint64_t id, const void *p, size_t n)
{
    tail *t = ud;
    uint64_t seq_hi;
    int64_t time_hi;
    uint32_t events;
    if (n < SQ_FRAME_HEAD) {
        t->rc = sl__store_fail(&t->sq->base, SL_STORE_EDATA,
                               "the store %s: log record %llu is too short", t->sq->path,
                               (unsigned long long)id);
        return 1;
    }
    sl__sqlite_frame_read(p, &seq_hi, &time_hi, &events);
    probe pr = {(int64_t)id, seq_hi, time_hi};
    int want = t->at ? wanted(t, seq_hi) : 1;
    if (want <= 0)
        return want < 0;
    if (!t->started && !past(&pr, t->since, t->from_ms))
        return 0;
    t->started = true;
    if (t->w->prev_time > t->sc->to_ms)
        return 1;
    t->w->prev_time = time_hi;
    t->w->last_id = (int64_t)id;
    t->rc = sl__log_scan_record(&t->sq->base, t->sq->read_batch, (int64_t)id,
                                (const unsigned char *)p + SQ_FRAME_HEAD, n - SQ_FRAME_HEAD, t->sc);
    return t->rc || sl__log_scan_done(t->sc);
}

/* The first record from `from` on that may hold an event with seq > since
 * and time >= from_ms (sq->next_id when none): found in the keys of the
 * records appended (seq_hi and time_hi never go down along the ids);
 * `from` itself when they do not reach back there. */
static int64_t tail_start(const sl_sqlite *sq, int64_t from, uint64_t since, int64_t from_ms)
{
    int64_t lo = from, hi = sq->next_id;
    if (lo < sq->keys_base || hi > sq->keys_base + (int64_t)sq->nkeys)
        return from;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const struct sq_key *k = &sq->keys[mid - sq->keys_base];
        if (k->seq_hi > since && k->time_hi >= from_ms)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* The records after the table's last, in the log file: committed, not yet
 * applied (at most a few thousand); with at, only those holding its seqs.
 * Unless the table's read started already, from the first that may hold
 * one (tail_start). w->last_id is then the last record read. */
static int scan_tail(sl_sqlite *sq, walk *w, sl_log_scan *sc, uint64_t since, int64_t from_ms,
                     bool started, const sl_store_seqs *at)
{
    if (!sq->journal || !w->on || sl__log_scan_done(sc))
        return 0;
    int64_t start = started ? w->last_id + 1 : tail_start(sq, w->last_id + 1, since, from_ms);
    uint64_t from = (uint64_t)start, first = sl_journal_first_id(sq->journal);
    tail t = {.sq = sq, .sc = sc, .w = w, .since = since, .from_ms = from_ms, .started = started,
              .at = at};
    char err[SL_STORE_ERR_MAX];
    int rc = sl_journal_read_indexed(sq->journal, from > first ? from : first,
                                     (uint64_t)sq->next_id, tail_frame, &t, err, sizeof(err));
    if (rc < 0)
        return sl__store_fail(&sq->base, rc, "the store %s: cannot read the events: %s", sq->path,
                              err);
    return t.rc;
}

/* Where the log file's records begin for a read whose table read ended at
 * table_last: records up to the applied one are the table's (or pruned),
 * and their copies in the file are never read. Taken after the table's
 * last row was, applied is at most what the table read sees. */
static walk walk_from(sl_sqlite *sq, int64_t table_last)
{
    int64_t applied = sq->applied;
    return (walk){.last_id = table_last > applied ? table_last : applied,
                  .prev_time = INT64_MIN, .on = true};
}

/* The record holding seq, alone (sl_log_at_fn): found by binary search in
 * the table, or, not applied yet, in the log file. The file has no index:
 * one pass reads the records there holding seq and the listed seqs after
 * it (which sl__log_read_at then passes as read), from the record after
 * the last one read there. */
static int read_at(sl_store *st, uint64_t seq, sl_log_scan *sc, bool *found)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    int64_t at = 0, table_last = 0;
    if (find_start(sq, seq - 1, INT64_MIN, &at, &table_last) != 0)
        return sl__sqlite_fail(sq, "cannot find where to read the events");
    walk w = walk_from(sq, table_last);
    *found = at != 0;
    if (at)
        return scan_range(sq, at, at, sc, &w);
    if (sq->read_tail_id > w.last_id)
        w.last_id = sq->read_tail_id;
    int rc = scan_tail(sq, &w, sc, seq - 1, INT64_MIN, false, sq->read_at_list);
    *found = sc->rec_hi >= seq;
    sq->read_tail_id = w.last_id;
    return rc;
}

/* The records a read goes through, from sc->since: a claim's listed ones
 * (and the log after them when the list stops short), or those of the
 * window from from_ms on, or a purged claim's; the table's, then the log
 * file's. */
static int scan(sl_sqlite *sq, const sl_store_seqs *at, int64_t from_ms, sl_log_scan *sc)
{
    if (at) {
        bool on = false;
        sq->read_at_list = at;
        sq->read_tail_id = 0;
        int rc = sl__log_read_at(&sq->base, at, sc, read_at, &on);
        sq->read_at_list = NULL;
        if (rc || !on)
            return rc;
    }
    int64_t start = 0, table_last = 0;
    if (find_start(sq, sc->since, from_ms, &start, &table_last) != 0)
        return sl__sqlite_fail(sq, "cannot find where to read the events");
    walk w = walk_from(sq, table_last);
    bool gone = !at && sc->claim && from_ms == INT64_MIN;
    int rc = 0;
    if (start && gone)
        rc = scan_gone_claim(sq, start, sc, &w);
    else if (start)
        rc = scan_range(sq, start, INT64_MAX, sc, &w);
    else if (gone)
        sc->to_end = true; /* as scan_gone_claim: its records, if any, are in the log file */
    if (rc == 0)
        rc = scan_tail(sq, &w, sc, sc->since, from_ms, start != 0, NULL);
    return rc;
}

static int last_seq(sl_sqlite *sq, uint64_t *out)
{
    probe last;
    int rc = probe_at(sq, SQ_LOG_LAST, 0, &last);
    if (rc < 0)
        return sl__sqlite_fail(sq, "cannot read the newest event");
    *out = rc == 1 ? last.seq_hi : 0;
    if (sq->committed_seq > *out) /* in the log file, not yet applied */
        *out = sq->committed_seq;
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
