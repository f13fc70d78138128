/* conf_tokens.c - the tokens of the configuration file.
 *
 * An entry is known by one of: `token`, its secret in clear, hashed here
 * (the server keeps and compares SHA-256 only: secret.c); `token_sha256`,
 * that hash, so the file holds no secret; or `certificate`, a name of a
 * client certificate (mTLS), kept as "CN:name", "DNS:name", "URI:name" or
 * "email:name", the form sl_http_req_peer_names gives the SANs in. conf.c
 * checks the values (a clear secret's length, the hash's digits...). */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_load.h"

static sl_prefix_list prefix_list(char *const *v, unsigned count)
{
    sl_prefix_list l = {count ? sl__conf_xcalloc(count, sizeof(char *)) : NULL, count};
    for (size_t j = 0; j < count; j++)
        l.v[j] = sl__conf_xstrdup(v[j] ? v[j] : "");
    return l;
}

/* F7: read, claim, operate and configure, each a list of prefixes, and the
 * ceiling on its claims' priority. */
static int conv_perms(loader *ld, const raw_token *rt, size_t i, sl_conf_token *t)
{
    t->perms[SL_PERM_READ] = prefix_list(rt->read, rt->read_count);
    t->perms[SL_PERM_CLAIM] = prefix_list(rt->claim, rt->claim_count);
    t->perms[SL_PERM_OPERATE] = prefix_list(rt->operate, rt->operate_count);
    t->perms[SL_PERM_CONFIGURE] = prefix_list(rt->configure, rt->configure_count);
    if (!rt->max_priority)
        return 0;
    char path[PATH_CAP];
    uint64_t v = 0;
    snprintf(path, sizeof(path), "tokens[%zu].max_priority", i);
    if (sl__conf_count(ld, path, rt->max_priority, INT32_MAX, "100", &v) != 0)
        return -1;
    t->priority_capped = true;
    t->max_priority = (int32_t)v;
    return 0;
}

int sl__conf_quotas(loader *ld, const char *at, const raw_quotas *q, uint64_t zero,
                    uint64_t *out)
{
    /* at is a path of PATH_CAP at most; a quota's name fits in the rest. */
    char path[PATH_CAP + 32];
    for (size_t k = 0; k < SL_QUOTA_COUNT; k++) {
        if (!q->v[k])
            continue;
        snprintf(path, sizeof(path), "%s.%s", at, sl_quota_names[k]);
        if (sl__conf_count(ld, path, q->v[k], UINT32_MAX, "100, or 0 for none", &out[k]) != 0)
            return -1;
        if (out[k] == 0)
            out[k] = zero;
    }
    return 0;
}

static char *joined(const char *kind, const char *value)
{
    size_t a = strlen(kind), b = strlen(value);
    char *s = sl__conf_xmalloc(a + b + 1);
    memcpy(s, kind, a);
    memcpy(s + a, value, b + 1);
    return s;
}

static int conv_certificate(loader *ld, const raw_cert *rc, size_t i, sl_conf_token *t)
{
    const char *kinds[] = {"CN:", "DNS:", "URI:", "email:"};
    const char *values[] = {rc->cn, rc->dns, rc->uri, rc->email};
    int given = 0;
    for (size_t k = 0; k < 4; k++) {
        if (values[k] && !given++)
            t->certificate = joined(kinds[k], values[k]);
    }
    if (given == 1)
        return 0;
    char path[PATH_CAP];
    snprintf(path, sizeof(path), "tokens[%zu].certificate", i);
    return sl__conf_fail(ld, path,
                         "give one name of the client certificate: cn, dns, uri or email, like "
                         "{cn: ci-runner}");
}

/* Exactly one of token, token_sha256 and certificate. */
static int conv_credential(loader *ld, const raw_token *rt, size_t i, sl_conf_token *t)
{
    int given = !!rt->token + !!rt->token_sha256 + !!rt->certificate;
    if (given != 1) {
        char path[PATH_CAP];
        snprintf(path, sizeof(path), "tokens[%zu]", i);
        if (given > 1)
            return sl__conf_fail(ld, path,
                                 "token \"%.100s\" is given more than one of token, "
                                 "token_sha256 and certificate; keep one",
                                 t->name);
        return sl__conf_fail(ld, path,
                             "token \"%.100s\" has no secret; give token_sha256 (`sluice token "
                             "new %.100s` prints a secret and the line), token, or certificate "
                             "for a client certificate",
                             t->name, t->name);
    }
    if (rt->certificate)
        return conv_certificate(ld, rt->certificate, i, t);
    if (rt->token) {
        t->token = sl__conf_xstrdup(rt->token);
        t->sha256 = sl__conf_xmalloc(SL_SHA256_HEX);
        sl_secret_sha256(rt->token, strlen(rt->token), t->sha256);
        return 0;
    }
    t->sha256 = sl__conf_xstrdup(rt->token_sha256); /* conf.c checks its digits */
    for (char *p = t->sha256; *p; p++)
        *p = (char)tolower((unsigned char)*p);
    return 0;
}

int sl__conf_tokens(loader *ld, const raw_conf *r, sl_conf *n)
{
    char path[PATH_CAP];
    sl__conf_tokens_free(n->tokens, n->ntokens);
    n->ntokens = r->tokens_count;
    n->tokens = sl__conf_xcalloc(r->tokens_count, sizeof(*n->tokens));
    for (size_t i = 0; i < r->tokens_count; i++) {
        const raw_token *rt = &r->tokens[i];
        sl_conf_token *t = &n->tokens[i];
        t->name = sl__conf_xstrdup(rt->name ? rt->name : "");
        if (conv_credential(ld, rt, i, t) != 0)
            return -1;
        snprintf(path, sizeof(path), "tokens[%zu].admin", i);
        if (rt->admin && sl__conf_bool(ld, path, rt->admin, &t->admin) != 0)
            return -1;
        snprintf(path, sizeof(path), "tokens[%zu].quotas", i);
        if (rt->quotas && sl__conf_quotas(ld, path, rt->quotas, SL_QUOTA_NONE, t->quotas) != 0)
            return -1;
        if (rt->prefixes_count) {
            t->prefixes = sl__conf_xcalloc(rt->prefixes_count, sizeof(char *));
            t->nprefixes = rt->prefixes_count;
            for (size_t j = 0; j < rt->prefixes_count; j++)
                t->prefixes[j] = sl__conf_xstrdup(rt->prefixes[j] ? rt->prefixes[j] : "");
        }
        if (conv_perms(ld, rt, i, t) != 0)
            return -1;
    }
    return 0;
}
