/* scale.h - sluiced with a million pending claims: memory, latency, restart.
 *
 * Issue 5's targets for sluice at size: a million pending claims in under
 * 1 GiB of server memory, per-operation latency with them within 3x of an
 * empty server, and a restart with them serving again in under 5 s. Other
 * services have no equivalent of a million queued waiters that survive a
 * restart in order, so this runs against sluiced only. The phases:
 *
 *  1. empty: the server's resident size (VmRSS of /proc/PID/status), then
 *     the latency runs of workload.h: uncontended claim+release cycles on
 *     a mutex per client, and clients handing one mutex on (contended);
 *  2. fill: `locks` mutexes, each held by one claim with `waiters` claims
 *     queued behind it, created over pipelined connections (fill.h);
 *  3. full: the resident size again (bytes per claim) and the same latency
 *     runs, on other mutexes, with the ratios to the empty server;
 *  4. restart: SIGTERM, then the same binary on the same store; the time
 *     from the fork until GET /healthz answers 200 and a GET of a held
 *     claim answers it held with its token (the server's own log says how
 *     long loading the store took); then the counts of held and pending
 *     claims must be those created, and a sample of claims as they were;
 *  5. crash: the same after SIGKILL (recovery of the SQLite WAL included),
 *     then the latency runs once more: the full server in its steady state,
 *     rather than just after a million inserts;
 *  6. handoff: on some of the loaded mutexes the holder releases, and the
 *     first waiter must then hold it with the next token (FIFO order
 *     survived both restarts): the release latency at a million pending.
 *
 * Without a server started here (sluice-load --server), the restarts are
 * skipped, and the resident sizes too unless --server-pid names it.
 * Checks fail the run (exit status 1); the targets are printed, as
 * information, beside the figures. */
#ifndef SL_BENCH_SCALE_H
#define SL_BENCH_SCALE_H

#include <sys/types.h>

#include "sluiced_spawn.h"

typedef struct sl_scale_config {
    const char *address; /* sluiced's HOST:PORT */
    pid_t server_pid;    /* for its resident size and CPU time; 0 when unknown */
    sl_spawn *spawn;     /* the server started here, restarted by phases 4 and 5; or NULL */
    const char *binary;  /* with spawn: its binary and how it was started */
    sl_spawn_opts spawn_opts;
    const char *prefix;      /* every lock name starts with it */
    int locks, waiters;      /* phase 2 */
    int fill_connections;    /* pipelined connections of the fill */
    int fill_depth;          /* requests in flight on each */
    int clients;             /* uncontended latency run: one mutex each */
    int contended_clients;   /* contended latency run: one mutex for all */
    double warmup_s;         /* of each latency run */
    double duration_s;       /* measured, of each latency run */
    int handoffs;            /* phase 6: loaded mutexes handed on */
} sl_scale_config;

/* Runs the phases, printing each as it ends, then the figures against the
 * targets. Returns 0 when every check passed, 1 when one failed (or a
 * request did), 2 when it could not start. cfg->server_pid and
 * cfg->spawn->pid follow the restarts. */
int sl_scale_run(sl_scale_config *cfg);

#endif
