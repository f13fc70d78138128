/* auth.c - bearer tokens (docs/api.md: Auth).
 *
 * With no tokens configured every request is admitted as admin; this is the
 * default because the server listens on loopback. With tokens, every request
 * but /healthz needs "Authorization: Bearer <token>" (the scheme in any
 * case: RFC 9110 11.1). An admin token may do
 * everything; a limited token only claims, reads and configures locks whose
 * names start with one of its prefixes: every lock of a claim counts, those
 * its tags and group add included (the engine asks, through the request's
 * `allow`, once it knows which locks the tags add). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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
    const char *h = sl_http_req_header(c->req, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0) {
        sl_http_add_header(c->req, "WWW-Authenticate", "Bearer");
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
    sl_http_add_header(c->req, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
    sl_reply_error(c, 401, "unauthorized", "the token is not one this server knows");
    return -1;
}

const char *sl_auth_actor(const sl_ctx *c)
{
    return c->auth.token ? c->auth.token->name : SL_ACTOR_ANONYMOUS;
}

/* The token the request's Authorization header names, or NULL. */
static const sl_conf_token *known_token(const sl_conf *conf, const sl_http_req *req)
{
    const char *h = sl_http_req_header(req, "Authorization");
    if (!h || strncmp(h, "Bearer ", 7) != 0)
        return NULL;
    for (size_t i = 0; i < conf->ntokens; i++)
        if (same_secret(h + 7, conf->tokens[i].token))
            return &conf->tokens[i];
    return NULL;
}

bool sl_auth_identify(sl_ctx *c)
{
    const sl_conf *conf = c->srv->conf;
    if (conf->ntokens == 0) {
        c->auth.admin = true;
        return true;
    }
    const sl_conf_token *t = known_token(conf, c->req);
    if (!t)
        return false;
    c->auth.token = t;
    c->auth.admin = t->admin;
    return true;
}

bool sl_auth_admit(void *ud, sl_http_req *req)
{
    const sl_server *srv = ud;
    return srv->conf->ntokens == 0 || known_token(srv->conf, req) != NULL;
}

static bool under(char *const *prefixes, size_t n, const char *name)
{
    for (size_t i = 0; name && i < n; i++)
        if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
            return true;
    return false;
}

bool sl_auth_allows(const sl_ctx *c, const char *name)
{
    if (c->auth.admin)
        return true;
    const sl_conf_token *t = c->auth.token;
    return t && under(t->prefixes, t->nprefixes, name);
}

/* A lock key ("mtx/NAME", "sem/NAME") or, for a claim that takes no lock,
 * its holder: such a claim touches nobody's slots, but it names a holder
 * and tags that belong to somebody, so it belongs to the namespace of its
 * holder. */
static bool allows_key_or_holder(const sl_ctx *c, const char *key, const char *holder)
{
    return key ? sl_auth_allows(c, key + 4) : sl_auth_allows(c, holder);
}

bool sl_auth_allows_claim(sl_ctx *c, const sl_claim *claim)
{
    return c->auth.admin || sl_auth_token_allows_claim(c->auth.token, claim);
}

bool sl_auth_token_allows_claim(const sl_conf_token *t, const sl_claim *claim)
{
    if (!t || t->admin)
        return true;
    sl_ctx tc = {.auth = {.token = t, .admin = false}};
    sl_ctx *c = &tc;
    sl_claim_view v;
    sl_claim_get(claim, &v);
    if (v.nlocks == 0)
        return allows_key_or_holder(c, NULL, v.holder);
    /* Every lock counts, whether the claim named it or its tags and group
     * added it: a rule of "the explicit locks and the group" held vacuously
     * for a claim made of tags only. */
    for (size_t i = 0; i < v.nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(claim, i, &lv); /* no position: none is needed */
        if (!sl_auth_allows(c, lv.name))
            return false;
    }
    return true;
}

static bool allow_cb(void *ud, const char *key)
{
    const sl_auth_claim *a = ud;
    return allows_key_or_holder(a->c, key, a->holder);
}

void sl_auth_bind_claim(const sl_ctx *c, sl_claim_req *req, sl_auth_claim *a)
{
    if (c->auth.admin)
        return;
    a->c = c;
    a->holder = req->holder;
    req->allow = allow_cb;
    req->allow_ud = a;
}

struct sl_event_scope {
    size_t n;
    char *prefixes[]; /* each allocated with the scope, after the array */
};

sl_event_scope *sl_auth_event_scope(const sl_ctx *c)
{
    return c->auth.admin ? NULL : sl_auth_token_scope(c->auth.token);
}

sl_event_scope *sl_auth_token_scope(const sl_conf_token *t)
{
    if (!t || t->admin)
        return NULL; /* no tokens (every request an admin's), or an admin token */
    size_t n = t->nprefixes, bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += strlen(t->prefixes[i]) + 1;
    sl_event_scope *s = malloc(sizeof(*s) + n * sizeof(char *) + bytes);
    if (!s)
        abort();
    s->n = n;
    char *at = (char *)&s->prefixes[n];
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(t->prefixes[i]) + 1;
        memcpy(at, t->prefixes[i], len);
        s->prefixes[i] = at;
        at += len;
    }
    return s;
}

/* ev->locks is the store's JSON array of lock keys ("mtx/NAME", "sem/NAME"). */
bool sl_event_scope_allows(const sl_event_scope *s, const sl_store_event *ev)
{
    if (!s)
        return true;
    json_t *locks = json_loads(ev->locks ? ev->locks : "[]", 0, NULL);
    size_t n = json_array_size(locks);
    bool ok = n > 0 || under(s->prefixes, s->n, ev->holder);
    for (size_t i = 0; ok && i < n; i++) {
        const char *key = json_string_value(json_array_get(locks, i));
        ok = key && strlen(key) > 4 && under(s->prefixes, s->n, key + 4);
    }
    json_decref(locks);
    return ok;
}

void sl_event_scope_free(sl_event_scope *s)
{
    free(s);
}

/* F12: a limited token's claims carry holders under its own prefixes, so
 * that another tenant's run, listing and cleanup (which go by holder) never
 * count them. The message lists what it may use. */
bool sl_auth_allows_holder(sl_ctx *c, const char *holder)
{
    if (sl_auth_allows(c, holder))
        return true;
    const sl_conf_token *t = c->auth.token;
    sl_buf *list = sl_reply_scratch();
    for (size_t i = 0; t && i < t->nprefixes; i++)
        sl_buf_addf(list, "%s\"%s\"", i ? ", " : "", t->prefixes[i]);
    sl_buf_add(list, "", 1);
    sl_reply_error(c, 403, "forbidden",
                   "holder \"%s\" is outside this token's prefixes: a claim's holder must start "
                   "with one of %s (such as \"%sRUN/STEP\")",
                   holder, sl_buf_data(list), t && t->nprefixes ? t->prefixes[0] : "");
    return false;
}

/* F9: a reload replaced the tokens. What a parked request or an open
 * stream was admitted with is found again by name and secret (a rotated
 * secret is a token gone: its old secret no longer gets in). */
int sl_auth_token_again(const sl_conf *old, const sl_conf *now, const sl_conf_token **t)
{
    if (now->ntokens == 0) {
        *t = NULL; /* every request is admitted as admin now */
        return 0;
    }
    if (old->ntokens == 0 || !*t)
        return -1; /* admitted without a token, which it now needs */
    for (size_t i = 0; i < now->ntokens; i++) {
        const sl_conf_token *n = &now->tokens[i];
        if (strcmp(n->name, (*t)->name) == 0 && strcmp(n->token, (*t)->token) == 0) {
            *t = n;
            return 0;
        }
    }
    return -1;
}

const char *sl_auth_tenant(const sl_conf *conf, const char *name)
{
    const char *best = NULL;
    size_t best_len = 0;
    for (size_t i = 0; i < conf->ntokens; i++) {
        const sl_conf_token *t = &conf->tokens[i];
        for (size_t j = 0; !t->admin && j < t->nprefixes; j++) {
            size_t n = strlen(t->prefixes[j]);
            if (strncmp(name, t->prefixes[j], n) == 0 && (!best || n > best_len)) {
                best = t->prefixes[j];
                best_len = n;
            }
        }
    }
    return best;
}
