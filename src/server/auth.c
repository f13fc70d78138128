/* auth.c - bearer tokens (API.md: Auth).
 *
 * With no tokens configured every request is admitted as admin; this is the
 * default because the server listens on loopback. With tokens, every request
 * but /healthz needs "Authorization: Bearer <token>". An admin token may do
 * everything; a limited token only claims, reads and configures locks whose
 * names start with one of its prefixes (a claim's explicit locks and its
 * group; tags are limits the admins set, so they need no prefix). */
#include <string.h>

#include <event2/http.h>

#include "server.h"

/* Compares without stopping at the first difference, so the time taken
 * does not tell how much of a guess was right. */
static bool same_secret(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    unsigned char diff = (unsigned char)(la != lb);
    for (size_t i = 0; i < la; i++)
        diff |= (unsigned char)(a[i] ^ b[i % (lb ? lb : 1)]);
    return diff == 0;
}

int sl_auth_check(sl_ctx *c)
{
    const sl_conf *conf = c->srv->conf;
    if (conf->ntokens == 0) {
        c->auth.admin = true;
        return 0;
    }
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(c->req), "Authorization");
    if (!h || strncmp(h, "Bearer ", 7) != 0) {
        sl_reply_add_header(c->req, "WWW-Authenticate", "Bearer");
        sl_reply_error(c, 401, "unauthorized",
                       "this server needs a token: send \"Authorization: Bearer <token>\"");
        return -1;
    }
    const char *secret = h + 7;
    for (size_t i = 0; i < conf->ntokens; i++) {
        if (same_secret(secret, conf->tokens[i].token)) {
            c->auth.token = &conf->tokens[i];
            c->auth.admin = conf->tokens[i].admin;
            return 0;
        }
    }
    sl_reply_add_header(c->req, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
    sl_reply_error(c, 401, "unauthorized", "the token is not one this server knows");
    return -1;
}

bool sl_auth_allows(const sl_ctx *c, const char *name)
{
    if (c->auth.admin)
        return true;
    const sl_conf_token *t = c->auth.token;
    for (size_t i = 0; t && i < t->nprefixes; i++)
        if (strncmp(name, t->prefixes[i], strlen(t->prefixes[i])) == 0)
            return true;
    return false;
}

bool sl_auth_allows_claim(sl_ctx *c, const sl_claim *claim)
{
    if (c->auth.admin)
        return true;
    sl_claim_view v;
    sl_claim_get(claim, &v);
    for (size_t i = 0; i < v.nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(claim, i, &lv); /* no position: none is needed */
        if (lv.via == SL_VIA_LOCK && !sl_auth_allows(c, lv.name))
            return false;
    }
    return !v.group || sl_auth_allows(c, v.group);
}
