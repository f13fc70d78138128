/* routes_events.c - GET /v1/events (pages, long poll) and the stream. */
#include <stdlib.h>
#include <string.h>


#include "server.h"

typedef struct page_ctx {
    json_t *events;
    size_t count;
    const sl_event_scope *scope;
    const char *run; /* only this run's claims' events, or NULL */
} page_ctx;

static int add_event(void *ud, const sl_store_event *ev)
{
    page_ctx *p = ud;
    if (!sl_event_scope_allows(p->scope, ev) || (p->run && !sl_holder_of_run(p->run, ev->holder)))
        return SL_STORE_EVENT_SKIP;
    json_array_append_new(p->events, sl_json_event(ev));
    p->count++;
    return 0;
}

/* A page; "partial" when its read stopped at limits.max_event_scan: more
 * may follow its next even though it has fewer than limit events. */
static json_t *page_json(sl_server *srv, json_t *events, uint64_t next)
{
    json_t *page = json_pack("{s:o,s:I}", "events", events, "next", (json_int_t)next);
    if (sl_store_read_partial(srv->store))
        json_object_set_new(page, "partial", json_true());
    return page;
}

/* The seqs of a claim's events, when the engine knows them all: not yet
 * those of a claim restored at a start or a takeover until the history's
 * rebuild has read the log back (history_run.c). */
static const sl_store_seqs *claim_seqs(const sl_server *srv, const sl_claim *claim,
                                       const sl_claim_view *v, uint64_t *buf, sl_store_seqs *at)
{
    if (srv->seqs_arrival && v->arrival < srv->seqs_arrival)
        return NULL;
    at->seq = buf;
    at->n = sl_claim_event_seqs(claim, buf, SL_CLAIM_SEQS_MAX, &at->more);
    return at;
}

json_t *sl_events_page(sl_server *srv, uint64_t since, const char *claim_id, size_t limit,
                       const sl_event_scope *scope, size_t *count)
{
    page_ctx p = {json_array(), 0, scope, NULL};
    uint64_t next = since;
    /* A claim's events lie between its arrival and its end, in the records
     * holding the seqs the engine noted: the read goes to those (a purged
     * claim's: from claim_log's record, docs/store.md). */
    int64_t from_ms = INT64_MIN, to_ms = INT64_MAX;
    const sl_claim *claim = claim_id ? sl_claim_find(srv->eng, claim_id) : NULL;
    const sl_store_seqs *at = NULL;
    sl_store_seqs seqs;
    uint64_t buf[SL_CLAIM_SEQS_MAX];
    if (claim) {
        sl_claim_view v;
        sl_claim_get(claim, &v);
        from_ms = v.arrived_ms;
        if (v.ended_ms >= 0)
            to_ms = v.ended_ms;
        at = claim_seqs(srv, claim, &v, buf, &seqs);
    }
    if (sl_store_claim_events_at(srv->store, since, claim_id, at, from_ms, to_ms, limit, add_event,
                                 &p, &next) != 0) {
        sl_log(SL_LOG_ERROR, "reading the event log failed: %s", sl_store_error(srv->store));
        json_decref(p.events);
        *count = 0;
        return NULL;
    }
    *count = p.count;
    return page_json(srv, p.events, next);
}

/* Claims in memory per event of limits.max_event_scan past which a run's
 * span is not looked for: finding it is one pass over every claim, as
 * long as a read of that many events, and a run=nope loop must not make
 * each request cost that (F2). */
#define RUN_SPAN_CLAIMS_PER_EVENT 10

/* The time a run's events lie in: from its first claim's arrival to its
 * last claim's end (or on, while one lives); the whole log when the engine
 * keeps none of its claims (they were purged: claim_retention), or too
 * many to look through: the read then goes from since, a budget at a time. */
static void run_span(sl_server *srv, const char *run, int64_t *from_ms, int64_t *to_ms)
{
    bool any = false, live = false;
    sl_engine_stats st;
    sl_engine_stats_get(srv->eng, &st);
    if (st.claims / RUN_SPAN_CLAIMS_PER_EVENT > srv->conf->max_event_scan) {
        *from_ms = INT64_MIN;
        *to_ms = INT64_MAX;
        return;
    }
    *from_ms = INT64_MAX;
    *to_ms = INT64_MIN;
    for (const sl_claim *cl = sl_claim_next(srv->eng, NULL); cl; cl = sl_claim_next(srv->eng, cl)) {
        sl_claim_view v;
        sl_claim_get(cl, &v);
        if (!sl_holder_of_run(run, v.holder))
            continue;
        any = true;
        if (v.arrived_ms < *from_ms)
            *from_ms = v.arrived_ms;
        if (v.ended_ms < 0)
            live = true;
        else if (v.ended_ms > *to_ms)
            *to_ms = v.ended_ms;
    }
    if (!any)
        *from_ms = INT64_MIN;
    if (!any || live)
        *to_ms = INT64_MAX;
}

/* GET /v1/events?run=RUN: the events of a run's claims, a page at a time. */
static void run_events(sl_ctx *c, const char *run, uint64_t since, size_t limit)
{
    sl_server *srv = c->srv;
    int64_t from_ms, to_ms;
    run_span(srv, run, &from_ms, &to_ms);
    sl_event_scope *scope = sl_auth_event_scope(c);
    page_ctx p = {json_array(), 0, scope, run};
    uint64_t next = since;
    int rc = sl_store_claim_events(srv->store, since, NULL, from_ms, to_ms, limit, add_event, &p,
                                   &next);
    sl_event_scope_free(scope);
    if (rc != 0) {
        sl_log(SL_LOG_ERROR, "reading the event log failed: %s", sl_store_error(srv->store));
        json_decref(p.events);
        sl_reply_error(c, 503, "unavailable", "the event log cannot be read right now");
        return;
    }
    sl_reply_json(c, 200, page_json(srv, p.events, next));
}

/* The last seq of the committed log: what a reader can see. */
static uint64_t last_seq(const sl_ctx *c)
{
    return c->srv->seq_done > 0 ? c->srv->seq_done - 1 : 0;
}

/* A since= past the end of the log would skip every event up to it once
 * the log got there (a store replaced, a cursor made up): it reads from
 * the end instead, and the page's "next" says where that is. */
static uint64_t clamp_since(const sl_ctx *c, uint64_t since)
{
    uint64_t end = last_seq(c);
    return since > end ? end : since;
}

static void events_get(sl_ctx *c)
{
    static const char *const known[] = {"since", "claim", "run", "limit", "wait", NULL};
    uint64_t since = 0, limit = 1000;
    int64_t wait = 0;
    if (!sl_query_only(c, known) || sl_query_uint(c, "since", UINT64_MAX / 2, &since) != 0 ||
        sl_query_uint(c, "limit", SL_QUERY_LIMIT_MAX, &limit) != 0 ||
        sl_query_duration(c, "wait", &wait) != 0)
        return;
    if (limit == 0)
        limit = 1000;
    const char *claim = sl_query_get(c, "claim"), *run = NULL;
    if (claim && strlen(claim) > SL_ID_MAX) {
        sl_reply_error(c, 400, "bad_request", "claim= is not a claim id");
        return;
    }
    if (!sl_query_run(c, &run))
        return;
    if (run && (claim || wait > 0)) {
        sl_reply_error(c, 400, "bad_request",
                       "run= reads a run's events a page at a time: it takes neither claim= "
                       "(ask for that claim alone) nor wait= (follow the event stream instead)");
        return;
    }
    if (run) {
        run_events(c, run, clamp_since(c, since), (size_t)limit);
        return;
    }
    since = clamp_since(c, since);
    size_t count = 0;
    sl_event_scope *scope = sl_auth_event_scope(c);
    json_t *page = sl_events_page(c->srv, since, claim, (size_t)limit, scope, &count);
    sl_event_scope_free(scope);
    if (!page) {
        sl_reply_error(c, 503, "unavailable", "the event log cannot be read right now");
        return;
    }
    if (wait > c->srv->conf->max_wait_ms)
        wait = c->srv->conf->max_wait_ms;
    /* A partial page (the read stopped at limits.max_event_scan) answers
     * at once, empty or not: its next says where to go on from. */
    if (count == 0 && wait > 0 && !sl_store_read_partial(c->srv->store)) {
        json_decref(page);
        sl_wait_events(c, since, claim, (size_t)limit, wait);
        return;
    }
    sl_reply_json(c, 200, page);
}

void sl_route_events(sl_ctx *c, const char *rest)
{
    bool stream = strcmp(rest, "stream") == 0;
    c->route = stream ? SL_ROUTE_EVENTS_STREAM : SL_ROUTE_EVENTS;
    if (*rest && !stream) {
        sl_reply_error(c, 404, "not_found", "no such endpoint: %s", c->path);
        return;
    }
    if (c->method != SL_HTTP_GET) {
        sl_allow(c, "GET");
        sl_reply_error(c, 405, "method_not_allowed", "%s takes GET", c->path);
        return;
    }
    if (!stream) {
        events_get(c);
        return;
    }
    static const char *const known[] = {"since", NULL};
    uint64_t since = 0;
    if (!sl_query_only(c, known) || sl_query_uint(c, "since", UINT64_MAX / 2, &since) != 0)
        return;
    if (c->head) { /* the stream's headers, and no stream to keep open */
        sl_reply_text(c, 200, "text/event-stream", "", 0);
        return;
    }
    const char *last = sl_http_req_header(c->req, "Last-Event-ID");
    if (last) {
        char *end = NULL;
        unsigned long long v = strtoull(last, &end, 10);
        if (end != last && *end == '\0')
            since = v;
    }
    sl_stream_open(c, clamp_since(c, since));
}
