/* http.h - a lean HTTP/1.1 client for the load generator.
 *
 * Why not libcurl: a curl easy handle costs 60-90 us of client CPU per
 * request/response cycle, as much as the server spends on the request, so a
 * benchmark driven by it measures curl. This client does only what a load
 * generator needs: one request at a time on a keep-alive connection over a
 * blocking socket, responses framed by Content-Length, by chunked transfer
 * coding (sluiced answers long polls with the headers first and a chunked body
 * later) or by the connection closing. Over TLS too (tls.h: OpenSSL, the
 * server's certificate verified). No redirects, no pipelining, no transfer
 * codings but chunked.
 *
 * Two layers:
 *  - sl_http_parser: a push parser with no I/O. Feed it bytes as they come, in
 *    pieces of any size; it says when the response is complete and how many
 *    of the bytes were part of it. Tested byte boundary by byte boundary.
 *  - sl_http_conn: one connection to one host:port, reconnected when the
 *    server closes it between requests.
 *
 * Everything is bounded: the header block (status line, fields and the blank
 * line; trailers of a chunked body count towards the same budget) to
 * SL_HTTP_MAX_HEAD, a body to SL_HTTP_MAX_BODY, one chunk-size line to
 * SL_HTTP_MAX_CHUNK_LINE, a request to SL_HTTP_MAX_REQUEST. */
#ifndef SL_BENCH_HTTP_H
#define SL_BENCH_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_HTTP_MAX_HEAD (16 * 1024)
#define SL_HTTP_MAX_BODY (1024 * 1024)
#define SL_HTTP_MAX_CHUNK_LINE 1024
#define SL_HTTP_MAX_REQUEST (64 * 1024)

/* Error codes (negative, as every fallible call here returns them). */
enum {
    SL_HTTP_EIO = -1,          /* a socket call failed (errno is in the message) */
    SL_HTTP_ECLOSED = -2,      /* the server closed before the response was complete */
    SL_HTTP_EPROTO = -3,       /* the response is not valid HTTP/1.1 */
    SL_HTTP_ETOOBIG = -4,      /* the header block, a chunk line or the body is over its bound */
    SL_HTTP_EUNSUPPORTED = -5, /* valid but not spoken here (a coding other than chunked, 101) */
    SL_HTTP_ETIMEDOUT = -6,    /* no byte for the connection's timeout */
    SL_HTTP_ENOMEM = -7,
    SL_HTTP_EINVAL = -8, /* a bad argument (a request over SL_HTTP_MAX_REQUEST, CR in a path) */
    SL_HTTP_EINTERRUPTED = -9, /* sl_http_conn_interrupt() was called */
    SL_HTTP_ETLS = -10,        /* TLS failed: a certificate refused, a protocol error */
};

/* The error code in words ("malformed response", ...). Static text. */
const char *sl_http_strerror(int code);

/* One parsed response. Strings point into the parser (status line and
 * fields into its header buffer, the body into its body buffer); they stay
 * valid until the parser is reset or freed. */
typedef struct sl_http_response {
    int status;           /* 100..599 */
    int minor_version;    /* the x of HTTP/1.x */
    bool keep_alive;      /* the connection may carry another request */
    bool chunked;         /* the body came in chunks */
    const char *reason;   /* reason phrase, NUL-terminated, possibly "" */
    const char *location; /* the Location field's value, NUL-terminated, or NULL */
    const char *body;     /* NUL-terminated (the NUL is not counted); "" when none */
    size_t body_len;
    size_t head_len; /* bytes of the header block, blank line included */
} sl_http_response;

/* The parser's place in a response (private to http.c; here so that a
 * parser can live on the stack or inside a connection). */
typedef enum {
    SL_HTTP_P_HEAD,       /* status line and header fields */
    SL_HTTP_P_BODY_LEN,   /* Content-Length bytes */
    SL_HTTP_P_BODY_EOF,   /* everything until the server closes */
    SL_HTTP_P_CHUNK_LINE, /* chunk-size [; extensions] CRLF */
    SL_HTTP_P_CHUNK_DATA,
    SL_HTTP_P_CHUNK_CR, /* the CRLF after a chunk's data */
    SL_HTTP_P_CHUNK_LF,
    SL_HTTP_P_TRAILER, /* trailer fields after the last chunk */
    SL_HTTP_P_DONE,
    SL_HTTP_P_ERROR,
} sl_http_parse_state;

typedef struct sl_http_parser {
    sl_http_parse_state state;
    bool head_request;     /* the request was HEAD: the response has no body */
    bool seen_status;      /* the status line has been parsed */
    bool have_length;      /* a Content-Length field was seen */
    bool close;            /* a Connection field said close */
    bool keep_alive_token; /* a Connection field said keep-alive (matters for HTTP/1.0) */
    int error;             /* the SL_HTTP_E* code once in SL_HTTP_P_ERROR */
    const char *why;       /* that error in detail, static text */
    uint64_t length;       /* Content-Length */
    uint64_t left;         /* body or chunk bytes still to come */
    size_t head_len;       /* bytes used in head[] */
    size_t line_start;     /* where the line being read starts in head[] */
    size_t line_len;       /* bytes in line[] (chunk-size lines) */
    char *body;            /* malloc'd, grows up to SL_HTTP_MAX_BODY + 1, kept across resets */
    size_t body_cap;
    sl_http_response resp;
    char head[SL_HTTP_MAX_HEAD + 1];
    char line[SL_HTTP_MAX_CHUNK_LINE + 1];
} sl_http_parser;

/* Prepares p for a first response. head_request: the request was HEAD, so
 * the response carries no body whatever its fields say. */
void sl_http_parser_init(sl_http_parser *p, bool head_request);
/* Prepares p for the next response on the connection, keeping its body
 * buffer; the previous response's strings become invalid. */
void sl_http_parser_reset(sl_http_parser *p, bool head_request);
/* Frees the body buffer. p may be initialised again afterwards. */
void sl_http_parser_free(sl_http_parser *p);

/* Feeds len bytes of the response. Returns 1 when the response is complete
 * (then *used says how many of the bytes belonged to it; the rest is not
 * part of it), 0 when more bytes are needed (all were used), or a negative
 * SL_HTTP_E* code, after which the parser stays failed and p->why says what
 * was wrong. Feeding after completion returns 1 and uses nothing. */
int sl_http_parser_feed(sl_http_parser *p, const char *data, size_t len, size_t *used /* OUT */);
/* The body bytes received so far, in *body (NULL when none; not
 * NUL-terminated before completion): for a caller that reads a streamed
 * body as it arrives. Returns their number. */
size_t sl_http_parser_body_so_far(const sl_http_parser *p, const char **body /* OUT */);
/* Drops the first n of those bytes (n at most their number). */
void sl_http_parser_body_consume(sl_http_parser *p, size_t n);
/* Tells the parser that the connection was closed: 1 when that completes
 * the response (a body delimited by the close), else SL_HTTP_ECLOSED. */
int sl_http_parser_eof(sl_http_parser *p);
/* The complete response, or NULL before completion. */
const sl_http_response *sl_http_parser_response(const sl_http_parser *p);

/* ---- a connection ------------------------------------------------------ */

typedef struct sl_http_conn sl_http_conn;
typedef struct sl_tls_client sl_tls_client; /* tls.h */

/* A connection to host:port (a numeric IPv4/IPv6 address or a name),
 * connected lazily by the first send. timeout_ms bounds every wait for the
 * socket (connect, each send and each read); 0 means none. On success the
 * caller owns *out and frees it with sl_http_conn_free(). */
int sl_http_conn_new(const char *host, const char *port, int timeout_ms,
                     sl_http_conn **out /* OUT */);
/* The same over TLS when tls is not NULL: each connect is followed by a
 * handshake (verified as tls says; host is the name the certificate must
 * carry). tls must outlive the connection. */
int sl_http_conn_new_tls(const char *host, const char *port, int timeout_ms, sl_tls_client *tls,
                         sl_http_conn **out /* OUT */);
/* TLS: a reconnect offers the session of the previous connection (session
 * resumption: an abbreviated handshake). Off by default. */
void sl_http_conn_set_resume(sl_http_conn *c, bool resume);
/* TLS: handshakes completed on c so far, and how many of them resumed a
 * session. Both 0 in clear. */
void sl_http_conn_tls_counts(const sl_http_conn *c, uint64_t *handshakes /* OUT */,
                             uint64_t *resumed /* OUT */);
/* Closes the socket and frees everything. NULL is fine. */
void sl_http_conn_free(sl_http_conn *c);

/* Sends one request: method and target (origin-form, "/v1/claims/ID?wait=1s")
 * must not contain CR, LF or spaces; body (may be NULL when body_len is 0) is
 * sent as application/json with a Content-Length when body is not NULL.
 * Connects first if the connection is not open. */
int sl_http_conn_send(sl_http_conn *c, const char *method, const char *target, const char *body,
                      size_t body_len);
/* Reads the response to the request just sent. *out stays valid until the
 * next send. A response that is not keep-alive closes the connection (the
 * next send reconnects). After a failure the connection is closed. */
int sl_http_conn_recv(sl_http_conn *c, const sl_http_response **out /* OUT */);
/* send + recv. */
int sl_http_conn_request(sl_http_conn *c, const char *method, const char *target, const char *body,
                         size_t body_len, const sl_http_response **out /* OUT */);
/* A streamed response: a body that keeps coming for as long as the
 * connection stays open (etcd's watch answers with one JSON message per line
 * as events happen, in chunks that never end). After sl_http_conn_send():
 * sl_http_conn_stream_read() waits until body bytes arrive beyond those it
 * returned before (or until the response ends), then gives every body byte
 * not yet consumed in *data and *len (not NUL-terminated; valid until the
 * next call on c) and the status in *status. Returns 0 while the response
 * goes on, 1 when it is complete (keep-alive as after recv), or a negative
 * code (the connection is closed). */
int sl_http_conn_stream_read(sl_http_conn *c, int *status /* OUT */, const char **data /* OUT */,
                             size_t *len /* OUT */);
/* Drops the first n body bytes that stream_read gave (messages handled), so
 * that a stream that never ends stays within SL_HTTP_MAX_BODY. */
void sl_http_conn_stream_consume(sl_http_conn *c, size_t n);
/* Gives up on the response in progress (a stream no longer wanted): the
 * connection closes and the next send reconnects. */
void sl_http_conn_close(sl_http_conn *c);
/* From another thread: makes a send or recv blocked on c (and every later
 * one) fail with SL_HTTP_EINTERRUPTED. c stays allocated: its owner frees it. */
void sl_http_conn_interrupt(sl_http_conn *c);
/* The last failure in words, with detail ("malformed response: bad chunk
 * size"); "" when none. Valid until the next call on c. */
const char *sl_http_conn_error(const sl_http_conn *c);

#endif
