/* backend_redis.c - the load generator's backend for Redis (hiredis), with
 * the lock recipes that Redis client libraries implement, so that sluice is
 * compared with what people run on Redis rather than with a best case.
 *
 * mutex:     acquire = SET key token NX PX lease, the token random and new
 *            for every grant; while the key is taken, sleep poll_ms and try
 *            again (Redis has no queue: whoever tries first after a release
 *            wins, and a waiter learns of the release only at its next try).
 *            release = a compare-and-delete script, which must return 1:
 *            0 means the key no longer held our token, the lock was lost.
 * semaphore: acquire = a script that drops expired entries from a sorted
 *            set (ZREMRANGEBYSCORE), and if fewer than limit remain
 *            (ZCARD) adds the token with its expiry as the score (ZADD);
 *            else sleep poll_ms and try again. release = ZREM of the token,
 *            which must return 1.
 * No fencing token (grant.token is 0, .tokens false) and no history: the
 * generator checks holders and confirmed releases only.
 *
 * A client holds one grant at a time, so the session remembers which key the
 * grant is on; the grant's handle is the token. The scripts are loaded once
 * per session (SCRIPT LOAD) and run by their SHA, as the libraries do.
 *
 * A rediss:// address speaks TLS (redis_tls.h: our socket and TLS stream,
 * hiredis's command formatting and reply parser); every command goes
 * through command(), which picks the connection. connect_once: the
 * session's connection closed and opened again, then PING. */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "address.h"
#include "backend.h"
#include "redis_tls.h"

/* Above any wait on one command (there are no blocking commands here), so
 * that only a dead server times out. */
#define SOCKET_TIMEOUT_S 45
#define TOKEN_HEX 32 /* 128 random bits: unique among every grant of a run */

static const char unlock_script[] =
    "if redis.call(\"get\",KEYS[1]) == ARGV[1] then return redis.call(\"del\",KEYS[1]) "
    "else return 0 end";
/* ARGV: limit, token, lease ms. The server's clock (TIME) for the scores,
 * so that clients' clocks do not matter; PEXPIRE so that an abandoned set
 * goes away with its last entry. */
static const char sem_acquire_script[] =
    "local t = redis.call('TIME') "
    "local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) "
    "redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now) "
    "if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then "
    "redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2]) "
    "redis.call('PEXPIRE', KEYS[1], ARGV[3]) "
    "return 1 end "
    "return 0";

/* Set by main before any session opens (sl_load_redis_configure). */
static int poll_ms = 10;
static int lease_ms = 30000;

void sl_load_redis_configure(int poll, int lease)
{
    poll_ms = poll;
    lease_ms = lease;
}

typedef struct session {
    redisContext *ctx; /* in clear: hiredis's connection; NULL over TLS */
    sl_resp_tls *tls;  /* over TLS */
    char host[256], port[8];
    int fd;                  /* the socket, for interrupt() from another thread */
    atomic_bool interrupted; /* every later call fails */
    uint64_t rng;            /* splitmix64 state, seeded from getrandom */
    char unlock_sha[41], sem_sha[41];
    char key[SL_LOAD_NAME_MAX]; /* the lock of the grant held */
    sl_load_lock_kind kind;     /* and its kind: a string or a sorted set */
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

/* One command on whichever connection the session has. */
static redisReply *command(session *s, const char *fmt, ...)
{
    va_list ap;
    void *r;
    va_start(ap, fmt);
    r = s->tls ? sl_resp_tls_vcommand(s->tls, fmt, ap) : redisvCommand(s->ctx, fmt, ap);
    va_end(ap);
    return r;
}

static const char *io_error(const session *s)
{
    return s->tls ? sl_resp_tls_error(s->tls) : s->ctx ? s->ctx->errstr : "not connected";
}

/* A command's failure: the connection's (then NULL reply) or Redis's. */
static int reply_fail(session *s, const char *what, const redisReply *r)
{
    if (!r)
        return failf(s, "%s: %s", what, atomic_load(&s->interrupted) ? "interrupted" : io_error(s));
    if (r->type == REDIS_REPLY_ERROR)
        return failf(s, "%s: %s", what, r->str);
    return failf(s, "%s: unexpected reply of type %d", what, r->type);
}

static uint64_t next_random(session *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A fresh token for every grant, as the libraries make one per acquire: a
 * release can then only ever delete its own grant. */
static void new_token(session *s, char *out)
{
    uint64_t a = next_random(s), b = next_random(s);
    snprintf(out, TOKEN_HEX + 1, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static int load_script(session *s, const char *script, char *sha)
{
    redisReply *r = command(s, "SCRIPT LOAD %s", script);
    if (!r || r->type != REDIS_REPLY_STRING || r->len != 40) {
        reply_fail(s, "SCRIPT LOAD", r);
        freeReplyObject(r);
        return -1;
    }
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
    return 0;
}

static void session_close(void *vs)
{
    session *s = vs;
    if (!s)
        return;
    if (s->ctx)
        redisFree(s->ctx);
    sl_resp_tls_free(s->tls);
    free(s);
}

/* In clear: hiredis's connection, s->fd its socket. */
static int connect_plain(session *s, char *err, size_t cap)
{
    struct timeval tv = {.tv_sec = SOCKET_TIMEOUT_S, .tv_usec = 0};
    if (s->ctx)
        redisFree(s->ctx);
    s->ctx = redisConnectWithTimeout(s->host, atoi(s->port), tv);
    if (!s->ctx || s->ctx->err) {
        snprintf(err, cap, "cannot connect to Redis at %s:%s: %s", s->host, s->port,
                 s->ctx ? s->ctx->errstr : "out of memory");
        return -1;
    }
    /* interrupt() may shut down the previous number in a race with a
     * reconnect (connect workloads only): it comes only at the end of a
     * run that failed. */
    s->fd = s->ctx->fd;
    if (redisSetTimeout(s->ctx, tv) != REDIS_OK) {
        snprintf(err, cap, "Redis at %s:%s: %s", s->host, s->port, s->ctx->errstr);
        return -1;
    }
    return 0;
}

static int session_open(const char *address, const char *holder, void **out, char *err, size_t cap)
{
    char host[256], port[SL_LOAD_PORT_MAX];
    session *s;
    bool tls;
    (void)holder; /* the token, not a name, says who holds */
    *out = NULL;
    if (sl_load_url(address, "redis", "rediss", &tls, host, sizeof host, port) < 0) {
        snprintf(err, cap, "\"%s\" is not HOST:PORT, redis://HOST:PORT or rediss://HOST:PORT",
                 address);
        return -1;
    }
    if (tls && !sl_load_tls) {
        snprintf(err, cap, "%s: rediss needs --tls-ca FILE (or --tls-insecure)", address);
        return -1;
    }
    s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    atomic_init(&s->interrupted, false);
    if (getrandom(&s->rng, sizeof s->rng, 0) != (ssize_t)sizeof s->rng) {
        snprintf(err, cap, "getrandom: %s", strerror(errno));
        free(s);
        return -1;
    }
    snprintf(s->host, sizeof s->host, "%s", host);
    snprintf(s->port, sizeof s->port, "%s", port);
    if (tls ? sl_resp_tls_connect(host, port, SOCKET_TIMEOUT_S * 1000, sl_load_tls, &s->tls, err,
                                  cap) < 0
            : connect_plain(s, err, cap) < 0) {
        session_close(s);
        return -1;
    }
    if (load_script(s, unlock_script, s->unlock_sha) < 0 ||
        load_script(s, sem_acquire_script, s->sem_sha) < 0) {
        snprintf(err, cap, "Redis at %s: %s", address, s->error);
        session_close(s);
        return -1;
    }
    *out = s;
    return 0;
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

/* One attempt: 1 held, 0 taken (or full), -1 failed. */
static int try_acquire(session *s, const sl_load_lock *lock, const char *token)
{
    redisReply *r;
    int rc;
    if (lock->kind == SL_LOAD_MUTEX) {
        r = command(s, "SET %s %s NX PX %d", lock->name, token, lease_ms);
        if (r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0)
            rc = 1;
        else if (r && r->type == REDIS_REPLY_NIL)
            rc = 0;
        else
            rc = reply_fail(s, "SET NX", r);
    } else {
        r = command(s, "EVALSHA %s 1 %s %d %s %d", s->sem_sha, lock->name, lock->limit, token,
                    lease_ms);
        if (r && r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
            rc = (int)r->integer;
        else
            rc = reply_fail(s, "semaphore acquire script", r);
    }
    freeReplyObject(r);
    return rc;
}

static int acquire(void *vs, const sl_load_lock *lock, sl_load_grant *grant)
{
    session *s = vs;
    char token[TOKEN_HEX + 1];
    int rc;
    if (strlen(lock->name) >= sizeof s->key)
        return failf(s, "lock name too long");
    new_token(s, token);
    while ((rc = try_acquire(s, lock, token)) == 0)
        if (poll_wait(s) < 0)
            return -1;
    if (rc < 0)
        return -1;
    memset(grant, 0, sizeof *grant);
    memcpy(grant->handle, token, sizeof token);
    memcpy(s->key, lock->name, strlen(lock->name) + 1);
    s->kind = lock->kind;
    return 0;
}

static int release(void *vs, const sl_load_grant *grant)
{
    session *s = vs;
    const char *token = grant->handle;
    bool mutex = s->kind == SL_LOAD_MUTEX;
    redisReply *r;
    int rc = 0;
    if (atomic_load(&s->interrupted))
        return failf(s, "interrupted");
    if (mutex)
        r = command(s, "EVALSHA %s 1 %s %s", s->unlock_sha, s->key, token);
    else
        r = command(s, "ZREM %s %s", s->key, token);
    if (!r || r->type != REDIS_REPLY_INTEGER)
        rc = reply_fail(s, mutex ? "unlock script" : "ZREM", r);
    else if (r->integer != 1)
        rc = failf(s,
                   "the lock was lost: %s %s no longer held this grant's token (its %d ms "
                   "lease ran out, or another client took it)",
                   mutex ? "key" : "sorted set", s->key, lease_ms);
    freeReplyObject(r);
    return rc;
}

/* A semaphore is a sorted set that the first acquire creates: nothing to
 * make, but a key left over by another program would change the run. */
static int semaphore_create(void *vs, const char *name, int limit)
{
    session *s = vs;
    redisReply *r = command(s, "DEL %s", name);
    int rc = 0;
    (void)limit; /* every acquire passes it to the script */
    if (!r || r->type != REDIS_REPLY_INTEGER)
        rc = reply_fail(s, "DEL", r);
    freeReplyObject(r);
    return rc;
}

/* After a run every slot must have been given back. */
static int semaphore_delete(void *vs, const char *name)
{
    session *s = vs;
    redisReply *r = command(s, "ZCARD %s", name);
    int rc = 0;
    if (!r || r->type != REDIS_REPLY_INTEGER)
        rc = reply_fail(s, "ZCARD", r);
    else if (r->integer != 0)
        rc = failf(s, "semaphore %s still has %lld slot(s) taken after the run", name, r->integer);
    freeReplyObject(r);
    if (rc == 0) {
        r = command(s, "DEL %s", name);
        if (!r || r->type != REDIS_REPLY_INTEGER)
            rc = reply_fail(s, "DEL", r);
        freeReplyObject(r);
    }
    return rc;
}

/* shutdown() wakes a thread blocked in a read on the socket; the flag stops
 * one that is sleeping between attempts. */
static void interrupt(void *vs)
{
    session *s = vs;
    atomic_store(&s->interrupted, true);
    if (s->tls)
        sl_resp_tls_interrupt(s->tls);
    else
        shutdown(s->fd, SHUT_RDWR);
}

/* The session's connection closed and opened again (over TLS, offering
 * the previous session when resume is set), then PING. */
static int connect_once(void *vs, bool resume)
{
    session *s = vs;
    redisReply *r;
    int rc;
    if (atomic_load(&s->interrupted))
        return failf(s, "interrupted");
    if (s->tls ? sl_resp_tls_reconnect(s->tls, resume) < 0
               : connect_plain(s, s->error, sizeof s->error) < 0)
        return s->tls ? failf(s, "%s", sl_resp_tls_error(s->tls)) : -1;
    r = command(s, "PING");
    if (r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0)
        rc = s->tls && sl_resp_tls_resumed(s->tls);
    else
        rc = reply_fail(s, "PING", r);
    freeReplyObject(r);
    return rc;
}

static const char *last_error(void *vs)
{
    return ((session *)vs)->error;
}

const sl_load_backend sl_load_backend_redis = {
    .name = "redis",
    .tokens = false,
    .session_open = session_open,
    .session_close = session_close,
    .semaphore_create = semaphore_create,
    .semaphore_delete = semaphore_delete,
    .acquire = acquire,
    .release = release,
    .interrupt = interrupt,
    .error = last_error,
    .history_mark = NULL,
    .history_check = NULL,
    .connect_once = connect_once,
};
