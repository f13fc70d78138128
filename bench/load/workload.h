/* workload.h - one timed run of clients acquiring and releasing locks.
 *
 * Each client is a thread with its own backend session that loops
 *   acquire (blocks until held) -> hold for no time -> release
 * until the run's end, then finishes the cycle it is in. Three shapes:
 *   uncontended  each client on a mutex of its own;
 *   contended    every client on one mutex;
 *   semaphore    every client on one semaphore of `limit` slots.
 * And two that take no lock and measure what a new connection costs (the
 * backend's connect_once): a cycle is connect, handshake when over TLS,
 * one request, its answer, close:
 *   connect      a full handshake every time;
 *   resume       the TLS session of the client's previous connection
 *                offered (an abbreviated handshake when the server takes it).
 *
 * Timing (CLOCK_MONOTONIC, one clock for every thread):
 *   cycle    from just before acquire() to just after release() returned;
 *   handoff  (mutexes) from just before the holder called release() (it
 *            writes DELETE right after) to just after the next holder's
 *            acquire() returned, counted only when that holder had asked
 *            before the release (it was waiting, not arriving later).
 * Only cycles that end (handoffs that land) inside the measured window
 * count; the warm-up before it and the drain after it do not.
 *
 * Correctness is checked, not assumed, over the whole run:
 *   holders  a counter per lock, incremented when a client learns it holds
 *            and decremented before it releases, never above the limit;
 *   tokens   (when the backend has them) a grant's fencing token is above
 *            every token learnt before it asked, on a mutex above the
 *            previous holder's, and no token is handed out twice on a lock;
 *   history  when the backend keeps one, every grant went to the head of
 *            its lock's FIFO queue and left no more holders than the limit,
 *            and the service counts as many grants as the clients saw.
 * The holders counter only sees overlaps of the instants between learning
 * and releasing (clients hold for no time), so the history is what catches
 * a double grant reliably; the counter costs nothing and needs no history. */
#ifndef SL_BENCH_WORKLOAD_H
#define SL_BENCH_WORKLOAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "backend.h"
#include "histogram.h"

#define SL_WORKLOAD_MAX_CLIENTS 1024

typedef enum {
    SL_WORKLOAD_UNCONTENDED,
    SL_WORKLOAD_CONTENDED,
    SL_WORKLOAD_SEMAPHORE,
    SL_WORKLOAD_CONNECT,
    SL_WORKLOAD_RESUME,
} sl_workload_kind;
#define SL_WORKLOAD_KINDS 5

/* The connect workloads: a new connection per cycle, no lock. */
#define SL_WORKLOAD_IS_CONNECT(k) ((k) == SL_WORKLOAD_CONNECT || (k) == SL_WORKLOAD_RESUME)

typedef struct sl_workload {
    sl_workload_kind kind;
    int clients; /* 1 to SL_WORKLOAD_MAX_CLIENTS */
    int limit;   /* the semaphore's slots; 1 for the mutex workloads */
} sl_workload;

typedef struct sl_load_config {
    const sl_load_backend *backend;
    const char *address; /* where the service listens, as the backend reads it */
    const char *prefix;  /* lock names start with it, so runs never share a lock */
    double warmup_s;     /* before the measured window */
    double duration_s;   /* the measured window */
    pid_t server_pid;    /* for the server's CPU time; 0 when unknown */
} sl_load_config;

typedef struct sl_load_result {
    sl_workload workload;
    double seconds;       /* length of the measured window */
    uint64_t cycles;      /* cycles ended in the window */
    sl_hist cycle;        /* their latencies, ns */
    sl_hist handoff;      /* handoff latencies in the window, ns (mutexes) */
    uint64_t transitions; /* grants in the window that followed another grant (mutexes) */
    uint64_t changes;     /* ... whose holder differed from the previous one */
    uint64_t grants;      /* every grant of the run, warm-up and drain included */
    uint64_t min_client_cycles, max_client_cycles; /* spread of cycles over clients */
    int max_holders;                               /* the most holders of one lock seen at once */
    uint64_t holder_violations;
    uint64_t token_violations;
    uint64_t duplicate_tokens;
    bool tokens_truncated; /* a client saw more grants than it keeps for the duplicate check */
    uint64_t resumed;      /* connect workloads: cycles in the window whose handshake resumed */
    bool history_checked;
    sl_load_history history;
    uint64_t errors; /* failed calls (each stops the run) */
    char first_error[700];
    double load_cpu_s;   /* CPU time of this process in the window; < 0 when cut short */
    double load_user_s;  /* the user-space part of it */
    double server_cpu_s; /* of the server; < 0 when unknown */
} sl_load_result;

/* Runs w against cfg's service. Returns 0 when the run took place (out then
 * says how it went, violations and errors included) or -1 when it could
 * not start (out->first_error says why). out is large (two histograms):
 * allocate it. */
int sl_workload_run(const sl_load_config *cfg, const sl_workload *w, sl_load_result *out);
/* No error and no violation of any check. */
bool sl_load_result_ok(const sl_load_result *r);
/* "uncontended", "contended", "semaphore", "connect", "resume". */
const char *sl_workload_name(sl_workload_kind kind);

#endif
