/* browser.c - what a web page in a browser on the host may not make the
 * server do (docs/security.md: Browsers). Two attacks, both seen against a
 * server without tokens (every request is admin there):
 *
 * - Cross-site requests (CSRF): a form or a no-cors fetch from another
 *   origin is sent without a preflight and may change state. Refused: a
 *   state-changing request whose Origin is not the server's own, or whose
 *   Sec-Fetch-Site says another site; and any request that shows a
 *   browser's sign (Origin, Sec-Fetch-*, Referer) with a body that is not
 *   said to be JSON, since only JSON forces a preflight. Clients that are
 *   not browsers (curl -d, urllib, libsluice) send none of these headers
 *   and are not affected.
 * - DNS rebinding: a page whose own name now resolves to 127.0.0.1 is
 *   same-origin with itself, so only the Host header tells. Refused: a
 *   Host that is not an IP address, localhost, the listen or advertise
 *   host, or a name of allowed_hosts. With tokens the page has no secret
 *   to send, so the Host is checked only when allowed_hosts is set. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "server.h"

/* The host of "HOST:PORT", "[V6]:PORT", "HOST" or a URL's authority, into
 * buf (lower case, no trailing dot, no brackets). */
static void host_of(const char *hostport, char *buf, size_t cap)
{
    size_t n;
    if (hostport[0] == '[') {
        const char *end = strchr(hostport, ']');
        hostport++;
        n = end ? (size_t)(end - hostport) : strlen(hostport);
    } else {
        n = strcspn(hostport, ":/");
    }
    if (n >= cap)
        n = cap - 1;
    for (size_t i = 0; i < n; i++)
        buf[i] = (char)(hostport[i] >= 'A' && hostport[i] <= 'Z' ? hostport[i] + 32 : hostport[i]);
    buf[n] = '\0';
    if (n > 0 && buf[n - 1] == '.')
        buf[n - 1] = '\0';
}

static bool ip_literal(const char *host)
{
    unsigned char addr[16];
    return inet_pton(AF_INET, host, addr) == 1 || inet_pton(AF_INET6, host, addr) == 1;
}

static bool same_host(const char *host, const char *hostport)
{
    char other[256];
    host_of(hostport, other, sizeof(other));
    return strcmp(host, other) == 0;
}

/* An IP address cannot be rebound, so every one passes: this is what a
 * wildcard listen (0.0.0.0, [::]) answers for, with the names listed. */
static bool host_known(const sl_server *srv, const char *host)
{
    const sl_conf *conf = srv->conf;
    if (ip_literal(host) || strcmp(host, "localhost") == 0 || same_host(host, conf->listen))
        return true;
    if (strncmp(srv->advertise, "http://", 7) == 0 && same_host(host, srv->advertise + 7))
        return true;
    for (size_t i = 0; i < conf->nallowed_hosts; i++)
        if (strcmp(conf->allowed_hosts[i], "*") == 0 ||
            strcasecmp(conf->allowed_hosts[i], host) == 0)
            return true;
    return false;
}

static int check_host(sl_ctx *c)
{
    const sl_conf *conf = c->srv->conf;
    const char *h = sl_http_req_header(c->req, "Host");
    if (!h || (conf->ntokens > 0 && conf->nallowed_hosts == 0))
        return 0; /* HTTP/1.0 without Host is no browser */
    char host[256];
    host_of(h, host, sizeof(host));
    if (host_known(c->srv, host))
        return 0;
    sl_reply_error(c, 403, "forbidden",
                   "this server does not answer for the host \"%.100s\" (a page may reach it "
                   "through DNS rebinding); if clients reach it by that name, add \"%.100s\" to "
                   "allowed_hosts in the configuration file",
                   host, host);
    return -1;
}

static bool changes_state(sl_http_method m)
{
    return m != SL_HTTP_GET && m != SL_HTTP_HEAD && m != SL_HTTP_OPTIONS;
}

/* "http://HOST:PORT" or "https://..." whose authority is the Host header. */
static bool same_origin(const char *origin, const char *host)
{
    const char *rest = strncasecmp(origin, "http://", 7) == 0    ? origin + 7
                       : strncasecmp(origin, "https://", 8) == 0 ? origin + 8
                                                                 : NULL;
    return rest && host && strcasecmp(rest, host) == 0;
}

static bool says_json(const char *ctype)
{
    if (!ctype)
        return false;
    size_t n = strcspn(ctype, "; \t");
    return (n == 16 && strncasecmp(ctype, "application/json", 16) == 0) ||
           (n > 5 && strncasecmp(ctype + n - 5, "+json", 5) == 0);
}

static int check_origin(sl_ctx *c)
{
    sl_http_req *r = c->req;
    const char *origin = sl_http_req_header(r, "Origin");
    const char *site = sl_http_req_header(r, "Sec-Fetch-Site");
    if (changes_state(sl_http_req_method(r))) {
        if (origin && !same_origin(origin, sl_http_req_header(r, "Host"))) {
            sl_reply_error(c, 403, "forbidden",
                           "a request from the web page of another origin (%.100s) may not "
                           "change anything here; only this server's dashboard may",
                           origin);
            return -1;
        }
        if (site && strcasecmp(site, "same-origin") != 0 && strcasecmp(site, "none") != 0) {
            sl_reply_error(c, 403, "forbidden",
                           "a request from another site's web page (Sec-Fetch-Site: %.32s) may "
                           "not change anything here",
                           site);
            return -1;
        }
    }
    size_t len = 0;
    sl_http_req_body(r, &len);
    bool browser = origin || site || sl_http_req_header(r, "Sec-Fetch-Mode") ||
                   sl_http_req_header(r, "Referer");
    if (browser && len > 0 && !says_json(sl_http_req_header(r, "Content-Type"))) {
        /* A form's or a no-cors fetch's body types need no preflight. */
        sl_reply_error(c, 403, "forbidden",
                       "a browser's request body must be sent with Content-Type: "
                       "application/json");
        return -1;
    }
    return 0;
}

int sl_browser_check(sl_ctx *c)
{
    return check_host(c) != 0 || check_origin(c) != 0 ? -1 : 0;
}
