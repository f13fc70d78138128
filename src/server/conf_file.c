/* conf_file.c - sluiced's configuration file, read by schema.
 *
 * The file is loaded in three steps:
 *   1. libcyaml reads it by schema into a raw struct of strings (every
 *      scalar a string, so that this file, not libcyaml, says what is wrong
 *      with a value and how to mend it). Unknown, repeated and missing keys
 *      and values of the wrong shape are refused there.
 *   2. The strings are converted into a scratch copy of the configuration
 *      (durations, numbers, strategies, ...).
 *   3. The scratch copy is checked as a whole (conf_problem, the same
 *      checks as sl_conf_check) and only then replaces the caller's.
 * So a failed load leaves the caller's configuration as it was.
 *
 * Where: libcyaml's own messages carry line and column, but of the event it
 * read last, which for an unknown key is the value before it. So on any
 * error the file is walked once more with libyaml alongside the same schema
 * (conf_walk.c): that walk names the exact line and column of the offending key
 * or value, and for libcyaml's errors it also finds what is wrong (unknown,
 * repeated or missing key, wrong shape), worded with the keys allowed there.
 * libcyaml's first message is kept in the error, after ours; if the walk
 * finds nothing, libcyaml's whole log (with its line and column) is the
 * error. libcyaml never prints: its log goes into a buffer (log_capture).
 *
 * Messages read "FILE:LINE:COLUMN: PATH: what is wrong; how to mend", PATH
 * like semaphores[1].strategy (entries count from 0).
 *
 * This file holds the schema, the scalar conversions and the load; a
 * semaphore's rules are converted in conf_sems.c, the tokens in
 * conf_tokens.c; conf_load.h is what they share. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_load.h"
#include "duration.h"

/* ---- the schema -------------------------------------------------------------- */

/* Every scalar is read as a string; the conversions below judge it. */
#define STR(key, flags, type, member)                                                              \
    CYAML_FIELD_STRING_PTR(key, flags, type, member, 0, CYAML_UNLIMITED)
#define OPT CYAML_FLAG_OPTIONAL
/* A list or a section may be left empty ("semaphores:" and nothing). */
#define OPT_NULL (CYAML_FLAG_OPTIONAL | CYAML_FLAG_POINTER_NULL)

/* In sl_quota's order (sl_quota_names). */
const cyaml_schema_field_t sl__conf_quota_fields[] = {
    STR("claims", OPT, raw_quotas, v[SL_QUOTA_CLAIMS]),
    STR("waiting", OPT, raw_quotas, v[SL_QUOTA_WAITING]),
    STR("semaphores", OPT, raw_quotas, v[SL_QUOTA_SEMAPHORES]),
    STR("streams", OPT, raw_quotas, v[SL_QUOTA_STREAMS]),
    STR("long_polls", OPT, raw_quotas, v[SL_QUOTA_LONG_POLLS]),
    STR("requests_per_second", OPT, raw_quotas, v[SL_QUOTA_RATE]),
    STR("burst", OPT, raw_quotas, v[SL_QUOTA_BURST]),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t limits_fields[] = {
    STR("max_body", OPT, raw_limits, max_body),
    STR("max_headers", OPT, raw_limits, max_headers),
    STR("max_connections", OPT, raw_limits, max_connections),
    STR("max_connections_per_client", OPT, raw_limits, max_connections_per_client),
    STR("max_claims", OPT, raw_limits, max_claims),
    STR("max_streams", OPT, raw_limits, max_streams),
    STR("max_event_scan", OPT, raw_limits, max_event_scan),
    STR("max_semaphores", OPT, raw_limits, max_semaphores),
    CYAML_FIELD_MAPPING_PTR("token_quotas", OPT_NULL, raw_limits, token_quotas,
                            sl__conf_quota_fields),
    STR("max_wait", OPT, raw_limits, max_wait),
    STR("idle_timeout", OPT, raw_limits, idle_timeout),
    STR("header_timeout", OPT, raw_limits, header_timeout),
    STR("event_retention", OPT, raw_limits, event_retention),
    STR("claim_retention", OPT, raw_limits, claim_retention),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t tls_fields[] = {
    STR("cert", OPT, raw_tls, cert),
    STR("key", OPT, raw_tls, key),
    STR("client_ca", OPT, raw_tls, client_ca),
    STR("min_version", OPT, raw_tls, min_version),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t cluster_fields[] = {
    STR("ca", OPT, raw_cluster, ca),
    STR("cert", OPT, raw_cluster, cert),
    STR("key", OPT, raw_cluster, key),
    STR("insecure", OPT, raw_cluster, insecure),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t audit_fields[] = {
    STR("path", OPT, raw_audit, path),
    STR("on_failure", OPT, raw_audit, on_failure),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t sem_fields[] = {
    STR("name", CYAML_FLAG_DEFAULT, raw_sem, name),
    STR("limit", CYAML_FLAG_DEFAULT, raw_sem, limit),
    STR("strategy", OPT, raw_sem, strategy),
    STR("lease", OPT, raw_sem, lease),
    STR("overtake_limit", OPT, raw_sem, overtake_limit),
    STR("preempt", OPT, raw_sem, preempt),
    STR("preempt_grace", OPT, raw_sem, preempt_grace),
    STR("max_pending", OPT, raw_sem, max_pending),
    STR("on_full", OPT, raw_sem, on_full),
    CYAML_FIELD_IGNORE("weights", OPT),
    STR("default_weight", OPT, raw_sem, default_weight),
    STR("rate", OPT, raw_sem, rate),
    STR("burst", OPT, raw_sem, burst),
    STR("backdate", OPT, raw_sem, backdate),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t sem_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_sem, sem_fields),
};

static const cyaml_schema_value_t prefix_schema = {
    CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

static const cyaml_schema_field_t cert_fields[] = {
    STR("cn", OPT, raw_cert, cn),
    STR("dns", OPT, raw_cert, dns),
    STR("uri", OPT, raw_cert, uri),
    STR("email", OPT, raw_cert, email),
    CYAML_FIELD_END,
};

/* One of token, token_sha256 and certificate: conf_tokens.c says so when
 * none or two are given. */
static const cyaml_schema_field_t token_fields[] = {
    STR("name", CYAML_FLAG_DEFAULT, raw_token, name),
    STR("token", OPT, raw_token, token),
    STR("token_sha256", OPT, raw_token, token_sha256),
    CYAML_FIELD_MAPPING_PTR("certificate", OPT_NULL, raw_token, certificate, cert_fields),
    STR("admin", OPT, raw_token, admin),
    CYAML_FIELD_SEQUENCE("prefixes", OPT_NULL, raw_token, prefixes, &prefix_schema, 0,
                         CYAML_UNLIMITED),
    CYAML_FIELD_SEQUENCE("read", OPT_NULL, raw_token, read, &prefix_schema, 0, CYAML_UNLIMITED),
    CYAML_FIELD_SEQUENCE("claim", OPT_NULL, raw_token, claim, &prefix_schema, 0, CYAML_UNLIMITED),
    CYAML_FIELD_SEQUENCE("operate", OPT_NULL, raw_token, operate, &prefix_schema, 0,
                         CYAML_UNLIMITED),
    CYAML_FIELD_SEQUENCE("configure", OPT_NULL, raw_token, configure, &prefix_schema, 0,
                         CYAML_UNLIMITED),
    STR("max_priority", OPT, raw_token, max_priority),
    CYAML_FIELD_MAPPING_PTR("quotas", OPT_NULL, raw_token, quotas, sl__conf_quota_fields),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t token_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_token, token_fields),
};

static const cyaml_schema_field_t top_fields[] = {
    STR("listen", OPT, raw_conf, listen),
    STR("plain_listen", OPT, raw_conf, plain_listen),
    STR("store", OPT, raw_conf, store),
    STR("advertise", OPT, raw_conf, advertise),
    STR("leader_timeout", OPT, raw_conf, leader_timeout),
    STR("durability", OPT, raw_conf, durability),
    STR("log_level", OPT, raw_conf, log_level),
    STR("default_lease", OPT, raw_conf, default_lease),
    STR("default_timeout", OPT, raw_conf, default_timeout),
    STR("backdate_skew", OPT, raw_conf, backdate_skew),
    CYAML_FIELD_MAPPING_PTR("limits", OPT_NULL, raw_conf, limits, limits_fields),
    CYAML_FIELD_MAPPING_PTR("tls", OPT_NULL, raw_conf, tls, tls_fields),
    CYAML_FIELD_MAPPING_PTR("cluster", OPT_NULL, raw_conf, cluster, cluster_fields),
    CYAML_FIELD_MAPPING_PTR("audit", OPT_NULL, raw_conf, audit, audit_fields),
    CYAML_FIELD_SEQUENCE("semaphores", OPT_NULL, raw_conf, semaphores, &sem_schema, 0,
                         CYAML_UNLIMITED),
    CYAML_FIELD_SEQUENCE("tokens", OPT_NULL, raw_conf, tokens, &token_schema, 0, CYAML_UNLIMITED),
    CYAML_FIELD_SEQUENCE("allowed_hosts", OPT_NULL, raw_conf, allowed_hosts, &prefix_schema, 0,
                         CYAML_UNLIMITED),
    STR("insecure_open", OPT, raw_conf, insecure_open),
    CYAML_FIELD_END,
};

/* Nullable: a file of only "---" (an empty document) sets nothing, like an
 * empty file. */
const cyaml_schema_value_t sl__conf_top_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER_NULL, raw_conf, top_fields),
};

#undef STR
#undef OPT
#undef OPT_NULL

/* libcyaml's log function: keeps its messages for the error instead of
 * printing them (its default, cyaml_log, writes to stderr). */
__attribute__((format(printf, 3, 0))) static void log_capture(cyaml_log_t level, void *ctx,
                                                              const char *fmt, va_list args)
{
    loader *ld = ctx;
    (void)level;
    if (ld->loglen + 1 >= LOG_CAP)
        return;
    int n = vsnprintf(ld->log + ld->loglen, LOG_CAP - ld->loglen, fmt, args);
    if (n > 0)
        ld->loglen = ld->loglen + (size_t)n < LOG_CAP ? ld->loglen + (size_t)n : LOG_CAP - 1;
}

/* ---- the conversions ----------------------------------------------------------- */

int sl__conf_duration(loader *ld, const char *path, const char *s, int64_t *out)
{
    if (sl_duration_parse(s, out) == 0)
        return 0;
    return sl__conf_fail(
        ld, path,
        "\"%.100s\" is not a duration; write a number and units h, m, s or ms, largest "
        "first, like 250ms, 30s, 5m or 1h30m (a bare number is seconds; at most 100 "
        "years)",
        s);
}

/* A whole number of digits only, at most max; `like` is an example. */
int sl__conf_count(loader *ld, const char *path, const char *s, uint64_t max, const char *like,
                   uint64_t *out)
{
    uint64_t v = 0;
    bool over = false;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            over = true;
        else
            v = v * 10 + d;
    }
    if (i == 0 || s[i] != '\0')
        return sl__conf_fail(
            ld, path, "\"%.100s\" is not a whole number; write digits only, like %s", s, like);
    if (over || v > max)
        return sl__conf_fail(ld, path, "%.100s is more than the largest allowed, %llu", s,
                             (unsigned long long)max);
    *out = v;
    return 0;
}

/* YAML 1.2's booleans. */
int sl__conf_bool(loader *ld, const char *path, const char *s, bool *out)
{
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
        *out = true;
        return 0;
    }
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
        *out = false;
        return 0;
    }
    return sl__conf_fail(ld, path, "\"%.100s\" is not true or false; write true or false", s);
}

/* A whole number from lo to max, like conv_count. */
int sl__conf_range(loader *ld, const char *path, const char *s, uint64_t lo, uint64_t max,
                   const char *like, uint64_t *out)
{
    if (sl__conf_count(ld, path, s, max, like, out) != 0)
        return -1;
    if (*out < lo)
        return sl__conf_fail(ld, path, "%.100s is less than the smallest allowed, %llu", s,
                             (unsigned long long)lo);
    return 0;
}

static int conv_tls(loader *ld, const raw_tls *t, sl_conf *n)
{
    if (t->cert)
        sl__conf_replace_str(&n->tls_cert, t->cert);
    if (t->key)
        sl__conf_replace_str(&n->tls_key, t->key);
    if (t->client_ca)
        sl__conf_replace_str(&n->tls_client_ca, t->client_ca);
    if (t->min_version && sl_tls_version_parse(t->min_version, &n->tls_min_version) != 0)
        return sl__conf_fail(ld, "tls.min_version",
                             "\"%.100s\" is not a TLS version this server serves; use 1.2 or 1.3",
                             t->min_version);
    return 0;
}

static int conv_cluster(loader *ld, const raw_cluster *c, sl_conf *n)
{
    if (c->ca)
        sl__conf_replace_str(&n->cluster_ca, c->ca);
    if (c->cert)
        sl__conf_replace_str(&n->cluster_cert, c->cert);
    if (c->key)
        sl__conf_replace_str(&n->cluster_key, c->key);
    if (c->insecure && sl__conf_bool(ld, "cluster.insecure", c->insecure, &n->cluster_insecure) != 0)
        return -1;
    return 0;
}

/* F11's audit log (audit.c). */
static int conv_audit(loader *ld, const raw_audit *a, sl_conf *n)
{
    if (a->path)
        sl__conf_replace_str(&n->audit_path, a->path);
    if (!a->on_failure)
        return 0;
    if (strcmp(a->on_failure, "continue") == 0 || strcmp(a->on_failure, "refuse") == 0) {
        n->audit_refuse = a->on_failure[0] == 'r';
        return 0;
    }
    return sl__conf_fail(ld, "audit.on_failure",
                         "\"%.100s\" is not a failure mode; use continue (requests go on while "
                         "the audit log cannot be written) or refuse (changes are refused then)",
                         a->on_failure);
}

static int conv_all(loader *ld, const raw_conf *r, sl_conf *n)
{
    if (r->listen)
        sl__conf_replace_str(&n->listen, r->listen);
    if (r->store)
        sl__conf_replace_str(&n->store, r->store);
    if (r->advertise)
        sl__conf_replace_str(&n->advertise, r->advertise);
    if (r->plain_listen)
        sl__conf_replace_str(&n->plain_listen, r->plain_listen);
    if (r->leader_timeout &&
        sl__conf_duration(ld, "leader_timeout", r->leader_timeout, &n->leader_timeout_ms) != 0)
        return -1;
    if (r->durability) {
        if (strcmp(r->durability, "normal") == 0)
            n->durability = SL_DURABILITY_NORMAL;
        else if (strcmp(r->durability, "full") == 0)
            n->durability = SL_DURABILITY_FULL;
        else
            return sl__conf_fail(
                ld, "durability",
                "\"%.100s\" is not a durability; use normal (survives a killed process) "
                "or full (survives power loss too)",
                r->durability);
    }
    if (r->log_level && sl_log_level_parse(r->log_level, &n->log_level) != 0)
        return sl__conf_fail(ld, "log_level",
                             "\"%.100s\" is not a log level; use error, warn, info or debug",
                             r->log_level);
    if (r->default_lease &&
        sl__conf_duration(ld, "default_lease", r->default_lease, &n->default_lease_ms) != 0)
        return -1;
    if (r->default_timeout &&
        sl__conf_duration(ld, "default_timeout", r->default_timeout, &n->default_timeout_ms) != 0)
        return -1;
    if (r->backdate_skew &&
        sl__conf_duration(ld, "backdate_skew", r->backdate_skew, &n->backdate_skew_ms) != 0)
        return -1;

    if (r->limits) {
        const raw_limits *l = r->limits;
        const struct {
            const char *path, *raw;
            int64_t *dst;
        } durations[] = {
            {"limits.max_wait", l->max_wait, &n->max_wait_ms},
            {"limits.idle_timeout", l->idle_timeout, &n->idle_timeout_ms},
            {"limits.header_timeout", l->header_timeout, &n->header_timeout_ms},
            {"limits.event_retention", l->event_retention, &n->event_retention_ms},
            {"limits.claim_retention", l->claim_retention, &n->claim_retention_ms},
        };
        for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++)
            if (durations[i].raw &&
                sl__conf_duration(ld, durations[i].path, durations[i].raw, durations[i].dst) != 0)
                return -1;
        const struct {
            const char *path, *raw;
            size_t *dst;
        } sizes[] = {
            {"limits.max_body", l->max_body, &n->max_body},
            {"limits.max_headers", l->max_headers, &n->max_headers},
            {"limits.max_connections", l->max_connections, &n->max_connections},
            {"limits.max_connections_per_client", l->max_connections_per_client,
             &n->max_connections_per_client},
            {"limits.max_claims", l->max_claims, &n->max_claims},
            {"limits.max_streams", l->max_streams, &n->max_streams},
            {"limits.max_event_scan", l->max_event_scan, &n->max_event_scan},
            {"limits.max_semaphores", l->max_semaphores, &n->max_semaphores},
        };
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            uint64_t v = 0;
            if (!sizes[i].raw)
                continue;
            if (sl__conf_count(ld, sizes[i].path, sizes[i].raw, SIZE_MAX, "65536", &v) != 0)
                return -1;
            *sizes[i].dst = (size_t)v;
        }
    }
    if (r->limits && r->limits->token_quotas &&
        sl__conf_quotas(ld, "limits.token_quotas", r->limits->token_quotas, 0,
                        n->token_quotas) != 0)
        return -1;
    if (r->tls && conv_tls(ld, r->tls, n) != 0)
        return -1;
    if (r->cluster && conv_cluster(ld, r->cluster, n) != 0)
        return -1;
    if (r->audit && conv_audit(ld, r->audit, n) != 0)
        return -1;
    /* The file's lists replace the ones before, when it has any. */
    if (r->semaphores_count && sl__conf_semaphores(ld, r, n) != 0)
        return -1;
    if (r->tokens_count && sl__conf_tokens(ld, r, n) != 0)
        return -1;
    if (r->insecure_open &&
        sl__conf_bool(ld, "insecure_open", r->insecure_open, &n->insecure_open) != 0)
        return -1;
    if (r->allowed_hosts_count) {
        for (size_t i = 0; i < n->nallowed_hosts; i++)
            free(n->allowed_hosts[i]);
        free(n->allowed_hosts);
        n->nallowed_hosts = r->allowed_hosts_count;
        n->allowed_hosts = sl__conf_xcalloc(r->allowed_hosts_count, sizeof(char *));
        for (size_t i = 0; i < r->allowed_hosts_count; i++)
            n->allowed_hosts[i] = sl__conf_xstrdup(r->allowed_hosts[i] ? r->allowed_hosts[i] : "");
    }
    return 0;
}

/* Reads the whole file (at most SL_CONF_FILE_MAX bytes) into ld->text. */
static int read_file(loader *ld)
{
    FILE *f = fopen(ld->file, "rb");
    if (!f) {
        snprintf(ld->err, ld->errlen,
                 "%s: cannot open the configuration file: %s; check the path "
                 "and its permissions",
                 ld->file, strerror(errno));
        return -1;
    }
    /* One byte more than the maximum tells a file that is too large. */
    size_t cap = 4096, len = 0;
    unsigned char *buf = sl__conf_xmalloc(cap);
    for (;;) {
        if (len == cap) {
            if (cap > SL_CONF_FILE_MAX)
                break;
            size_t bigger = cap * 2 > SL_CONF_FILE_MAX ? SL_CONF_FILE_MAX + 1 : cap * 2;
            unsigned char *p = realloc(buf, bigger);
            if (!p) {
                fputs("sluiced: out of memory\n", stderr);
                abort();
            }
            buf = p;
            cap = bigger;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int rc = 0;
    if (ferror(f)) {
        snprintf(ld->err, ld->errlen,
                 "%s: cannot read the configuration file: %s; check that it "
                 "is a readable file",
                 ld->file, strerror(errno));
        rc = -1;
    } else if (len > SL_CONF_FILE_MAX) {
        snprintf(ld->err, ld->errlen,
                 "%s: the file is larger than %u MiB; is it the "
                 "configuration file?",
                 ld->file, SL_CONF_FILE_MAX >> 20);
        rc = -1;
    }
    fclose(f);
    if (rc != 0) {
        free(buf);
        return -1;
    }
    ld->text = buf;
    ld->len = len;
    return 0;
}

int sl_conf_load_file(sl_conf *c, const char *path, char *err, size_t errlen)
{
    char scratch[1];
    loader ld;
    memset(&ld, 0, sizeof(ld));
    ld.file = path;
    ld.err = errlen ? err : scratch;
    ld.errlen = errlen ? errlen : sizeof(scratch);
    if (read_file(&ld) != 0)
        return -1;

    const cyaml_config_t cfg = {
        .log_fn = log_capture,
        .log_ctx = &ld,
        .mem_fn = cyaml_mem,
        .mem_ctx = NULL,
        .log_level = CYAML_LOG_ERROR,
        .flags = CYAML_CFG_DEFAULT, /* unknown keys are errors */
    };
    raw_conf *raw = NULL;
    cyaml_err_t e =
        cyaml_load_data(ld.text, ld.len, &cfg, &sl__conf_top_schema, (cyaml_data_t **)&raw, NULL);
    if (e != CYAML_OK) {
        sl__conf_cyaml_failed(&ld, e);
        free(ld.text);
        return -1;
    }

    sl_conf next;
    sl__conf_dup(&next, c);
    int rc = raw ? conv_all(&ld, raw, &next) : 0;
    if (rc == 0) {
        char where[PATH_CAP], msg[MSG_CAP];
        if (sl__conf_problem(&next, where, msg) != 0)
            rc = sl__conf_fail(&ld, where, "%s", msg);
    }
    if (raw)
        cyaml_free(&cfg, &sl__conf_top_schema, raw, 0);
    free(ld.text);
    if (rc != 0) {
        sl_conf_free(&next);
        return -1;
    }
    sl_conf_free(c);
    *c = next;
    return 0;
}
