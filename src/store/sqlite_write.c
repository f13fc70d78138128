/* sqlite_write.c - a captured batch (capture.c) committed as one record
 * (record.h) in one new row of the log table: a single append, whatever
 * the batch holds. The state tables (claims, locks, configs, meta) are
 * brought forward from the log later and in bulk (sqlite_apply.c), and the
 * event log is read from the records themselves (sqlite_events.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void sl__sqlite_frame_head(unsigned char *p, uint64_t seq_hi, int64_t time_hi, uint32_t events)
{
    uint64_t v[3] = {seq_hi, (uint64_t)time_hi, events};
    int width[3] = {8, 8, 4};
    for (int k = 0, at = 0; k < 3; at += width[k], k++)
        for (int i = 0; i < width[k]; i++)
            p[at + i] = (unsigned char)(v[k] >> (8 * i));
}

void sl__sqlite_frame_read(const unsigned char *p, uint64_t *seq_hi, int64_t *time_hi,
                           uint32_t *events)
{
    uint64_t v[3] = {0, 0, 0};
    int width[3] = {8, 8, 4};
    for (int k = 0, at = 0; k < 3; at += width[k], k++)
        for (int i = width[k] - 1; i >= 0; i--)
            v[k] = v[k] << 8 | p[at + i];
    *seq_hi = v[0];
    *time_hi = (int64_t)v[1];
    *events = (uint32_t)v[2];
}

/* SLUICE_TEST_COMMIT_FAULT=FILE (tests only, read at open): before each
 * append, FILE saying "fail WHY" fails it as a full disk would (with WHY),
 * and "hold" makes it wait, polling, until FILE says something else or is
 * gone - the way another connection's lock made a commit wait when commits
 * were SQLite transactions. "hold sync" lets appends through and makes each
 * --durability full sync wait instead (its thread creates FILE.held to say
 * so), so that a test can fail the batch appended after a good sync. No
 * file: no fault. */
static void fault_read(const sl_sqlite *sq, char *buf, size_t cap)
{
    buf[0] = 0;
    FILE *f = fopen(sq->fault, "r");
    if (!f)
        return;
    size_t n = fread(buf, 1, cap - 1, f);
    fclose(f);
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
}

static void fault_poll(void)
{
    nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
}

static int injected_fault(sl_sqlite *sq, sl_store_batch *b)
{
    for (;;) {
        char buf[200];
        fault_read(sq, buf, sizeof(buf));
        if (strncmp(buf, "fail ", 5) == 0)
            return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s", sq->path, buf + 5);
        if (strcmp(buf, "hold") != 0)
            return 0;
        fault_poll();
    }
}

static void injected_sync_hold(const sl_sqlite *sq)
{
    char buf[200], held[4200];
    fault_read(sq, buf, sizeof(buf));
    if (strcmp(buf, "hold sync") != 0)
        return;
    snprintf(held, sizeof(held), "%s.held", sq->fault);
    FILE *f = fopen(held, "w");
    if (f)
        fclose(f);
    do {
        fault_poll();
        fault_read(sq, buf, sizeof(buf));
    } while (strcmp(buf, "hold sync") == 0);
}

/* Record id's keys (sl_sqlite.keys), after dropping those of records
 * applied once they are many. */
static void note_keys(sl_sqlite *sq, int64_t id, uint64_t seq_hi, int64_t time_hi)
{
    int64_t gone = sq->applied + 1 - sq->keys_base;
    if (gone > (int64_t)sq->nkeys)
        gone = (int64_t)sq->nkeys;
    if (id < sq->keys_base || id > sq->keys_base + (int64_t)sq->nkeys) {
        sq->keys_base = id; /* not the next (cannot happen): start again */
        sq->nkeys = 0;
    } else if (gone >= SQ_APPLY_DUE) {
        sq->nkeys -= (size_t)gone;
        memmove(sq->keys, sq->keys + gone, sq->nkeys * sizeof(*sq->keys));
        sq->keys_base += gone;
    }
    size_t k = (size_t)(id - sq->keys_base);
    if (k >= sq->capkeys) {
        size_t cap = sq->capkeys ? sq->capkeys * 2 : 1024;
        struct sq_key *p = realloc(sq->keys, cap * sizeof(*p));
        if (!p)
            abort();
        sq->keys = p;
        sq->capkeys = cap;
    }
    sq->keys[k] = (struct sq_key){seq_hi, time_hi};
    sq->nkeys = k + 1;
}

/* The batch as the next frame of the log file: one write. No SQLite, no
 * lock: this runs on the loop while the applier may be using the write
 * connection. */
static int append_frame(sl_sqlite *sq, sl_store_batch *b, int64_t time_hi)
{
    int rc = sq->fault ? injected_fault(sq, b) : 0;
    if (rc)
        return rc;
    sl_rec_encode(b, &sq->rec);
    sl_rec_buf *f = &sq->frame;
    if (f->cap < SQ_FRAME_HEAD + sq->rec.n) {
        unsigned char *p = realloc(f->p, SQ_FRAME_HEAD + sq->rec.n);
        if (!p)
            abort();
        f->p = p;
        f->cap = SQ_FRAME_HEAD + sq->rec.n;
    }
    sl__sqlite_frame_head(f->p, b->seq_hi, time_hi, b->nevents);
    memcpy(f->p + SQ_FRAME_HEAD, sq->rec.p, sq->rec.n);
    f->n = SQ_FRAME_HEAD + sq->rec.n;
    uint64_t id;
    if (sl_journal_append(sq->journal, f->p, f->n, &id) != 0)
        return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s", sq->path,
                              sl_journal_error(sq->journal));
    note_keys(sq, (int64_t)id, b->seq_hi, time_hi);
    sq->next_id = (int64_t)id + 1;
    sq->last_time = time_hi;
    sq->committed_seq = b->seq_hi;
    if (!sq->full)
        sq->durable_next = sq->next_id; /* the page cache is durable enough */
    /* Segments the applier is done with go; cheap when none is. */
    (void)sl_journal_drop_through(sq->journal, (uint64_t)sq->applied);
    return 0;
}

/* --durability full: one fdatasync for every frame appended since the last.
 * A failed one cuts them off again (journal.h): the ids go back, and the
 * batch is appended anew at the retry. */
int sl__sqlite_sync(sl_store *st, sl_store_batch *b)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    if (!sq->full || !sq->journal)
        return 0;
    if (sq->fault)
        injected_sync_hold(sq);
    if (sl_journal_sync(sq->journal) != 0) {
        sq->next_id = (int64_t)sl_journal_next_id(sq->journal);
        sq->committed_seq = sq->synced_seq;
        return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s", sq->path,
                              sl_journal_error(sq->journal));
    }
    sq->synced_seq = sq->committed_seq;
    sq->durable_next = sq->next_id;
    return 0;
}

/* A prune asked with the batch: on the write connection, which the applier
 * may be using at this moment (wlock); prunes are rare. */
static int prune_now(sl_sqlite *sq, sl_store_batch *b)
{
    pthread_mutex_lock(&sq->wlock);
    int rc = run_plain(sq, SQ_BEGIN, b, "cannot start a transaction");
    if (rc == 0)
        rc = sl__sqlite_prune_in(sq, b->prune_before, &b->pruned, b);
    if (rc == 0)
        rc = run_plain(sq, SQ_COMMIT, b, "cannot commit a prune");
    if (rc && !sqlite3_get_autocommit(sq->wdb)) {
        sqlite3_step(sq->wstmt[SQ_ROLLBACK]);
        sqlite3_reset(sq->wstmt[SQ_ROLLBACK]);
    }
    pthread_mutex_unlock(&sq->wlock);
    return rc;
}

int sl__sqlite_append(sl_store *st, sl_store_batch *b)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    if (!sq->journal)
        return sl__sqlite_commit(st, b); /* in memory: not inline */
    if (sl_store_batch_empty(b))
        return 0;
    int64_t time_hi = b->time_hi > sq->last_time ? b->time_hi : sq->last_time;
    if (!b->nops)
        return prune_now(sq, b);
    int rc = append_frame(sq, b, time_hi);
    /* The frame is committed whatever the prune does (committing the batch
     * again would append it twice): a prune that fails is asked again with
     * a later batch. */
    if (rc == 0 && b->prune)
        (void)prune_now(sq, b);
    return rc;
}

int sl__sqlite_commit(sl_store *st, sl_store_batch *b)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    if (sl_store_batch_empty(b))
        return 0;
    if (sq->journal) {
        int rc = sl__sqlite_append(st, b);
        return rc ? rc : sl__sqlite_sync(st, b);
    }
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
