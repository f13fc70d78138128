/* address.c - HOST:PORT (address.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"

int sl_load_address(const char *address, char *host, size_t hcap,
                    char port[SL_LOAD_PORT_MAX])
{
    const char *colon = strrchr(address, ':');
    if (!colon || colon[1] < '0' || colon[1] > '9')
        return -1; /* strtol would take " 1" and "+1" */
    char *end;
    errno = 0;
    long p = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || *end || p < 1 || p > 65535)
        return -1;
    const char *h = address;
    size_t hlen = (size_t)(colon - address);
    if (hlen >= 2 && h[0] == '[' && h[hlen - 1] == ']') {
        h++;
        hlen -= 2;
    }
    if (hlen == 0 || hlen >= hcap)
        return -1;
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    snprintf(port, SL_LOAD_PORT_MAX, "%ld", p);
    return 0;
}
