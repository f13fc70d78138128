/* http_conn.c - one HTTP/1.1 connection: read, parse, hand the request
 * over, answer, write, time out (see http.h for the rules).
 *
 * One request at a time. llhttp pauses at the end of each message, the
 * request (target, headers, body, copied into the request's own buffer)
 * goes to the handler, and the bytes behind it stay unparsed in the input
 * buffer until it is answered; so answers leave in the order requests
 * came, and a parked long poll holds the requests pipelined behind it.
 * Reading goes on meanwhile (up to IN_MAX_ANSWERING bytes), which is how a
 * client that hangs up is seen at once.
 *
 * Lifetime: the socket closes when the client goes or the answer says so;
 * the connection's memory stays until the request under way is answered
 * (busy guards the callbacks that may answer it re-entrantly). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_int.h"

#define READ_CHUNK 16384
/* Unparsed bytes kept while a request is answered: reading pauses beyond,
 * and the client then waits on its own pipelining. */
#define IN_MAX_ANSWERING (64 * 1024)
/* After the last answer of a closing connection, what the client still
 * sends is read and dropped this long, so that it reads the answer rather
 * than a reset. */
#define LINGER_MS 2000
/* Buffers larger than this are given back when a connection goes idle. */
#define KEEP_BYTES (64 * 1024)

static void parse_input(sl_http_conn *c);
static void flush(sl_http_conn *c);
static void conn_gone(sl_http_conn *c);
static void tls_pending(sl_http_conn *c);

static bool answering(const sl_http_conn *c)
{
    return c->state == CS_ANSWERING || c->state == CS_STREAMING;
}

static void conn_free(sl_http_conn *c)
{
    event_free(c->rev);
    event_free(c->wev);
    event_free(c->timer);
    sl_buf_free(&c->in);
    sl_buf_free(&c->out);
    sl_buf_free(&c->req.data);
    sl_buf_free(&c->req.label);
    sl_buf_free(&c->peer);
    free(c);
}

/* Frees the connection when it is closed, nothing answers it, and no
 * callback of it is under way. */
static void maybe_free(sl_http_conn *c)
{
    if (c->dead && c->busy == 0 && !answering(c))
        conn_free(c);
}

/* ---- closing ------------------------------------------------------------------- */

/* The socket goes; the memory waits for maybe_free. */
static void close_socket(sl_http_conn *c)
{
    if (c->fd < 0)
        return;
    event_del(c->rev);
    event_del(c->wev);
    event_del(c->timer);
    sl__tls_close(c, false);
    close(c->fd);
    c->fd = -1;
    c->writing = false;
    sl__http_unlink(c->http, c);
    c->dead = true;
}

void sl__http_conn_close(sl_http_conn *c)
{
    c->busy++;
    conn_gone(c);
    c->busy--;
    maybe_free(c);
}

void sl__http_conn_drop(sl_http_conn *c)
{
    c->busy++;
    conn_gone(c);
    c->state = CS_IDLE; /* whatever was owed is dropped */
    c->busy--;
    maybe_free(c);
}

/* The client is gone, or must be: close, and tell whoever answers. */
static void conn_gone(sl_http_conn *c)
{
    if (c->gone)
        return;
    c->gone = true;
    close_socket(c);
    sl_buf_clear(&c->in);
    sl_buf_clear(&c->out);
    if (answering(c) && c->req.gone) {
        sl_http_gone_fn fn = c->req.gone;
        c->req.gone = NULL;
        fn(c->req.gone_arg);
    }
}

/* The last answer is out: stop sending, drop what still comes for a
 * moment, then close (at once when the client has closed its side). */
static void begin_close(sl_http_conn *c)
{
    if (c->peer_eof) {
        conn_gone(c);
        return;
    }
    c->state = CS_CLOSING;
    sl__tls_close(c, true); /* close_notify; what still comes is dropped unread */
    shutdown(c->fd, SHUT_WR);
    sl__http_update_timer(c);
}

/* ---- timers --------------------------------------------------------------------- */

/* Whether the connection waits for a request's line and headers under
 * header_ms: a new connection's first request (from the opening), or a
 * request begun and not past its headers (from its first byte). */
static bool awaiting_head(const sl_http_conn *c)
{
    if (c->http->opts.header_ms <= 0 || c->writing)
        return false;
    return (c->state == CS_IDLE && !c->served) || (c->state == CS_READING && !c->req.trailers);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sl_http_conn *c = arg;
    if (awaiting_head(c) && c->http->opts.refused)
        c->http->opts.refused(c->http->opts.ud, SL_HTTP_REFUSED_HEADER_TIMEOUT);
    /* Idle, too slow to send its request, lingering, or not reading its
     * answers: in every case the connection ends here. */
    sl__http_conn_close(c);
}

static int64_t earlier(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

void sl__http_update_timer(sl_http_conn *c)
{
    if (c->fd < 0)
        return;
    int64_t now = sl__http_now_ms(), idle = c->http->opts.idle_ms, at;
    int64_t head_by = c->http->opts.header_ms +
                      (c->served && c->state == CS_READING ? c->started_at : c->opened_at);
    if (c->writing)
        at = now + idle; /* re-armed at every write that makes progress */
    else if (c->state == CS_IDLE)
        at = awaiting_head(c) ? earlier(head_by, now + idle) : now + idle;
    else if (c->state == CS_READING)
        at = awaiting_head(c) ? earlier(head_by, c->started_at + idle) : c->started_at + idle;
    else if (c->state == CS_CLOSING)
        at = now + LINGER_MS;
    else if (c->state == CS_DRAINING)
        at = now + idle;
    else
        at = 0; /* answering: the answer's owner keeps its own time */
    if (at == 0) {
        event_del(c->timer);
        return;
    }
    int64_t left = at > now ? at - now : 0;
    struct timeval tv = {(time_t)(left / 1000), (suseconds_t)((left % 1000) * 1000)};
    evtimer_add(c->timer, &tv);
}

/* ---- writing ---------------------------------------------------------------------- */

/* EV_WRITE on: the output waits, or OpenSSL does (a handshake's step). */
static void arm_write(sl_http_conn *c)
{
    if (!c->writing) {
        event_add(c->wev, NULL);
        c->writing = true;
    }
}

/* The socket's bytes: through OpenSSL on a TLS connection. */
static ssize_t io_send(sl_http_conn *c, const void *p, size_t n)
{
    return c->ssl ? sl__tls_send(c, p, n) : send(c->fd, p, n, MSG_NOSIGNAL);
}

static ssize_t io_recv(sl_http_conn *c, void *p, size_t n)
{
    return c->ssl ? sl__tls_recv(c, p, n) : recv(c->fd, p, n, 0);
}

static void after_drained(sl_http_conn *c)
{
    if (c->writing && !c->tls_wants_write) {
        event_del(c->wev);
        c->writing = false;
    }
    sl_buf_shrink(&c->out, KEEP_BYTES);
    if (c->drained) {
        sl_http_gone_fn fn = c->drained;
        c->drained = NULL;
        c->busy++;
        fn(c->drained_arg);
        c->busy--;
        /* What fn wrote waited for the end of a callback (busy), and this
         * is that end: send it once the socket takes it (at once, as it
         * just drained), and close after that. */
        if (sl_buf_size(&c->out) > 0 && !c->gone && c->fd >= 0) {
            arm_write(c);
            return;
        }
    }
    if (c->close_after && !answering(c) && c->state != CS_DRAINING && c->state != CS_CLOSING &&
        !c->gone)
        begin_close(c);
}

/* Writes what the output holds, in one write when the socket takes it. */
static void flush(sl_http_conn *c)
{
    if (c->gone || c->fd < 0)
        return;
    while (sl_buf_size(&c->out) > 0) {
        ssize_t n = io_send(c, sl_buf_data(&c->out), sl_buf_size(&c->out));
        if (n > 0) {
            sl_buf_consume(&c->out, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            arm_write(c);
            sl__http_update_timer(c);
            return;
        }
        conn_gone(c);
        return;
    }
    after_drained(c);
    sl__http_update_timer(c);
}

static void read_cb(evutil_socket_t fd, short what, void *arg);

static void write_cb(evutil_socket_t fd, short what, void *arg)
{
    sl_http_conn *c = arg;
    if (c->ssl && (!c->tls_ready || (c->tls_wants_write && sl_buf_size(&c->out) == 0))) {
        read_cb(fd, what, arg); /* a handshake, or a read, waited for the socket */
        return;
    }
    c->busy++;
    flush(c);
    c->busy--;
    maybe_free(c);
}

/* Output from outside a read callback goes at once; inside one it goes
 * with the others at the callback's end. */
void sl__http_output_added(sl_http_conn *c)
{
    if (c->busy == 0)
        flush(c);
}

/* ---- answers ---------------------------------------------------------------------- */

const char *sl_http_status_text(int status)
{
    switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 422: return "Unprocessable Entity";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

/* The status line and the headers every answer has. */
static void head(sl_http_conn *c, int status, const char *ctype)
{
    sl_http_req *r = &c->req;
    sl_buf_adds(&c->out, r->http10 ? "HTTP/1.0 " : "HTTP/1.1 ");
    sl_buf_addu(&c->out, (unsigned)status);
    sl_buf_add(&c->out, " ", 1);
    sl_buf_adds(&c->out, sl_http_status_text(status));
    sl_buf_add(&c->out, "\r\n", 2);
    if (ctype) {
        sl_buf_add(&c->out, "Content-Type: ", 14);
        sl_buf_adds(&c->out, ctype);
        sl_buf_add(&c->out, "\r\n", 2);
    }
    sl_buf_add(&c->out, r->out_hdr, r->out_hdr_len);
    sl_buf_adds(&c->out, sl__http_date(c->http));
}

/* The request is answered: the next one may be parsed. */
static void answered(sl_http_conn *c)
{
    sl_http_req *r = &c->req;
    if (!r->keep_alive)
        c->close_after = true;
    c->state = CS_IDLE;
    r->gone = NULL;
    sl_buf_shrink(&r->data, KEEP_BYTES);
    if (c->gone) {
        maybe_free(c);
        return;
    }
    if (c->reading_paused) {
        event_add(c->rev, NULL);
        c->reading_paused = false;
        tls_pending(c);
    }
    if (c->busy > 0)
        return; /* the read callback under way parses on */
    flush(c);
    if (c->gone) { /* the send found the client gone (reset): nothing owes it now */
        maybe_free(c);
        return;
    }
    /* Requests pipelined behind this one: parsed in a turn of their own,
     * never from inside whatever answered. */
    if (!c->gone && !c->close_after && sl_buf_size(&c->in) > 0)
        event_active(c->rev, EV_READ, 0);
    sl__http_update_timer(c);
}

void sl_http_add_header(sl_http_req *r, const char *name, const char *value)
{
    size_t nl = strlen(name), vl = strlen(value);
    if (r->out_hdr_len + nl + vl + 4 >= sizeof(r->out_hdr))
        return;
    char *p = r->out_hdr + r->out_hdr_len;
    memcpy(p, name, nl);
    memcpy(p + nl, ": ", 2);
    memcpy(p + nl + 2, value, vl);
    memcpy(p + nl + 2 + vl, "\r\n", 2);
    r->out_hdr_len += nl + vl + 4;
}

static void reply(sl_http_req *r, int status, const char *ctype, const void *body, size_t len);

void sl_http_reply(sl_http_req *r, int status, const char *ctype, const void *body, size_t len)
{
    reply(r, status, ctype, body, len);
}

void sl_http_reply_head(sl_http_req *r, int status, const char *ctype, size_t length)
{
    reply(r, status, ctype, NULL, length); /* HEAD: the length is announced, no body sent */
}

static void reply(sl_http_req *r, int status, const char *ctype, const void *body, size_t len)
{
    sl_http_conn *c = r->conn;
    if (!c->gone) {
        head(c, status, ctype);
        bool bodyless = status == 204 || status == 304 || (status >= 100 && status < 200);
        if (!bodyless) {
            sl_buf_add(&c->out, "Content-Length: ", 16);
            sl_buf_addu(&c->out, len);
            sl_buf_add(&c->out, "\r\n", 2);
        }
        if (!r->keep_alive || c->close_after)
            sl_buf_adds(&c->out, "Connection: close\r\n");
        else if (r->http10)
            sl_buf_adds(&c->out, "Connection: keep-alive\r\n");
        sl_buf_add(&c->out, "\r\n", 2);
        if (!bodyless && r->method != SL_HTTP_HEAD)
            sl_buf_add(&c->out, body, len);
    }
    answered(c);
}

void sl_http_stream_start(sl_http_req *r, int status, const char *ctype)
{
    sl_http_conn *c = r->conn;
    c->state = CS_STREAMING;
    if (c->gone)
        return;
    head(c, status, ctype);
    if (r->http10) {
        /* No chunks in HTTP/1.0: the body ends when the connection does. */
        c->streaming_10 = true;
        sl_buf_adds(&c->out, "Connection: close\r\n\r\n");
    } else {
        sl_buf_adds(&c->out, "Transfer-Encoding: chunked\r\n\r\n");
    }
    sl__http_output_added(c);
}

void sl_http_stream_chunk(sl_http_req *r, const void *data, size_t len)
{
    sl_http_conn *c = r->conn;
    if (c->gone || len == 0 || r->method == SL_HTTP_HEAD)
        return;
    if (c->streaming_10) {
        sl_buf_add(&c->out, data, len);
    } else {
        sl_buf_addf(&c->out, "%zx\r\n", len);
        sl_buf_add(&c->out, data, len);
        sl_buf_add(&c->out, "\r\n", 2);
    }
    sl__http_output_added(c);
}

void sl_http_stream_end(sl_http_req *r)
{
    sl_http_conn *c = r->conn;
    if (!c->gone) {
        if (c->streaming_10)
            c->close_after = true;
        else if (r->method != SL_HTTP_HEAD)
            sl_buf_adds(&c->out, "0\r\n\r\n");
    }
    c->streaming_10 = false;
    answered(c);
}

void sl_http_stream_abort(sl_http_req *r)
{
    sl_http_conn *c = r->conn;
    c->close_after = true;
    c->streaming_10 = false;
    answered(c);
}

size_t sl_http_unsent(const sl_http_req *r)
{
    return sl_buf_size(&r->conn->out);
}

void sl_http_on_drained(sl_http_req *r, sl_http_gone_fn fn, void *arg)
{
    sl_http_conn *c = r->conn;
    c->drained = fn;
    c->drained_arg = arg;
    if (fn && (c->gone || sl_buf_size(&c->out) == 0) && c->busy == 0) {
        c->drained = NULL;
        fn(arg);
    }
}

/* ---- refusals: the layer's own answers ---------------------------------------------- */

static const char *error_code(int status)
{
    switch (status) {
    case 413:
    case 414:
    case 431:
        return "too_large";
    case 503:
        return "unavailable";
    default:
        return "bad_request";
    }
}

/* The API's error body: {"error": {"code": ..., "message": ...}}. */
static void error_body(sl_buf *b, int status, const char *msg)
{
    sl_buf_addf(b, "{\"error\":{\"code\":\"%s\",\"message\":\"", error_code(status));
    for (const char *p = msg; *p; p++) {
        unsigned char ch = (unsigned char)*p;
        if (ch == '"' || ch == '\\')
            sl_buf_addf(b, "\\%c", ch);
        else if (ch < 0x20)
            sl_buf_addf(b, "\\u%04x", ch);
        else
            sl_buf_add(b, p, 1);
    }
    sl_buf_adds(b, "\"}}\n");
}

/* The refusal's reason, with the limit it went past and where it is set. */
static void limit_said(const sl_http_conn *c, char *out, size_t cap)
{
    const sl_http_req *r = &c->req;
    const char *why = r->refuse_why ? r->refuse_why : "bad request";
    if (r->refuse == 413)
        snprintf(out, cap, "%s: at most %zu bytes (limits.max_body)", why,
                 c->http->opts.max_body);
    else if (r->refuse == 431 && strstr(why, "larger"))
        snprintf(out, cap, "%s: at most %zu bytes (limits.max_headers)", why,
                 c->http->opts.max_headers);
    else
        snprintf(out, cap, "%s", why);
}

/* Answers the refusal set on the request and closes after it. */
static void refuse(sl_http_conn *c)
{
    sl_http_req *r = &c->req;
    c->close_after = true;
    r->keep_alive = false;
    c->state = CS_ANSWERING;
    char why[256];
    limit_said(c, why, sizeof(why));
    sl_buf body = {0};
    error_body(&body, r->refuse, why);
    if (c->http->opts.own_answer)
        c->http->opts.own_answer(c->http->opts.ud, r->refuse);
    sl_http_reply(r, r->refuse, "application/json", sl_buf_data(&body), sl_buf_size(&body));
    sl_buf_free(&body);
}

/* ---- reading and parsing ---------------------------------------------------------------- */

/* A connection on a kept slot goes on only if its first request is
 * admitted (a valid token): else 503 and closed, its slot freed. */
static bool admitted(sl_http_conn *c)
{
    const sl_http_opts *o = &c->http->opts;
    if (!c->reserved || c->admitted || !o->admit || o->admit(o->ud, &c->req)) {
        c->admitted = true;
        return true;
    }
    if (o->refused)
        o->refused(o->ud, SL_HTTP_REFUSED_RESERVED);
    c->req.refuse = 503;
    c->req.refuse_why = "the server is near its connection limit, and its last connections "
                        "are kept for requests with a valid token: send \"Authorization: Bearer "
                        "<token>\", or retry later";
    refuse(c);
    return false;
}

static void dispatch(sl_http_conn *c)
{
    if (!admitted(c))
        return;
    c->served = true;
    c->state = CS_ANSWERING;
    c->started = false;
    sl__http_update_timer(c);
    c->http->opts.handler(c->http->opts.ud, &c->req);
}

/* A message that llhttp refused: 400 with its reason, unless a callback set
 * a more precise refusal. */
static void parse_error(sl_http_conn *c, llhttp_errno_t e)
{
    sl_http_req *r = &c->req;
    if (r->refuse) {
        /* a callback's refusal */
    } else if (e == HPE_PAUSED_UPGRADE) {
        r->refuse = 501;
        r->refuse_why = "this server does not switch protocols (CONNECT, Upgrade)";
    } else if (e == HPE_INVALID_VERSION) {
        r->refuse = 505;
        r->refuse_why = "this server speaks HTTP/1.1 (and HTTP/1.0) only";
    } else {
        r->refuse = 400;
        r->refuse_why = "the request is not well-formed HTTP/1.1";
    }
    refuse(c);
}

static void parse_input(sl_http_conn *c)
{
    while (!c->gone && !c->close_after && (c->state == CS_IDLE || c->state == CS_READING) &&
           sl_buf_size(&c->in) > 0) {
        const char *d = sl_buf_data(&c->in);
        size_t n = sl_buf_size(&c->in);
        c->feed = d;
        llhttp_errno_t e = llhttp_execute(&c->parser, d, n);
        const char *stop = e == HPE_OK ? d + n : llhttp_get_error_pos(&c->parser);
        size_t used = stop && stop >= d ? (size_t)(stop - d) : n;
        if (used > 0 && used <= n)
            c->feed_prev = d[used - 1];
        sl_buf_consume(&c->in, used > n ? n : used);
        if (e == HPE_OK)
            break; /* the message goes on in later bytes */
        if (e != HPE_PAUSED) {
            parse_error(c, e);
            break;
        }
        llhttp_resume(&c->parser);
        if (c->req.refuse) {
            bool drain = c->req.refuse == 413 && c->drain_left <= SL_HTTP_DRAIN_MAX;
            refuse(c);
            if (drain && !c->gone) {
                /* The body is read and dropped, so that the client, which
                 * may still be sending it, reads the 413 and not a reset. */
                c->state = CS_DRAINING;
                size_t now = sl_buf_size(&c->in) < c->drain_left ? sl_buf_size(&c->in)
                                                                   : (size_t)c->drain_left;
                sl_buf_consume(&c->in, now);
                c->drain_left -= now;
                if (c->drain_left == 0)
                    c->state = CS_IDLE;
            }
            break;
        }
        dispatch(c);
    }
    if (c->state == CS_DRAINING && c->drain_left == 0)
        c->state = CS_IDLE;
}

/* What came in while no request can be parsed (one is answered, or the
 * connection drains or closes). */
static void swallow(sl_http_conn *c)
{
    if (c->state == CS_CLOSING) {
        sl_buf_clear(&c->in);
    } else if (c->state == CS_DRAINING) {
        size_t n = sl_buf_size(&c->in) < c->drain_left ? sl_buf_size(&c->in)
                                                        : (size_t)c->drain_left;
        sl_buf_consume(&c->in, n);
        c->drain_left -= n;
        if (c->drain_left == 0)
            c->state = CS_IDLE;
        sl_buf_clear(&c->in); /* after a 413 nothing more is served */
    } else if (answering(c) && sl_buf_size(&c->in) >= IN_MAX_ANSWERING && !c->reading_paused) {
        event_del(c->rev);
        c->reading_paused = true;
    }
}

/* End of file from the client. */
static void peer_closed(sl_http_conn *c)
{
    if (answering(c)) {
        conn_gone(c); /* a parked request's client has gone: say so at once */
    } else if (c->state == CS_IDLE && sl_buf_size(&c->out) > 0) {
        /* Half-closed after its request: its answer still goes out. */
        event_del(c->rev);
        c->peer_eof = true;
        c->close_after = true;
    } else {
        conn_gone(c);
    }
}

/* A step of the TLS handshake: true once done, false while it waits for
 * the socket (or failed: the connection closes). A failure (a bad
 * certificate, an old version, not TLS at all) closes as an answer does,
 * lingering: OpenSSL has written its alert, and in TLS 1.3 a client whose
 * certificate is refused has sent its request already; closing with that
 * request unread would send a reset, which drops the alert on its way and
 * leaves the client with an end of file instead of the reason. */
static bool tls_handshake(sl_http_conn *c)
{
    int hs = sl__tls_handshake(c);
    if (hs < 0)
        begin_close(c);
    else if (hs == 0 && c->tls_wants_write)
        arm_write(c);
    return hs > 0;
}

/* Bytes OpenSSL holds (records read ahead, or decrypted and not yet read)
 * are not the socket's readiness: read them on the next turn of the loop.
 * Not after a read that waited for the socket: what OpenSSL holds then is
 * part of a record, and its rest comes with the socket's readiness (waking
 * the loop for it would spin until it came). */
static void tls_pending(sl_http_conn *c)
{
    if (c->ssl && !c->gone && !c->reading_paused && SSL_has_pending(c->ssl))
        event_active(c->rev, EV_READ, 0);
}

static void read_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    (void)fd;
    sl_http_conn *c = arg;
    c->busy++;
    if (c->ssl && !c->tls_ready && !tls_handshake(c))
        goto out;
    bool waited = false; /* the last read waited for the socket */
    for (int round = 0; round < 4 && !c->gone && !c->reading_paused; round++) {
        char *space = sl_buf_space(&c->in, READ_CHUNK);
        ssize_t n = io_recv(c, space, READ_CHUNK);
        if (n > 0) {
            sl_buf_commit(&c->in, (size_t)n);
            if (c->state == CS_IDLE && !c->started)
                sl__http_update_timer(c); /* activity: the idle time starts again */
            parse_input(c);
            swallow(c);
            /* The socket is empty (level-triggered: more wakes us), and so
             * is OpenSSL, which gives a record at a time: no read to spend
             * on EAGAIN. */
            if ((size_t)n < READ_CHUNK && (!c->ssl || !SSL_has_pending(c->ssl)))
                break;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (c->tls_wants_write)
                arm_write(c);
            waited = true;
            break;
        }
        if (n == 0)
            peer_closed(c);
        else
            conn_gone(c);
        break;
    }
    /* Bytes left from before (an answer given outside this callback let
     * the pipelined requests behind it be parsed now). */
    if (!c->gone)
        parse_input(c);
    if (!waited)
        tls_pending(c);
out:
    /* The flush under busy too: a send that finds the client gone tells a
     * parked request's owner, whose answer must not free the connection
     * before this callback is done with it. */
    if (!c->gone)
        flush(c);
    c->busy--;
    maybe_free(c);
}

void sl__http_conn_open(sl_http *h, int fd, const uint8_t addr[16], bool reserved, bool plain)
{
    sl_http_conn *c = calloc(1, sizeof(*c));
    if (!c)
        abort();
    c->http = h;
    c->fd = fd;
    c->req.conn = c;
    if (h->tls && !plain && sl__tls_open(c) != 0) {
        close(fd);
        free(c);
        return;
    }
    c->rev = event_new(h->base, fd, EV_READ | EV_PERSIST, read_cb, c);
    c->wev = event_new(h->base, fd, EV_WRITE | EV_PERSIST, write_cb, c);
    c->timer = evtimer_new(h->base, timer_cb, c);
    if (!c->rev || !c->wev || !c->timer)
        abort();
    llhttp_init(&c->parser, HTTP_REQUEST, &h->settings);
    c->parser.data = c;
    c->state = CS_IDLE;
    memcpy(c->addr, addr, 16);
    c->reserved = reserved;
    c->opened_at = sl__http_now_ms();
    c->next = h->head;
    if (h->head)
        h->head->prev = c;
    h->head = c;
    h->nconns++;
    event_add(c->rev, NULL);
    sl__http_update_timer(c);
}
