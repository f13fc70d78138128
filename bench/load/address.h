/* address.h - "HOST:PORT" as every back-end of sluice-load takes it. */
#ifndef SL_BENCH_ADDRESS_H
#define SL_BENCH_ADDRESS_H

#include <stdbool.h>
#include <stddef.h>

#define SL_LOAD_PORT_MAX 6 /* "65535" and its NUL */

/* Splits at the last colon, so "[::1]:7700" (brackets dropped) and a bare
 * "::1:7700" work as well as "127.0.0.1:7700". The port is 1 to 65535,
 * written back in plain decimal. 0, or -1 when address is not HOST:PORT or
 * the host does not fit in hcap bytes. */
int sl_load_address(const char *address, char *host, size_t hcap, char port[SL_LOAD_PORT_MAX]);

/* An address with an optional scheme: "PLAIN://HOST:PORT" or a bare
 * HOST:PORT in clear, "SECURE://HOST:PORT" over TLS (http and https for
 * sluiced, redis and rediss for Redis); one "/" may end it. *tls says
 * which; HOST:PORT as above. 0, or -1 (another scheme, or not HOST:PORT). */
int sl_load_url(const char *url, const char *plain, const char *secure, bool *tls /* OUT */,
                char *host, size_t hcap, char port[SL_LOAD_PORT_MAX]);
/* The address names a TLS scheme (https:// or rediss://). */
bool sl_load_url_is_tls(const char *url);

#endif
