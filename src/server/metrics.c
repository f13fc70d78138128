/* metrics.c - counting and rendering what GET /metrics shows (see metrics.h). */
#include <string.h>

#include "metrics.h"

/* Upper bounds in seconds: lock waits span milliseconds to hours, commits
 * microseconds to a second, so one set of bounds covers both. */
static const double bounds[SL_HIST_BUCKETS] = {0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1,
                                               0.5,    1,      5,     30,    60,   600,  3600};

static const char *const route_labels[SL_ROUTE_COUNT] = {
    "other",         "/healthz",       "/metrics",           "/",
    "/v1/semaphores", "/v1/semaphores/{name}", "/v1/mutexes", "/v1/mutexes/{name}",
    "/v1/claims",    "/v1/claims/{id}", "/v1/claims/{id}/renew", "/v1/claims/{id}/why",
    "/v1/queue",     "/v1/events",     "/v1/events/stream",
    "/v1/claims/{id}/cancel", "relayed", "/v1/status",
    "/v1/history",   "/v1/whoami",
};

const char *sl_route_label(sl_route_id r)
{
    return (unsigned)r < SL_ROUTE_COUNT ? route_labels[r] : "other";
}

void sl_histogram_observe(sl_histogram *h, double seconds)
{
    size_t i = 0;
    while (i < SL_HIST_BUCKETS && seconds > bounds[i])
        i++;
    h->counts[i]++;
    h->count++;
    h->sum += seconds;
}

const char *sl_metrics_method_name(sl_http_method method)
{
    static const char *const names[] = {"GET",   "HEAD",    "POST", "PUT",
                                        "DELETE", "PATCH", "OPTIONS", "OTHER"};
    return (unsigned)method < sizeof(names) / sizeof(names[0]) ? names[method] : "OTHER";
}

void sl_metrics_http(sl_metrics *m, sl_route_id route, sl_http_method method, int status)
{
    sl_http_count *row = m->http[(unsigned)route < SL_ROUTE_COUNT ? route : SL_ROUTE_OTHER];
    for (size_t i = 0; i < SL_STATUS_SLOTS; i++) {
        if ((row[i].status == status && row[i].method == method) || row[i].status == 0) {
            row[i].status = status;
            row[i].method = method;
            row[i].count++;
            return;
        }
    }
    row[SL_STATUS_SLOTS - 1].count++; /* more distinct statuses than slots: lump */
}

void sl_metrics_events(sl_metrics *m, const sl_event *events, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const sl_event *ev = &events[i];
        sl_claim_view v;
        switch (ev->type) {
        case SL_EV_CLAIM_QUEUED:
            m->claims_created++;
            break;
        case SL_EV_CLAIM_ACQUIRED:
            m->claims_acquired++;
            sl_claim_get(ev->claim, &v);
            sl_histogram_observe(&m->wait, (double)(ev->time_ms - v.arrived_ms) / 1000.0);
            break;
        case SL_EV_CLAIM_RELEASED:
        case SL_EV_CLAIM_WITHDRAWN:
        case SL_EV_CLAIM_EXPIRED:
        case SL_EV_CLAIM_TIMED_OUT:
        case SL_EV_CLAIM_SUPERSEDED:
        case SL_EV_CLAIM_CANCELED:
            sl_claim_get(ev->claim, &v);
            if ((unsigned)v.state <= SL_CANCELED)
                m->claims_ended[v.state]++;
            if (ev->reason == SL_REASON_QUEUE_FULL)
                m->queue_full_dropped++;
            break;
        default:
            break;
        }
    }
}

static void render_histogram(sl_buf *out, const char *name, const char *help,
                             const sl_histogram *h)
{
    sl_buf_addf(out, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (size_t i = 0; i < SL_HIST_BUCKETS; i++) {
        cum += h->counts[i];
        sl_buf_addf(out, "%s_bucket{le=\"%g\"} %llu\n", name, bounds[i],
                            (unsigned long long)cum);
    }
    cum += h->counts[SL_HIST_BUCKETS];
    sl_buf_addf(out, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.6f\n%s_count %llu\n", name,
                        (unsigned long long)cum, name, h->sum, name,
                        (unsigned long long)h->count);
}

/* Lock names use only [A-Za-z0-9._-/:=*], none of which needs escaping in a
 * Prometheus label value. */
static void render_locks(sl_buf *out, const sl_engine *eng)
{
    static const char *const series[4][2] = {
        {"sluice_lock_limit", "Slots of the lock."},
        {"sluice_lock_used", "Slots held."},
        {"sluice_lock_holders", "Claims holding the lock."},
        {"sluice_lock_pending", "Claims waiting for the lock."},
    };
    for (int s = 0; s < 4; s++) {
        sl_buf_addf(out, "# HELP %s %s\n# TYPE %s gauge\n", series[s][0], series[s][1],
                            series[s][0]);
        for (const sl_lock *l = sl_lock_next(eng, NULL); l; l = sl_lock_next(eng, l)) {
            sl_lock_view v;
            sl_lock_get(l, &v);
            uint64_t val = s == 0 ? v.limit : s == 1 ? v.used : s == 2 ? v.nholders : v.npending;
            sl_buf_addf(out, "%s{lock=\"%s\"} %llu\n", series[s][0], v.key,
                                (unsigned long long)val);
        }
    }
}

void sl_metrics_render(const sl_metrics *m, const sl_engine *eng, sl_buf *out)
{
    sl_engine_stats st;
    sl_engine_stats_get(eng, &st);
    sl_buf_addf(out,
                        "# HELP sluice_claims Claims the server holds, by state group.\n"
                        "# TYPE sluice_claims gauge\n"
                        "sluice_claims{state=\"pending\"} %zu\n"
                        "sluice_claims{state=\"held\"} %zu\n"
                        "sluice_claims{state=\"ended\"} %zu\n",
                        st.pending, st.held, st.ended);
    sl_buf_addf(out,
                        "# HELP sluice_claims_created_total Claims created.\n"
                        "# TYPE sluice_claims_created_total counter\n"
                        "sluice_claims_created_total %llu\n"
                        "# HELP sluice_claims_acquired_total Claims granted.\n"
                        "# TYPE sluice_claims_acquired_total counter\n"
                        "sluice_claims_acquired_total %llu\n"
                        "# HELP sluice_claims_ended_total Claims ended, by outcome.\n"
                        "# TYPE sluice_claims_ended_total counter\n",
                        (unsigned long long)m->claims_created,
                        (unsigned long long)m->claims_acquired);
    for (int s = SL_RELEASED; s <= SL_CANCELED; s++)
        sl_buf_addf(out, "sluice_claims_ended_total{outcome=\"%s\"} %llu\n",
                            sl_state_name((sl_state)s), (unsigned long long)m->claims_ended[s]);
    sl_buf_addf(out,
                "# HELP sluice_preemptions_total Holders revoked for a waiting claim of higher "
                "priority.\n"
                "# TYPE sluice_preemptions_total counter\n"
                "sluice_preemptions_total %llu\n"
                "# HELP sluice_queue_full_total Claims that found a lock's queue at its "
                "max_pending, by what happened: the new claim refused, or the oldest waiter "
                "superseded.\n"
                "# TYPE sluice_queue_full_total counter\n"
                "sluice_queue_full_total{action=\"rejected\"} %llu\n"
                "sluice_queue_full_total{action=\"dropped\"} %llu\n",
                (unsigned long long)st.preemptions, (unsigned long long)m->queue_full_rejected,
                (unsigned long long)m->queue_full_dropped);
    render_histogram(out, "sluice_claim_wait_seconds", "Time from a claim's arrival to its grant.",
                     &m->wait);
    render_histogram(out, "sluice_store_commit_seconds", "Time of one store transaction.",
                     &m->commit);
    sl_buf_addf(out,
                        "# HELP sluice_store_commits_total Store transactions, by result.\n"
                        "# TYPE sluice_store_commits_total counter\n"
                        "sluice_store_commits_total{result=\"ok\"} %llu\n"
                        "sluice_store_commits_total{result=\"error\"} %llu\n",
                        (unsigned long long)m->commits, (unsigned long long)m->commit_failures);
    sl_buf_addf(out, "# HELP sluice_http_requests_total HTTP requests, by route, method and "
                             "status.\n# TYPE sluice_http_requests_total counter\n");
    for (int r = 0; r < SL_ROUTE_COUNT; r++)
        for (size_t i = 0; i < SL_STATUS_SLOTS && m->http[r][i].status; i++)
            sl_buf_addf(out,
                        "sluice_http_requests_total{route=\"%s\",method=\"%s\",status=\"%d\"} "
                        "%llu\n",
                        route_labels[r], sl_metrics_method_name(m->http[r][i].method),
                        m->http[r][i].status, (unsigned long long)m->http[r][i].count);
    sl_buf_addf(out, "# HELP sluice_http_connections_refused_total Connections closed to keep "
                     "the server's slots, by why.\n"
                     "# TYPE sluice_http_connections_refused_total counter\n");
    for (int w = 0; w < SL_HTTP_REFUSED_COUNT; w++)
        sl_buf_addf(out, "sluice_http_connections_refused_total{reason=\"%s\"} %llu\n",
                    sl_http_refusal_name((sl_http_refusal)w),
                    (unsigned long long)m->conns_refused[w]);
    sl_buf_addf(out,
                "# HELP sluice_audit_write_failures_total Writes to the audit log that failed "
                "(the lines are kept and written again).\n"
                "# TYPE sluice_audit_write_failures_total counter\n"
                "sluice_audit_write_failures_total %llu\n"
                "# HELP sluice_audit_lines_dropped_total Audit lines dropped: 1 MiB of lines "
                "waited for the log already.\n"
                "# TYPE sluice_audit_lines_dropped_total counter\n"
                "sluice_audit_lines_dropped_total %llu\n",
                (unsigned long long)m->audit_failures, (unsigned long long)m->audit_dropped);
    render_locks(out, eng);
}
