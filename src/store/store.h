/* store.h - where the engine's state lives between runs.
 *
 * The server hands the store every batch of engine changes (one turn of the
 * event loop) and the store writes it in one transaction; no response that
 * reports a change is sent before that transaction commits. On start the
 * store rebuilds the engine from what it saved: configurations, lock tokens,
 * claims (held, revoking, pending and recently ended), counters, so that
 * tokens, queue order and the event sequence continue. It also keeps the
 * event log, which GET /v1/events reads.
 *
 * A store is opened from a URL: "sqlite:PATH" (the embedded default; WAL;
 * "sqlite::memory:" for tests). Its functions return 0 or a negative
 * SL_STORE_E* code; on error a message is left in sl_store_error(). Nothing
 * here is thread-safe: the server calls the store from its one event loop
 * (the SQLite connection is opened without SQLite's own mutexes). One
 * process at a time may use a store file: nothing stops a second one, and
 * two engines writing one file would overwrite each other's state. */
#ifndef SL_STORE_H
#define SL_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"

enum {
    SL_STORE_OK = 0,
    SL_STORE_EIO = -100,      /* the database failed (disk, locking, corruption) */
    SL_STORE_EVERSION = -101, /* written by a newer sluice: refuse to touch it */
    SL_STORE_EURL = -102,     /* the store URL is not understood */
    SL_STORE_EDATA = -103,    /* a saved row could not be restored */
    SL_STORE_EFENCED = -104,  /* shared mode: another server leads now (a newer epoch) */
};

typedef struct sl_store sl_store;

typedef enum {
    /* SQLite: each batch written to the log file (PATH-log/), not synced:
     * survives a killed process. */
    SL_DURABILITY_NORMAL,
    /* And the log file synced (fdatasync, one for every batch appended
     * since the last: sl_store_sync) before the answers leave: survives
     * power loss too. PostgreSQL waits for its own commit either way. */
    SL_DURABILITY_FULL,
} sl_durability;

typedef struct sl_store_opts {
    const char *url; /* "sqlite:PATH" */
    sl_durability durability;
} sl_store_opts;

/* Opens (creating if needed) and migrates the store to the current schema.
 * On failure *out is NULL and err holds a sentence saying what and how to
 * mend: SL_STORE_EURL, SL_STORE_EVERSION (a newer sluice wrote it; the file
 * is left untouched) or SL_STORE_EIO (a missing directory, a file that is
 * not a sluice store, a failed migration: rolled back). */
int sl_store_open(const sl_store_opts *opts, sl_store **out, char *err, size_t errlen);
/* The store URL as it may be shown (logs, /healthz): a password, in a URI's
 * user info or a password= pair, is cut out. Writes at most cap bytes. */
void sl_store_url_label(const char *url, char *out, size_t cap);
void sl_store_close(sl_store *st);
/* The last error's message; valid until the next store call. */
const char *sl_store_error(const sl_store *st);
/* The schema version the store is at (and the one this build writes). */
int sl_store_schema_version(const sl_store *st);
int sl_store_current_schema(void);

typedef struct sl_store_load_stats {
    size_t configs, locks, claims, pending, held, ended; /* held counts revoking too */
    int64_t elapsed_ms;                                  /* filled by the caller if it wants */
    /* Bytes of a torn write the store's log file ended in, cut off when it
     * was opened (a crash during an append). 0: none, or no log file. */
    uint64_t torn_bytes;
} sl_store_load_stats;

/* Rebuilds an empty engine from the store (sl_engine_restore_*), then calls
 * sl_engine_restore_done(eng, now). The engine's batch holds what
 * restore_done changed (expired leases, say): write it as usual. A saved
 * row that cannot be restored fails with SL_STORE_EDATA naming it; the
 * engine is then partly rebuilt and must be freed. Tokens continue exactly,
 * except on a lock that was never granted since it was made: it has no
 * saved token and starts again from the token floor (a jump forward). */
int sl_store_load(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats);

/* Where a semaphore configuration came from: the configuration file, or
 * the API. Configurations written by sl_store_write take the store's
 * current source (sl_store_set_source; SL_SOURCE_API by default). */
typedef enum { SL_SOURCE_API, SL_SOURCE_FILE } sl_config_source;
void sl_store_set_source(sl_store *st, sl_config_source src);
/* The saved source of a configuration; SL_STORE_OK and *found false when
 * the store has none by that name. It reads the state as last applied from
 * the log: exact right after sl_store_load (or sl_store_apply), which is
 * where a server starting asks. */
int sl_store_config_source(sl_store *st, const char *name, bool *found, sl_config_source *out);

/* Writes one batch: every changed claim, purged claims, moved tokens,
 * evicted locks, configurations set (with the current source) or deleted,
 * the events and the counters, as one record appended to the store's log
 * (record.h): a frame of the log file (SQLite, docs/store.md), a row of
 * the log table in one transaction (PostgreSQL, an in-memory SQLite).
 * Deletions go first: a purged id may
 * belong to a new claim of the same batch, an evicted key to a lock made
 * again. The state (claims, locks, configurations, counters) is brought
 * forward from the log later, in bulk (sl_store_checkpoint), and whatever
 * was not is applied at the next sl_store_load. Does not clear the
 * engine's batch: the caller does, after this returns 0. On error
 * (SL_STORE_EIO) nothing of the batch is written, and the same batch may
 * be written again. An empty batch writes nothing. */
int sl_store_write(sl_store *st, sl_engine *eng, const sl_changes *ch);

/* ---- batches written while the engine goes on -----------------------------
 *
 * sl_store_write captures a batch from the engine and writes it. A server
 * that keeps serving while a batch is written splits the two:
 * sl_store_capture copies everything the batch will write out of the engine
 * (so the engine's batch can be cleared and the engine changed at once), and
 * sl_store_commit writes a captured batch as one record (sl_store_write).
 * When
 * sl_store_commit_overlaps says so, sl_store_commit may run on another
 * thread, at the same time as any other store call except another commit
 * and sl_store_prune_events: it has a database connection of its own, and
 * the other calls read only what was committed. Otherwise (an in-memory
 * store) call it where the other calls are made. */
typedef struct sl_store_batch sl_store_batch;

sl_store_batch *sl_store_batch_new(void); /* NULL when out of memory */
void sl_store_batch_free(sl_store_batch *b);
/* Nothing to write: no rows and no prune. */
bool sl_store_batch_empty(const sl_store_batch *b);
/* Rows written or deleted (statements run) by the batch. */
size_t sl_store_batch_rows(const sl_store_batch *b);
/* Also delete the events older than before_ms, as sl_store_prune_events
 * does, in the batch's transaction; sl_store_batch_pruned says how many
 * went once it committed. */
void sl_store_batch_prune(sl_store_batch *b, int64_t before_ms);
uint64_t sl_store_batch_pruned(const sl_store_batch *b);
/* Why the last sl_store_commit of b failed (sl_store_error is not used:
 * the commit may have run on another thread). */
const char *sl_store_batch_error(const sl_store_batch *b);
/* Empties b and fills it with ch's rows, read from eng now. SL_STORE_EIO
 * when a row cannot be written (too large), with the reason in b's error. */
int sl_store_capture(sl_store *st, sl_engine *eng, const sl_changes *ch, sl_store_batch *b);
/* Writes b as one record; on error nothing of it is written and the
 * same b may be committed again. b is not changed except for its error. */
int sl_store_commit(sl_store *st, sl_store_batch *b);
bool sl_store_commit_overlaps(const sl_store *st);
/* A commit is an append to a file (the SQLite store's log file,
 * docs/store.md): cheap enough to make on the loop whatever the batch, and
 * it may run while a checkpoint runs on another thread. */
bool sl_store_commit_inline(const sl_store *st);
/* An inline commit in its two steps, so that the sync (--durability full:
 * fdatasync) can run off the loop: sl_store_append writes the batch (on
 * the loop); sl_store_sync makes everything appended so far survive power
 * loss (nothing with normal), on any thread while nothing is appended, a
 * checkpoint running or not (it touches only the log file). The
 * batch is committed once both succeeded; after a failed sync the batch
 * is appended again (the records since the last good sync are cut off).
 * sl_store_commit is the two in a row. */
int sl_store_append(sl_store *st, sl_store_batch *b);
int sl_store_sync(sl_store *st, sl_store_batch *b);
/* Work a commit leaves for later is due: the log's records applied to the
 * state (every SQLite checkpoint of its own: 1024 records waiting, or any
 * for a second), the write-ahead log copied into the database. The store
 * does neither by itself during commits: ask after a commit, in the thread
 * that committed, and run the checkpoint where commits run, never during
 * one. sl_store_write checkpoints itself. */
bool sl_store_checkpoint_due(const sl_store *st);
int sl_store_checkpoint(sl_store *st);
/* A checkpoint that applies many records asks fn(arg) between them and
 * stops early, keeping what it applied, when fn says that other work waits
 * for the connection (a commit). fn runs on the checkpoint's thread and
 * must be cheap. NULL: never stops early. */
void sl_store_set_yield(sl_store *st, bool (*fn)(void *arg), void *arg);
/* Why the last sl_store_checkpoint failed: read it in the thread that ran
 * it (the store's own message belongs to the loop's thread). */
const char *sl_store_checkpoint_error(const sl_store *st);

/* One event as stored, the fields of docs/api.md's event. Strings are valid
 * during the callback only. */
typedef struct sl_store_event {
    uint64_t seq;
    int64_t time_ms;
    const char *type;
    const char *claim;  /* NULL for semaphore events */
    const char *holder; /* NULL for semaphore events */
    const char *locks;  /* a JSON array of lock keys: ["mtx/a","sem/b"] */
    const char *reason; /* words, may be empty */
    /* Internal, for replaying lock occupancy (never in the API's event): the
     * slots the claim takes on each of locks, "1,2" in the same order, and
     * whether it held its locks just before this event (1) or not (0). NULL
     * and -1 for semaphore events and in records written before they were
     * recorded. */
    const char *slots;
    int held;
    /* Who asked for it (sl_event.actor); NULL in records written before
     * events recorded it. */
    const char *actor;
} sl_store_event;

/* Return 0 to take the event, SL_STORE_EVENT_SKIP to pass it over (a
 * reader that may not see it: it counts as examined, so `next` moves past
 * it, but not toward the limit), anything else to stop early. */
typedef int (*sl_store_event_fn)(void *ud, const sl_store_event *ev);
#define SL_STORE_EVENT_SKIP (-1)

/* Calls fn for the events with seq > since (and of that claim, when claim
 * is not NULL), oldest first, until it took limit of them or examined the scan budget. *next is
 * docs/api.md's `next`: the last seq examined when the limit or the budget
 * was reached or fn stopped, else the last seq in the log, or since when that
 * is higher (an empty log, a since past the end). fn must not call
 * sl_store_events itself. SL_STORE_EDATA for a damaged row. */
int sl_store_events(sl_store *st, uint64_t since, const char *claim, size_t limit,
                    sl_store_event_fn fn, void *ud, uint64_t *next);
/* The same for one claim whose events all lie between from_ms and to_ms
 * (its arrival and its end, or INT64_MAX while it lives): the read starts
 * at the first batch that may hold one and stops after the last. from_ms
 * INT64_MIN: a claim the caller does not know (purged): the store finds
 * its batches itself, without reading the whole log. sl_store_events with
 * a claim is the latter. With claim NULL: the events of every claim
 * between from_ms and to_ms (a run's, which fn picks). */
int sl_store_claim_events(sl_store *st, uint64_t since, const char *claim, int64_t from_ms,
                          int64_t to_ms, size_t limit, sl_store_event_fn fn, void *ud,
                          uint64_t *next);
/* Where one claim's events are: their seqs, ascending, as the engine noted
 * them (sl_claim_event_seqs). */
typedef struct sl_store_seqs {
    const uint64_t *seq;
    size_t n;
    bool more; /* events of the claim after seq[n - 1] may be unlisted */
} sl_store_seqs;
/* sl_store_claim_events for a claim whose event seqs the caller knows:
 * every event of the claim after since up to at->seq[at->n - 1] is
 * listed. The read goes to the records holding them (a search by seq for
 * each, where the records between them hold none of the claim's events)
 * rather than through the log between; with at->more, it walks on from the
 * last listed one as sl_store_claim_events does. The budget counts the
 * events of the records it decodes. */
int sl_store_claim_events_at(sl_store *st, uint64_t since, const char *claim,
                             const sl_store_seqs *at, int64_t from_ms, int64_t to_ms,
                             size_t limit, sl_store_event_fn fn, void *ud, uint64_t *next);
/* The most events after `since` one read above examines, whether it takes
 * them, fn skips them or they are another claim's (0, the default: no
 * bound). A read that reaches it stops there: a partial page, whose *next
 * is the last seq examined, so that the next read goes on from there.
 * It bounds how long one read holds its caller (docs/store.md). */
void sl_store_set_scan_budget(sl_store *st, size_t events);
/* Whether the last read stopped at the budget rather than at its limit,
 * fn's stop or the end of what it reads: more may follow its *next. */
bool sl_store_read_partial(const sl_store *st);
/* Applies every record of the log not yet in the state (a clean stop does
 * it too). For tests and tools that read the state's tables. */
int sl_store_apply(sl_store *st);
/* The newest event time in the log when the store was opened (0 when
 * none): a server's clock floor, so that event times never go down across
 * a restart either (sl_store_claim_events relies on it). */
int64_t sl_store_last_time(const sl_store *st);
/* Batches committed to the log and not yet applied to the state: how far
 * the background apply lags (a start applies them). Any thread may ask. */
uint64_t sl_store_log_unapplied(const sl_store *st);
/* The highest seq stored (0 when none). */
int sl_store_last_seq(sl_store *st, uint64_t *out);
/* Deletes the events older than before_ms, keeping at least the newest one
 * so that the sequence is never lost. Returns how many through *deleted.
 * Events are appended in time order, so what goes is the oldest part of the
 * log, up to the first event at or after before_ms: the cost is that of the
 * events deleted, not of the log. */
int sl_store_prune_events(sl_store *st, int64_t before_ms, uint64_t *deleted);

/* ---- shared mode: several servers on one store -----------------------------
 *
 * A store that several servers may share (PostgreSQL) elects one of them
 * leader; only the leader loads the engine and writes. Leadership is an
 * advisory lock held by a session of its own (the lock session); each
 * leader bumps the store's epoch when it wins, and every write of the store
 * carries that epoch as a fence: a write under an older epoch changes
 * nothing and fails with SL_STORE_EFENCED, so a deposed leader that does
 * not know it yet cannot write (docs/shared-mode.md). */
typedef struct sl_elector sl_elector;

typedef struct sl_elector_opts {
    const char *advertise; /* this server's URL for the others: written when it wins */
    int64_t timeout_ms;    /* T: the lock session ends after T idle; heartbeats every T/5 */
    /* Called on the elector's thread whenever its view changes (a win, a
     * loss, a new leader, each heartbeat): must be cheap and thread-safe. */
    void (*changed)(void *arg);
    void *arg;
} sl_elector_opts;

typedef struct sl_elector_view {
    bool won;              /* this server holds the lock under epoch `epoch` */
    uint64_t epoch;        /* the newest epoch seen (0: nobody has led yet) */
    char leader[256];      /* the leader's advertised URL; "" when unknown */
    int64_t beat_ms;       /* CLOCK_MONOTONIC ms of the last heartbeat answered (won) */
    uint64_t wins;         /* times this server won */
    char problem[256];     /* the last connection problem, "" when none */
} sl_elector_view;

/* Starts campaigning on a thread of its own (the lock session, and a
 * session that listens for leader changes). *out is NULL for a store that
 * is never shared (SQLite): its server always leads. Fails at once, with
 * a sentence in err, behind a transaction pooler or against a standby. */
int sl_store_elector_start(sl_store *st, const sl_elector_opts *o, sl_elector **out, char *err,
                           size_t cap);
void sl_elector_get(sl_elector *e, sl_elector_view *out);
/* Gives up the lead (a fenced write, any doubt): the lock session is
 * closed, never reconnected as if the lock had survived, and the elector
 * campaigns again. */
void sl_elector_resign(sl_elector *e);
/* Stops: the lock is let go at once (a graceful handover), the thread
 * joined. NULL is fine. */
void sl_elector_stop(sl_elector *e);
/* The epoch the store's writes are fenced with (0: none; a store never
 * shared ignores it). Set it before loading as the new leader. */
void sl_store_set_epoch(sl_store *st, uint64_t epoch);
/* Breaks the store's connections from any thread, so that a call blocked
 * on a link that froze returns with an error now; the next call connects
 * again. For a leader stepping down. */
void sl_store_sever(sl_store *st);

/* Words for an event's reason, as stored and as the API shows them: how a
 * claim ended ("superseded by a newer claim of its group (ID)"), why it
 * waits ("at_limit on sem/db"), "granted", "lease renewed", a new
 * semaphore's values ("limit 3, strategy strict, lease 30s" or "no lease",
 * then its rules) or what a change changed ("limit 3 → 4; preempt on"),
 * "configuration removed"; "" for claim.queued. Call it while the event's
 * claim is valid (before sl_engine_changes_clear). Writes at most cap bytes,
 * always terminated. */
void sl_store_event_reason(sl_engine *eng, const sl_event *ev, char *buf, size_t cap);

#endif
