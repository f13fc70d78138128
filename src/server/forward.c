/* forward.c - who a relayed request's client is (shared mode; docs/
 * shared-mode.md, "Who the client is").
 *
 * A follower that proved the leader (cluster.ca) tells it what it proved
 * of the client itself, in two headers:
 *
 *   Sluice-Client-Address: 10.0.3.7
 *   Sluice-Client-Certificate: deployer,DNS:deploy.internal
 *
 * the client's IP address, and the names of the client's verified
 * certificate, as sl_http_req_peer_names gives them (the subject's CN
 * first, "" when none, then "DNS:", "URI:", "email:" subjectAltNames),
 * each percent-encoded, separated by commas. The follower forwards facts,
 * not a decision: the leader maps the certificate to a token entry with its
 * own configuration, as if the client had connected to it.
 *
 * The leader believes them only on a connection whose certificate chains to
 * cluster.ca (sl_http_req_cluster_peer). Anywhere else they are refused,
 * 403: a client must never name another's certificate or address, and a
 * header silently dropped would leave a misconfigured cluster looking as if
 * it worked. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "server.h"
#include "tls_client.h"

#define H_ADDRESS "Sluice-Client-Address"
#define H_CERT "Sluice-Client-Certificate"

static bool plain_byte(unsigned char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("-._~:/@=+", ch));
}

static int hex(char ch)
{
    return ch >= '0' && ch <= '9'   ? ch - '0'
           : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
           : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
                                    : -1;
}

void sl_forward_headers(const sl_server *srv, const sl_http_req *req, sl_buf *out)
{
    if (!sl_tls_client_verifies(srv->peer_tls))
        return; /* no proof of the leader, none of this server to it: nothing to tell */
    char addr[SL_HTTP_ADDRESS_MAX];
    sl_forward_address(req, addr, sizeof(addr));
    sl_buf_addf(out, H_ADDRESS ": %s\r\n", addr);
    sl_client_names f;
    if (!sl_forward_names(req, &f))
        return;
    sl_buf_adds(out, H_CERT ": ");
    for (size_t i = 0; i < f.n; i++) {
        if (i)
            sl_buf_add(out, ",", 1);
        for (const unsigned char *p = (const unsigned char *)f.names[i]; *p; p++)
            if (plain_byte(*p))
                sl_buf_add(out, p, 1);
            else
                sl_buf_addf(out, "%%%02X", *p);
    }
    sl_buf_add(out, "\r\n", 2);
}

/* The names of the header into f; false when it is not well formed. */
static bool decode(const char *h, sl_client_names *f)
{
    size_t at = 0;
    f->n = 0;
    f->names[f->n++] = f->buf;
    for (const char *p = h; *p; p++) {
        if (at + 2 > sizeof(f->buf))
            return false;
        if (*p == ',') {
            if (f->n == SL_HTTP_PEER_NAMES_MAX)
                return false;
            f->buf[at++] = '\0';
            f->names[f->n++] = f->buf + at;
        } else if (*p == '%') {
            int hi = hex(p[1]), lo = hi < 0 ? -1 : hex(p[2]);
            if (lo < 0 || (hi | lo) == 0)
                return false; /* a name with a NUL in it names nothing */
            f->buf[at++] = (char)(hi << 4 | lo);
            p += 2;
        } else {
            f->buf[at++] = *p;
        }
    }
    f->buf[at] = '\0';
    return true;
}

size_t sl_forward_names(const sl_http_req *req, sl_client_names *f)
{
    f->n = 0;
    if (!sl_http_req_cluster_peer(req))
        return f->n = sl_http_req_peer_names(req, f->names, SL_HTTP_PEER_NAMES_MAX);
    /* A peer's own certificate is a server's, never a client's principal. */
    const char *h = sl_http_req_header(req, H_CERT);
    if (!h || !decode(h, f))
        f->n = 0;
    return f->n;
}

static bool is_ip(const char *s)
{
    unsigned char ip[16];
    return s && (inet_pton(AF_INET, s, ip) == 1 || inet_pton(AF_INET6, s, ip) == 1);
}

void sl_forward_address(const sl_http_req *req, char *out, size_t cap)
{
    const char *h = sl_http_req_header(req, H_ADDRESS);
    if (is_ip(h) && sl_http_req_cluster_peer(req))
        snprintf(out, cap, "%s", h);
    else
        sl_http_req_address(req, out, cap);
}

bool sl_forward_refuses(sl_ctx *c)
{
    const char *addr = sl_http_req_header(c->req, H_ADDRESS);
    const char *cert = sl_http_req_header(c->req, H_CERT);
    if (!addr && !cert)
        return false;
    if (!sl_http_req_cluster_peer(c->req)) {
        /* A follower whose cluster.cert this server's cluster.ca did not
         * sign: the operator's to mend, and the message says so. */
        const char *via = sl_http_req_header(c->req, "Sluice-Forwarded");
        sl_reply_error(c, 403, "forbidden",
                       "the headers " H_ADDRESS " and " H_CERT " are taken only from another "
                       "server of the cluster, proven by a certificate of its cluster.ca; this "
                       "connection's is not one: %s",
                       via ? "the relaying server's cluster.cert must chain to the leader's "
                             "cluster.ca (docs/shared-mode.md, \"Who the client is\")"
                           : "leave them out");
        return true;
    }
    sl_client_names f;
    if (!is_ip(addr) || (cert && !decode(cert, &f))) {
        sl_reply_error(c, 400, "bad_request",
                       "a relayed request needs " H_ADDRESS " (an IP address), and its " H_CERT
                       ", if any, well formed (percent-encoded names, comma-separated, at most "
                       "%d)",
                       SL_HTTP_PEER_NAMES_MAX);
        return true;
    }
    return false;
}
