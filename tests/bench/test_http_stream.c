/* test_http_stream.c - streamed responses in the load generator's HTTP
 * client (bench/load/http.h), as etcd's watch sends them: a chunked body of
 * one JSON message per line that goes on while the connection stays open.
 * The parser gives the body so far and drops what was handled, so that an
 * endless stream never reaches the body bound; the connection returns each
 * piece as it arrives, says when the response ends, and can give up on a
 * stream and reconnect for the next request. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

#define S(lit) lit, sizeof(lit) - 1

static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                           "Transfer-Encoding: chunked\r\n\r\n";

static void feed_all(sl_http_parser *p, const char *data, size_t len, int want)
{
    size_t used = 0;
    assert_int_equal(sl_http_parser_feed(p, data, len, &used), want);
    assert_int_equal(used, len);
}

/* The body so far, as a string (for comparisons). */
static const char *so_far(const sl_http_parser *p)
{
    static char buf[256];
    const char *body;
    size_t n = sl_http_parser_body_so_far(p, &body);
    snprintf(buf, sizeof buf, "%.*s", (int)n, n ? body : "");
    return buf;
}

static void parser_body_so_far_and_consume(void **state)
{
    static sl_http_parser p;
    const char *body;
    (void)state;
    sl_http_parser_init(&p, false);
    assert_int_equal(sl_http_parser_body_so_far(&p, &body), 0);
    feed_all(&p, head, strlen(head), 0);
    assert_string_equal(so_far(&p), "");
    feed_all(&p, S("4\r\n{\"a\""), 0); /* a chunk cut in the middle */
    assert_string_equal(so_far(&p), "{\"a\"");
    feed_all(&p, S("\r\n3\r\n}\n{\r\n"), 0);
    assert_string_equal(so_far(&p), "{\"a\"}\n{");
    sl_http_parser_body_consume(&p, 6); /* the first message and its newline */
    assert_string_equal(so_far(&p), "{");
    feed_all(&p, S("2\r\n}\n\r\n"), 0);
    assert_string_equal(so_far(&p), "{}\n");
    sl_http_parser_body_consume(&p, 100); /* more than there is: all */
    assert_string_equal(so_far(&p), "");
    feed_all(&p, S("1\r\nx\r\n0\r\n\r\n"), 1);
    assert_string_equal(sl_http_parser_response(&p)->body, "x");
    sl_http_parser_body_consume(&p, 1); /* after the end: still NUL-terminated */
    assert_string_equal(sl_http_parser_response(&p)->body, "");
    sl_http_parser_free(&p);
}

/* 4 MiB through a stream, consumed as it comes: never over the 1 MiB bound. */
static void endless_stream_stays_bounded(void **state)
{
    static sl_http_parser p;
    static char chunk[64 * 1024 + 16];
    const char *body;
    int i, n;
    (void)state;
    sl_http_parser_init(&p, false);
    feed_all(&p, head, strlen(head), 0);
    n = snprintf(chunk, sizeof chunk, "%x\r\n", 64 * 1024);
    memset(chunk + n, 'm', 64 * 1024);
    memcpy(chunk + n + 64 * 1024, "\r\n", 2);
    for (i = 0; i < 64; i++) {
        feed_all(&p, chunk, (size_t)n + 64 * 1024 + 2, 0);
        assert_int_equal(sl_http_parser_body_so_far(&p, &body), 64 * 1024);
        sl_http_parser_body_consume(&p, 64 * 1024);
    }
    sl_http_parser_free(&p);
}

/* ---- the connection, against a server that streams on cue ---------------- */

typedef struct streamer {
    int lfd;
    char port[16];
    pthread_t thread;
    int cue[2]; /* a byte written here lets the server send its next piece */
    char request[2][1024];
} streamer;

static const char *const pieces[] = {
    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"created\":true}\r\n",
    "2\r\n\n{\r\n",                      /* the end of one message, the start of the next */
    "b\r\n\"events\":1}\r\n1\r\n\n\r\n", /* that message's end */
};

static void read_request(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    while (!strstr(buf, "\r\n\r\n") && n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            return;
        n += (size_t)r;
        buf[n] = '\0';
    }
}

/* First connection: the pieces, one per cue, then waits for the client to
 * close. Second: one ordinary response. */
static void *stream_serve(void *arg)
{
    streamer *s = arg;
    char c, buf[256];
    size_t i;
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    read_request(fd, s->request[0], sizeof s->request[0]);
    for (i = 0; i < sizeof pieces / sizeof pieces[0]; i++)
        if (read(s->cue[0], &c, 1) != 1 || write(fd, pieces[i], strlen(pieces[i])) < 0)
            break;
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);
    fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    read_request(fd, s->request[1], sizeof s->request[1]);
    if (write(fd, S("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")) < 0)
        return NULL;
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);
    return NULL;
}

static void streamer_start(streamer *s, void *(*serve)(void *))
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(s, 0, sizeof *s);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 8), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
    snprintf(s->port, sizeof s->port, "%d", ntohs(a.sin_port));
    assert_int_equal(pipe(s->cue), 0);
    assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void cue(streamer *s)
{
    assert_int_equal(write(s->cue[1], "c", 1), 1);
}

static void expect_read(sl_http_conn *c, const char *want)
{
    const char *data;
    size_t len;
    int status = 0;
    assert_int_equal(sl_http_conn_stream_read(c, &status, &data, &len), 0);
    assert_int_equal(status, 200);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(data, want, len);
}

static void conn_streams_piece_by_piece(void **state)
{
    streamer s;
    sl_http_conn *c;
    const sl_http_response *r;
    (void)state;
    streamer_start(&s, stream_serve);
    assert_int_equal(sl_http_conn_new("127.0.0.1", s.port, 5000, &c), 0);
    assert_int_equal(sl_http_conn_send(c, "POST", "/v3/watch", S("{\"create_request\":{}}")), 0);
    cue(&s);
    expect_read(c, "{\"created\":true}");
    sl_http_conn_stream_consume(c, 16);
    cue(&s);
    expect_read(c, "\n{"); /* only what is new and not consumed */
    sl_http_conn_stream_consume(c, 1);
    cue(&s);
    /* Two chunks in one piece: read returns once the first is in, or both. */
    {
        const char *data;
        size_t len;
        int status;
        char got[64] = "";
        while (strlen(got) < strlen("{\"events\":1}\n")) {
            assert_int_equal(sl_http_conn_stream_read(c, &status, &data, &len), 0);
            snprintf(got, sizeof got, "%.*s", (int)len, data);
        }
        assert_string_equal(got, "{\"events\":1}\n");
    }
    sl_http_conn_close(c); /* give up on the stream */
    assert_int_equal(sl_http_conn_request(c, "GET", "/health", NULL, 0, &r), 0);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "ok");
    sl_http_conn_free(c);
    pthread_join(s.thread, NULL);
    assert_non_null(strstr(s.request[0], "POST /v3/watch HTTP/1.1\r\n"));
    assert_non_null(strstr(s.request[1], "GET /health HTTP/1.1\r\n"));
    close(s.lfd);
    close(s.cue[0]);
    close(s.cue[1]);
}

/* A stream that ends: 1, with what was left; afterwards 1 again, at once. */
static void *end_serve(void *arg)
{
    streamer *s = arg;
    char buf[256];
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    read_request(fd, s->request[0], sizeof s->request[0]);
    if (write(fd, S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    "3\r\nab\n\r\n0\r\n\r\n")) < 0)
        return NULL;
    while (read(fd, buf, sizeof buf) > 0)
        ;
    close(fd);
    return NULL;
}

static void conn_stream_that_ends(void **state)
{
    streamer s;
    sl_http_conn *c;
    const char *data;
    size_t len;
    int status;
    (void)state;
    streamer_start(&s, end_serve);
    assert_int_equal(sl_http_conn_new("127.0.0.1", s.port, 5000, &c), 0);
    assert_int_equal(sl_http_conn_send(c, "POST", "/v3/watch", S("{}")), 0);
    assert_int_equal(sl_http_conn_stream_read(c, &status, &data, &len), 1);
    assert_int_equal(status, 200);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "ab\n", 3);
    assert_int_equal(sl_http_conn_stream_read(c, &status, &data, &len), 1);
    sl_http_conn_free(c);
    pthread_join(s.thread, NULL);
    close(s.lfd);
    close(s.cue[0]);
    close(s.cue[1]);
}

static void conn_stream_read_before_send(void **state)
{
    sl_http_conn *c;
    const char *data;
    size_t len;
    int status;
    (void)state;
    assert_int_equal(sl_http_conn_new("127.0.0.1", "1", 1000, &c), 0);
    assert_int_equal(sl_http_conn_stream_read(c, &status, &data, &len), SL_HTTP_EINVAL);
    assert_null(data);
    sl_http_conn_free(c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parser_body_so_far_and_consume),
        cmocka_unit_test(endless_stream_stays_bounded),
        cmocka_unit_test(conn_streams_piece_by_piece),
        cmocka_unit_test(conn_stream_that_ends),
        cmocka_unit_test(conn_stream_read_before_send),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
