/* http_int.h - the HTTP layer's insides, shared by http_server.c (the
 * listener, the connection list, the Date) and http_conn.c (a connection:
 * reading, parsing, answering, writing, timing out). */
#ifndef SL_HTTP_HTTP_INT_H
#define SL_HTTP_HTTP_INT_H

#include <llhttp.h>
#include <openssl/ssl.h>
#include <sys/types.h>

#include "buf.h"
#include "http.h"

typedef struct sl_http_conn sl_http_conn;

typedef struct http_hdr {
    uint32_t name, name_len, value, value_len; /* offsets into the request's data */
} http_hdr;

struct sl_http_req {
    sl_http_conn *conn;
    sl_buf data; /* the target, header names and values, the body, each NUL-ended */
    uint32_t target;
    size_t target_len;
    http_hdr hdr[SL_HTTP_HEADERS_MAX];
    size_t nhdr;
    bool in_value;     /* the parser is inside a header value */
    bool trailers;     /* past the headers: fields now are a chunked body's trailer */
    size_t head_bytes; /* the request line and headers so far */
    size_t body, body_len;
    sl_http_method method;
    uint8_t llmethod; /* llhttp's number for it: its name, for a relay */
    bool http10, keep_alive;
    int refuse;             /* a status to answer instead of dispatching, or 0 */
    const char *refuse_why; /* its message */
    char out_hdr[SL_HTTP_OUT_HEADERS_MAX];
    size_t out_hdr_len;
    sl_http_gone_fn gone;
    void *gone_arg;
    sl_buf label; /* the handler's, NUL-ended; empty: none */
};

/* A connection's life: waiting for or reading a request, a request handed
 * to the handler and not yet answered, a streamed answer, closing. */
typedef enum {
    CS_IDLE,
    CS_READING,
    CS_ANSWERING,
    CS_STREAMING,
    CS_DRAINING,
    CS_CLOSING
} conn_state;

struct sl_http_conn {
    sl_http *http;
    int fd;
    struct event *rev, *wev, *timer;
    sl_buf in, out;
    llhttp_t parser;
    const char *feed; /* what llhttp_execute is reading, and the byte before it */
    char feed_prev;
    sl_http_req req;
    conn_state state;
    bool started;        /* the request's first byte has come */
    bool reading_paused; /* EV_READ off: the input buffer is full while answering */
    bool writing;        /* EV_WRITE on */
    bool gone;           /* the client is gone (end of file, error, timeout) */
    bool peer_eof;       /* the client closed its sending side */
    bool close_after;    /* close once the output is written */
    bool streaming_10;   /* a streamed answer to HTTP/1.0: ended by closing */
    int busy;            /* callbacks under way: free only when 0 */
    bool dead;           /* to be freed when nothing answers any more */
    bool served;         /* a request was handed over: later ones are kept-alive */
    bool reserved;       /* opened on a kept slot ... */
    bool admitted;       /* ... and its first request was admitted */
    uint8_t addr[16];    /* the client's address (IPv4 mapped into IPv6) */
    int64_t opened_at;   /* ms: accepted */
    uint64_t drain_left; /* CS_DRAINING: body bytes still to drop */
    int64_t started_at;  /* ms: the request's first byte, or the last activity */
    sl_http_gone_fn drained;
    void *drained_arg;
    SSL *ssl;             /* TLS: NULL on a plain connection */
    bool tls_ready;       /* the handshake is done */
    bool tls_wants_write; /* OpenSSL waits for the socket to take bytes */
    sl_buf peer;          /* the verified client's names, NUL-ended (tls.c) */
    size_t npeer;
    bool cluster_peer;    /* its certificate chains to the cluster CA (tls_peer.c) */
    sl_http_conn *prev, *next;
};

/* A listening socket: the main one, and a plain one besides TLS. */
typedef struct sl_http_listener {
    sl_http *http;
    int fd; /* -1: none */
    unsigned port;
    bool plain; /* its connections speak plain HTTP even when TLS is on */
    struct event *ev;
} sl_http_listener;

struct sl_http {
    struct event_base *base;
    sl_http_opts opts;
    sl_http_listener main, plain;
    struct event *accept_retry; /* after EMFILE: listen again a moment later */
    sl_http_conn *head;
    size_t nconns;
    llhttp_settings_t settings;
    SSL_CTX *tls; /* NULL: plain HTTP */
    time_t date_sec;
    char date[40]; /* "Date: ...\r\n" */
};

/* http_server.c */
int64_t sl__http_now_ms(void);
const char *sl__http_date(sl_http *h);
void sl__http_unlink(sl_http *h, sl_http_conn *c);
void sl__http_settings(llhttp_settings_t *s);
/* http_request.c: the request is refused with status and why (answered by
 * the connection once the parser stops); returns llhttp's error. */
int sl__http_refuse_with(sl_http_req *r, int status, const char *why);
/* http_conn.c: bytes were added to c's output: write them unless a
 * callback under way will. */
void sl__http_output_added(sl_http_conn *c);
/* http_conn.c: (re)arms c's idle or slow-request timer for its state. */
void sl__http_update_timer(sl_http_conn *c);

/* http_conn.c */
/* plain: without TLS even when the server has it (the plain listener). */
void sl__http_conn_open(sl_http *h, int fd, const uint8_t addr[16], bool reserved, bool plain);
/* Closes the socket; the connection is freed once nothing answers it. */
void sl__http_conn_close(sl_http_conn *c);
/* At the end: closes and frees it, a request still owed included (its gone
 * callback runs first; nothing may answer it afterwards). */
void sl__http_conn_drop(sl_http_conn *c);

/* tls.c: a connection's TLS (the socket's bytes through OpenSSL). open: 0,
 * or -1 (close it); handshake: 1 done, 0 waiting for the socket, -1
 * failed; recv and send answer as recv(2) and send(2) do, errno EAGAIN
 * when OpenSSL waits for the socket (tls_wants_write: to write). */
int sl__tls_open(sl_http_conn *c);
int sl__tls_handshake(sl_http_conn *c);
ssize_t sl__tls_recv(sl_http_conn *c, void *buf, size_t n);
ssize_t sl__tls_send(sl_http_conn *c, const void *buf, size_t n);
/* Frees the connection's TLS (notify: send close_notify first). */
void sl__tls_close(sl_http_conn *c, bool notify);
/* tls_peer.c: the CAs of client certificates (client_ca, cluster_ca) into
 * ctx; -1 and why in err when a file is bad. */
int sl__tls_client_cas(SSL_CTX *ctx, const sl_http_tls_conf *t, char *err, size_t cap);
/* Whether the verified certificate of a finished handshake chains to the
 * context's cluster CA. */
bool sl__tls_cluster_peer(SSL *ssl);

#endif
