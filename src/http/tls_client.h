/* tls_client.h - the client side of TLS on a non-blocking socket (OpenSSL):
 * what a server uses to reach another over HTTPS (shared mode's relay).
 *
 * A context holds the CAs that the other side's certificate must chain to
 * (none: the certificate is not checked at all, said on purpose) and the
 * certificate this side shows when asked for one. A connection checks the
 * certificate against the host it was told to reach (a DNS name or an IP
 * address: SNI for a name) in the handshake; no byte of application data
 * goes out before the handshake ended well. */
#ifndef SL_HTTP_TLS_CLIENT_H
#define SL_HTTP_TLS_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct sl_tls_client sl_tls_client;
typedef struct sl_tls_conn sl_tls_conn;

typedef struct sl_tls_client_conf {
    const char *ca;   /* PEM CAs the server's certificate must chain to; NULL: none checked */
    const char *cert; /* PEM certificate shown when the server asks; NULL: none */
    const char *key;  /* its private key */
} sl_tls_client_conf;

/* A context from the files, or NULL and err says which file and why. */
sl_tls_client *sl_tls_client_new(const sl_tls_client_conf *c, char *err, size_t cap);
/* Connections made from it keep their own reference. */
void sl_tls_client_free(sl_tls_client *t);
/* Whether it checks the server's certificate (it has CAs). */
bool sl_tls_client_verifies(const sl_tls_client *t);

/* A connection on fd (connected or connecting) to host; NULL when out of memory. */
sl_tls_conn *sl_tls_conn_new(sl_tls_client *t, int fd, const char *host);
void sl_tls_conn_free(sl_tls_conn *c);

typedef enum {
    SL_TLS_DONE,    /* the handshake ended well */
    SL_TLS_AGAIN,   /* call again when the socket is ready (sl_tls_conn_wants_write) */
    SL_TLS_BROKEN,  /* the connection broke (reset, end of file): nothing was proven */
    SL_TLS_REFUSED, /* the certificate did not verify, or the other side speaks no TLS */
} sl_tls_step;

/* One step of the handshake; on BROKEN or REFUSED, why is in err. */
sl_tls_step sl_tls_conn_handshake(sl_tls_conn *c, char *err, size_t cap);
/* Whether OpenSSL waits for the socket to be writable (else readable). */
bool sl_tls_conn_wants_write(const sl_tls_conn *c);
/* Like recv and send: -1 with errno EAGAIN when the socket must be ready
 * first, EPROTO when the server sent a fatal alert (in TLS 1.3 a refused
 * client certificate comes so, at the first read), 0 (recv) at the end of
 * the stream. */
ssize_t sl_tls_conn_recv(sl_tls_conn *c, void *buf, size_t n);
ssize_t sl_tls_conn_send(sl_tls_conn *c, const void *buf, size_t n);
/* Bytes already decrypted and waiting to be read (no socket event comes for them). */
size_t sl_tls_conn_pending(const sl_tls_conn *c);

#endif
