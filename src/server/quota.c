/* quota.c - per-token quotas and the admins' share of the global limits
 * (F4, F5; docs/security.md, "Quotas").
 *
 * A limited token may hold so many live claims, waiting claims, semaphore
 * configurations, event streams and parked long polls at once, and send so
 * many requests per second (a token bucket with a burst); over a quota a
 * request is answered 429 quota_exceeded with Retry-After. Admin tokens,
 * and every request of a server without tokens, have none.
 *
 * Claims are counted by the engine per actor (the token's name, saved with
 * each claim), so their counts come back after a restart and on a new
 * leader. Semaphore configurations are counted where the token may
 * configure (its namespace, the file's included), from the engine's table. Streams,
 * long polls and the bucket live in this process: a use record per token
 * name, kept for the server's life (tokens are few), so that what a reload
 * moves from one configuration's token to the next keeps its count.
 *
 * The global limits (max_claims, max_semaphores, max_streams) keep their
 * last tenth for admin tokens, so that one tenant filling them leaves the
 * operator room to act; the file's semaphores always apply. */
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* Retry-After for a count (seconds): a claim, stream or wait that ends
 * frees a place at any moment, so the client looks again soon. */
#define QUOTA_COUNT_RETRY_S 1

struct sl_quota_use {
    char *name;
    size_t streams, long_polls;
    bool rate_init;
    double level;    /* requests the bucket holds */
    int64_t rate_at; /* when level was counted (engine ms) */
};

sl_quota_use *sl_quota_use_of(sl_server *srv, const sl_conf_token *t)
{
    if (!t || t->admin)
        return NULL;
    for (size_t i = 0; i < srv->nquota_uses; i++)
        if (strcmp(srv->quota_uses[i]->name, t->name) == 0)
            return srv->quota_uses[i];
    sl_quota_use *u = calloc(1, sizeof(*u));
    sl_quota_use **grown = realloc(srv->quota_uses, (srv->nquota_uses + 1) * sizeof(*grown));
    if (!u || !grown || !(u->name = strdup(t->name)))
        abort();
    srv->quota_uses = grown;
    srv->quota_uses[srv->nquota_uses++] = u;
    return u;
}

void sl_quota_free_all(sl_server *srv)
{
    for (size_t i = 0; i < srv->nquota_uses; i++) {
        free(srv->quota_uses[i]->name);
        free(srv->quota_uses[i]);
    }
    free(srv->quota_uses);
    srv->quota_uses = NULL;
    srv->nquota_uses = 0;
}

/* How to get under each quota again. */
static const char *const mends[SL_QUOTA_COUNT] = {
    [SL_QUOTA_CLAIMS] = "release or withdraw claims it no longer needs",
    [SL_QUOTA_WAITING] = "let some of its waiting claims be granted, or withdraw some",
    [SL_QUOTA_SEMAPHORES] = "delete semaphores it no longer needs",
    [SL_QUOTA_STREAMS] = "close one of its event streams, or poll GET /v1/events with wait",
    [SL_QUOTA_LONG_POLLS] = "let one of its waits end, or ask again without wait",
    [SL_QUOTA_RATE] = "send fewer requests per second",
};

static void refuse(sl_ctx *c, sl_quota q, uint64_t value, int64_t retry_s)
{
    c->srv->quota_refused[q]++;
    char after[24];
    snprintf(after, sizeof(after), "%lld", (long long)retry_s);
    sl_http_add_header(c->req, "Retry-After", after);
    sl_reply_error(c, 429, "quota_exceeded",
                   "token \"%s\" is at its quota of %llu %s: %s, and retry after %llds; an "
                   "operator may raise it (limits.token_quotas.%s, or the token's "
                   "quotas.%s)",
                   c->auth.token->name, (unsigned long long)value,
                   q == SL_QUOTA_RATE ? "requests per second" : sl_quota_names[q], mends[q],
                   (long long)retry_s, sl_quota_names[q], sl_quota_names[q]);
}

/* Whether the count is under the token's quota; answers 429 if not. */
static bool under(sl_ctx *c, sl_quota q, uint64_t count)
{
    uint64_t max = sl_conf_quota(c->srv->conf, c->auth.token, q);
    if (max == 0 || count < max)
        return true;
    refuse(c, q, max, QUOTA_COUNT_RETRY_S);
    return false;
}

/* The admins' share: a limited token may fill a global limit up to nine
 * tenths; answers 503 as the limit itself does when it is reached. */
static bool under_share(sl_ctx *c, size_t used, size_t max, const char *what)
{
    if (c->auth.admin)
        return true;
    size_t open = max - max / 10;
    if (used < open)
        return true;
    sl_http_add_header(c->req, "Retry-After", "1");
    sl_reply_error(c, 503, "unavailable",
                   "%zu %s are in use: limited tokens may fill %zu of the server's %zu (the last "
                   "tenth is kept for admin tokens); retry later, or ask an operator to raise "
                   "the limit",
                   used, what, open, max);
    return false;
}

bool sl_quota_request(sl_ctx *c)
{
    const sl_conf *conf = c->srv->conf;
    uint64_t rate = sl_conf_quota(conf, c->auth.token, SL_QUOTA_RATE);
    if (rate == 0)
        return true;
    uint64_t burst = sl_conf_quota(conf, c->auth.token, SL_QUOTA_BURST);
    double size = (double)(burst ? burst : rate);
    sl_quota_use *u = sl_quota_use_of(c->srv, c->auth.token);
    if (!u->rate_init) {
        u->rate_init = true;
        u->level = size;
    } else if (c->now > u->rate_at) {
        u->level += (double)(c->now - u->rate_at) * (double)rate / 1000.0;
    }
    u->rate_at = c->now;
    if (u->level > size)
        u->level = size; /* also after a reload made the bucket smaller */
    if (u->level >= 1.0) {
        u->level -= 1.0;
        return true;
    }
    /* The next whole request is (1 - level) / rate seconds away: under a
     * second, since the rate is a whole number of at least 1. */
    refuse(c, SL_QUOTA_RATE, rate, 1);
    return false;
}

bool sl_quota_claim(sl_ctx *c, bool waits)
{
    if (c->auth.admin)
        return true;
    sl_engine_stats st;
    sl_engine_stats_get(c->srv->eng, &st);
    sl_actor_counts n;
    sl_engine_actor_get(c->srv->eng, c->auth.token->name, &n);
    return under(c, SL_QUOTA_CLAIMS, n.live) && under(c, SL_QUOTA_WAITING, n.pending) &&
           (!waits || sl_quota_long_poll(c)) &&
           under_share(c, st.claims - st.ended, c->srv->conf->max_claims, "live claims");
}

/* The configurations the token may configure (under its prefixes or its
 * configure list): a walk of the engine's table, only when the table holds
 * at least quota entries (else the count cannot reach it) and only for a
 * new name, so it is rare. */
static size_t configs_under(const sl_engine *eng, const sl_conf_token *t)
{
    size_t n = 0;
    for (const sl_config *cfg = sl_config_next(eng, NULL); cfg; cfg = sl_config_next(eng, cfg)) {
        sl_config_view v;
        sl_config_get(cfg, &v);
        n += sl_auth_token_may(t, SL_PERM_CONFIGURE, v.name);
    }
    return n;
}

bool sl_quota_semaphore(sl_ctx *c, const char *name)
{
    sl_engine *eng = c->srv->eng;
    if (sl_config_find(eng, name))
        return true; /* a change, not a new configuration */
    sl_engine_stats st;
    sl_engine_stats_get(eng, &st);
    size_t max = c->srv->conf->max_semaphores;
    if (st.configs >= max) {
        sl_http_add_header(c->req, "Retry-After", "1");
        sl_reply_error(c, 503, "unavailable",
                       "%zu semaphore configurations exist, the server's limit "
                       "(limits.max_semaphores); delete some, or raise the limit",
                       st.configs);
        return false;
    }
    if (!under_share(c, st.configs, max, "semaphore configurations"))
        return false;
    uint64_t q = sl_conf_quota(c->srv->conf, c->auth.token, SL_QUOTA_SEMAPHORES);
    return q == 0 || st.configs < q ||
           under(c, SL_QUOTA_SEMAPHORES, configs_under(eng, c->auth.token));
}

bool sl_quota_stream(sl_ctx *c)
{
    sl_quota_use *u = sl_quota_use_of(c->srv, c->auth.token);
    return !u || (under(c, SL_QUOTA_STREAMS, u->streams) &&
                  under_share(c, c->srv->nstreams, c->srv->conf->max_streams, "event streams"));
}

bool sl_quota_long_poll(sl_ctx *c)
{
    sl_quota_use *u = sl_quota_use_of(c->srv, c->auth.token);
    return !u || under(c, SL_QUOTA_LONG_POLLS, u->long_polls);
}

void sl_quota_count(sl_quota_use *u, sl_quota q, int delta)
{
    if (!u)
        return;
    size_t *n = q == SL_QUOTA_STREAMS ? &u->streams : &u->long_polls;
    *n = delta > 0 ? *n + 1 : *n - 1;
}

void sl_quota_metrics(const sl_server *srv, sl_buf *out)
{
    sl_buf_addf(out, "# HELP sluice_quota_refused_total Requests of limited tokens refused "
                     "429 quota_exceeded, by quota.\n"
                     "# TYPE sluice_quota_refused_total counter\n");
    for (int q = 0; q < SL_QUOTA_COUNT; q++)
        if (q != SL_QUOTA_BURST) /* a burst refused counts as requests_per_second */
            sl_buf_addf(out, "sluice_quota_refused_total{quota=\"%s\"} %llu\n", sl_quota_names[q],
                        (unsigned long long)srv->quota_refused[q]);
}
