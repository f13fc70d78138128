/* redis_tls.c - Redis commands over TLS (see redis_tls.h). */
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

#include "redis_tls.h"

#define READ_BUF (16 * 1024)

struct sl_resp_tls {
    atomic_int fd; /* fixed once connected (see redis_tls.h) */
    atomic_bool interrupted;
    int timeout_ms;
    char host[256];
    struct sockaddr_storage addr;
    socklen_t addr_len;
    sl_tls_client *cl;
    sl_tls_stream stream;
    redisReader *reader;
    char error[600];
    char buf[READ_BUF];
};

static int fail(sl_resp_tls *c, const char *what, int err)
{
    if (atomic_load(&c->interrupted))
        snprintf(c->error, sizeof c->error, "%s: interrupted", what);
    else if (err == EPROTO || (c->stream.error[0] && err != EAGAIN))
        snprintf(c->error, sizeof c->error, "%s: %s", what, c->stream.error);
    else if (err == EAGAIN || err == EWOULDBLOCK || err == ETIMEDOUT)
        snprintf(c->error, sizeof c->error, "%s: timed out after %d ms", what, c->timeout_ms);
    else
        snprintf(c->error, sizeof c->error, "%s: %s", what, err ? strerror(err) : "closed");
    return -1;
}

/* A new socket, connected, its number made c->fd. */
static int connect_socket(sl_resp_tls *c)
{
    struct timeval tv = {.tv_sec = c->timeout_ms / 1000, .tv_usec = (c->timeout_ms % 1000) * 1000};
    int one = 1, fd, s = socket(c->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return fail(c, "socket", errno);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* as hiredis does */
    setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv); /* Linux: connect too */
    while (connect(s, (struct sockaddr *)&c->addr, c->addr_len) != 0) {
        int err = errno;
        if (err == EINTR)
            continue;
        close(s);
        return fail(c, "connect", err == EINPROGRESS ? ETIMEDOUT : err);
    }
    fd = atomic_load(&c->fd);
    if (fd < 0) {
        atomic_store(&c->fd, s);
    } else {
        int rc = dup2(s, fd);
        int err = errno;
        close(s);
        if (rc < 0)
            return fail(c, "dup2", err);
    }
    return 0;
}

static void close_connection(sl_resp_tls *c)
{
    int fd = atomic_load(&c->fd);
    sl_tls_close(&c->stream);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

int sl_resp_tls_reconnect(sl_resp_tls *c, bool resume)
{
    close_connection(c);
    c->error[0] = '\0';
    if (atomic_load(&c->interrupted))
        return fail(c, "connect", 0);
    if (connect_socket(c) < 0)
        return -1;
    if (sl_tls_handshake(c->cl, &c->stream, atomic_load(&c->fd), c->host, resume, c->timeout_ms,
                         &c->interrupted) < 0) {
        int err = errno;
        close_connection(c);
        return fail(c, "TLS handshake with Redis", err);
    }
    if (c->reader) /* nothing of the old connection is left to read */
        redisReaderFree(c->reader);
    c->reader = redisReaderCreate();
    return c->reader ? 0 : fail(c, "redisReaderCreate", ENOMEM);
}

int sl_resp_tls_connect(const char *host, const char *port, int timeout_ms, sl_tls_client *cl,
                        sl_resp_tls **out, char *err, size_t cap)
{
    struct addrinfo hints, *res = NULL;
    sl_resp_tls *c;
    *out = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res || strlen(host) >= 256) {
        snprintf(err, cap, "cannot resolve %s:%s", host, port);
        if (res)
            freeaddrinfo(res);
        return -1;
    }
    c = calloc(1, sizeof *c);
    if (!c) {
        freeaddrinfo(res);
        snprintf(err, cap, "out of memory");
        return -1;
    }
    memcpy(&c->addr, res->ai_addr, res->ai_addrlen);
    c->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    atomic_init(&c->fd, -1);
    atomic_init(&c->interrupted, false);
    c->timeout_ms = timeout_ms;
    c->cl = cl;
    memcpy(c->host, host, strlen(host) + 1);
    if (sl_resp_tls_reconnect(c, false) < 0) {
        snprintf(err, cap, "%s", c->error);
        sl_resp_tls_free(c);
        return -1;
    }
    *out = c;
    return 0;
}

bool sl_resp_tls_resumed(const sl_resp_tls *c)
{
    return c->stream.resumed;
}

static int send_all(sl_resp_tls *c, const char *cmd, size_t len)
{
    size_t off = 0;
    while (off < len) {
        ssize_t n = sl_tls_send(&c->stream, cmd + off, len - off);
        if (n < 0)
            return fail(c, "sending to Redis", errno);
        off += (size_t)n;
    }
    return 0;
}

/* Reads until the reader has a whole reply. */
static redisReply *read_reply(sl_resp_tls *c)
{
    void *reply = NULL;
    for (;;) {
        ssize_t n;
        if (redisReaderGetReply(c->reader, &reply) != REDIS_OK) {
            snprintf(c->error, sizeof c->error, "Redis reply: %s", c->reader->errstr);
            return NULL;
        }
        if (reply)
            return reply;
        n = sl_tls_recv(&c->stream, c->buf, sizeof c->buf);
        if (n <= 0) {
            fail(c, "reading from Redis", n == 0 ? 0 : errno);
            return NULL;
        }
        if (redisReaderFeed(c->reader, c->buf, (size_t)n) != REDIS_OK) {
            snprintf(c->error, sizeof c->error, "Redis reply: %s", c->reader->errstr);
            return NULL;
        }
    }
}

redisReply *sl_resp_tls_vcommand(sl_resp_tls *c, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len;
    c->error[0] = '\0';
    if (!c->stream.ssl) {
        fail(c, "Redis", 0);
        return NULL;
    }
    len = redisvFormatCommand(&cmd, fmt, ap);
    if (len < 0) {
        snprintf(c->error, sizeof c->error, "cannot format the command %s", fmt);
        return NULL;
    }
    if (send_all(c, cmd, (size_t)len) < 0) {
        redisFreeCommand(cmd);
        close_connection(c);
        return NULL;
    }
    redisFreeCommand(cmd);
    redisReply *r = read_reply(c);
    if (!r)
        close_connection(c);
    return r;
}

redisReply *sl_resp_tls_command(sl_resp_tls *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = sl_resp_tls_vcommand(c, fmt, ap);
    va_end(ap);
    return r;
}

const char *sl_resp_tls_error(const sl_resp_tls *c)
{
    return c->error;
}

void sl_resp_tls_interrupt(sl_resp_tls *c)
{
    int fd;
    atomic_store(&c->interrupted, true);
    fd = atomic_load(&c->fd);
    if (fd >= 0)
        shutdown(fd, SHUT_RDWR);
}

void sl_resp_tls_free(sl_resp_tls *c)
{
    int fd;
    if (!c)
        return;
    fd = atomic_load(&c->fd);
    sl_tls_stream_free(&c->stream);
    if (fd >= 0)
        close(fd);
    if (c->reader)
        redisReaderFree(c->reader);
    free(c);
}
