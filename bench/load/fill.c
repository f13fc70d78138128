/* fill.c - pipelined POST /v1/claims over a few connections (see fill.h). */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "fill.h"
#include "http.h"
#include "json_scan.h"

#define IO_TIMEOUT_S 60 /* a server busy committing a huge batch still answers */
#define RBUF (64 * 1024)
#define REQUEST_MAX 600 /* one POST with its body: names are at most 128 bytes */
#define DEPTH_MAX 256
#define CLAIM_PATH "/v1/claims/"

typedef struct fill_run fill_run;

/* One thread and its connection. It owns the locks i with
 * i % connections == index, and creates their claims in order: item k of
 * the thread is claim k % (waiters + 1) of its (k / (waiters + 1))-th lock. */
typedef struct filler {
    fill_run *run;
    int index;
    int fd;
    pthread_t thread;
    bool started;
    uint64_t items, sent, done, held, pending;
    char error[600];
    size_t rpos, rlen;
    sl_http_parser parser;
    char rbuf[RBUF];
    char wbuf[DEPTH_MAX * REQUEST_MAX];
} filler;

struct fill_run {
    const sl_fill_config *cfg;
    sl_fill_lock *locks;
    struct sockaddr_storage addr;
    socklen_t addr_len;
    char host[300];
    int n;            /* connections: at most one per lock */
    atomic_bool stop; /* a thread failed: the others stop too */
};

static int failf(filler *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int failf(filler *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->error, sizeof f->error, fmt, ap);
    va_end(ap);
    atomic_store(&f->run->stop, true);
    return -1;
}

static int resolve(fill_run *r, char *err, size_t cap)
{
    const char *address = r->cfg->address, *colon = strrchr(address, ':');
    char host[256];
    struct addrinfo hints, *res = NULL;
    size_t hlen = colon ? (size_t)(colon - address) : 0;
    if (!colon || hlen == 0 || hlen >= sizeof host) {
        snprintf(err, cap, "\"%s\" is not HOST:PORT", address);
        return -1;
    }
    memcpy(host, address, hlen);
    host[hlen] = '\0';
    if (host[0] == '[' && hlen > 2 && host[hlen - 1] == ']') {
        memmove(host, host + 1, hlen - 2);
        host[hlen - 2] = '\0';
    }
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res) {
        snprintf(err, cap, "cannot resolve %s", address);
        return -1;
    }
    memcpy(&r->addr, res->ai_addr, res->ai_addrlen);
    r->addr_len = res->ai_addrlen;
    freeaddrinfo(res);
    snprintf(r->host, sizeof r->host, "%s", address);
    return 0;
}

static int connect_filler(filler *f)
{
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S, .tv_usec = 0};
    int one = 1;
    f->fd = socket(f->run->addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (f->fd < 0)
        return failf(f, "socket: %s", strerror(errno));
    setsockopt(f->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(f->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (connect(f->fd, (struct sockaddr *)&f->run->addr, f->run->addr_len) != 0)
        return failf(f, "connect %s: %s", f->run->host, strerror(errno));
    return 0;
}

static int lock_of(const filler *f, uint64_t item)
{
    return f->index + f->run->n * (int)(item / (uint64_t)(f->run->cfg->waiters + 1));
}

/* Appends item's request to the buffer: a claim on the lock's mutex, no
 * wait, holder "scale-LOCK". */
static size_t put_request(const filler *f, uint64_t item, char *buf)
{
    const sl_fill_config *cfg = f->run->cfg;
    char body[300];
    int lock = lock_of(f, item);
    int blen = snprintf(body, sizeof body,
                        "{\"holder\":\"scale-%d\",\"locks\":[{\"mutex\":\"%s/m-%d\"}]}", lock,
                        cfg->prefix, lock);
    int n = snprintf(buf, REQUEST_MAX,
                     "POST /v1/claims HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
                     "Content-Length: %d\r\n\r\n%s",
                     f->run->host, blen, body);
    return n > 0 && n < REQUEST_MAX ? (size_t)n : 0;
}

/* Sends requests until depth are in flight or none is left. */
static int send_more(filler *f)
{
    const sl_fill_config *cfg = f->run->cfg;
    size_t len = 0, off = 0;
    while (f->sent < f->items && f->sent - f->done < (uint64_t)cfg->depth) {
        size_t n = put_request(f, f->sent, f->wbuf + len);
        if (n == 0)
            return failf(f, "a request over %d bytes (prefix too long?)", REQUEST_MAX);
        len += n;
        f->sent++;
    }
    while (off < len) {
        ssize_t n = send(f->fd, f->wbuf + off, len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return failf(f, "send: %s", strerror(errno));
        off += (size_t)n;
    }
    return 0;
}

/* The next response, complete, from what is buffered and the socket. */
static int recv_response(filler *f, const sl_http_response **out)
{
    sl_http_parser_reset(&f->parser, false);
    for (;;) {
        if (f->rpos < f->rlen) {
            size_t used = 0;
            int rc = sl_http_parser_feed(&f->parser, f->rbuf + f->rpos, f->rlen - f->rpos, &used);
            f->rpos += used;
            if (rc < 0)
                return failf(f, "a malformed response: %s", f->parser.why);
            if (rc == 1) {
                *out = sl_http_parser_response(&f->parser);
                return 0;
            }
        }
        ssize_t n = recv(f->fd, f->rbuf, sizeof f->rbuf, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return failf(f, "recv: %s", n == 0 ? "the server closed the connection"
                                               : strerror(errno));
        f->rpos = 0;
        f->rlen = (size_t)n;
    }
}

static void copy_id(char *dst, const char *location)
{
    snprintf(dst, SL_FILL_ID_MAX, "%s", location + strlen(CLAIM_PATH));
}

/* Checks the answer to item: 201, a claim id, held for a lock's first
 * claim and pending for the others; keeps what the scale run needs. */
static int on_response(filler *f, uint64_t item, const sl_http_response *r)
{
    const sl_fill_config *cfg = f->run->cfg;
    int k = (int)(item % (uint64_t)(cfg->waiters + 1));
    sl_fill_lock *l = &f->run->locks[lock_of(f, item)];
    sl_json_span body = sl_json_span_of(r->body, r->body_len), state, locks, lock0, tok;
    sl_json_iter it;
    int64_t token;
    if (r->status != 201 || !r->location || strncmp(r->location, CLAIM_PATH, strlen(CLAIM_PATH)) ||
        strlen(r->location) - strlen(CLAIM_PATH) >= SL_FILL_ID_MAX ||
        sl_json_member(body, "state", &state) < 0)
        return failf(f, "POST /v1/claims answered %d: %.300s", r->status, r->body);
    if (!sl_json_is_string(state, k == 0 ? "held" : "pending"))
        return failf(f, "claim %d of lock %d is not %s: %.300s", k, lock_of(f, item),
                     k == 0 ? "held" : "pending", r->body);
    if (k == 0) {
        if (sl_json_member(body, "locks", &locks) < 0 || sl_json_iter_init(&it, locks) < 0 ||
            sl_json_iter_next(&it, &lock0) != 1 || sl_json_member(lock0, "token", &tok) < 0 ||
            sl_json_int64(tok, &token) < 0 || token <= 0)
            return failf(f, "a held claim without a token: %.300s", r->body);
        l->token = (uint64_t)token;
        copy_id(l->holder, r->location);
        f->held++;
    } else {
        f->pending++;
    }
    if (k == 1)
        copy_id(l->second, r->location);
    if (k == cfg->waiters)
        copy_id(l->last, r->location);
    return 0;
}

static void *filler_main(void *arg)
{
    filler *f = arg;
    const sl_http_response *r = NULL;
    if (connect_filler(f) < 0)
        return NULL;
    while (f->done < f->items && !atomic_load(&f->run->stop)) {
        if (send_more(f) < 0)
            return NULL;
        /* Read what has come (at least one answer), then top up in one
         * send(): syscalls and wake-ups are shared by many requests. */
        do {
            if (recv_response(f, &r) < 0 || on_response(f, f->done, r) < 0)
                return NULL;
            f->done++;
        } while (f->done < f->sent && f->rpos < f->rlen);
    }
    return NULL;
}

static void collect(fill_run *r, filler *fs, int n, sl_fill_result *out)
{
    for (int i = 0; i < n; i++) {
        out->created += fs[i].held + fs[i].pending;
        out->held += fs[i].held;
        out->pending += fs[i].pending;
        if (!out->error[0] && fs[i].error[0])
            snprintf(out->error, sizeof out->error, "connection %d: %.500s", i, fs[i].error);
    }
    (void)r;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int sl_fill_run(const sl_fill_config *cfg, sl_fill_lock *locks, sl_fill_result *out)
{
    fill_run r;
    filler *fs;
    int n = cfg->connections, i;
    double t0;
    memset(out, 0, sizeof *out);
    memset(&r, 0, sizeof r);
    if (cfg->waiters < 1 || cfg->locks < 1 || n < 1 || cfg->depth < 1 || cfg->depth > DEPTH_MAX) {
        snprintf(out->error, sizeof out->error, "bad fill: %d locks, %d waiters, %d x %d",
                 cfg->locks, cfg->waiters, n, cfg->depth);
        return -1;
    }
    if (n > cfg->locks)
        n = cfg->locks;
    r.cfg = cfg;
    r.locks = locks;
    r.n = n;
    atomic_init(&r.stop, false);
    if (resolve(&r, out->error, sizeof out->error) < 0)
        return -1;
    fs = calloc((size_t)n, sizeof *fs);
    if (!fs) {
        snprintf(out->error, sizeof out->error, "out of memory");
        return -1;
    }
    t0 = now_s();
    for (i = 0; i < n; i++) {
        filler *f = &fs[i];
        int nlocks = cfg->locks / n + (i < cfg->locks % n);
        f->run = &r;
        f->index = i;
        f->fd = -1;
        f->items = (uint64_t)nlocks * (uint64_t)(cfg->waiters + 1);
        sl_http_parser_init(&f->parser, false);
        if (pthread_create(&f->thread, NULL, filler_main, f) != 0) {
            failf(f, "pthread_create failed");
            break;
        }
        f->started = true;
    }
    for (i = 0; i < n; i++) {
        if (fs[i].started)
            pthread_join(fs[i].thread, NULL);
        if (fs[i].fd >= 0)
            close(fs[i].fd);
        sl_http_parser_free(&fs[i].parser);
    }
    out->seconds = now_s() - t0;
    collect(&r, fs, n, out);
    free(fs);
    return out->error[0] ? -1 : 0;
}
