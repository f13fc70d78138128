/* tls.h - TLS for the load generator's own connections, with OpenSSL.
 *
 * A client context (sl_tls_client) says whom to trust: a CA file (the
 * server's certificate must chain to it and name the host connected to), or
 * the system's trust store when no file is given. Verification is switched
 * off only by an explicit insecure flag (sluice-load --tls-insecure), and the
 * tool says so in its output.
 *
 * A stream (sl_tls_stream) is TLS over a socket its caller connected and
 * keeps owning: the handshake runs with the socket non-blocking, one step
 * per poll(), bounded by a timeout and abandoned when the caller's interrupt
 * flag is set (an interrupt shuts the socket down, which wakes the poll);
 * afterwards the socket is blocking again, so that a request costs the same
 * system calls over TLS as over plain TCP (one send, one recv per read; the
 * socket's SO_RCVTIMEO/SO_SNDTIMEO bound them) and the TLS/plain ratio
 * measures TLS, not a different I/O loop.
 *
 * Session resumption: a stream keeps the last session the server gave it
 * (a TLS 1.3 ticket arrives after the handshake, with the first answer) and,
 * when asked, offers it at its next handshake. */
#ifndef SL_BENCH_TLS_H
#define SL_BENCH_TLS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct sl_tls_client sl_tls_client;

/* ca_file: PEM certificates to trust, or NULL for the system's store.
 * insecure: no verification at all (neither the chain nor the name). 0, or
 * -1 with the reason in err. The context may be shared by every thread. */
int sl_tls_client_new(const char *ca_file, bool insecure, sl_tls_client **out /* OUT */, char *err,
                      size_t cap);
void sl_tls_client_free(sl_tls_client *cl);
bool sl_tls_client_insecure(const sl_tls_client *cl);

typedef struct sl_tls_stream {
    struct ssl_st *ssl;             /* NULL when no handshake has been made */
    struct ssl_session_st *session; /* the last session the server gave, for resumption */
    bool resumed;                   /* the current connection resumed a session */
    uint64_t handshakes;            /* completed handshakes, resumed ones included */
    uint64_t resumptions;           /* ... of which resumed */
    char error[512];                /* the last failure in words */
} sl_tls_stream;

/* Handshake on fd, a connected socket, for host (a name, checked against the
 * certificate's DNS names and sent as SNI, or a numeric address, checked
 * against its IP addresses). resume: offer the session kept from the previous
 * connection, if any. timeout_ms bounds the whole handshake (0: none).
 * Returns 0; -1 with errno ETIMEDOUT (timeout), EINTR (*interrupted was set),
 * EPROTO (refused: a certificate not trusted, a name that does not match, a
 * protocol error) or another errno, and the reason in st->error. */
int sl_tls_handshake(sl_tls_client *cl, sl_tls_stream *st, int fd, const char *host, bool resume,
                     int timeout_ms, const atomic_bool *interrupted);
/* Like send() and recv() on a blocking socket: bytes moved, 0 at the end of
 * the stream (recv), or -1 with errno (EAGAIN: the socket's timeout; EPROTO:
 * a TLS error, in st->error). */
ssize_t sl_tls_send(sl_tls_stream *st, const void *buf, size_t len);
ssize_t sl_tls_recv(sl_tls_stream *st, void *buf, size_t len);
/* Ends the connection's TLS (a close_notify when it is still up; the caller
 * closes the socket), keeping the session for the next handshake. */
void sl_tls_close(sl_tls_stream *st);
/* sl_tls_close and the kept session: the stream is as new. */
void sl_tls_stream_free(sl_tls_stream *st);

/* Writes a throwaway private key (P-256) and a self-signed certificate for
 * 127.0.0.1 and localhost, valid for two days, to cert_path and key_path:
 * for a server that sluice-load starts, which then trusts cert_path alone.
 * 0, or -1 with the reason in err. */
int sl_tls_make_self_signed(const char *cert_path, const char *key_path, char *err, size_t cap);

#endif
