/* conf.c - sluiced's configuration: defaults, deep copies and freeing.
 * The checks of a whole configuration are in conf_check.c. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "duration.h"

/* ---- memory: the daemon aborts when it runs out -------------------------- */

void *sl__conf_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("sluiced: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *sl__conf_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        fputs("sluiced: out of memory\n", stderr);
        abort();
    }
    return p;
}

char *sl__conf_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(sl__conf_xmalloc(n), s, n);
}

static char *dup_or_null(const char *s)
{
    return s ? sl__conf_xstrdup(s) : NULL;
}

void sl__conf_replace_str(char **dst, const char *src)
{
    char *copy = sl__conf_xstrdup(src);
    free(*dst);
    *dst = copy;
}

/* ---- defaults, free, copy -------------------------------------------------- */

void sl_conf_defaults(sl_conf *c)
{
    memset(c, 0, sizeof(*c));
    c->listen = sl__conf_xstrdup("127.0.0.1:7700");
    c->store = sl__conf_xstrdup("sqlite:./sluice.db");
    c->durability = SL_DURABILITY_NORMAL;
    c->log_level = SL_LOG_INFO;
    c->default_lease_ms = 0;
    c->default_timeout_ms = 0;
    c->backdate_skew_ms = SL_BACKDATE_SKEW_DEFAULT_MS;
    c->max_wait_ms = 30 * 1000;
    c->idle_timeout_ms = 60 * 1000;
    c->header_timeout_ms = 10 * 1000;
    c->event_retention_ms = 24LL * 3600 * 1000;
    c->claim_retention_ms = 3600LL * 1000;
    c->max_body = 64 * 1024;
    c->max_headers = 16 * 1024;
    c->max_connections = 4096;
    c->max_connections_per_client = 200;
    c->max_claims = 10000000;
    c->max_streams = 256;
    c->max_event_scan = 500;
    c->max_semaphores = 100000;
    /* Far above what one tenant's jobs need (every test, integration and
     * benchmark stays under them), far below what fills a host's memory. */
    static const uint64_t quotas[SL_QUOTA_COUNT] = {
        [SL_QUOTA_CLAIMS] = 10000,   [SL_QUOTA_WAITING] = 5000, [SL_QUOTA_SEMAPHORES] = 1000,
        [SL_QUOTA_STREAMS] = 32,     [SL_QUOTA_LONG_POLLS] = 1000, [SL_QUOTA_RATE] = 1000,
        [SL_QUOTA_BURST] = 2000,
    };
    memcpy(c->token_quotas, quotas, sizeof(quotas));
    c->leader_timeout_ms = 5000;
    c->tls_min_version = 12;
}

const char *const sl_quota_names[SL_QUOTA_COUNT] = {
    "claims", "waiting", "semaphores", "streams", "long_polls", "requests_per_second", "burst",
};

uint64_t sl_conf_quota(const sl_conf *c, const sl_conf_token *t, sl_quota q)
{
    if (!t || t->admin)
        return 0;
    uint64_t v = t->quotas[q] ? t->quotas[q] : c->token_quotas[q];
    return v == SL_QUOTA_NONE ? 0 : v;
}

void sl__conf_sems_free(sl_conf_sem *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(s[i].name);
        free((void *)s[i].rules.weights); /* ours: see sl__conf_weights_copy */
    }
    free(s);
}

/* One block, as the engine keeps them: an entry needs no second free per
 * key, and a copy of the entry is one call. */
sl_weight *sl__conf_weights_copy(const sl_weight *w, size_t n)
{
    if (n == 0)
        return NULL;
    size_t bytes = n * sizeof(*w);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(w[i].key) + 1;
    sl_weight *out = sl__conf_xmalloc(bytes);
    char *p = (char *)(out + n);
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(w[i].key) + 1;
        memcpy(p, w[i].key, len);
        out[i] = (sl_weight){p, w[i].weight};
        p += len;
    }
    return out;
}

const char *sl_perm_name(sl_perm p)
{
    static const char *const names[SL_NPERMS] = {"read", "claim", "operate", "configure"};
    return (unsigned)p < SL_NPERMS ? names[p] : "?";
}

static void prefix_list_free(sl_prefix_list *l)
{
    for (size_t j = 0; j < l->n; j++)
        free(l->v[j]);
    free(l->v);
}

static sl_prefix_list prefix_list_dup(const sl_prefix_list *l)
{
    sl_prefix_list d = {l->n ? sl__conf_xcalloc(l->n, sizeof(char *)) : NULL, l->n};
    for (size_t j = 0; j < l->n; j++)
        d.v[j] = dup_or_null(l->v[j]);
    return d;
}

void sl__conf_tokens_free(sl_conf_token *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].name);
        free(t[i].token);
        free(t[i].sha256);
        free(t[i].certificate);
        for (size_t j = 0; j < t[i].nprefixes; j++)
            free(t[i].prefixes[j]);
        free(t[i].prefixes);
        for (int p = 0; p < SL_NPERMS; p++)
            prefix_list_free(&t[i].perms[p]);
    }
    free(t);
}

void sl_conf_free(sl_conf *c)
{
    if (!c)
        return;
    free(c->listen);
    free(c->store);
    free(c->advertise);
    free(c->plain_listen);
    free(c->tls_cert);
    free(c->tls_key);
    free(c->tls_client_ca);
    free(c->cluster_ca);
    free(c->cluster_cert);
    free(c->cluster_key);
    free(c->audit_path);
    sl__conf_sems_free(c->semaphores, c->nsemaphores);
    sl__conf_tokens_free(c->tokens, c->ntokens);
    for (size_t i = 0; i < c->nallowed_hosts; i++)
        free(c->allowed_hosts[i]);
    free(c->allowed_hosts);
    memset(c, 0, sizeof(*c));
}

/* A deep copy: the scratch configuration a load works on. */
void sl__conf_dup(sl_conf *dst, const sl_conf *src)
{
    *dst = *src;
    dst->listen = dup_or_null(src->listen);
    dst->store = dup_or_null(src->store);
    dst->advertise = dup_or_null(src->advertise);
    dst->plain_listen = dup_or_null(src->plain_listen);
    dst->tls_cert = dup_or_null(src->tls_cert);
    dst->tls_key = dup_or_null(src->tls_key);
    dst->tls_client_ca = dup_or_null(src->tls_client_ca);
    dst->cluster_ca = dup_or_null(src->cluster_ca);
    dst->cluster_cert = dup_or_null(src->cluster_cert);
    dst->cluster_key = dup_or_null(src->cluster_key);
    dst->audit_path = dup_or_null(src->audit_path);
    dst->semaphores = NULL;
    dst->tokens = NULL;
    dst->allowed_hosts = NULL;
    if (src->nallowed_hosts) {
        dst->allowed_hosts = sl__conf_xcalloc(src->nallowed_hosts, sizeof(char *));
        for (size_t i = 0; i < src->nallowed_hosts; i++)
            dst->allowed_hosts[i] = dup_or_null(src->allowed_hosts[i]);
    }
    if (src->nsemaphores) {
        dst->semaphores = sl__conf_xcalloc(src->nsemaphores, sizeof(*dst->semaphores));
        for (size_t i = 0; i < src->nsemaphores; i++) {
            dst->semaphores[i] = src->semaphores[i];
            dst->semaphores[i].name = dup_or_null(src->semaphores[i].name);
            dst->semaphores[i].rules.weights = sl__conf_weights_copy(
                src->semaphores[i].rules.weights, src->semaphores[i].rules.nweights);
        }
    }
    if (src->ntokens) {
        dst->tokens = sl__conf_xcalloc(src->ntokens, sizeof(*dst->tokens));
        for (size_t i = 0; i < src->ntokens; i++) {
            const sl_conf_token *s = &src->tokens[i];
            sl_conf_token *d = &dst->tokens[i];
            d->name = dup_or_null(s->name);
            d->token = dup_or_null(s->token);
            d->sha256 = dup_or_null(s->sha256);
            d->certificate = dup_or_null(s->certificate);
            d->admin = s->admin;
            memcpy(d->quotas, s->quotas, sizeof(d->quotas));
            d->nprefixes = s->nprefixes;
            d->prefixes = s->nprefixes ? sl__conf_xcalloc(s->nprefixes, sizeof(char *)) : NULL;
            for (size_t j = 0; j < s->nprefixes; j++)
                d->prefixes[j] = dup_or_null(s->prefixes[j]);
            for (int p = 0; p < SL_NPERMS; p++)
                d->perms[p] = prefix_list_dup(&s->perms[p]);
            d->priority_capped = s->priority_capped;
            d->max_priority = s->max_priority;
        }
    }
}
