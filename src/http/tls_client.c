/* tls_client.c - the client side of TLS on a non-blocking socket (see
 * tls_client.h). Like tls.c, no bufferevent_openssl: the caller keeps its
 * own events and asks for a handshake step at each readiness. The reading,
 * writing and error words are tls_io.c's, shared with tls.c.
 *
 * A failed handshake is told apart: a certificate that does not verify, or
 * a peer that answers something other than TLS, is a refusal (trying again
 * would give the same); a connection that breaks is not (the peer may have
 * died, and another may take its place). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls_client.h"
#include "tls_io.h"

struct sl_tls_client {
    SSL_CTX *ctx;
    bool verifies;
};

struct sl_tls_conn {
    SSL *ssl;
    bool wants_write;
};

static int load(SSL_CTX *ctx, const sl_tls_client_conf *c, char *err, size_t cap)
{
    if (c->ca && SSL_CTX_load_verify_locations(ctx, c->ca, NULL) != 1) {
        sl__tls_io_say(err, cap, "cannot read the CA file", c->ca);
        return -1;
    }
    if (!c->cert)
        return 0;
    if (SSL_CTX_use_certificate_chain_file(ctx, c->cert) != 1) {
        sl__tls_io_say(err, cap, "cannot read the certificate file", c->cert);
        return -1;
    }
    if (!c->key || SSL_CTX_use_PrivateKey_file(ctx, c->key, SSL_FILETYPE_PEM) != 1) {
        sl__tls_io_say(err, cap, "cannot read the key file", c->key ? c->key : "(none given)");
        return -1;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        sl__tls_io_say(err, cap, "the key does not match the certificate in", c->cert);
        return -1;
    }
    return 0;
}

sl_tls_client *sl_tls_client_new(const sl_tls_client_conf *c, char *err, size_t cap)
{
    sl_tls_client *t = calloc(1, sizeof(*t));
    if (!t || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        snprintf(err, cap, "cannot make a TLS context");
        free(t);
        return NULL;
    }
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                 SSL_MODE_RELEASE_BUFFERS);
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(t->ctx, alpn, sizeof(alpn) - 1);
    t->verifies = c->ca != NULL;
    /* Without CAs nothing is checked: said on purpose by the caller. */
    SSL_CTX_set_verify(t->ctx, t->verifies ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
    if (load(t->ctx, c, err, cap) != 0) {
        sl_tls_client_free(t);
        return NULL;
    }
    return t;
}

void sl_tls_client_free(sl_tls_client *t)
{
    if (!t)
        return;
    SSL_CTX_free(t->ctx);
    free(t);
}

bool sl_tls_client_verifies(const sl_tls_client *t)
{
    return t && t->verifies;
}

/* The name checked in the certificate: an IP address against its IP SANs,
 * a DNS name against its DNS SANs (and sent as SNI). */
static int expect_host(SSL *ssl, const char *host)
{
    unsigned char ip[16];
    if (inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
    if (SSL_set_tlsext_host_name(ssl, host) != 1)
        return -1;
    return SSL_set1_host(ssl, host) == 1 ? 0 : -1;
}

sl_tls_conn *sl_tls_conn_new(sl_tls_client *t, int fd, const char *host)
{
    sl_tls_conn *c = calloc(1, sizeof(*c));
    if (!c)
        return NULL;
    c->ssl = SSL_new(t->ctx); /* holds its own reference to the context */
    if (!c->ssl || SSL_set_fd(c->ssl, fd) != 1 || expect_host(c->ssl, host) != 0) {
        ERR_clear_error();
        sl_tls_conn_free(c);
        return NULL;
    }
    SSL_set_connect_state(c->ssl);
    return c;
}

void sl_tls_conn_free(sl_tls_conn *c)
{
    if (!c)
        return;
    SSL_free(c->ssl);
    ERR_clear_error();
    free(c);
}

static sl_tls_step failed(sl_tls_conn *c, int e, char *err, size_t cap)
{
    long v = SSL_get_verify_result(c->ssl);
    unsigned long code = ERR_peek_last_error();
    sl_tls_step step = SL_TLS_BROKEN;
    if (v != X509_V_OK) {
        snprintf(err, cap, "its certificate did not verify: %s", X509_verify_cert_error_string(v));
        step = SL_TLS_REFUSED;
    } else if (e == SSL_ERROR_SSL && ERR_GET_REASON(code) != SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        const char *why = ERR_reason_error_string(code);
        snprintf(err, cap, "the TLS handshake failed: %s", why ? why : "unknown reason");
        step = SL_TLS_REFUSED;
    } else {
        snprintf(err, cap, "the connection closed during the TLS handshake%s%s",
                 e == SSL_ERROR_SYSCALL && errno ? ": " : "",
                 e == SSL_ERROR_SYSCALL && errno ? strerror(errno) : "");
    }
    ERR_clear_error();
    return step;
}

sl_tls_step sl_tls_conn_handshake(sl_tls_conn *c, char *err, size_t cap)
{
    errno = 0;
    int rc = SSL_do_handshake(c->ssl);
    if (rc == 1) {
        c->wants_write = false;
        return SL_TLS_DONE;
    }
    int e = sl__tls_io_error(c->ssl, rc, &c->wants_write);
    if (sl__tls_io_waits(e))
        return SL_TLS_AGAIN;
    return failed(c, e, err, cap);
}

bool sl_tls_conn_wants_write(const sl_tls_conn *c)
{
    return c->wants_write;
}

ssize_t sl_tls_conn_recv(sl_tls_conn *c, void *buf, size_t n)
{
    return sl__tls_io_recv(c->ssl, &c->wants_write, buf, n);
}

ssize_t sl_tls_conn_send(sl_tls_conn *c, const void *buf, size_t n)
{
    return sl__tls_io_send(c->ssl, &c->wants_write, buf, n);
}

size_t sl_tls_conn_pending(const sl_tls_conn *c)
{
    int n = SSL_pending(c->ssl);
    return n > 0 ? (size_t)n : 0;
}
