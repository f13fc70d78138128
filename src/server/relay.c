/* relay.c - a request that this server does not lead for, relayed to the
 * leader over HTTP and its answer relayed back (shared mode).
 *
 * A relay is a small HTTP/1.1 client on the loop: one connection to the
 * leader per request (Connection: close), the answer read with llhttp and
 * given to the client as it came: the same status, the same body, byte for
 * byte, and the leader's headers but the hop-by-hop ones. An answer is
 * relayed whole once it has all arrived (a long poll's too), except the
 * event stream, which is relayed chunk by chunk.
 *
 * When there is no leader to send to (an election, a leader that stopped
 * answering) the relay waits; when the leader goes away before it answered
 * (the connection breaks, a newer epoch is elected) the request is sent
 * again to the next leader. Every request is safe to send twice except
 * DELETE of a semaphore or mutex configuration: claims are created with an
 * Idempotency-Key (the relay adds one when the client gave none, so a
 * claim committed just before a crash is found again, never doubled),
 * releases, cancels and renewals of an ended claim answer it as it is,
 * configurations are set to the same values, reads read. A long poll sent
 * again waits only what is left of its wait; an event stream resumes after
 * the last event it relayed. A wait for a leader ends after
 * SL_RELAY_HOLD_MS with 503 and Retry-After.
 *
 * The leader is whatever URL the database names, so it is proven before it
 * gets a byte of the request (F10: the client's token goes with it). With
 * cluster.ca the relay speaks TLS only, and the leader's certificate must
 * chain to that CA and name the URL's host; a plain http:// leader, or one
 * whose handshake fails so, gets nothing, and the client 503
 * leader_unverified; so does a leader that refuses this server's own
 * certificate. Without it (no tokens, or cluster.insecure) the relay goes
 * as the URL says. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <llhttp.h>

#include "duration.h"
#include "server.h"
#include "tls_client.h"

#define RELAY_BODY_MAX (512u << 20) /* an answer bigger than this is refused (502) */
#define RELAY_HEADERS_MAX 16384

typedef enum { RL_WAITING, RL_SENDING, RL_READING, RL_STREAMING } rl_state;

struct sl_relay {
    sl_server *srv;
    sl_http_req *down;
    sl_relay *prev, *next; /* srv->relays */
    rl_state st;
    int fd;
    struct event *ev;
    sl_tls_conn *tls;      /* the leader over TLS; NULL: plain */
    bool handshaking;      /* ... and it is not proven yet: nothing is sent */
    uint64_t epoch;        /* of the leader it was sent to */
    sl_buf out;            /* the request, as sent */
    llhttp_t parser;
    sl_buf hdrs;           /* the answer's headers: "name\0value\0" pairs */
    size_t hdr_bytes;
    bool in_value;
    sl_buf body;
    bool complete;         /* the answer's message ended */
    bool got_bytes;        /* some of the answer arrived */
    bool streamed;         /* the client's stream has started */
    bool retryable;
    bool paused;           /* stream: the client's side is full */
    bool retry_leader;     /* the answer said: not the leader, try the next */
    char idem[48];         /* the key the relay added, "" when the client gave one */
    uint64_t last_id;      /* stream: the last event id relayed */
    int64_t hold_until;    /* monotonic ms: give up waiting for a leader */
    int64_t wait_end;      /* monotonic ms: the end of the client's long poll; -1 none */
    unsigned sends;        /* times the request was sent */
    int64_t answer_by;     /* monotonic ms: the leader's answer is late after it */
    bool parsing;          /* inside llhttp_execute: the relay must not be freed */
    bool client_left;      /* ... and the client went away meanwhile */
    bool cut;              /* end the client's answer short (sl_http_stream_abort) */
    int first_status;      /* the status the client got, once streamed */
};

static llhttp_settings_t settings;

static int64_t mono_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* ---- the request ----------------------------------------------------------- */

static bool is_stream(const sl_http_req *req)
{
    const char *t = sl_http_req_target(req);
    return strncmp(t, "/v1/events/stream", 17) == 0 && (t[17] == '\0' || t[17] == '?');
}

/* The target with key's value replaced (or key added) when value is not
 * NULL; the parameter dropped when it is. */
static void put_target(sl_buf *out, const char *target, const char *key, const char *value)
{
    const char *q = strchr(target, '?');
    size_t klen = strlen(key);
    sl_buf_add(out, target, q ? (size_t)(q - target) : strlen(target));
    char sep = '?';
    for (const char *p = q ? q + 1 : NULL; p && *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (!(n > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') &&
            !(n == klen && strncmp(p, key, klen) == 0) && n) {
            sl_buf_add(out, &sep, 1);
            sl_buf_add(out, p, n);
            sep = '&';
        }
        p = end ? end + 1 : NULL;
    }
    if (value) {
        sl_buf_addf(out, "%c%s=%s", sep, key, value);
    }
}

/* The client's wait, from the target's wait= (absent or bad: -1). */
static int64_t client_wait_ms(const char *target)
{
    const char *q = strchr(target, '?');
    for (const char *p = q ? q + 1 : NULL; p && *p;) {
        const char *end = strchr(p, '&');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        if (n > 5 && strncmp(p, "wait=", 5) == 0 && n - 5 < 32) {
            char v[32];
            memcpy(v, p + 5, n - 5);
            v[n - 5] = '\0';
            int64_t ms;
            return sl_duration_problem(v) || sl_duration_parse(v, &ms) != 0 ? -1 : ms;
        }
        p = end ? end + 1 : NULL;
    }
    return -1;
}

static void copy_header(sl_buf *out, const sl_http_req *req, const char *name)
{
    const char *v = sl_http_req_header(req, name);
    if (v)
        sl_buf_addf(out, "%s: %s\r\n", name, v);
}

static void build_request(sl_relay *r)
{
    sl_server *srv = r->srv;
    const sl_http_req *req = r->down;
    const char *target = sl_http_req_target(req);
    sl_buf_clear(&r->out);
    sl_buf_addf(&r->out, "%s ", sl_http_req_method_name(req));
    char num[32];
    if (r->streamed && is_stream(req)) {
        snprintf(num, sizeof(num), "%" PRIu64, r->last_id);
        put_target(&r->out, target, "since", num);
    } else if (r->wait_end >= 0 && r->sends > 0) {
        int64_t left = r->wait_end - mono_ms();
        snprintf(num, sizeof(num), "%" PRId64 "ms", left > 0 ? left : 0);
        put_target(&r->out, target, "wait", num);
    } else {
        sl_buf_adds(&r->out, target);
    }
    sl_buf_addf(&r->out, " HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nSluice-Forwarded: %s\r\n",
                srv->leader_host, srv->advertise);
    copy_header(&r->out, req, "Authorization");
    sl_forward_headers(srv, req, &r->out);
    copy_header(&r->out, req, "Content-Type");
    copy_header(&r->out, req, "Accept");
    copy_header(&r->out, req, "User-Agent");
    if (!(r->streamed && is_stream(req)))
        copy_header(&r->out, req, "Last-Event-ID");
    if (r->idem[0])
        sl_buf_addf(&r->out, "Idempotency-Key: %s\r\n", r->idem);
    else
        copy_header(&r->out, req, "Idempotency-Key");
    size_t n = 0;
    const char *body = sl_http_req_body(req, &n);
    sl_http_method m = sl_http_req_method(req);
    if (n || m == SL_HTTP_POST || m == SL_HTTP_PUT || m == SL_HTTP_PATCH)
        sl_buf_addf(&r->out, "Content-Length: %zu\r\n", n);
    sl_buf_add(&r->out, "\r\n", 2);
    sl_buf_add(&r->out, body, n);
}

/* ---- the answer ------------------------------------------------------------- */

static bool hop_by_hop(const char *name)
{
    static const char *const skip[] = {"connection", "keep-alive", "transfer-encoding",
                                       "content-length", "content-type", "date", "server",
                                       "proxy-connection", "trailer", "upgrade"};
    for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
        if (strcasecmp(name, skip[i]) == 0)
            return true;
    return false;
}

/* The leader's headers onto the client's answer; its Content-Type, and
 * its Content-Length (for a HEAD, whose answer has no body to count). */
static const char *pass_headers(sl_relay *r, size_t *length)
{
    const char *ctype = NULL;
    const char *p = sl_buf_data(&r->hdrs), *end = p + sl_buf_size(&r->hdrs);
    *length = 0;
    while (p < end) {
        const char *name = p;
        const char *value = name + strlen(name) + 1;
        p = value + strlen(value) + 1;
        if (strcasecmp(name, "content-type") == 0)
            ctype = value;
        else if (strcasecmp(name, "content-length") == 0)
            *length = (size_t)strtoull(value, NULL, 10);
        else if (!hop_by_hop(name))
            sl_http_add_header(r->down, name, value);
    }
    return ctype;
}

static sl_relay *relay_of(llhttp_t *p)
{
    return p->data;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    sl_relay *r = relay_of(p);
    r->hdr_bytes += len;
    if (r->hdr_bytes > RELAY_HEADERS_MAX)
        return -1;
    if (r->in_value) {
        sl_buf_add(&r->hdrs, "", 1);
        r->in_value = false;
    }
    sl_buf_add(&r->hdrs, at, len);
    return 0;
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    sl_relay *r = relay_of(p);
    r->hdr_bytes += len;
    if (r->hdr_bytes > RELAY_HEADERS_MAX)
        return -1;
    if (!r->in_value) {
        sl_buf_add(&r->hdrs, "", 1);
        r->in_value = true;
    }
    sl_buf_add(&r->hdrs, at, len);
    return 0;
}

static bool has_header(sl_relay *r, const char *want)
{
    const char *p = sl_buf_data(&r->hdrs), *end = p + sl_buf_size(&r->hdrs);
    while (p < end) {
        const char *value = p + strlen(p) + 1;
        if (strcasecmp(p, want) == 0)
            return true;
        p = value + strlen(value) + 1;
    }
    return false;
}

static int on_headers_complete(llhttp_t *p)
{
    sl_relay *r = relay_of(p);
    r->hold_until = 0; /* the leader answers: a later failure waits anew */
    if (r->in_value || sl_buf_size(&r->hdrs))
        sl_buf_add(&r->hdrs, "", 1);
    r->in_value = false;
    if (has_header(r, "Sluice-Retry")) {
        r->retry_leader = true; /* not the leader (any more): try the next */
        return 0;
    }
    /* A chunked answer (a long poll, the event stream) goes to the client
     * as it comes: its status and headers now, as the leader sent them.
     * Sent again after a failover, only the new answer's body follows. */
    if (r->streamed && p->status_code != r->first_status) {
        /* The client has the first answer's status; a body under another
         * would lie: cut its answer short, and it asks again. */
        r->client_left = true;
        r->cut = true;
        return -1;
    }
    if (r->streamed || (p->flags & F_CHUNKED)) {
        if (!r->streamed) {
            size_t length; /* chunked: none */
            const char *ctype = pass_headers(r, &length);
            sl_http_stream_start(r->down, (int)p->status_code, ctype);
            r->streamed = true;
            r->first_status = p->status_code;
        }
        r->st = RL_STREAMING;
    }
    return sl_http_req_method(r->down) == SL_HTTP_HEAD ? 1 : 0;
}

/* The event stream goes to the client an event at a time, whole: a leader
 * that dies in the middle of one leaves no half event behind, and the
 * stream resumes after the last whole one (its "id: N" line). */
static void relay_whole_events(sl_relay *r)
{
    const char *p = sl_buf_data(&r->body);
    size_t n = sl_buf_size(&r->body), end = 0;
    for (size_t i = 1; i < n; i++)
        if (p[i] == '\n' && p[i - 1] == '\n')
            end = i + 1;
    if (!end)
        return;
    for (size_t i = 0; i < end; i = (size_t)((const char *)memchr(p + i, '\n', end - i) - p) + 1)
        if (end - i > 3 && strncmp(p + i, "id:", 3) == 0)
            r->last_id = strtoull(p + i + 3 + (p[i + 3] == ' '), NULL, 10);
    sl_http_stream_chunk(r->down, p, end);
    sl_buf_consume(&r->body, end);
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    sl_relay *r = relay_of(p);
    if (r->client_left)
        return -1; /* stop: nobody reads it */
    if (r->retry_leader)
        return 0;
    if (sl_buf_size(&r->body) + len > RELAY_BODY_MAX)
        return -1;
    /* Everything else is kept until the answer is whole: a long poll's body
     * (its status has gone out) as much as an answer of known length, so
     * that one sent again after a failover never follows half of another. */
    sl_buf_add(&r->body, at, len);
    if (r->st == RL_STREAMING && is_stream(r->down))
        relay_whole_events(r);
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    relay_of(p)->complete = true;
    return HPE_PAUSED;
}

/* ---- the connection -------------------------------------------------------- */

static void relay_try(sl_relay *r);
static void refused_by_leader(sl_relay *r);
static void client_gone(void *arg);
static void drained(void *arg);

static void close_upstream(sl_relay *r)
{
    if (r->ev) {
        event_free(r->ev);
        r->ev = NULL;
    }
    sl_tls_conn_free(r->tls);
    r->tls = NULL;
    r->handshaking = false;
    if (r->fd >= 0) {
        close(r->fd);
        r->fd = -1;
    }
}

static void relay_free(sl_relay *r)
{
    sl_server *srv = r->srv;
    close_upstream(r);
    if (r->prev)
        r->prev->next = r->next;
    else
        srv->relays = r->next;
    if (r->next)
        r->next->prev = r->prev;
    sl_buf_free(&r->out);
    sl_buf_free(&r->hdrs);
    sl_buf_free(&r->body);
    free(r);
}

static void answer_error(sl_relay *r, int status, const char *code, const char *msg)
{
    sl_buf *b = sl_reply_scratch();
    json_t *body = json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
    sl_json_to_buffer(body, b);
    json_decref(body);
    if (status == 503)
        sl_http_add_header(r->down, "Retry-After", "1");
    sl_metrics_http(&r->srv->metrics, SL_ROUTE_RELAYED, sl_http_req_method(r->down), status);
    if (r->streamed) { /* the status went out already: cut the answer short */
        close_upstream(r);
        sl_http_stream_abort(r->down);
        relay_free(r);
        return;
    }
    sl_http_reply(r->down, status, "application/json", sl_buf_data(b), sl_buf_size(b));
    relay_free(r);
}

/* The answer arrived whole: to the client. */
static void finish(sl_relay *r)
{
    if (r->st == RL_STREAMING && is_stream(r->down)) {
        /* The leader ended the event stream (it stopped): resume at the next. */
        close_upstream(r);
        r->st = RL_WAITING;
        relay_try(r);
        return;
    }
    if (r->st == RL_STREAMING) { /* a long poll: its body, whole, then the end */
        sl_metrics_http(&r->srv->metrics, SL_ROUTE_RELAYED, sl_http_req_method(r->down),
                        (int)r->parser.status_code);
        sl_http_stream_chunk(r->down, sl_buf_data(&r->body), sl_buf_size(&r->body));
        sl_http_stream_end(r->down);
        relay_free(r);
        return;
    }
    size_t length;
    const char *ctype = pass_headers(r, &length);
    int status = (int)r->parser.status_code;
    sl_metrics_http(&r->srv->metrics, SL_ROUTE_RELAYED, sl_http_req_method(r->down), status);
    if (sl_http_req_method(r->down) == SL_HTTP_HEAD)
        sl_http_reply_head(r->down, status, ctype, length);
    else
        sl_http_reply(r->down, status, ctype, sl_buf_data(&r->body), sl_buf_size(&r->body));
    relay_free(r);
}

/* The leader went away (or was never reached) before the answer ended. */
static void upstream_failed(sl_relay *r, bool reached)
{
    close_upstream(r);
    bool again = r->streamed || r->retryable || !reached;
    if (!again) {
        answer_error(r, 503, "leader_lost",
                     "the leader went away while handling this request, so whether it took "
                     "effect is unknown: read the state before sending it again");
        return;
    }
    r->srv->metrics.relay_retries++;
    r->st = RL_WAITING;
    if (!r->hold_until)
        r->hold_until = mono_ms() + SL_RELAY_HOLD_MS;
    sl_role_wait(r->srv); /* again in SL_RELAY_RETRY_MS, or when the leader changes */
}

static ssize_t up_recv(sl_relay *r, void *buf, size_t n)
{
    return r->tls ? sl_tls_conn_recv(r->tls, buf, n) : recv(r->fd, buf, n, 0);
}

static ssize_t up_send(sl_relay *r, const void *buf, size_t n)
{
    return r->tls ? sl_tls_conn_send(r->tls, buf, n) : send(r->fd, buf, n, MSG_NOSIGNAL);
}

static void on_readable(sl_relay *r)
{
    char buf[16384];
    for (;;) {
        ssize_t n = up_recv(r, buf, sizeof(buf));
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EPROTO && r->tls && !r->got_bytes) {
            refused_by_leader(r);
            return;
        }
        if (n <= 0) {
            if (n == 0 && r->got_bytes && llhttp_finish(&r->parser) == HPE_OK && r->complete &&
                !r->retry_leader) {
                finish(r);
                return;
            }
            upstream_failed(r, true);
            return;
        }
        r->got_bytes = true;
        r->parsing = true;
        llhttp_errno_t e = llhttp_execute(&r->parser, buf, (size_t)n);
        r->parsing = false;
        if (r->client_left) {
            client_gone(r);
            return;
        }
        if (r->retry_leader && (r->complete || e != HPE_OK)) {
            close_upstream(r);
            r->st = RL_WAITING;
            r->hold_until = r->hold_until ? r->hold_until : mono_ms() + SL_RELAY_HOLD_MS;
            sl_role_wait(r->srv);
            return;
        }
        if (e == HPE_PAUSED || r->complete) {
            finish(r);
            return;
        }
        if (e != HPE_OK) {
            answer_error(r, 502, "bad_gateway",
                         "the leader's answer could not be read (malformed or too large)");
            return;
        }
        if (r->st == RL_STREAMING && sl_http_unsent(r->down) > SL_STREAM_BACKLOG_MAX / 4) {
            r->paused = true; /* the client reads slower than the leader writes */
            event_del(r->ev);
            sl_http_on_drained(r->down, drained, r);
            return;
        }
    }
}

static void io_cb(evutil_socket_t fd, short what, void *arg);
static void on_writable(sl_relay *r);

static void watch(sl_relay *r, short what)
{
    event_del(r->ev);
    event_assign(r->ev, r->srv->base, r->fd, what | EV_PERSIST, io_cb, r);
    event_add(r->ev, NULL);
}

/* Whether to log a refusal now: once in a while, as every relay finds the
 * same; sluice_relay_refused_total counts each. */
static bool log_refusal(sl_server *srv)
{
    srv->metrics.relay_refused++;
    int64_t now = mono_ms();
    if (srv->refusal_logged_ms && now - srv->refusal_logged_ms < SL_RELAY_REFUSAL_LOG_MS)
        return false;
    srv->refusal_logged_ms = now;
    return true;
}

/* The leader was not proven: it gets nothing, the client a 503 that says
 * so, the log an error. */
static void refuse(sl_relay *r, const char *why)
{
    sl_server *srv = r->srv;
    if (log_refusal(srv))
        sl_log(SL_LOG_ERROR,
               "relay: the leader named by the database, %s, was not proven to belong to the "
               "cluster (%s): nothing was sent to it, and its requests are answered 503",
               srv->view.leader, why);
    close_upstream(r);
    char msg[512];
    snprintf(msg, sizeof(msg),
             "this server could not prove that the leader belongs to the cluster (%s), so the "
             "request was not sent to it; try another server, and tell an operator (the "
             "servers' logs say more)",
             why);
    answer_error(r, 503, "leader_unverified", msg);
}

/* The leader ended the TLS connection with an alert before any answer: it
 * refused this server's certificate (TLS 1.3 says so after the client's
 * side of the handshake ended). It never read the request; sending it again
 * would meet the same, so the client is told at once. */
static void refused_by_leader(sl_relay *r)
{
    sl_server *srv = r->srv;
    if (log_refusal(srv))
        sl_log(SL_LOG_ERROR,
               "relay: the leader, %s, refused this server's certificate in the TLS handshake: "
               "cluster.cert (or tls.cert) must chain to the leader's cluster.ca; its requests "
               "are answered 503",
               srv->view.leader);
    close_upstream(r);
    answer_error(r, 503, "leader_unverified", /* the servers did not prove each other */
                 "the leader refused this server's certificate, so the request was not sent "
                 "to it; try another server, and tell an operator (the servers' logs say more)");
}

/* A step of the TLS handshake; the request goes only once it succeeded. */
static void handshake(sl_relay *r)
{
    char why[300] = "";
    switch (sl_tls_conn_handshake(r->tls, why, sizeof(why))) {
    case SL_TLS_DONE:
        r->handshaking = false;
        watch(r, EV_WRITE);
        on_writable(r);
        return;
    case SL_TLS_AGAIN:
        watch(r, sl_tls_conn_wants_write(r->tls) ? EV_WRITE : EV_READ);
        return;
    case SL_TLS_BROKEN: /* it died, or is starting: as a connection that failed */
        upstream_failed(r, false);
        return;
    case SL_TLS_REFUSED:
        refuse(r, why);
        return;
    }
}

static void on_writable(sl_relay *r)
{
    while (sl_buf_size(&r->out)) {
        ssize_t n = up_send(r, sl_buf_data(&r->out), sl_buf_size(&r->out));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0) {
            upstream_failed(r, false);
            return;
        }
        sl_buf_consume(&r->out, (size_t)n);
    }
    r->st = r->st == RL_SENDING ? RL_READING : r->st;
    watch(r, EV_READ);
}

static void io_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    sl_relay *r = arg;
    if (r->handshaking)
        handshake(r);
    else if (what & EV_WRITE)
        on_writable(r);
    else if (what & EV_READ)
        on_readable(r);
}

static void drained(void *arg)
{
    sl_relay *r = arg;
    if (r->paused && r->ev) {
        r->paused = false;
        event_add(r->ev, NULL);
        /* Bytes TLS already decrypted bring no event of the socket's. */
        if (r->tls && sl_tls_conn_pending(r->tls))
            event_active(r->ev, EV_READ, 0);
    }
}

static int connect_leader(sl_relay *r)
{
    sl_server *srv = r->srv;
    int fd = socket(srv->leader_addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    if (connect(fd, (struct sockaddr *)&srv->leader_addr, srv->leader_addrlen) != 0 &&
        errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    r->fd = fd;
    if (srv->leader_tls) {
        r->tls = sl_tls_conn_new(srv->peer_tls, fd, srv->leader_name);
        if (!r->tls)
            abort();
        r->handshaking = true;
    }
    r->ev = event_new(srv->base, fd, EV_WRITE | EV_PERSIST, io_cb, r);
    if (!r->ev)
        abort();
    event_add(r->ev, NULL);
    return 0;
}

/* Why the leader the database names may not have the request (NULL: it
 * may, once a TLS leader's certificate proved it in the handshake). */
static const char *unprovable(const sl_server *srv)
{
    if (srv->leader_tls && !srv->peer_tls)
        return "its URL is https:// and this server has no cluster.ca to check its certificate "
               "against";
    if (!srv->leader_tls && sl_tls_client_verifies(srv->peer_tls))
        return "its URL is plain http://, and with cluster.ca this server relays only over TLS";
    return NULL;
}

static void send_to_leader(sl_relay *r)
{
    const char *why = unprovable(r->srv);
    if (why) {
        refuse(r, why);
        return;
    }
    build_request(r);
    r->sends++;
    sl_buf_clear(&r->hdrs);
    sl_buf_clear(&r->body);
    r->hdr_bytes = 0;
    r->in_value = false;
    r->complete = false;
    r->got_bytes = false;
    r->retry_leader = false;
    llhttp_init(&r->parser, HTTP_RESPONSE, &settings);
    r->parser.data = r;
    r->epoch = r->srv->view.epoch;
    /* A leader that accepts the connection and never answers (stopped, or
     * its link to this server frozen while it still leads): given up on
     * after its wait and the hold, checked at each kick (the elector's view
     * changes at least every second: a follower's poll, a leader's beat). */
    int64_t wait = r->wait_end >= 0 ? r->wait_end - mono_ms() : 0;
    r->answer_by = mono_ms() + (wait > 0 ? wait : 0) + SL_RELAY_HOLD_MS;
    r->st = RL_SENDING;
    if (connect_leader(r) != 0) {
        r->st = RL_WAITING;
        r->hold_until = r->hold_until ? r->hold_until : mono_ms() + SL_RELAY_HOLD_MS;
        sl_role_wait(r->srv);
    }
}

/* Sends the request to the leader, or waits for one. */
static void relay_try(sl_relay *r)
{
    sl_server *srv = r->srv;
    int64_t now = mono_ms();
    if (sl_role_leader_known(srv)) {
        send_to_leader(r);
        return;
    }
    if (!r->hold_until)
        r->hold_until = now + SL_RELAY_HOLD_MS;
    if (now >= r->hold_until) {
        if (r->streamed) {
            /* The event stream ends (its client resumes from its last id);
             * a long poll is cut short: an empty body is no answer. */
            if (is_stream(r->down))
                sl_http_stream_end(r->down);
            else
                sl_http_stream_abort(r->down);
            relay_free(r);
            return;
        }
        answer_error(r, 503, "no_leader",
                     "no server leads yet (an election is under way, or the database cannot "
                     "be reached); try again shortly");
        return;
    }
    sl_role_wait(srv);
}

static void client_gone(void *arg)
{
    sl_relay *r = arg;
    if (r->parsing) { /* inside llhttp (a chunk found the client gone): after it */
        r->client_left = true;
        return;
    }
    /* The leader sees the connection close, as it would the client's:
     * a claim's creator that leaves withdraws its claim. */
    close_upstream(r);
    if (r->cut)
        sl_http_stream_abort(r->down);
    else if (r->streamed)
        sl_http_stream_end(r->down);
    else
        sl_http_reply(r->down, 503, NULL, NULL, 0); /* dropped: nobody reads it */
    relay_free(r);
}

static bool retryable(const sl_http_req *req, const char *path)
{
    if (sl_http_req_method(req) != SL_HTTP_DELETE)
        return true;
    return strncmp(path, "/v1/semaphores/", 15) != 0 && strncmp(path, "/v1/mutexes/", 12) != 0;
}

static void settings_once(void)
{
    if (settings.on_header_field)
        return;
    llhttp_settings_init(&settings);
    settings.on_header_field = on_header_field;
    settings.on_header_value = on_header_value;
    settings.on_headers_complete = on_headers_complete;
    settings.on_body = on_body;
    settings.on_message_complete = on_message_complete;
}

void sl_relay_start(sl_server *srv, sl_http_req *req, const char *path)
{
    settings_once();
    sl_relay *r = calloc(1, sizeof(*r));
    if (!r)
        abort();
    r->srv = srv;
    r->down = req;
    r->fd = -1;
    r->retryable = retryable(req, path);
    int64_t wait = client_wait_ms(sl_http_req_target(req));
    r->wait_end = wait >= 0 ? mono_ms() + wait : -1;
    if (sl_http_req_method(req) == SL_HTTP_POST && strcmp(path, "/v1/claims") == 0 &&
        !sl_http_req_header(req, "Idempotency-Key")) {
        uint64_t k[2] = {0, 0};
        if (getrandom(k, sizeof(k), 0) != (ssize_t)sizeof(k))
            k[0] = (uint64_t)mono_ms();
        snprintf(r->idem, sizeof(r->idem), "relay-%016" PRIx64 "%016" PRIx64, k[0], k[1]);
    }
    if (is_stream(req)) { /* where a resumed stream starts, until an event is relayed */
        const char *t = strchr(sl_http_req_target(req), '?');
        const char *since = t ? strstr(t, "since=") : NULL;
        if (since && (since[-1] == '?' || since[-1] == '&'))
            r->last_id = strtoull(since + 6, NULL, 10);
        const char *last = sl_http_req_header(req, "Last-Event-ID");
        if (last)
            r->last_id = strtoull(last, NULL, 10);
    }
    r->next = srv->relays;
    if (r->next)
        r->next->prev = r;
    srv->relays = r;
    sl_http_req_on_gone(req, client_gone, r);
    sl_http_on_drained(req, NULL, NULL);
    relay_try(r);
}

/* The leader changed (or this server's view of it): what waits is sent,
 * what was sent to an older epoch and is not answered is sent again. */
void sl_relay_kick(sl_server *srv)
{
    sl_relay *next;
    for (sl_relay *r = srv->relays; r; r = next) {
        next = r->next;
        if (r->st == RL_WAITING) {
            relay_try(r);
        } else if (r->epoch < srv->view.epoch && r->st != RL_STREAMING) {
            upstream_failed(r, r->st != RL_SENDING || sl_buf_size(&r->out) == 0);
        } else if (r->epoch < srv->view.epoch) {
            close_upstream(r);
            r->st = RL_WAITING;
            relay_try(r);
        } else if (r->st != RL_STREAMING && mono_ms() >= r->answer_by) {
            close_upstream(r);
            answer_error(r, 503, "no_leader",
                         "the leader accepted this request but did not answer in time; it may "
                         "have taken effect: read the state before sending it again");
        }
    }
}

void sl_relay_free_all(sl_server *srv)
{
    while (srv->relays) {
        sl_relay *r = srv->relays;
        sl_http_req_on_gone(r->down, NULL, NULL);
        if (r->streamed) {
            sl_http_stream_end(r->down);
            relay_free(r);
        } else {
            /* unavailable: what clients fail over on (docs/api.md, Errors) */
            answer_error(r, 503, "unavailable",
                         "this server is stopping before the leader answered; send the "
                         "request to another server");
        }
    }
}
