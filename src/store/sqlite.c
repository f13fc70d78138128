/* sqlite.c - the embedded store: one SQLite file in WAL mode.
 *
 * Opening checks the file's directory, sets the journal and durability
 * pragmas, migrates the schema (sqlite_schema.c) and prepares every
 * statement a batch or a read of the event log needs, once. Writing
 * batches is sqlite_write.c, rebuilding the engine sqlite_load.c, the event
 * log sqlite_events.c.
 *
 * Durability: WAL with synchronous=NORMAL makes every committed transaction
 * survive a killed process (the WAL is written before COMMIT returns; it is
 * fsynced only at checkpoints, so power loss may lose the last commits);
 * synchronous=FULL fsyncs the WAL at every commit and survives power loss
 * too. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "sqlite_int.h"

/* How long a statement waits for a lock another connection holds (a backup
 * or an operator's sqlite3 shell, say) before failing. */
#define SQ_BUSY_TIMEOUT_MS 5000
/* The WAL is checkpointed every 1000 pages (SQLite's default) and then
 * reused from its start; a burst may grow it, and this is what it is cut
 * back to after a checkpoint, in bytes. */
#define SQ_WAL_KEEP "67108864"
/* A checkpoint copies the newest version of every page in the WAL into the
 * database and syncs it. A batch rewrites the same few pages (the right
 * edges of the tables and indexes, the counters), so a longer WAL holds
 * many versions of few pages: checkpointing every 8192 pages (32 MiB)
 * instead of SQLite's 1000 copies far fewer pages per commit. The WAL
 * stays under SQ_WAL_KEEP, and replaying it at start reads at most that. */
#define SQ_CHECKPOINT_PAGES "8192"
#define SQ_CHECKPOINT_FRAMES 8192
/* On the write connection SQLite's automatic checkpoint is replaced by a
 * WAL hook that only notes the WAL's length: a checkpoint of 8192 pages
 * takes tens of ms, and run by the commit that crosses the mark it would
 * stall the event loop (which commits small batches itself). The server
 * runs it on the writer thread instead (sl_store_checkpoint). */

static const char *const stmt_sql[SQ_COUNT] = {
    [SQ_BEGIN] = "BEGIN IMMEDIATE",
    [SQ_COMMIT] = "COMMIT",
    [SQ_ROLLBACK] = "ROLLBACK",
    [SQ_CLAIM_UPSERT] =
        "INSERT INTO claims (arrival, id, holder, state, priority, created, arrived,"
        " rebalance_key, grp, cancel, grace, lease, timeout, life, granted, grant_seq,"
        " revoke_at, ended, reason, by_claim, locks, tags, idem, idem_fp, actor)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
        " ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25)"
        " ON CONFLICT (id) DO UPDATE SET holder = excluded.holder, state = excluded.state,"
        " priority = excluded.priority, created = excluded.created,"
        " arrived = excluded.arrived, rebalance_key = excluded.rebalance_key,"
        " grp = excluded.grp, cancel = excluded.cancel, grace = excluded.grace,"
        " lease = excluded.lease, timeout = excluded.timeout, life = excluded.life,"
        " granted = excluded.granted, grant_seq = excluded.grant_seq,"
        " revoke_at = excluded.revoke_at, ended = excluded.ended,"
        " reason = excluded.reason, by_claim = excluded.by_claim,"
        " locks = excluded.locks, tags = excluded.tags, idem = excluded.idem,"
        " idem_fp = excluded.idem_fp, actor = excluded.actor",
    [SQ_CLAIM_DELETE] = "DELETE FROM claims WHERE id = ?1",
    [SQ_LOCK_UPSERT] = "INSERT INTO locks (key, token) VALUES (?1, ?2)"
                       " ON CONFLICT (key) DO UPDATE SET token = excluded.token",
    [SQ_LOCK_DELETE] = "DELETE FROM locks WHERE key = ?1",
    [SQ_CONFIG_UPSERT] = "INSERT INTO configs (name, lim, strategy, lease_ms, source,"
                         " overtake_ms, rules) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                         " ON CONFLICT (name) DO UPDATE SET lim = excluded.lim,"
                         " strategy = excluded.strategy, lease_ms = excluded.lease_ms,"
                         " source = excluded.source, overtake_ms = excluded.overtake_ms,"
                         " rules = excluded.rules",
    [SQ_CONFIG_DELETE] = "DELETE FROM configs WHERE name = ?1",
    [SQ_META_UPDATE] = "UPDATE meta SET next_seq = ?1, next_arrival = ?2, next_grant = ?3,"
                       " token_floor = ?4 WHERE id = 1",
    [SQ_APPLY_READ] = "SELECT id, rec FROM log WHERE id > ?1 ORDER BY id LIMIT ?2",
    [SQ_APPLIED_SET] = "UPDATE meta SET applied = ?1 WHERE id = 1",
    [SQ_APPLIED_GET] = "SELECT applied FROM meta WHERE id = 1",
    [SQ_CLAIM_LOG_UPSERT] = "INSERT OR IGNORE INTO claim_log (id, first) VALUES (?1, ?2)",
    /* Rows whose records are all pruned: the index on first makes it a range. */
    [SQ_CLAIM_LOG_PRUNE] = "DELETE FROM claim_log WHERE first < (SELECT min(id) FROM log)",
    [SQ_CLAIM_LOG_FIND] = "SELECT first FROM claim_log WHERE id = ?1",
    [SQ_LOG_INSERT] = "INSERT INTO log (id, seq_hi, time_hi, events, rec)"
                      " VALUES (?1, ?2, ?3, ?4, ?5)",
    /* Reading the log by seq or time: seq_hi and time_hi never go down
     * along the ids, so a binary search of probes by id finds where to
     * start, with no index but the rowid (sqlite_events.c). */
    [SQ_LOG_PROBE] = "SELECT id, seq_hi, time_hi FROM log WHERE id >= ?1 ORDER BY id LIMIT 1",
    [SQ_LOG_FROM] = "SELECT id, time_hi, rec FROM log WHERE id >= ?1 ORDER BY id",
    [SQ_LOG_LAST] = "SELECT id, seq_hi, time_hi FROM log ORDER BY id DESC LIMIT 1",
    [SQ_LOG_FIRST] = "SELECT id FROM log ORDER BY id LIMIT 1",
    [SQ_CONFIG_SOURCE] = "SELECT source FROM configs WHERE name = ?1",
    /* Records are appended in time order, so the old ones are a prefix of
     * the log: this walks from the oldest and stops at the first it keeps. */
    [SQ_PRUNE_FIRST_KEPT] = "SELECT id FROM log WHERE time_hi >= ?1 ORDER BY id LIMIT 1",
    [SQ_PRUNE_COUNT] = "SELECT coalesce(sum(events), 0) FROM log WHERE id < ?1",
    [SQ_PRUNE] = "DELETE FROM log WHERE id < ?1",
};

static const sl_store_ops sqlite_ops;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p)
        abort();
    return p;
}

int sl__sqlite_fail(sl_sqlite *sq, const char *doing)
{
    return sl__store_fail(&sq->base, SL_STORE_EIO, "the store %s: %s: %s", sq->path, doing,
                          sqlite3_errmsg(sq->db));
}

void sl__sqlite_reset(sqlite3_stmt *s)
{
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
}

/* Refuses a path whose directory is missing: SQLite would only say "unable
 * to open database file". */
static int check_dir(const char *path, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/');
    char dir[4096];
    size_t n = slash ? (size_t)(slash - path) : 1;
    if (slash && n == 0)
        n = 1; /* "/file": the root */
    if (n >= sizeof(dir)) {
        snprintf(err, errlen, "the store path is too long (%zu bytes): use a shorter one",
                 strlen(path));
        return SL_STORE_EIO;
    }
    memcpy(dir, slash ? path : ".", n);
    dir[n] = '\0';
    struct stat sb;
    const char *why = NULL;
    if (stat(dir, &sb) != 0)
        why = strerror(errno);
    else if (!S_ISDIR(sb.st_mode))
        why = "not a directory";
    if (why) {
        snprintf(err, errlen,
                 "the directory %s of the store %s is unusable (%s): create it, or point "
                 "the store URL elsewhere",
                 dir, path, why);
        return SL_STORE_EIO;
    }
    return 0;
}

/* The process that holds an flock on the file, from /proc/locks (Linux);
 * 0 when it cannot be told. Only for the message. */
static long lock_holder(int fd)
{
    struct stat sb;
    FILE *f = fstat(fd, &sb) == 0 ? fopen("/proc/locks", "r") : NULL;
    if (!f)
        return 0;
    char want[64], line[256];
    snprintf(want, sizeof(want), "%02x:%02x:%llu", major(sb.st_dev), minor(sb.st_dev),
             (unsigned long long)sb.st_ino);
    long pid = 0;
    while (!pid && fgets(line, sizeof(line), f)) {
        long p = 0;
        char dev[64];
        /* "1: FLOCK  ADVISORY  WRITE 1234 fd:01:5678 0 EOF" */
        if (strstr(line, "FLOCK") && sscanf(line, "%*s %*s %*s %*s %ld %63s", &p, dev) == 2 &&
            strcmp(dev, want) == 0)
            pid = p;
    }
    fclose(f);
    return pid;
}

/* One server per file: two that shared it would each keep their own engine
 * and overwrite each other's rows (seen: the twin's commits broke the
 * first server's for good). An exclusive flock, held until the store is
 * closed, makes the second refuse to start; the kernel drops it when the
 * process dies, even by kill -9, so a crash never leaves a stale lock.
 * flock and SQLite's fcntl locks do not interact on Linux. */
static int lock_file(sl_sqlite *sq, char *err, size_t errlen)
{
    sq->lock_fd = open(sq->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (sq->lock_fd < 0) {
        snprintf(err, errlen, "cannot use the store %s: cannot open it: %s", sq->path,
                 strerror(errno));
        return SL_STORE_EIO;
    }
    if (flock(sq->lock_fd, LOCK_EX | LOCK_NB) == 0)
        return 0;
    int e = errno;
    long pid = e == EWOULDBLOCK ? lock_holder(sq->lock_fd) : 0;
    char who[48] = "another process";
    if (pid > 0)
        snprintf(who, sizeof(who), "process %ld", pid);
    if (e == EWOULDBLOCK)
        snprintf(err, errlen,
                 "the store %s is in use by %s (another sluiced?): two servers on one SQLite "
                 "file would overwrite each other's state. Stop the other server, or give this "
                 "one a store of its own (several servers share state through PostgreSQL)",
                 sq->path, who);
    else
        snprintf(err, errlen, "cannot use the store %s: cannot lock it: %s", sq->path, strerror(e));
    close(sq->lock_fd);
    sq->lock_fd = -1;
    return SL_STORE_EIO;
}

/* Runs a pragma and returns its first column's text in out (may be ""). */
static int pragma(sqlite3 *db, const char *sql, char *out, size_t cap)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc == SQLITE_OK) {
        rc = sqlite3_step(s);
        if (out && cap) {
            const char *t = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
            snprintf(out, cap, "%s", t ? t : "");
        }
        rc = rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
    }
    sqlite3_finalize(s);
    return rc;
}

static void sqlite_close(sl_store *st)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    /* A clean stop leaves the state tables whole, so that the next start
     * has nothing to apply; if this fails, that start applies it. */
    if (!sq->memory && sq->wstmt[SQ_APPLY_READ])
        (void)sl__sqlite_apply(sq, 0);
    if (sq->journal) {
        (void)sl_journal_drop_through(sq->journal, (uint64_t)sq->applied);
        sl_journal_close(sq->journal);
    }
    if (sq->wdb != sq->db) {
        for (int i = 0; i < SQ_COUNT; i++)
            sqlite3_finalize(sq->wstmt[i]);
        sqlite3_close(sq->wdb);
    }
    for (int i = 0; i < SQ_COUNT; i++)
        sqlite3_finalize(sq->stmt[i]);
    sqlite3_close(sq->db);
    /* Last: closing any descriptor of the file drops SQLite's own POSIX
     * locks on it, so this one goes only once SQLite is done. */
    if (sq->lock_fd >= 0)
        close(sq->lock_fd);
    sl_rec_buf_free(&sq->rec);
    sl_rec_buf_free(&sq->frame);
    free(sq->keys);
    free(sq->log_dir);
    pthread_mutex_destroy(&sq->wlock);
    sl_store_batch_free(sq->apply_batch);
    sl_store_batch_free(sq->read_batch);
    free(sq->path);
    free(sq);
}

static int open_fail(sl_sqlite *sq, char *err, size_t errlen, const char *doing)
{
    snprintf(err, errlen, "cannot use the store %s: %s: %s", sq->path, doing,
             sq->db ? sqlite3_errmsg(sq->db) : "out of memory");
    sqlite_close(&sq->base);
    return SL_STORE_EIO;
}

/* journal_mode=WAL answers the mode it ended in: an in-memory database
 * stays "memory" (fine for tests); anything else means WAL is unavailable
 * on this file system, and without it a reader would block the writer. */
/* Durability and the WAL's bound are settings of the connection that
 * writes (and so checkpoints). */
static int set_write_pragmas(sl_sqlite *sq, sqlite3 *db, const sl_store_opts *opts, char *err,
                             size_t errlen)
{
    const char *sync = opts->durability == SL_DURABILITY_FULL ? "PRAGMA synchronous=FULL"
                                                              : "PRAGMA synchronous=NORMAL";
    if (pragma(db, sync, NULL, 0) != SQLITE_OK)
        return open_fail(sq, err, errlen, "cannot set its durability");
    if (pragma(db, "PRAGMA journal_size_limit=" SQ_WAL_KEEP, NULL, 0) != SQLITE_OK)
        return open_fail(sq, err, errlen, "cannot bound its WAL");
    if (pragma(db, "PRAGMA wal_autocheckpoint=" SQ_CHECKPOINT_PAGES, NULL, 0) != SQLITE_OK)
        return open_fail(sq, err, errlen, "cannot set its checkpoints");
    return 0;
}

static int set_pragmas(sl_sqlite *sq, const sl_store_opts *opts, bool memory, char *err,
                       size_t errlen)
{
    char mode[16];
    if (pragma(sq->db, "PRAGMA journal_mode=WAL", mode, sizeof(mode)) != SQLITE_OK)
        return open_fail(sq, err, errlen, "cannot switch to WAL mode");
    if (strcmp(mode, memory ? "memory" : "wal") != 0) {
        snprintf(err, errlen,
                 "cannot use the store %s: SQLite could not put it in WAL mode (it stayed in "
                 "\"%s\" mode): put it on a local file system",
                 sq->path, mode);
        sqlite_close(&sq->base);
        return SL_STORE_EIO;
    }
    return set_write_pragmas(sq, sq->db, opts, err, errlen);
}

static int prepare_all(sqlite3 *db, sqlite3_stmt **stmts)
{
    for (int i = 0; i < SQ_COUNT; i++)
        if (sqlite3_prepare_v3(db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &stmts[i], NULL) !=
            SQLITE_OK)
            return -1;
    return 0;
}

static int wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
    (void)db;
    (void)name;
    ((sl_sqlite *)arg)->wal_frames = frames;
    return SQLITE_OK;
}

/* The write connection: a second one on a file, the same one in memory. */
static int open_writer(sl_sqlite *sq, const sl_store_opts *opts, bool memory, int flags,
                       char *err, size_t errlen)
{
    if (memory) {
        sq->wdb = sq->db;
        memcpy(sq->wstmt, sq->stmt, sizeof(sq->stmt));
        return 0;
    }
    if (sqlite3_open_v2(sq->path, &sq->wdb, flags, NULL) != SQLITE_OK) {
        snprintf(err, errlen, "cannot use the store %s: cannot open it for writing: %s",
                 sq->path, sq->wdb ? sqlite3_errmsg(sq->wdb) : "out of memory");
        sqlite_close(&sq->base);
        return SL_STORE_EIO;
    }
    sqlite3_extended_result_codes(sq->wdb, 1);
    sqlite3_busy_timeout(sq->wdb, SQ_BUSY_TIMEOUT_MS);
    int rc = set_write_pragmas(sq, sq->wdb, opts, err, errlen);
    if (rc)
        return rc;
    sqlite3_wal_hook(sq->wdb, wal_hook, sq);
    if (prepare_all(sq->wdb, sq->wstmt) != 0) {
        snprintf(err, errlen, "cannot use the store %s: cannot prepare its statements: %s",
                 sq->path, sqlite3_errmsg(sq->wdb));
        sqlite_close(&sq->base);
        return SL_STORE_EIO;
    }
    return 0;
}

/* Where the log ends and how far the state tables have been brought. */
static int read_log_ends(sl_sqlite *sq)
{
    sqlite3_stmt *s = sq->stmt[SQ_LOG_LAST];
    int rc = sqlite3_step(s);
    sq->next_id = rc == SQLITE_ROW ? sqlite3_column_int64(s, 0) + 1 : 1;
    sq->last_time = rc == SQLITE_ROW ? sqlite3_column_int64(s, 2) : 0;
    sq->opened_time = sq->last_time;
    sl__sqlite_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return -1;
    sqlite3_stmt *a = NULL;
    rc = sqlite3_prepare_v2(sq->db, "SELECT applied FROM meta WHERE id = 1", -1, &a, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(a)) == SQLITE_ROW)
        sq->applied = sqlite3_column_int64(a, 0);
    sqlite3_finalize(a);
    if (rc == SQLITE_DONE) /* no counters row: a damaged store, which load names */
        sq->applied = sq->next_id - 1;
    else if (rc != SQLITE_ROW)
        return -1;
    if (sq->applied >= sq->next_id) /* a log pruned to nothing: nothing to apply */
        sq->next_id = sq->applied + 1;
    sq->applied_at_ms = sl__sqlite_now_ms();
    return 0;
}

/* The log file beside the database (journal.h). The records the table
 * holds unapplied (written before the log file existed) are applied
 * first, so that the log file starts right after the last of them; then
 * the log file's records are applied too, and the table is where a start
 * reads everything from, the newest event time included. */
static int open_journal(sl_sqlite *sq, char *err, size_t errlen)
{
    size_t n = strlen(sq->path) + sizeof("-log");
    sq->log_dir = xcalloc(1, n);
    snprintf(sq->log_dir, n, "%s-log", sq->path);
    int rc = sl__sqlite_apply(sq, 0);
    if (rc) {
        snprintf(err, errlen, "cannot use the store %s: %s", sq->path, sq->apply_err);
        sqlite_close(&sq->base);
        return rc;
    }
    /* Applying deletes the segments it applied: it must be synced. */
    if (pragma(sq->wdb, "PRAGMA synchronous=FULL", NULL, 0) != SQLITE_OK)
        return open_fail(sq, err, errlen, "cannot set its durability");
    sl_journal_opts o = {.dir = sq->log_dir,
                         .first_id = (uint64_t)sq->applied + 1,
                         .fill_bytes = sq->full ? SL_JOURNAL_FILL_BYTES : 0};
    char jerr[SL_STORE_ERR_MAX];
    rc = sl_journal_open(&o, &sq->journal, jerr, sizeof(jerr));
    if (rc == 0) {
        sq->next_id = sq->durable_next = (int64_t)sl_journal_next_id(sq->journal);
        rc = sl__sqlite_apply(sq, 0);
        snprintf(jerr, sizeof(jerr), "%s", sq->apply_err);
    }
    if (rc == 0 && read_log_ends(sq) != 0)
        return open_fail(sq, err, errlen, "cannot read its log");
    if (rc) {
        snprintf(err, errlen, "cannot use the store %s: %s", sq->path, jerr);
        sqlite_close(&sq->base);
        return rc;
    }
    sq->next_id = sq->durable_next = (int64_t)sl_journal_next_id(sq->journal);
    sq->synced_seq = sq->committed_seq;
    sq->fault = getenv("SLUICE_TEST_COMMIT_FAULT");
    return 0;
}

int sl__sqlite_open(const char *path, const sl_store_opts *opts, sl_store **out, char *err,
                    size_t errlen)
{
    bool memory = strcmp(path, ":memory:") == 0;
    int rc = memory ? 0 : check_dir(path, err, errlen);
    if (rc)
        return rc;
    sl_sqlite *sq = xcalloc(1, sizeof(*sq));
    sq->base.ops = &sqlite_ops;
    sq->base.source = SL_SOURCE_API;
    sq->lock_fd = -1;
    pthread_mutex_init(&sq->wlock, NULL);
    sq->memory = memory;
    sq->full = opts->durability == SL_DURABILITY_FULL;
    size_t plen = strlen(path);
    sq->path = xcalloc(1, plen + 1);
    memcpy(sq->path, path, plen);
    sq->base.label = sq->path;
    if (!memory && (rc = lock_file(sq, err, errlen)) != 0) {
        free(sq->path);
        free(sq);
        return rc;
    }

    /* NOMUTEX: each connection is used by one thread at a time (store.h),
     * so SQLite's own locking of every call is pure cost. */
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (sqlite3_open_v2(path, &sq->db, flags, NULL) != SQLITE_OK)
        return open_fail(sq, err, errlen, "cannot open it");
    sqlite3_extended_result_codes(sq->db, 1);
    sqlite3_busy_timeout(sq->db, SQ_BUSY_TIMEOUT_MS);
    rc = set_pragmas(sq, opts, memory, err, errlen);
    if (rc)
        return rc;
    rc = sl__sqlite_migrate(sq->db, sl__sqlite_migrations, sl__sqlite_nmigrations, &sq->base.schema,
                            sq->base.err, sizeof(sq->base.err));
    if (rc) {
        snprintf(err, errlen, "cannot use the store %s: %s", sq->path, sq->base.err);
        sqlite_close(&sq->base);
        return rc;
    }
    sq->base.err[0] = '\0';
    if (prepare_all(sq->db, sq->stmt) != 0)
        return open_fail(sq, err, errlen, "cannot prepare its statements");
    rc = open_writer(sq, opts, memory, flags, err, errlen);
    if (rc)
        return rc;
    if (read_log_ends(sq) != 0)
        return open_fail(sq, err, errlen, "cannot read its log");
    rc = memory ? 0 : open_journal(sq, err, errlen);
    if (rc)
        return rc;
    *out = &sq->base;
    return 0;
}

static int sqlite_config_source(sl_store *st, const char *name, bool *found, sl_config_source *out)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    sqlite3_stmt *s = sq->stmt[SQ_CONFIG_SOURCE];
    *found = false;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        int64_t v = sqlite3_column_int64(s, 0);
        if (v != SL_SOURCE_API && v != SL_SOURCE_FILE) {
            sl__sqlite_reset(s);
            return sl__store_fail(st, SL_STORE_EDATA,
                                  "the store %s: configuration %.253s has an unknown source "
                                  "(%lld)",
                                  sq->path, name, (long long)v);
        }
        *found = true;
        *out = (sl_config_source)v;
    } else if (rc != SQLITE_DONE) {
        rc = sl__sqlite_fail(sq, "cannot read a configuration's source");
        sl__sqlite_reset(s);
        return rc;
    }
    sl__sqlite_reset(s);
    return 0;
}

/* A checkpoint here is both: the log applied to the state tables
 * (sqlite_apply.c) and the WAL copied into the database. */
static bool sqlite_checkpoint_due(const sl_store *st)
{
    const sl_sqlite *sq = (const sl_sqlite *)st;
    return sq->wal_frames >= SQ_CHECKPOINT_FRAMES || sl__sqlite_apply_due(sq);
}

/* PASSIVE: copies what no reader still needs and never waits for one; the
 * rest goes at the next checkpoint. */
static int sqlite_checkpoint(sl_store *st)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    sq->apply_err[0] = '\0';
    if (sl__sqlite_apply_due(sq) && sl__sqlite_apply(sq, SQ_APPLY_MAX) != 0)
        return SL_STORE_EIO;
    if (sq->wal_frames < SQ_CHECKPOINT_FRAMES)
        return 0;
    int log = 0, done = 0;
    pthread_mutex_lock(&sq->wlock); /* a prune on the loop may use the connection */
    int rc = sqlite3_wal_checkpoint_v2(sq->wdb, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
    sq->wal_frames = 0;
    pthread_mutex_unlock(&sq->wlock);
    if (rc == SQLITE_OK || rc == SQLITE_BUSY)
        return 0;
    snprintf(sq->apply_err, sizeof(sq->apply_err), "the store %s: cannot checkpoint its WAL: %s",
             sq->path, sqlite3_errmsg(sq->wdb));
    return SL_STORE_EIO;
}

static uint64_t sqlite_log_unapplied(const sl_store *st)
{
    int64_t n = sl__sqlite_pending((const sl_sqlite *)st);
    return n > 0 ? (uint64_t)n : 0;
}

static int64_t sqlite_last_time(const sl_store *st)
{
    return ((const sl_sqlite *)st)->opened_time;
}

static int sqlite_apply_all(sl_store *st)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    int rc = sl__sqlite_apply(sq, 0);
    return rc ? sl__store_fail(st, rc, "%s", sq->apply_err) : 0;
}

static const char *sqlite_checkpoint_error(const sl_store *st)
{
    return ((const sl_sqlite *)st)->apply_err;
}

static bool sqlite_commit_overlaps(const sl_store *st)
{
    const sl_sqlite *sq = (const sl_sqlite *)st;
    return sq->wdb != sq->db;
}

static bool sqlite_commit_inline(const sl_store *st)
{
    return ((const sl_sqlite *)st)->journal != NULL;
}

static const sl_store_ops sqlite_ops = {
    .close = sqlite_close,
    .load = sl__sqlite_load,
    .commit = sl__sqlite_commit,
    .commit_overlaps = sqlite_commit_overlaps,
    .commit_inline = sqlite_commit_inline,
    .append = sl__sqlite_append,
    .sync = sl__sqlite_sync,
    .checkpoint_due = sqlite_checkpoint_due,
    .checkpoint = sqlite_checkpoint,
    .config_source = sqlite_config_source,
    .events = sl__sqlite_events,
    .last_seq = sl__sqlite_last_seq,
    .apply = sqlite_apply_all,
    .last_time = sqlite_last_time,
    .log_unapplied = sqlite_log_unapplied,
    .checkpoint_error = sqlite_checkpoint_error,
};
