/* address.c - HOST:PORT (address.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"

int sl_load_address(const char *address, char *host, size_t hcap, char port[SL_LOAD_PORT_MAX])
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

/* "scheme://" at the start of url: the length of that prefix, else 0. */
static size_t scheme_prefix(const char *url, const char *scheme)
{
    size_t n = strlen(scheme);
    return strncmp(url, scheme, n) == 0 && strncmp(url + n, "://", 3) == 0 ? n + 3 : 0;
}

int sl_load_url(const char *url, const char *plain, const char *secure, bool *tls, char *host,
                size_t hcap, char port[SL_LOAD_PORT_MAX])
{
    char buf[300];
    size_t skip, len;
    *tls = false;
    if ((skip = scheme_prefix(url, secure)) > 0)
        *tls = true;
    else if ((skip = scheme_prefix(url, plain)) == 0 && strstr(url, "://"))
        return -1;
    len = strlen(url + skip);
    if (len > 0 && url[skip + len - 1] == '/')
        len--;
    if (len >= sizeof buf)
        return -1;
    memcpy(buf, url + skip, len);
    buf[len] = '\0';
    return sl_load_address(buf, host, hcap, port);
}

bool sl_load_url_is_tls(const char *url)
{
    return scheme_prefix(url, "https") > 0 || scheme_prefix(url, "rediss") > 0;
}
