/* http_conn.c - one keep-alive HTTP/1.1 connection over a blocking socket,
 * in clear or over TLS (tls.h).
 *
 * One request at a time: the request goes out in a single send(), the
 * response is read into a fixed buffer and fed to the parser
 * (http_parse.c). Blocking sockets, because each load-generator client is a
 * thread of its own (see backend.h for why); SO_RCVTIMEO and SO_SNDTIMEO
 * bound every wait, connect included.
 *
 * The descriptor number stays the same for the connection's whole life:
 * a reconnect dup2()s the new socket onto it. That is what makes
 * sl_http_conn_interrupt() safe from another thread: the number it shuts
 * down can never have been closed and handed to someone else meanwhile.
 *
 * Over TLS the handshake follows the connect (non-blocking, see tls.h) and
 * every send and recv goes through the TLS stream instead; a connection
 * that ends cleanly sends its close_notify. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "http.h"
#include "tls.h"

/* Reads of up to 64 KiB: a whole response in one recv() most of the time. */
#define READ_BUF (64 * 1024)

struct sl_http_conn {
    atomic_int fd;           /* -1 until the first connect; then fixed (see above) */
    bool open;               /* fd carries a live connection */
    atomic_bool interrupted; /* sl_http_conn_interrupt() was called */
    int timeout_ms;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char host[300];     /* the Host field: host:port, [v6]:port */
    char name[256];     /* the host as given: what the certificate must name */
    sl_tls_client *tls; /* NULL: plain TCP */
    bool resume;        /* offer the previous TLS session at a reconnect */
    sl_tls_stream stream;
    size_t rpos, rlen;
    size_t stream_seen; /* body bytes that stream_read has returned, less those consumed */
    char error[700];
    sl_http_parser parser;
    char rbuf[READ_BUF];
    char wbuf[SL_HTTP_MAX_REQUEST];
};

static int set_error(sl_http_conn *c, int code, const char *detail)
{
    snprintf(c->error, sizeof c->error, "%s: %s", sl_http_strerror(code), detail);
    return code;
}

static int set_errno(sl_http_conn *c, int code, const char *what, int err)
{
    snprintf(c->error, sizeof c->error, "%s: %s: %s", sl_http_strerror(code), what, strerror(err));
    return code;
}

int sl_http_conn_new(const char *host, const char *port, int timeout_ms, sl_http_conn **out)
{
    return sl_http_conn_new_tls(host, port, timeout_ms, NULL, out);
}

int sl_http_conn_new_tls(const char *host, const char *port, int timeout_ms, sl_tls_client *tls,
                         sl_http_conn **out)
{
    struct addrinfo hints, *res = NULL;
    sl_http_conn *c;
    int n;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res)
        return SL_HTTP_EINVAL;
    c = calloc(1, sizeof *c);
    if (!c) {
        freeaddrinfo(res);
        return SL_HTTP_ENOMEM;
    }
    memcpy(&c->addr, res->ai_addr, res->ai_addrlen);
    c->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    n = snprintf(c->host, sizeof c->host, strchr(host, ':') ? "[%s]:%s" : "%s:%s", host, port);
    if (n < 0 || (size_t)n >= sizeof c->host || strlen(host) >= sizeof c->name) {
        free(c);
        return SL_HTTP_EINVAL;
    }
    atomic_init(&c->fd, -1);
    atomic_init(&c->interrupted, false);
    c->timeout_ms = timeout_ms;
    c->tls = tls;
    memcpy(c->name, host, strlen(host) + 1);
    sl_http_parser_init(&c->parser, false);
    *out = c;
    return 0;
}

void sl_http_conn_free(sl_http_conn *c)
{
    int fd;
    if (!c)
        return;
    fd = atomic_load(&c->fd);
    if (fd >= 0)
        close(fd);
    sl_tls_stream_free(&c->stream);
    sl_http_parser_free(&c->parser);
    free(c);
}

/* The socket stays (its number is fixed) but carries nothing any more. */
static void drop(sl_http_conn *c)
{
    int fd = atomic_load(&c->fd);
    if (c->tls)
        sl_tls_close(&c->stream);
    if (fd >= 0 && c->open)
        shutdown(fd, SHUT_RDWR);
    c->open = false;
    c->rpos = c->rlen = 0;
}

static void set_timeouts(int s, int timeout_ms)
{
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    int one = 1;
    /* Requests are single small writes answered before the next one, but
     * Nagle would still hold one back behind an unacknowledged segment. */
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (timeout_ms > 0) {
        setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* Linux: connect too */
    }
}

/* A failed TLS call (errno set by tls.c) as one of our codes. */
static int tls_error(sl_http_conn *c, const char *what)
{
    int err = errno;
    if (atomic_load(&c->interrupted) || err == EINTR)
        return set_error(c, SL_HTTP_EINTERRUPTED, what);
    if (err == EPROTO)
        return set_error(c, SL_HTTP_ETLS, c->stream.error);
    if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT)
        return set_error(c, SL_HTTP_ETIMEDOUT, c->stream.error[0] ? c->stream.error : what);
    return set_errno(c, SL_HTTP_EIO, what, err);
}

static int handshake(sl_http_conn *c)
{
    if (sl_tls_handshake(c->tls, &c->stream, atomic_load(&c->fd), c->name, c->resume, c->timeout_ms,
                         &c->interrupted) == 0)
        return 0;
    int rc = tls_error(c, "the TLS handshake");
    drop(c);
    return rc;
}

static int connect_socket(sl_http_conn *c)
{
    int s = socket(c->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int fd;
    if (s < 0)
        return set_errno(c, SL_HTTP_EIO, "socket", errno);
    set_timeouts(s, c->timeout_ms);
    while (connect(s, (struct sockaddr *)&c->addr, c->addr_len) != 0) {
        int err = errno;
        if (err == EINTR)
            continue;
        close(s);
        if (err == EINPROGRESS || err == EAGAIN)
            return set_error(c, SL_HTTP_ETIMEDOUT, "connect");
        return set_errno(c, SL_HTTP_EIO, "connect", err);
    }
    fd = atomic_load(&c->fd);
    if (fd < 0) {
        atomic_store(&c->fd, s);
    } else {
        if (dup2(s, fd) < 0) {
            int err = errno;
            close(s);
            return set_errno(c, SL_HTTP_EIO, "dup2", err);
        }
        close(s);
    }
    c->open = true;
    c->rpos = c->rlen = 0;
    /* An interrupt that came while fd was still -1 found nothing to shut
     * down; it is seen here instead. */
    if (atomic_load(&c->interrupted)) {
        drop(c);
        return set_error(c, SL_HTTP_EINTERRUPTED, "before connecting");
    }
    return c->tls ? handshake(c) : 0;
}

/* The request line and fields: no CR, LF, space or control character may
 * sneak into them. */
static bool is_clean(const char *s, bool token)
{
    if (!*s)
        return false;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch <= 0x20 || ch == 0x7f || (token && ch >= 0x80))
            return false;
    }
    return true;
}

static int format_request(sl_http_conn *c, const char *method, const char *target, const char *body,
                          size_t body_len, size_t *len /* OUT */)
{
    int n;
    if (!is_clean(method, true) || !is_clean(target, false))
        return set_error(c, SL_HTTP_EINVAL, "a method or target with a space or control character");
    if (body)
        n = snprintf(c->wbuf, sizeof c->wbuf,
                     "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     method, target, c->host, body_len);
    else
        n = snprintf(c->wbuf, sizeof c->wbuf, "%s %s HTTP/1.1\r\nHost: %s\r\n\r\n", method, target,
                     c->host);
    if (n < 0 || (size_t)n >= sizeof c->wbuf || (body && body_len > sizeof c->wbuf - (size_t)n))
        return set_error(c, SL_HTTP_EINVAL, "request over 64 KiB");
    if (body)
        memcpy(c->wbuf + n, body, body_len);
    *len = (size_t)n + (body ? body_len : 0);
    return 0;
}

static int send_all(sl_http_conn *c, size_t len)
{
    size_t off = 0;
    int fd = atomic_load(&c->fd);
    while (off < len) {
        ssize_t n = c->tls ? sl_tls_send(&c->stream, c->wbuf + off, len - off)
                           : send(fd, c->wbuf + off, len - off, MSG_NOSIGNAL);
        if (n >= 0) {
            off += (size_t)n;
            continue;
        }
        if (errno == EINTR && !c->tls)
            continue;
        if (c->tls && errno == EPROTO)
            return tls_error(c, "while sending");
        if (atomic_load(&c->interrupted))
            return set_error(c, SL_HTTP_EINTERRUPTED, "while sending");
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return set_error(c, SL_HTTP_ETIMEDOUT, "sending the request");
        return set_errno(c, SL_HTTP_EIO, "send", errno);
    }
    return 0;
}

int sl_http_conn_send(sl_http_conn *c, const char *method, const char *target, const char *body,
                      size_t body_len)
{
    size_t len = 0;
    int rc;
    c->error[0] = '\0';
    if (atomic_load(&c->interrupted))
        return set_error(c, SL_HTTP_EINTERRUPTED, "before sending");
    rc = format_request(c, method, target, body, body_len, &len);
    if (rc < 0)
        return rc;
    if (c->open && c->rpos < c->rlen) {
        drop(c);
        return set_error(c, SL_HTTP_EPROTO, "bytes after the end of the previous response");
    }
    if (!c->open && (rc = connect_socket(c)) < 0)
        return rc;
    sl_http_parser_reset(&c->parser, strcmp(method, "HEAD") == 0);
    c->stream_seen = 0;
    rc = send_all(c, len);
    if (rc < 0)
        drop(c);
    return rc;
}

/* Feeds what is buffered; 1 when the response is complete. */
static int feed_buffered(sl_http_conn *c)
{
    size_t used = 0;
    int rc = sl_http_parser_feed(&c->parser, c->rbuf + c->rpos, c->rlen - c->rpos, &used);
    c->rpos += used;
    if (rc < 0)
        return set_error(c, rc, c->parser.why);
    return rc;
}

static int read_more(sl_http_conn *c)
{
    int fd = atomic_load(&c->fd);
    for (;;) {
        ssize_t n = c->tls ? sl_tls_recv(&c->stream, c->rbuf, sizeof c->rbuf)
                           : recv(fd, c->rbuf, sizeof c->rbuf, 0);
        if (n > 0) {
            c->rpos = 0;
            c->rlen = (size_t)n;
            return 0;
        }
        if (atomic_load(&c->interrupted))
            return set_error(c, SL_HTTP_EINTERRUPTED, "while waiting for the response");
        if (n == 0) {
            int rc = sl_http_parser_eof(&c->parser);
            return rc == 1 ? 1 : set_error(c, rc, c->parser.why);
        }
        if (errno == EINTR && !c->tls)
            continue;
        if (c->tls && errno == EPROTO)
            return tls_error(c, "while reading");
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return set_error(c, SL_HTTP_ETIMEDOUT, "waiting for the response");
        return set_errno(c, SL_HTTP_EIO, "recv", errno);
    }
}

int sl_http_conn_recv(sl_http_conn *c, const sl_http_response **out)
{
    int rc = 0;
    *out = NULL;
    if (!c->open)
        return set_error(c, SL_HTTP_EINVAL, "no request was sent");
    for (;;) {
        if (c->rpos < c->rlen && (rc = feed_buffered(c)) != 0)
            break;
        rc = read_more(c);
        if (rc != 0)
            break;
    }
    if (rc < 0) {
        drop(c);
        return rc;
    }
    *out = sl_http_parser_response(&c->parser);
    if (!(*out)->keep_alive)
        drop(c);
    return 0;
}

int sl_http_conn_request(sl_http_conn *c, const char *method, const char *target, const char *body,
                         size_t body_len, const sl_http_response **out)
{
    int rc = sl_http_conn_send(c, method, target, body, body_len);
    if (rc < 0) {
        *out = NULL;
        return rc;
    }
    return sl_http_conn_recv(c, out);
}

/* Body bytes beyond those returned before, or the end of the response. */
static int stream_wait(sl_http_conn *c)
{
    const char *body;
    int rc;
    if (sl_http_parser_response(&c->parser))
        return 1; /* ended before: nothing more will come */
    for (;;) {
        if (c->rpos < c->rlen && (rc = feed_buffered(c)) != 0)
            return rc;
        if (sl_http_parser_body_so_far(&c->parser, &body) > c->stream_seen)
            return 0;
        if ((rc = read_more(c)) != 0)
            return rc;
    }
}

int sl_http_conn_stream_read(sl_http_conn *c, int *status, const char **data, size_t *len)
{
    int rc;
    *data = NULL;
    *len = 0;
    if (!c->open)
        return set_error(c, SL_HTTP_EINVAL, "no request was sent");
    rc = stream_wait(c);
    if (rc < 0) {
        drop(c);
        return rc;
    }
    *status = c->parser.resp.status;
    *len = sl_http_parser_body_so_far(&c->parser, data);
    c->stream_seen = *len;
    if (rc == 1 && !c->parser.resp.keep_alive)
        drop(c);
    return rc;
}

void sl_http_conn_stream_consume(sl_http_conn *c, size_t n)
{
    if (n > c->stream_seen)
        n = c->stream_seen;
    sl_http_parser_body_consume(&c->parser, n);
    c->stream_seen -= n;
}

void sl_http_conn_close(sl_http_conn *c)
{
    drop(c);
}

void sl_http_conn_interrupt(sl_http_conn *c)
{
    int fd;
    atomic_store(&c->interrupted, true);
    fd = atomic_load(&c->fd);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

void sl_http_conn_set_resume(sl_http_conn *c, bool resume)
{
    c->resume = resume;
}

void sl_http_conn_tls_counts(const sl_http_conn *c, uint64_t *handshakes, uint64_t *resumed)
{
    *handshakes = c->stream.handshakes;
    *resumed = c->stream.resumptions;
}

const char *sl_http_conn_error(const sl_http_conn *c)
{
    return c->error;
}
