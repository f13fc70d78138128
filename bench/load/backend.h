/* backend.h - what the load generator asks of a lock service.
 *
 * A workload (workload.c) only ever acquires a lock, holds it, and releases
 * it; a backend turns that into the service's protocol: sluice's HTTP API
 * (backend_sluice.c), Redis lock recipes (backend_redis.c), PostgreSQL
 * advisory locks or etcd later.
 * So that the same workloads, timings and correctness checks run against
 * every service, the interface is small and blocking:
 *
 *  - acquire() returns only once the lock is held (however the service makes
 *    a client wait: a long poll, a blocking command, a watch), or on failure;
 *  - release() returns once the service has confirmed the release.
 *
 * Blocking calls make each load-generator client a thread with one
 * connection, so a back-end is written as plain synchronous code with the
 * service's own client library (hiredis, libpq); the cost of a thread per
 * client shows in the generator's CPU per cycle, which is reported.
 *
 * A session is one client's connection, used by one thread at a time, except
 * for interrupt(), which any thread may call. Every fallible call returns 0
 * or a negative code and leaves the reason, in words, for error(). */
#ifndef SL_BENCH_BACKEND_H
#define SL_BENCH_BACKEND_H

#include <stdbool.h>
#include <stdint.h>

#define SL_LOAD_NAME_MAX 128
#define SL_LOAD_HANDLE_MAX 128

typedef enum { SL_LOAD_MUTEX, SL_LOAD_SEMAPHORE } sl_load_lock_kind;

typedef struct sl_load_lock {
    sl_load_lock_kind kind;
    int limit; /* holders allowed at once: 1 for a mutex */
    char name[SL_LOAD_NAME_MAX];
} sl_load_lock;

/* What acquire() hands to release(). */
typedef struct sl_load_grant {
    uint64_t token;                  /* fencing token; 0 when the service has none */
    char handle[SL_LOAD_HANDLE_MAX]; /* the backend's name for what it holds */
} sl_load_grant;

/* What the service's own history says about a run (for a backend that keeps
 * one): every grant and end on the run's locks, replayed against a FIFO
 * queue and a set of holders per lock. */
typedef struct sl_load_history {
    uint64_t events;       /* history entries read */
    uint64_t grants;       /* grants on the run's locks */
    uint64_t out_of_order; /* grants to a claim that was not first in its lock's queue */
    uint64_t over_limit;   /* grants that made more holders than the lock's limit */
} sl_load_history;

typedef struct sl_load_backend {
    const char *name;
    /* Grants carry fencing tokens (sl_load_grant.token). The generator
     * checks tokens only when they do: Redis lock recipes have none, and a
     * token of 0 on every grant would read as tokens that never grow. */
    bool tokens;
    /* The workloads it has an equivalent for, as a mask of (1u <<
     * sl_workload_kind); 0 means all. A run it has none for is printed as
     * "-" instead of being run. */
    unsigned workloads;
    /* Opens a session to address ("host:port", "http://host:port" or
     * "https://host:port" for sluice; "rediss://" for Redis over TLS) for a holder
     * named holder. On failure *out is NULL and err (cap bytes) says why. */
    int (*session_open)(const char *address, const char *holder, void **out /* OUT */, char *err,
                        size_t cap);
    void (*session_close)(void *s);
    /* Makes semaphore name exist with limit slots before a run, and removes
     * it after. */
    int (*semaphore_create)(void *s, const char *name, int limit);
    int (*semaphore_delete)(void *s, const char *name);
    /* Blocks until lock is held (one slot of a semaphore); fills *grant. */
    int (*acquire)(void *s, const sl_load_lock *lock, sl_load_grant *grant /* OUT */);
    int (*release)(void *s, const sl_load_grant *grant);
    /* From any thread: a blocked acquire or release on s fails soon, and so
     * does every later call. */
    void (*interrupt)(void *s);
    /* The last failure in words; valid until the next call on s. */
    const char *(*error)(void *s);
    /* Optional (NULL when the service keeps no history): a position in the
     * history before a run, and the check of what came after it on locks. */
    int (*history_mark)(void *s, uint64_t *mark /* OUT */);
    int (*history_check)(void *s, uint64_t mark, const sl_load_lock *locks, int nlocks,
                         sl_load_history *out /* OUT */);
    /* Optional (NULL: the connect workloads have no equivalent): one request
     * on a new connection: connect, handshake when over TLS, one request
     * (sluice: GET /healthz; Redis: PING), its answer, close. resume: offer
     * the TLS session of the session's previous connection. 1 when the
     * handshake resumed a session, 0 when it did not (or in clear), or a
     * negative code. */
    int (*connect_once)(void *s, bool resume);
} sl_load_backend;

typedef struct sl_tls_client sl_tls_client; /* tls.h */
/* Whom https:// and rediss:// addresses are checked against: set by main
 * before any session opens; NULL refuses such addresses. */
extern sl_tls_client *sl_load_tls;

extern const sl_load_backend sl_load_backend_sluice;
/* Built only when hiredis was found (SL_LOAD_HAVE_REDIS). */
extern const sl_load_backend sl_load_backend_redis;
/* The Redis recipes' two knobs, for every later session: how long to sleep
 * between attempts on a taken lock, and the lease (PX) of a grant. */
void sl_load_redis_configure(int poll_ms, int lease_ms);
/* etcd over its JSON gateway (backend_etcd.c): a lease and a transaction,
 * as client libraries' simple lock (etcd), and etcd's lock API (etcd-lock). */
extern const sl_load_backend sl_load_backend_etcd;
extern const sl_load_backend sl_load_backend_etcd_lock;
/* Their knobs, for every later session: poll_ms > 0 waits for a taken lock
 * by sleeping between attempts instead of watching (etcd only), and the TTL
 * of each session's lease in seconds. */
void sl_load_etcd_configure(int poll_ms, int lease_ttl_s);
/* Built only when libpq was found (SL_LOAD_HAVE_PG): PostgreSQL advisory
 * locks, blocking or polled, and a table of semaphore slots (backend_pg.c). */
extern const sl_load_backend sl_load_backend_postgres;
extern const sl_load_backend sl_load_backend_postgres_poll;
extern const sl_load_backend sl_load_backend_postgres_rows;
/* Their one knob: how long to sleep between attempts on a taken lock. */
void sl_load_pg_configure(int poll_ms);

#endif
