/* sqlite_events.c - reading and pruning the event log of the SQLite store.
 *
 * events.seq is the table's rowid: "seq > N" starts with an index seek, the
 * claim filter uses events_claim (whose entries are ordered by claim, then
 * rowid), and the newest seq is one lookup. */
#include <stdio.h>
#include <string.h>

#include "sqlite_int.h"

/* Longest values read back from the log (longer means the row is damaged):
 * an event type name, and an event's lock keys as JSON. */
#define EV_TYPE_MAX 32
#define EV_LOCKS_MAX (SL_CLAIM_LOCKS_MAX * (6 * SL_LOCK_KEY_MAX + 3) + 2)

static bool text_ok(sqlite3_stmt *s, int i, size_t max, bool nullable, const char **out)
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

/* One row as the API's event; false when a column is damaged. */
static bool row_event(sqlite3_stmt *s, sl_store_event *ev)
{
    memset(ev, 0, sizeof(*ev));
    if (sqlite3_column_type(s, 0) != SQLITE_INTEGER || sqlite3_column_type(s, 1) != SQLITE_INTEGER)
        return false;
    ev->seq = (uint64_t)sqlite3_column_int64(s, 0);
    ev->time_ms = sqlite3_column_int64(s, 1);
    return text_ok(s, 2, EV_TYPE_MAX, false, &ev->type) &&
           text_ok(s, 3, SL_ID_MAX, true, &ev->claim) &&
           text_ok(s, 4, SL_HOLDER_MAX, true, &ev->holder) &&
           text_ok(s, 5, EV_LOCKS_MAX, false, &ev->locks) &&
           text_ok(s, 6, SQ_REASON_MAX, false, &ev->reason);
}

static int last_seq(sl_sqlite *sq, uint64_t *out)
{
    sqlite3_stmt *s = sq->stmt[SQ_LAST_SEQ];
    int rc = sqlite3_step(s);
    if (rc != SQLITE_ROW) {
        rc = sl__sqlite_fail(sq, "cannot read the newest event");
        sl__sqlite_reset(s);
        return rc;
    }
    *out = (uint64_t)sqlite3_column_int64(s, 0); /* NULL (no events) reads 0 */
    sl__sqlite_reset(s);
    return 0;
}

int sl__sqlite_last_seq(sl_store *st, uint64_t *out)
{
    *out = 0;
    return last_seq((sl_sqlite *)st, out);
}

int sl__sqlite_events(sl_store *st, uint64_t since, const char *claim, size_t limit,
                      sl_store_event_fn fn, void *ud, uint64_t *next)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    *next = since;
    /* Sequences are stored as signed 64-bit: nothing lies past INT64_MAX. */
    if (limit == 0 || since >= (uint64_t)INT64_MAX)
        return 0;
    sqlite3_stmt *s = sq->stmt[claim ? SQ_EVENTS_CLAIM : SQ_EVENTS_ALL];
    sqlite3_bind_int64(s, 1, (int64_t)since);
    sqlite3_bind_int64(s, 2, limit > (size_t)INT64_MAX ? INT64_MAX : (int64_t)limit);
    if (claim)
        sqlite3_bind_text(s, 3, claim, -1, SQLITE_STATIC);
    size_t passed = 0;
    bool stopped = false;
    uint64_t last = since;
    int rc = SQLITE_DONE;
    while (!stopped && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        sl_store_event ev;
        if (!row_event(s, &ev)) {
            rc = sl__store_fail(st, SL_STORE_EDATA,
                                "the store %s: saved event %lld is damaged (a column is "
                                "missing, of the wrong type or too long)",
                                sq->path, (long long)sqlite3_column_int64(s, 0));
            sl__sqlite_reset(s);
            return rc;
        }
        last = ev.seq;
        passed++;
        stopped = fn(ud, &ev) != 0;
    }
    if (!stopped && rc != SQLITE_DONE) {
        rc = sl__sqlite_fail(sq, "cannot read the events");
        sl__sqlite_reset(s);
        return rc;
    }
    sl__sqlite_reset(s);
    if (stopped || passed == limit) {
        *next = last;
        return 0;
    }
    /* The end of the log was reached: everything up to its newest event has
     * been examined, even events of other claims. */
    uint64_t newest = 0;
    rc = last_seq(sq, &newest);
    if (rc)
        return rc;
    *next = newest > since ? newest : since;
    return 0;
}

/* Inside the write connection's transaction (sqlite_write.c's commit). */
int sl__sqlite_prune_in(sl_sqlite *sq, int64_t before_ms, uint64_t *deleted, sl_store_batch *b)
{
    *deleted = 0;
    sqlite3_stmt *s = sq->wstmt[SQ_LAST_SEQ];
    if (sqlite3_step(s) != SQLITE_ROW) {
        sl__batch_fail(b, SL_STORE_EIO, "the store %s: cannot read the newest event: %s",
                       sq->path, sqlite3_errmsg(sq->wdb));
        sl__sqlite_reset(s);
        return SL_STORE_EIO;
    }
    uint64_t newest = (uint64_t)sqlite3_column_int64(s, 0);
    sl__sqlite_reset(s);
    if (newest == 0)
        return 0;
    s = sq->wstmt[SQ_PRUNE_FIRST_KEPT];
    sqlite3_bind_int64(s, 1, before_ms);
    int rc = sqlite3_step(s);
    uint64_t keep = newest; /* the newest event is always kept */
    if (rc == SQLITE_ROW) {
        uint64_t first = (uint64_t)sqlite3_column_int64(s, 0);
        if (first < keep)
            keep = first;
    } else if (rc != SQLITE_DONE) {
        sl__batch_fail(b, SL_STORE_EIO, "the store %s: cannot find the events to prune: %s",
                       sq->path, sqlite3_errmsg(sq->wdb));
        sl__sqlite_reset(s);
        return SL_STORE_EIO;
    }
    sl__sqlite_reset(s);
    s = sq->wstmt[SQ_PRUNE];
    sqlite3_bind_int64(s, 1, (int64_t)keep);
    if (sqlite3_step(s) != SQLITE_DONE) {
        sl__batch_fail(b, SL_STORE_EIO, "the store %s: cannot prune the events: %s", sq->path,
                       sqlite3_errmsg(sq->wdb));
        sl__sqlite_reset(s);
        return SL_STORE_EIO;
    }
    *deleted = (uint64_t)sqlite3_changes64(sq->wdb);
    sl__sqlite_reset(s);
    return 0;
}
