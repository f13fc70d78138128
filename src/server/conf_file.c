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
 * (walk_*): that walk names the exact line and column of the offending key
 * or value, and for libcyaml's errors it also finds what is wrong (unknown,
 * repeated or missing key, wrong shape), worded with the keys allowed there.
 * libcyaml's first message is kept in the error, after ours; if the walk
 * finds nothing, libcyaml's whole log (with its line and column) is the
 * error. libcyaml never prints: its log goes into a buffer (log_capture).
 *
 * Messages read "FILE:LINE:COLUMN: PATH: what is wrong; how to mend", PATH
 * like semaphores[1].strategy (entries count from 0). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cyaml/cyaml.h>
#include <yaml.h>

#include "conf_int.h"
#include "duration.h"
#include "sem_rules.h"

/* ---- the file: raw strings by schema ---------------------------------------- */

typedef struct raw_limits {
    char *max_body, *max_headers, *max_connections, *max_connections_per_client;
    char *max_claims, *max_streams, *max_event_scan;
    char *max_wait, *idle_timeout, *header_timeout, *event_retention, *claim_retention;
} raw_limits;

/* Its weights are not here: libcyaml reads only keys its schema names, and
 * a weight's key is the file's own, so the schema skips `weights` and
 * conv_weights reads them (see "the weights" below). */
typedef struct raw_sem {
    char *name, *limit, *strategy, *lease, *overtake_limit;
    char *preempt, *preempt_grace, *max_pending, *on_full, *default_weight;
    char *rate, *burst, *backdate;
} raw_sem;

typedef struct raw_token {
    char *name, *token, *admin;
    char **prefixes;
    unsigned prefixes_count;
} raw_token;

typedef struct raw_tls {
    char *cert, *key, *client_ca, *min_version;
} raw_tls;

typedef struct raw_conf {
    char *listen, *store, *durability, *log_level, *default_lease, *default_timeout;
    char *backdate_skew;
    char *advertise, *leader_timeout;
    raw_limits *limits;
    raw_tls *tls;
    raw_sem *semaphores;
    unsigned semaphores_count;
    raw_token *tokens;
    unsigned tokens_count;
    char **allowed_hosts;
    unsigned allowed_hosts_count;
    char *insecure_open;
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
    STR("max_connections_per_client", OPT, raw_limits, max_connections_per_client),
    STR("max_claims", OPT, raw_limits, max_claims),
    STR("max_streams", OPT, raw_limits, max_streams),
    STR("max_event_scan", OPT, raw_limits, max_event_scan),
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
    STR("advertise", OPT, raw_conf, advertise),
    STR("leader_timeout", OPT, raw_conf, leader_timeout),
    STR("durability", OPT, raw_conf, durability),
    STR("log_level", OPT, raw_conf, log_level),
    STR("default_lease", OPT, raw_conf, default_lease),
    STR("default_timeout", OPT, raw_conf, default_timeout),
    STR("backdate_skew", OPT, raw_conf, backdate_skew),
    CYAML_FIELD_MAPPING_PTR("limits", OPT_NULL, raw_conf, limits, limits_fields),
    CYAML_FIELD_MAPPING_PTR("tls", OPT_NULL, raw_conf, tls, tls_fields),
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
    const yaml_mark_t *here; /* where fail() points, if set: a node of the weights */
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

/* The rest of a node whose first event is ev, read and dropped. */
static void walk_skip(walk *w, const yaml_event_t *ev)
{
    int depth = ev->type == YAML_SEQUENCE_START_EVENT || ev->type == YAML_MAPPING_START_EVENT;
    while (depth > 0 && !w->stop) {
        yaml_event_t e;
        if (!walk_next(w, &e))
            return;
        if (e.type == YAML_SEQUENCE_START_EVENT || e.type == YAML_MAPPING_START_EVENT)
            depth++;
        else if (e.type == YAML_SEQUENCE_END_EVENT || e.type == YAML_MAPPING_END_EVENT)
            depth--;
        yaml_event_delete(&e);
    }
}

/* A value libcyaml skips (weights: conv_weights judges it), read through;
 * a target among its keys or values ("semaphores[0].weights.paying") is
 * still found. */
static void walk_free(walk *w, const char *path, const yaml_event_t *ev)
{
    if (ev->type != YAML_MAPPING_START_EVENT) {
        walk_skip(w, ev);
        return;
    }
    while (!w->stop) {
        yaml_event_t key, val;
        if (!walk_next(w, &key))
            return;
        if (key.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&key);
            return;
        }
        char child[PATH_CAP];
        snprintf(child, sizeof(child), "%s.%.*s", path, KEY_IN_PATH,
                 key.type == YAML_SCALAR_EVENT ? (const char *)key.data.scalar.value : "");
        bool target = w->target && strcmp(child, w->target) == 0;
        if (target && w->target_key)
            walk_found(w, key.start_mark);
        walk_skip(w, &key);
        yaml_event_delete(&key);
        if (w->stop || !walk_next(w, &val))
            return;
        if (target && !w->target_key)
            walk_found(w, val.start_mark);
        walk_skip(w, &val);
        yaml_event_delete(&val);
    }
}

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
    if (sv->type == CYAML_IGNORE) {
        walk_free(w, path, ev);
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

/* "FILE:LINE:COL: PATH: MSG", the place found by walking the file (or
 * ld->here, a node of the weights). */
__attribute__((format(printf, 3, 4))) static int fail(loader *ld, const char *path, const char *fmt,
                                                      ...)
{
    char msg[MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    yaml_mark_t m;
    if (ld->here)
        m = *ld->here;
    if (ld->here || locate(ld, path, false, &m))
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

/* A whole number of digits only, at most max; `like` is an example. */
static int conv_count(loader *ld, const char *path, const char *s, uint64_t max, const char *like,
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
        return fail(ld, path, "\"%.100s\" is not a whole number; write digits only, like %s", s,
                    like);
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

/* A whole number from lo to max, like conv_count. */
static int conv_range(loader *ld, const char *path, const char *s, uint64_t lo, uint64_t max,
                      const char *like, uint64_t *out)
{
    if (conv_count(ld, path, s, max, like, out) != 0)
        return -1;
    if (*out < lo)
        return fail(ld, path, "%.100s is less than the smallest allowed, %llu", s,
                    (unsigned long long)lo);
    return 0;
}

/* ---- the weights: libyaml's document ---------------------------------------- */

/* libcyaml has no mapping of keys unknown to its schema, so `weights` (a
 * rebalance key and its weight per line) is read from libyaml's document
 * of the same text: nodes with their marks for the messages, and aliases
 * resolved as libcyaml resolves them. */
typedef struct weights_doc {
    yaml_document_t doc;
    bool loaded;
    yaml_node_t *sems; /* the semaphores list, or NULL */
} weights_doc;

/* The value of a mapping's key; *again, when given, is the key's second
 * appearance if it has one (libcyaml does not see repeats of a key it
 * skips). */
static yaml_node_t *map_value(yaml_document_t *d, const yaml_node_t *map, const char *key,
                              yaml_node_t **again)
{
    yaml_node_t *found = NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (!k || k->type != YAML_SCALAR_NODE || strcmp((char *)k->data.scalar.value, key) != 0)
            continue;
        if (found) {
            if (again)
                *again = k;
            return found;
        }
        found = yaml_document_get_node(d, p->value);
    }
    return found;
}

static int doc_open(loader *ld, weights_doc *wd)
{
    yaml_parser_t p;
    memset(wd, 0, sizeof(*wd));
    if (!yaml_parser_initialize(&p)) {
        fputs("sluiced: out of memory\n", stderr);
        abort();
    }
    yaml_parser_set_input_string(&p, ld->text, ld->len);
    wd->loaded = yaml_parser_load(&p, &wd->doc);
    if (!wd->loaded) /* libcyaml read the same text: only memory can fail here */
        snprintf(ld->err, ld->errlen, "%s: cannot read the weights: %s", ld->file,
                 p.problem ? p.problem : "libyaml failed");
    yaml_parser_delete(&p);
    if (!wd->loaded)
        return -1;
    yaml_node_t *root = yaml_document_get_root_node(&wd->doc);
    if (root && root->type == YAML_MAPPING_NODE)
        wd->sems = map_value(&wd->doc, root, "semaphores", NULL);
    if (wd->sems && wd->sems->type != YAML_SEQUENCE_NODE)
        wd->sems = NULL;
    return 0;
}

static void doc_close(weights_doc *wd)
{
    if (wd->loaded)
        yaml_document_delete(&wd->doc);
}

/* The i-th semaphore's mapping, or NULL. */
static yaml_node_t *doc_entry(weights_doc *wd, size_t i)
{
    if (!wd->sems ||
        i >= (size_t)(wd->sems->data.sequence.items.top - wd->sems->data.sequence.items.start))
        return NULL;
    yaml_node_t *e = yaml_document_get_node(&wd->doc, wd->sems->data.sequence.items.start[i]);
    return e && e->type == YAML_MAPPING_NODE ? e : NULL;
}

/* One "KEY: WEIGHT" of semaphores[i].weights into w[j], after w[0..j-1]
 * (keys point into the document). */
static int conv_weight(loader *ld, weights_doc *wd, const yaml_node_pair_t *pair, size_t i,
                       sl_weight *w, size_t j)
{
    char path[PATH_CAP];
    yaml_node_t *k = yaml_document_get_node(&wd->doc, pair->key);
    yaml_node_t *v = yaml_document_get_node(&wd->doc, pair->value);
    snprintf(path, sizeof(path), "semaphores[%zu].weights", i);
    ld->here = &k->start_mark;
    if (k->type != YAML_SCALAR_NODE)
        return fail(ld, path, "a rebalance key must be a single value, like paying, not %s",
                    k->type == YAML_SEQUENCE_NODE ? "a list" : "keys with values");
    const char *key = (const char *)k->data.scalar.value;
    if (k->data.scalar.length == 0 || k->data.scalar.length > SL_NAME_MAX ||
        strlen(key) != k->data.scalar.length)
        return fail(ld, path, MSG_WEIGHT_KEY_FMT, key);
    size_t at = strcspn(key, SL_CONTROL_BYTES);
    if (key[at])
        return fail(ld, path,
                    "a rebalance key has a control character (byte 0x%02x) at position %zu; use "
                    "printable characters only, as a claim's rebalance_key does",
                    (unsigned char)key[at], at + 1);
    snprintf(path, sizeof(path), "semaphores[%zu].weights.%.*s", i, KEY_IN_PATH, key);
    for (size_t e = 0; e < j; e++)
        if (strcmp(w[e].key, key) == 0)
            return fail(ld, path, "is given twice; keep one");
    ld->here = &v->start_mark;
    if (v->type != YAML_SCALAR_NODE)
        return fail(ld, path, "expected a single value, found %s; write a weight, like 3",
                    v->type == YAML_SEQUENCE_NODE ? "a list" : "keys with values");
    const char *text = (const char *)v->data.scalar.value;
    uint64_t weight = 0;
    if (conv_range(ld, path, text, 1, SL_WEIGHT_MAX, "3", &weight) != 0)
        return -1;
    w[j] = (sl_weight){key, (uint32_t)weight};
    return 0;
}

/* semaphores[i].weights, entry being the semaphore's mapping node. */
static int conv_weights(loader *ld, weights_doc *wd, const yaml_node_t *entry, size_t i,
                        sl_conf_sem *s)
{
    char path[PATH_CAP];
    yaml_node_t *again = NULL;
    yaml_node_t *node = entry ? map_value(&wd->doc, entry, "weights", &again) : NULL;
    snprintf(path, sizeof(path), "semaphores[%zu].weights", i);
    ld->here = again ? &again->start_mark : node ? &node->start_mark : NULL;
    if (again)
        return fail(ld, path, "is given twice; keep one");
    if (!node || (node->type == YAML_SCALAR_NODE && node->data.scalar.length == 0 &&
                  node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE))
        return 0; /* left out, or "weights:" and nothing, like an empty section */
    if (s->strategy != SL_REBALANCED)
        return fail(ld, path, MSG_REBALANCED_ONLY);
    if (node->type != YAML_MAPPING_NODE)
        return fail(ld, path,
                    "expected keys with values (a rebalance key and its weight, like paying: 3), "
                    "found %s",
                    node->type == YAML_SEQUENCE_NODE ? "a list" : "a single value");
    size_t n = (size_t)(node->data.mapping.pairs.top - node->data.mapping.pairs.start);
    if (n > SL_WEIGHTS_MAX)
        return fail(ld, path, MSG_WEIGHTS_MAX_FMT, n);
    sl_weight *w = sl__conf_xcalloc(n, sizeof(*w));
    int rc = 0;
    for (size_t j = 0; rc == 0 && j < n; j++)
        rc = conv_weight(ld, wd, &node->data.mapping.pairs.start[j], i, w, j);
    if (rc == 0) {
        s->rules.weights = sl__conf_weights_copy(w, n);
        s->rules.nweights = n;
    }
    free(w);
    return rc;
}

/* ---- a semaphore ------------------------------------------------------------- */

/* path = "semaphores[i].KEY" */
static const char *sem_path(char *path, size_t i, const char *key)
{
    snprintf(path, PATH_CAP, "semaphores[%zu].%s", i, key);
    return path;
}

/* Each rule below refuses a key given where it does not apply, even at its
 * default, as the API does (conf.c checks the values too). */
static int conv_preempt(loader *ld, const raw_sem *rs, size_t i, sl_sem_rules *r)
{
    char path[PATH_CAP];
    if (rs->preempt && conv_bool(ld, sem_path(path, i, "preempt"), rs->preempt, &r->preempt) != 0)
        return -1;
    r->preempt_grace_ms = r->preempt ? CONF_PREEMPT_GRACE_DEFAULT_MS : 0;
    if (!rs->preempt_grace)
        return 0;
    sem_path(path, i, "preempt_grace");
    if (!r->preempt)
        return fail(ld, path, MSG_GRACE_NEEDS_PREEMPT);
    return conv_duration(ld, path, rs->preempt_grace, &r->preempt_grace_ms);
}

static int conv_queue(loader *ld, const raw_sem *rs, size_t i, sl_sem_rules *r)
{
    char path[PATH_CAP];
    uint64_t v = 0;
    if (rs->max_pending && conv_count(ld, sem_path(path, i, "max_pending"), rs->max_pending,
                                      SL_LIMIT_MAX, "50", &v) != 0)
        return -1;
    r->max_pending = (uint32_t)v;
    if (!rs->on_full)
        return 0;
    sem_path(path, i, "on_full");
    if (sl_on_full_parse(rs->on_full, &r->on_full) != 0)
        return fail(ld, path,
                    "\"%.100s\" is not a way to meet a full queue; use reject (a claim arriving "
                    "at a full queue is refused) or drop_oldest (the oldest waiter gives way)",
                    rs->on_full);
    if (r->max_pending == 0)
        return fail(ld, path, MSG_ON_FULL_NEEDS_MAX_PENDING);
    return 0;
}

static int conv_default_weight(loader *ld, const raw_sem *rs, size_t i, sl_conf_sem *s)
{
    char path[PATH_CAP];
    uint64_t v = 0;
    if (!rs->default_weight)
        return 0;
    sem_path(path, i, "default_weight");
    if (s->strategy != SL_REBALANCED)
        return fail(ld, path, MSG_REBALANCED_ONLY);
    if (conv_range(ld, path, rs->default_weight, 1, SL_WEIGHT_MAX, "1", &v) != 0)
        return -1;
    s->rules.default_weight = (uint32_t)v;
    return 0;
}

static int conv_rate(loader *ld, const raw_sem *rs, size_t i, sl_sem_rules *r)
{
    char path[PATH_CAP];
    uint64_t v = 0;
    if (rs->burst && !rs->rate)
        return fail(ld, sem_path(path, i, "burst"), MSG_BURST_NEEDS_RATE);
    if (!rs->rate)
        return 0;
    const char *problem = sl_rate_problem(rs->rate);
    if (problem)
        return fail(ld, sem_path(path, i, "rate"),
                    "\"%.100s\" %s; write N/PERIOD, a number of grants per a duration, like "
                    "100/1m or 5/1s",
                    rs->rate, problem);
    sl_rate_parse(rs->rate, &r->rate_count, &r->rate_period_ms);
    if (rs->burst &&
        conv_range(ld, sem_path(path, i, "burst"), rs->burst, 1, SL_LIMIT_MAX, "5", &v) != 0)
        return -1;
    r->rate_burst = (uint32_t)v;
    return 0;
}

/* The scheduling rules, in the order of the keys in the schema. */
static int conv_rules(loader *ld, weights_doc *wd, const raw_sem *rs, size_t i, sl_conf_sem *s)
{
    char path[PATH_CAP];
    if (conv_preempt(ld, rs, i, &s->rules) != 0 || conv_queue(ld, rs, i, &s->rules) != 0)
        return -1;
    int rc = conv_weights(ld, wd, doc_entry(wd, i), i, s);
    ld->here = NULL; /* it pointed into the document, which goes */
    if (rc != 0 || conv_default_weight(ld, rs, i, s) != 0 || conv_rate(ld, rs, i, &s->rules) != 0)
        return -1;
    if (rs->backdate &&
        conv_duration(ld, sem_path(path, i, "backdate"), rs->backdate, &s->rules.backdate_ms) != 0)
        return -1;
    return 0;
}

static int conv_semaphore(loader *ld, weights_doc *wd, const raw_sem *rs, size_t i, sl_conf_sem *s)
{
    char path[PATH_CAP];
    uint64_t limit = 0;
    s->name = sl__conf_xstrdup(rs->name ? rs->name : "");
    if (conv_count(ld, sem_path(path, i, "limit"), rs->limit ? rs->limit : "", SL_LIMIT_MAX,
                   "65536", &limit) != 0)
        return -1;
    s->limit = (uint32_t)limit;
    s->strategy = SL_STRICT;
    sem_path(path, i, "strategy");
    if (rs->strategy && sl_strategy_parse(rs->strategy, &s->strategy) != 0)
        return fail(ld, path, "\"%.100s\" is not a strategy; use strict, skip or rebalanced",
                    rs->strategy);
    if (rs->lease && conv_duration(ld, sem_path(path, i, "lease"), rs->lease, &s->lease_ms) != 0)
        return -1;
    s->overtake_ms = SL_OVERTAKE_DEFAULT_MS;
    sem_path(path, i, "overtake_limit");
    if (rs->overtake_limit && s->strategy != SL_SKIP)
        return fail(ld, path,
                    "applies to the skip strategy only; leave it out or use "
                    "strategy: skip");
    if (rs->overtake_limit && conv_duration(ld, path, rs->overtake_limit, &s->overtake_ms) != 0)
        return -1;
    return conv_rules(ld, wd, rs, i, s);
}

static int conv_semaphores(loader *ld, const raw_conf *r, sl_conf *n)
{
    weights_doc wd;
    if (doc_open(ld, &wd) != 0)
        return -1;
    sl__conf_sems_free(n->semaphores, n->nsemaphores);
    n->nsemaphores = r->semaphores_count;
    n->semaphores = sl__conf_xcalloc(r->semaphores_count, sizeof(*n->semaphores));
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < r->semaphores_count; i++)
        rc = conv_semaphore(ld, &wd, &r->semaphores[i], i, &n->semaphores[i]);
    doc_close(&wd);
    return rc;
}

static int conv_tokens(loader *ld, const raw_conf *r, sl_conf *n)
{
    char path[PATH_CAP];
    sl__conf_tokens_free(n->tokens, n->ntokens);
    n->ntokens = r->tokens_count;
    n->tokens = sl__conf_xcalloc(r->tokens_count, sizeof(*n->tokens));
    for (size_t i = 0; i < r->tokens_count; i++) {
        const raw_token *rt = &r->tokens[i];
        sl_conf_token *t = &n->tokens[i];
        t->name = sl__conf_xstrdup(rt->name ? rt->name : "");
        t->token = sl__conf_xstrdup(rt->token ? rt->token : "");
        snprintf(path, sizeof(path), "tokens[%zu].admin", i);
        if (rt->admin && conv_bool(ld, path, rt->admin, &t->admin) != 0)
            return -1;
        if (rt->prefixes_count) {
            t->prefixes = sl__conf_xcalloc(rt->prefixes_count, sizeof(char *));
            t->nprefixes = rt->prefixes_count;
            for (size_t j = 0; j < rt->prefixes_count; j++)
                t->prefixes[j] = sl__conf_xstrdup(rt->prefixes[j] ? rt->prefixes[j] : "");
        }
    }
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
        return fail(ld, "tls.min_version",
                    "\"%.100s\" is not a TLS version this server serves; use 1.2 or 1.3",
                    t->min_version);
    return 0;
}

static int conv_all(loader *ld, const raw_conf *r, sl_conf *n)
{
    if (r->listen)
        sl__conf_replace_str(&n->listen, r->listen);
    if (r->store)
        sl__conf_replace_str(&n->store, r->store);
    if (r->advertise)
        sl__conf_replace_str(&n->advertise, r->advertise);
    if (r->leader_timeout &&
        conv_duration(ld, "leader_timeout", r->leader_timeout, &n->leader_timeout_ms) != 0)
        return -1;
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
    if (r->default_timeout &&
        conv_duration(ld, "default_timeout", r->default_timeout, &n->default_timeout_ms) != 0)
        return -1;
    if (r->backdate_skew &&
        conv_duration(ld, "backdate_skew", r->backdate_skew, &n->backdate_skew_ms) != 0)
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
                conv_duration(ld, durations[i].path, durations[i].raw, durations[i].dst) != 0)
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
        };
        for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            uint64_t v = 0;
            if (!sizes[i].raw)
                continue;
            if (conv_count(ld, sizes[i].path, sizes[i].raw, SIZE_MAX, "65536", &v) != 0)
                return -1;
            *sizes[i].dst = (size_t)v;
        }
    }
    if (r->tls && conv_tls(ld, r->tls, n) != 0)
        return -1;
    /* The file's lists replace the ones before, when it has any. */
    if (r->semaphores_count && conv_semaphores(ld, r, n) != 0)
        return -1;
    if (r->tokens_count && conv_tokens(ld, r, n) != 0)
        return -1;
    if (r->insecure_open && conv_bool(ld, "insecure_open", r->insecure_open, &n->insecure_open) != 0)
        return -1;
    if (r->allowed_hosts_count) {
        for (size_t i = 0; i < n->nallowed_hosts; i++)
            free(n->allowed_hosts[i]);
        free(n->allowed_hosts);
        n->nallowed_hosts = r->allowed_hosts_count;
        n->allowed_hosts = sl__conf_xcalloc(r->allowed_hosts_count, sizeof(char *));
        for (size_t i = 0; i < r->allowed_hosts_count; i++)
            n->allowed_hosts[i] =
                sl__conf_xstrdup(r->allowed_hosts[i] ? r->allowed_hosts[i] : "");
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
        cyaml_load_data(ld.text, ld.len, &cfg, &top_schema, (cyaml_data_t **)&raw, NULL);
    if (e != CYAML_OK) {
        cyaml_failed(&ld, e);
        free(ld.text);
        return -1;
    }

    sl_conf next;
    sl__conf_dup(&next, c);
    int rc = raw ? conv_all(&ld, raw, &next) : 0;
    if (rc == 0) {
        char where[PATH_CAP], msg[MSG_CAP];
        if (sl__conf_problem(&next, where, msg) != 0)
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
