/* http_server.c - the HTTP layer's listener: accepting connections under
 * the cap, the list of open ones, the Date header cached once a second,
 * and the end. The connections themselves are http_conn.c. */
#define _GNU_SOURCE /* accept4: non-blocking and close-on-exec in one call */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http_int.h"

#define BACKLOG 1024
/* Connections accepted per wakeup, so that a flood of them does not keep
 * the loop from the ones already open. */
#define ACCEPTS_PER_TURN 64
/* After EMFILE (out of descriptors) the listener rests this long. */
#define ACCEPT_RETRY_MS 100
/* SO_KEEPALIVE probes: a peer that vanished without a FIN (a machine that
 * died, a cable pulled) is found within about a minute and a half. */
#define KEEPIDLE_S 60
#define KEEPINTVL_S 10
#define KEEPCNT 3

int64_t sl__http_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *sl__http_date(sl_http *h)
{
    time_t now = time(NULL);
    if (now != h->date_sec) {
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(h->date, sizeof(h->date), "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &tm);
        h->date_sec = now;
    }
    return h->date;
}

void sl__http_unlink(sl_http *h, sl_http_conn *c)
{
    if (c->prev)
        c->prev->next = c->next;
    else if (h->head == c)
        h->head = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    h->nconns--;
}

size_t sl_http_connections(const sl_http *h)
{
    return h->nconns;
}

unsigned sl_http_port(const sl_http *h)
{
    return h->main.port;
}

static void tune(int fd)
{
    int one = 1;
    /* Answers are whole messages: none waits for Nagle's algorithm (with it
     * a small answer could wait 40 ms for a delayed ACK). */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    int idle = KEEPIDLE_S, intvl = KEEPINTVL_S, cnt = KEEPCNT;
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
}

const char *sl_http_refusal_name(sl_http_refusal why)
{
    static const char *const names[SL_HTTP_REFUSED_COUNT] = {"max_connections", "per_client",
                                                             "reserved", "header_timeout"};
    return why < SL_HTTP_REFUSED_COUNT ? names[why] : "other";
}

/* Over a cap: a 503 written at once (the socket is new, its buffer
 * empty) and the connection closed. */
static void turn_away(sl_http *h, int fd, sl_http_refusal why, bool plain)
{
    char body[320], msg[640];
    int bn = why == SL_HTTP_REFUSED_PER_CLIENT
                 ? snprintf(body, sizeof(body),
                            "{\"error\":{\"code\":\"unavailable\",\"message\":\"your address has "
                            "%zu connections open, the server's limit per client "
                            "(limits.max_connections_per_client); close some or retry "
                            "later\"}}\n",
                            h->opts.max_per_client)
                 : snprintf(body, sizeof(body),
                            "{\"error\":{\"code\":\"unavailable\",\"message\":\"the server has "
                            "%zu connections open, its limit; retry later\"}}\n",
                            h->opts.max_connections);
    int n = snprintf(msg, sizeof(msg),
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                     "%sContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                     sl__http_date(h), bn, body);
    /* Over TLS a plain answer would be garbage before a handshake: closed only. */
    if ((!h->tls || plain) && n > 0 && (size_t)n < sizeof(msg)) {
        ssize_t w = send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
        (void)w;
    }
    if (h->opts.own_answer)
        h->opts.own_answer(h->opts.ud, 503);
    if (h->opts.refused)
        h->opts.refused(h->opts.ud, why);
    close(fd);
}

/* The client's address as 16 bytes: an IPv4 one mapped into IPv6, so that
 * both families compare alike. */
static void addr_key(const struct sockaddr_storage *ss, uint8_t key[16])
{
    memset(key, 0, 16);
    if (ss->ss_family == AF_INET6) {
        memcpy(key, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
    } else if (ss->ss_family == AF_INET) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
    }
}

/* Open connections from that address. A walk of the list: at most
 * max_connections short compares per accept, and no table to keep. */
static size_t from_addr(const sl_http *h, const uint8_t key[16])
{
    size_t n = 0;
    for (const sl_http_conn *c = h->head; c; c = c->next)
        n += memcmp(c->addr, key, 16) == 0;
    return n;
}

/* Where a new connection goes: turned away over a cap, or opened (on a
 * kept slot once only the last `reserved` are left). */
static void admit_conn(sl_http *h, int fd, const struct sockaddr_storage *ss, bool plain)
{
    uint8_t key[16];
    addr_key(ss, key);
    if (h->nconns >= h->opts.max_connections)
        turn_away(h, fd, SL_HTTP_REFUSED_MAX, plain);
    else if (h->opts.max_per_client && from_addr(h, key) >= h->opts.max_per_client)
        turn_away(h, fd, SL_HTTP_REFUSED_PER_CLIENT, plain);
    else
        sl__http_conn_open(h, fd, key, h->nconns + h->opts.reserved >= h->opts.max_connections,
                           plain);
}

static void listeners_pause(sl_http *h, bool pause)
{
    sl_http_listener *ls[2] = {&h->main, &h->plain};
    for (int i = 0; i < 2; i++)
        if (ls[i]->ev) {
            if (pause)
                event_del(ls[i]->ev);
            else
                event_add(ls[i]->ev, NULL);
        }
}

static void accept_cb(evutil_socket_t lfd, short what, void *arg)
{
    (void)what;
    sl_http_listener *l = arg;
    sl_http *h = l->http;
    for (int i = 0; i < ACCEPTS_PER_TURN; i++) {
        struct sockaddr_storage ss = {0};
        socklen_t sl = sizeof(ss);
        int fd = accept4(lfd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE) {
                /* Out of descriptors: rest a moment rather than spin on a
                 * listener that stays readable. */
                listeners_pause(h, true);
                struct timeval tv = {0, ACCEPT_RETRY_MS * 1000};
                evtimer_add(h->accept_retry, &tv);
            }
            return; /* EAGAIN: no more; other errors concern that client only */
        }
        tune(fd);
        admit_conn(h, fd, &ss, l->plain);
    }
}

static void accept_retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    listeners_pause(arg, false);
}

int sl_http_new(struct event_base *base, const sl_http_opts *opts, sl_http **out)
{
    sl_http *h = calloc(1, sizeof(*h));
    if (!h)
        abort();
    h->base = base;
    h->opts = *opts;
    h->main = (sl_http_listener){.http = h, .fd = -1};
    h->plain = (sl_http_listener){.http = h, .fd = -1, .plain = true};
    sl__http_settings(&h->settings);
    h->accept_retry = evtimer_new(base, accept_retry_cb, h);
    if (!h->accept_retry)
        abort();
    *out = h;
    return 0;
}

static int listen_on(sl_http_listener *l, const char *host, unsigned port, char *err, size_t cap)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    char ps[16];
    snprintf(ps, sizeof(ps), "%u", port);
    struct addrinfo *ai = NULL;
    int rc = getaddrinfo(host, ps, &hints, &ai);
    if (rc != 0) {
        snprintf(err, cap, "%s: %s", host, gai_strerror(rc));
        return -1;
    }
    int fd = -1, e = 0;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            e = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, BACKLOG) != 0) {
            e = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        snprintf(err, cap, "%s", strerror(e));
        return -1;
    }
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        l->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    l->fd = fd;
    l->ev = event_new(l->http->base, fd, EV_READ | EV_PERSIST, accept_cb, l);
    if (!l->ev)
        abort();
    event_add(l->ev, NULL);
    return 0;
}

int sl_http_listen(sl_http *h, const char *host, unsigned port, char *err, size_t cap)
{
    return listen_on(&h->main, host, port, err, cap);
}

int sl_http_listen_plain(sl_http *h, const char *host, unsigned port, char *err, size_t cap)
{
    return listen_on(&h->plain, host, port, err, cap);
}

unsigned sl_http_plain_port(const sl_http *h)
{
    return h->plain.port;
}

void sl_http_set_limits(sl_http *h, const sl_http_opts *opts)
{
    h->opts.max_headers = opts->max_headers;
    h->opts.max_body = opts->max_body;
    h->opts.max_connections = opts->max_connections;
    h->opts.max_per_client = opts->max_per_client;
    h->opts.reserved = opts->reserved;
    h->opts.idle_ms = opts->idle_ms;
    h->opts.header_ms = opts->header_ms;
}

void sl_http_free(sl_http *h)
{
    if (!h)
        return;
    sl_http_listener *ls[2] = {&h->main, &h->plain};
    for (int i = 0; i < 2; i++) {
        if (ls[i]->ev)
            event_free(ls[i]->ev);
        if (ls[i]->fd >= 0)
            close(ls[i]->fd);
    }
    event_free(h->accept_retry);
    while (h->head)
        sl__http_conn_drop(h->head); /* unlinks and frees it */
    SSL_CTX_free(h->tls);
    free(h);
}
