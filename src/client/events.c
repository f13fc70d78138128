/* events.c - the event log: pages (GET /v1/events, with its long poll) and
 * the live stream (GET /v1/events/stream, server-sent events).
 *
 * The stream is read as it arrives through curl's write callback. Chunks
 * break anywhere, so the reader keeps the unfinished line (bounded by
 * SL__SSE_LINE_MAX) and the event being assembled (`id:` and `data:` lines
 * until a blank line) across calls. When the stream breaks after it was
 * established, it reconnects from the last event seen, with Last-Event-ID,
 * after the retry pause; so a caller sees every event once, in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* ---- pages -------------------------------------------------------------------- */

int sl_client_events(sl_client *c, uint64_t since, const char *claim, size_t limit, int64_t wait_ms,
                     sl_client_event_page *out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    out->items = NULL;
    out->n = 0;
    out->next = since;
    out->partial = false;
    sl__buf path = {0};
    sl__buf_fmt(&path, "/v1/events?since=%llu", (unsigned long long)since);
    sl__buf_query(&path, "claim", claim);
    if (limit > 0)
        sl__buf_fmt(&path, "&limit=%zu", limit);
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    /* The wait goes on the call, not the path: a failover resumes it. */
    sl__call call = {.method = "GET", .path = path.p, .wait_ms = wait_ms > 0 ? wait_ms : 0};
    json_t *root = NULL;
    int rc = sl__call_json(c, &call, &root, err);
    sl__buf_free(&path);
    const json_t *arr = json_object_get(root, "events");
    const json_t *next = json_object_get(root, "next");
    if (rc == SL_CLIENT_OK && (!json_is_array(arr) || !json_is_integer(next)))
        rc = sl__err_set(err, SL_CLIENT_EPROTO, "the events answer has no \"events\" or \"next\"");
    size_t n = json_array_size(arr);
    if (rc == SL_CLIENT_OK && n > 0) {
        out->items = calloc(n, sizeof(*out->items));
        if (!out->items)
            rc = sl__err_oom(err);
        for (size_t i = 0; out->items && i < n; i++) {
            rc = sl__parse_event(json_array_get(arr, i), &out->items[i], err);
            if (rc != SL_CLIENT_OK) {
                sl_client_event_page_free(out);
                break;
            }
            out->n = i + 1;
        }
    }
    if (rc == SL_CLIENT_OK) {
        out->next = (uint64_t)json_integer_value(next);
        out->partial = json_is_true(json_object_get(root, "partial"));
    }
    json_decref(root);
    return rc;
}

/* ---- the stream ------------------------------------------------------------------ */

typedef struct sse {
    sl_client_event_fn fn;
    void *ud;
    sl_client_error *err;
    sl__buf line; /* the line not yet ended */
    sl__buf data; /* the data lines of the event being assembled */
    bool has_data;
    uint64_t last; /* the seq of the last event handed to fn */
    bool got_event;
    bool done;   /* fn asked to stop */
    int failure; /* a reading failure (ENOMEM, EPROTO), 0 if none */
} sse;

static int sse_fail(sse *s, int rc, const char *what)
{
    if (rc == SL_CLIENT_ENOMEM)
        sl__err_oom(s->err);
    else if (what)
        sl__err_set(s->err, rc, "the event stream: %s", what);
    s->failure = rc;
    return 1;
}

/* A blank line: hands the assembled event to fn. Events at or before the
 * last one seen are skipped (a reconnect may repeat none, but be safe). */
static int sse_dispatch(sse *s)
{
    if (!s->has_data)
        return 0;
    s->has_data = false;
    json_error_t jerr;
    json_t *o = json_loadb(s->data.p ? s->data.p : "", s->data.len, 0, &jerr);
    s->data.len = 0;
    if (!o)
        return sse_fail(s, SL_CLIENT_EPROTO, "an event's data is not JSON");
    sl_client_event ev;
    int rc = sl__parse_event(o, &ev, s->err);
    json_decref(o);
    if (rc != SL_CLIENT_OK)
        return sse_fail(s, rc, NULL);
    int stop = 0;
    if (!s->got_event || ev.seq > s->last) {
        s->got_event = true;
        s->last = ev.seq;
        stop = s->fn(s->ud, &ev);
    }
    sl__event_clear(&ev);
    if (stop) {
        s->done = true;
        return 1;
    }
    return 0;
}

/* One complete line, without its end. */
static int sse_line(sse *s, const char *p, size_t n)
{
    if (n > 0 && p[n - 1] == '\r')
        n--;
    if (n == 0)
        return sse_dispatch(s);
    if (p[0] == ':')
        return 0; /* a comment: the server's heartbeat */
    const char *colon = memchr(p, ':', n);
    size_t flen = colon ? (size_t)(colon - p) : n;
    const char *v = colon ? colon + 1 : p + n;
    size_t vlen = (size_t)(p + n - v);
    if (vlen > 0 && v[0] == ' ') {
        v++;
        vlen--;
    }
    if (flen == 4 && memcmp(p, "data", 4) == 0) {
        if (s->has_data)
            sl__buf_add(&s->data, "\n", 1);
        sl__buf_add(&s->data, v, vlen);
        s->has_data = true;
        if (s->data.oom)
            return sse_fail(
                s, s->data.len + vlen + 2 > SL__RESPONSE_MAX ? SL_CLIENT_EPROTO : SL_CLIENT_ENOMEM,
                "an event is too large");
    }
    /* `id:` repeats the event's seq, which the data carries too; `event:`
     * and `retry:` are not sent by sluiced. */
    return 0;
}

static int sse_feed(void *ud, const char *data, size_t n)
{
    sse *s = ud;
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (s->line.len + take > SL__SSE_LINE_MAX)
            return sse_fail(s, SL_CLIENT_EPROTO, "a line is longer than 1 MiB");
        if (!nl) {
            sl__buf_add(&s->line, data, take);
            return s->line.oom ? sse_fail(s, SL_CLIENT_ENOMEM, NULL) : 0;
        }
        int stop;
        if (s->line.len > 0) {
            sl__buf_add(&s->line, data, take);
            if (s->line.oom)
                return sse_fail(s, SL_CLIENT_ENOMEM, NULL);
            stop = sse_line(s, s->line.p, s->line.len);
            s->line.len = 0;
        } else {
            stop = sse_line(s, data, take);
        }
        if (stop)
            return 1;
        data += take + 1;
        n -= take + 1;
    }
    return 0;
}

int sl_client_events_follow(sl_client *c, uint64_t since, const sl_client_retry *retry,
                            sl_client_event_fn fn, void *ud, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !fn)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and fn must not be NULL");
    sl_client_retry r;
    sl__retry_defaults(retry, &r);
    uint64_t seed = sl__seed(c);
    sse s = {.fn = fn, .ud = ud, .err = err, .last = since, .got_event = true};
    bool established = false;
    sl__failover f; /* until the stream is established */
    sl__failover_start(c, &f, 0);
    int rc;
    for (;;) {
        s.line.len = 0;
        s.data.len = 0;
        s.has_data = false;
        sl__buf path = {0};
        sl__buf_fmt(&path, "/v1/events/stream?since=%llu", (unsigned long long)s.last);
        if (path.oom) {
            sl__buf_free(&path);
            rc = sl__err_oom(err);
            break;
        }
        char last_id[32];
        snprintf(last_id, sizeof(last_id), "%llu", (unsigned long long)s.last);
        sl__request rq = {.method = "GET",
                          .path = path.p,
                          .timeout_ms = -1,
                          .last_event_id = established ? last_id : NULL,
                          .on_body = sse_feed,
                          .ud = &s};
        sl__response res;
        rc = sl__http_do(c, &rq, &res, err);
        sl__buf_free(&path);
        if (s.done) {
            sl__response_free(&res);
            sl__err_clear(err);
            rc = SL_CLIENT_OK;
            break;
        }
        if (s.failure) {
            sl__response_free(&res);
            rc = s.failure;
            break;
        }
        if (res.status >= 200 && res.status < 300)
            established = true;
        if (rc == SL_CLIENT_OK && res.status >= 300) {
            json_t *body = res.len ? json_loadb(res.body, res.len, 0, NULL) : NULL;
            rc = sl__err_from_response(err, res.status, body, res.body);
            json_decref(body);
        }
        sl__response_free(&res);
        if (!established && sl__failover_worth(c, rc, err, true) &&
            sl__failover_next(c, &f, &rc, err))
            continue; /* never established here: the next server of the list */
        if (rc == SL__ESTOPPED || !established || (rc != SL_CLIENT_OK && !sl__transient(rc, err)))
            break;
        /* The stream broke (or the server closed it): pause, then resume,
         * on the next server of a list (this one may be gone for good). */
        if (c->nservers > 1)
            sl__failover_move(c);
        sl__sleep_ms(r.interval_ms + sl__jitter(&seed, r.jitter_ms));
    }
    sl__buf_free(&s.line);
    sl__buf_free(&s.data);
    return rc;
}
