/* postgres.c - the PostgreSQL store: opening (two connections, the checks,
 * the schema), the prepared statements, and the backend's table.
 *
 * The URL is any libpq connection string: "postgres://user@host/db" or
 * "postgresql://...", or "host=... dbname=..." after "postgres:". The
 * password may come from the URL, PGPASSWORD or ~/.pgpass. The server must
 * take writes: connections ask for target_session_attrs=read-write, and a
 * server in recovery (a standby) is refused at open. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "postgres_int.h"

static const char *const stmt_sql[PQ_COUNT] = {
    [PQ_CLAIM_UPSERT] =
        "INSERT INTO claims (arrival, id, holder, state, priority, created, arrived,"
        " rebalance_key, grp, cancel, grace, lease, timeout, life, granted, grant_seq,"
        " revoke_at, ended, reason, by_claim, locks, tags, idem, idem_fp, actor)"
        " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,"
        " $17, $18, $19, $20, $21, $22, $23, $24, $25)"
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
    [PQ_CLAIM_DELETE] = "DELETE FROM claims WHERE id = $1",
    [PQ_LOCK_UPSERT] = "INSERT INTO locks (key, token) VALUES ($1, $2)"
                       " ON CONFLICT (key) DO UPDATE SET token = excluded.token",
    [PQ_LOCK_DELETE] = "DELETE FROM locks WHERE key = $1",
    [PQ_CONFIG_UPSERT] = "INSERT INTO configs (name, lim, strategy, lease_ms, source,"
                         " overtake_ms, rules) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                         " ON CONFLICT (name) DO UPDATE SET lim = excluded.lim,"
                         " strategy = excluded.strategy, lease_ms = excluded.lease_ms,"
                         " source = excluded.source, overtake_ms = excluded.overtake_ms,"
                         " rules = excluded.rules",
    [PQ_CONFIG_DELETE] = "DELETE FROM configs WHERE name = $1",
    [PQ_META_UPDATE] = "UPDATE meta SET next_seq = $1, next_arrival = $2, next_grant = $3,"
                       " token_floor = $4 WHERE id = 1",
    [PQ_CLAIM_LOG_ADD] = "INSERT INTO claim_log (id, first) VALUES ($1, $2)"
                         " ON CONFLICT (id) DO NOTHING",
    [PQ_APPLY_READ] = "SELECT id, rec FROM log WHERE id > $1 ORDER BY id LIMIT $2",
    [PQ_APPLIED_SET] = "UPDATE meta SET applied = $1 WHERE id = 1",
    [PQ_CLAIM_LOG_PRUNE] = "DELETE FROM claim_log WHERE first < (SELECT min(id) FROM log)",
    /* The fence: the row is written only while this server's epoch is the
     * leader row's (the UPDATE also serialises it with a new leader's
     * epoch bump, which takes the same row lock). */
    [PQ_LOG_INSERT] = "WITH fence AS (UPDATE sluice_leader SET batch = batch + 1"
                      " WHERE id = 1 AND epoch = $6 RETURNING 1)"
                      " INSERT INTO log (id, seq_hi, time_hi, events, rec)"
                      " SELECT $1, $2, $3, $4, $5 FROM fence",
    [PQ_LOG_START_SEQ] = "SELECT id FROM log WHERE seq_hi > $1 ORDER BY seq_hi, id LIMIT 1",
    [PQ_LOG_START_TIME] = "SELECT id FROM log WHERE time_hi >= $1 ORDER BY time_hi, id LIMIT 1",
    [PQ_LOG_PAGE] = "SELECT id, time_hi, rec FROM log WHERE id >= $1 ORDER BY id LIMIT 256",
    [PQ_LOG_AT] = "SELECT id, rec FROM log WHERE seq_hi >= $1 ORDER BY seq_hi, id LIMIT 1",
    [PQ_LOG_LAST] = "SELECT id, seq_hi, time_hi FROM log ORDER BY id DESC LIMIT 1",
    [PQ_CLAIM_LOG_FIND] = "SELECT first FROM claim_log WHERE id = $1",
    [PQ_APPLIED_GET] = "SELECT applied FROM meta WHERE id = 1",
    [PQ_CONFIG_SOURCE] = "SELECT source FROM configs WHERE name = $1",
    [PQ_PRUNE_FIRST_KEPT] = "SELECT id FROM log WHERE time_hi >= $1 ORDER BY time_hi, id LIMIT 1",
    [PQ_PRUNE_COUNT] = "SELECT coalesce(sum(events), 0) FROM log WHERE id < $1",
    [PQ_PRUNE] = "DELETE FROM log WHERE id < $1",
    /* The same fence inside a transaction of several statements: another
     * epoch divides by zero, which aborts the transaction. */
    [PQ_FENCE] = "WITH fence AS (UPDATE sluice_leader SET batch = batch + 1"
                 " WHERE id = 1 AND epoch = $1 RETURNING 1) SELECT 1 / count(*) FROM fence",
};

static const sl_store_ops pg_ops;

int64_t sl__pg_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static void message(char *err, size_t cap, const char *what, PGconn *c, const PGresult *r)
{
    const char *m = r ? PQresultErrorMessage(r) : "";
    if (!m || !*m)
        m = c ? PQerrorMessage(c) : "out of memory";
    snprintf(err, cap, "%s: %.*s", what, (int)strcspn(m, "\n"), m);
}

PGresult *sl__pg_exec(PGconn *c, pq_stmt which, int n, const char *const *values,
                      const int *lengths, const int *formats, int result_format, char *err,
                      size_t cap)
{
    char name[16];
    snprintf(name, sizeof(name), "s%d", (int)which);
    PGresult *r = PQexecPrepared(c, name, n, values, lengths, formats, result_format);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK)
        return r;
    message(err, cap, "a statement failed", c, r);
    PQclear(r);
    return NULL;
}

int sl__pg_simple(PGconn *c, const char *sql, char *err, size_t cap)
{
    PGresult *r = PQexec(c, sql);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;
    if (rc)
        message(err, cap, sql, c, r);
    PQclear(r);
    return rc;
}

/* The URL with its password cut out, for messages and logs. */
static char *label_of(const char *url)
{
    size_t cap = strlen(url) + 1;
    char *l = malloc(cap);
    if (!l)
        abort();
    sl_store_url_label(url, l, cap);
    return l;
}

bool sl__pg_fenced(const PGresult *r)
{
    if (!r)
        return false;
    const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (state)
        return strcmp(state, "22012") == 0;
    return PQresultStatus(r) == PGRES_COMMAND_OK && strcmp(PQcmdTuples((PGresult *)r), "0") == 0;
}

/* A TLS failure says what to check: libpq's own words name the symptom
 * (certificate verify failed, a host that does not match), not the mend. */
static void tls_hint(char *err, size_t cap)
{
    if (!strstr(err, "certificate") && !strstr(err, "SSL"))
        return;
    size_t n = strlen(err);
    snprintf(err + n, cap > n ? cap - n : 0,
             " (TLS to PostgreSQL: sslrootcert must name the CA that signed the database "
             "server's certificate, and with sslmode=verify-full that certificate must name the "
             "URL's host; docs/store.md, \"TLS\")");
}

PGconn *sl__pg_connect(const char *conninfo, char *err, size_t cap)
{
    /* connect_timeout first, so that the URL may set its own: a link that
     * froze must not hold a connection attempt (or a reconnect) forever. */
    const char *keys[] = {"connect_timeout", "dbname", "target_session_attrs", "application_name",
                          NULL};
    const char *vals[] = {"5", conninfo, "read-write", "sluiced", NULL};
    PGconn *c = PQconnectdbParams(keys, vals, 1);
    if (!c || PQstatus(c) != CONNECTION_OK) {
        message(err, cap, "cannot connect", c, NULL);
        tls_hint(err, cap);
        PQfinish(c);
        return NULL;
    }
    return c;
}

static int prepare_all(PGconn *c, char *err, size_t cap)
{
    for (int i = 0; i < PQ_COUNT; i++) {
        char name[16];
        snprintf(name, sizeof(name), "s%d", i);
        PGresult *r = PQprepare(c, name, stmt_sql[i], 0, NULL);
        bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            message(err, cap, "cannot prepare the store's statements", c, r);
        PQclear(r);
        if (!ok)
            return -1;
    }
    return 0;
}

int sl__pg_query_int(PGconn *c, const char *sql, int64_t *out, char *err, size_t cap)
{
    PGresult *r = PQexec(c, sql);
    if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
        message(err, cap, sql, c, r);
        PQclear(r);
        return -1;
    }
    int found = PQntuples(r) > 0 && !PQgetisnull(r, 0, 0);
    if (found)
        *out = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    return found;
}

/* Brings the database to this build's version, one script per
 * transaction, under an advisory lock (two servers starting together). */
static int migrate(sl_pg *pg, char *err, size_t cap)
{
    PGconn *c = pg->wc;
    for (;;) {
        if (sl__pg_simple(c, "BEGIN", err, cap) != 0 ||
            sl__pg_simple(c, "SELECT pg_advisory_xact_lock(7345991205118476612)", err, cap) != 0)
            return SL_STORE_EIO;
        int64_t exists = 0, v = 0;
        int rc = sl__pg_query_int(c, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
                              " AND tablename = 'schema_version'",
                           &exists, err, cap);
        if (rc >= 0 && exists)
            rc = sl__pg_query_int(c, "SELECT version FROM schema_version WHERE id = 1", &v, err, cap);
        else if (rc >= 0)
            rc = sl__pg_simple(c, "CREATE TABLE schema_version (id integer PRIMARY KEY CHECK"
                                  " (id = 1), version integer NOT NULL);"
                                  " INSERT INTO schema_version VALUES (1, 0)",
                               err, cap);
        if (rc < 0) {
            sl__pg_simple(c, "ROLLBACK", err + strlen(err), 0);
            return SL_STORE_EIO;
        }
        if (v > sl__pg_nmigrations) {
            sl__pg_simple(c, "ROLLBACK", err, 0);
            snprintf(err, cap,
                     "the database is at sluice schema version %lld, written by a newer sluice;"
                     " this build knows versions up to %d: run the newer sluice",
                     (long long)v, sl__pg_nmigrations);
            return SL_STORE_EVERSION;
        }
        if (v == sl__pg_nmigrations)
            return sl__pg_simple(c, "COMMIT", err, cap) == 0 ? 0 : SL_STORE_EIO;
        char bump[96];
        snprintf(bump, sizeof(bump), "UPDATE schema_version SET version = %lld", (long long)v + 1);
        if (sl__pg_simple(c, sl__pg_migrations[v], err, cap) != 0 ||
            sl__pg_simple(c, bump, err, cap) != 0 || sl__pg_simple(c, "COMMIT", err, cap) != 0) {
            char why[400];
            snprintf(why, sizeof(why), "%.399s", err);
            sl__pg_simple(c, "ROLLBACK", err, 0);
            snprintf(err, cap, "migrating the store from schema version %lld to %lld failed: %s",
                     (long long)v, (long long)v + 1, why);
            return SL_STORE_EIO;
        }
    }
}

int sl__pg_read_log_ends(sl_pg *pg, char *err, size_t cap)
{
    int64_t last = 0, time_hi = 0, applied = 0;
    if (sl__pg_query_int(pg->wc, "SELECT max(id) FROM log", &last, err, cap) < 0 ||
        sl__pg_query_int(pg->wc, "SELECT time_hi FROM log ORDER BY id DESC LIMIT 1", &time_hi, err,
                  cap) < 0)
        return -1;
    int found = sl__pg_query_int(pg->wc, "SELECT applied FROM meta WHERE id = 1", &applied, err, cap);
    if (found < 0)
        return -1;
    pg->next_id = last + 1;
    pg->applied = found ? applied : last; /* no counters row: load names the damage */
    if (pg->applied >= pg->next_id)
        pg->next_id = pg->applied + 1;
    pg->last_time = pg->opened_time = time_hi;
    pg->applied_at_ms = sl__pg_now_ms();
    return 0;
}

static void pg_close(sl_store *st)
{
    sl_pg *pg = (sl_pg *)st;
    if (pg->wc && PQstatus(pg->wc) == CONNECTION_OK)
        (void)sl__pg_apply(pg, 0); /* a clean stop leaves the state whole */
    PQfinish(pg->rc);
    PQfinish(pg->wc);
    sl_rec_buf_free(&pg->rec);
    sl_store_batch_free(pg->apply_batch);
    sl_store_batch_free(pg->read_batch);
    free(pg->label);
    free(pg->conninfo);
    free(pg);
}

static int open_fail(sl_pg *pg, int code, char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "cannot use the store %s: %s", pg->label, why);
    PQfinish(pg->rc);
    pg->rc = NULL;
    PQfinish(pg->wc);
    pg->wc = NULL;
    pg_close(&pg->base);
    return code;
}

int sl__pg_writer_settings(sl_pg *pg, char *err, size_t cap)
{
    char sql[128];
    snprintf(sql, sizeof(sql),
             "SET synchronous_commit = on; SET idle_in_transaction_session_timeout = %lld",
             (long long)pg->txn_timeout_ms);
    return sl__pg_simple(pg->wc, sql, err, cap);
}

/* A connection that broke (the database restarted, the network failed, a
 * leader stepping down severed it) is made again with its statements. It
 * holds no lock: leadership is the lock session's (postgres_leader.c), and
 * every write is fenced by epoch instead. 0 when the connection is usable. */
int sl__pg_ensure(sl_pg *pg, PGconn *c, char *err, size_t cap)
{
    if (PQstatus(c) == CONNECTION_OK)
        return 0;
    return sl__pg_reconnect(pg, c, err, cap);
}

int sl__pg_ensure_live(sl_pg *pg, PGconn *c, char *err, size_t cap)
{
    /* libpq learns that the server went away (restarted) only when it
     * next uses the connection: try it. */
    PGresult *r = PQstatus(c) == CONNECTION_OK ? PQexec(c, "SELECT 1") : NULL;
    bool live = r && PQresultStatus(r) == PGRES_TUPLES_OK;
    PQclear(r);
    return live ? 0 : sl__pg_reconnect(pg, c, err, cap);
}

const char sl__pg_pooler_message[] =
    "the connection goes through a transaction pooler (PgBouncer in transaction mode?): "
    "sluiced needs sessions of its own (its prepared statements, its lock, its "
    "notifications); connect it to PostgreSQL directly, or through a pooler in session mode";

/* Two sessions of one client are two backends, each the same from one
 * statement to the next; through a transaction pooler they may share one
 * (with a single server connection in the pool: every check below passes
 * by chance otherwise only with several, and then the second catches it
 * most of the time). */
int sl__pg_pooled(PGconn *a, PGconn *b, char *err, size_t cap)
{
    int64_t a1 = 0, bp = 0, a2 = 0;
    if (sl__pg_query_int(a, "SELECT pg_backend_pid()", &a1, err, cap) < 0 ||
        sl__pg_query_int(b, "SELECT pg_backend_pid()", &bp, err, cap) < 0 ||
        sl__pg_query_int(a, "SELECT pg_backend_pid()", &a2, err, cap) < 0)
        return -1;
    if (a1 == bp || a1 != a2) {
        snprintf(err, cap, "%s", sl__pg_pooler_message);
        return -1;
    }
    return 0;
}

int sl__pg_check_epoch(sl_pg *pg, char *err, size_t cap)
{
    char epoch[24];
    snprintf(epoch, sizeof(epoch), "%lld", (long long)pg->epoch);
    const char *v[1] = {epoch};
    char name[16];
    snprintf(name, sizeof(name), "s%d", (int)PQ_FENCE);
    PGresult *r = PQexecPrepared(pg->wc, name, 1, v, NULL, NULL, 0);
    int rc = r && PQresultStatus(r) == PGRES_TUPLES_OK ? 0 : -1;
    if (rc)
        snprintf(err, cap, "%s",
                 sl__pg_fenced(r) ? "another server leads now (a newer epoch)"
                                  : "the leader row could not be checked");
    PQclear(r);
    return rc;
}

int sl__pg_reconnect(sl_pg *pg, PGconn *c, char *err, size_t cap)
{
    PQreset(c);
    if (PQstatus(c) != CONNECTION_OK) {
        message(err, cap, "cannot connect again", c, NULL);
        tls_hint(err, cap);
        return -1;
    }
    if (c == pg->wc && sl__pg_writer_settings(pg, err, cap) != 0)
        return -1;
    return prepare_all(c, err, cap);
}

int sl__pg_open(const char *url, const sl_store_opts *opts, sl_store **out, char *err,
                size_t errlen)
{
    sl_pg *pg = calloc(1, sizeof(*pg));
    if (!pg)
        abort();
    pg->base.ops = &pg_ops;
    pg->base.source = SL_SOURCE_API;
    pg->label = label_of(url);
    pg->conninfo = strdup(url);
    if (!pg->conninfo)
        abort();
    pg->base.label = pg->label;
    char why[768] = "";
    if (!(pg->wc = sl__pg_connect(url, why, sizeof(why))) ||
        !(pg->rc = sl__pg_connect(url, why, sizeof(why))))
        return open_fail(pg, SL_STORE_EIO, err, errlen, why);
    int64_t recovery = 0;
    if (sl__pg_query_int(pg->wc, "SELECT pg_is_in_recovery()::int", &recovery, why, sizeof(why)) < 0)
        return open_fail(pg, SL_STORE_EIO, err, errlen, why);
    if (recovery)
        return open_fail(pg, SL_STORE_EIO, err, errlen,
                         "the server is in recovery (a standby): point the URL at the primary");
    if (sl__pg_pooled(pg->wc, pg->rc, why, sizeof(why)) != 0)
        return open_fail(pg, SL_STORE_EIO, err, errlen, why);
    /* Both durabilities wait for PostgreSQL's own commit (its WAL flushed):
     * a commit acknowledged is one the database keeps, whatever fails. */
    (void)opts;
    if (sl__pg_writer_settings(pg, why, sizeof(why)) != 0)
        return open_fail(pg, SL_STORE_EIO, err, errlen, why);
    int rc = migrate(pg, why, sizeof(why));
    if (rc)
        return open_fail(pg, rc, err, errlen, why);
    pg->base.schema = sl__pg_nmigrations;
    if (prepare_all(pg->wc, why, sizeof(why)) != 0 || prepare_all(pg->rc, why, sizeof(why)) != 0 ||
        sl__pg_read_log_ends(pg, why, sizeof(why)) != 0)
        return open_fail(pg, SL_STORE_EIO, err, errlen, why);
    *out = &pg->base;
    return 0;
}

static int pg_config_source(sl_store *st, const char *name, bool *found, sl_config_source *out)
{
    sl_pg *pg = (sl_pg *)st;
    char why[512];
    const char *v[1] = {name};
    *found = false;
    PGresult *r = sl__pg_exec(pg->rc, PQ_CONFIG_SOURCE, 1, v, NULL, NULL, 0, why, sizeof(why));
    if (!r)
        return sl__store_fail(st, SL_STORE_EIO, "the store %s: %s", pg->label, why);
    if (PQntuples(r) > 0) {
        long long s = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        if (s != SL_SOURCE_API && s != SL_SOURCE_FILE) {
            PQclear(r);
            return sl__store_fail(st, SL_STORE_EDATA,
                                  "the store %s: configuration %.253s has an unknown source (%lld)",
                                  pg->label, name, s);
        }
        *found = true;
        *out = (sl_config_source)s;
    }
    PQclear(r);
    return 0;
}

static bool pg_checkpoint_due(const sl_store *st)
{
    return sl__pg_apply_due((const sl_pg *)st);
}

static int pg_checkpoint(sl_store *st)
{
    sl_pg *pg = (sl_pg *)st;
    pg->apply_err[0] = '\0';
    return sl__pg_apply_due(pg) && sl__pg_apply(pg, PQ_APPLY_MAX) != 0 ? SL_STORE_EIO : 0;
}

static const char *pg_checkpoint_error(const sl_store *st)
{
    return ((const sl_pg *)st)->apply_err;
}

static bool pg_commit_overlaps(const sl_store *st)
{
    (void)st;
    return true; /* the writer's connection is its own */
}

static int pg_apply_all(sl_store *st)
{
    sl_pg *pg = (sl_pg *)st;
    int rc = sl__pg_apply(pg, 0);
    return rc ? sl__store_fail(st, rc, "%s", pg->apply_err) : 0;
}

static int64_t pg_last_time(const sl_store *st)
{
    return ((const sl_pg *)st)->opened_time;
}

static uint64_t pg_log_unapplied(const sl_store *st)
{
    int64_t n = sl__pg_pending((const sl_pg *)st);
    return n > 0 ? (uint64_t)n : 0;
}

static void pg_set_epoch(sl_store *st, uint64_t epoch)
{
    ((sl_pg *)st)->epoch = (int64_t)epoch;
}

/* shutdown(2), not close: the descriptors stay libpq's, so no other
 * thread's call can land on a reused number; a call blocked on a frozen
 * link returns at once with an error, and the next one reconnects. */
static void pg_sever(sl_store *st)
{
    sl_pg *pg = (sl_pg *)st;
    PGconn *cs[2] = {pg->wc, pg->rc};
    for (int i = 0; i < 2; i++) {
        int fd = cs[i] ? PQsocket(cs[i]) : -1;
        if (fd >= 0)
            shutdown(fd, SHUT_RDWR);
    }
}

static const sl_store_ops pg_ops = {
    .close = pg_close,
    .load = sl__pg_load,
    .commit = sl__pg_commit,
    .commit_overlaps = pg_commit_overlaps,
    .checkpoint_due = pg_checkpoint_due,
    .checkpoint = pg_checkpoint,
    .config_source = pg_config_source,
    .events = sl__pg_events,
    .last_seq = sl__pg_last_seq,
    .apply = pg_apply_all,
    .last_time = pg_last_time,
    .log_unapplied = pg_log_unapplied,
    .checkpoint_error = pg_checkpoint_error,
    .elector_start = sl__pg_elector_start,
    .set_epoch = pg_set_epoch,
    .sever = pg_sever,
};
