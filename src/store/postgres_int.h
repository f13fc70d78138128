/* postgres_int.h - the PostgreSQL backend's private parts, shared by
 * postgres.c (open, schema, statements, errors), postgres_write.c (appending
 * batches), postgres_apply.c (the state brought forward), postgres_events.c
 * (the event log) and postgres_load.c (rebuilding the engine).
 *
 * The same model as the SQLite backend (docs/store.md): a batch is one
 * record appended to `log`; the state tables are brought forward from it
 * in bulk; the event log is read from the records. Two connections: the
 * writer's (commits and applies, on the server's writer thread) and the
 * reader's (the event log and configuration sources, on the event loop):
 * a libpq connection is used by one thread at a time. */
#ifndef SL_POSTGRES_INT_H
#define SL_POSTGRES_INT_H

#include <libpq-fe.h>

#include "log_read.h"
#include "record.h"
#include "rows_json.h"
#include "store_int.h"

/* Prepared statements, by name "s<n>" on the connection that runs them. */
typedef enum {
    PQ_CLAIM_UPSERT,
    PQ_CLAIM_DELETE,
    PQ_LOCK_UPSERT,
    PQ_LOCK_DELETE,
    PQ_CONFIG_UPSERT,
    PQ_CONFIG_DELETE,
    PQ_META_UPDATE,
    PQ_CLAIM_LOG_ADD,
    PQ_APPLY_READ,
    PQ_APPLIED_SET,
    PQ_CLAIM_LOG_PRUNE,
    PQ_LOG_INSERT,
    PQ_LOG_START_SEQ,
    PQ_LOG_START_TIME,
    PQ_LOG_PAGE,
    PQ_LOG_AT,
    PQ_LOG_LAST,
    PQ_CLAIM_LOG_FIND,
    PQ_APPLIED_GET,
    PQ_CONFIG_SOURCE,
    PQ_PRUNE_FIRST_KEPT,
    PQ_PRUNE_COUNT,
    PQ_PRUNE,
    PQ_FENCE,
    PQ_COUNT
} pq_stmt;

/* How many records one background apply takes at most, and when one is
 * due: that many waiting, or any waiting for that long (as SQLite's). */
#define PQ_APPLY_MAX 4096
#define PQ_APPLY_DUE 1024
#define PQ_APPLY_AFTER_MS 1000

typedef struct sl_pg {
    sl_store base;
    PGconn *rc, *wc;     /* the reader's and the writer's connections */
    char *label;         /* the URL without its password, for messages */
    char *conninfo;      /* the URL as given: the elector's sessions connect with it */
    _Atomic int64_t next_id, applied;
    _Atomic int64_t epoch; /* every write is fenced with it (postgres_leader.c) */
    int64_t txn_timeout_ms; /* shared mode: the writer's idle_in_transaction_session_timeout */
    int64_t last_time, opened_time, applied_at_ms;
    sl_rec_buf rec;
    sl_store_batch *apply_batch, *read_batch;
    char apply_err[SL_STORE_ERR_MAX];
} sl_pg;

/* The schema, as migration scripts: sl__pg_migrations[v] takes a database
 * from version v to v + 1. */
extern const char *const sl__pg_migrations[];
extern const int sl__pg_nmigrations;

/* Runs a prepared statement with text parameters (NULL: SQL NULL); the
 * result, or NULL with the message in err when it failed. */
PGresult *sl__pg_exec(PGconn *c, pq_stmt which, int n, const char *const *values,
                      const int *lengths, const int *formats, int result_format, char *err,
                      size_t cap);
/* A simple statement (BEGIN, COMMIT); 0 or -1 with the message in err. */
int sl__pg_simple(PGconn *c, const char *sql, char *err, size_t cap);
int64_t sl__pg_now_ms(void);
/* A new connection with sluiced's settings; NULL and the message in err. */
PGconn *sl__pg_connect(const char *conninfo, char *err, size_t cap);
/* One number from a one-row query; 1 found, 0 no row or NULL, -1 error. */
int sl__pg_query_int(PGconn *c, const char *sql, int64_t *out, char *err, size_t cap);
/* The fence's SQLSTATE (22012, division by zero: PQ_FENCE found another
 * epoch) or a log row not written (0 rows) mean SL_STORE_EFENCED. */
bool sl__pg_fenced(const PGresult *r);
/* Reads where the log ends and how far it is applied (at open, and when
 * this server takes the lead: another leader wrote meanwhile). */
int sl__pg_read_log_ends(sl_pg *pg, char *err, size_t cap);
/* Makes a broken connection again (statements, the writer's settings); 0
 * when usable, else -1 with the message in err. */
int sl__pg_ensure(sl_pg *pg, PGconn *c, char *err, size_t cap);
/* The same, also when the connection looks fine but its server went away
 * (a round trip): for a new leader, before it loads. */
int sl__pg_ensure_live(sl_pg *pg, PGconn *c, char *err, size_t cap);
int sl__pg_reconnect(sl_pg *pg, PGconn *c, char *err, size_t cap);
/* Whether a and b (two sessions of this server) go through a transaction
 * pooler: -1 with sl__pg_pooler_message (or a failure) in err. */
int sl__pg_pooled(PGconn *a, PGconn *b, char *err, size_t cap);
extern const char sl__pg_pooler_message[];
/* The fence alone, on the writer's connection: 0 while the leader row's
 * epoch is pg->epoch, else -1 with why in err. */
int sl__pg_check_epoch(sl_pg *pg, char *err, size_t cap);
/* The writer's session settings (synchronous_commit; in shared mode a
 * transaction left open by a leader that froze ends after T, releasing
 * the leader row it locked). */
int sl__pg_writer_settings(sl_pg *pg, char *err, size_t cap);

int sl__pg_commit(sl_store *st, sl_store_batch *b);
int sl__pg_apply(sl_pg *pg, size_t max);
int64_t sl__pg_pending(const sl_pg *pg);
bool sl__pg_apply_due(const sl_pg *pg);
int sl__pg_events(sl_store *st, uint64_t since, const char *claim, const sl_store_seqs *at,
                  int64_t from_ms, int64_t to_ms, size_t limit, sl_store_event_fn fn, void *ud,
                  uint64_t *next);
int sl__pg_last_seq(sl_store *st, uint64_t *out);
int sl__pg_prune_in(sl_pg *pg, int64_t before_ms, uint64_t *deleted, sl_store_batch *b);
int sl__pg_load(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats);
int sl__pg_elector_start(sl_store *st, const sl_elector_opts *o, sl_elector **out, char *err,
                         size_t cap);

#endif
