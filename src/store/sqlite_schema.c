/* sqlite_schema.c - the SQLite store's schema and its migrations.
 *
 * The schema_version table holds one row: the version the file is at.
 * sl__sqlite_migrations[v] takes a file from version v to v + 1 and runs in
 * a transaction of its own together with the version's update, so a file is
 * always at exactly one version. A released script is never edited: a
 * change to the schema is a new script appended to the array. A file at a
 * higher version than this build knows was written by a newer sluice and is
 * refused (it may hold rows this build would misread or lose).
 *
 * Values stored as integers, each part of the schema (they are the engine's
 * enum values, checked below at compile time, and must never be
 * renumbered: add new values at the end):
 *   claims.state      sl_state: 0 pending, 1 held, 2 revoking, 3 released,
 *                     4 withdrawn, 5 expired, 6 timed_out, 7 superseded,
 *                     8 canceled
 *   claims.cancel     sl_cancel: 0 none, 1 pending, 2 in-progress
 *   claims.reason     sl_reason: 0 none, 1 released, 2 withdrawn,
 *                     3 client_gone, 4 lease, 5 timeout, 6 superseded,
 *                     7 revoked, 8 grace, 9 revoked_freed, 10 operator
 *   configs.strategy  sl_strategy: 0 strict, 1 skip, 2 rebalanced
 *   configs.source    sl_config_source: 0 api, 1 file
 *   claims.locks      JSON [[kind, name, slots, via, token], ...] with kind
 *                     sl_kind (0 mutex, 1 semaphore) and via sl_via (0 lock,
 *                     1 tag, 2 group), in the claim's lock order
 *   claims.tags       JSON [[key, value], ...] in the claim's tag order
 *   configs.rules     JSON object of the rules set (sl_sem_rules), NULL for
 *                     none: {"preempt":true, "preempt_grace_ms":30000,
 *                     "max_pending":5, "on_full":1, "default_weight":1,
 *                     "weights":{"key":3, ...}, "rate_count":100,
 *                     "rate_period_ms":60000, "rate_burst":10,
 *                     "backdate_ms":3600000}; a rule that is off (0, false)
 *                     is left out, on_full is sl_on_full (0 reject,
 *                     1 drop_oldest), durations are integer milliseconds
 * Unsigned 64-bit numbers (tokens, sequences) are stored as the signed
 * 64-bit integer with the same bits. Events keep their type as text
 * ("claim.acquired"), as the API shows it.
 *
 * claims is keyed by arrival (the rowid, unique and fixed for a claim) with
 * id UNIQUE: rows are then stored in arrival order, the order in which the
 * engine links restored claims in O(1) each, so load reads them with no
 * sort and no second index. */
#include <stdio.h>
#include <string.h>

#include "sqlite_int.h"

_Static_assert(SL_PENDING == 0 && SL_HELD == 1 && SL_REVOKING == 2 && SL_RELEASED == 3 &&
                   SL_WITHDRAWN == 4 && SL_EXPIRED == 5 && SL_TIMED_OUT == 6 &&
                   SL_SUPERSEDED == 7 && SL_CANCELED == 8,
               "claim states are stored as integers: never renumber them");
_Static_assert(SL_CANCEL_NONE == 0 && SL_CANCEL_PENDING == 1 && SL_CANCEL_IN_PROGRESS == 2,
               "cancel modes are stored as integers: never renumber them");
_Static_assert(SL_REASON_NONE == 0 && SL_REASON_RELEASED == 1 && SL_REASON_WITHDRAWN == 2 &&
                   SL_REASON_CLIENT_GONE == 3 && SL_REASON_LEASE == 4 && SL_REASON_TIMEOUT == 5 &&
                   SL_REASON_SUPERSEDED == 6 && SL_REASON_REVOKED == 7 && SL_REASON_GRACE == 8 &&
                   SL_REASON_REVOKED_FREED == 9 && SL_REASON_OPERATOR == 10 &&
                   SL_REASON_PREEMPTED == 11 && SL_REASON_QUEUE_FULL == 12,
               "reasons are stored as integers: never renumber them");
_Static_assert(SL_STRICT == 0 && SL_SKIP == 1 && SL_REBALANCED == 2,
               "strategies are stored as integers: never renumber them");
_Static_assert(SL_KIND_MUTEX == 0 && SL_KIND_SEMAPHORE == 1 && SL_VIA_LOCK == 0 &&
                   SL_VIA_TAG == 1 && SL_VIA_GROUP == 2,
               "lock kinds and vias are stored as integers: never renumber them");
_Static_assert(SL_SOURCE_API == 0 && SL_SOURCE_FILE == 1,
               "configuration sources are stored as integers: never renumber them");
_Static_assert(SL_ON_FULL_REJECT == 0 && SL_ON_FULL_DROP_OLDEST == 1,
               "on_full is stored as an integer: never renumber it");

/* Version 1, the first release. meta has one row of counters; events.seq is
 * the rowid so that "seq > N" and the newest seq are index lookups. */
static const char schema_v1[] =
    "CREATE TABLE meta ("
    "  id INTEGER PRIMARY KEY CHECK (id = 1),"
    "  next_seq INTEGER NOT NULL,"
    "  next_arrival INTEGER NOT NULL,"
    "  next_grant INTEGER NOT NULL,"
    "  token_floor INTEGER NOT NULL);"
    "INSERT INTO meta (id, next_seq, next_arrival, next_grant, token_floor)"
    "  VALUES (1, 1, 1, 1, 0);"
    "CREATE TABLE configs ("
    "  name TEXT PRIMARY KEY,"
    "  lim INTEGER NOT NULL,"
    "  strategy INTEGER NOT NULL,"
    "  lease_ms INTEGER NOT NULL,"
    "  source INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE locks ("
    "  key TEXT PRIMARY KEY,"
    "  token INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE TABLE claims ("
    "  arrival INTEGER PRIMARY KEY,"
    "  id TEXT NOT NULL UNIQUE,"
    "  holder TEXT NOT NULL,"
    "  state INTEGER NOT NULL,"
    "  priority INTEGER NOT NULL,"
    "  created INTEGER NOT NULL,"
    "  arrived INTEGER NOT NULL,"
    "  rebalance_key TEXT,"
    "  grp TEXT,"
    "  cancel INTEGER NOT NULL,"
    "  grace INTEGER NOT NULL,"
    "  lease INTEGER NOT NULL,"
    "  timeout INTEGER NOT NULL,"
    "  life INTEGER NOT NULL,"
    "  granted INTEGER NOT NULL,"
    "  grant_seq INTEGER NOT NULL,"
    "  revoke_at INTEGER NOT NULL,"
    "  ended INTEGER NOT NULL,"
    "  reason INTEGER NOT NULL,"
    "  by_claim TEXT,"
    "  locks TEXT NOT NULL,"
    "  tags TEXT NOT NULL);"
    "CREATE TABLE events ("
    "  seq INTEGER PRIMARY KEY,"
    "  time INTEGER NOT NULL,"
    "  type TEXT NOT NULL,"
    "  claim TEXT,"
    "  holder TEXT,"
    "  locks TEXT NOT NULL,"
    "  reason TEXT NOT NULL);"
    "CREATE INDEX events_claim ON events (claim) WHERE claim IS NOT NULL;";

/* Version 2: a claim's idempotency key (the server's token scope and the
 * client's Idempotency-Key) and the fingerprint of the request that made
 * it, so that a creation retried after a crash finds its claim; a skip
 * semaphore's overtake limit (configurations saved before had the default
 * of 60 s in effect from now on). */
static const char schema_v2[] =
    "ALTER TABLE claims ADD COLUMN idem TEXT;"
    "ALTER TABLE claims ADD COLUMN idem_fp INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE configs ADD COLUMN overtake_ms INTEGER NOT NULL DEFAULT 60000;";

/* Version 3: a batch is one row of the log (sqlite_write.c's record), and
 * the state tables are brought forward from it in the background
 * (sqlite_apply.c); meta.applied is the last record they hold. The event
 * log is read from the records: the events saved so far become one record
 * each (sl_event_record, sqlite_apply.c), with the same seq, and the
 * events table goes. time_hi never goes down along the ids. claim_log says
 * which record holds a claim's first event, written once per claim by the
 * apply: a claim the engine no longer has is read from there to its end
 * rather than by reading the whole log. */
static const char schema_v3[] =
    "CREATE TABLE log ("
    "  id INTEGER PRIMARY KEY,"
    "  seq_hi INTEGER NOT NULL,"
    "  time_hi INTEGER NOT NULL,"
    "  events INTEGER NOT NULL,"
    "  rec BLOB NOT NULL);"
    "INSERT INTO log (id, seq_hi, time_hi, events, rec)"
    "  SELECT seq, seq, max(time) OVER (ORDER BY seq), 1,"
    "         sl_event_record(seq, time, type, claim, holder, locks, reason)"
    "  FROM events ORDER BY seq;"
    "CREATE TABLE claim_log ("
    "  id TEXT PRIMARY KEY,"
    "  first INTEGER NOT NULL) WITHOUT ROWID;"
    "CREATE INDEX claim_log_first ON claim_log (first);"
    "INSERT INTO claim_log (id, first)"
    "  SELECT claim, min(seq) FROM events WHERE claim IS NOT NULL GROUP BY claim;"
    "DROP TABLE events;"
    "ALTER TABLE meta ADD COLUMN applied INTEGER NOT NULL DEFAULT 0;"
    "UPDATE meta SET applied = (SELECT coalesce(max(id), 0) FROM log);";

/* Version 4: a configuration's scheduling rules (preemption, a bounded
 * queue, weights, a rate, backdating), NULL when it has none, as every
 * configuration saved before has. */
static const char schema_v4[] = "ALTER TABLE configs ADD COLUMN rules TEXT;";

/* Version 5: who made a claim (the token's name; NULL on a server without
 * tokens, as every claim saved before has), so that the claims per token
 * are counted again after a restart (the server's quotas). */
static const char schema_v5[] = "ALTER TABLE claims ADD COLUMN actor TEXT;";

const char *const sl__sqlite_migrations[] = {schema_v1, schema_v2, schema_v3, schema_v4,
                                             schema_v5};
const int sl__sqlite_nmigrations =
    (int)(sizeof(sl__sqlite_migrations) / sizeof(sl__sqlite_migrations[0]));

static int fail_db(sqlite3 *db, char *err, size_t errlen, const char *doing)
{
    snprintf(err, errlen, "%s: %s", doing, sqlite3_errmsg(db));
    return SL_STORE_EIO;
}

/* One integer from a one-row query; SQLITE_ROW, SQLITE_DONE (no row) or
 * an error code. */
static int query_int(sqlite3 *db, const char *sql, int64_t *out)
{
    sqlite3_stmt *s = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(s);
    if (rc == SQLITE_ROW)
        *out = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return rc;
}

/* The file's version inside the open transaction: 0 for a file with no
 * tables at all (new), SL_STORE_EIO for tables that are not ours. */
static int read_version(sqlite3 *db, int64_t *version, char *err, size_t errlen)
{
    int64_t n = 0;
    int rc = query_int(db,
                       "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                       "name = 'schema_version'",
                       &n);
    if (rc != SQLITE_ROW)
        return fail_db(db, err, errlen, "cannot read the store's schema");
    if (n == 0) {
        rc = query_int(db, "SELECT count(*) FROM sqlite_master", &n);
        if (rc != SQLITE_ROW)
            return fail_db(db, err, errlen, "cannot read the store's schema");
        if (n != 0) {
            snprintf(err, errlen,
                     "the file is an SQLite database but not a sluice store (it has tables "
                     "and no schema_version): point the store URL at a new or a sluice file");
            return SL_STORE_EIO;
        }
        *version = 0;
        return 0;
    }
    int64_t rows = 0;
    rc = query_int(db, "SELECT count(*) FROM schema_version", &rows);
    if (rc == SQLITE_ROW && rows == 1)
        rc = query_int(db, "SELECT version FROM schema_version", version);
    if (rc != SQLITE_ROW || rows != 1 || *version < 1) {
        snprintf(err, errlen,
                 "the store's schema_version table is damaged (it must hold one version "
                 "of 1 or more): restore the file from a backup");
        return SL_STORE_EIO;
    }
    return 0;
}

/* Runs one migration script and records the version it reaches, inside the
 * caller's transaction. Version 0 has no schema_version table yet. */
static int step_up(sqlite3 *db, const char *script, int64_t from, char *err, size_t errlen)
{
    char *msg = NULL;
    if (from == 0 &&
        sqlite3_exec(db,
                     "CREATE TABLE schema_version (id INTEGER PRIMARY KEY CHECK (id = 1),"
                     " version INTEGER NOT NULL);"
                     "INSERT INTO schema_version (id, version) VALUES (1, 0);",
                     NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    if (sqlite3_exec(db, script, NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    char sql[64];
    snprintf(sql, sizeof(sql), "UPDATE schema_version SET version = %lld", (long long)from + 1);
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    return 0;
fail:
    snprintf(err, errlen, "migrating the store from schema version %lld to %lld failed: %s",
             (long long)from, (long long)from + 1, msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return SL_STORE_EIO;
}

int sl__sqlite_migrate(sqlite3 *db, const char *const *scripts, int n, int *version, char *err,
                       size_t errlen)
{
    if (sl__sqlite_functions(db) != SQLITE_OK)
        return fail_db(db, err, errlen, "cannot register the store's SQL functions");
    for (;;) {
        /* IMMEDIATE: two processes opening one new file cannot both
         * migrate it; the second sees the first's version. */
        if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
            return fail_db(db, err, errlen, "cannot lock the store to check its schema");
        int64_t v = 0;
        int rc = read_version(db, &v, err, errlen);
        if (rc == 0 && v > n) {
            snprintf(err, errlen,
                     "the store is at schema version %lld, written by a newer sluice; this "
                     "build knows versions up to %d: run the newer sluice, or point the "
                     "store URL at another file",
                     (long long)v, n);
            rc = SL_STORE_EVERSION;
        }
        if (rc == 0 && v < n)
            rc = step_up(db, scripts[v], v, err, errlen);
        if (rc) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return rc;
        }
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            rc = fail_db(db, err, errlen, "cannot commit the store's schema");
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return rc;
        }
        if (v == n) {
            *version = n;
            return 0;
        }
    }
}
