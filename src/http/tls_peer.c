/* tls_peer.c - which CAs the listener takes client certificates from, and
 * which of those certificates make the connection a peer: another server of
 * the cluster (shared mode), which may tell who its relayed client is.
 *
 * The handshake verifies a certificate against client_ca and cluster_ca
 * together; a peer is a connection whose certificate chains to cluster_ca,
 * checked again after the handshake against a store of cluster_ca alone
 * (kept with the context, so a reload's new CA applies to new connections
 * only). A certificate of client_ca alone is a client's, never a peer's.
 * Without client_ca the certificate is asked for but not required, and one
 * that does not verify fails nothing: it is neither a peer's nor a name. */
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "http_int.h"
#include "tls_io.h"

static void free_store(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                       void *argp)
{
    (void)parent, (void)ad, (void)idx, (void)argl, (void)argp;
    X509_STORE_free(ptr);
}

static int store_index(void)
{
    static int idx = -1;
    if (idx < 0)
        idx = SSL_CTX_get_ex_new_index(0, NULL, NULL, NULL, free_store);
    return idx;
}

/* The CAs of path: trusted by the handshake, named in its certificate
 * request. */
static int trust(SSL_CTX *ctx, STACK_OF(X509_NAME) *names, const char *path, const char *what,
                 char *err, size_t cap)
{
    if (SSL_CTX_load_verify_locations(ctx, path, NULL) != 1 ||
        SSL_add_file_cert_subjects_to_stack(names, path) != 1 || sk_X509_NAME_num(names) == 0) {
        sl__tls_io_say(err, cap, what, path);
        return -1;
    }
    return 0;
}

/* Without client_ca a certificate proves a peer or nothing: one that does
 * not verify leaves the connection a plain client's. */
static int verify_optional(int ok, X509_STORE_CTX *x)
{
    (void)ok, (void)x;
    return 1;
}

static X509_STORE *cluster_store(const char *path, char *err, size_t cap)
{
    X509_STORE *s = X509_STORE_new();
    if (!s || X509_STORE_load_locations(s, path, NULL) != 1) {
        sl__tls_io_say(err, cap, "cannot read the cluster CA file", path);
        X509_STORE_free(s);
        return NULL;
    }
    return s;
}

int sl__tls_client_cas(SSL_CTX *ctx, const sl_http_tls_conf *t, char *err, size_t cap)
{
    if (!t->client_ca && !t->cluster_ca)
        return 0;
    STACK_OF(X509_NAME) *names = sk_X509_NAME_new_null();
    if (!names || (t->client_ca && trust(ctx, names, t->client_ca, "cannot read the client CA "
                                         "file (or it holds no CA certificate)", err, cap)) ||
        (t->cluster_ca && trust(ctx, names, t->cluster_ca, "cannot read the cluster CA file "
                                "(or it holds no CA certificate)", err, cap))) {
        sk_X509_NAME_pop_free(names, X509_NAME_free);
        return -1;
    }
    SSL_CTX_set_client_CA_list(ctx, names);
    if (t->cluster_ca) {
        X509_STORE *s = cluster_store(t->cluster_ca, err, cap);
        if (!s || SSL_CTX_set_ex_data(ctx, store_index(), s) != 1) {
            X509_STORE_free(s);
            return -1;
        }
    }
    /* mTLS: a client without a certificate client_ca or cluster_ca signed
     * is refused in the handshake (expired ones too: OpenSSL checks the
     * dates). */
    if (t->client_ca)
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
    else
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, verify_optional);
    return 0;
}

bool sl__tls_cluster_peer(SSL *ssl)
{
    X509_STORE *s = SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), store_index());
    X509 *cert = SSL_get0_peer_certificate(ssl);
    if (!s || !cert || SSL_get_verify_result(ssl) != X509_V_OK)
        return false;
    X509_STORE_CTX *x = X509_STORE_CTX_new();
    bool ok = x && X509_STORE_CTX_init(x, s, cert, SSL_get_peer_cert_chain(ssl)) == 1 &&
              X509_verify_cert(x) == 1;
    X509_STORE_CTX_free(x);
    ERR_clear_error();
    return ok;
}

bool sl_http_req_cluster_peer(const sl_http_req *r)
{
    return r->conn->cluster_peer;
}
