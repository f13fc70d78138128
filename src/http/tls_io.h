/* tls_io.h - what the server's connections (tls.c) and the relay's client
 * (tls_client.c) share of OpenSSL on a non-blocking socket: reading what
 * SSL_get_error asks for, SSL_read and SSL_write answering as recv(2) and
 * send(2) do, and OpenSSL's error in words. Internal to src/http. */
#ifndef SL_HTTP_TLS_IO_H
#define SL_HTTP_TLS_IO_H

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* SSL_get_error for rc; *wants_write: whether OpenSSL waits for the socket
 * to take bytes (else, when it waits, for bytes to come). */
int sl__tls_io_error(SSL *ssl, int rc, bool *wants_write);
/* Whether that error only waits for the socket. */
bool sl__tls_io_waits(int e);
/* errno for what OpenSSL said of rc: EAGAIN when it waits for the socket,
 * 0 at the end of the stream (close_notify), EPROTO for a fatal alert the
 * other side sent, ECONNRESET for another failure (OpenSSL's error queue is
 * then cleared). */
int sl__tls_io_errno(SSL *ssl, int rc, bool *wants_write);
/* As recv(2) and send(2): -1 with errno EAGAIN when the socket must be
 * ready first; recv 0 at the end of the stream, send EPIPE there. */
ssize_t sl__tls_io_recv(SSL *ssl, bool *wants_write, void *buf, size_t n);
ssize_t sl__tls_io_send(SSL *ssl, bool *wants_write, const void *buf, size_t n);
/* err: "<what> <path>: <OpenSSL's last error>"; clears the error queue. */
void sl__tls_io_say(char *err, size_t cap, const char *what, const char *path);

#endif
