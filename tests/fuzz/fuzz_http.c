/* fuzz_http.c - raw HTTP into the real server, in-process.
 *
 * Each input is the bytes one client sends on one connection: a fresh
 * server (sl_server_init: the default configuration, an in-memory SQLite
 * store, the real listener on 127.0.0.1) gets them on a loopback socket,
 * the client then half-closes, and the event loop runs until the server
 * has answered and closed the connection. Several requests in one input
 * are pipelined on the connection, so one input can create a semaphore,
 * claim it and release the claim. What comes back must be HTTP.
 *
 * The harness knows bytes in and answers out only, nothing of the HTTP
 * layer's insides, so it stays valid when that layer is replaced. A server
 * that neither answers nor closes within CLOSE_DEADLINE_S of the client's
 * half-close is a hang, and fails the input. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/event.h>

#include "fuzz.h"
#include "server.h"

/* Bigger than the default body limit plus what the HTTP layer reads and
 * drops after refusing one (SL_HTTP_DRAIN_MAX), so that both are reached. */
#define INPUT_MAX (1200u * 1024)
#define CLOSE_DEADLINE_S 10

/* One input's connection, from the client's side. */
typedef struct client {
    sl_server *srv;
    int fd;
    const uint8_t *data;
    size_t size, sent;
    bool shut;   /* all sent, write side closed */
    bool closed; /* the server closed (EOF or reset) */
    bool timed_out;
    size_t received;
    char head[8]; /* the first bytes of the answer */
    struct event *ev, *deadline;
} client;

static unsigned short port;

/* A free loopback port for the server, found once: binding to port 0 and
 * reading what the kernel chose. Every input's server reuses it (the
 * listener sets SO_REUSEADDR), so that inputs do not use up ports. */
static unsigned short free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    fuzz_check(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    fuzz_check(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    fuzz_check(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    close(fd);
    return ntohs(a.sin_port);
}

static int start_server(sl_server *srv, sl_conf *conf)
{
    sl_conf_defaults(conf);
    conf->log_level = SL_LOG_ERROR; /* the refusals of fuzzed input are not news */
    char listen[32];
    snprintf(listen, sizeof(listen), "127.0.0.1:%u", port);
    free(conf->listen);
    free(conf->store);
    conf->listen = strdup(listen);
    conf->store = strdup("sqlite::memory:");
    fuzz_check(conf->listen && conf->store);
    return sl_server_init(srv, conf);
}

static void done(client *c)
{
    event_del(c->ev);
    event_base_loopbreak(c->srv->base);
}

static void on_client(evutil_socket_t fd, short what, void *arg)
{
    client *c = arg;
    if (what & EV_WRITE) {
        if (c->sent < c->size) {
            ssize_t n = send(fd, c->data + c->sent, c->size - c->sent, MSG_NOSIGNAL);
            if (n > 0)
                c->sent += (size_t)n;
            else if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
                c->sent = c->size; /* the server closed early (413...): read the rest */
            else if (n < 0 && errno != EAGAIN && errno != EINTR)
                fuzz_failf("fuzz_http: sending to the server: %s\n", strerror(errno));
        }
        if (c->sent == c->size && !c->shut) {
            shutdown(fd, SHUT_WR);
            c->shut = true;
            event_del(c->ev);
            event_assign(c->ev, c->srv->base, fd, EV_READ | EV_PERSIST, on_client, c);
            event_add(c->ev, NULL);
            struct timeval t = {CLOSE_DEADLINE_S, 0};
            evtimer_add(c->deadline, &t);
        }
    }
    if (what & EV_READ) {
        char buf[16384];
        ssize_t n = recv(fd, buf, sizeof(buf), 0);
        if (n > 0) {
            for (size_t i = 0; i < (size_t)n && c->received + i < sizeof(c->head); i++)
                c->head[c->received + i] = buf[i];
            c->received += (size_t)n;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            c->closed = true;
            done(c);
        }
    }
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    client *c = arg;
    c->timed_out = true;
    done(c);
}

static int connect_client(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    fuzz_check(fd >= 0);
    fuzz_check(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    /* Non-blocking: the connection completes on the loop (the first
     * EV_WRITE). A blocking connect was cut short by libFuzzer's SIGALRM
     * (EINTR) when the machine was busy; connecting goes on then too. */
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) != 0 && errno != EINPROGRESS &&
        errno != EINTR)
        fuzz_failf("fuzz_http: cannot connect to the server on 127.0.0.1:%u: %s\n", port,
                   strerror(errno));
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > INPUT_MAX)
        return 0;
    signal(SIGPIPE, SIG_IGN);
    if (!port)
        port = free_port();
    sl_server srv;
    sl_conf conf;
    if (start_server(&srv, &conf) != 0) {
        /* The port was taken meanwhile: another, once. */
        sl_server_free(&srv);
        sl_conf_free(&conf);
        port = free_port();
        fuzz_check(start_server(&srv, &conf) == 0);
    }
    client c = {.srv = &srv, .data = data, .size = size};
    c.fd = connect_client();
    c.ev = event_new(srv.base, c.fd, EV_READ | EV_WRITE | EV_PERSIST, on_client, &c);
    c.deadline = evtimer_new(srv.base, on_deadline, &c);
    fuzz_check(c.ev && c.deadline);
    event_add(c.ev, NULL);
    event_base_dispatch(srv.base);
    if (c.timed_out)
        fuzz_failf("fuzz_http: the server neither answered nor closed the connection within %d s "
                   "of the client's half-close (%zu bytes answered)\n",
                   CLOSE_DEADLINE_S, c.received);
    fuzz_check(c.closed);
    /* Whatever came back is HTTP (the layer's own refusals included). */
    if (c.received >= 5)
        fuzz_check(memcmp(c.head, "HTTP/", 5) == 0);
    event_free(c.ev);
    event_free(c.deadline);
    close(c.fd);
    sl_server_free(&srv);
    sl_conf_free(&conf);
    return 0;
}
