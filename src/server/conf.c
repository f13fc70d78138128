/* conf.c - sluiced's configuration: defaults, the YAML file, the checks.
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
 * (walk_*): that walk names the exact line and column of the offending key
 * or value, and for libcyaml's errors it also finds what is wrong (unknown,
 * repeated or missing key, wrong shape), worded with the keys allowed there.
 * libcyaml's first message is kept in the error, after ours; if the walk
 * finds nothing, libcyaml's whole log (with its line and column) is the
 * error. libcyaml never prints: its log goes into a buffer (log_capture).
 *
 * Messages read "FILE:LINE:COLUMN: PATH: what is wrong; how to mend", PATH
 * like semaphores[1].strategy (entries count from 0). */
#include "conf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cyaml/cyaml.h>
#include <yaml.h>

#include "duration.h"

/* A configuration file larger than this is refused unread. */
#define SL_CONF_FILE_MAX (8u << 20)
/* A token's secret travels in an Authorization header. */
#define SL_TOKEN_MAX 1024
/* Longest key path ("tokens[123].prefixes[4]") and message we build. */
#define PATH_CAP 128
#define MSG_CAP 512
/* How much of libcyaml's log is kept for the error. */
#define LOG_CAP 1024

/* ---- memory: the daemon aborts when it runs out -------------------------- */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("sluiced: out of memory\n", stderr);
        abort();
    }
    return p;
}

static void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        fputs("sluiced: out of memory\n", stderr);
        abort();
    }
    return p;
}

static char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(xmalloc(n), s, n);
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void replace_str(char **dst, const char *src)
{
    char *copy = xstrdup(src);
    free(*dst);
    *dst = copy;
}

/* ---- defaults, free, copy -------------------------------------------------- */

void sl_conf_defaults(sl_conf *c)
{
    memset(c, 0, sizeof(*c));
    c->listen = xstrdup("127.0.0.1:7700");
    c->store = xstrdup("sqlite:./sluice.db");
    c->durability = SL_DURABILITY_NORMAL;
    c->log_level = SL_LOG_INFO;
    c->default_lease_ms = 0;
    c->max_wait_ms = 30 * 1000;
    c->idle_timeout_ms = 60 * 1000;
    c->event_retention_ms = 24LL * 3600 * 1000;
    c->claim_retention_ms = 3600LL * 1000;
    c->max_body = 64 * 1024;
    c->max_headers = 16 * 1024;
    c->max_connections = 4096;
    c->max_claims = 10000000;
    c->max_streams = 256;
}

static void sems_free(sl_conf_sem *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(s[i].name);
    free(s);
}

static void tokens_free(sl_conf_token *t, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(t[i].name);
        free(t[i].token);
        for (size_t j = 0; j < t[i].nprefixes; j++)
            free(t[i].prefixes[j]);
        free(t[i].prefixes);
    }
    free(t);
}

void sl_conf_free(sl_conf *c)
{
    if (!c)
        return;
    free(c->listen);
    free(c->store);
    sems_free(c->semaphores, c->nsemaphores);
    tokens_free(c->tokens, c->ntokens);
    memset(c, 0, sizeof(*c));
}

/* A deep copy: the scratch configuration a load works on. */
static void conf_dup(sl_conf *dst, const sl_conf *src)
{
    *dst = *src;
    dst->listen = dup_or_null(src->listen);
    dst->store = dup_or_null(src->store);
    dst->semaphores = NULL;
    dst->tokens = NULL;
    if (src->nsemaphores) {
        dst->semaphores = xcalloc(src->nsemaphores, sizeof(*dst->semaphores));
        for (size_t i = 0; i < src->nsemaphores; i++) {
            dst->semaphores[i] = src->semaphores[i];
            dst->semaphores[i].name = dup_or_null(src->semaphores[i].name);
        }
    }
    if (src->ntokens) {
        dst->tokens = xcalloc(src->ntokens, sizeof(*dst->tokens));
        for (size_t i = 0; i < src->ntokens; i++) {
            const sl_conf_token *s = &src->tokens[i];
            sl_conf_token *d = &dst->tokens[i];
            d->name = dup_or_null(s->name);
            d->token = dup_or_null(s->token);
            d->admin = s->admin;
            d->nprefixes = s->nprefixes;
            d->prefixes = s->nprefixes ? xcalloc(s->nprefixes, sizeof(char *)) : NULL;
            for (size_t j = 0; j < s->nprefixes; j++)
                d->prefixes[j] = dup_or_null(s->prefixes[j]);
        }
    }
}

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
    "1 to 253 characters of A-Z a-z 0-9 . _ - / : =, no leading or trailing '/', no '//'"

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
    static const char prefix[] = "sqlite:";
    if (strncmp(s, prefix, sizeof(prefix) - 1) != 0 || s[sizeof(prefix) - 1] == '\0')
        return "is not a store URL; write sqlite:PATH, like sqlite:/var/lib/sluice/sluice.db";
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

/* Keys for find_duplicate: which = 0 semaphore names, 1 token secrets,
 * 2 token names. The caller frees the array. */
static keyed *keys_of(const sl_conf *c, int which, size_t *n)
{
    *n = which == 0 ? c->nsemaphores : c->ntokens;
    keyed *v = xcalloc(*n, sizeof(*v));
    for (size_t i = 0; i < *n; i++) {
        v[i].idx = i;
        v[i].key = which == 0   ? c->semaphores[i].name
                   : which == 1 ? c->tokens[i].token
                                : c->tokens[i].name;
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

/* Finds the first thing wrong with a configuration: *path (like
 * "semaphores[2].limit") and *msg (what is wrong and how to mend it).
 * Returns 0 when all is well. */
static int conf_problem(const sl_conf *c, char *path, char *msg)
{
    const char *p;
#define PROBLEM(...)                                                                               \
    do {                                                                                           \
        snprintf(msg, MSG_CAP, __VA_ARGS__);                                                       \
        return -1;                                                                                 \
    } while (0)
#define AT(...) snprintf(path, PATH_CAP, __VA_ARGS__)

    AT("listen");
    if (!c->listen || !*c->listen)
        PROBLEM("is empty; write HOST:PORT, like 127.0.0.1:7700");
    if ((p = listen_problem(c->listen)))
        PROBLEM("\"%.100s\" %s", c->listen, p);
    AT("store");
    if (!c->store || !*c->store)
        PROBLEM("is empty; write sqlite:PATH, like sqlite:/var/lib/sluice/sluice.db");
    if ((p = store_problem(c->store)))
        PROBLEM("\"%.100s\" %s", c->store, p);
    AT("durability");
    if ((unsigned)c->durability > SL_DURABILITY_FULL)
        PROBLEM("is not a durability; use normal or full");
    AT("log_level");
    if ((unsigned)c->log_level > SL_LOG_DEBUG)
        PROBLEM("is not a log level; use error, warn, info or debug");
    AT("default_lease");
    if (c->default_lease_ms < 0 || c->default_lease_ms > SL_DURATION_MAX_MS)
        PROBLEM("must be 0 (none) or a duration of at most 100 years, like 30s");

    const struct {
        const char *key;
        int64_t v;
    } durations[] = {
        {"max_wait", c->max_wait_ms},
        {"idle_timeout", c->idle_timeout_ms},
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
        if (s->lease_ms < 0 || s->lease_ms > SL_DURATION_MAX_MS)
            PROBLEM("must be 0 (none) or a duration of at most 100 years, like 30s");
    }

    for (size_t i = 0; i < c->ntokens; i++) {
        const sl_conf_token *t = &c->tokens[i];
        AT("tokens[%zu].name", i);
        if (!t->name || !*t->name)
            PROBLEM("is empty; give every token a name for the logs, like ci");
        if (!printable(t->name, true) || strlen(t->name) > SL_NAME_MAX)
            PROBLEM("\"%.100s\" is not a token name; use up to 253 visible ASCII characters",
                    t->name);
        /* Never the secret itself in a message: they end up in logs. */
        AT("tokens[%zu].token", i);
        if (!t->token || !*t->token)
            PROBLEM("is empty; give the token \"%.100s\" a secret, like the output of "
                    "`openssl rand -hex 32`",
                    t->name);
        if (!printable(t->token, false) || strlen(t->token) > SL_TOKEN_MAX)
            PROBLEM("the secret of token \"%.100s\" must be 1 to %d visible ASCII characters "
                    "without spaces; like the output of `openssl rand -hex 32`",
                    t->name, SL_TOKEN_MAX);
        AT("tokens[%zu]", i);
        if (!t->admin && t->nprefixes == 0)
            PROBLEM("token \"%.100s\" may do nothing; set admin: true, or list the name "
                    "prefixes it may use, like prefixes: [\"team-a/\"]",
                    t->name);
        if (t->admin && t->nprefixes > 0)
            PROBLEM("token \"%.100s\" is admin and has prefixes; an admin token may use every "
                    "name, so remove prefixes or set admin: false",
                    t->name);
        for (size_t j = 0; j < t->nprefixes; j++) {
            AT("tokens[%zu].prefixes[%zu]", i, j);
            if (!prefix_valid(t->prefixes[j]))
                PROBLEM("\"%.100s\" is not a name prefix; use " NAME_RULE
                        " (a trailing '/' is fine), like \"team-a/\"",
                        t->prefixes[j]);
        }
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
        AT("tokens[%ld].token", dup);
        PROBLEM("token \"%.100s\" has the same secret as tokens[%zu] (\"%.100s\"); give every "
                "token its own secret",
                c->tokens[dup].name, first, c->tokens[first].name);
    }
    dup = duplicate_in(c, 2, &first);
    if (dup >= 0) {
        AT("tokens[%ld].name", dup);
        PROBLEM("\"%.100s\" is the name of tokens[%zu] too; give every token its own name, so "
                "that the logs tell them apart",
                c->tokens[dup].name, first);
    }
#undef AT
#undef PROBLEM
    return 0;
}

int sl_conf_check(const sl_conf *c, char *err, size_t errlen)
{
    char path[PATH_CAP], msg[MSG_CAP];
    if (conf_problem(c, path, msg) == 0)
        return 0;
    if (errlen)
        snprintf(err, errlen, "%s: %s", path, msg);
    return -1;
}

/* ---- the file: raw strings by schema ---------------------------------------- */

typedef struct raw_limits {
    char *max_body, *max_headers, *max_connections, *max_claims, *max_streams;
    char *max_wait, *idle_timeout, *event_retention, *claim_retention;
} raw_limits;

typedef struct raw_sem {
    char *name, *limit, *strategy, *lease;
} raw_sem;

typedef struct raw_token {
    char *name, *token, *admin;
    char **prefixes;
    unsigned prefixes_count;
} raw_token;

typedef struct raw_conf {
    char *listen, *store, *durability, *log_level, *default_lease;
    raw_limits *limits;
    raw_sem *semaphores;
    unsigned semaphores_count;
    raw_token *tokens;
    unsigned tokens_count;
} raw_conf;

/* Every scalar is read as a string; the conversions below judge it. */
#define STR(key, flags, type, member)                                                              \
    CYAML_FIELD_STRING_PTR(key, flags, type, member, 0, CYAML_UNLIMITED)
#define OPT CYAML_FLAG_OPTIONAL
/* A list or a section may be left empty ("semaphores:" and nothing). */
#define OPT_NULL (CYAML_FLAG_OPTIONAL | CYAML_FLAG_POINTER_NULL)

static const cyaml_schema_field_t limits_fields[] = {
    STR("max_body", OPT, raw_limits, max_body),
    STR("max_headers", OPT, raw_limits, max_headers),
    STR("max_connections", OPT, raw_limits, max_connections),
    STR("max_claims", OPT, raw_limits, max_claims),
    STR("max_streams", OPT, raw_limits, max_streams),
    STR("max_wait", OPT, raw_limits, max_wait),
    STR("idle_timeout", OPT, raw_limits, idle_timeout),
    STR("event_retention", OPT, raw_limits, event_retention),
    STR("claim_retention", OPT, raw_limits, claim_retention),
    CYAML_FIELD_END,
};

static const cyaml_schema_field_t sem_fields[] = {
    STR("name", CYAML_FLAG_DEFAULT, raw_sem, name),
    STR("limit", CYAML_FLAG_DEFAULT, raw_sem, limit),
    STR("strategy", OPT, raw_sem, strategy),
    STR("lease", OPT, raw_sem, lease),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t sem_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_sem, sem_fields),
};

static const cyaml_schema_value_t prefix_schema = {
    CYAML_VALUE_STRING(CYAML_FLAG_POINTER, char, 0, CYAML_UNLIMITED),
};

static const cyaml_schema_field_t token_fields[] = {
    STR("name", CYAML_FLAG_DEFAULT, raw_token, name),
    STR("token", CYAML_FLAG_DEFAULT, raw_token, token),
    STR("admin", OPT, raw_token, admin),
    CYAML_FIELD_SEQUENCE("prefixes", OPT_NULL, raw_token, prefixes, &prefix_schema, 0,
                         CYAML_UNLIMITED),
    CYAML_FIELD_END,
};

static const cyaml_schema_value_t token_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_DEFAULT, raw_token, token_fields),
};

static const cyaml_schema_field_t top_fields[] = {
    STR("listen", OPT, raw_conf, listen),
    STR("store", OPT, raw_conf, store),
    STR("durability", OPT, raw_conf, durability),
    STR("log_level", OPT, raw_conf, log_level),
    STR("default_lease", OPT, raw_conf, default_lease),
    CYAML_FIELD_MAPPING_PTR("limits", OPT_NULL, raw_conf, limits, limits_fields),
    CYAML_FIELD_SEQUENCE("semaphores", OPT_NULL, raw_conf, semaphores, &sem_schema, 0,
                         CYAML_UNLIMITED),
    CYAML_FIELD_SEQUENCE("tokens", OPT_NULL, raw_conf, tokens, &token_schema, 0, CYAML_UNLIMITED),
    CYAML_FIELD_END,
};

/* Nullable: a file of only "---" (an empty document) sets nothing, like an
 * empty file. */
static const cyaml_schema_value_t top_schema = {
    CYAML_VALUE_MAPPING(CYAML_FLAG_POINTER_NULL, raw_conf, top_fields),
};

#undef STR
#undef OPT
#undef OPT_NULL

/* One load: the file's text, libcyaml's log, where the error goes. */
typedef struct loader {
    const char *file; /* the path, as the messages name it */
    unsigned char *text;
    size_t len;
    char log[LOG_CAP];
    size_t loglen;
    char *err;
    size_t errlen;
} loader;

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

/* ---- the walk: where a key or value is, and what libcyaml refused -------- */

typedef struct walk {
    yaml_parser_t parser;
    const char *target; /* the path to find, or NULL to find a problem */
    bool target_key;    /* the key's place rather than the value's */
    bool stop;          /* found the target, or a problem */
    bool found;         /* the target */
    bool problem;
    yaml_mark_t mark; /* where the target or the problem is */
    char path[PATH_CAP];
    char msg[MSG_CAP];
} walk;

__attribute__((format(printf, 4, 5))) static void
walk_problem(walk *w, yaml_mark_t mark, const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->msg, sizeof(w->msg), fmt, ap);
    va_end(ap);
    snprintf(w->path, sizeof(w->path), "%s", path);
    w->mark = mark;
    w->problem = w->stop = true;
}

static void walk_found(walk *w, yaml_mark_t mark)
{
    w->mark = mark;
    w->found = w->stop = true;
}

static bool walk_next(walk *w, yaml_event_t *ev)
{
    if (yaml_parser_parse(&w->parser, ev))
        return true;
    const yaml_parser_t *p = &w->parser;
    walk_problem(w, p->problem_mark, "",
                 "YAML syntax error: %s%s%s; check the indentation, the "
                 "quotes and the colons",
                 p->problem ? p->problem : "unreadable", p->context ? " " : "",
                 p->context ? p->context : "");
    return false;
}

static const char *shape_wanted(const cyaml_schema_value_t *sv)
{
    switch (sv->type) {
    case CYAML_MAPPING:
        return "keys with values (key: value, one per line)";
    case CYAML_SEQUENCE:
        return "a list (entries on lines starting with \"- \", or [a, b])";
    default:
        return "a single value";
    }
}

static const char *shape_found(yaml_event_type_t t)
{
    switch (t) {
    case YAML_MAPPING_START_EVENT:
        return "keys with values";
    case YAML_SEQUENCE_START_EVENT:
        return "a list";
    default:
        return "a single value";
    }
}

/* "a, b, c": the keys of a mapping schema, the required ones only if asked. */
static void keys_list(const cyaml_schema_field_t *f, bool required_only, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    for (; f->key; f++) {
        if (required_only && (f->value.flags & CYAML_FLAG_OPTIONAL))
            continue;
        int k = snprintf(buf + n, cap - n, "%s%s", n ? ", " : "", f->key);
        if (k < 0 || (size_t)k >= cap - n)
            return;
        n += (size_t)k;
    }
}

static void child_path(char *out, const char *path, const char *key)
{
    snprintf(out, PATH_CAP, "%s%s%.100s", path, *path ? "." : "", key);
}

static void walk_node(walk *w, const cyaml_schema_value_t *sv, const char *path,
                      const yaml_event_t *ev);

static void walk_seq(walk *w, const cyaml_schema_value_t *sv, const char *path)
{
    bool end = false;
    for (size_t i = 0; !end && !w->stop; i++) {
        yaml_event_t ev;
        if (!walk_next(w, &ev))
            return;
        end = ev.type == YAML_SEQUENCE_END_EVENT;
        if (!end) {
            char child[PATH_CAP];
            snprintf(child, sizeof(child), "%s[%zu]", path, i);
            walk_node(w, sv->sequence.entry, child, &ev);
        }
        yaml_event_delete(&ev);
    }
}

static void walk_map(walk *w, const cyaml_schema_value_t *sv, const char *path, yaml_mark_t start)
{
    const cyaml_schema_field_t *fields = sv->mapping.fields;
    uint64_t seen = 0; /* our schemas have fewer than 64 keys */
    char list[256], child[PATH_CAP];
    while (!w->stop) {
        yaml_event_t key, val;
        if (!walk_next(w, &key))
            return;
        if (key.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&key);
            break;
        }
        if (key.type != YAML_SCALAR_EVENT) {
            walk_problem(w, key.start_mark, path, "a key must be a single word, like listen");
            yaml_event_delete(&key);
            return;
        }
        const char *k = (const char *)key.data.scalar.value;
        size_t f = 0;
        while (fields[f].key && strcmp(fields[f].key, k) != 0)
            f++;
        child_path(child, path, k);
        if (!fields[f].key) {
            keys_list(fields, false, list, sizeof(list));
            if (*path)
                walk_problem(w, key.start_mark, path,
                             "unknown key \"%.100s\"; the keys here are %s", k, list);
            else
                walk_problem(w, key.start_mark, path,
                             "unknown key \"%.100s\"; the top-level keys are %s", k, list);
        } else if (seen & ((uint64_t)1 << f)) {
            walk_problem(w, key.start_mark, child, "is given twice; keep one");
        } else if (w->target && w->target_key && strcmp(child, w->target) == 0) {
            walk_found(w, key.start_mark);
        }
        yaml_event_delete(&key);
        if (w->stop)
            return;
        seen |= (uint64_t)1 << f;
        if (!walk_next(w, &val))
            return;
        walk_node(w, &fields[f].value, child, &val);
        yaml_event_delete(&val);
    }
    if (w->stop)
        return;
    for (size_t f = 0; fields[f].key; f++) {
        if (!(fields[f].value.flags & CYAML_FLAG_OPTIONAL) && !(seen & ((uint64_t)1 << f))) {
            keys_list(fields, true, list, sizeof(list));
            walk_problem(w, start, path, "\"%s\" is missing; every entry here needs %s",
                         fields[f].key, list);
            return;
        }
    }
}

/* One node whose first event is ev, against its schema. Recursion follows
 * the schema, which is four levels deep, whatever the file holds. */
static void walk_node(walk *w, const cyaml_schema_value_t *sv, const char *path,
                      const yaml_event_t *ev)
{
    if (w->target && !w->target_key && strcmp(path, w->target) == 0) {
        walk_found(w, ev->start_mark);
        return;
    }
    bool nullable = (sv->flags & CYAML_FLAG_POINTER_NULL) == CYAML_FLAG_POINTER_NULL;
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        return; /* an anchor's copy: libcyaml replays it, we cannot place it */
    case YAML_SCALAR_EVENT:
        if (sv->type != CYAML_MAPPING && sv->type != CYAML_SEQUENCE)
            return;
        if (nullable && ev->data.scalar.length == 0 &&
            ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
            return; /* "limits:" with nothing after it */
        break;
    case YAML_SEQUENCE_START_EVENT:
        if (sv->type == CYAML_SEQUENCE) {
            walk_seq(w, sv, path);
            return;
        }
        break;
    case YAML_MAPPING_START_EVENT:
        if (sv->type == CYAML_MAPPING) {
            walk_map(w, sv, path, ev->start_mark);
            return;
        }
        break;
    default:
        break;
    }
    walk_problem(w, ev->start_mark, path, "expected %s, found %s", shape_wanted(sv),
                 shape_found(ev->type));
}

/* Walks the first document of the file. */
static void walk_file(walk *w, const loader *ld)
{
    if (!yaml_parser_initialize(&w->parser))
        return;
    yaml_parser_set_input_string(&w->parser, ld->text, ld->len);
    yaml_event_t ev;
    bool more = true;
    /* Stream start, document start, then the root node. */
    for (int i = 0; more && i < 3 && !w->stop; i++) {
        if (!walk_next(w, &ev))
            break;
        if (ev.type == YAML_STREAM_END_EVENT)
            more = false;
        else if (ev.type != YAML_STREAM_START_EVENT && ev.type != YAML_DOCUMENT_START_EVENT)
            walk_node(w, &top_schema, "", &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&w->parser);
}

/* Where a key path's value (or key) is in the file. */
static bool locate(const loader *ld, const char *path, bool key, yaml_mark_t *mark)
{
    walk w;
    memset(&w, 0, sizeof(w));
    w.target = path;
    w.target_key = key;
    walk_file(&w, ld);
    if (w.found)
        *mark = w.mark;
    return w.found;
}

/* ---- errors ------------------------------------------------------------------ */

/* "FILE:LINE:COL: PATH: MSG", the place found by walking the file. */
__attribute__((format(printf, 3, 4))) static int fail(loader *ld, const char *path, const char *fmt,
                                                      ...)
{
    char msg[MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    yaml_mark_t m;
    if (locate(ld, path, false, &m))
        snprintf(ld->err, ld->errlen, "%s:%zu:%zu: %s: %s", ld->file, m.line + 1, m.column + 1,
                 path, msg);
    else
        snprintf(ld->err, ld->errlen, "%s: %s: %s", ld->file, path, msg);
    return -1;
}

/* libcyaml refused the file: say what and where (see the file comment). */
static void cyaml_failed(loader *ld, cyaml_err_t e)
{
    /* libcyaml's first message, on one line (not its backtrace). */
    char first[256] = "";
    for (const char *line = ld->log; *line;) {
        size_t n = strcspn(line, "\n");
        if (line[0] != ' ' && strncmp(line, "Load: Backtrace:", 16) != 0) {
            snprintf(first, sizeof(first), "%.*s", (int)n, line);
            break;
        }
        line += n + (line[n] == '\n');
    }

    walk w;
    memset(&w, 0, sizeof(w));
    walk_file(&w, ld);
    if (w.problem) {
        snprintf(ld->err, ld->errlen, "%s:%zu:%zu: %s%s%s (libcyaml: %s)", ld->file,
                 w.mark.line + 1, w.mark.column + 1, w.path, *w.path ? ": " : "", w.msg,
                 *first ? first : cyaml_strerror(e));
        return;
    }
    /* Nothing we know of: libcyaml's whole log (its backtrace has lines and
     * columns), on one line: "a\n  b\n" becomes "a; b". */
    char joined[LOG_CAP];
    size_t n = 0;
    for (const char *p = ld->log; *p && n + 3 < sizeof(joined); p++) {
        if (*p != '\n') {
            joined[n++] = *p;
            continue;
        }
        while (p[1] == ' ')
            p++;
        if (p[1]) {
            joined[n++] = ';';
            joined[n++] = ' ';
        }
    }
    joined[n] = '\0';
    snprintf(ld->err, ld->errlen, "%s: %s: %s", ld->file, cyaml_strerror(e),
             n ? joined : "(no details)");
}

/* ---- the conversions ----------------------------------------------------------- */

static int conv_duration(loader *ld, const char *path, const char *s, int64_t *out)
{
    if (sl_duration_parse(s, out) == 0)
        return 0;
    return fail(ld, path,
                "\"%.100s\" is not a duration; write a number and units h, m, s or ms, largest "
                "first, like 250ms, 30s, 5m or 1h30m (a bare number is seconds; at most 100 "
                "years)",
                s);
}

/* A whole number of digits only, at most max. */
static int conv_count(loader *ld, const char *path, const char *s, uint64_t max, uint64_t *out)
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
        return fail(ld, path, "\"%.100s\" is not a whole number; write digits only, like 65536", s);
    if (over || v > max)
        return fail(ld, path, "%.100s is more than the largest allowed, %llu", s,
                    (unsigned long long)max);
    *out = v;
    return 0;
}

/* YAML 1.2's booleans. */
static int conv_bool(loader *ld, const char *path, const char *s, bool *out)
{
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) {
        *out = true;
        return 0;
    }
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) {
        *out = false;
        return 0;
    }
    return fail(ld, path, "\"%.100s\" is not true or false; write true or false", s);
}

static int conv_semaphores(loader *ld, const raw_conf *r, sl_conf *n)
{
    char path[PATH_CAP];
    sems_free(n->semaphores, n->nsemaphores);
    n->nsemaphores = r->semaphores_count;
    n->semaphores = xcalloc(r->semaphores_count, sizeof(*n->semaphores));
    for (size_t i = 0; i < r->semaphores_count; i++) {
        const raw_sem *rs = &r->semaphores[i];
        sl_conf_sem *s = &n->semaphores[i];
        uint64_t limit;
        s->name = xstrdup(rs->name ? rs->name : "");
        snprintf(path, sizeof(path), "semaphores[%zu].limit", i);
        if (conv_count(ld, path, rs->limit ? rs->limit : "", SL_LIMIT_MAX, &limit) != 0)
            return -1;
        s->limit = (uint32_t)limit;
        s->strategy = SL_STRICT;
        snprintf(path, sizeof(path), "semaphores[%zu].strategy", i);
        if (rs->strategy && sl_strategy_parse(rs->strategy, &s->strategy) != 0)
            return fail(ld, path, "\"%.100s\" is not a strategy; use strict, skip or rebalanced",
                        rs->strategy);
        snprintf(path, sizeof(path), "semaphores[%zu].lease", i);
        if (rs->lease && conv_duration(ld, path, rs->lease, &s->lease_ms) != 0)
            return -1;
    }
    return 0;
}

static int conv_tokens(loader *ld, const raw_conf *r, sl_conf *n)
{
    char path[PATH_CAP];
    tokens_free(n->tokens, n->ntokens);
    n->ntokens = r->tokens_count;
    n->tokens = xcalloc(r->tokens_count, sizeof(*n->tokens));
    for (size_t i = 0; i < r->tokens_count; i++) {
        const raw_token *rt = &r->tokens[i];
        sl_conf_token *t = &n->tokens[i];
        t->name = xstrdup(rt->name ? rt->name : "");
        t->token = xstrdup(rt->token ? rt->token : "");
        snprintf(path, sizeof(path), "tokens[%zu].admin", i);
        if (rt->admin && conv_bool(ld, path, rt->admin, &t->admin) != 0)
            return -1;
        if (rt->prefixes_count) {
            t->prefixes = xcalloc(rt->prefixes_count, sizeof(char *));
            t->nprefixes = rt->prefixes_count;
            for (size_t j = 0; j < rt->prefixes_count; j++)
                t->prefixes[j] = xstrdup(rt->prefixes[j] ? rt->prefixes[j] : "");
        }
    }
    return 0;
}

static int conv_all(loader *ld, const raw_conf *r, sl_conf *n)
{
    if (r->listen)
        replace_str(&n->listen, r->listen);
    if (r->store)
        replace_str(&n->store, r->store);
    if (r->durability) {
        if (strcmp(r->durability, "normal") == 0)
            n->durability = SL_DURABILITY_NORMAL;
        else if (strcmp(r->durability, "full") == 0)
            n->durability = SL_DURABILITY_FULL;
        else
            return fail(ld, "durability",
                        "\"%.100s\" is not a durability; use normal (survives a killed process) "
                        "or full (survives power loss too)",
                        r->durability);
    }
    if (r->log_level && sl_log_level_parse(r->log_level, &n->log_level) != 0)
        return fail(ld, "log_level",
                    "\"%.100s\" is not a log level; use error, warn, info or debug", r->log_level);
    if (r->default_lease &&
        conv_duration(ld, "default_lease", r->default_lease, &n->default_lease_ms) != 0)
        return -1;

    if (r->limits) {
        const raw_limits *l = r->limits;
        const struct {
            const char *path, *raw;
            int64_t *dst;
        } durations[] = {
            {"limits.max_wait", l->max_wait, &n->max_wait_ms},
            {"limits.idle_timeout", l->idle_timeout, &n->idle_timeout_ms},
            {"limits.event_retention", l->event_retention, &n->event_retention_ms},
            {"limits.claim_retention", l->claim_retention, &n->claim_retention_ms},
        };
        for (size_t i = 0; i < sizeof(durations) / sizeof(durations[0]); i++)
            if (durations[i].raw &&
                conv_duration(ld, durations[i].path, durations[i].raw, durations[i].dst) != 0)
                return -1;
        const struct {
            const char *path, *raw;
            size_t *dst;
        } sizes[] = {
            {"limits.max_body", l->max_body, &n->max_body},
            {"limits.max_headers", l->max_headers, &n->max_headers},
            {"limits.max_connections", l->max_connections, &n->max_connections},
            {"limits.max_claims", l->max_claims, &n->max_claims},
            {"limits.max_streams", l->max_streams, &n->max_streams},
        };
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            uint64_t v;
            if (!sizes[i].raw)
                continue;
            if (conv_count(ld, sizes[i].path, sizes[i].raw, SIZE_MAX, &v) != 0)
                return -1;
            *sizes[i].dst = (size_t)v;
        }
    }
    /* The file's lists replace the ones before, when it has any. */
    if (r->semaphores_count && conv_semaphores(ld, r, n) != 0)
        return -1;
    if (r->tokens_count && conv_tokens(ld, r, n) != 0)
        return -1;
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
    unsigned char *buf = xmalloc(cap);
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
        cyaml_load_data(ld.text, ld.len, &cfg, &top_schema, (cyaml_data_t **)&raw, NULL);
    if (e != CYAML_OK) {
        cyaml_failed(&ld, e);
        free(ld.text);
        return -1;
    }

    sl_conf next;
    conf_dup(&next, c);
    int rc = raw ? conv_all(&ld, raw, &next) : 0;
    if (rc == 0) {
        char where[PATH_CAP], msg[MSG_CAP];
        if (conf_problem(&next, where, msg) != 0)
            rc = fail(&ld, where, "%s", msg);
    }
    if (raw)
        cyaml_free(&cfg, &top_schema, raw, 0);
    free(ld.text);
    if (rc != 0) {
        sl_conf_free(&next);
        return -1;
    }
    sl_conf_free(c);
    *c = next;
    return 0;
}
