/* tls.c - TLS on the HTTP layer's own sockets, with OpenSSL.
 *
 * No bufferevent_openssl: a connection keeps its plain libevent events and
 * its buffers, and only the bytes go through SSL_read/SSL_write instead of
 * recv/send (sl__tls_recv, sl__tls_send below, on tls_io.c's, which answer
 * like them: EAGAIN when OpenSSL wants the socket again). The handshake is
 * driven by the same events, a step per readiness, so a slow client never
 * holds the loop.
 *
 * The context (certificate, key, client CA, versions) is built whole from
 * the files and swapped in only when it is good: a reload with a bad file
 * keeps the old one. Each connection holds a reference to the context it
 * was accepted with (SSL_new), so open connections go on unchanged. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "http_int.h"
#include "tls_io.h"

/* ALPN: HTTP/1.1 is all this server speaks; a client offering only other
 * protocols goes on without ALPN rather than being refused. */
static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    static const unsigned char ours[] = "\x08http/1.1";
    unsigned char *sel = NULL;
    if (SSL_select_next_proto(&sel, outlen, ours, sizeof(ours) - 1, in, inlen) !=
        OPENSSL_NPN_NEGOTIATED)
        return SSL_TLSEXT_ERR_NOACK;
    *out = sel;
    return SSL_TLSEXT_ERR_OK;
}

static SSL_CTX *tls_ctx(const sl_http_tls_conf *t, char *err, size_t cap)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx) {
        sl__tls_io_say(err, cap, "cannot make a TLS context", "");
        return NULL;
    }
    /* OpenSSL's defaults otherwise (ciphers, curves, security level). */
    int min = t->min_version == 13 ? TLS1_3_VERSION : TLS1_2_VERSION;
    SSL_CTX_set_min_proto_version(ctx, min);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE |
                                 SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                              SSL_MODE_RELEASE_BUFFERS);
    /* Read-ahead: a recv takes whatever the socket holds, several records
     * at once, rather than each record's 5-byte header and then its body:
     * one recv a request instead of two (docs/benchmarks.md, "Over TLS").
     * The bytes it holds beyond a record are seen by SSL_has_pending, not
     * SSL_pending (http_conn.c's read_cb). */
    SSL_CTX_set_read_ahead(ctx, 1);
    /* Session resumption: the server-side cache (TLS 1.2) and tickets
     * (TLS 1.3) are OpenSSL's defaults; the id context lets sessions of a
     * verified client resume. */
    static const unsigned char sid[] = "sluiced";
    SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
    if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1) {
        sl__tls_io_say(err, cap, "cannot read the certificate file", t->cert);
    } else if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1) {
        sl__tls_io_say(err, cap, "cannot read the key file", t->key);
    } else if (SSL_CTX_check_private_key(ctx) != 1) {
        sl__tls_io_say(err, cap, "the key does not match the certificate in", t->cert);
    } else if (sl__tls_client_cas(ctx, t, err, cap) == 0) {
        return ctx;
    }
    SSL_CTX_free(ctx);
    return NULL;
}

int sl_http_set_tls(sl_http *h, const sl_http_tls_conf *t, char *err, size_t cap)
{
    if (!t || !t->cert) {
        SSL_CTX_free(h->tls);
        h->tls = NULL;
        return 0;
    }
    if (!t->key) {
        snprintf(err, cap, "a TLS certificate needs its key (tls.key, --tls-key)");
        return -1;
    }
    SSL_CTX *ctx = tls_ctx(t, err, cap);
    if (!ctx)
        return -1;
    SSL_CTX_free(h->tls); /* connections keep their own reference */
    h->tls = ctx;
    return 0;
}

bool sl_http_tls_on(const sl_http *h)
{
    return h->tls != NULL;
}

/* ---- a connection -------------------------------------------------------------- */

int sl__tls_open(sl_http_conn *c)
{
    c->ssl = SSL_new(c->http->tls);
    if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1) {
        SSL_free(c->ssl);
        c->ssl = NULL;
        ERR_clear_error();
        return -1;
    }
    SSL_set_accept_state(c->ssl);
    return 0;
}

void sl__tls_close(sl_http_conn *c, bool notify)
{
    if (!c->ssl)
        return;
    if (notify && c->tls_ready)
        SSL_shutdown(c->ssl); /* close_notify, best effort: the socket is non-blocking */
    SSL_free(c->ssl);
    c->ssl = NULL;
    ERR_clear_error();
}

static void peer_add(sl_http_conn *c, const char *prefix, const unsigned char *s, int len)
{
    if (len < 0 || memchr(s, 0, (size_t)len) || c->npeer >= SL_HTTP_PEER_NAMES_MAX)
        return; /* a name with a NUL in it names nothing */
    sl_buf_add(&c->peer, prefix, strlen(prefix));
    sl_buf_add(&c->peer, s, (size_t)len);
    sl_buf_add(&c->peer, "", 1);
    c->npeer++;
}

/* The verified client certificate's subject CN (first, "" when none) and
 * its DNS, URI and email SANs ("DNS:", "URI:", "email:"). */
static void peer_names(sl_http_conn *c)
{
    X509 *cert = SSL_get1_peer_certificate(c->ssl);
    if (!cert)
        return;
    if (SSL_get_verify_result(c->ssl) == X509_V_OK) {
        X509_NAME *subj = X509_get_subject_name(cert);
        int i = X509_NAME_get_index_by_NID(subj, NID_commonName, -1);
        unsigned char *cn = NULL;
        int len = i < 0 ? -1
                        : ASN1_STRING_to_UTF8(&cn, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subj, i)));
        if (len >= 0)
            peer_add(c, "", cn, len);
        else
            peer_add(c, "", (const unsigned char *)"", 0);
        OPENSSL_free(cn);
        GENERAL_NAMES *sans = X509_get_ext_d2i(cert, NID_subject_alt_name, NULL, NULL);
        for (int k = 0; sans && k < sk_GENERAL_NAME_num(sans); k++) {
            const GENERAL_NAME *g = sk_GENERAL_NAME_value(sans, k);
            const char *p = g->type == GEN_DNS ? "DNS:" : g->type == GEN_URI ? "URI:"
                          : g->type == GEN_EMAIL ? "email:" : NULL;
            if (p)
                peer_add(c, p, ASN1_STRING_get0_data(g->d.ia5), ASN1_STRING_length(g->d.ia5));
        }
        GENERAL_NAMES_free(sans);
    }
    X509_free(cert);
}

int sl__tls_handshake(sl_http_conn *c)
{
    int rc = SSL_do_handshake(c->ssl);
    if (rc == 1) {
        c->tls_ready = true;
        c->tls_wants_write = false;
        peer_names(c);
        c->cluster_peer = sl__tls_cluster_peer(c->ssl);
        return 1;
    }
    return sl__tls_io_errno(c->ssl, rc, &c->tls_wants_write) == EAGAIN ? 0 : -1;
}

ssize_t sl__tls_recv(sl_http_conn *c, void *buf, size_t n)
{
    return sl__tls_io_recv(c->ssl, &c->tls_wants_write, buf, n);
}

ssize_t sl__tls_send(sl_http_conn *c, const void *buf, size_t n)
{
    return sl__tls_io_send(c->ssl, &c->tls_wants_write, buf, n);
}

/* ---- the request ------------------------------------------------------------ */

bool sl_http_req_tls(const sl_http_req *r)
{
    return r->conn->ssl != NULL;
}

size_t sl_http_req_peer_names(const sl_http_req *r, const char **out, size_t cap)
{
    const sl_http_conn *c = r->conn;
    const char *p = sl_buf_data(&c->peer);
    size_t n = 0;
    for (size_t i = 0; i < c->npeer && n < cap; i++, n++) {
        out[n] = p;
        p += strlen(p) + 1;
    }
    return n;
}
