/* servers.c - several servers for one client: the list's parsing, and the
 * failover that moves a call to the next server when one fails.
 *
 * In shared mode several sluiced serve one database: one leads, the others
 * relay every request to it, and another takes over when it dies. A client
 * given their list (SLUICE_SERVER=http://a:7700,http://b:7700) keeps the
 * index of the server that last answered and uses it until it fails; then
 * it tries the next, round the list, with a pause that grows from
 * SL__BACKOFF_MIN_MS to SL__BACKOFF_MAX_MS (or the answer's Retry-After),
 * for SL__FAILOVER_MS (a long poll: for its wait, with what is left of it),
 * and never past the caller's own deadline (c->call_deadline).
 *
 * Worth another server: a connection that failed (refused, reset, timed
 * out) and the answers that say the cluster is between leaders (503
 * no_leader, leader_changed, not_leader, unavailable; 502 from a proxy).
 * Any other answer (404, 409, 401...) is the cluster's answer and is
 * returned as it is. A request that must not run twice (sl__call_json
 * decides which) is tried elsewhere only when it never reached a server.
 *
 * With one server nothing here runs: a failure is reported at once, as it
 * always was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

/* The longest entry quoted in an error message. */
#define QUOTE_MAX 200

/* ---- the list ------------------------------------------------------------------ */

/* The URL as given (n bytes of s), with "http://" added when it names no
 * scheme ("127.0.0.1:7700") and trailing slashes dropped. */
static char *server_url(const char *s, size_t n)
{
    bool scheme = false;
    for (size_t i = 0; i + 3 <= n && !scheme; i++)
        scheme = memcmp(s + i, "://", 3) == 0;
    while (n > 0 && s[n - 1] == '/')
        n--;
    const char *prefix = scheme ? "" : "http://";
    size_t plen = strlen(prefix);
    char *u = malloc(plen + n + 1);
    if (!u)
        return NULL;
    memcpy(u, prefix, plen);
    memcpy(u + plen, s, n);
    u[plen + n] = '\0';
    return u;
}

static bool url_ok(const char *u)
{
    const char *rest = NULL;
    if (strncmp(u, "http://", 7) == 0)
        rest = u + 7;
    else if (strncmp(u, "https://", 8) == 0)
        rest = u + 8;
    if (!rest || !*rest)
        return false;
    for (const char *p = u; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#')
            return false;
    return true;
}

void sl__servers_free(char **servers, size_t n)
{
    for (size_t i = 0; servers && i < n; i++)
        free(servers[i]);
    free(servers);
}

/* One URL, as a single server has always been read. */
static int parse_one(const char *spec, char **out, sl_client_error *err)
{
    *out = server_url(spec, strlen(spec));
    if (!*out)
        return sl__err_oom(err);
    if (url_ok(*out))
        return SL_CLIENT_OK;
    free(*out);
    *out = NULL;
    return sl__err_set(err, SL_CLIENT_EINVAL,
                       "\"%s\" is not a server URL: use http://HOST:PORT (from --server or "
                       "SLUICE_SERVER)",
                       spec);
}

/* Entry `pos` (from 1) of a list: s[0..n), blanks around it dropped. */
static int parse_entry(const char *s, size_t n, size_t pos, const char *source, char **out,
                       sl_client_error *err)
{
    *out = NULL;
    while (n > 0 && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 0)
        return sl__err_set(err, SL_CLIENT_EINVAL,
                           "%s entry %zu is empty: separate the servers' URLs with single "
                           "commas, as in http://a:7700,http://b:7700",
                           source, pos);
    *out = server_url(s, n);
    if (!*out)
        return sl__err_oom(err);
    if (url_ok(*out))
        return SL_CLIENT_OK;
    free(*out);
    *out = NULL;
    int q = n > QUOTE_MAX ? QUOTE_MAX : (int)n;
    return sl__err_set(err, SL_CLIENT_EINVAL,
                       "%s entry %zu (\"%.*s\") is not an http:// URL: give each server as "
                       "http://HOST:PORT, separated by commas",
                       source, pos, q, s);
}

int sl__servers_parse(const char *spec, const char *source, char ***out, size_t *n,
                      sl_client_error *err)
{
    *out = NULL;
    *n = 0;
    size_t count = 1;
    for (const char *p = spec; *p; p++)
        count += *p == ',';
    if (count > SL__SERVERS_MAX)
        return sl__err_set(err, SL_CLIENT_EINVAL, "%s names %zu servers; at most %d may be given",
                           source, count, SL__SERVERS_MAX);
    char **v = calloc(count, sizeof(*v));
    if (!v)
        return sl__err_oom(err);
    int rc = SL_CLIENT_OK;
    if (count == 1) {
        rc = parse_one(spec, &v[0], err);
    } else {
        const char *p = spec;
        for (size_t i = 0; i < count && rc == SL_CLIENT_OK; i++) {
            size_t len = strcspn(p, ",");
            rc = parse_entry(p, len, i + 1, source, &v[i], err);
            p += len + 1;
        }
    }
    if (rc != SL_CLIENT_OK) {
        sl__servers_free(v, count);
        return rc;
    }
    *out = v;
    *n = count;
    return SL_CLIENT_OK;
}

size_t sl_client_server_count(const sl_client *c)
{
    return c ? c->nservers : 0;
}

const char *sl_client_server_at(const sl_client *c, size_t i)
{
    return c && i < c->nservers ? c->servers[i] : NULL;
}

/* ---- failover ------------------------------------------------------------------ */

void sl__failover_start(const sl_client *c, sl__failover *f, int64_t wait_ms)
{
    f->start = sl__now_ms();
    /* A long poll's own deadline is the end of its wait: its caller (await,
     * the keeper, run's wait for the grant) asks again after it anyway. */
    int64_t budget = wait_ms <= 0                   ? SL__FAILOVER_MS
                     : wait_ms < SL__BACKOFF_MAX_MS ? SL__BACKOFF_MAX_MS
                                                    : wait_ms;
    f->deadline = f->start + budget;
    if (c->call_deadline > 0 && c->call_deadline < f->deadline)
        f->deadline = c->call_deadline;
    f->wait_end = wait_ms > 0 ? f->start + wait_ms : 0;
    f->backoff = SL__BACKOFF_MIN_MS;
    f->failed = 0;
    f->paused = 0;
}

int64_t sl__failover_wait_left(const sl__failover *f)
{
    if (!f->wait_end)
        return 0;
    int64_t left = f->wait_end - sl__now_ms();
    return left > 0 ? left : 0;
}

/* The answers of a cluster between leaders: another server, or the same
 * one a moment later, will answer. leader_unverified: the server asked
 * could not prove the leader it would relay to (a leader row that names
 * an impostor, a certificate being rotated): another server may. */
static bool between_leaders(const sl_client_error *err)
{
    static const char *const codes[] = {"no_leader", "leader_changed", "not_leader", "unavailable",
                                        "leader_unverified"};
    if (err->status == 502)
        return true;
    if (err->status != 503)
        return false;
    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (strcmp(err->code, codes[i]) == 0)
            return true;
    return false;
}

bool sl__failover_worth(const sl_client *c, int rc, const sl_client_error *err, bool resend)
{
    if (c->nservers < 2)
        return false;
    if (rc == SL_CLIENT_ECONNECT && c->unsent)
        return true; /* it never left: any request may go elsewhere */
    if (!resend)
        return false;
    if (rc == SL_CLIENT_ECONNECT || rc == SL_CLIENT_ETIMEOUT)
        return true;
    return rc == SL_CLIENT_EHTTP && err && between_leaders(err);
}

void sl__failover_move(sl_client *c)
{
    c->cur = (c->cur + 1) % c->nservers;
    c->server = c->servers[c->cur];
}

/* Sleeps ms, or less when the client is stopped meanwhile: the keeper's
 * stop wakes the multi handle, which this waits on. */
static bool pause_or_stop(sl_client *c, int64_t ms)
{
    int64_t end = sl__now_ms() + ms;
    for (;;) {
        if (c->stop && atomic_load(c->stop) != 0)
            return false;
        int64_t left = end - sl__now_ms();
        if (left <= 0)
            return true;
        if (!c->stop) {
            sl__sleep_ms(left);
            continue;
        }
        curl_multi_poll(c->multi, NULL, 0, (int)left, NULL);
    }
}

/* The pause before the next attempt. Through servers that refuse there is
 * none until the whole list has failed once since the last pause: a dead
 * server first in the list costs nothing. An answer (503) pauses at once,
 * for its Retry-After if it gave one. */
static int64_t next_pause(const sl_client *c, sl__failover *f, int rc)
{
    bool answered = rc == SL_CLIENT_EHTTP;
    if (!answered && f->failed - f->paused < c->nservers)
        return 0;
    f->paused = f->failed;
    int64_t pause = f->backoff;
    f->backoff = f->backoff * 2 > SL__BACKOFF_MAX_MS ? SL__BACKOFF_MAX_MS : f->backoff * 2;
    if (answered && c->retry_after_ms > pause)
        pause = c->retry_after_ms;
    return pause;
}

/* The last failure, said as what the whole list did. */
static void give_up(const sl_client *c, const sl__failover *f, int rc, sl_client_error *err)
{
    if (!err || (rc != SL_CLIENT_ECONNECT && rc != SL_CLIENT_ETIMEOUT))
        return; /* an answer: the server's own words say more */
    char last[sizeof(err->message)];
    snprintf(last, sizeof(last), "%s", err->message);
    /* The last failure's end is cut when the whole would not fit. */
    int room = (int)sizeof(err->message) - 120;
    snprintf(err->message, sizeof(err->message),
             "none of the %zu servers answered in %lld ms (%u attempts); the last: %.*s",
             c->nservers, (long long)(sl__now_ms() - f->start), f->failed, room, last);
}

bool sl__failover_next(sl_client *c, sl__failover *f, int *rc, sl_client_error *err)
{
    f->failed++;
    sl__failover_move(c);
    int64_t pause = next_pause(c, f, *rc);
    if (sl__now_ms() + pause >= f->deadline) {
        give_up(c, f, *rc, err);
        return false;
    }
    if (!pause_or_stop(c, pause)) {
        *rc = sl__err_set(err, SL__ESTOPPED, "stopped");
        return false;
    }
    return true;
}
