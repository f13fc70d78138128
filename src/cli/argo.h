/* argo.h - what argo.c, argo_import.c, argo_flags.c and argo_yaml.c share: Kubernetes YAML read with
 * libyaml's document API (yaml_parser_load), and messages that point at
 * FILE:LINE:COLUMN.
 *
 * A file is read whole (at most ARGO_MAX_INPUT bytes, nested at most
 * ARGO_MAX_DEPTH deep) and every document of it is loaded; the objects are the documents' roots, and the items of
 * a `kind: List`. Lookups never recurse on their own, so anchors and
 * aliases (even cyclic ones) cost nothing beyond what is asked. */
#ifndef SLUICE_CLI_ARGO_H
#define SLUICE_CLI_ARGO_H

#include <yaml.h>

#include "cli.h"

#define ARGO_MAX_INPUT ((size_t)4 << 20) /* 4 MiB: far more than any manifest */
#define ARGO_MAX_DEPTH 100                 /* mappings and lists within each other */

typedef struct ay_file {
    const char *shown; /* the path for messages, "<stdin>" for "-" */
    yaml_document_t *docs;
    size_t ndocs;
} ay_file;

/* One Kubernetes object: a mapping, in the document that holds it. */
typedef struct ay_obj {
    yaml_document_t *doc;
    yaml_node_t *node;
} ay_obj;

/* Reads path ("-": stdin) and loads its documents. 0, or an exit status
 * after a message saying what is wrong with the file and where. */
int ay_load(const cli *c, const char *path, ay_file *f);
void ay_free(ay_file *f);

/* Every object of the file, in order (Lists flattened one level): a
 * malloc'd array of *n entries (free it). A document that is not a
 * mapping is an error (the exit status, after a message). */
int ay_objects(const cli *c, const ay_file *f, ay_obj **out, size_t *n);

/* The value of key in a mapping, or NULL (also when map is no mapping). */
yaml_node_t *ay_get(yaml_document_t *d, const yaml_node_t *map, const char *key);
/* A scalar's text; NULL for a missing node, a non-scalar, or a plain
 * null (empty, ~, null). */
const char *ay_str(const yaml_node_t *n);
/* ay_str of ay_get. */
const char *ay_get_str(yaml_document_t *d, const yaml_node_t *map, const char *key);
/* Whether n is missing or a plain null. */
bool ay_null(const yaml_node_t *n);
bool ay_is_map(const yaml_node_t *n);
bool ay_is_seq(const yaml_node_t *n);

/* "sluice: FILE:LINE:COL: MESSAGE" on stderr (no position when n is
 * NULL); returns c->usage_status. */
int ay_error(const cli *c, const ay_file *f, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The same with "sluice: warning: " and no status. */
void ay_warn(const ay_file *f, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with "sluice: note: ": what the output stands for. */
void ay_note(const ay_file *f, const yaml_node_t *n, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "FILE:LINE:COL" of a node into buf. */
void ay_where(const ay_file *f, const yaml_node_t *n, char *buf, size_t cap);

/* Loads a string (a ConfigMap value holding YAML or JSON) as one document
 * into *doc: true, or false with libyaml's problem in why. */
bool ay_load_string(const char *s, yaml_document_t *doc, char *why, size_t cap);

/* realloc, or exit after "out of memory" (cli_oom). */
void *argo_xrealloc(void *p, size_t n);

/* A sluice lock name (docs/configuration.md): 1 to 253 of A-Z a-z 0-9 . _
 * - / : =, no leading or trailing '/', no "//", no "." or ".." segment. */
bool argo_name_ok(const char *s);

/* s as one shell word: unchanged when it needs no quotes, else in single
 * quotes (a ' inside as '\''). Appended to out. */
void argo_shell_quote(const char *s, cli_buf *out);
/* s as a JSON string (with its quotes), appended to out. */
void argo_json_str(const char *s, cli_buf *out);

/* ---- argo.c: what both commands share ---- */

enum {
    ARGO_NAMESPACE = 1,
    ARGO_APPLY,
    ARGO_TEMPLATE,
    ARGO_CONFIGMAP,
    ARGO_STRATEGY_KEYS,
};

/* The rule of lock names, in the words of messages. */
extern const char argo_name_rule[];

/* What the flags of both commands set. */
typedef struct argo_opts {
    const char *ns, *tmpl;
    bool apply;
    bool strategy_keys;      /* import: sluice's KEY-strategy convention */
    const char **configmaps; /* import: --configmap NAME..., argc entries */
    size_t nconfigmaps;
} argo_opts;

/* The flags of both commands and their positional arguments (pos: argc
 * entries, *n used; o->configmaps allocated, free it). 0, -1 after
 * --help, or an exit status. */
int argo_parse_args(cli *c, const cli_flag *flags, int argc, char **argv, const char **pos,
                    int *n, argo_opts *o);

/* Warns (FILE:LINE:COL of the key) about each key of map that is not in
 * known (NULL-terminated): "KEY is not a key of WHAT (did you mean K?)". */
void argo_check_keys(const ay_file *f, yaml_document_t *d, const yaml_node_t *map,
                     const char *what, const char *const *known);
/* The Kubernetes kind of an object, or NULL. */
const char *argo_kind(const ay_obj *o);
/* metadata.name, else metadata.generateName (a Workflow's), or NULL. */
const char *argo_name(const ay_obj *o);

#endif
