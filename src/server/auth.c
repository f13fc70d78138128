/* auth.c - bearer tokens and client certificates (docs/api.md: Auth).
 *
 * With no tokens configured every request is admitted as admin; this is the
 * default because the server listens on loopback. With tokens, every request
 * but /healthz needs "Authorization: Bearer <token>" (the scheme in any
 * case: RFC 9110 11.1), or, with mTLS, a verified client certificate that a
 * token entry names (docs/security.md: the certificate is the principal,
 * as in etcd). A request that sends a token is judged by its token alone.
 * Secrets are compared as their SHA-256 (secret.c). An admin token may do
 * everything; a limited token acts only on locks whose names start with one
 * of its prefixes, and only as its permissions there say (F7: read, claim,
 * operate, configure; `prefixes` give all four, operate and configure read
 * too, claim reads its own claims only): every lock of a claim counts, those its tags and group add
 * included (the engine asks, through the request's `allow`, once it knows
 * which locks the tags add). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "server.h"

/* The entry whose secret hashes as the presented one does. Every entry is
 * compared, and in constant time, so the time taken tells nothing. */
static const sl_conf_token *by_secret(const sl_conf *conf, const char *secret)
{
    char hash[SL_SHA256_HEX];
    sl_secret_sha256(secret, strlen(secret), hash);
    const sl_conf_token *found = NULL;
    for (size_t i = 0; i < conf->ntokens; i++)
        if (sl_secret_same_hash(hash, conf->tokens[i].sha256) && !found)
            found = &conf->tokens[i];
    return found;
}

/* Whether a verified certificate's names (the subject CN first, then
 * "DNS:", "URI:", "email:" SANs: sl_http_req_peer_names) hold the entry's
 * name. DNS names compare without case (RFC 4343), the others exactly. */
static bool names_certificate(const char *want, const char **names, size_t n)
{
    if (strncmp(want, "CN:", 3) == 0)
        return n > 0 && *names[0] && strcmp(names[0], want + 3) == 0;
    bool dns = strncmp(want, "DNS:", 4) == 0;
    for (size_t i = 1; i < n; i++)
        if (dns ? strcasecmp(names[i], want) == 0 : strcmp(names[i], want) == 0)
            return true;
    return false;
}

/* The secret of an "Authorization: Bearer SECRET" header, or NULL. The one
 * rule of every check (the scheme in any case, one space): /healthz, the
 * kept connection slots and the API must not disagree on who a request is. */
static const char *bearer_secret(const sl_http_req *req)
{
    const char *h = sl_http_req_header(req, "Authorization");
    return h && strncasecmp(h, "Bearer ", 7) == 0 ? h + 7 : NULL;
}

typedef enum {
    NO_CREDENTIAL, /* neither a bearer token nor a verified certificate */
    KNOWN,         /* *out is the entry */
    BAD_TOKEN,     /* a bearer token no entry has */
    UNKNOWN_CERT,  /* no token, and a certificate no entry names */
} principal_kind;

/* Who a request is: its bearer token when it sends one (the token wins:
 * a wrong token is refused even over a certificate an entry names, and a
 * gateway's certificate can carry its clients' own tokens), else its
 * connection's verified client certificate (or the one a proven follower
 * forwarded: forward.c), the first entry in the file's order that names it. */
static principal_kind principal(const sl_conf *conf, const sl_http_req *req,
                                const sl_conf_token **out)
{
    *out = NULL;
    const char *secret = bearer_secret(req);
    if (secret) {
        *out = by_secret(conf, secret);
        return *out ? KNOWN : BAD_TOKEN;
    }
    sl_client_names f;
    if (sl_forward_names(req, &f) == 0)
        return NO_CREDENTIAL;
    for (size_t i = 0; i < conf->ntokens && !*out; i++)
        if (conf->tokens[i].certificate &&
            names_certificate(conf->tokens[i].certificate, f.names, f.n))
            *out = &conf->tokens[i];
    return *out ? KNOWN : UNKNOWN_CERT;
}

int sl_auth_check(sl_ctx *c)
{
    const sl_conf *conf = c->srv->conf;
    if (conf->ntokens == 0) {
        c->auth.admin = true;
        return 0;
    }
    const sl_conf_token *t;
    switch (principal(conf, c->req, &t)) {
    case KNOWN:
        c->auth.token = t;
        c->auth.admin = t->admin;
        return 0;
    case BAD_TOKEN:
        sl_http_add_header(c->req, "WWW-Authenticate", "Bearer error=\"invalid_token\"");
        sl_reply_error(c, 401, "unauthorized", "the token is not one this server knows");
        return -1;
    case UNKNOWN_CERT: {
        sl_client_names f;
        const char *cn = sl_forward_names(c->req, &f) ? f.names[0] : "";
        sl_http_add_header(c->req, "WWW-Authenticate", "Bearer");
        sl_reply_error(c, 401, "unauthorized",
                       "the client certificate (CN \"%.100s\") is not one this server's tokens "
                       "name: send \"Authorization: Bearer <token>\", or name the certificate "
                       "in a token entry (certificate: {cn: ...})",
                       cn);
        return -1;
    }
    case NO_CREDENTIAL:
        break;
    }
    sl_http_add_header(c->req, "WWW-Authenticate", "Bearer");
    sl_reply_error(c, 401, "unauthorized",
                   "this server needs a token: send \"Authorization: Bearer <token>\"");
    return -1;
}

const char *sl_auth_actor(const sl_ctx *c)
{
    return c->auth.token ? c->auth.token->name : SL_ACTOR_ANONYMOUS;
}

/* The entry the request is, or NULL. */
static const sl_conf_token *known_token(const sl_conf *conf, const sl_http_req *req)
{
    const sl_conf_token *t;
    return principal(conf, req, &t) == KNOWN ? t : NULL;
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

/* Whether a token's access to this permission's prefixes reads there too. */
static bool reads_with(sl_perm q)
{
    return q == SL_PERM_OPERATE || q == SL_PERM_CONFIGURE;
}

bool sl_auth_token_may(const sl_conf_token *t, sl_perm p, const char *name)
{
    if (!t || t->admin)
        return true; /* no tokens (every request an admin's), or an admin token */
    if (under(t->prefixes, t->nprefixes, name) || under(t->perms[p].v, t->perms[p].n, name))
        return true;
    /* Operate and configure imply read: an operator sees the claims it
     * ends, a configurer the semaphore it sets. Claim does not: on a shared
     * lock a client sees its own claims (own_claim), not the others'. */
    for (int q = 0; p == SL_PERM_READ && q < SL_NPERMS; q++)
        if (reads_with((sl_perm)q) && under(t->perms[q].v, t->perms[q].n, name))
            return true;
    return false;
}

/* Whether the token has any permission on the name: if not, a refusal
 * says only that the name is outside its prefixes. */
static bool touches(const sl_conf_token *t, const char *name)
{
    bool any = false;
    for (int p = 0; p < SL_NPERMS; p++)
        any = any || sl_auth_token_may(t, (sl_perm)p, name);
    return any;
}

bool sl_auth_has(const sl_ctx *c, sl_perm p)
{
    const sl_conf_token *t = c->auth.token;
    return c->auth.admin || !t || t->nprefixes > 0 || t->perms[p].n > 0;
}

bool sl_auth_may(const sl_ctx *c, sl_perm p, const char *name)
{
    return c->auth.admin || sl_auth_token_may(c->auth.token, p, name);
}

bool sl_auth_allows(const sl_ctx *c, const char *name)
{
    return sl_auth_may(c, SL_PERM_READ, name);
}

/* Calls fn on every prefix the token has permission p on: its `prefixes`
 * and p's list (for read, the lists that imply read too). */
static void each_prefix(const sl_conf_token *t, sl_perm p, void (*fn)(void *, const char *),
                        void *ud)
{
    for (size_t i = 0; i < t->nprefixes; i++)
        fn(ud, t->prefixes[i]);
    for (int q = 0; q < SL_NPERMS; q++) {
        if (q != (int)p && (p != SL_PERM_READ || !reads_with((sl_perm)q)))
            continue;
        for (size_t i = 0; i < t->perms[q].n; i++)
            fn(ud, t->perms[q].v[i]);
    }
}

/* "\"team-a/\", \"shared/\"": the prefixes a token has permission p on, for
 * the messages that say how to mend a refusal. */
static void add_listed(void *ud, const char *p)
{
    sl_buf_addf(ud, "%s\"%s\"", sl_buf_size(ud) ? ", " : "", p);
}

static const char *perm_prefixes(const sl_conf_token *t, sl_perm p)
{
    sl_buf *list = sl_reply_scratch();
    if (t)
        each_prefix(t, p, add_listed, list);
    sl_buf_add(list, "", 1);
    return sl_buf_data(list);
}

bool sl_auth_require(sl_ctx *c, sl_perm p, const char *name, const char *doing)
{
    if (sl_auth_may(c, p, name))
        return true;
    if (!c->auth.admin && !touches(c->auth.token, name)) {
        sl_reply_error(c, 403, "forbidden",
                       "this token may not touch \"%s\": it is outside its prefixes", name);
        return false;
    }
    const char *list = perm_prefixes(c->auth.token, p);
    if (*list)
        sl_reply_error(c, 403, "forbidden",
                       "%s needs the %s permission on \"%s\", which this token does not have "
                       "there: its %s prefixes are %s",
                       doing, sl_perm_name(p), name, sl_perm_name(p), list);
    else
        sl_reply_error(c, 403, "forbidden",
                       "%s needs the %s permission on \"%s\", and this token has no %s "
                       "permission (an admin may give it %s prefixes)",
                       doing, sl_perm_name(p), name, sl_perm_name(p), sl_perm_name(p));
    return false;
}

/* A lock key ("mtx/NAME", "sem/NAME") or, for a claim that takes no lock,
 * its holder: such a claim touches nobody's slots, but it names a holder
 * and tags that belong to somebody, so it belongs to the namespace of its
 * holder. */
static bool key_or_holder_may(const sl_conf_token *t, sl_perm p, const char *key,
                              const char *holder)
{
    return sl_auth_token_may(t, p, key ? key + 4 : holder);
}

/* The lock key the token lacks permission p on (the holder for a claim
 * without locks), or NULL when it has p on every lock of the claim. Every
 * lock counts, whether the claim named it or its tags and group added it: a
 * rule of "the explicit locks and the group" held vacuously for a claim
 * made of tags only. */
static const char *claim_lacks(const sl_conf_token *t, sl_perm p, const sl_claim *claim)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    if (v.nlocks == 0)
        return key_or_holder_may(t, p, NULL, v.holder) ? NULL : v.holder;
    for (size_t i = 0; i < v.nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(claim, i, &lv); /* no position: none is needed */
        if (!sl_auth_token_may(t, p, lv.name))
            return lv.key;
    }
    return NULL;
}

bool sl_auth_allows_claim(sl_ctx *c, const sl_claim *claim)
{
    return c->auth.admin || sl_auth_token_allows_claim(c->auth.token, claim);
}

/* Its own: its holder under the token's claim prefixes (F12 keeps a
 * token's claims there) and the claim permission on every lock. */
static bool own_claim(const sl_conf_token *t, const sl_claim *claim)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    return sl_auth_token_may(t, SL_PERM_CLAIM, v.holder) &&
           claim_lacks(t, SL_PERM_CLAIM, claim) == NULL;
}

bool sl_auth_token_allows_claim(const sl_conf_token *t, const sl_claim *claim)
{
    return !t || t->admin || claim_lacks(t, SL_PERM_READ, claim) == NULL || own_claim(t, claim);
}

bool sl_auth_owns(const sl_ctx *c, const sl_claim *claim)
{
    return c->auth.admin || own_claim(c->auth.token, claim);
}

bool sl_auth_may_end(const sl_ctx *c, const sl_claim *claim)
{
    const sl_conf_token *t = c->auth.token;
    return c->auth.admin || own_claim(t, claim) || claim_lacks(t, SL_PERM_OPERATE, claim) == NULL;
}

bool sl_auth_require_end(sl_ctx *c, const sl_claim *claim, const char *doing)
{
    if (sl_auth_may_end(c, claim))
        return true;
    const sl_conf_token *t = c->auth.token;
    sl_claim_view v;
    sl_claim_get(claim, &v);
    if (sl_auth_token_may(t, SL_PERM_CLAIM, v.holder) && claim_lacks(t, SL_PERM_OPERATE, claim))
        sl_reply_error(c, 403, "forbidden",
                       "%s claim %s needs the claim permission on %s (or operate); this token "
                       "may only read it there",
                       doing, v.id, claim_lacks(t, SL_PERM_CLAIM, claim));
    else
        sl_reply_error(c, 403, "forbidden",
                       "%s claim %s needs the operate permission on %s: its holder \"%s\" is "
                       "not under this token's claim prefixes, so it is another client's claim",
                       doing, v.id, claim_lacks(t, SL_PERM_OPERATE, claim), v.holder);
    return false;
}

static bool allow_cb(void *ud, const char *key)
{
    const sl_auth_claim *a = ud;
    return key_or_holder_may(a->c->auth.token, SL_PERM_CLAIM, key, a->holder);
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

/* A copy of a limited token's prefixes: first those it reads under, then
 * those it claims under (its own claims' events, own_claim's rule). */
struct sl_event_scope {
    size_t nread, nclaim;
    char *prefixes[]; /* each allocated with the scope, after the array */
};

sl_event_scope *sl_auth_event_scope(const sl_ctx *c)
{
    return c->auth.admin ? NULL : sl_auth_token_scope(c->auth.token);
}

typedef struct scope_fill {
    size_t n, bytes; /* counting */
    sl_event_scope *s;
    char *at; /* copying: where the next prefix's bytes go */
} scope_fill;

static void count_prefix(void *ud, const char *p)
{
    scope_fill *f = ud;
    f->n++;
    f->bytes += strlen(p) + 1;
}

static void copy_prefix(void *ud, const char *p)
{
    scope_fill *f = ud;
    size_t len = strlen(p) + 1;
    memcpy(f->at, p, len);
    f->s->prefixes[f->n++] = f->at;
    f->at += len;
}

sl_event_scope *sl_auth_token_scope(const sl_conf_token *t)
{
    if (!t || t->admin)
        return NULL; /* no tokens (every request an admin's), or an admin token */
    scope_fill f = {0, 0, NULL, NULL};
    each_prefix(t, SL_PERM_READ, count_prefix, &f);
    size_t nread = f.n;
    each_prefix(t, SL_PERM_CLAIM, count_prefix, &f);
    sl_event_scope *s = malloc(sizeof(*s) + f.n * sizeof(char *) + f.bytes);
    if (!s)
        abort();
    *s = (sl_event_scope){nread, f.n - nread};
    f = (scope_fill){0, 0, s, (char *)&s->prefixes[nread + s->nclaim]};
    each_prefix(t, SL_PERM_READ, copy_prefix, &f);
    each_prefix(t, SL_PERM_CLAIM, copy_prefix, &f);
    return s;
}

/* Whether every lock key of the JSON array is under the n prefixes; an
 * empty array goes by the holder. */
static bool locks_under(json_t *locks, char *const *prefixes, size_t n, const char *holder)
{
    size_t nlocks = json_array_size(locks);
    bool ok = nlocks > 0 || under(prefixes, n, holder);
    for (size_t i = 0; ok && i < nlocks; i++) {
        const char *key = json_string_value(json_array_get(locks, i));
        ok = key && strlen(key) > 4 && under(prefixes, n, key + 4);
    }
    return ok;
}

/* ev->locks is the store's JSON array of lock keys ("mtx/NAME", "sem/NAME"):
 * what the token reads, or an event of its own claim. */
bool sl_event_scope_allows(const sl_event_scope *s, const sl_store_event *ev)
{
    if (!s)
        return true;
    json_t *locks = json_loads(ev->locks ? ev->locks : "[]", 0, NULL);
    char *const *claim = s->prefixes + s->nread;
    bool own =
        under(claim, s->nclaim, ev->holder) && locks_under(locks, claim, s->nclaim, ev->holder);
    bool ok = own || locks_under(locks, s->prefixes, s->nread, ev->holder);
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
    if (sl_auth_may(c, SL_PERM_CLAIM, holder))
        return true;
    const sl_conf_token *t = c->auth.token;
    const char *list = perm_prefixes(t, SL_PERM_CLAIM);
    if (!*list) {
        sl_reply_error(c, 403, "forbidden",
                       "making a claim needs the claim permission, and this token has none: it "
                       "may only read (an admin may give it claim prefixes)");
        return false;
    }
    const char *first = t->nprefixes ? t->prefixes[0] : t->perms[SL_PERM_CLAIM].v[0];
    sl_reply_error(c, 403, "forbidden",
                   "holder \"%s\" is outside this token's prefixes: a claim's holder must start "
                   "with one of %s (such as \"%sRUN/STEP\"), those it may claim under",
                   holder, list, first);
    return false;
}

/* Appends p to arr unless it is there already. */
static void add_unique(json_t *arr, const char *p)
{
    for (size_t i = 0; i < json_array_size(arr); i++)
        if (strcmp(json_string_value(json_array_get(arr, i)), p) == 0)
            return;
    json_array_append_new(arr, json_string(p));
}

static void add_unique_cb(void *ud, const char *p)
{
    add_unique(ud, p);
}

static json_t *perm_json(const sl_conf_token *t, sl_perm p)
{
    json_t *arr = json_array();
    if (!t || t->admin)
        add_unique(arr, "");
    else
        each_prefix(t, p, add_unique_cb, arr);
    return arr;
}

json_t *sl_auth_whoami(const sl_ctx *c)
{
    const sl_conf_token *t = c->auth.token;
    json_t *perms = json_object();
    for (int p = 0; p < SL_NPERMS; p++)
        json_object_set_new(perms, sl_perm_name((sl_perm)p), perm_json(t, (sl_perm)p));
    json_t *name = t ? json_string(t->name) : json_null();
    json_t *o =
        json_pack("{s:o,s:b,s:o}", "name", name, "admin", c->auth.admin, "permissions", perms);
    json_object_set_new(o, "max_priority",
                        t && t->priority_capped ? json_integer(t->max_priority) : json_null());
    return o;
}

bool sl_auth_allows_priority(sl_ctx *c, int32_t priority)
{
    const sl_conf_token *t = c->auth.token;
    if (c->auth.admin || !t || !t->priority_capped || priority <= t->max_priority)
        return true;
    sl_reply_error(c, 403, "forbidden",
                   "priority %ld is above this token's max_priority, %ld: ask %ld or less (a "
                   "higher priority is the configuration's to give, since with preempt it "
                   "revokes other holders)",
                   (long)priority, (long)t->max_priority, (long)t->max_priority);
    return false;
}

/* Whether two entries are known by the same secret (its hash) or the same
 * certificate name. */
static bool same_credential(const sl_conf_token *a, const sl_conf_token *b)
{
    if (a->certificate || b->certificate)
        return a->certificate && b->certificate && strcmp(a->certificate, b->certificate) == 0;
    return sl_secret_same_hash(a->sha256, b->sha256);
}

/* F9: a reload replaced the tokens. What a parked request or an open
 * stream was admitted with is found again by name and secret, or name and
 * certificate (a rotated secret is a token gone: its old secret no longer
 * gets in). */
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
        if (strcmp(n->name, (*t)->name) == 0 && same_credential(n, *t)) {
            *t = n;
            return 0;
        }
    }
    return -1;
}

typedef struct tenant_find {
    const char *name, *best;
    size_t best_len;
} tenant_find;

static void longer_prefix(void *ud, const char *p)
{
    tenant_find *f = ud;
    size_t n = strlen(p);
    if (strncmp(f->name, p, n) == 0 && (!f->best || n > f->best_len)) {
        f->best = p;
        f->best_len = n;
    }
}

/* The prefixes under which a token makes locks count (`prefixes`, claim and
 * configure; not read or operate, which make none). */
const char *sl_auth_tenant(const sl_conf *conf, const char *name)
{
    tenant_find f = {name, NULL, 0};
    for (size_t i = 0; i < conf->ntokens; i++) {
        const sl_conf_token *t = &conf->tokens[i];
        if (t->admin)
            continue;
        each_prefix(t, SL_PERM_CLAIM, longer_prefix, &f);
        for (size_t j = 0; j < t->perms[SL_PERM_CONFIGURE].n; j++)
            longer_prefix(&f, t->perms[SL_PERM_CONFIGURE].v[j]);
    }
    return f.best;
}
