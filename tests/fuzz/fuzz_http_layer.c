/* fuzz_http_layer.c - raw bytes into sluiced's HTTP/1.1 layer alone
 * (src/http/http*.c), without the API behind it.
 *
 * Each input is what one client sends on one connection (a socketpair, so
 * that nothing of TCP slows the run): the layer parses it, a small handler
 * answers each request, at once or on a later turn (a parked request, as a
 * long poll's), or as a stream of chunks, and the client half-closes once
 * all is sent. The loop runs until the layer has closed the connection.
 * What must hold: whatever comes back starts as HTTP, the connection ends
 * within CLOSE_DEADLINE_S, and none is left open afterwards; the
 * sanitizers watch the rest (every request answered exactly once, no
 * buffer overrun, no leak). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "fuzz.h"
#include "http_int.h"

#define CLOSE_DEADLINE_S 10

static struct event_base *base;
static sl_http *http;
static int owed; /* requests answered on a later turn, not yet answered */

/* A request answered on a later turn of the loop. */
typedef struct later {
    sl_http_req *req;
    int chunks; /* a stream: chunks still to send, then its end */
    struct event *ev;
} later;

static void later_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    later *l = arg;
    if (l->chunks > 0) {
        sl_http_stream_chunk(l->req, "data: x\n\n", 9);
        l->chunks--;
        struct timeval now = {0, 0};
        evtimer_add(l->ev, &now);
        return;
    }
    if (l->chunks == 0)
        sl_http_stream_end(l->req);
    else
        sl_http_reply(l->req, 200, "application/json", "{}\n", 3);
    event_free(l->ev);
    free(l);
    owed--;
}

static void answer_later(sl_http_req *r, int chunks)
{
    later *l = calloc(1, sizeof(*l));
    fuzz_check(l != NULL);
    l->req = r;
    l->chunks = chunks;
    l->ev = evtimer_new(base, later_cb, l);
    owed++;
    struct timeval now = {0, 0};
    evtimer_add(l->ev, &now);
}

static void handler(void *ud, sl_http_req *r)
{
    (void)ud;
    const char *t = sl_http_req_target(r);
    fuzz_check(t != NULL);
    size_t len;
    const char *body = sl_http_req_body(r, &len);
    fuzz_check(body != NULL && body[len] == '\0');
    const char *host = sl_http_req_header(r, "Host");
    if (host)
        sl_http_add_header(r, "X-Host", host);
    if (strncmp(t, "/park", 5) == 0) {
        answer_later(r, -1);
    } else if (strncmp(t, "/stream", 7) == 0) {
        sl_http_stream_start(r, 200, "text/event-stream");
        answer_later(r, 2);
    } else {
        sl_http_reply(r, len ? 201 : 200, "text/plain", len ? body : t, len ? len : strlen(t));
    }
}

static void init(void)
{
    if (base)
        return;
    base = event_base_new();
    fuzz_check(base != NULL);
    sl_http_opts o = {.max_headers = 16384, .max_body = 65536, .max_connections = 16,
                      .idle_ms = CLOSE_DEADLINE_S * 1000, .handler = handler};
    fuzz_check(sl_http_new(base, &o, &http) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init();
    int sv[2];
    fuzz_check(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
    size_t before = sl_http_connections(http);
    static const uint8_t addr[16] = {0}; /* a socketpair has none */
    sl__http_conn_open(http, sv[0], addr, false, false);
    size_t sent = 0, received = 0;
    bool shut = false, closed = false;
    char head[8];
    time_t deadline = time(NULL) + CLOSE_DEADLINE_S;
    while (!closed) {
        if (time(NULL) > deadline)
            fuzz_failf("the connection did not end within %d s of the input\n", CLOSE_DEADLINE_S);
        if (!shut) {
            ssize_t w = sent < size ? send(sv[1], data + sent, size - sent, MSG_NOSIGNAL) : 0;
            if (w > 0)
                sent += (size_t)w;
            else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
                shut = true; /* the layer closed on us: fine */
            if (sent == size && !shut) {
                shutdown(sv[1], SHUT_WR);
                shut = true;
            }
        }
        event_base_loop(base, EVLOOP_NONBLOCK);
        char buf[65536];
        ssize_t r = recv(sv[1], buf, sizeof(buf), 0);
        if (r > 0) {
            for (ssize_t i = 0; i < r && received + (size_t)i < sizeof(head); i++)
                head[received + (size_t)i] = buf[i];
            received += (size_t)r;
        } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            closed = true;
        }
    }
    if (received >= 7 && memcmp(head, "HTTP/1.", 7) != 0)
        fuzz_failf("the answer does not start as HTTP: %.8s\n", head);
    /* Parked answers still to come run their course: every request is
     * answered, even when its client has gone. */
    while (owed > 0)
        event_base_loop(base, EVLOOP_NONBLOCK);
    close(sv[1]);
    fuzz_check(sl_http_connections(http) == before);
    return 0;
}
