/* address.h - "HOST:PORT" as every back-end of sluice-load takes it. */
#ifndef SL_BENCH_ADDRESS_H
#define SL_BENCH_ADDRESS_H

#include <stddef.h>

#define SL_LOAD_PORT_MAX 6 /* "65535" and its NUL */

/* Splits at the last colon, so "[::1]:7700" (brackets dropped) and a bare
 * "::1:7700" work as well as "127.0.0.1:7700". The port is 1 to 65535,
 * written back in plain decimal. 0, or -1 when address is not HOST:PORT or
 * the host does not fit in hcap bytes. */
int sl_load_address(const char *address, char *host, size_t hcap,
                    char port[SL_LOAD_PORT_MAX]);

#endif
