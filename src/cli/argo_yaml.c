/* argo_yaml.c - Kubernetes YAML for the Argo commands (argo.h): reading a
 * bounded file, loading its documents with libyaml, looking keys up, and
 * messages that point at FILE:LINE:COLUMN. Also the small text helpers of
 * argo.c: lock names, shell words and JSON strings. */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "argo.h"

/* ---- reading ---------------------------------------------------------------------- */

void *argo_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        cli_oom();
    return q;
}

static int read_error(const cli *c, const char *shown, int err)
{
    fprintf(stderr, "sluice: cannot read %s: %s\n", shown, strerror(err));
    if (err == ENOENT)
        fputs("Give the path of a YAML file, or - to read standard input.\n", stderr);
    return c->usage_status;
}

/* The whole input into *out (*len bytes, NUL-terminated). */
static int read_all(const cli *c, const char *path, const char *shown, char **out, size_t *len)
{
    bool std = strcmp(path, "-") == 0;
    FILE *fp = std ? stdin : fopen(path, "rb");
    if (!fp)
        return read_error(c, shown, errno);
    size_t cap = 64 * 1024, n = 0;
    char *buf = cli_xmalloc(cap);
    errno = 0;
    for (;;) {
        if (n == cap - 1) {
            cap *= 2;
            buf = argo_xrealloc(buf, cap);
        }
        size_t want = cap - 1 - n;
        if (n + want > ARGO_MAX_INPUT + 1)
            want = ARGO_MAX_INPUT + 1 - n;
        size_t got = fread(buf + n, 1, want, fp);
        n += got;
        if (got < want || n > ARGO_MAX_INPUT)
            break;
    }
    int err = ferror(fp) ? (errno ? errno : EIO) : 0;
    if (!std)
        fclose(fp);
    if (err) {
        free(buf);
        return read_error(c, shown, err);
    }
    if (n > ARGO_MAX_INPUT) {
        free(buf);
        fprintf(stderr,
                "sluice: %s is larger than %zu MiB, too large for Kubernetes manifests; give the "
                "file with the ConfigMaps or the workflow alone\n",
                shown, ARGO_MAX_INPUT >> 20);
        return c->usage_status;
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* ---- loading ---------------------------------------------------------------------- */

static int parse_error(const cli *c, const ay_file *f, const yaml_parser_t *p)
{
    if (p->error == YAML_MEMORY_ERROR)
        cli_oom();
    if (p->error == YAML_READER_ERROR) {
        fprintf(stderr, "sluice: %s: not YAML: %s at byte %zu\n", f->shown,
                p->problem ? p->problem : "unreadable text", p->problem_offset);
        return c->usage_status;
    }
    fprintf(stderr, "sluice: %s:%zu:%zu: not YAML: %s", f->shown, p->problem_mark.line + 1,
            p->problem_mark.column + 1, p->problem ? p->problem : "cannot parse");
    if (p->context)
        fprintf(stderr, " (%s at %zu:%zu)", p->context, p->context_mark.line + 1,
                p->context_mark.column + 1);
    fputs("\nGive Kubernetes YAML, as kubectl get -o yaml prints it.\n", stderr);
    return c->usage_status;
}

/* libyaml's scanner spends time in proportion to the flow nesting depth on
 * every token: 4 MiB of '[' would keep it busy for hours. A first pass over
 * the events refuses nesting deeper than ARGO_MAX_DEPTH; it stops there,
 * so its own cost stays small. */
static int check_depth(const cli *c, const ay_file *f, const char *text, size_t len)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        cli_oom();
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0, st = 0;
    for (bool end = false; !end && !st;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&p, &ev)) {
            st = parse_error(c, f, &p);
            break;
        }
        end = ev.type == YAML_STREAM_END_EVENT;
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT)
            depth++;
        else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT)
            depth--;
        if (depth > ARGO_MAX_DEPTH) {
            fprintf(stderr,
                    "sluice: %s:%zu:%zu: nested more than %d deep; Kubernetes manifests never "
                    "are: give the file with the ConfigMaps or the workflow alone\n",
                    f->shown, ev.start_mark.line + 1, ev.start_mark.column + 1, ARGO_MAX_DEPTH);
            st = c->usage_status;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    return st;
}

static void add_doc(ay_file *f, const yaml_document_t *doc, size_t *cap)
{
    if (f->ndocs == *cap) {
        *cap = *cap ? *cap * 2 : 4;
        f->docs = argo_xrealloc(f->docs, *cap * sizeof(*f->docs));
    }
    f->docs[f->ndocs++] = *doc;
}

int ay_load(const cli *c, const char *path, ay_file *f)
{
    memset(f, 0, sizeof(*f));
    f->shown = strcmp(path, "-") == 0 ? "<stdin>" : path;
    char *text = NULL;
    size_t len = 0;
    int st = read_all(c, path, f->shown, &text, &len);
    if (st)
        return st;
    if ((st = check_depth(c, f, text, len))) {
        free(text);
        return st;
    }
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        cli_oom();
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    size_t cap = 0;
    for (;;) {
        yaml_document_t doc;
        if (!yaml_parser_load(&p, &doc)) {
            st = parse_error(c, f, &p);
            break;
        }
        if (!yaml_document_get_root_node(&doc)) { /* the end of the stream */
            yaml_document_delete(&doc);
            break;
        }
        add_doc(f, &doc, &cap);
    }
    yaml_parser_delete(&p);
    free(text);
    if (st)
        ay_free(f);
    return st;
}

void ay_free(ay_file *f)
{
    for (size_t i = 0; i < f->ndocs; i++)
        yaml_document_delete(&f->docs[i]);
    free(f->docs);
    f->docs = NULL;
    f->ndocs = 0;
}

bool ay_load_string(const char *s, yaml_document_t *doc, char *why, size_t cap)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p))
        cli_oom();
    yaml_parser_set_input_string(&p, (const unsigned char *)s, strlen(s));
    bool ok = yaml_parser_load(&p, doc) != 0;
    if (!ok) {
        if (p.error == YAML_MEMORY_ERROR)
            cli_oom();
        snprintf(why, cap, "%s at %zu:%zu of the text", p.problem ? p.problem : "cannot parse",
                 p.problem_mark.line + 1, p.problem_mark.column + 1);
    }
    yaml_parser_delete(&p);
    return ok;
}

/* ---- objects ---------------------------------------------------------------------- */

static void add_obj(ay_obj **arr, size_t *n, size_t *cap, yaml_document_t *d, yaml_node_t *node)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        *arr = argo_xrealloc(*arr, *cap * sizeof(**arr));
    }
    (*arr)[(*n)++] = (ay_obj){d, node};
}

static bool is_list(yaml_document_t *d, const yaml_node_t *root)
{
    const char *kind = ay_get_str(d, root, "kind");
    return kind && strcmp(kind, "List") == 0 && ay_is_seq(ay_get(d, root, "items"));
}

static int not_object(const cli *c, const ay_file *f, const yaml_node_t *n)
{
    return ay_error(c, f, n,
                    "not a Kubernetes object: expected a mapping with apiVersion, kind and "
                    "metadata");
}

int ay_objects(const cli *c, const ay_file *f, ay_obj **out, size_t *n)
{
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    for (size_t i = 0; i < f->ndocs; i++) {
        yaml_document_t *d = &f->docs[i];
        yaml_node_t *root = yaml_document_get_root_node(d);
        if (ay_null(root)) /* an empty document between two "---" */
            continue;
        if (!ay_is_map(root)) {
            free(*out);
            *out = NULL;
            return not_object(c, f, root);
        }
        if (!is_list(d, root)) {
            add_obj(out, n, &cap, d, root);
            continue;
        }
        yaml_node_t *items = ay_get(d, root, "items");
        for (yaml_node_item_t *it = items->data.sequence.items.start;
             it < items->data.sequence.items.top; it++) {
            yaml_node_t *item = yaml_document_get_node(d, *it);
            if (!ay_is_map(item)) {
                free(*out);
                *out = NULL;
                return not_object(c, f, item);
            }
            add_obj(out, n, &cap, d, item);
        }
    }
    return 0;
}

/* ---- lookups ---------------------------------------------------------------------- */

bool ay_is_map(const yaml_node_t *n)
{
    return n && n->type == YAML_MAPPING_NODE;
}

bool ay_is_seq(const yaml_node_t *n)
{
    return n && n->type == YAML_SEQUENCE_NODE;
}

bool ay_null(const yaml_node_t *n)
{
    if (!n)
        return true;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *s = (const char *)n->data.scalar.value;
    return !*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
           strcmp(s, "NULL") == 0;
}

const char *ay_str(const yaml_node_t *n)
{
    if (!n || n->type != YAML_SCALAR_NODE || ay_null(n))
        return NULL;
    return (const char *)n->data.scalar.value;
}

yaml_node_t *ay_get(yaml_document_t *d, const yaml_node_t *map, const char *key)
{
    if (!ay_is_map(map))
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const char *k = ay_str(yaml_document_get_node(d, p->key));
        if (k && strcmp(k, key) == 0)
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

const char *ay_get_str(yaml_document_t *d, const yaml_node_t *map, const char *key)
{
    return ay_str(ay_get(d, map, key));
}

/* ---- messages --------------------------------------------------------------------- */

void ay_where(const ay_file *f, const yaml_node_t *n, char *buf, size_t cap)
{
    if (n)
        snprintf(buf, cap, "%s:%zu:%zu", f->shown, n->start_mark.line + 1,
                 n->start_mark.column + 1);
    else
        snprintf(buf, cap, "%s", f->shown);
}

__attribute__((format(printf, 4, 0))) static void vmsg(const char *kind, const ay_file *f,
                                                       const yaml_node_t *n, const char *fmt,
                                                       va_list ap)
{
    char where[1100];
    ay_where(f, n, where, sizeof(where));
    fprintf(stderr, "sluice: %s%s: ", kind, where);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int ay_error(const cli *c, const ay_file *f, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("", f, n, fmt, ap);
    va_end(ap);
    return c->usage_status;
}

void ay_warn(const ay_file *f, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", f, n, fmt, ap);
    va_end(ap);
}

void ay_note(const ay_file *f, const yaml_node_t *n, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("note: ", f, n, fmt, ap);
    va_end(ap);
}

/* ---- names, shell words, JSON ------------------------------------------------------ */

static bool name_char(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           strchr("._-/:=", ch) != NULL;
}

bool argo_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 253 || s[0] == '/' || s[n - 1] == '/' || strstr(s, "//"))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!name_char(s[i]))
            return false;
    /* no "." or ".." segment */
    for (const char *seg = s; seg; seg = strchr(seg, '/') ? strchr(seg, '/') + 1 : NULL) {
        size_t len = strcspn(seg, "/");
        if ((len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
            return false;
    }
    return true;
}

void argo_shell_quote(const char *s, cli_buf *out)
{
    bool plain = *s != '\0';
    for (const char *p = s; *p && plain; p++)
        plain = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                strchr("_./:=@%+,-", *p) != NULL;
    if (plain) {
        cli_buf_add(out, s);
        return;
    }
    cli_buf_add(out, "'");
    for (const char *p = s; *p; p++) {
        char one[2] = {*p, '\0'};
        cli_buf_add(out, *p == '\'' ? "'\\''" : one);
    }
    cli_buf_add(out, "'");
}

void argo_json_str(const char *s, cli_buf *out)
{
    cli_buf_add(out, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            cli_buf_addf(out, "\\%c", *p);
        else if (*p == '\n')
            cli_buf_add(out, "\\n");
        else if (*p == '\t')
            cli_buf_add(out, "\\t");
        else if (*p < 0x20)
            cli_buf_addf(out, "\\u%04x", *p);
        else {
            char one[2] = {(char)*p, '\0'};
            cli_buf_add(out, one);
        }
    }
    cli_buf_add(out, "\"");
}
