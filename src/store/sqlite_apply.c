/* sqlite_apply.c - the state tables brought forward from the log.
 *
 * A commit appends one record (sqlite_write.c); the rows it describes are
 * written here, later and many records at a time: the claims, locks,
 * configs and meta tables are a snapshot of the engine as of the record
 * meta.applied names, and the log after it is what happened since. The
 * server applies in the background (sl_store_checkpoint, on the writer
 * thread) once SQ_APPLY_DUE records wait or a second has passed, a clean
 * stop applies everything, and a start applies what a crash left before
 * it loads the tables. Applying many records in one transaction writes
 * each page they touch once, where a row per change and a transaction per
 * batch wrote the same pages again for every batch.
 *
 * Records are applied in id order, each exactly once: meta.applied moves
 * in the transaction that writes their rows. */
#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "sqlite_int.h"

/* The statement that writes what an operation of a record says; events
 * have no table of their own (the log is the event log). */
static int stmt_of(uint32_t op, sq_stmt *out)
{
    switch (op) {
    case SL_REC_CLAIM_UPSERT: *out = SQ_CLAIM_UPSERT; return 0;
    case SL_REC_CLAIM_DELETE: *out = SQ_CLAIM_DELETE; return 0;
    case SL_REC_LOCK_UPSERT: *out = SQ_LOCK_UPSERT; return 0;
    case SL_REC_LOCK_DELETE: *out = SQ_LOCK_DELETE; return 0;
    case SL_REC_CONFIG_UPSERT: *out = SQ_CONFIG_UPSERT; return 0;
    case SL_REC_CONFIG_DELETE: *out = SQ_CONFIG_DELETE; return 0;
    case SL_REC_COUNTERS: *out = SQ_META_UPDATE; return 0;
    default: return -1;
    }
}

static const char *doing(sq_stmt stmt)
{
    switch (stmt) {
    case SQ_CLAIM_UPSERT: return "cannot save a claim";
    case SQ_CLAIM_DELETE: return "cannot delete a purged claim";
    case SQ_LOCK_UPSERT: return "cannot save a lock's token";
    case SQ_LOCK_DELETE: return "cannot delete an evicted lock";
    case SQ_CONFIG_UPSERT: return "cannot save a configuration";
    case SQ_CONFIG_DELETE: return "cannot delete a configuration";
    case SQ_META_UPDATE: return "cannot save the counters";
    default: return "cannot apply the log";
    }
}

int64_t sl__sqlite_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Applying runs on the writer thread while the loop uses the store's own
 * message: it keeps one of its own (sl_store_checkpoint_error). */
static int afail(sl_sqlite *sq, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int afail(sl_sqlite *sq, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl__store_vfail(sq->apply_err, sizeof(sq->apply_err), fmt, ap);
    va_end(ap);
    return code;
}

static int wfail(sl_sqlite *sq, const char *what)
{
    return afail(sq, SL_STORE_EIO, "the store %s: %s: %s", sq->path, what,
                          sqlite3_errmsg(sq->wdb));
}

/* A claim's first event (claim.queued, once per claim): its events start
 * in this record (claim_log). */
static int note_claim(sl_sqlite *sq, const sl_store_batch *b, const sb_op *op, int64_t id)
{
    static const char queued[] = "claim.queued";
    if (op->nparams < 4 || b->params[op->first + 3].type != SB_TEXT)
        return 0; /* a semaphore's event */
    const sb_param *type = &b->params[op->first + 2];
    if (type->type != SB_TEXT || type->len != sizeof(queued) - 1 ||
        memcmp(b->text + type->off, queued, type->len) != 0)
        return 0;
    const sb_param *claim = &b->params[op->first + 3];
    sqlite3_stmt *s = sq->wstmt[SQ_CLAIM_LOG_UPSERT];
    sqlite3_bind_text(s, 1, b->text + claim->off, (int)claim->len, SQLITE_STATIC);
    sqlite3_bind_int64(s, 2, id);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, "cannot note a claim's events");
    sl__sqlite_reset(s);
    return rc;
}

static int run_op(sl_sqlite *sq, const sl_store_batch *b, const sb_op *op, int64_t id)
{
    sq_stmt which;
    if (op->stmt == SL_REC_EVENT)
        return note_claim(sq, b, op, id);
    if (stmt_of(op->stmt, &which) != 0)
        return 0;
    sqlite3_stmt *s = sq->wstmt[which];
    /* An older build's record lacks the parameters appended since
     * (record.h): left unbound, they are NULL. */
    for (uint32_t i = 0; i < op->nparams; i++) {
        const sb_param *p = &b->params[op->first + i];
        if (p->type == SB_INT)
            sqlite3_bind_int64(s, (int)i + 1, p->i);
        else if (p->type == SB_TEXT)
            sqlite3_bind_text(s, (int)i + 1, b->text + p->off, (int)p->len, SQLITE_STATIC);
        else
            sqlite3_bind_null(s, (int)i + 1);
    }
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, doing(which));
    sl__sqlite_reset(s);
    if (rc == 0 && which == SQ_META_UPDATE && sqlite3_changes(sq->wdb) != 1)
        rc = afail(sq, SL_STORE_EIO,
                            "the store %s: its counters row is missing: restore the file "
                            "from a backup",
                            sq->path);
    return rc;
}

static int apply_record(sl_sqlite *sq, int64_t id, const void *p, size_t n)
{
    sl_store_batch *b = sq->apply_batch;
    if (sl_rec_decode(p, n, b) != 0)
        return afail(sq, SL_STORE_EDATA, "the store %s: log record %lld: %s",
                              sq->path, (long long)id, sl_store_batch_error(b));
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < b->nops; i++)
        rc = run_op(sq, b, &b->ops[i], id);
    return rc;
}

/* Reads and applies the records after sq->applied, at most max (or fewer
 * when yield and the store's yield function says a commit waits); *last
 * gets the id of the last one applied. Inside the caller's transaction. */
static int apply_rows(sl_sqlite *sq, size_t max, bool yield, int64_t *last)
{
    sqlite3_stmt *s = sq->wstmt[SQ_APPLY_READ];
    sqlite3_bind_int64(s, 1, sq->applied);
    sqlite3_bind_int64(s, 2, max ? (int64_t)max : -1);
    int rc = 0, step;
    while (rc == 0 && (step = sqlite3_step(s)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(s, 0);
        const void *p = sqlite3_column_blob(s, 1);
        size_t n = (size_t)sqlite3_column_bytes(s, 1);
        rc = apply_record(sq, id, p, n);
        if (rc == 0)
            *last = id;
        if (rc == 0 && yield && sq->base.yield && sq->base.yield(sq->base.yield_arg)) {
            step = SQLITE_DONE; /* a commit waits: what is applied is committed now */
            break;
        }
    }
    if (rc == 0 && step != SQLITE_DONE)
        rc = wfail(sq, "cannot read the log");
    sl__sqlite_reset(s);
    return rc;
}

/* The same from the log file: each frame becomes a row of the log table
 * (the event log reads it there from now on) and is applied. */
typedef struct frames {
    sl_sqlite *sq;
    bool yield;
    int64_t *last;
    int rc;
} frames;

static int insert_row(sl_sqlite *sq, int64_t id, const unsigned char *p, size_t n)
{
    uint64_t seq_hi;
    int64_t time_hi;
    uint32_t events;
    sl__sqlite_frame_read(p, &seq_hi, &time_hi, &events);
    sqlite3_stmt *s = sq->wstmt[SQ_LOG_INSERT];
    sqlite3_bind_int64(s, 1, id);
    sqlite3_bind_int64(s, 2, (int64_t)seq_hi);
    sqlite3_bind_int64(s, 3, time_hi);
    sqlite3_bind_int64(s, 4, events);
    sqlite3_bind_blob(s, 5, p + SQ_FRAME_HEAD, (int)(n - SQ_FRAME_HEAD), SQLITE_STATIC);
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, "cannot move a record into the log");
    sl__sqlite_reset(s);
    return rc;
}

static int apply_frame(void *ud, uint64_t id, const void *p, size_t n)
{
    frames *f = ud;
    sl_sqlite *sq = f->sq;
    if (n < SQ_FRAME_HEAD || n - SQ_FRAME_HEAD > INT32_MAX)
        f->rc = afail(sq, SL_STORE_EDATA, "the store %s: log record %llu is too short", sq->path,
                      (unsigned long long)id);
    if (f->rc == 0)
        f->rc = insert_row(sq, (int64_t)id, p, n);
    if (f->rc == 0)
        f->rc = apply_record(sq, (int64_t)id, (const unsigned char *)p + SQ_FRAME_HEAD,
                             n - SQ_FRAME_HEAD);
    if (f->rc)
        return 1;
    *f->last = (int64_t)id;
    return f->yield && sq->base.yield && sq->base.yield(sq->base.yield_arg);
}

static int apply_frames(sl_sqlite *sq, size_t max, bool yield, int64_t *last)
{
    uint64_t from = (uint64_t)sq->applied + 1, to = (uint64_t)sl__sqlite_apply_end(sq);
    if (max && to - from > max)
        to = from + max;
    frames f = {.sq = sq, .yield = yield, .last = last};
    char err[SL_STORE_ERR_MAX];
    int rc = sl_journal_read_indexed(sq->journal, from, to, apply_frame, &f, err, sizeof(err));
    if (rc < 0)
        return afail(sq, rc, "the store %s: %s", sq->path, err);
    return f.rc;
}

static int step_plain(sl_sqlite *sq, sq_stmt which, const char *what)
{
    sqlite3_stmt *s = sq->wstmt[which];
    int rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, what);
    sl__sqlite_reset(s);
    return rc;
}

static int apply_txn(sl_sqlite *sq, size_t max, bool yield);

int sl__sqlite_apply(sl_sqlite *sq, size_t max)
{
    /* max 0 is everything (a start, a stop): nothing to yield to then. */
    bool yield = max > 0;
    if (sl__sqlite_pending(sq) <= 0)
        return 0;
    if (!sq->apply_batch && !(sq->apply_batch = sl_store_batch_new()))
        return afail(sq, SL_STORE_EIO, "out of memory for a log record");
    /* With --durability full every commit of the log table is synced, and
     * an apply needs no sync of its own: the records are safe in the log,
     * and an apply that power loss takes back is done again at the next
     * start. The next synced commit syncs the WAL it wrote anyway. Records
     * moved out of the log file are another matter: their segments are
     * deleted once applied, so that apply is synced whatever the
     * durability (set at open). */
    if (sq->full && !sq->journal)
        sqlite3_exec(sq->wdb, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL);
    pthread_mutex_lock(&sq->wlock);
    int rc = step_plain(sq, SQ_BEGIN, "cannot start applying the log");
    if (rc == 0)
        rc = apply_txn(sq, max, yield);
    pthread_mutex_unlock(&sq->wlock);
    if (sq->full && !sq->journal)
        sqlite3_exec(sq->wdb, "PRAGMA synchronous=FULL", NULL, NULL, NULL);
    return rc;
}

/* The apply's transaction, begun; committed or rolled back here. */
static int apply_txn(sl_sqlite *sq, size_t max, bool yield)
{
    int rc = 0;
    int64_t last = sq->applied;
    rc = sq->journal ? apply_frames(sq, max, yield, &last) : apply_rows(sq, max, yield, &last);
    if (rc == 0)
        rc = step_plain(sq, SQ_CLAIM_LOG_PRUNE, "cannot forget pruned claims' records");
    if (rc == 0 && last != sq->applied) {
        sqlite3_stmt *s = sq->wstmt[SQ_APPLIED_SET];
        sqlite3_bind_int64(s, 1, last);
        rc = sqlite3_step(s) == SQLITE_DONE ? 0 : wfail(sq, "cannot note the log applied");
        sl__sqlite_reset(s);
    }
    if (rc == 0)
        rc = step_plain(sq, SQ_COMMIT, "cannot commit the log applied");
    if (rc) {
        if (!sqlite3_get_autocommit(sq->wdb))
            step_plain(sq, SQ_ROLLBACK, "cannot roll back");
        return rc;
    }
    sq->applied = last;
    sq->applied_at_ms = sl__sqlite_now_ms();
    return 0;
}

int64_t sl__sqlite_apply_end(const sl_sqlite *sq)
{
    return sq->journal ? sq->durable_next : sq->next_id;
}

int64_t sl__sqlite_pending(const sl_sqlite *sq)
{
    return sl__sqlite_apply_end(sq) - 1 - sq->applied;
}

bool sl__sqlite_apply_due(const sl_sqlite *sq)
{
    int64_t pending = sl__sqlite_pending(sq);
    return pending >= SQ_APPLY_DUE ||
           (pending > 0 && sl__sqlite_now_ms() - sq->applied_at_ms >= SQ_APPLY_AFTER_MS);
}

/* ---- sl_event_record(), for migration 3 ----------------------------------- */

static void event_record(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    sl_store_batch *b = sl_store_batch_new();
    sl_rec_buf out = {0};
    if (!b) {
        sqlite3_result_error_nomem(ctx);
        return;
    }
    sl__batch_op(b, SL_REC_EVENT);
    for (int i = 0; i < argc; i++) {
        if (sqlite3_value_type(argv[i]) == SQLITE_INTEGER)
            sl__batch_int(b, sqlite3_value_int64(argv[i]));
        else if (sqlite3_value_type(argv[i]) == SQLITE_NULL)
            sl__batch_text(b, NULL, 0);
        else
            sl__batch_text(b, (const char *)sqlite3_value_text(argv[i]),
                           (size_t)sqlite3_value_bytes(argv[i]));
    }
    sl_rec_encode(b, &out);
    sqlite3_result_blob(ctx, out.p, (int)out.n, SQLITE_TRANSIENT);
    sl_rec_buf_free(&out);
    sl_store_batch_free(b);
}

int sl__sqlite_functions(sqlite3 *db)
{
    return sqlite3_create_function(db, "sl_event_record", 7, SQLITE_UTF8 | SQLITE_DETERMINISTIC,
                                   NULL, event_record, NULL, NULL);
}
