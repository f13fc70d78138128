/* test_http.c - the load generator's HTTP/1.1 client (bench/load/http.h).
 *
 * The parser (http_parse.c) is fed each response whole, split in two at
 * every byte boundary, split in three at every pair of boundaries (for the
 * shorter ones) and one byte at a time, and must reach the same answer every
 * time: status line, fields (Location), Content-Length and chunked bodies
 * (extensions, trailers, many chunks), bodies delimited by the close,
 * interim 1xx responses, the bounds (16 KiB of header block, 1 MiB of body)
 * and malformed input of every kind.
 *
 * The connection (http_conn.c) talks to a scripted server thread on a
 * loopback port: keep-alive reuse, reconnection after Connection: close,
 * the exact bytes of a request, a server that closes early or says nothing
 * (timeout), bytes nobody asked for, and an interrupt from another thread. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"

/* ---- feeding the parser in pieces ---------------------------------------- */

typedef struct expect {
    int rc; /* 1 (complete) or the SL_HTTP_E* code */
    int status;
    const char *body; /* NULL: not checked (large bodies) */
    size_t body_len;
    const char *location; /* NULL: no Location field */
    bool keep_alive;
    bool chunked;
    size_t used; /* bytes of the input that belong to the response */
} expect;

/* Feeds raw in pieces that end at cuts[] and then at len; stops at the
 * first answer that is not "more". */
static int feed_cuts(sl_http_parser *p, const char *raw, size_t len, const size_t *cuts, int ncuts,
                     size_t *used_total)
{
    size_t pos = 0, used;
    int i, rc = 0;
    *used_total = 0;
    for (i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : len;
        rc = sl_http_parser_feed(p, raw + pos, end - pos, &used);
        *used_total += used;
        if (rc != 0)
            return rc;
        pos = end;
    }
    return rc;
}

static void check_outcome(sl_http_parser *p, int rc, size_t used, const expect *e, const char *how)
{
    const sl_http_response *r = sl_http_parser_response(p);
    if (rc != e->rc)
        fail_msg("%s: returned %d (%s), expected %d", how, rc, p->why ? p->why : "", e->rc);
    if (rc != 1) {
        assert_null(r);
        assert_non_null(p->why);
        return;
    }
    assert_non_null(r);
    assert_int_equal(used, e->used);
    assert_int_equal(r->status, e->status);
    assert_int_equal(r->keep_alive, e->keep_alive);
    assert_int_equal(r->chunked, e->chunked);
    if (e->body) {
        assert_int_equal(r->body_len, e->body_len);
        assert_memory_equal(r->body, e->body, e->body_len);
    }
    assert_int_equal(r->body[r->body_len], '\0');
    if (e->location)
        assert_string_equal(r->location, e->location);
    else
        assert_null(r->location);
}

static void run_cuts(const char *raw, size_t len, const size_t *cuts, int ncuts, const expect *e,
                     const char *how)
{
    static sl_http_parser p; /* 17 KiB: not on the stack */
    size_t used;
    int rc;
    sl_http_parser_init(&p, false);
    rc = feed_cuts(&p, raw, len, cuts, ncuts, &used);
    if (rc == 0 && e->rc != 0) /* all fed: the close may be what ends it */
        rc = sl_http_parser_eof(&p);
    check_outcome(&p, rc, used, e, how);
    sl_http_parser_free(&p);
}

/* Whole, in two at every boundary, in three at every pair (when short),
 * and byte by byte. */
static void check_every_split(const char *raw, size_t len, const expect *e)
{
    size_t cuts[2], *bytes, i, j;
    char how[64];
    run_cuts(raw, len, NULL, 0, e, "whole");
    for (i = 0; i <= len; i++) {
        cuts[0] = i;
        snprintf(how, sizeof how, "split at %zu", i);
        run_cuts(raw, len, cuts, 1, e, how);
    }
    if (len <= 400)
        for (i = 0; i <= len; i++)
            for (j = i; j <= len; j++) {
                cuts[0] = i;
                cuts[1] = j;
                snprintf(how, sizeof how, "split at %zu and %zu", i, j);
                run_cuts(raw, len, cuts, 2, e, how);
            }
    bytes = malloc((len + 1) * sizeof *bytes);
    assert_non_null(bytes);
    for (i = 0; i + 1 < len; i++)
        bytes[i] = i + 1;
    run_cuts(raw, len, bytes, len > 0 ? (int)len - 1 : 0, e, "byte by byte");
    free(bytes);
}

#define S(lit) lit, sizeof(lit) - 1

static void check_ok(const char *raw, size_t len, int status, const char *body, bool keep_alive)
{
    expect e = {1, status, body, strlen(body), NULL, keep_alive, false, len};
    check_every_split(raw, len, &e);
}

static void check_error(const char *raw, size_t len, int code)
{
    expect e = {code, 0, NULL, 0, NULL, false, false, 0};
    check_every_split(raw, len, &e);
}

/* ---- status line ------------------------------------------------------- */

static void status_lines(void **state)
{
    (void)state;
    check_ok(S("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi"), 200, "hi", true);
    check_ok(S("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n"), 404, "", true);
    check_ok(S("HTTP/1.1 503 \r\nContent-Length: 0\r\n\r\n"), 503, "", true);
    check_ok(S("HTTP/1.1 201\r\nContent-Length: 0\r\n\r\n"), 201, "", true);
    check_ok(S("HTTP/1.1 299 Tab\tand \xe9 obs-text\r\nContent-Length: 0\r\n\r\n"), 299, "", true);
    /* HTTP/1.0 closes unless it says keep-alive. */
    check_ok(S("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx"), 200, "x", false);
    check_ok(S("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx"), 200, "x",
             true);
    check_ok(S("HTTP/1.1 200 OK\r\nConnection: upgrade, CLOSE\r\nContent-Length: 1\r\n\r\nx"), 200,
             "x", false);
}

static void status_line_reason_and_version(void **state)
{
    static sl_http_parser p;
    size_t used;
    (void)state;
    sl_http_parser_init(&p, false);
    assert_int_equal(sl_http_parser_feed(&p, S("HTTP/1.0 418 I'm a teapot\r\n\r\n"), &used), 0);
    assert_int_equal(sl_http_parser_eof(&p), 1);
    assert_string_equal(sl_http_parser_response(&p)->reason, "I'm a teapot");
    assert_int_equal(sl_http_parser_response(&p)->minor_version, 0);
    sl_http_parser_reset(&p, false);
    assert_int_equal(sl_http_parser_feed(&p, S("HTTP/1.1 204\r\n\r\n"), &used), 1);
    assert_string_equal(sl_http_parser_response(&p)->reason, "");
    assert_int_equal(sl_http_parser_response(&p)->minor_version, 1);
    sl_http_parser_free(&p);
}

static void malformed_status_lines(void **state)
{
    (void)state;
    check_error(S("HTTP/2 200 OK\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 20 OK\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 2000 OK\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 600 Nope\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 099 Nope\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200OK\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1  200 OK\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("http/1.1 200 OK\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("ICY 200 OK\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("\r\nHTTP/1.1 200 OK\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 O\x01K\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\rX\r\n\r\n"), SL_HTTP_EPROTO); /* bare CR */
    check_error(S("HTTP/1.x 200 OK\r\n\r\n"), SL_HTTP_EPROTO);
}

/* ---- header fields ------------------------------------------------------ */

static void headers_split_across_reads(void **state)
{
    static const char raw[] = "HTTP/1.1 201 Created\r\n"
                              "LOCATION:   /v1/claims/PXO2bxavaObz6GkV4WBqnA \t\r\n"
                              "Content-Type: application/json\r\n"
                              "X-Empty:\r\n"
                              "content-length: 11\r\n"
                              "Date: Mon, 23 Nov 2026 11:48:38 GMT\r\n"
                              "\r\n"
                              "{\"id\":\"P\"}\n";
    expect e = {1,    201,   "{\"id\":\"P\"}\n", 11, "/v1/claims/PXO2bxavaObz6GkV4WBqnA",
                true, false, sizeof raw - 1};
    (void)state;
    check_every_split(raw, sizeof raw - 1, &e);
}

static void bare_lf_line_endings(void **state)
{
    static const char raw[] = "HTTP/1.1 200 OK\nLocation: /x\nContent-Length: 3\n\nabc";
    expect e = {1, 200, "abc", 3, "/x", true, false, sizeof raw - 1};
    (void)state;
    check_every_split(raw, sizeof raw - 1, &e);
}

static void malformed_headers(void **state)
{
    (void)state;
    check_error(S("HTTP/1.1 200 OK\r\nNoColon\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\n: empty name\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nName : space before colon\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nX-A: 1\r\n\tfolded\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nX-A: a\x01b\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nX-A: a\x7f\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nX\x00A: 1\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nX(A): 1\r\n\r\n"), SL_HTTP_EPROTO);
}

/* The reason given names the actual fault, not a symptom of it. */
static void error_messages_say_what(void **state)
{
    static const struct {
        const char *raw, *why;
    } cases[] = {
        {"HTTP/1.1 200 OK\r\nX-A: 1\r\n folded: x\r\n\r\n", "obsolete line folding"},
        {"HTTP/1.1 200 OK\r\nX-A: a\rb\r\n\r\n", "a bare CR inside a line"},
        {"HTTP/1.1 200 OK\r\nX-A: a\x01\r\n\r\n", "control character in a field value"},
        {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",
         "both Content-Length and Transfer-Encoding"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab",
         "chunk data longer than its size"},
    };
    static sl_http_parser p;
    size_t i, used;
    (void)state;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_http_parser_init(&p, false);
        assert_true(sl_http_parser_feed(&p, cases[i].raw, strlen(cases[i].raw), &used) < 0);
        assert_string_equal(p.why, cases[i].why);
        sl_http_parser_free(&p);
    }
}

/* A block of exactly n bytes: status line, padding field, blank line. */
static char *head_of_size(size_t n, size_t *len)
{
    static const char first[] = "HTTP/1.1 204 No Content\r\nX-Pad: ";
    char *s = malloc(n + 1);
    size_t pad = n - (sizeof first - 1) - 4;
    assert_non_null(s);
    memcpy(s, first, sizeof first - 1);
    memset(s + sizeof first - 1, 'a', pad);
    memcpy(s + sizeof first - 1 + pad, "\r\n\r\n", 4);
    s[n] = '\0';
    *len = n;
    return s;
}

static void oversized_header_block_refused(void **state)
{
    size_t len;
    char *ok = head_of_size(SL_HTTP_MAX_HEAD, &len);
    char *big = head_of_size(SL_HTTP_MAX_HEAD + 1, &len);
    expect e = {1, 204, "", 0, NULL, true, false, SL_HTTP_MAX_HEAD};
    static sl_http_parser p;
    size_t used, i;
    int rc = 0;
    (void)state;
    run_cuts(ok, SL_HTTP_MAX_HEAD, NULL, 0, &e, "16 KiB whole");
    e.rc = SL_HTTP_ETOOBIG;
    run_cuts(big, len, NULL, 0, &e, "16 KiB + 1 whole");
    /* In small pieces too, and refused as soon as the bound is crossed,
     * long before the block ends. */
    sl_http_parser_init(&p, false);
    for (i = 0; i < len && rc == 0; i += 7)
        rc = sl_http_parser_feed(&p, big + i, len - i < 7 ? len - i : 7, &used);
    assert_int_equal(rc, SL_HTTP_ETOOBIG);
    assert_true(i <= SL_HTTP_MAX_HEAD + 7);
    sl_http_parser_free(&p);
    /* Many small fields add up the same way. */
    {
        size_t cap = SL_HTTP_MAX_HEAD + 64, n = 0;
        char *many = malloc(cap);
        assert_non_null(many);
        n += (size_t)snprintf(many, cap, "HTTP/1.1 200 OK\r\n");
        while (n + 12 < SL_HTTP_MAX_HEAD + 12)
            n += (size_t)snprintf(many + n, cap - n, "X-Y: 12345\r\n");
        n += (size_t)snprintf(many + n, cap - n, "\r\n");
        e.rc = SL_HTTP_ETOOBIG;
        run_cuts(many, n, NULL, 0, &e, "many fields");
        free(many);
    }
    free(ok);
    free(big);
}

/* ---- Content-Length ----------------------------------------------------- */

static void content_length_bodies(void **state)
{
    static const char two[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
                              "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    expect e = {1, 200, "abc", 3, NULL, true, false, 41};
    expect binary = {1, 200, "\0\r\n\x7f", 4, NULL, true, false, 42};
    (void)state;
    check_ok(S("HTTP/1.1 200 OK\r\nContent-Length: 007\r\n\r\n1234567"), 200, "1234567", true);
    check_ok(S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello"), 200,
             "hello", true);
    check_every_split(S("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n\0\r\n\x7f"), &binary);
    /* Bytes after the body are not part of the response (the caller
     * decides what they are). */
    check_every_split(two, sizeof two - 1, &e);
}

static void content_length_errors(void **state)
{
    (void)state;
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length: abc\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length: 1 2\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello"),
                SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
                  "5\r\nhello\r\n0\r\n\r\n"),
                SL_HTTP_EPROTO);
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
                SL_HTTP_ETOOBIG);
    /* The connection closes in the middle of the body. */
    check_error(S("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort"), SL_HTTP_ECLOSED);
}

static void oversized_bodies_refused(void **state)
{
    static sl_http_parser p;
    char head[128];
    char *body = malloc(SL_HTTP_MAX_BODY + 1);
    size_t used, n;
    (void)state;
    assert_non_null(body);
    memset(body, 'b', SL_HTTP_MAX_BODY + 1);
    /* Exactly 1 MiB is fine. */
    sl_http_parser_init(&p, false);
    n = (size_t)snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n",
                         SL_HTTP_MAX_BODY);
    assert_int_equal(sl_http_parser_feed(&p, head, n, &used), 0);
    assert_int_equal(sl_http_parser_feed(&p, body, SL_HTTP_MAX_BODY, &used), 1);
    assert_int_equal(sl_http_parser_response(&p)->body_len, SL_HTTP_MAX_BODY);
    /* One more byte is refused when the header block ends, before any body. */
    sl_http_parser_reset(&p, false);
    n = (size_t)snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n",
                         SL_HTTP_MAX_BODY + 1);
    assert_int_equal(sl_http_parser_feed(&p, head, n, &used), SL_HTTP_ETOOBIG);
    /* A body delimited by the close. */
    sl_http_parser_reset(&p, false);
    assert_int_equal(sl_http_parser_feed(&p, S("HTTP/1.1 200 OK\r\n\r\n"), &used), 0);
    assert_int_equal(sl_http_parser_feed(&p, body, SL_HTTP_MAX_BODY, &used), 0);
    assert_int_equal(sl_http_parser_feed(&p, "x", 1, &used), SL_HTTP_ETOOBIG);
    /* Chunks that add up to more. */
    sl_http_parser_reset(&p, false);
    assert_int_equal(
        sl_http_parser_feed(&p, S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), &used),
        0);
    n = (size_t)snprintf(head, sizeof head, "%x\r\n", SL_HTTP_MAX_BODY);
    assert_int_equal(sl_http_parser_feed(&p, head, n, &used), 0);
    assert_int_equal(sl_http_parser_feed(&p, body, SL_HTTP_MAX_BODY, &used), 0);
    assert_int_equal(sl_http_parser_feed(&p, S("\r\n1\r\n"), &used), SL_HTTP_ETOOBIG);
    /* One chunk over the bound, refused from its size line. */
    sl_http_parser_reset(&p, false);
    assert_int_equal(
        sl_http_parser_feed(&p, S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), &used),
        0);
    assert_int_equal(sl_http_parser_feed(&p, S("100001\r\n"), &used), SL_HTTP_ETOOBIG);
    sl_http_parser_reset(&p, false);
    assert_int_equal(
        sl_http_parser_feed(&p, S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"), &used),
        0);
    assert_int_equal(sl_http_parser_feed(&p, S("ffffffffffffffffffffffff\r\n"), &used),
                     SL_HTTP_ETOOBIG);
    sl_http_parser_free(&p);
    free(body);
}

/* ---- chunked ------------------------------------------------------------ */

static void chunked_bodies(void **state)
{
    /* What sluiced sends for a long poll: headers, then one chunk, then the
     * last chunk; plus extensions, upper-case hex, leading zeros, empty
     * extension values, a trailer, and bytes of the next response. */
    static const char longpoll[] = "HTTP/1.1 201 Created\r\n"
                                   "Location: /v1/claims/abc\r\n"
                                   "Transfer-Encoding: chunked\r\n\r\n"
                                   "d\r\n{\"state\":\"h\"}\r\n"
                                   "0\r\n\r\n";
    static const char fancy[] = "HTTP/1.1 200 OK\r\n"
                                "Transfer-Encoding: Chunked\r\n\r\n"
                                "3;name=value\r\nabc\r\n"
                                "00A ; q=\"quoted; string\" ;flag\r\n0123456789\r\n"
                                "1\t\r\n\n\r\n"
                                "0;last\r\n"
                                "Trailer-One: x\r\n"
                                "Trailer-Two: y\r\n"
                                "\r\n"
                                "HTTP/1.1 200 OK\r\n";
    expect e1 = {1,    201,  "{\"state\":\"h\"}", 13, "/v1/claims/abc",
                 true, true, sizeof longpoll - 1};
    expect e2 = {1, 200, "abc0123456789\n", 14, NULL, true, true, sizeof fancy - 1 - 17};
    (void)state;
    check_every_split(longpoll, sizeof longpoll - 1, &e1);
    check_every_split(fancy, sizeof fancy - 1, &e2);
}

static void chunked_many_chunks(void **state)
{
    /* 40 one-byte chunks and a bare-LF variant of the framing. */
    char raw[1024], want[64];
    size_t n = 0;
    int i;
    expect e = {1, 200, want, 40, NULL, true, true, 0};
    (void)state;
    n += (size_t)snprintf(raw + n, sizeof raw - n,
                          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
    for (i = 0; i < 40; i++) {
        want[i] = (char)('a' + i % 26);
        n += (size_t)snprintf(raw + n, sizeof raw - n, i % 2 ? "1\r\n%c\r\n" : "1\n%c\n", want[i]);
    }
    n += (size_t)snprintf(raw + n, sizeof raw - n, "0\r\n\r\n");
    e.used = n;
    check_every_split(raw, n, &e);
}

static void chunked_errors(void **state)
{
    (void)state;
#define CH "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    check_error(S(CH "zz\r\nab\r\n0\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "5x\r\nhello\r\n0\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "-5\r\nhello\r\n0\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "5\r\nhelloX\r\n0\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "5\r\nhello\rX0\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "5;a=\x01\r\nhello\r\n0\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "5\r\r\nhello\r\n0\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "0\r\nBad Trailer\r\n\r\n"), SL_HTTP_EPROTO);
    check_error(S(CH "5\r\nhello\r\n"), SL_HTTP_ECLOSED); /* no last chunk */
    check_error(S(CH "5\r\nhel"), SL_HTTP_ECLOSED);
    check_error(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"),
                SL_HTTP_EUNSUPPORTED);
    check_error(S("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked"
                  "\r\n\r\n"),
                SL_HTTP_EPROTO);
#undef CH
}

static void chunk_line_bound(void **state)
{
    char raw[SL_HTTP_MAX_CHUNK_LINE + 200];
    size_t n;
    expect e = {1, 200, "ab", 2, NULL, true, true, 0};
    (void)state;
    /* A chunk-size line of exactly the bound (CRLF included) passes. */
    n = (size_t)snprintf(raw, sizeof raw,
                         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;");
    memset(raw + n, 'e', SL_HTTP_MAX_CHUNK_LINE - 4);
    n += SL_HTTP_MAX_CHUNK_LINE - 4;
    n += (size_t)snprintf(raw + n, sizeof raw - n, "\r\nab\r\n0\r\n\r\n");
    e.used = n;
    run_cuts(raw, n, NULL, 0, &e, "chunk line at the bound");
    /* One byte more is refused. */
    n = (size_t)snprintf(raw, sizeof raw,
                         "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2;");
    memset(raw + n, 'e', SL_HTTP_MAX_CHUNK_LINE - 3);
    n += SL_HTTP_MAX_CHUNK_LINE - 3;
    n += (size_t)snprintf(raw + n, sizeof raw - n, "\r\nab\r\n0\r\n\r\n");
    e.rc = SL_HTTP_ETOOBIG;
    run_cuts(raw, n, NULL, 0, &e, "chunk line over the bound");
}

/* ---- framing without a length ------------------------------------------ */

static void body_until_close(void **state)
{
    (void)state;
    check_ok(S("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end"), 200,
             "until the end", false);
    check_ok(S("HTTP/1.1 200 OK\r\n\r\n"), 200, "", false);
    check_error(S(""), SL_HTTP_ECLOSED);
    check_error(S("HTTP/1.1 200 OK\r\nContent-Len"), SL_HTTP_ECLOSED);
}

static void responses_without_body(void **state)
{
    static sl_http_parser p;
    size_t used;
    (void)state;
    check_ok(S("HTTP/1.1 204 No Content\r\nContent-Length: 10\r\n\r\n"), 204, "", true);
    check_ok(S("HTTP/1.1 304 Not Modified\r\n\r\n"), 304, "", true);
    /* HEAD: the length describes a body that is not sent. */
    sl_http_parser_init(&p, true);
    assert_int_equal(
        sl_http_parser_feed(&p, S("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nHTTP"), &used), 1);
    assert_int_equal(used, 40);
    assert_int_equal(sl_http_parser_response(&p)->body_len, 0);
    sl_http_parser_free(&p);
}

static void interim_responses(void **state)
{
    static const char raw[] = "HTTP/1.1 100 Continue\r\n\r\n"
                              "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                              "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
    expect e = {1, 200, "ok", 2, NULL, true, false, sizeof raw - 1};
    (void)state;
    check_every_split(raw, sizeof raw - 1, &e);
    check_error(S("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"),
                SL_HTTP_EUNSUPPORTED);
}

/* ---- the parser's life ------------------------------------------------- */

static void errors_are_sticky(void **state)
{
    static sl_http_parser p;
    size_t used;
    (void)state;
    sl_http_parser_init(&p, false);
    assert_int_equal(sl_http_parser_feed(&p, S("HTTP/9"), &used), 0);
    assert_int_equal(sl_http_parser_feed(&p, S(".9 200 OK\r\n"), &used), SL_HTTP_EPROTO);
    assert_int_equal(sl_http_parser_feed(&p, S("\r\n"), &used), SL_HTTP_EPROTO);
    assert_int_equal(used, 0);
    assert_int_equal(sl_http_parser_eof(&p), SL_HTTP_EPROTO);
    assert_null(sl_http_parser_response(&p));
    assert_string_equal(p.why, "the status line does not start with HTTP/1.x");
    sl_http_parser_free(&p);
}

static void reset_reuses_the_body_buffer(void **state)
{
    static sl_http_parser p;
    size_t used;
    const sl_http_response *r;
    (void)state;
    sl_http_parser_init(&p, false);
    assert_int_equal(sl_http_parser_feed(&p,
                                         S("HTTP/1.1 200 OK\r\nLocation: /first\r\n"
                                           "Content-Length: 10\r\n\r\n0123456789"),
                                         &used),
                     1);
    assert_string_equal(sl_http_parser_response(&p)->body, "0123456789");
    sl_http_parser_reset(&p, false);
    assert_null(sl_http_parser_response(&p));
    assert_int_equal(
        sl_http_parser_feed(&p, S("HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nab"), &used),
        1);
    r = sl_http_parser_response(&p);
    assert_int_equal(r->status, 202);
    assert_string_equal(r->body, "ab"); /* NUL-terminated at its own length */
    assert_null(r->location);           /* nothing left from the first response */
    /* Feeding a complete parser uses nothing. */
    assert_int_equal(sl_http_parser_feed(&p, S("more"), &used), 1);
    assert_int_equal(used, 0);
    sl_http_parser_free(&p);
    sl_http_parser_free(&p); /* twice is harmless */
}

/* ---- the connection, against a scripted server -------------------------- */

typedef struct step {
    const char *response; /* NULL: read the request, answer nothing */
    bool close_after;     /* close the connection after answering */
} step;

typedef struct fake_server {
    int lfd;
    char port[16];
    pthread_t thread;
    const step *steps;
    int nsteps;
    int accepts;
    char requests[8][1024];
    int nrequests;
    int seen[2]; /* a byte per request read, for the interrupt test */
} fake_server;

/* Reads one request (head and Content-Length body) into buf; -1 at EOF. */
static int read_request(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    char *end = NULL;
    long body = 0;
    while (!end || n < (size_t)(end - buf) + 4 + (size_t)body) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            return -1;
        n += (size_t)r;
        buf[n] = '\0';
        if (!end && (end = strstr(buf, "\r\n\r\n")) != NULL) {
            const char *cl = strstr(buf, "Content-Length: ");
            body = cl && cl < end ? strtol(cl + 16, NULL, 10) : 0;
        }
    }
    return 0;
}

static void *serve(void *arg)
{
    fake_server *s = arg;
    char buf[1024];
    int fd = -1, i;
    for (i = 0; i < s->nsteps; i++) {
        if (fd < 0) {
            fd = accept(s->lfd, NULL, NULL);
            if (fd < 0)
                return NULL;
            s->accepts++;
        }
        if (read_request(fd, buf, sizeof buf) < 0)
            break;
        snprintf(s->requests[s->nrequests++], sizeof s->requests[0], "%s", buf);
        if (write(s->seen[1], "r", 1) != 1)
            break;
        if (s->steps[i].response &&
            write(fd, s->steps[i].response, strlen(s->steps[i].response)) < 0)
            break;
        if (s->steps[i].close_after || !s->steps[i].response) {
            if (!s->steps[i].response) /* wait until the client gives up */
                while (read(fd, buf, sizeof buf) > 0)
                    ;
            close(fd);
            fd = -1;
        }
    }
    if (fd >= 0) {
        while (read(fd, buf, sizeof buf) > 0) /* until the client closes */
            ;
        close(fd);
    }
    return NULL;
}

static void server_start(fake_server *s, const step *steps, int nsteps)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(s, 0, sizeof *s);
    s->steps = steps;
    s->nsteps = nsteps;
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(s->lfd >= 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 8), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
    snprintf(s->port, sizeof s->port, "%d", ntohs(a.sin_port));
    assert_int_equal(pipe(s->seen), 0);
    assert_int_equal(pthread_create(&s->thread, NULL, serve, s), 0);
}

static void server_join(fake_server *s)
{
    shutdown(s->lfd, SHUT_RDWR); /* an accept() still waiting returns */
    pthread_join(s->thread, NULL);
    close(s->lfd);
    close(s->seen[0]);
    close(s->seen[1]);
}

static void conn_keep_alive_and_request_bytes(void **state)
{
    static const step steps[] = {
        {"HTTP/1.1 201 Created\r\nLocation: /v1/claims/A\r\nContent-Length: 2\r\n\r\n{}", false},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", false},
    };
    fake_server s;
    sl_http_conn *c;
    const sl_http_response *r;
    (void)state;
    server_start(&s, steps, 2);
    assert_int_equal(sl_http_conn_new("127.0.0.1", s.port, 5000, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "POST", "/v1/claims", "{\"a\":1}", 7, &r), 0);
    assert_int_equal(r->status, 201);
    assert_string_equal(r->location, "/v1/claims/A");
    assert_string_equal(r->body, "{}");
    assert_int_equal(sl_http_conn_request(c, "GET", "/v1/claims/A?wait=1s", NULL, 0, &r), 0);
    assert_int_equal(r->status, 200);
    assert_string_equal(r->body, "ok");
    assert_string_equal(sl_http_conn_error(c), "");
    sl_http_conn_free(c);
    server_join(&s);
    assert_int_equal(s.accepts, 1); /* both on one connection */
    {
        char want[256];
        snprintf(want, sizeof want,
                 "POST /v1/claims HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n"
                 "Content-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":1}",
                 s.port);
        assert_string_equal(s.requests[0], want);
        snprintf(want, sizeof want,
                 "GET /v1/claims/A?wait=1s HTTP/1.1\r\nHost: 127.0.0.1:%s\r\n\r\n", s.port);
        assert_string_equal(s.requests[1], want);
    }
}

static void conn_reconnects_after_close(void **state)
{
    static const step steps[] = {
        {"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na", true},
        {"HTTP/1.1 200 OK\r\n\r\nuntil close", true},
        {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nc", false},
    };
    fake_server s;
    sl_http_conn *c;
    const sl_http_response *r;
    (void)state;
    server_start(&s, steps, 3);
    assert_int_equal(sl_http_conn_new("localhost", s.port, 5000, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/a", NULL, 0, &r), 0);
    assert_string_equal(r->body, "a");
    assert_false(r->keep_alive);
    assert_int_equal(sl_http_conn_request(c, "GET", "/b", NULL, 0, &r), 0);
    assert_string_equal(r->body, "until close");
    assert_int_equal(sl_http_conn_request(c, "GET", "/c", NULL, 0, &r), 0);
    assert_string_equal(r->body, "c");
    sl_http_conn_free(c);
    server_join(&s);
    assert_int_equal(s.accepts, 3);
}

static void conn_server_closes_early(void **state)
{
    static const step steps[] = {
        {"", true},
        {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", true},
        {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nd", false},
    };
    fake_server s;
    sl_http_conn *c;
    const sl_http_response *r;
    (void)state;
    server_start(&s, steps, 3);
    assert_int_equal(sl_http_conn_new("127.0.0.1", s.port, 5000, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), SL_HTTP_ECLOSED);
    assert_null(r);
    assert_string_equal(sl_http_conn_error(c),
                        "connection closed early: the server closed without responding");
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), SL_HTTP_ECLOSED);
    assert_string_equal(sl_http_conn_error(c),
                        "connection closed early: the server closed in the middle of the body");
    /* The connection is usable again: the next request reconnects. */
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), 0);
    assert_string_equal(r->body, "d");
    sl_http_conn_free(c);
    server_join(&s);
    assert_int_equal(s.accepts, 3);
}

static void conn_refuses_unsolicited_bytes(void **state)
{
    static const step steps[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\n", false},
        {"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nb", false},
    };
    fake_server s;
    sl_http_conn *c;
    const sl_http_response *r;
    (void)state;
    server_start(&s, steps, 2);
    assert_int_equal(sl_http_conn_new("127.0.0.1", s.port, 5000, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), 0);
    assert_string_equal(r->body, "a");
    /* Whether the extra bytes came in the same read as the response (then
     * they are refused before the next request is sent) or in a later one
     * (then they stand where the next status line should), the next
     * exchange fails. */
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), SL_HTTP_EPROTO);
    assert_null(r);
    sl_http_conn_free(c);
    server_join(&s);
}

static void conn_times_out(void **state)
{
    static const step steps[] = {{NULL, false}};
    fake_server s;
    sl_http_conn *c;
    const sl_http_response *r;
    (void)state;
    server_start(&s, steps, 1);
    assert_int_equal(sl_http_conn_new("127.0.0.1", s.port, 100, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), SL_HTTP_ETIMEDOUT);
    assert_string_equal(sl_http_conn_error(c), "timed out: waiting for the response");
    sl_http_conn_free(c);
    server_join(&s);
}

typedef struct interrupter {
    fake_server *s;
    sl_http_conn *c;
} interrupter;

/* Waits until the server has the request (so the client is in, or about to
 * be in, its read), then interrupts. */
static void *interrupt_when_asked(void *arg)
{
    interrupter *it = arg;
    char one;
    if (read(it->s->seen[0], &one, 1) == 1)
        sl_http_conn_interrupt(it->c);
    return NULL;
}

static void conn_interrupted_from_another_thread(void **state)
{
    static const step steps[] = {{NULL, false}};
    fake_server s;
    interrupter it;
    pthread_t t;
    sl_http_conn *c;
    const sl_http_response *r;
    (void)state;
    server_start(&s, steps, 1);
    assert_int_equal(sl_http_conn_new("127.0.0.1", s.port, 60000, &c), 0);
    it.s = &s;
    it.c = c;
    assert_int_equal(pthread_create(&t, NULL, interrupt_when_asked, &it), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), SL_HTTP_EINTERRUPTED);
    pthread_join(t, NULL);
    /* And every later call. */
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), SL_HTTP_EINTERRUPTED);
    sl_http_conn_free(c);
    server_join(&s);
}

static void conn_refuses_bad_requests(void **state)
{
    sl_http_conn *c;
    const sl_http_response *r;
    char *big = malloc(SL_HTTP_MAX_REQUEST);
    (void)state;
    assert_non_null(big);
    memset(big, 'x', SL_HTTP_MAX_REQUEST);
    /* Port 9 (discard) need not be listening: nothing is sent. */
    assert_int_equal(sl_http_conn_new("127.0.0.1", "9", 1000, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/a b", NULL, 0, &r), SL_HTTP_EINVAL);
    assert_int_equal(sl_http_conn_request(c, "GET", "/a\r\nX: y", NULL, 0, &r), SL_HTTP_EINVAL);
    assert_int_equal(sl_http_conn_request(c, "G T", "/", NULL, 0, &r), SL_HTTP_EINVAL);
    assert_int_equal(sl_http_conn_request(c, "GET", "", NULL, 0, &r), SL_HTTP_EINVAL);
    assert_int_equal(sl_http_conn_request(c, "POST", "/", big, SL_HTTP_MAX_REQUEST, &r),
                     SL_HTTP_EINVAL);
    assert_string_equal(sl_http_conn_error(c), "invalid request: request over 64 KiB");
    assert_int_equal(sl_http_conn_recv(c, &r), SL_HTTP_EINVAL); /* nothing was sent */
    sl_http_conn_free(c);
    free(big);
}

static void strerror_names_every_code(void **state)
{
    int code;
    (void)state;
    for (code = SL_HTTP_EINTERRUPTED; code <= 0; code++)
        assert_string_not_equal(sl_http_strerror(code), "unknown error");
    assert_string_equal(sl_http_strerror(-100), "unknown error");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(status_lines),
        cmocka_unit_test(status_line_reason_and_version),
        cmocka_unit_test(malformed_status_lines),
        cmocka_unit_test(headers_split_across_reads),
        cmocka_unit_test(bare_lf_line_endings),
        cmocka_unit_test(malformed_headers),
        cmocka_unit_test(error_messages_say_what),
        cmocka_unit_test(oversized_header_block_refused),
        cmocka_unit_test(content_length_bodies),
        cmocka_unit_test(content_length_errors),
        cmocka_unit_test(oversized_bodies_refused),
        cmocka_unit_test(chunked_bodies),
        cmocka_unit_test(chunked_many_chunks),
        cmocka_unit_test(chunked_errors),
        cmocka_unit_test(chunk_line_bound),
        cmocka_unit_test(body_until_close),
        cmocka_unit_test(responses_without_body),
        cmocka_unit_test(interim_responses),
        cmocka_unit_test(errors_are_sticky),
        cmocka_unit_test(reset_reuses_the_body_buffer),
        cmocka_unit_test(conn_keep_alive_and_request_bytes),
        cmocka_unit_test(conn_reconnects_after_close),
        cmocka_unit_test(conn_server_closes_early),
        cmocka_unit_test(conn_refuses_unsolicited_bytes),
        cmocka_unit_test(conn_times_out),
        cmocka_unit_test(conn_interrupted_from_another_thread),
        cmocka_unit_test(conn_refuses_bad_requests),
        cmocka_unit_test(strerror_names_every_code),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
