/* history.h - per-lock history for the dashboard's charts: samples of each
 * lock's used slots, holders and pending claims, and the time claims waited
 * for it (docs/api.md, "GET /v1/history").
 *
 * The core is pure: it reads no clock (every call takes the time), does no
 * I/O and knows the engine only through the events and values it is given,
 * so that tests drive it to the millisecond. history_run.c runs it in the
 * server: it feeds it the engine's events, samples on a timer, and rebuilds
 * it from the event log after a restart or a takeover.
 *
 * Samples. Time is cut into steps (10 s; a coarse step is 6 of them, 1 min)
 * aligned on the Unix epoch. The sample at a step boundary T is the lock's
 * state after every event before T. It is computed backward, from the
 * lock's current values (the engine's, when sampling) minus the changes the
 * events at or after T made: the same sum whether the events arrive as they
 * happen or are read back from the log, so a rebuild gives the samples the
 * server had before it stopped. Between samplings each lock keeps the
 * changes per step not yet sampled (a few entries; up to a window's worth
 * while rebuilding).
 *
 * Bounds: SL_HIST_LOCKS_MAX locks at most. A lock is tracked from its first
 * event (or from a sampling that finds it in use); when the table is full
 * a lock makes room: of the tenant tracking the most locks (the newcomer's
 * own tenant on a tie), its least recently active one (an event, or a
 * sampling that found it in use). So one tenant's churn through many locks
 * evicts only its own, never the statistics of a tenant within its share.
 * A lock idle for the whole coarse window is dropped. */
#ifndef SL_SERVER_HISTORY_H
#define SL_SERVER_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "engine.h"
#include "store.h"

#define SL_HIST_STEP_MS 10000     /* the fine step; SLUICE_HISTORY_STEP_MS changes it (tests) */
#define SL_HIST_COARSE_STEPS 6    /* fine steps in a coarse step: 1 min */
#define SL_HIST_FINE_N 360        /* fine samples kept: 1 h */
#define SL_HIST_COARSE_N 1440     /* coarse samples kept: 24 h */
#define SL_HIST_LOCKS_MAX 1000
#define SL_HIST_METRIC_LOCKS 200 /* per-lock wait histograms in /metrics */
/* Waits are counted per slot of time: 60 fine steps (10 min) for the short
 * window, 360 (1 h) for the long one, over the last 6 and 24 slots. */
#define SL_HIST_WAIT_SHORT_STEPS 60
#define SL_HIST_WAIT_SHORT_SLOTS 6
#define SL_HIST_WAIT_LONG_STEPS 360
#define SL_HIST_WAIT_LONG_SLOTS 24
/* Wait buckets: upper bounds in microseconds (1-2-5 from 100 us to 24 h,
 * with every bound of metrics.c's histogram among them), and +Inf. */
#define SL_HIST_WAIT_BOUNDS 29
#define SL_HIST_WAIT_BUCKETS (SL_HIST_WAIT_BOUNDS + 1)

extern const int64_t sl_hist_wait_bounds_us[SL_HIST_WAIT_BOUNDS];

typedef struct sl_hist_vals {
    uint32_t used, holders, pending; /* kept modulo 2^32 (see history.c) */
} sl_hist_vals;

typedef enum { SL_HIST_QUEUED, SL_HIST_ACQUIRED, SL_HIST_ENDED } sl_hist_kind;

/* One claim event as the history needs it. */
typedef struct sl_hist_event {
    int64_t time_ms;
    sl_hist_kind kind;
    bool held;       /* SL_HIST_ENDED: it held its locks until then (else it was pending) */
    int64_t wait_ms; /* SL_HIST_ACQUIRED: from arrival to grant; -1 when not known */
    size_t nlocks;
    const char *const *keys; /* "mtx/NAME", "sem/NAME" */
    const uint32_t *slots;   /* per lock */
} sl_hist_event;

typedef enum { SL_HIST_1H, SL_HIST_24H } sl_hist_window;

/* One lock's waits over a window, summed. */
typedef struct sl_hist_waits {
    uint64_t counts[SL_HIST_WAIT_BUCKETS]; /* per bucket, not cumulative */
    uint64_t count;
    int64_t max_ms; /* -1 when none */
} sl_hist_waits;

typedef struct sl_history sl_history;

/* A history with that fine step, whose windows reach no further back than
 * retention_ms (the event log's: a rebuild could not fill more). */
sl_history *sl_history_new(int64_t step_ms, int64_t retention_ms);
void sl_history_free(sl_history *h);
/* Forgets every lock and starts again at now: the samples from the start
 * of the windows on are to come from a replay of the log (rebuilding), or
 * are taken as idle (nothing happened before). */
void sl_history_reset(sl_history *h, int64_t now, bool rebuilding);
bool sl_history_rebuilding(const sl_history *h);
int64_t sl_history_step(const sl_history *h, sl_hist_window w);
/* Samples the window holds (at most). */
size_t sl_history_capacity(const sl_history *h, sl_hist_window w);

/* Whose a lock is ("mtx/NAME", "sem/NAME"): a tenant's name, "" or NULL
 * for nobody's in particular. Without one every lock is in one tenant. */
typedef const char *(*sl_hist_tenant_fn)(void *ud, const char *key);
void sl_history_set_tenants(sl_history *h, sl_hist_tenant_fn fn, void *ud);
/* Asks the tenant of every tracked lock again (the tokens changed). */
void sl_history_retenant(sl_history *h);

/* Applies an event. live: it happens now (it also counts in the per-lock
 * histograms /metrics shows since the process started); else it is read
 * back from the log. */
void sl_history_event(sl_history *h, const sl_hist_event *ev, bool live);
/* An engine event as it happens (claim events only; others are ignored). */
void sl_history_engine_event(sl_history *h, const sl_event *ev);
/* An event read back from the log, oldest first. arrived looks a claim's
 * arrival up (the engine's, for claims that queued before the log's
 * window) and returns -1 when it does not know; may be NULL. */
typedef int64_t (*sl_hist_arrived_fn)(void *ud, const char *claim);
void sl_history_replay(sl_history *h, const sl_store_event *ev, sl_hist_arrived_fn arrived,
                       void *ud);
/* The replay is over: the samples are computed at the next sampling. */
void sl_history_replay_done(sl_history *h);

/* Whether a step boundary has passed since the last sampling (and the
 * history is not rebuilding): a sampling at now would add samples. */
bool sl_history_due(const sl_history *h, int64_t now);
/* A sampling at now: begin, then the current values of every lock in use
 * (and of any other; a tracked lock not given is taken as idle), then end,
 * which computes the samples of the boundaries up to now. */
void sl_history_sample_begin(sl_history *h);
void sl_history_sample_lock(sl_history *h, const char *key, const sl_hist_vals *now_vals,
                            int64_t now);
void sl_history_sample_end(sl_history *h, int64_t now);

/* Reading: calls fn for each sample of the lock in the window, oldest
 * first (boundaries sampled so far, not the current values); false when
 * the lock is not tracked. */
typedef void (*sl_hist_sample_fn)(void *ud, int64_t time_ms, const sl_hist_vals *v);
bool sl_history_samples(const sl_history *h, const char *key, sl_hist_window w, int64_t now,
                        sl_hist_sample_fn fn, void *ud);
/* The lock's waits in the window ending now (zeros when not tracked). */
void sl_history_waits(const sl_history *h, const char *key, sl_hist_window w, int64_t now,
                      sl_hist_waits *out);
/* The wait under which a fraction q of them fall, in ms: the upper bound of
 * the bucket that holds it, or the longest wait when that is shorter (or
 * the bucket is +Inf); -1 when there is none. */
int64_t sl_hist_waits_quantile(const sl_hist_waits *w, double q);
/* Locks tracked now. */
size_t sl_history_nlocks(const sl_history *h);
/* Prometheus text: sluice_lock_wait_seconds, per lock, since the process
 * started (live grants only: a rebuild adds nothing). Only locks that live
 * says exist keep a series; the counts of the others, and of the locks
 * granted least recently when more than SL_HIST_METRIC_LOCKS have been
 * granted, are summed in lock="other", which is always there. */
typedef bool (*sl_hist_live_fn)(void *ud, const char *key);
void sl_history_render_metrics(sl_history *h, sl_hist_live_fn live, void *ud, sl_buf *out);

#endif
