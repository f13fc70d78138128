/* backend_pg.c - the load generator's back-ends for PostgreSQL (libpq), with
 * the lock recipes that people build on PostgreSQL when they have it already,
 * so that sluice is compared with what they run rather than with a best case.
 * One protocol, three variants, each a backend of its own name:
 *
 * postgres       mutex: SELECT pg_advisory_lock(key), which blocks in the
 *                server until the lock is ours (the server queues waiters
 *                and grants the lock to the next one at the release);
 *                release: SELECT pg_advisory_unlock(key), which must return
 *                true. key is a 64-bit hash of the lock's name.
 * postgres-poll  mutex: SELECT pg_try_advisory_lock(key) every poll_ms until
 *                it returns true (the recipe of clients that must not block
 *                a connection); release as above.
 *   semaphore, both: pg_try_advisory_lock on each of the limit slot keys
 *                (hashes of name#slot), from a random slot on; if none is
 *                free, sleep poll_ms and try again. Advisory locks have no
 *                semaphore, so this is the usual recipe, and it polls.
 * postgres-rows  a table of slots, one row per slot of a semaphore (limit
 *                rows, made by semaphore_create; a mutex is a semaphore of
 *                one row, inserted by its first acquire), holder NULL when
 *                free, as workflow engines keep locks in their database
 *                (Argo Workflows' database semaphores). acquire: an UPDATE
 *                of one free row (FOR UPDATE SKIP LOCKED) to our token, in
 *                autocommit, so every grant is a durable commit; poll_ms
 *                between attempts while no row is free. release: an UPDATE
 *                of our row back to NULL, which must change exactly 1 row.
 *
 * Statements are prepared once per session (PQprepare) and run with
 * PQexecPrepared's protocol, as client libraries do. No fencing token (the
 * advisory lock has none; a row could carry one, the recipes do not) and no
 * history: the generator checks holders and confirmed releases only.
 *
 * interrupt() sets a flag and cancels the query in flight (PQcancel); a
 * client waiting for a result also checks the flag every WAKE_MS, so that a
 * cancel that arrived before its query was sent cannot leave it blocked. */
#include <errno.h>
#include <libpq-fe.h>
#include <poll.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "address.h"
#include "backend.h"

#define TOKEN_HEX 32 /* 128 random bits: unique among every grant of a run */
#define WAKE_MS 100  /* how often a client blocked on a result looks at the flag */
#define KEY_TEXT 24  /* a bigint in decimal, sign and NUL included */
#define SEM_TABLE "sluice_load_sem"

typedef enum { PG_BLOCKING, PG_POLL, PG_ROWS } pg_variant;

/* Set by main before any session opens (sl_load_pg_configure). */
static int poll_ms = 10;

void sl_load_pg_configure(int poll)
{
    poll_ms = poll;
}

typedef struct session {
    PGconn *conn;
    PGcancel *cancel; /* for interrupt() from another thread */
    pg_variant variant;
    atomic_bool interrupted;         /* every later call fails */
    bool cancel_sent;                /* by this session's own thread, once */
    uint64_t rng;                    /* splitmix64 state, seeded from getrandom */
    char name[SL_LOAD_NAME_MAX];     /* the lock of the grant held */
    char ensured[SL_LOAD_NAME_MAX];  /* rows: the mutex whose row this session made sure of */
    sl_load_lock_kind kind;          /* of the grant held */
    int slot;                        /* rows: the row held */
    char sem_name[SL_LOAD_NAME_MAX]; /* the semaphore this (control) session created */
    int sem_limit;                   /* and its limit */
    char error[600];
} session;

static int failf(session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int failf(session *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, ap);
    va_end(ap);
    return -1;
}

static uint64_t next_random(session *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void new_token(session *s, char *out)
{
    uint64_t a = next_random(s), b = next_random(s);
    snprintf(out, TOKEN_HEX + 1, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

/* FNV-1a over the name (and "#slot" for a semaphore's slot), then a
 * splitmix finaliser so that similar names spread over all 64 bits; in
 * decimal as the bigint that pg_advisory_lock takes. */
static void advisory_key(const char *name, int slot, char *out /* KEY_TEXT */)
{
    char suffix[16] = "";
    uint64_t h = 0xcbf29ce484222325ULL;
    int64_t key;
    const char *p;
    if (slot >= 0)
        snprintf(suffix, sizeof suffix, "#%d", slot);
    for (p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    for (p = suffix; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    h ^= h >> 31;
    memcpy(&key, &h, sizeof key);
    snprintf(out, KEY_TEXT, "%lld", (long long)key);
}

/* ---- running a statement ------------------------------------------------ */

/* Reads the result of the query just sent, watching the interrupt flag
 * while the server has not answered (a blocking advisory lock may wait for
 * long). Returns the first result (NULL when the connection failed). */
static PGresult *await_result(session *s)
{
    PGresult *first = NULL, *r;
    while (PQisBusy(s->conn)) {
        struct pollfd p = {.fd = PQsocket(s->conn), .events = POLLIN, .revents = 0};
        if (atomic_load(&s->interrupted) && !s->cancel_sent) {
            char buf[256];
            PQcancel(s->cancel, buf, sizeof buf);
            s->cancel_sent = true;
        }
        if (poll(&p, 1, WAKE_MS) < 0 && errno != EINTR)
            break;
        if (!PQconsumeInput(s->conn))
            break;
    }
    while ((r = PQgetResult(s->conn)) != NULL) {
        if (!first)
            first = r;
        else
            PQclear(r);
    }
    return first;
}

/* The failure of a statement, in words: ours, the server's or the
 * connection's. */
static int result_fail(session *s, const char *what, const PGresult *r)
{
    const char *msg = r ? PQresultErrorMessage(r) : "";
    size_t n;
    if (atomic_load(&s->interrupted))
        return failf(s, "%s: interrupted", what);
    if (!msg || !*msg)
        msg = PQerrorMessage(s->conn);
    n = strcspn(msg, "\n");
    return failf(s, "%s: %.*s", what, (int)n, msg);
}

/* Runs prepared statement stmt; NULL (after failf) unless it returned
 * status want. The caller clears the result. */
static PGresult *run(session *s, const char *stmt, int n, const char *const *params,
                     ExecStatusType want)
{
    PGresult *r;
    if (atomic_load(&s->interrupted)) {
        failf(s, "%s: interrupted", stmt);
        return NULL;
    }
    if (!PQsendQueryPrepared(s->conn, stmt, n, params, NULL, NULL, 0)) {
        result_fail(s, stmt, NULL);
        return NULL;
    }
    r = await_result(s);
    if (!r || PQresultStatus(r) != want) {
        result_fail(s, stmt, r);
        PQclear(r);
        return NULL;
    }
    return r;
}

/* A one-off statement (setting up and checking a run), not prepared. */
static PGresult *run_sql(session *s, const char *sql, int n, const char *const *params,
                         ExecStatusType want)
{
    PGresult *r;
    if (atomic_load(&s->interrupted)) {
        failf(s, "interrupted");
        return NULL;
    }
    if (!PQsendQueryParams(s->conn, sql, n, NULL, params, NULL, NULL, 0)) {
        result_fail(s, sql, NULL);
        return NULL;
    }
    r = await_result(s);
    if (!r || PQresultStatus(r) != want) {
        result_fail(s, sql, r);
        PQclear(r);
        return NULL;
    }
    return r;
}

/* A statement that returns one boolean: 1 true, 0 false, -1 failed. */
static int run_bool(session *s, const char *stmt, const char *param)
{
    PGresult *r = run(s, stmt, 1, &param, PGRES_TUPLES_OK);
    int rc;
    if (!r)
        return -1;
    if (PQntuples(r) != 1 || PQnfields(r) != 1)
        rc = failf(s, "%s: %d rows", stmt, PQntuples(r));
    else
        rc = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    return rc;
}

/* Sleeps poll_ms between attempts on a taken lock; fails once interrupted. */
static int poll_wait(session *s)
{
    struct timespec ts = {.tv_sec = poll_ms / 1000, .tv_nsec = (long)(poll_ms % 1000) * 1000000L};
    if (atomic_load(&s->interrupted))
        return failf(s, "interrupted while waiting for the lock");
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return atomic_load(&s->interrupted) ? failf(s, "interrupted while waiting for the lock") : 0;
}

/* ---- sessions ----------------------------------------------------------- */

static const char *const advisory_statements[][2] = {
    {"lock", "SELECT pg_advisory_lock($1::bigint)"},
    {"try", "SELECT pg_try_advisory_lock($1::bigint)"},
    {"unlock", "SELECT pg_advisory_unlock($1::bigint)"},
};

static const char *const rows_statements[][2] = {
    {"ensure", "INSERT INTO " SEM_TABLE " (name, slot) VALUES ($1, 0) ON CONFLICT DO NOTHING"},
    {"take", "UPDATE " SEM_TABLE " SET holder = $2 WHERE (name, slot) = "
             "(SELECT name, slot FROM " SEM_TABLE " WHERE name = $1 AND holder IS NULL "
             "LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING slot"},
    {"give", "UPDATE " SEM_TABLE " SET holder = NULL "
             "WHERE name = $1 AND slot = $2::int AND holder = $3"},
};

static int prepare_all(session *s, const char *const (*stmts)[2], size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        PGresult *r = PQprepare(s->conn, stmts[i][0], stmts[i][1], 0, NULL);
        int ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        if (!ok)
            result_fail(s, stmts[i][0], r);
        PQclear(r);
        if (!ok)
            return -1;
    }
    return 0;
}

/* The slots' table, if no session made it yet. Two sluice-loads creating it
 * at once may collide in the catalogue (unique_violation, duplicate_table):
 * then it exists, and the second try finds it. */
static int create_table(session *s)
{
    static const char sql[] = "CREATE TABLE IF NOT EXISTS " SEM_TABLE " (name text NOT NULL, "
                              "slot int NOT NULL, holder text, PRIMARY KEY (name, slot))";
    int attempt;
    for (attempt = 0; attempt < 2; attempt++) {
        PGresult *r = PQexec(s->conn, sql);
        const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
        bool ok = r && PQresultStatus(r) == PGRES_COMMAND_OK;
        bool race = state && (strcmp(state, "23505") == 0 || strcmp(state, "42P07") == 0);
        if (!ok && (!race || attempt == 1))
            result_fail(s, "CREATE TABLE " SEM_TABLE, r);
        PQclear(r);
        if (ok)
            return 0;
        if (!race)
            break;
    }
    return -1;
}

/* NOTICEs ("relation already exists, skipping") would mix with the table. */
static void ignore_notice(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

/* "host:port" (the last colon) becomes a conninfo for the superuser of a
 * throwaway server; anything with '=' or "://" is a conninfo already. */
static int conninfo_of(const char *address, char *out, size_t cap)
{
    char host[256], port[SL_LOAD_PORT_MAX];
    if (strchr(address, '=') || strstr(address, "://"))
        return snprintf(out, cap, "%s", address) < (int)cap ? 0 : -1;
    if (sl_load_address(address, host, sizeof host, port) < 0)
        return -1;
    return snprintf(out, cap,
                    "host=%s port=%s dbname=postgres user=postgres application_name=sluice-load",
                    host, port) < (int)cap
               ? 0
               : -1;
}

static void session_close(void *vs)
{
    session *s = vs;
    if (!s)
        return;
    if (s->cancel)
        PQfreeCancel(s->cancel);
    if (s->conn)
        PQfinish(s->conn);
    free(s);
}

static int setup(session *s)
{
    if (s->variant != PG_ROWS)
        return prepare_all(s, advisory_statements,
                           sizeof advisory_statements / sizeof *advisory_statements);
    if (create_table(s) < 0)
        return -1;
    return prepare_all(s, rows_statements, sizeof rows_statements / sizeof *rows_statements);
}

static int open_variant(pg_variant variant, const char *address, void **out, char *err, size_t cap)
{
    char conninfo[512];
    session *s;
    *out = NULL;
    if (conninfo_of(address, conninfo, sizeof conninfo) < 0) {
        snprintf(err, cap, "\"%s\" is neither HOST:PORT nor a conninfo string", address);
        return -1;
    }
    s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    s->variant = variant;
    atomic_init(&s->interrupted, false);
    if (getrandom(&s->rng, sizeof s->rng, 0) != (ssize_t)sizeof s->rng) {
        snprintf(err, cap, "getrandom: %s", strerror(errno));
        free(s);
        return -1;
    }
    s->conn = PQconnectdb(conninfo);
    if (!s->conn || PQstatus(s->conn) != CONNECTION_OK) {
        snprintf(err, cap, "cannot connect to PostgreSQL at %s: %s", address,
                 s->conn ? PQerrorMessage(s->conn) : "out of memory");
        err[strcspn(err, "\n")] = '\0';
        session_close(s);
        return -1;
    }
    PQsetNoticeProcessor(s->conn, ignore_notice, NULL);
    s->cancel = PQgetCancel(s->conn);
    if (!s->cancel || setup(s) < 0) {
        snprintf(err, cap, "PostgreSQL at %s: %s", address,
                 s->cancel ? s->error : "PQgetCancel failed");
        session_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

static int open_blocking(const char *address, const char *holder, void **out, char *err, size_t cap)
{
    (void)holder; /* the connection, not a name, holds an advisory lock */
    return open_variant(PG_BLOCKING, address, out, err, cap);
}

static int open_poll(const char *address, const char *holder, void **out, char *err, size_t cap)
{
    (void)holder;
    return open_variant(PG_POLL, address, out, err, cap);
}

static int open_rows(const char *address, const char *holder, void **out, char *err, size_t cap)
{
    (void)holder; /* a token per grant says who holds a row */
    return open_variant(PG_ROWS, address, out, err, cap);
}

/* ---- advisory locks ----------------------------------------------------- */

/* One pass over the slots from a random one: the slot taken, or -1 when
 * all are (then 0 is returned), or -1 returned on failure. */
static int try_slots(session *s, const sl_load_lock *lock, int *slot, char *key)
{
    int start = (int)(next_random(s) % (uint64_t)lock->limit), i, rc;
    *slot = -1;
    for (i = 0; i < lock->limit; i++) {
        int k = (start + i) % lock->limit;
        advisory_key(lock->name, k, key);
        if ((rc = run_bool(s, "try", key)) != 0) {
            if (rc > 0)
                *slot = k;
            return rc < 0 ? -1 : 0;
        }
    }
    return 0;
}

/* Fills key (KEY_TEXT) with the key now held. */
static int acquire_advisory(session *s, const sl_load_lock *lock, char *key)
{
    int slot, rc;
    if (lock->kind == SL_LOAD_SEMAPHORE) {
        while ((rc = try_slots(s, lock, &slot, key)) == 0 && slot < 0)
            if (poll_wait(s) < 0)
                return -1;
        return rc;
    }
    advisory_key(lock->name, -1, key);
    if (s->variant == PG_BLOCKING) {
        PGresult *r = run(s, "lock", 1, (const char *const *)&key, PGRES_TUPLES_OK);
        PQclear(r);
        return r ? 0 : -1;
    }
    while ((rc = run_bool(s, "try", key)) == 0)
        if (poll_wait(s) < 0)
            return -1;
    return rc < 0 ? -1 : 0;
}

static int release_advisory(session *s, const char *key)
{
    int rc = run_bool(s, "unlock", key);
    if (rc == 0)
        return failf(s,
                     "pg_advisory_unlock(%s) on %s returned false: this session did not "
                     "hold the lock",
                     key, s->name);
    return rc < 0 ? -1 : 0;
}

/* ---- rows --------------------------------------------------------------- */

/* A mutex is a semaphore of one row, which nobody creates beforehand: its
 * first acquire in this session inserts it unless it exists. */
static int ensure_mutex_row(session *s, const sl_load_lock *lock)
{
    const char *name = lock->name;
    PGresult *r;
    if (strcmp(s->ensured, name) == 0)
        return 0;
    r = run(s, "ensure", 1, &name, PGRES_COMMAND_OK);
    if (!r)
        return -1;
    PQclear(r);
    memcpy(s->ensured, name, strlen(name) + 1);
    return 0;
}

/* One attempt: 1 a row taken (*slot), 0 none free, -1 failed. */
static int take_row(session *s, const sl_load_lock *lock, const char *token, int *slot)
{
    const char *params[2] = {lock->name, token};
    PGresult *r = run(s, "take", 2, params, PGRES_TUPLES_OK);
    char *end;
    long v;
    int rc = 0;
    if (!r)
        return -1;
    if (PQntuples(r) == 1) {
        v = strtol(PQgetvalue(r, 0, 0), &end, 10);
        if (*end || v < 0 || v >= lock->limit)
            rc = failf(s, "take: slot \"%s\" of %s", PQgetvalue(r, 0, 0), lock->name);
        else
            rc = 1;
        *slot = (int)v;
    } else if (PQntuples(r) != 0) {
        rc = failf(s, "take: %d rows updated", PQntuples(r));
    }
    PQclear(r);
    return rc;
}

static int acquire_row(session *s, const sl_load_lock *lock, char *token)
{
    int rc;
    new_token(s, token);
    if (lock->kind == SL_LOAD_MUTEX && ensure_mutex_row(s, lock) < 0)
        return -1;
    while ((rc = take_row(s, lock, token, &s->slot)) == 0)
        if (poll_wait(s) < 0)
            return -1;
    return rc < 0 ? -1 : 0;
}

static int release_row(session *s, const char *token)
{
    char slot[16];
    const char *params[3] = {s->name, slot, token};
    PGresult *r;
    int rc = 0;
    snprintf(slot, sizeof slot, "%d", s->slot);
    r = run(s, "give", 3, params, PGRES_COMMAND_OK);
    if (!r)
        return -1;
    if (strcmp(PQcmdTuples(r), "1") != 0)
        rc = failf(s,
                   "release of %s slot %d updated %s rows, not 1: the row no longer held "
                   "this grant's token",
                   s->name, s->slot, PQcmdTuples(r));
    PQclear(r);
    return rc;
}

/* ---- the backend -------------------------------------------------------- */

static int acquire(void *vs, const sl_load_lock *lock, sl_load_grant *grant)
{
    session *s = vs;
    char handle[TOKEN_HEX + 1 > KEY_TEXT ? TOKEN_HEX + 1 : KEY_TEXT];
    int rc;
    if (strlen(lock->name) >= sizeof s->name)
        return failf(s, "lock name too long");
    if (lock->limit < 1)
        return failf(s, "limit %d", lock->limit);
    rc = s->variant == PG_ROWS ? acquire_row(s, lock, handle) : acquire_advisory(s, lock, handle);
    if (rc < 0)
        return -1;
    memset(grant, 0, sizeof *grant);
    memcpy(grant->handle, handle, strlen(handle) + 1);
    memcpy(s->name, lock->name, strlen(lock->name) + 1);
    s->kind = lock->kind;
    return 0;
}

static int release(void *vs, const sl_load_grant *grant)
{
    session *s = vs;
    if (atomic_load(&s->interrupted))
        return failf(s, "interrupted");
    return s->variant == PG_ROWS ? release_row(s, grant->handle)
                                 : release_advisory(s, grant->handle);
}

/* Rows: the limit's rows, all free. Advisory locks need nothing made; the
 * name and limit are kept for semaphore_delete's check of the slot keys. */
static int semaphore_create(void *vs, const char *name, int limit)
{
    session *s = vs;
    char lim[16];
    const char *params[2] = {name, lim};
    PGresult *r;
    if (strlen(name) >= sizeof s->sem_name)
        return failf(s, "semaphore name too long");
    memcpy(s->sem_name, name, strlen(name) + 1);
    s->sem_limit = limit;
    if (s->variant != PG_ROWS)
        return 0;
    snprintf(lim, sizeof lim, "%d", limit);
    r = run_sql(s,
                "INSERT INTO " SEM_TABLE " (name, slot) "
                "SELECT $1, g FROM generate_series(0, $2::int - 1) AS g",
                2, params, PGRES_COMMAND_OK);
    PQclear(r);
    return r ? 0 : -1;
}

/* "{k0,k1,...}": the slot keys as a bigint[] literal; malloc'd. */
static char *slot_keys(const char *name, int limit)
{
    size_t cap = (size_t)limit * KEY_TEXT + 3, len = 1;
    char *out = malloc(cap), key[KEY_TEXT];
    int i;
    if (!out)
        return NULL;
    out[0] = '{';
    for (i = 0; i < limit; i++) {
        advisory_key(name, i, key);
        len += (size_t)snprintf(out + len, cap - len, "%s%s", i ? "," : "", key);
    }
    snprintf(out + len, cap - len, "}");
    return out;
}

/* A count that a query returns: 0 or -1. */
static int run_count(session *s, const char *sql, int n, const char *const *params, long *out)
{
    PGresult *r = run_sql(s, sql, n, params, PGRES_TUPLES_OK);
    if (!r)
        return -1;
    *out = PQntuples(r) == 1 ? strtol(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return 0;
}

/* After a run every slot must have been given back: no row with a holder,
 * or no advisory lock on a slot key left in pg_locks (a bigint key shows as
 * classid = its high 32 bits, objid = its low 32 bits, objsubid 1). */
static int count_held(session *s, const char *name, long *held)
{
    char *keys;
    int rc;
    if (s->variant == PG_ROWS)
        return run_count(
            s, "SELECT count(*) FROM " SEM_TABLE " WHERE name = $1 AND holder IS NOT NULL", 1,
            &name, held);
    if (strcmp(name, s->sem_name) != 0 || !(keys = slot_keys(name, s->sem_limit)))
        return failf(s, "semaphore %s: not created by this session", name);
    rc = run_count(s,
                   "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1 "
                   "AND ((classid::bigint << 32) | objid::bigint) = ANY($1::bigint[])",
                   1, (const char *const *)&keys, held);
    free(keys);
    return rc;
}

static int semaphore_delete(void *vs, const char *name)
{
    session *s = vs;
    long held = -1;
    PGresult *r;
    if (count_held(s, name, &held) < 0)
        return -1;
    if (held != 0)
        return failf(s, "semaphore %s still has %ld slot(s) taken after the run", name, held);
    if (s->variant != PG_ROWS)
        return 0;
    r = run_sql(s, "DELETE FROM " SEM_TABLE " WHERE name = $1", 1, &name, PGRES_COMMAND_OK);
    PQclear(r);
    return r ? 0 : -1;
}

static void interrupt(void *vs)
{
    session *s = vs;
    char buf[256];
    atomic_store(&s->interrupted, true);
    PQcancel(s->cancel, buf, sizeof buf);
}

static const char *last_error(void *vs)
{
    return ((session *)vs)->error;
}

#define PG_BACKEND(NAME, OPEN)                                                                     \
    {                                                                                              \
        .name = NAME, .tokens = false, .session_open = OPEN, .session_close = session_close,       \
        .semaphore_create = semaphore_create, .semaphore_delete = semaphore_delete,                \
        .acquire = acquire, .release = release, .interrupt = interrupt, .error = last_error,       \
        .history_mark = NULL, .history_check = NULL,                                               \
    }

const sl_load_backend sl_load_backend_postgres = PG_BACKEND("postgres", open_blocking);
const sl_load_backend sl_load_backend_postgres_poll = PG_BACKEND("postgres-poll", open_poll);
const sl_load_backend sl_load_backend_postgres_rows = PG_BACKEND("postgres-rows", open_rows);
