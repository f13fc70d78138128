/* fill.h - filling sluiced with a million claims, fast.
 *
 * The scale run (scale.h) needs `locks` mutexes, each held by one claim
 * with `waiters` claims queued behind it: 10 000 x 101 = 1 010 000 claims.
 * One blocking request at a time per thread would spend more of the
 * machine's two cores waking threads than the server spends creating
 * claims, so each connection here is pipelined (HTTP/1.1): a thread keeps up
 * to `depth` POST /v1/claims in flight on its keep-alive connection, writes
 * them in one send() and reads the answers as they come, in order.
 *
 * A lock belongs to one connection, which creates its claims in order: the
 * server takes a connection's requests in the order they were sent, so the
 * first claim of every lock is answered `held` and every later one
 * `pending`, which is checked on every answer. The claims have no wait, no
 * lease and no timeout: they stay as they are until released.
 *
 * This speaks HTTP on its own socket, with the push parser of http.h, rather
 * than through sl_http_conn, which sends one request at a time. */
#ifndef SL_BENCH_FILL_H
#define SL_BENCH_FILL_H

#include <stdint.h>

#include "backend.h"

#define SL_FILL_ID_MAX 48

/* What the scale run keeps of each lock's claims, to check them later. */
typedef struct sl_fill_lock {
    char holder[SL_FILL_ID_MAX]; /* the held claim's id */
    char second[SL_FILL_ID_MAX]; /* the first waiter: next in line */
    char last[SL_FILL_ID_MAX];   /* the last waiter: position == waiters */
    uint64_t token;              /* the holder's fencing token */
} sl_fill_lock;

typedef struct sl_fill_config {
    const char *address; /* "host:port" of sluiced */
    const char *prefix;  /* lock i is the mutex PREFIX/m-i */
    int locks, waiters;  /* waiters >= 1 */
    int connections;     /* threads, one connection each */
    int depth;           /* requests in flight per connection */
} sl_fill_config;

typedef struct sl_fill_result {
    uint64_t created; /* claims answered 201 with the state expected */
    uint64_t held, pending;
    double seconds;
    char error[600]; /* the first failure; "" when none */
} sl_fill_result;

/* Creates the claims; out->locks[i] (cfg->locks entries, the caller's)
 * gets lock i's ids and token. 0 when every claim was created as expected,
 * else -1 with out->error. */
int sl_fill_run(const sl_fill_config *cfg, sl_fill_lock *locks, sl_fill_result *out /* OUT */);

#endif
