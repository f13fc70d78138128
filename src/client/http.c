/* http.c - one HTTP request over libcurl, error answers into
 * sl_client_error, and the escaping of URLs.
 *
 * Every request runs its easy handle through the client's own multi
 * handle: the easy handle keeps the connection alive between requests, and
 * the multi loop lets another thread stop a long poll at once (the keeper's
 * stop sets the flag and calls curl_multi_wakeup) instead of after curl's
 * next progress tick. Bodies are kept up to SL__RESPONSE_MAX bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* How long one curl_multi_poll may sleep before the stop flag is looked at
 * again; a wakeup ends it sooner. */
#define POLL_MS 1000
/* The bytes of a non-JSON error answer quoted in the message. */
#define RAW_QUOTE_MAX 200

/* ---- growable strings ------------------------------------------------------- */

void sl__buf_add(sl__buf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > SL__RESPONSE_MAX) {
        b->oom = true;
        return;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sl__buf_str(sl__buf *b, const char *s)
{
    sl__buf_add(b, s, strlen(s));
}

void sl__buf_fmt(sl__buf *b, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        b->oom = true; /* only short pieces are formatted */
        return;
    }
    sl__buf_add(b, tmp, (size_t)n);
}

void sl__buf_escape(sl__buf *b, const char *s, bool name)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        unsigned char ch = *p;
        bool plain = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
                     (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' || ch == '_' || ch == '~' ||
                     (name && (ch == '/' || ch == ':' || ch == '=' || ch == '*'));
        if (plain) {
            sl__buf_add(b, (const char *)p, 1);
        } else {
            char e[3] = {'%', hex[ch >> 4], hex[ch & 15]};
            sl__buf_add(b, e, 3);
        }
    }
}

void sl__buf_query(sl__buf *b, const char *key, const char *value)
{
    if (!value)
        return;
    bool first = !b->p || !memchr(b->p, '?', b->len);
    sl__buf_str(b, first ? "?" : "&");
    sl__buf_str(b, key);
    sl__buf_str(b, "=");
    sl__buf_escape(b, value, false);
}

void sl__buf_free(sl__buf *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

/* ---- a request ------------------------------------------------------------- */

typedef struct xfer {
    const sl__request *rq;
    CURL *easy;
    sl__buf body;
    bool too_large;
    bool streaming; /* a 2xx answer going to rq->on_body */
    bool stopped_by_reader;
    bool checked_status;
} xfer;

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud)
{
    xfer *x = ud;
    size_t n = size * nmemb;
    if (!x->checked_status) {
        long status = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        x->streaming = x->rq->on_body && status >= 200 && status < 300;
        x->checked_status = true;
    }
    if (x->streaming) {
        if (x->rq->on_body(x->rq->ud, data, n) != 0) {
            x->stopped_by_reader = true;
            return 0; /* curl ends the transfer with CURLE_WRITE_ERROR */
        }
        return n;
    }
    sl__buf_add(&x->body, data, n);
    if (x->body.oom) {
        x->too_large = x->body.len + n + 1 > SL__RESPONSE_MAX;
        return 0;
    }
    return n;
}

static bool stop_requested(const sl_client *c)
{
    return c->stop && atomic_load(c->stop) != 0;
}

/* Drives the easy handle through the multi handle until it is done, or the
 * stop flag is set (then SL__ESTOPPED). *result is curl's verdict. */
static int run(sl_client *c, CURLcode *result)
{
    if (curl_multi_add_handle(c->multi, c->easy) != CURLM_OK)
        return SL_CLIENT_ENOMEM;
    int rc = SL_CLIENT_OK;
    *result = CURLE_OK;
    for (;;) {
        if (stop_requested(c)) {
            rc = SL__ESTOPPED;
            break;
        }
        int running = 0;
        CURLMcode mc = curl_multi_perform(c->multi, &running);
        if (mc != CURLM_OK) {
            rc = mc == CURLM_OUT_OF_MEMORY ? SL_CLIENT_ENOMEM : SL_CLIENT_ECONNECT;
            *result = CURLE_RECV_ERROR;
            break;
        }
        int left = 0;
        CURLMsg *msg;
        bool done = false;
        while ((msg = curl_multi_info_read(c->multi, &left)) != NULL) {
            if (msg->msg == CURLMSG_DONE && msg->easy_handle == c->easy) {
                *result = msg->data.result;
                done = true;
            }
        }
        if (done || running == 0)
            break;
        if (curl_multi_poll(c->multi, NULL, 0, POLL_MS, NULL) != CURLM_OK) {
            rc = SL_CLIENT_ENOMEM;
            break;
        }
    }
    curl_multi_remove_handle(c->multi, c->easy);
    return rc;
}

/* Sets the easy handle up for rq. Returns CURLE_OK or the first failure. */
static CURLcode setup(sl_client *c, const sl__request *rq, const char *url,
                      struct curl_slist *headers, xfer *x)
{
    CURL *e = c->easy;
    CURLcode r = CURLE_OK;
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (r == CURLE_OK)                                                                         \
            r = curl_easy_setopt(e, opt, val);                                                     \
    } while (0)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_NOSIGNAL, 1L);
    if (c->cacert)
        SET(CURLOPT_CAINFO, c->cacert);
    if (c->cert)
        SET(CURLOPT_SSLCERT, c->cert);
    if (c->key)
        SET(CURLOPT_SSLKEY, c->key);
    SET(CURLOPT_USERAGENT, "libsluice/" SL_CLIENT_VERSION);
    SET(CURLOPT_HTTPHEADER, headers);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, x);
    SET(CURLOPT_ERRORBUFFER, c->curl_err);
    SET(CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    long timeout = rq->timeout_ms == 0  ? c->request_timeout_ms
                   : rq->timeout_ms < 0 ? 0L
                                        : rq->timeout_ms;
    SET(CURLOPT_TIMEOUT_MS, timeout);
    if (rq->timeout_ms < 0) {
        /* A stream: the server writes a comment every 15 s, so a minute of
         * silence means the connection is dead even if TCP has not said so. */
        SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
        SET(CURLOPT_LOW_SPEED_TIME, 60L);
    }
    if (strcmp(rq->method, "GET") == 0) {
        SET(CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(rq->method, "POST") != 0)
            SET(CURLOPT_CUSTOMREQUEST, rq->method);
        if (rq->body || strcmp(rq->method, "DELETE") != 0) {
            const char *b = rq->body ? rq->body : "";
            SET(CURLOPT_POSTFIELDS, b);
            SET(CURLOPT_POSTFIELDSIZE, (long)strlen(b));
        }
    }
#undef SET
    return r;
}

/* Said to any program that links the library: no word of the CLI's --server
 * (sluice adds its own hint, cli_fail). */
static int connect_error(sl_client *c, CURLcode r, sl_client_error *err)
{
    const char *why = c->curl_err[0] ? c->curl_err : curl_easy_strerror(r);
    return sl__err_set(err, SL_CLIENT_ECONNECT,
                       "cannot reach the sluice server at %s: %s (is sluiced running, "
                       "at that URL?)",
                       c->server, why);
}

/* Whether a failed transfer surely never reached a server: the name did
 * not resolve, the connection was refused or timed out. Anything later
 * (a reset, no answer) may have been read and acted on. */
static bool never_sent(sl_client *c, CURLcode r)
{
    if (r == CURLE_COULDNT_CONNECT || r == CURLE_COULDNT_RESOLVE_HOST ||
        r == CURLE_COULDNT_RESOLVE_PROXY)
        return true;
    curl_off_t connected = 0;
    curl_easy_getinfo(c->easy, CURLINFO_CONNECT_TIME_T, &connected);
    return r == CURLE_OPERATION_TIMEDOUT && connected == 0;
}

/* Retry-After in seconds, as 503s carry it; -1 when absent or a date. */
static int64_t retry_after(sl_client *c)
{
#if LIBCURL_VERSION_NUM >= 0x075300 /* curl_easy_header, 7.83 */
    struct curl_header *h = NULL;
    if (curl_easy_header(c->easy, "Retry-After", 0, CURLH_HEADER, -1, &h) != CURLHE_OK || !h)
        return -1;
    char *end;
    long secs = strtol(h->value, &end, 10);
    if (end == h->value || *end || secs < 0 || secs > 3600)
        return -1;
    return (int64_t)secs * 1000;
#else
    (void)c;
    return -1;
#endif
}

/* Maps curl's verdict on a transfer that got no complete answer. */
static int curl_failure(sl_client *c, CURLcode r, const xfer *x, sl_client_error *err)
{
    c->unsent = never_sent(c, r);
    int tls = sl__tls_failure(c, r, err);
    if (tls != SL_CLIENT_OK)
        return tls;
    switch (r) {
    case CURLE_OUT_OF_MEMORY:
        return sl__err_oom(err);
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return sl__err_set(err, SL_CLIENT_EINVAL, "the server URL %s is not usable: %s", c->server,
                           c->curl_err[0] ? c->curl_err : curl_easy_strerror(r));
    case CURLE_OPERATION_TIMEDOUT: {
        curl_off_t connected = 0;
        curl_easy_getinfo(c->easy, CURLINFO_CONNECT_TIME_T, &connected);
        if (connected == 0)
            return connect_error(c, r, err);
        return sl__err_set(err, SL_CLIENT_ETIMEOUT,
                           "the sluice server at %s did not answer in time: %s", c->server,
                           c->curl_err[0] ? c->curl_err : curl_easy_strerror(r));
    }
    case CURLE_WRITE_ERROR:
        if (x->too_large)
            return sl__err_set(err, SL_CLIENT_EPROTO, "the answer from %s is larger than %u bytes",
                               c->server, (unsigned)SL__RESPONSE_MAX);
        if (x->body.oom)
            return sl__err_oom(err);
        return sl__err_set(err, SL_CLIENT_EPROTO, "the answer from %s could not be read",
                           c->server);
    default:
        return connect_error(c, r, err);
    }
}

int sl__http_do(sl_client *c, const sl__request *rq, sl__response *res, sl_client_error *err)
{
    res->status = 0;
    res->body = NULL;
    res->len = 0;
    sl__buf url = {0};
    sl__buf_str(&url, c->server);
    sl__buf_str(&url, rq->path);
    struct curl_slist *headers = NULL, *h;
    char lei[96], idem[160];
#define HEADER(text)                                                                               \
    do {                                                                                           \
        h = curl_slist_append(headers, text);                                                      \
        if (!h)                                                                                    \
            goto oom;                                                                              \
        headers = h;                                                                               \
    } while (0)
    if (url.oom)
        goto oom;
    HEADER(rq->on_body ? "Accept: text/event-stream" : "Accept: application/json");
    HEADER("Expect:"); /* no 100-continue round trip */
    if (rq->body)
        HEADER("Content-Type: application/json");
    if (c->auth_header)
        HEADER(c->auth_header);
    if (rq->last_event_id) {
        snprintf(lei, sizeof(lei), "Last-Event-ID: %s", rq->last_event_id);
        HEADER(lei);
    }
    if (rq->idem_key) {
        snprintf(idem, sizeof(idem), "Idempotency-Key: %s", rq->idem_key);
        HEADER(idem);
    }
#undef HEADER

    curl_easy_reset(c->easy);
    c->curl_err[0] = '\0';
    c->unsent = false;
    c->retry_after_ms = -1;
    xfer x = {.rq = rq, .easy = c->easy};
    CURLcode r = setup(c, rq, url.p, headers, &x);
    int rc;
    if (r != CURLE_OK) {
        rc = r == CURLE_OUT_OF_MEMORY
                 ? sl__err_oom(err)
                 : sl__err_set(err, SL_CLIENT_EINVAL, "libcurl refused an option: %s",
                               curl_easy_strerror(r));
    } else {
        rc = run(c, &r);
        if (rc == SL__ESTOPPED)
            sl__err_set(err, SL__ESTOPPED, "stopped");
        else if (rc == SL_CLIENT_ENOMEM)
            sl__err_oom(err);
        else if (r != CURLE_OK && !(r == CURLE_WRITE_ERROR && x.stopped_by_reader))
            rc = curl_failure(c, r, &x, err);
        else if (x.body.oom)
            rc = sl__err_oom(err);
    }
    /* The status is kept even when the transfer then failed: a stream that
     * broke had been answered. */
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &res->status);
    if (res->status >= 400)
        c->retry_after_ms = retry_after(c);
    if (rc == SL_CLIENT_OK) {
        res->body = x.body.p;
        res->len = x.body.len;
        x.body.p = NULL;
    }
    sl__buf_free(&x.body);
    /* The easy handle keeps pointers to these until its next reset. */
    curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(headers);
    sl__buf_free(&url);
    return rc;
oom:
    curl_slist_free_all(headers);
    sl__buf_free(&url);
    return sl__err_oom(err);
}

void sl__response_free(sl__response *res)
{
    free(res->body);
    res->body = NULL;
    res->len = 0;
}

/* ---- JSON requests and error answers ---------------------------------------- */

int sl__err_from_response(sl_client_error *err, long status, const json_t *body, const char *raw)
{
    if (!err)
        return SL_CLIENT_EHTTP;
    const json_t *e = json_object_get(body, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *message = json_string_value(json_object_get(e, "message"));
    if (message && *message) { /* an empty one says nothing: as if none */
        sl__err_set(err, SL_CLIENT_EHTTP, "%s", message);
    } else {
        /* Not docs/api.md's error object: a proxy, or libevent's bare 413. */
        int n = 0;
        if (raw)
            while (raw[n] && raw[n] != '\n' && n < RAW_QUOTE_MAX)
                n++;
        sl__err_set(err, SL_CLIENT_EHTTP, "the server answered HTTP %ld%s%.*s", status,
                    n ? ": " : "", n, raw ? raw : "");
    }
    err->status = status;
    if (code)
        snprintf(err->code, sizeof(err->code), "%s", code);
    return SL_CLIENT_EHTTP;
}

int sl__http_json(sl_client *c, const char *method, const char *path, json_t *body, long timeout_ms,
                  json_t **out, sl_client_error *err)
{
    return sl__http_json_idem(c, method, path, body, timeout_ms, NULL, out, err);
}

int sl__http_json_idem(sl_client *c, const char *method, const char *path, json_t *body,
                       long timeout_ms, const char *idem_key, json_t **out, sl_client_error *err)
{
    sl__call call = {.method = method, .path = path, .body = body, .timeout_ms = timeout_ms,
                     .idem_key = idem_key};
    return sl__call_json(c, &call, out, err);
}

/* The path of one attempt: the call's, with what is left of its wait. */
static int attempt_path(const sl__call *call, int64_t wait, sl__buf *path, sl_client_error *err)
{
    sl__buf_str(path, call->path);
    if (wait > 0 && !call->body) {
        char w[32];
        snprintf(w, sizeof(w), "%lldms", (long long)wait);
        sl__buf_query(path, "wait", w);
    }
    return path->oom ? sl__err_oom(err) : SL_CLIENT_OK;
}

/* The body of one attempt, its "wait" set to what is left (a creation
 * sent again waits only the rest; the server compares a retry without
 * its wait). NULL text when the call has no body. */
static int attempt_body(const sl__call *call, int64_t wait, char **text, sl_client_error *err)
{
    *text = NULL;
    if (!call->body)
        return SL_CLIENT_OK;
    int bad = 0;
    if (call->wait_ms > 0 && wait > 0) {
        char w[32];
        snprintf(w, sizeof(w), "%lldms", (long long)wait);
        bad = json_object_set_new(call->body, "wait", json_string(w));
    } else if (call->wait_ms > 0) {
        json_object_del(call->body, "wait"); /* the wait is over: answer at once */
    }
    if (!bad)
        *text = json_dumps(call->body, JSON_COMPACT);
    return *text ? SL_CLIENT_OK : sl__err_oom(err);
}

/* The time an attempt may take: its wait and the slack, else the call's
 * or the client's timeout; with a list, at most SL__ATTEMPT_MAX_MS beyond
 * the wait, so that a server that hangs is left in time for the next. */
static long attempt_timeout(const sl_client *c, const sl__call *call, int64_t wait)
{
    long slack = call->slack_ms > 0 ? call->slack_ms : SL__WAIT_SLACK_MS;
    long t = call->timeout_ms > 0 ? call->timeout_ms : c->request_timeout_ms;
    if (c->nservers > 1) {
        if (slack > SL__ATTEMPT_MAX_MS)
            slack = SL__ATTEMPT_MAX_MS;
        if (t > SL__ATTEMPT_MAX_MS)
            t = SL__ATTEMPT_MAX_MS;
    }
    if (wait > 0 || call->wait_ms > 0)
        return (long)wait + slack;
    return call->timeout_ms > 0 || c->nservers > 1 ? t : 0;
}

/* The answer's JSON into *out and rc (see sl__call_json). */
static int read_answer(const sl__call *call, sl__response *res, json_t **out, sl_client_error *err)
{
    const char *method = call->method, *path = call->path;
    json_t *parsed = NULL;
    json_error_t jerr;
    int rc = SL_CLIENT_OK;
    if (res->len > 0) {
        parsed = json_loadb(res->body, res->len, 0, &jerr);
        if (!parsed && res->status < 400)
            return sl__err_set(err, SL_CLIENT_EPROTO,
                               "the answer to %s %s is not JSON (HTTP %ld, line %d: %s)", method,
                               path, res->status, jerr.line, jerr.text);
    }
    if (res->status >= 400) {
        rc = sl__err_from_response(err, res->status, parsed, res->body);
    } else if (res->status < 200 || res->status >= 300) {
        rc = sl__err_set(err, SL_CLIENT_EPROTO, "unexpected HTTP %ld for %s %s", res->status,
                         method, path);
        json_decref(parsed);
        parsed = NULL;
    } else if (!parsed && res->status != 204) {
        /* A long poll cut short (the server stopping) ends with no body. */
        rc = sl__err_set(err, SL_CLIENT_EPROTO,
                         "the answer to %s %s ended before its body (HTTP %ld)", method, path,
                         res->status);
    }
    *out = parsed;
    return rc;
}

/* One attempt of a call on the current server. */
static int attempt(sl_client *c, const sl__call *call, int64_t wait, json_t **out,
                   sl_client_error *err)
{
    *out = NULL;
    sl__buf path = {0};
    char *text = NULL;
    int rc = attempt_path(call, wait, &path, err);
    if (rc == SL_CLIENT_OK)
        rc = attempt_body(call, wait, &text, err);
    if (rc != SL_CLIENT_OK) {
        sl__buf_free(&path);
        return rc;
    }
    sl__request rq = {.method = call->method, .path = path.p, .body = text,
                      .timeout_ms = attempt_timeout(c, call, wait), .idem_key = call->idem_key};
    sl__response res;
    rc = sl__http_do(c, &rq, &res, err);
    free(text);
    sl__buf_free(&path);
    if (rc == SL_CLIENT_OK)
        rc = read_answer(call, &res, out, err);
    sl__response_free(&res);
    return rc;
}

/* Whether a call may reach the server twice: all but the deletion of a
 * configuration (a second one would answer 404, or delete one made again
 * meanwhile), a release by holder prefix (DELETE /v1/claims?...: a second
 * would count only what the first left, and end claims made meanwhile), a
 * queue's clearing (DELETE /v1/queue?...: likewise) and a creation without
 * an idempotency key. A claim's release and cancel
 * answer an ended claim as it is; renewals and PUTs repeat. */
static bool resendable(const sl__call *call)
{
    if (strcmp(call->method, "DELETE") == 0)
        return strncmp(call->path, "/v1/claims/", 11) == 0;
    if (strcmp(call->method, "POST") == 0 && strcmp(call->path, "/v1/claims") == 0)
        return call->idem_key != NULL;
    return true;
}

int sl__call_json(sl_client *c, const sl__call *call, json_t **out, sl_client_error *err)
{
    sl_client_error local;
    if (!err)
        err = &local; /* the failover reads the answer's code */
    *out = NULL;
    if (c->nservers < 2)
        return attempt(c, call, call->wait_ms, out, err);
    sl__failover f;
    sl__failover_start(c, &f, call->wait_ms);
    bool resend = resendable(call);
    for (int64_t wait = call->wait_ms;; wait = sl__failover_wait_left(&f)) {
        int rc = attempt(c, call, wait, out, err);
        if (rc == SL_CLIENT_OK || !sl__failover_worth(c, rc, err, resend))
            return rc;
        json_decref(*out);
        *out = NULL;
        if (!sl__failover_next(c, &f, &rc, err))
            return rc;
    }
}
