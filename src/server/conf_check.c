/* conf_check.c - the checks of a whole configuration, which sl_conf_check
 * and every load of the file (conf_file.c) apply: names, listen and store
 * forms, tokens and their credentials, semaphore rules, TLS and shared
 * mode; and the parsers of the words a configuration holds. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_int.h"
#include "duration.h"

int sl_log_level_parse(const char *s, sl_log_level *out)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    for (size_t i = 0; s && i < sizeof(names) / sizeof(names[0]); i++) {
        if (strcmp(s, names[i]) == 0) {
            *out = (sl_log_level)i;
            return 0;
        }
    }
    return -1;
}

/* ---- the checks (sl_conf_check, and the end of every load) ---------------- */

#define NAME_RULE                                                                                  \
    "1 to 253 characters of A-Z a-z 0-9 . _ - / : =, no leading or trailing '/', no '//', "        \
    "no '.' or '..' segment"

/* "HOST:PORT" with a port 1..65535; an IPv6 host in brackets. NULL when
 * fine, else what is wrong and how to mend it. */
static const char *listen_problem(const char *s)
{
    static const char *const usage =
        "is not HOST:PORT with a port from 1 to 65535; write it like 127.0.0.1:7700, "
        "0.0.0.0:7700 (every interface) or [::1]:7700";
    const char *port;
    if (s[0] == '[') {
        const char *end = strchr(s, ']');
        if (!end || end == s + 1 || end[1] != ':')
            return usage;
        bool colon = false;
        for (const char *p = s + 1; p < end; p++) {
            bool hex =
                (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F');
            if (!hex && *p != ':' && *p != '.')
                return usage;
            colon = colon || *p == ':';
        }
        if (!colon)
            return usage;
        port = end + 2;
    } else {
        const char *last = strrchr(s, ':');
        if (!last || last == s)
            return usage;
        for (const char *p = s; p < last; p++) {
            if (*p == ':')
                return "is not HOST:PORT; an IPv6 address goes in brackets, like [::1]:7700";
            bool ok = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
                      (*p >= 'A' && *p <= 'Z') || *p == '.' || *p == '-' || *p == '_';
            if (!ok)
                return usage;
        }
        port = last + 1;
    }
    unsigned v = 0;
    size_t n = 0;
    for (; port[n]; n++) {
        if (port[n] < '0' || port[n] > '9' || n >= 5)
            return usage;
        v = v * 10 + (unsigned)(port[n] - '0');
    }
    if (n == 0 || v == 0 || v > 65535)
        return usage;
    return NULL;
}

static const char *store_problem(const char *s)
{
    /* "postgres:" alone is followed by libpq's key=value form, never "//". */
    static const char *const prefixes[] = {"sqlite:", "postgres://", "postgresql://",
                                           "postgres:"};
    bool ok = false;
    for (size_t i = 0; !ok && i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        size_t n = strlen(prefixes[i]);
        ok = strncmp(s, prefixes[i], n) == 0 && s[n] != '\0' && (i < 3 || s[n] != '/');
    }
    if (!ok)
        return "is not a store URL; write sqlite:PATH, like sqlite:/var/lib/sluice/sluice.db, "
               "or postgres://USER@HOST/DB";
    return NULL;
}

/* Visible ASCII, and space too when `space`. */
static bool printable(const char *s, bool space)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch > 0x7e || ch < (space ? 0x20 : 0x21))
            return false;
    }
    return true;
}

/* A name of allowed_hosts: letters, digits, '.', '-', '_', or "*" alone;
 * no port, no scheme (the port does not matter against DNS rebinding). */
static bool host_name_valid(const char *h)
{
    if (!h || !*h || strlen(h) > 253)
        return false;
    if (strcmp(h, "*") == 0)
        return true;
    for (; *h; h++) {
        unsigned char ch = (unsigned char)*h;
        if (!isalnum(ch) && ch != '.' && ch != '-' && ch != '_')
            return false;
    }
    return true;
}

/* A prefix is good when the pattern made of it and a star is: "team-a/"
 * passes because the pattern "team-a/" + "*" does. */
static bool prefix_valid(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n >= SL_NAME_MAX)
        return false;
    char buf[SL_NAME_MAX + 1];
    memcpy(buf, p, n);
    buf[n] = '*';
    return sl_name_valid(buf, n + 1, true);
}

/* A key of a list entry and the entry's index, for finding duplicates. */
typedef struct keyed {
    const char *key;
    size_t idx;
} keyed;

static int cmp_keyed(const void *a, const void *b)
{
    const keyed *x = a, *y = b;
    int r = strcmp(x->key, y->key);
    return r ? r : (x->idx > y->idx) - (x->idx < y->idx);
}

/* The entry that repeats an earlier entry's key, the first such in file
 * order, and in *first the earliest entry with that key; -1 when the keys
 * all differ. Sorting, not comparing pairs: a file may list many. Sorts v. */
static long find_duplicate(keyed *v, size_t n, size_t *first)
{
    long dup = -1;
    if (n < 2)
        return -1;
    qsort(v, n, sizeof(*v), cmp_keyed);
    size_t group = 0; /* where the run of equal keys starts */
    for (size_t i = 1; i < n; i++) {
        if (strcmp(v[i - 1].key, v[i].key) != 0) {
            group = i;
            continue;
        }
        if (dup < 0 || v[i].idx < (size_t)dup) {
            dup = (long)v[i].idx;
            *first = v[group].idx;
        }
    }
    return dup;
}

/* Keys for find_duplicate: which = 0 semaphore names, 1 token secrets
 * (their hashes: a clear secret and its own hash are the same secret),
 * 2 token names, 3 token certificates. Entries without the key are left
 * out. The caller frees the array. */
static keyed *keys_of(const sl_conf *c, int which, size_t *n)
{
    size_t all = which == 0 ? c->nsemaphores : c->ntokens;
    keyed *v = sl__conf_xcalloc(all ? all : 1, sizeof(*v));
    *n = 0;
    for (size_t i = 0; i < all; i++) {
        const char *key = which == 0   ? c->semaphores[i].name
                          : which == 1 ? c->tokens[i].sha256
                          : which == 2 ? c->tokens[i].name
                                       : c->tokens[i].certificate;
        if (key)
            v[(*n)++] = (keyed){.key = key, .idx = i};
    }
    return v;
}

/* The first repeated key of a list: see keys_of. */
static long duplicate_in(const sl_conf *c, int which, size_t *first)
{
    size_t n;
    keyed *v = keys_of(c, which, &n);
    long dup = find_duplicate(v, n, first);
    free(v);
    return dup;
}

/* The messages of conf_int.h spell these out. */
_Static_assert(SL_WEIGHTS_MAX == 256 && SL_NAME_MAX == 253, "MSG_WEIGHT*_FMT say 256 and 253");

/* In the checks below: the first problem found, its path and message. */
#define PROBLEM(...)                                                                               \
    do {                                                                                           \
        snprintf(msg, MSG_CAP, __VA_ARGS__);                                                       \
        return -1;                                                                                 \
    } while (0)
#define AT(...) snprintf(path, PATH_CAP, __VA_ARGS__)

/* The permission lists of tokens[i] (F7): each entry a name prefix, or ""
 * for every name; none on an admin token, which may do everything. */
static int perms_problem(const sl_conf_token *t, size_t i, char *path, char *msg)
{
    for (int p = 0; p < SL_NPERMS; p++) {
        const sl_prefix_list *l = &t->perms[p];
        AT("tokens[%zu].%s", i, sl_perm_name((sl_perm)p));
        if (t->admin && l->n > 0)
            PROBLEM("token \"%.100s\" is admin and has %s prefixes; an admin token may do "
                    "everything, so remove them or set admin: false",
                    t->name, sl_perm_name((sl_perm)p));
        for (size_t j = 0; j < l->n; j++) {
            AT("tokens[%zu].%s[%zu]", i, sl_perm_name((sl_perm)p), j);
            if (*l->v[j] && !prefix_valid(l->v[j]))
                PROBLEM("\"%.100s\" is not a name prefix; use " NAME_RULE
                        " (a trailing '/' is fine), like \"team-a/\", or \"\" for every name",
                        l->v[j]);
        }
    }
    AT("tokens[%zu].max_priority", i);
    if (t->admin && t->priority_capped)
        PROBLEM("token \"%.100s\" is admin; an admin token's claims may ask any priority, so "
                "remove max_priority or set admin: false",
                t->name);
    return 0;
}

static bool token_may_do_something(const sl_conf_token *t)
{
    bool any = t->admin || t->nprefixes > 0;
    for (int p = 0; p < SL_NPERMS; p++)
        any = any || t->perms[p].n > 0;
    return any;
}

/* What a token is known by: its secret in clear (at least SL_TOKEN_MIN
 * characters: F15, a short one can be guessed), the secret's SHA-256, or
 * a client certificate's name. Never the secret itself in a message: they
 * end up in logs. */
static int credential_problem(const sl_conf_token *t, size_t i, char *path, char *msg)
{
    if (t->certificate) {
        AT("tokens[%zu].certificate", i);
        const char *v = strchr(t->certificate, ':') + 1;
        if (!*v || !printable(v, true) || strlen(v) > SL_TOKEN_MAX)
            PROBLEM("the certificate name of token \"%.100s\" must be 1 to %d visible ASCII "
                    "characters, as the certificate carries it, like {cn: ci-runner}",
                    t->name, SL_TOKEN_MAX);
        return 0;
    }
    if (!t->token) {
        AT("tokens[%zu].token_sha256", i);
        if (!sl_secret_sha256_valid(t->sha256))
            PROBLEM("the hash of token \"%.100s\" must be a SHA-256 in hex (64 digits), like "
                    "the line `sluice token new %.100s` prints",
                    t->name, t->name);
        return 0;
    }
    AT("tokens[%zu].token", i);
    if (!*t->token)
        PROBLEM("is empty; give the token \"%.100s\" a secret: `sluice token new %.100s` "
                "makes one",
                t->name, t->name);
    if (!printable(t->token, false) || strlen(t->token) > SL_TOKEN_MAX)
        PROBLEM("the secret of token \"%.100s\" must be %d to %d visible ASCII characters "
                "without spaces; `sluice token new %.100s` makes one",
                t->name, SL_TOKEN_MIN, SL_TOKEN_MAX, t->name);
    if (strlen(t->token) < SL_TOKEN_MIN)
        PROBLEM("the secret of token \"%.100s\" has %zu characters, fewer than %d: a short "
                "secret can be guessed. `sluice token new %.100s` makes a random one and "
                "prints the entry with only its hash (token_sha256)",
                t->name, strlen(t->token), SL_TOKEN_MIN, t->name);
    return 0;
}

/* The weights of semaphores[i] (rebalanced only, which the caller checked). */
static int weights_problem(const sl_sem_rules *r, size_t i, char *path, char *msg)
{
    AT("semaphores[%zu].default_weight", i);
    if (r->default_weight > SL_WEIGHT_MAX)
        PROBLEM("%lu is not a weight; write a whole number from 1 to %u, like 1",
                (unsigned long)r->default_weight, SL_WEIGHT_MAX);
    AT("semaphores[%zu].weights", i);
    if (r->nweights > SL_WEIGHTS_MAX)
        PROBLEM(MSG_WEIGHTS_MAX_FMT, r->nweights);
    for (size_t j = 0; j < r->nweights; j++) {
        const sl_weight *w = &r->weights[j];
        AT("semaphores[%zu].weights", i);
        if (!w->key || !*w->key || strlen(w->key) > SL_NAME_MAX)
            PROBLEM(MSG_WEIGHT_KEY_FMT, w->key ? w->key : "");
        AT("semaphores[%zu].weights.%.*s", i, KEY_IN_PATH, w->key);
        if (w->weight < 1 || w->weight > SL_WEIGHT_MAX)
            PROBLEM("%lu is not a weight; write a whole number from 1 to %u, like 3",
                    (unsigned long)w->weight, SL_WEIGHT_MAX);
        for (size_t k = 0; k < j; k++)
            if (strcmp(r->weights[k].key, w->key) == 0)
                PROBLEM("is given twice; keep one");
    }
    return 0;
}

/* The scheduling rules of semaphores[i]: each in range, and each where it
 * applies (the API's rules: sem_rules.c, and the engine's). */
static int rules_problem(const sl_conf_sem *s, size_t i, char *path, char *msg)
{
    const sl_sem_rules *r = &s->rules;
    AT("semaphores[%zu].preempt", i);
    if (r->preempt && s->strategy == SL_REBALANCED)
        PROBLEM(MSG_PREEMPT_NOT_REBALANCED);
    AT("semaphores[%zu].preempt_grace", i);
    if (r->preempt_grace_ms < 0 || r->preempt_grace_ms > SL_DURATION_MAX_MS)
        PROBLEM("must be 0 (at once) or a duration of at most 100 years, like 30s");
    if (!r->preempt && r->preempt_grace_ms != 0)
        PROBLEM(MSG_GRACE_NEEDS_PREEMPT);
    AT("semaphores[%zu].max_pending", i);
    if (r->max_pending > SL_LIMIT_MAX)
        PROBLEM("%lu is more than the largest allowed, %u", (unsigned long)r->max_pending,
                SL_LIMIT_MAX);
    AT("semaphores[%zu].on_full", i);
    if ((unsigned)r->on_full > SL_ON_FULL_DROP_OLDEST)
        PROBLEM("is not a way to meet a full queue; use reject or drop_oldest");
    if (r->on_full != SL_ON_FULL_REJECT && r->max_pending == 0)
        PROBLEM(MSG_ON_FULL_NEEDS_MAX_PENDING);
    if (s->strategy != SL_REBALANCED && (r->nweights > 0 || r->default_weight > 0)) {
        AT("semaphores[%zu].%s", i, r->nweights > 0 ? "weights" : "default_weight");
        PROBLEM(MSG_REBALANCED_ONLY);
    }
    if (weights_problem(r, i, path, msg) != 0)
        return -1;
    AT("semaphores[%zu].rate", i);
    if (r->rate_count > SL_LIMIT_MAX ||
        (r->rate_count > 0 && (r->rate_period_ms <= 0 || r->rate_period_ms > SL_DURATION_MAX_MS)))
        PROBLEM("must be N/PERIOD, 1 to %u grants per a duration longer than 0, like 100/1m",
                SL_LIMIT_MAX);
    AT("semaphores[%zu].burst", i);
    if (r->rate_burst > SL_LIMIT_MAX)
        PROBLEM("%lu is more than the largest allowed, %u", (unsigned long)r->rate_burst,
                SL_LIMIT_MAX);
    if (r->rate_burst > 0 && r->rate_count == 0)
        PROBLEM(MSG_BURST_NEEDS_RATE);
    AT("semaphores[%zu].backdate", i);
    if (r->backdate_ms < 0 || r->backdate_ms > SL_DURATION_MAX_MS)
        PROBLEM("must be 0 (none) or a duration of at most 100 years, like 1h");
    return 0;
}

/* cluster.*: files in pairs, and TLS on for a CA that proves leaders. */
static const char *cluster_tls_problem(const sl_conf *c, char *path)
{
    snprintf(path, PATH_CAP, "cluster.key");
    if (c->cluster_cert && !c->cluster_key)
        return "is missing: cluster.cert needs its private key (cluster.key, --cluster-key)";
    snprintf(path, PATH_CAP, "cluster.cert");
    if (c->cluster_key && !c->cluster_cert)
        return "is missing: cluster.key needs its certificate (cluster.cert, --cluster-cert)";
    snprintf(path, PATH_CAP, "cluster.ca");
    if (c->cluster_ca && !c->tls_cert)
        return "needs TLS on (tls.cert and tls.key): the other servers prove this one against "
               "cluster.ca when it leads, over HTTPS";
    return NULL;
}

/* Finds the first thing wrong with a configuration: *path (like
 * "semaphores[2].limit") and *msg (what is wrong and how to mend it).
 * Returns 0 when all is well. */
int sl__conf_problem(const sl_conf *c, char *path, char *msg)
{
    const char *p;

    AT("listen");
    if (!c->listen || !*c->listen)
        PROBLEM("is empty; write HOST:PORT, like 127.0.0.1:7700");
    if ((p = listen_problem(c->listen)))
        PROBLEM("\"%.100s\" %s", c->listen, p);
    AT("plain_listen");
    if (c->plain_listen && (p = listen_problem(c->plain_listen)))
        PROBLEM("\"%.100s\" %s", c->plain_listen, p);
    if (c->plain_listen && !sl_conf_listen_loopback(c->plain_listen))
        PROBLEM("\"%.100s\" is not a loopback address: this listener serves without TLS, so it "
                "may listen on loopback only; write 127.0.0.1:PORT or [::1]:PORT",
                c->plain_listen);
    AT("store");
    if (!c->store || !*c->store)
        PROBLEM("is empty; write sqlite:PATH, like sqlite:/var/lib/sluice/sluice.db");
    if ((p = store_problem(c->store)))
        PROBLEM("\"%.100s\" %s", c->store, p);
    AT("advertise");
    if (c->advertise && strncmp(c->advertise, "http://", 7) != 0 &&
        strncmp(c->advertise, "https://", 8) != 0)
        PROBLEM("\"%.100s\" is not an http:// or https:// URL; write the URL the other servers "
                "reach this one at, like https://10.0.0.5:7700",
                c->advertise);
    if (c->advertise && (strncmp(c->advertise, "https://", 8) == 0) != (c->tls_cert != NULL))
        PROBLEM("\"%.100s\" says %s, but this server %s; write %s", c->advertise,
                c->tls_cert ? "http://" : "https://",
                c->tls_cert ? "serves TLS (tls.cert)" : "serves plain HTTP (no tls.cert)",
                c->tls_cert ? "https://" : "http:// (or set tls.cert and tls.key)");
    if (c->advertise && strlen(c->advertise) > 200)
        PROBLEM("is longer than 200 bytes");
    if ((p = cluster_tls_problem(c, path)))
        PROBLEM("%s", p);
    AT("tls.key");
    if (c->tls_cert && !c->tls_key)
        PROBLEM("is missing: tls.cert needs its private key (tls.key, --tls-key)");
    AT("tls.cert");
    if (c->tls_key && !c->tls_cert)
        PROBLEM("is missing: tls.key needs its certificate (tls.cert, --tls-cert)");
    if (c->tls_client_ca && !c->tls_cert)
        PROBLEM("is missing: client certificates (tls.client_ca) need TLS on; set tls.cert "
                "and tls.key");
    AT("audit.path");
    if (c->audit_path && !*c->audit_path)
        PROBLEM("is empty; give the file to append the audit log to, like "
                "/var/log/sluice/audit.log");
    AT("tls.min_version");
    if (c->tls_min_version != 12 && c->tls_min_version != 13)
        PROBLEM("must be 1.2 or 1.3 (TLS 1.0 and 1.1 are not served)");
    AT("leader_timeout");
    if (c->leader_timeout_ms < 1000 || c->leader_timeout_ms > 600000)
        PROBLEM("must be a duration from 1s to 10m, like 5s");
    AT("durability");
    if ((unsigned)c->durability > SL_DURABILITY_FULL)
        PROBLEM("is not a durability; use normal or full");
    AT("log_level");
    if ((unsigned)c->log_level > SL_LOG_DEBUG)
        PROBLEM("is not a log level; use error, warn, info or debug");
    AT("default_lease");
    if (c->default_lease_ms < 0 || c->default_lease_ms > SL_DURATION_MAX_MS ||
        (c->default_lease_ms > 0 && c->default_lease_ms < SL_LEASE_MIN_MS))
        PROBLEM("must be 0 (none) or a duration from 100ms to 100 years, like 30s");
    AT("default_timeout");
    if (c->default_timeout_ms < 0 || c->default_timeout_ms > SL_DURATION_MAX_MS)
        PROBLEM("must be 0 (none) or a duration of at most 100 years, like 10m");
    AT("backdate_skew");
    if (c->backdate_skew_ms < 0 || c->backdate_skew_ms > SL_DURATION_MAX_MS)
        PROBLEM("must be 0 (none) or a duration of at most 100 years, like 5s");

    const struct {
        const char *key;
        int64_t v;
    } durations[] = {
        {"max_wait", c->max_wait_ms},
        {"idle_timeout", c->idle_timeout_ms},
        {"header_timeout", c->header_timeout_ms},
        {"event_retention", c->event_retention_ms},
        {"claim_retention", c->claim_retention_ms},
    };
    for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++) {
        AT("limits.%s", durations[i].key);
        if (durations[i].v <= 0 || durations[i].v > SL_DURATION_MAX_MS)
            PROBLEM("must be longer than 0 (and at most 100 years); write a duration like 30s");
    }
    const struct {
        const char *key;
        size_t v;
    } sizes[] = {
        {"max_body", c->max_body},
        {"max_headers", c->max_headers},
        {"max_connections", c->max_connections},
        {"max_claims", c->max_claims},
        {"max_streams", c->max_streams},
        {"max_event_scan", c->max_event_scan},
        {"max_semaphores", c->max_semaphores},
    };
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        AT("limits.%s", sizes[i].key);
        if (sizes[i].v == 0)
            PROBLEM("must be at least 1");
    }

    for (size_t i = 0; i < c->nsemaphores; i++) {
        const sl_conf_sem *s = &c->semaphores[i];
        AT("semaphores[%zu].name", i);
        if (!s->name || !sl_name_valid(s->name, strlen(s->name), true))
            PROBLEM("\"%.100s\" is not a semaphore name; use " NAME_RULE
                    ", and end it in '*' for a pattern (like \"tenant/*\")",
                    s->name ? s->name : "");
        AT("semaphores[%zu].limit", i);
        if (s->limit > SL_LIMIT_MAX)
            PROBLEM("%lu is more than the largest limit, %u", (unsigned long)s->limit,
                    SL_LIMIT_MAX);
        AT("semaphores[%zu].strategy", i);
        if ((unsigned)s->strategy > SL_REBALANCED)
            PROBLEM("is not a strategy; use strict, skip or rebalanced");
        AT("semaphores[%zu].lease", i);
        if (s->lease_ms < 0 || s->lease_ms > SL_DURATION_MAX_MS ||
            (s->lease_ms > 0 && s->lease_ms < SL_LEASE_MIN_MS))
            PROBLEM("must be 0 (none) or a duration from 100ms to 100 years, like 30s");
        AT("semaphores[%zu].overtake_limit", i);
        if (s->overtake_ms < 0 || s->overtake_ms > SL_DURATION_MAX_MS)
            PROBLEM("must be 0 (none) or a duration of at most 100 years, like 1m");
        if (rules_problem(s, i, path, msg) != 0)
            return -1;
    }

    for (size_t i = 0; i < c->ntokens; i++) {
        const sl_conf_token *t = &c->tokens[i];
        AT("tokens[%zu].name", i);
        if (!t->name || !*t->name)
            PROBLEM("is empty; give every token a name for the logs, like ci");
        if (!printable(t->name, true) || strlen(t->name) > SL_NAME_MAX)
            PROBLEM("\"%.100s\" is not a token name; use up to 253 visible ASCII characters",
                    t->name);
        /* Events name their actor (docs/api.md): these two must not be a token's. */
        if (strcmp(t->name, "sluice") == 0 || strcmp(t->name, "anonymous") == 0)
            PROBLEM("\"%s\" is the actor events name for the server itself and for requests "
                    "on a server without tokens; give the token another name, like ci",
                    t->name);
        if (credential_problem(t, i, path, msg) != 0)
            return -1;
        AT("tokens[%zu]", i);
        if (!token_may_do_something(t))
            PROBLEM("token \"%.100s\" may do nothing; set admin: true, or list the name "
                    "prefixes it may use, like prefixes: [\"team-a/\"] (every permission) or "
                    "read: [\"team-a/\"] (read, claim, operate, configure: each on its own)",
                    t->name);
        if (t->admin && t->nprefixes > 0)
            PROBLEM("token \"%.100s\" is admin and has prefixes; an admin token may use every "
                    "name, so remove prefixes or set admin: false",
                    t->name);
        for (size_t q = 0; t->admin && q < SL_QUOTA_COUNT; q++) {
            AT("tokens[%zu].quotas.%s", i, sl_quota_names[q]);
            if (t->quotas[q] != 0)
                PROBLEM("token \"%.100s\" is admin, and admin tokens have no quotas (they keep "
                        "the headroom of the global limits); remove quotas or set admin: false",
                        t->name);
        }
        for (size_t j = 0; j < t->nprefixes; j++) {
            AT("tokens[%zu].prefixes[%zu]", i, j);
            if (*t->prefixes[j] && !prefix_valid(t->prefixes[j]))
                PROBLEM("\"%.100s\" is not a name prefix; use " NAME_RULE
                        " (a trailing '/' is fine), like \"team-a/\", or \"\" for every name",
                        t->prefixes[j]);
        }
        if (perms_problem(t, i, path, msg) != 0)
            return -1;
    }

    for (size_t i = 0; i < c->nallowed_hosts; i++) {
        AT("allowed_hosts[%zu]", i);
        if (!host_name_valid(c->allowed_hosts[i]))
            PROBLEM("\"%.100s\" is not a host name; write the name clients put in the URL, "
                    "without scheme or port, like sluice.example.com (or \"*\" for any)",
                    c->allowed_hosts[i] ? c->allowed_hosts[i] : "");
    }

    size_t first = 0;
    long dup;
    dup = duplicate_in(c, 0, &first);
    if (dup >= 0) {
        AT("semaphores[%ld].name", dup);
        PROBLEM("\"%.100s\" is configured twice (also semaphores[%zu]); keep one entry per name",
                c->semaphores[dup].name, first);
    }
    dup = duplicate_in(c, 1, &first);
    if (dup >= 0) {
        AT("tokens[%ld].%s", dup, c->tokens[dup].token ? "token" : "token_sha256");
        PROBLEM("token \"%.100s\" has the same secret as tokens[%zu] (\"%.100s\"); give every "
                "token its own secret",
                c->tokens[dup].name, first, c->tokens[first].name);
    }
    dup = duplicate_in(c, 3, &first);
    if (dup >= 0) {
        AT("tokens[%ld].certificate", dup);
        PROBLEM("token \"%.100s\" names the same certificate as tokens[%zu] (\"%.100s\"); "
                "give every certificate one entry",
                c->tokens[dup].name, first, c->tokens[first].name);
    }
    dup = duplicate_in(c, 2, &first);
    if (dup >= 0) {
        AT("tokens[%ld].name", dup);
        PROBLEM("\"%.100s\" is the name of tokens[%zu] too; give every token its own name, so "
                "that the logs tell them apart",
                c->tokens[dup].name, first);
    }
    return 0;
}
#undef AT
#undef PROBLEM

bool sl_conf_listen_loopback(const char *listen)
{
    if (!listen)
        return false;
    if (strncmp(listen, "[::1]:", 6) == 0 || strncmp(listen, "localhost:", 10) == 0)
        return true;
    /* 127.0.0.0/8: "127." and digits and dots up to the port. */
    if (strncmp(listen, "127.", 4) != 0)
        return false;
    const char *p = listen + 4;
    while (isdigit((unsigned char)*p) || *p == '.')
        p++;
    return *p == ':';
}

const char *sl_conf_open_problem(const sl_conf *c)
{
    if (c->ntokens > 0 || c->tls_client_ca || c->insecure_open ||
        sl_conf_listen_loopback(c->listen))
        return NULL;
    return "listens off loopback without tokens: anyone who reaches the port could take, cancel "
           "and configure every lock. Secure it with tokens and TLS (docs/security.md), or listen "
           "on 127.0.0.1; to run it open anyway, say so with insecure_open: true in the "
           "configuration file or --allow-open";
}

bool sl_conf_store_shared(const char *store)
{
    return store && strncmp(store, "postgres", 8) == 0;
}

const char *sl_conf_cluster_problem(const sl_conf *c)
{
    if (!sl_conf_store_shared(c->store) || c->cluster_ca || c->cluster_insecure ||
        (c->ntokens == 0 && !c->tls_cert))
        return NULL;
    if (c->tls_cert)
        return "serves TLS in shared mode (a PostgreSQL store) without cluster.ca: a follower "
               "could not prove the leader it relays clients' tokens to. Set cluster.ca (or "
               "--cluster-ca) to the CA that signed the servers' certificates "
               "(docs/shared-mode.md, \"Servers over TLS\"); on a network and database you "
               "trust, say so with cluster.insecure: true or --cluster-insecure";
    return "has tokens in shared mode (a PostgreSQL store) with plain HTTP between the servers: "
           "a follower relays every client's token to whatever address the database names as "
           "the leader. Serve TLS (tls.cert, tls.key) and set cluster.ca (or --cluster-ca) to "
           "the CA that signed the servers' certificates (docs/shared-mode.md, \"Servers over "
           "TLS\"); on a network and database you trust, say so with cluster.insecure: true or "
           "--cluster-insecure";
}

/* A token that names a client certificate needs a server that asks for
 * them. Checked with the flags applied (--tls-client-ca may give the CA),
 * so not in the file's own checks. */
static int certificates_problem(const sl_conf *c, char *path, char *msg)
{
    for (size_t i = 0; i < c->ntokens && !c->tls_client_ca; i++) {
        if (!c->tokens[i].certificate)
            continue;
        snprintf(path, PATH_CAP, "tokens[%zu].certificate", i);
        snprintf(msg, MSG_CAP,
                 "token \"%.100s\" names a client certificate, but the server asks for none: "
                 "set tls.client_ca or --tls-client-ca (the CA that signs them), or give the "
                 "token a secret",
                 c->tokens[i].name);
        return -1;
    }
    return 0;
}

int sl_conf_check(const sl_conf *c, char *err, size_t errlen)
{
    char path[PATH_CAP], msg[MSG_CAP];
    if (sl__conf_problem(c, path, msg) == 0 && certificates_problem(c, path, msg) == 0)
        return 0;
    if (errlen)
        snprintf(err, errlen, "%s: %s", path, msg);
    return -1;
}

int sl_tls_version_parse(const char *s, int *out)
{
    if (strncmp(s, "TLSv", 4) == 0)
        s += 4;
    if (strcmp(s, "1.2") == 0)
        *out = 12;
    else if (strcmp(s, "1.3") == 0)
        *out = 13;
    else
        return -1;
    return 0;
}
