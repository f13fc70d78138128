/* metrics.h - counters and histograms for GET /metrics (Prometheus text).
 *
 * Per-lock limit, used, holders and pending are read from the engine when
 * scraped; what is counted here is what the engine does not remember:
 * claims by outcome, the time claims waited before their grant, HTTP
 * requests by route, method and status, and the store's commit latency.
 * Per-lock wait histograms are the history's (history.h). */
#ifndef SL_SERVER_METRICS_H
#define SL_SERVER_METRICS_H

#include <stddef.h>
#include <stdint.h>


#include "buf.h"
#include "engine.h"
#include "http.h"

#define SL_HIST_BUCKETS 14

typedef struct sl_histogram {
    uint64_t counts[SL_HIST_BUCKETS + 1]; /* per bucket; the last is +Inf */
    uint64_t count;
    double sum; /* seconds */
} sl_histogram;

#define SL_ROUTE_MAX 24
#define SL_STATUS_SLOTS 32 /* distinct (method, status) pairs per route */

typedef struct sl_http_count {
    int status; /* 0: the slot is free */
    sl_http_method method;
    uint64_t count;
} sl_http_count;

typedef struct sl_metrics {
    uint64_t claims_created, claims_acquired;
    uint64_t claims_ended[SL_CANCELED + 1]; /* by final state */
    uint64_t queue_full_rejected, queue_full_dropped; /* max_pending: refused, superseded */
    sl_histogram wait;   /* arrival to grant */
    sl_histogram commit; /* one store transaction */
    uint64_t commits, commit_failures, events_written;
    uint64_t leads, step_downs, relay_retries; /* shared mode */
    uint64_t relay_refused; /* relays refused: the leader was not proven */
    uint64_t conns_refused[SL_HTTP_REFUSED_COUNT]; /* connections closed, by why */
    uint64_t audit_failures, audit_dropped; /* audit log: failed writes, lines dropped */
    sl_http_count http[SL_ROUTE_MAX][SL_STATUS_SLOTS];
} sl_metrics;

/* Route labels, in the order of the http[] rows. */
typedef enum {
    SL_ROUTE_OTHER,
    SL_ROUTE_HEALTHZ,
    SL_ROUTE_METRICS,
    SL_ROUTE_UI,
    SL_ROUTE_SEMAPHORES,
    SL_ROUTE_SEMAPHORE,
    SL_ROUTE_MUTEXES,
    SL_ROUTE_MUTEX,
    SL_ROUTE_CLAIMS,
    SL_ROUTE_CLAIM,
    SL_ROUTE_CLAIM_RENEW,
    SL_ROUTE_CLAIM_WHY,
    SL_ROUTE_QUEUE,
    SL_ROUTE_EVENTS,
    SL_ROUTE_EVENTS_STREAM,
    SL_ROUTE_CLAIM_CANCEL,
    SL_ROUTE_RELAYED, /* shared mode: relayed to the leader */
    SL_ROUTE_STATUS,
    SL_ROUTE_HISTORY,
    SL_ROUTE_WHOAMI,
    SL_ROUTE_COUNT
} sl_route_id;

const char *sl_route_label(sl_route_id r);
void sl_histogram_observe(sl_histogram *h, double seconds);
/* One answer, by route, method (SL_HTTP_OTHER when the request was not
 * read far enough to know it) and status. */
void sl_metrics_http(sl_metrics *m, sl_route_id route, sl_http_method method, int status);
/* "GET", ..., "OTHER": the method label. */
const char *sl_metrics_method_name(sl_http_method method);
/* Counts what a batch's events say happened. */
void sl_metrics_events(sl_metrics *m, const sl_event *events, size_t n);
/* Appends the Prometheus text of everything, the engine's locks included. */
void sl_metrics_render(const sl_metrics *m, const sl_engine *eng, sl_buf *out);

#endif
