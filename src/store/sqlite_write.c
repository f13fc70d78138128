/* sqlite_write.c - a captured batch (capture.c) committed as one record
 * (record.h) in one new row of the log table: a single append, whatever
 * the batch holds. The state tables (claims, locks, configs, meta) are
 * brought forward from the log later and in bulk (sqlite_apply.c), and the
 * event log is read from the records themselves (sqlite_events.c). */
#include <string.h>

#include "sqlite_int.h"

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
