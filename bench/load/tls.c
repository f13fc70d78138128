/* tls.c - TLS for the load generator's connections (see tls.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "tls.h"

struct sl_tls_client {
    SSL_CTX *ctx;
    bool insecure;
    char ca[256]; /* for error messages: what the certificate was checked against */
};

/* OpenSSL's last error in words, or fallback. */
static void ssl_reason(char *out, size_t cap, const char *fallback)
{
    unsigned long e = ERR_peek_last_error();
    if (e)
        ERR_error_string_n(e, out, cap);
    else
        snprintf(out, cap, "%s", fallback);
    ERR_clear_error();
}

/* A new session from the server (at the end of a TLS 1.2 handshake, or a
 * TLS 1.3 ticket read with an answer): the stream keeps the latest. */
static int new_session(SSL *ssl, SSL_SESSION *sess)
{
    sl_tls_stream *st = SSL_get_app_data(ssl);
    if (!st)
        return 0;
    if (st->session)
        SSL_SESSION_free(st->session);
    st->session = sess;
    return 1; /* the reference is ours now */
}

int sl_tls_client_new(const char *ca_file, bool insecure, sl_tls_client **out, char *err,
                      size_t cap)
{
    char why[256];
    sl_tls_client *cl;
    *out = NULL;
    if (ca_file && access(ca_file, R_OK) != 0) { /* OpenSSL would say only "system lib" */
        snprintf(err, cap, "cannot read the CA file %s: %s", ca_file, strerror(errno));
        return -1;
    }
    cl = calloc(1, sizeof *cl);
    if (!cl) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    /* OpenSSL writes with write(2): a server that closed first must not
     * kill the generator with SIGPIPE (hiredis writes the same way). */
    signal(SIGPIPE, SIG_IGN);
    cl->insecure = insecure;
    snprintf(cl->ca, sizeof cl->ca, "%s", ca_file ? ca_file : "the system's trust store");
    cl->ctx = SSL_CTX_new(TLS_client_method());
    if (!cl->ctx) {
        ssl_reason(why, sizeof why, "unknown reason");
        snprintf(err, cap, "cannot make a TLS context: %s", why);
        free(cl);
        return -1;
    }
    SSL_CTX_set_min_proto_version(cl->ctx, TLS1_2_VERSION);
    /* A server that closes without close_notify ends the stream like a
     * plain close; the HTTP framing says whether an answer was cut short. */
    SSL_CTX_set_options(cl->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
    SSL_CTX_set_session_cache_mode(cl->ctx,
                                   SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
    SSL_CTX_sess_set_new_cb(cl->ctx, new_session);
    if (insecure) {
        SSL_CTX_set_verify(cl->ctx, SSL_VERIFY_NONE, NULL);
    } else {
        SSL_CTX_set_verify(cl->ctx, SSL_VERIFY_PEER, NULL);
        if ((ca_file ? SSL_CTX_load_verify_locations(cl->ctx, ca_file, NULL)
                     : SSL_CTX_set_default_verify_paths(cl->ctx)) != 1) {
            ssl_reason(why, sizeof why, "no certificate in it");
            snprintf(err, cap, "cannot read the CA file %s: %s", cl->ca, why);
            sl_tls_client_free(cl);
            return -1;
        }
    }
    *out = cl;
    return 0;
}

void sl_tls_client_free(sl_tls_client *cl)
{
    if (!cl)
        return;
    SSL_CTX_free(cl->ctx);
    free(cl);
}

bool sl_tls_client_insecure(const sl_tls_client *cl)
{
    return cl->insecure;
}

/* Who the certificate must name: an address is checked against its IP
 * entries; a name against its DNS entries, and sent as SNI. */
static int expect_peer(const sl_tls_client *cl, SSL *ssl, const char *host)
{
    unsigned char addr[16];
    bool numeric = inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
    if (!numeric && SSL_set_tlsext_host_name(ssl, host) != 1)
        return -1;
    if (cl->insecure)
        return 0;
    if (numeric)
        return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1 ? 0 : -1;
    return SSL_set1_host(ssl, host) == 1 ? 0 : -1;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Why a handshake failed, in st->error; errno for the caller. */
static int handshake_failed(sl_tls_client *cl, sl_tls_stream *st, int ssl_err, int sys_err)
{
    long v = SSL_get_verify_result(st->ssl);
    char why[256];
    if (v != X509_V_OK && !cl->insecure) {
        snprintf(st->error, sizeof st->error,
                 "the server's certificate was refused: %s (checked against %s)",
                 X509_verify_cert_error_string(v), cl->ca);
        ERR_clear_error();
        errno = EPROTO;
        return -1;
    }
    if (ssl_err == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0) {
        snprintf(st->error, sizeof st->error, "TLS handshake: %s",
                 sys_err ? strerror(sys_err) : "the server closed the connection");
        errno = sys_err ? sys_err : ECONNRESET;
        return -1;
    }
    ssl_reason(why, sizeof why, "protocol error");
    snprintf(st->error, sizeof st->error, "TLS handshake: %s", why);
    errno = EPROTO;
    return -1;
}

/* SSL_connect a step per readiness of the non-blocking socket. */
static int drive_handshake(sl_tls_client *cl, sl_tls_stream *st, int fd, int timeout_ms,
                           const atomic_bool *interrupted)
{
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        int rc, e, wait;
        struct pollfd p = {.fd = fd};
        ERR_clear_error();
        errno = 0;
        rc = SSL_connect(st->ssl);
        if (rc == 1)
            return 0;
        e = SSL_get_error(st->ssl, rc);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
            return handshake_failed(cl, st, e, errno);
        p.events = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        wait = timeout_ms > 0 ? (int)(deadline - now_ms()) : -1;
        if (interrupted && atomic_load(interrupted))
            break;
        if (timeout_ms > 0 && wait <= 0) {
            snprintf(st->error, sizeof st->error, "TLS handshake: no answer within %d ms",
                     timeout_ms);
            errno = ETIMEDOUT;
            return -1;
        }
        if (poll(&p, 1, wait) < 0 && errno != EINTR) {
            snprintf(st->error, sizeof st->error, "poll: %s", strerror(errno));
            return -1;
        }
        if (interrupted && atomic_load(interrupted))
            break;
    }
    snprintf(st->error, sizeof st->error, "TLS handshake: interrupted");
    errno = EINTR;
    return -1;
}

int sl_tls_handshake(sl_tls_client *cl, sl_tls_stream *st, int fd, const char *host, bool resume,
                     int timeout_ms, const atomic_bool *interrupted)
{
    int flags, rc, err;
    sl_tls_close(st);
    st->error[0] = '\0';
    st->resumed = false;
    st->ssl = SSL_new(cl->ctx);
    if (!st->ssl || SSL_set_fd(st->ssl, fd) != 1 || expect_peer(cl, st->ssl, host) < 0) {
        ssl_reason(st->error, sizeof st->error, "cannot set up TLS");
        sl_tls_close(st);
        errno = ENOMEM;
        return -1;
    }
    SSL_set_app_data(st->ssl, st);
    if (resume && st->session)
        SSL_set_session(st->ssl, st->session);
    flags = fcntl(fd, F_GETFL);
    if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        snprintf(st->error, sizeof st->error, "fcntl: %s", strerror(errno));
        sl_tls_close(st);
        return -1;
    }
    rc = drive_handshake(cl, st, fd, timeout_ms, interrupted);
    err = errno;
    fcntl(fd, F_SETFL, flags);
    if (rc < 0) {
        SSL_set_app_data(st->ssl, NULL);
        SSL_set_quiet_shutdown(st->ssl, 1); /* no close_notify after a failure */
        sl_tls_close(st);
        errno = err;
        return -1;
    }
    st->resumed = SSL_session_reused(st->ssl) == 1;
    st->handshakes++;
    st->resumptions += st->resumed;
    return 0;
}

/* A failed SSL_read or SSL_write as errno. After any failure but the
 * server's close_notify the connection is dropped without one of ours: a
 * close_notify written after a timeout could block for another timeout. */
static ssize_t io_failed(sl_tls_stream *st, int rc)
{
    int e = SSL_get_error(st->ssl, rc), err = errno;
    char why[256];
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    SSL_set_quiet_shutdown(st->ssl, 1);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        errno = EAGAIN; /* a blocking socket's timeout */
        return -1;
    }
    if (e == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0) {
        errno = err;
        return err == 0 ? 0 : -1; /* 0: the server closed without close_notify */
    }
    ssl_reason(why, sizeof why, "protocol error");
    snprintf(st->error, sizeof st->error, "TLS: %s", why);
    errno = EPROTO;
    return -1;
}

ssize_t sl_tls_send(sl_tls_stream *st, const void *buf, size_t len)
{
    int rc;
    ssize_t n;
    if (len > (size_t)INT32_MAX)
        len = INT32_MAX;
    ERR_clear_error();
    errno = 0;
    rc = SSL_write(st->ssl, buf, (int)len);
    if (rc > 0)
        return rc;
    n = io_failed(st, rc);
    if (n == 0) { /* the peer closed: for a writer, a broken pipe */
        errno = EPIPE;
        return -1;
    }
    return n;
}

ssize_t sl_tls_recv(sl_tls_stream *st, void *buf, size_t len)
{
    int rc;
    if (len > (size_t)INT32_MAX)
        len = INT32_MAX;
    ERR_clear_error();
    errno = 0;
    rc = SSL_read(st->ssl, buf, (int)len);
    return rc > 0 ? rc : io_failed(st, rc);
}

void sl_tls_close(sl_tls_stream *st)
{
    if (!st->ssl)
        return;
    /* One close_notify, not waiting for the server's: it costs a write,
     * as a well-behaved client's close does. */
    if (!SSL_get_quiet_shutdown(st->ssl) && SSL_is_init_finished(st->ssl))
        SSL_shutdown(st->ssl);
    ERR_clear_error();
    SSL_free(st->ssl);
    st->ssl = NULL;
}

void sl_tls_stream_free(sl_tls_stream *st)
{
    sl_tls_close(st);
    if (st->session)
        SSL_SESSION_free(st->session);
    st->session = NULL;
}

/* ---- a throwaway certificate ------------------------------------------- */

static int add_ext(X509 *x, int nid, const char *value)
{
    X509V3_CTX v3;
    X509_EXTENSION *ext;
    int ok;
    X509V3_set_ctx_nodb(&v3);
    X509V3_set_ctx(&v3, x, x, NULL, NULL, 0);
    ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
    if (!ext)
        return -1;
    ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok == 1 ? 0 : -1;
}

/* A self-signed certificate for key: it is its own CA, so that a client
 * trusting this one file verifies the chain and the name as usual. */
static X509 *self_signed(EVP_PKEY *key)
{
    X509 *x = X509_new();
    X509_NAME *name;
    uint64_t serial = 0;
    if (!x || getrandom(&serial, sizeof serial, 0) != (ssize_t)sizeof serial)
        goto fail;
    serial >>= 1; /* positive */
    if (X509_set_version(x, 2) != 1 ||
        ASN1_INTEGER_set_uint64(X509_get_serialNumber(x), serial) != 1 ||
        !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(x), 2 * 86400L) || X509_set_pubkey(x, key) != 1)
        goto fail;
    name = X509_get_subject_name(x);
    if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   (const unsigned char *)"sluice-load throwaway", -1, -1,
                                   0) != 1 ||
        X509_set_issuer_name(x, name) != 1 ||
        add_ext(x, NID_basic_constraints, "critical,CA:TRUE") < 0 ||
        add_ext(x, NID_subject_alt_name, "IP:127.0.0.1,IP:::1,DNS:localhost") < 0 ||
        X509_sign(x, key, EVP_sha256()) <= 0)
        goto fail;
    return x;
fail:
    X509_free(x);
    return NULL;
}

static int write_pem(const char *path, mode_t mode, EVP_PKEY *key, X509 *cert)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    int ok;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    ok = key ? PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) : PEM_write_X509(f, cert);
    return fclose(f) == 0 && ok == 1 ? 0 : -1;
}

int sl_tls_make_self_signed(const char *cert_path, const char *key_path, char *err, size_t cap)
{
    char why[256];
    EVP_PKEY *key = EVP_EC_gen("P-256");
    X509 *x = key ? self_signed(key) : NULL;
    int rc = -1;
    if (!x) {
        ssl_reason(why, sizeof why, "unknown reason");
        snprintf(err, cap, "cannot make a certificate: %s", why);
    } else if (write_pem(key_path, 0600, key, NULL) < 0 ||
               write_pem(cert_path, 0644, NULL, x) < 0) {
        snprintf(err, cap, "cannot write %s or %s: %s", key_path, cert_path, strerror(errno));
    } else {
        rc = 0;
    }
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}
