/* sqlite_int.h - the SQLite backend's private parts, shared by sqlite.c
 * (open, statements, errors), sqlite_schema.c (schema and migrations),
 * sqlite_write.c (appending batches), sqlite_apply.c (the state brought
 * forward), sqlite_load.c (rebuilding the engine) and sqlite_events.c (the
 * event log).
 * Tests include it to reach the migration runner and the JSON readers. */
#ifndef SL_SQLITE_INT_H
#define SL_SQLITE_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "journal.h"

#include "record.h"
#include "rows_json.h"
#include "store_int.h"

/* Statements prepared once at open and kept (every one a batch or a read
 * of the log runs); load's statements run once per start and are prepared
 * there. */
typedef enum {
    SQ_BEGIN,
    SQ_COMMIT,
    SQ_ROLLBACK,
    /* the state tables, brought forward from the log (sqlite_apply.c) */
    SQ_CLAIM_UPSERT,
    SQ_CLAIM_DELETE,
    SQ_LOCK_UPSERT,
    SQ_LOCK_DELETE,
    SQ_CONFIG_UPSERT,
    SQ_CONFIG_DELETE,
    SQ_META_UPDATE,
    SQ_APPLY_READ,
    SQ_APPLIED_SET,
    SQ_APPLIED_GET,
    SQ_CLAIM_LOG_UPSERT,
    SQ_CLAIM_LOG_PRUNE,
    SQ_CLAIM_LOG_FIND,
    /* the log: one row per batch */
    SQ_LOG_INSERT,
    SQ_LOG_PROBE,
    SQ_LOG_FROM,
    SQ_LOG_LAST,
    SQ_LOG_FIRST,
    SQ_CONFIG_SOURCE,
    SQ_PRUNE_FIRST_KEPT,
    SQ_PRUNE_COUNT,
    SQ_PRUNE,
    SQ_COUNT
} sq_stmt;

typedef struct sl_sqlite {
    sl_store base;
    sqlite3 *db;
    char *path;
    sqlite3_stmt *stmt[SQ_COUNT];
    /* Batches are written through a connection of their own (the same one
     * for an in-memory database, which a second connection would not
     * see), so that a commit may run on another thread while the first
     * connection reads the committed event log (store.h). */
    sqlite3 *wdb;
    sqlite3_stmt *wstmt[SQ_COUNT];
    int wal_frames; /* the WAL's length after the last commit (its hook) */
    /* The log (writer's side: the thread that commits, or load and close
     * when none runs): the id the next record gets, the time_hi of the
     * last one (time_hi never goes down), the last record applied to the
     * state tables and when (CLOCK_MONOTONIC, ms). */
    _Atomic int64_t next_id, applied; /* atomic: sl_store_log_unapplied reads them anywhere */
    int64_t last_time, applied_at_ms;
    int64_t opened_time; /* last_time when opened: read from any thread */
    sl_rec_buf rec;               /* the record being committed */
    char apply_err[SL_STORE_ERR_MAX]; /* why the last apply failed */
    sl_store_batch *apply_batch;  /* a record read back to apply it */
    sl_store_batch *read_batch;   /* a record read back for its events (the loop's) */
    /* A read of a claim's listed seqs (the loop's): the list, and the last
     * record it read in the log file, which the next seqs are looked for
     * after (sqlite_events.c read_at). */
    const sl_store_seqs *read_at_list;
    int64_t read_tail_id;
    bool memory;
    bool full;   /* --durability full: the write connection syncs every commit */
    int lock_fd;    /* the file, flock()ed for the store's life; -1 in memory */
    /* The log file (journal.h), PATH-log/: commits append there, on the
     * loop, and applying moves the records into the log table. NULL in
     * memory, whose commits append to the table. The write connection is
     * then used by the applier's thread and, for a prune, by the loop: wlock
     * keeps them apart. */
    struct sl_journal *journal;
    char *log_dir;
    pthread_mutex_t wlock;
    sl_rec_buf frame;         /* the frame's payload being committed */
    uint64_t committed_seq;   /* seq_hi of the newest record committed (the loop's) */
    /* The records below durable_next may be applied: all appended ones
     * with --durability normal, the synced ones with full (an unsynced
     * record whose sync fails is cut off again, so it must not reach the
     * state first). synced_seq: committed_seq at the last good sync. */
    _Atomic int64_t durable_next;
    uint64_t synced_seq;
    /* The seq_hi and time_hi of the records from keys_base on, noted as
     * they are appended (the loop's; those applied are dropped now and
     * then): a read of the file's unapplied tail finds its first record by
     * binary search here and seeks to it (sl_journal_read_indexed), where
     * it read every record from the first unapplied one. */
    struct sq_key {
        uint64_t seq_hi;
        int64_t time_hi;
    } *keys;
    int64_t keys_base;
    size_t nkeys, capkeys;
    const char *fault; /* SLUICE_TEST_COMMIT_FAULT (tests; sqlite_write.c) */
} sl_sqlite;

/* A journal frame's payload: the log row's columns (seq_hi u64, time_hi
 * i64, events u32, little-endian), then the record. */
#define SQ_FRAME_HEAD 20

/* The schema this build writes, and the migrations that lead to it:
 * sl__sqlite_migrations[v] takes a store from version v to v + 1. */
extern const char *const sl__sqlite_migrations[];
extern const int sl__sqlite_nmigrations;

/* Brings db to version n by running scripts[v..n-1], one transaction each;
 * *version gets the version it ends at. SL_STORE_EVERSION when the store is
 * already past n, SL_STORE_EIO when it is not a sluice store or a script
 * fails (that script's transaction is rolled back). */
int sl__sqlite_migrate(sqlite3 *db, const char *const *scripts, int n, int *version, char *err,
                       size_t errlen);

/* Sets the store's message from the database's last error, prefixed by
 * what was being done, and returns SL_STORE_EIO. */
int sl__sqlite_fail(sl_sqlite *sq, const char *doing);
/* Resets and clears the bindings of a cached statement. */
void sl__sqlite_reset(sqlite3_stmt *s);

/* sqlite_apply.c: brings the state tables forward by the records after
 * sq->applied, at most max of them, in one transaction on the write
 * connection (max 0: all). SL_STORE_EIO or SL_STORE_EDATA with the reason
 * in sq->apply_err when it cannot; nothing is applied then. */
int sl__sqlite_apply(sl_sqlite *sq, size_t max);
/* Records committed and not yet applied; whether to apply them now. */
int64_t sl__sqlite_pending(const sl_sqlite *sq);
bool sl__sqlite_apply_due(const sl_sqlite *sq);
int64_t sl__sqlite_now_ms(void); /* CLOCK_MONOTONIC */
/* How many records one background apply takes at most, and when one is
 * due: that many waiting, or any waiting for that long. */
#define SQ_APPLY_MAX 4096
#define SQ_APPLY_DUE 1024
#define SQ_APPLY_AFTER_MS 1000
/* Registers sl_event_record(seq, time, type, claim, holder, locks, reason),
 * the record of one event, which migration 3 uses. */
int sl__sqlite_functions(sqlite3 *db);

int sl__sqlite_load(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats);
int sl__sqlite_commit(sl_store *st, sl_store_batch *b);
int sl__sqlite_events(sl_store *st, uint64_t since, const char *claim, const sl_store_seqs *at,
                      int64_t from_ms, int64_t to_ms, size_t limit, sl_store_event_fn fn,
                      void *ud, uint64_t *next);
int sl__sqlite_last_seq(sl_store *st, uint64_t *out);
/* Deletes old events in the write connection's open transaction. */
int sl__sqlite_prune_in(sl_sqlite *sq, int64_t before_ms, uint64_t *deleted, sl_store_batch *b);
/* sqlite_write.c: a frame's head into p (SQ_FRAME_HEAD bytes) and back. */
void sl__sqlite_frame_head(unsigned char *p, uint64_t seq_hi, int64_t time_hi, uint32_t events);
/* sqlite_write.c: an inline commit in two steps (store.h sl_store_append). */
int sl__sqlite_append(sl_store *st, sl_store_batch *b);
int sl__sqlite_sync(sl_store *st, sl_store_batch *b);
/* The next record the applier may take (its range's end). */
int64_t sl__sqlite_apply_end(const sl_sqlite *sq);
void sl__sqlite_frame_read(const unsigned char *p, uint64_t *seq_hi, int64_t *time_hi,
                           uint32_t *events);

#endif
