/* http.h - sluiced's own HTTP/1.1 server layer, on libevent's event_base.
 *
 * Plain events (no bufferevents, no evhttp) and llhttp as the parser. Per
 * connection: one input buffer, one output buffer, one request at a time.
 * Requests pipelined behind one that is still being answered stay in the
 * input buffer, unparsed, and are taken in order once it is answered. Reads
 * stay on while a request is parked (a long poll), so a client that goes
 * away is seen at once: end of file means gone. Every answer is appended to
 * the output buffer and written with one write() (EV_WRITE is armed only
 * when the socket is full).
 *
 * Request bodies come with Content-Length or chunked. What it refuses,
 * each with the API's JSON error and the connection closed: both at once,
 * or Content-Length twice (400: how requests are smuggled past proxies), a
 * Transfer-Encoding other than chunked (501), a body over max_body (413,
 * announced or as chunks arrive), headers over max_headers or SL_HTTP_HEADERS_MAX fields
 * (431), a target over SL_HTTP_TARGET_MAX (414), anything llhttp cannot
 * parse (400), a connection over max_connections or over max_per_client
 * from its address (503, at accept), and a connection on one of the last
 * `reserved` slots whose first request the admit callback refuses (503).
 * It honours Expect: 100-continue, HTTP/1.0 and Connection: close, closes
 * a connection idle for idle_ms, whose request does not arrive whole
 * within idle_ms of its first byte (a slow client), or whose request line
 * and headers do not within header_ms (of its first byte, or of the
 * connection's opening for its first request: a half-sent request holds
 * no slot for long), sets SO_KEEPALIVE and TCP_NODELAY,
 * writes a Date cached once a second, and streams with chunked encoding
 * (close-delimited to HTTP/1.0 clients).
 *
 * Ownership: the layer owns connections and requests. A request handed to
 * the handler stays valid until it is answered (sl_http_reply, or
 * sl_http_stream_end after sl_http_stream_start), whatever its client does
 * meanwhile; if the client has gone, the answer is dropped. Every request
 * must be answered exactly once. */
#ifndef SL_HTTP_HTTP_H
#define SL_HTTP_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#define SL_HTTP_TARGET_MAX 8192  /* bytes of the request target: 414 above */
#define SL_HTTP_HEADERS_MAX 100  /* header fields in one request: 431 above */
#define SL_HTTP_OUT_HEADERS_MAX 2048 /* bytes of the headers a handler adds */
#define SL_HTTP_DRAIN_MAX (1u << 20) /* body bytes read and dropped after a 413 */

typedef struct sl_http sl_http;
typedef struct sl_http_req sl_http_req;

typedef enum {
    SL_HTTP_GET,
    SL_HTTP_HEAD,
    SL_HTTP_POST,
    SL_HTTP_PUT,
    SL_HTTP_DELETE,
    SL_HTTP_PATCH,
    SL_HTTP_OPTIONS,
    SL_HTTP_OTHER,
} sl_http_method;

/* Called for each request, in order per connection. */
typedef void (*sl_http_handler_fn)(void *ud, sl_http_req *req);
/* Called for each answer the layer gives by itself (errors, 503 over the
 * cap), with its status: for the server's metrics. */
typedef void (*sl_http_own_answer_fn)(void *ud, int status);
/* Whether the first request of a connection on a kept slot may go on. */
typedef bool (*sl_http_admit_fn)(void *ud, sl_http_req *req);

/* Why the layer closed a connection to keep its slots. */
typedef enum {
    SL_HTTP_REFUSED_MAX,            /* max_connections open */
    SL_HTTP_REFUSED_PER_CLIENT,     /* max_per_client open from its address */
    SL_HTTP_REFUSED_RESERVED,       /* a kept slot's first request was not admitted */
    SL_HTTP_REFUSED_HEADER_TIMEOUT, /* the request line and headers came too late */
    SL_HTTP_REFUSED_COUNT
} sl_http_refusal;
typedef void (*sl_http_refused_fn)(void *ud, sl_http_refusal why);
/* "max_connections", "per_client", "reserved", "header_timeout". */
const char *sl_http_refusal_name(sl_http_refusal why);

typedef struct sl_http_opts {
    size_t max_headers;     /* the request line and headers, bytes */
    size_t max_body;        /* Content-Length above it: 413 */
    size_t max_connections; /* more: 503 and closed */
    size_t max_per_client;  /* from one address; more: 503 and closed; 0: no cap */
    size_t reserved;        /* the last slots: their first request must be admitted */
    int64_t idle_ms;        /* idle keep-alive, and a slow request's whole arrival */
    int64_t header_ms;      /* a request's line and headers; 0: idle_ms only */
    sl_http_handler_fn handler;
    sl_http_own_answer_fn own_answer; /* may be NULL */
    sl_http_admit_fn admit;           /* NULL: every request is admitted */
    sl_http_refused_fn refused;       /* may be NULL */
    void *ud;
} sl_http_opts;

int sl_http_new(struct event_base *base, const sl_http_opts *opts, sl_http **out);
/* New limits (max_headers, max_body, max_connections, max_per_client,
 * reserved, idle_ms, header_ms) for what arrives from now on: a
 * configuration reloaded. */
void sl_http_set_limits(sl_http *h, const sl_http_opts *opts);
/* Listens on host:port (a name or an address, v4 or v6). -1 and a message
 * in err when it cannot. */
int sl_http_listen(sl_http *h, const char *host, unsigned port, char *err, size_t cap);
/* A second listener whose connections speak plain HTTP even when the
 * server has TLS (local health checks on loopback: the caller decides
 * where it may listen). Same handler, same limits. */
int sl_http_listen_plain(sl_http *h, const char *host, unsigned port, char *err, size_t cap);
/* The port listened on (the one the kernel chose for port 0). */
unsigned sl_http_port(const sl_http *h);
unsigned sl_http_plain_port(const sl_http *h);
size_t sl_http_connections(const sl_http *h);
/* Stops listening and closes every connection. Requests still being
 * answered get their gone callback first, then are dropped: call it only
 * when nothing will answer them any more. */
void sl_http_free(sl_http *h);

/* ---- the request ------------------------------------------------------------ */

sl_http_method sl_http_req_method(const sl_http_req *r);
/* The method as sent ("GET", "TRACE"). */
const char *sl_http_req_method_name(const sl_http_req *r);
/* The target as sent: "/path?query", NUL-terminated. */
const char *sl_http_req_target(const sl_http_req *r);
/* The first header of that name (case-insensitive), NUL-terminated; NULL
 * when absent. */
const char *sl_http_req_header(const sl_http_req *r, const char *name);
/* The body (Content-Length bytes; NUL-terminated for convenience). */
const char *sl_http_req_body(const sl_http_req *r, size_t *len);

/* A short text the handler keeps with the request until it is answered
 * (copied; NULL clears it), such as who sent it, for whoever answers it
 * later; NULL when none was set. */
void sl_http_req_set_label(sl_http_req *r, const char *label);
const char *sl_http_req_label(const sl_http_req *r);
/* The client's address as text ("127.0.0.1", "::1"), into out. */
#define SL_HTTP_ADDRESS_MAX 46 /* INET6_ADDRSTRLEN */
void sl_http_req_address(const sl_http_req *r, char *out, size_t cap);

/* fn(arg) runs once if the client goes away before the request's answer
 * ended; the request stays valid until answered. NULL clears it. */
typedef void (*sl_http_gone_fn)(void *arg);
void sl_http_req_on_gone(sl_http_req *r, sl_http_gone_fn fn, void *arg);
bool sl_http_req_gone(const sl_http_req *r);
/* Whether the client has gone or closed its end, looking at the socket now
 * (the close may be waiting behind other events of this turn). */
bool sl_http_req_hung_up(const sl_http_req *r);

/* ---- the answer ------------------------------------------------------------- */

/* Adds a header to the answer (copied; the answer's extra headers are
 * bounded by SL_HTTP_OUT_HEADERS_MAX bytes, past which they are dropped). */
void sl_http_add_header(sl_http_req *r, const char *name, const char *value);
/* Answers: status, Content-Type (NULL: none), the body (copied). A HEAD
 * request gets the headers only; 204 and 304 never get a body. */
void sl_http_reply(sl_http_req *r, int status, const char *ctype, const void *body, size_t len);
/* The answer to a HEAD whose body is not at hand (a relayed one): the
 * Content-Length another server announced, and no body. */
void sl_http_reply_head(sl_http_req *r, int status, const char *ctype, size_t length);
/* A streamed answer: the status and headers now, chunks as they come, then
 * the end, which answers the request. */
void sl_http_stream_start(sl_http_req *r, int status, const char *ctype);
void sl_http_stream_chunk(sl_http_req *r, const void *data, size_t len);
void sl_http_stream_end(sl_http_req *r);
/* Ends a streamed answer without its last chunk and closes the connection
 * once what is queued is written: the client sees an answer cut short (a
 * leader stepping down mid-wait: the answer's outcome is not known). */
void sl_http_stream_abort(sl_http_req *r);
/* Bytes of the connection's answers not yet taken by the socket. */
size_t sl_http_unsent(const sl_http_req *r);
/* fn(arg) runs once, when the connection's answers have all been written
 * (at once if they have). NULL clears it. */
void sl_http_on_drained(sl_http_req *r, sl_http_gone_fn fn, void *arg);

/* ---- TLS ------------------------------------------------------------------------ */

/* TLS on the listener (tls.c, OpenSSL): TLS 1.2 and 1.3 only, OpenSSL's
 * secure defaults, ALPN http/1.1, session resumption. With client_ca, a
 * client must show a certificate that CA (or cluster_ca) signed (mTLS).
 * With cluster_ca, a certificate that CA signed makes its connection a
 * cluster peer (tls_peer.c). */
typedef struct sl_http_tls_conf {
    const char *cert;      /* PEM: the certificate, then its chain; NULL: plain HTTP */
    const char *key;       /* PEM: its private key */
    const char *client_ca; /* PEM: the CAs of client certificates; NULL: none asked */
    const char *cluster_ca; /* PEM: the CAs of the cluster's servers; NULL: no peers */
    int min_version;       /* 12 (TLS 1.2, the default) or 13 */
} sl_http_tls_conf;

/* Reads the files into a new TLS context for the connections accepted from
 * now on (a reload: open connections keep theirs). -1 and why in err when a
 * file is bad: the context in use stays. t NULL or without cert: plain. */
int sl_http_set_tls(sl_http *h, const sl_http_tls_conf *t, char *err, size_t cap);
bool sl_http_tls_on(const sl_http *h);
/* Whether the request came over TLS. */
bool sl_http_req_tls(const sl_http_req *r);
/* The identity of a verified client certificate: up to cap names into out,
 * the subject's CN first ("" when it has none), then its subjectAltNames
 * "DNS:...", "URI:...", "email:...". 0 without a verified certificate. */
#define SL_HTTP_PEER_NAMES_MAX 16
size_t sl_http_req_peer_names(const sl_http_req *r, const char **out, size_t cap);
/* Whether the connection's verified certificate chains to cluster_ca: it
 * is another server of the cluster, proven. */
bool sl_http_req_cluster_peer(const sl_http_req *r);

/* The reason phrase of a status ("Created"). */
const char *sl_http_status_text(int status);

#endif
