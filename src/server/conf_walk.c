/* conf_walk.c - where in the configuration file a key or value is, and
 * what libcyaml refused there, found by walking the file with libyaml
 * alongside the schema (conf_file.c's head comment tells why). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_load.h"

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
            walk_node(w, &sl__conf_top_schema, "", &ev);
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&w->parser);
}

/* Where a key path's value (or key) is in the file. */
bool sl__conf_locate(const loader *ld, const char *path, bool key, yaml_mark_t *mark)
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
int sl__conf_fail(loader *ld, const char *path, const char *fmt, ...)
{
    char msg[MSG_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    yaml_mark_t m;
    if (ld->here)
        m = *ld->here;
    if (ld->here || sl__conf_locate(ld, path, false, &m))
        snprintf(ld->err, ld->errlen, "%s:%zu:%zu: %s: %s", ld->file, m.line + 1, m.column + 1,
                 path, msg);
    else
        snprintf(ld->err, ld->errlen, "%s: %s: %s", ld->file, path, msg);
    return -1;
}

/* libcyaml refused the file: say what and where (see the file comment). */
void sl__conf_cyaml_failed(loader *ld, cyaml_err_t e)
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
