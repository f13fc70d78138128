/* redis_tls.h - Redis commands over TLS, for the Redis back-end and the
 * throwaway redis-server's readiness check.
 *
 * Debian 12's hiredis (0.14) has no TLS (hiredis_ssl came with 1.0), while
 * its redis-server is built with it. So for TLS the socket and the TLS
 * stream are ours (tls.h, as for sluiced), and hiredis does the rest as it
 * does in clear: redisvFormatCommand writes the command, a redisReader parses
 * the replies into the same redisReply objects. One blocking command at a
 * time, like redisCommand.
 *
 * The descriptor number stays the same across reconnects (dup2, as in
 * http_conn.c), so that sl_resp_tls_interrupt() from another thread can
 * never shut down a number reused meanwhile. */
#ifndef SL_BENCH_REDIS_TLS_H
#define SL_BENCH_REDIS_TLS_H

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdbool.h>

#include "tls.h"

typedef struct sl_resp_tls sl_resp_tls;

/* Connects to host:port and makes the TLS handshake (verified as cl says).
 * timeout_ms bounds the connect, the handshake and every later wait. 0, or
 * -1 with the reason in err (and *out NULL). */
int sl_resp_tls_connect(const char *host, const char *port, int timeout_ms, sl_tls_client *cl,
                        sl_resp_tls **out /* OUT */, char *err, size_t cap);
/* Closes the connection (close_notify) and opens a new one, offering the
 * previous connection's TLS session when resume is set. 0, or -1 (the reason
 * in sl_resp_tls_error). */
int sl_resp_tls_reconnect(sl_resp_tls *c, bool resume);
/* The last handshake resumed a session. */
bool sl_resp_tls_resumed(const sl_resp_tls *c);
/* A command as redisCommand formats it; its reply (free it with
 * freeReplyObject), or NULL on a connection failure (sl_resp_tls_error). */
redisReply *sl_resp_tls_command(sl_resp_tls *c, const char *fmt, ...);
redisReply *sl_resp_tls_vcommand(sl_resp_tls *c, const char *fmt, va_list ap);
const char *sl_resp_tls_error(const sl_resp_tls *c);
/* From another thread: a command blocked on c fails soon. */
void sl_resp_tls_interrupt(sl_resp_tls *c);
void sl_resp_tls_free(sl_resp_tls *c);

#endif
