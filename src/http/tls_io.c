/* tls_io.c - OpenSSL on a non-blocking socket, for both sides (tls_io.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>

#include <openssl/err.h>

#include "tls_io.h"

int sl__tls_io_error(SSL *ssl, int rc, bool *wants_write)
{
    int e = SSL_get_error(ssl, rc);
    *wants_write = e == SSL_ERROR_WANT_WRITE;
    return e;
}

bool sl__tls_io_waits(int e)
{
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

int sl__tls_io_errno(SSL *ssl, int rc, bool *wants_write)
{
    int e = sl__tls_io_error(ssl, rc, wants_write);
    if (sl__tls_io_waits(e))
        return EAGAIN;
    if (e == SSL_ERROR_ZERO_RETURN)
        return 0;
    /* A fatal alert from the other side (in TLS 1.3 a server refuses the
     * client's certificate after the client's handshake has ended). */
    bool alert = e == SSL_ERROR_SSL &&
                 ERR_GET_REASON(ERR_peek_last_error()) >= SSL_AD_REASON_OFFSET;
    ERR_clear_error();
    return alert ? EPROTO : ECONNRESET;
}

ssize_t sl__tls_io_recv(SSL *ssl, bool *wants_write, void *buf, size_t n)
{
    int rc = SSL_read(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (rc > 0)
        return rc;
    int e = sl__tls_io_errno(ssl, rc, wants_write);
    if (e == 0)
        return 0; /* close_notify, or the socket's end of file */
    errno = e;
    return -1;
}

ssize_t sl__tls_io_send(SSL *ssl, bool *wants_write, const void *buf, size_t n)
{
    int rc = SSL_write(ssl, buf, n > INT32_MAX ? INT32_MAX : (int)n);
    if (rc > 0)
        return rc;
    int e = sl__tls_io_errno(ssl, rc, wants_write);
    errno = e == 0 ? EPIPE : e;
    return -1;
}

void sl__tls_io_say(char *err, size_t cap, const char *what, const char *path)
{
    unsigned long e = ERR_peek_last_error();
    char why[256] = "unknown reason";
    if (e)
        ERR_error_string_n(e, why, sizeof(why));
    ERR_clear_error();
    snprintf(err, cap, "%s %s: %s", what, path, why);
}
