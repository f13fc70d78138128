/* argo.c - bringing Argo Workflows' locks over (docs/cli.md, "Coming from
 * Argo Workflows"):
 *
 *   sluice import argo [--namespace NS] [--apply] FILE...
 *       Argo's semaphore ConfigMaps as sluice semaphores named as Argo
 *       names them (NS/ConfigMap/NAME/KEY): printed as a sluiced.yaml
 *       fragment, or configured on the server with --apply.
 *   sluice argo flags [--namespace NS] [--template NAME] FILE
 *       a workflow's synchronization block as `sluice run` flags.
 *
 * The YAML is read by argo_yaml.c (libyaml's document API); the server is
 * reached through libsluice alone (sl_client_semaphore_set). Every input
 * error names FILE:LINE:COLUMN and exits with the usage status. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "argo.h"

enum { AF_NAMESPACE = 1, AF_APPLY, AF_TEMPLATE };

static const cli_flag import_flags[] = {
    {"namespace", true, AF_NAMESPACE},
    {"apply", false, AF_APPLY},
    {0},
};

static const cli_flag flags_flags[] = {
    {"namespace", true, AF_NAMESPACE},
    {"template", true, AF_TEMPLATE},
    {0},
};

#define MAX_LIMIT 1000000000LL /* the server's largest semaphore limit */
/* Data keys read in all: more than a file of ARGO_MAX_INPUT bytes can hold
 * without YAML aliases, which could otherwise make a small file cost
 * hours (the same data under a million ConfigMaps). */
#define MAX_KEYS (ARGO_MAX_INPUT / 4)
#define STRATEGY_SUFFIX "-strategy"
#define STRATEGIES_KEY "semaphoreStrategies"

static const char name_rule[] = "1 to 253 of A-Z a-z 0-9 . _ - / : =, no empty, . or .. segment";

/* ---- shared -------------------------------------------------------------------------- */

/* The flags of both commands and their positional arguments (pos: argc
 * entries, *n used). 0, -1 after --help, or an exit status. */
static int parse_args(cli *c, const cli_flag *flags, int argc, char **argv, const char **pos,
                      int *n, const char **ns, const char **tmpl, bool *apply)
{
    int i = 0;
    const char *val = NULL;
    *n = 0;
    for (;;) {
        int r = cli_flag_next(c, flags, argc, argv, &i, &val);
        if (r == CLI_HELP)
            return -1;
        if (r == CLI_BAD)
            return c->usage_status;
        if (r == CLI_END)
            break;
        if (r == CLI_ARG)
            pos[(*n)++] = val;
        else if (r == AF_NAMESPACE && !*val)
            return cli_usage(c, "--namespace needs a namespace");
        else if (r == AF_NAMESPACE)
            *ns = val;
        else if (r == AF_TEMPLATE)
            *tmpl = val;
        else if (r == AF_APPLY)
            *apply = true;
    }
    for (; i < argc; i++) /* after "--": files, even one called "-x" */
        pos[(*n)++] = argv[i];
    return 0;
}

/* The Kubernetes kind of an object, or NULL. */
static const char *kind_of(const ay_obj *o)
{
    return ay_get_str(o->doc, o->node, "kind");
}

/* metadata.name, else metadata.generateName (a Workflow's), or NULL. */
static const char *name_of(const ay_obj *o)
{
    yaml_node_t *meta = ay_get(o->doc, o->node, "metadata");
    const char *name = ay_get_str(o->doc, meta, "name");
    return name ? name : ay_get_str(o->doc, meta, "generateName");
}

/* ---- import: one ConfigMap ---------------------------------------------------------------- */

typedef struct import_sem {
    char *name;
    long long limit;
    const char *strategy; /* "strict" or "rebalanced" (static) */
    char *where;          /* FILE:LINE:COL of its key, for "given twice" */
    size_t order;
} import_sem;

typedef struct importer {
    cli *c;
    const char *ns_flag;
    import_sem *sems;
    size_t nsems, cap;
    size_t nconfigmaps;
    size_t nkeys; /* data keys read, at most MAX_KEYS */
} importer;

/* One data key of a ConfigMap. */
typedef struct cm_key {
    const char *key;
    yaml_node_t *kn, *vn;
    bool not_semaphore;   /* KEY-strategy or semaphoreStrategies */
    const char *strategy; /* sluice's, from a strategy key; NULL: strict */
    const char *argo;     /* the same as written (default, rebalanced) */
} cm_key;

typedef struct configmap {
    importer *im;
    const ay_file *f;
    yaml_document_t *d;
    yaml_node_t *obj, *data;
    const char *name, *ns;
    cm_key *keys;    /* in the file's order */
    cm_key **sorted; /* by key, for lookups */
    size_t nkeys;
    yaml_document_t inner; /* semaphoreStrategies given as a string */
    bool has_inner;
} configmap;

/* Argo's strategy as sluice's, or NULL. */
static const char *strategy_of(const char *argo)
{
    if (!argo)
        return NULL;
    if (strcmp(argo, "default") == 0)
        return "strict";
    if (strcmp(argo, "rebalanced") == 0)
        return "rebalanced";
    return NULL;
}

static bool all_digits(const char *s)
{
    if (!s || !*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp((*(cm_key *const *)a)->key, (*(cm_key *const *)b)->key);
}

/* The data key `key`, or NULL. */
static cm_key *find_key(const configmap *cm, const char *key)
{
    cm_key probe = {.key = key}, *pp = &probe;
    cm_key **hit = bsearch(&pp, cm->sorted, cm->nkeys, sizeof(*cm->sorted), key_cmp);
    return hit ? *hit : NULL;
}

/* The data keys, checked to be strings and given once. */
static int read_keys(configmap *cm)
{
    size_t n = (size_t)(cm->data->data.mapping.pairs.top - cm->data->data.mapping.pairs.start);
    cm->im->nkeys += n;
    if (cm->im->nkeys > MAX_KEYS)
        return ay_error(cm->im->c, cm->f, cm->data,
                        "more than %zu data keys in all: the input repeats itself through YAML "
                        "aliases; give each ConfigMap once",
                        (size_t)MAX_KEYS);
    cm->keys = cli_xmalloc(n * sizeof(*cm->keys));
    cm->sorted = cli_xmalloc(n * sizeof(*cm->sorted));
    for (size_t i = 0; i < n; i++) {
        yaml_node_pair_t *p = &cm->data->data.mapping.pairs.start[i];
        cm_key *k = &cm->keys[cm->nkeys];
        *k = (cm_key){.kn = yaml_document_get_node(cm->d, p->key),
                      .vn = yaml_document_get_node(cm->d, p->value)};
        k->key = ay_str(k->kn);
        if (!k->key)
            return ay_error(cm->im->c, cm->f, k->kn,
                            "ConfigMap %s: a data key must be a string", cm->name);
        cm->sorted[cm->nkeys++] = k;
    }
    qsort(cm->sorted, cm->nkeys, sizeof(*cm->sorted), key_cmp);
    for (size_t i = 1; i < cm->nkeys; i++)
        if (strcmp(cm->sorted[i - 1]->key, cm->sorted[i]->key) == 0) {
            cm_key *later = cm->sorted[i] > cm->sorted[i - 1] ? cm->sorted[i] : cm->sorted[i - 1];
            return ay_error(cm->im->c, cm->f, later->kn,
                            "ConfigMap %s: key %s is given twice; keep one", cm->name,
                            later->key);
        }
    return 0;
}

/* Sets k's strategy as the key `from` gives it; a second, different one
 * is an error. */
static int set_strategy(configmap *cm, cm_key *k, const char *from, const yaml_node_t *at,
                        const char *argo)
{
    const char *s = strategy_of(argo);
    if (!s)
        return ay_error(cm->im->c, cm->f, at,
                        "ConfigMap %s, key %s: \"%s\" is not an Argo semaphore strategy (for "
                        "key %s); use rebalanced or default (default is sluice's strict)",
                        cm->name, from, argo ? argo : "", k->key);
    if (k->strategy && strcmp(k->strategy, s) != 0)
        return ay_error(cm->im->c, cm->f, at,
                        "ConfigMap %s: key %s is given two strategies, %s and %s; keep one",
                        cm->name, k->key, k->argo, argo);
    k->strategy = s;
    k->argo = argo;
    return 0;
}

/* KEY-strategy: the strategy of KEY when KEY is a key too, or when its
 * value is no limit; otherwise (build-strategy: "3") a semaphore. */
static cm_key *strategy_target(const configmap *cm, const cm_key *k, bool *is_strategy)
{
    size_t n = strlen(k->key), m = strlen(STRATEGY_SUFFIX);
    *is_strategy = false;
    if (n <= m || strcmp(k->key + n - m, STRATEGY_SUFFIX) != 0)
        return NULL;
    char *base = cli_xmalloc(n - m + 1);
    memcpy(base, k->key, n - m);
    base[n - m] = '\0';
    cm_key *t = find_key(cm, base);
    free(base);
    *is_strategy = t != NULL || !all_digits(ay_str(k->vn));
    return t;
}

static int strategy_keys(configmap *cm)
{
    for (size_t i = 0; i < cm->nkeys; i++) {
        cm_key *k = &cm->keys[i];
        bool is_strategy;
        cm_key *t = strategy_target(cm, k, &is_strategy);
        if (!is_strategy)
            continue;
        k->not_semaphore = true;
        if (!t) {
            size_t base = strlen(k->key) - strlen(STRATEGY_SUFFIX);
            return ay_error(cm->im->c, cm->f, k->kn,
                            "ConfigMap %s: %s sets the strategy of key %.*s, which the "
                            "ConfigMap does not have; add %.*s: LIMIT or remove %s",
                            cm->name, k->key, (int)base, k->key, (int)base, k->key, k->key);
        }
        int st = set_strategy(cm, t, k->key, k->vn, ay_str(k->vn));
        if (st)
            return st;
    }
    return 0;
}

/* semaphoreStrategies given as a string: its text loaded as YAML (or JSON). */
static int strategies_doc(configmap *cm, const cm_key *k, yaml_node_t **map)
{
    char why[256];
    if (!ay_load_string(ay_str(k->vn), &cm->inner, why, sizeof(why)))
        return ay_error(cm->im->c, cm->f, k->vn, "ConfigMap %s, key %s: not YAML or JSON: %s",
                        cm->name, k->key, why);
    cm->has_inner = true;
    *map = yaml_document_get_root_node(&cm->inner);
    return 0;
}

/* semaphoreStrategies: {KEY: STRATEGY, ...}, a mapping or a string holding
 * one. Positions point into the file when the mapping is in it, else at
 * the string. */
static int strategies_key(configmap *cm)
{
    cm_key *k = find_key(cm, STRATEGIES_KEY);
    if (!k)
        return 0;
    k->not_semaphore = true;
    yaml_document_t *d = cm->d;
    yaml_node_t *map = k->vn;
    if (ay_null(map) || (map->type == YAML_SCALAR_NODE && !*ay_str(map)))
        return 0;
    if (map->type == YAML_SCALAR_NODE) {
        int st = strategies_doc(cm, k, &map);
        if (st)
            return st;
        d = &cm->inner;
    }
    if (!ay_is_map(map))
        return ay_error(cm->im->c, cm->f, k->vn,
                        "ConfigMap %s, key %s: expected a mapping of keys to strategies, like "
                        "'{\"template\": \"rebalanced\"}'",
                        cm->name, k->key);
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        const yaml_node_t *vn = yaml_document_get_node(d, p->value);
        const yaml_node_t *at = d == cm->d ? yaml_document_get_node(d, p->key) : k->vn;
        const char *key = ay_str(yaml_document_get_node(d, p->key));
        cm_key *t = key ? find_key(cm, key) : NULL;
        if (!t || t->not_semaphore)
            return ay_error(cm->im->c, cm->f, at,
                            "ConfigMap %s, key %s: \"%s\" is not a semaphore key of the "
                            "ConfigMap; name keys that hold limits",
                            cm->name, k->key, key ? key : "");
        int st = set_strategy(cm, t, k->key, d == cm->d ? vn : at, ay_str(vn));
        if (st)
            return st;
    }
    return 0;
}

/* A limit: a whole number from 0 to MAX_LIMIT, as a string or a number. */
static int read_limit(const configmap *cm, const cm_key *k, long long *out)
{
    const char *v = ay_str(k->vn);
    errno = 0;
    long long n = v && all_digits(v) ? strtoll(v, NULL, 10) : -1;
    if (n >= 0 && errno == 0 && n <= MAX_LIMIT) {
        *out = n;
        return 0;
    }
    char shown[80];
    if (k->vn->type != YAML_SCALAR_NODE)
        snprintf(shown, sizeof(shown), "a %s",
                 k->vn->type == YAML_MAPPING_NODE ? "mapping" : "list");
    else
        snprintf(shown, sizeof(shown), "\"%.60s%s\"", v ? v : "",
                 v && strlen(v) > 60 ? "..." : "");
    return ay_error(cm->im->c, cm->f, k->vn,
                    "ConfigMap %s, key %s: %s is not a semaphore limit (Argo refuses it too); "
                    "write a whole number from 0 to %lld, like %s: \"2\"",
                    cm->name, k->key, shown, MAX_LIMIT, k->key);
}

static void add_sem(importer *im, char *name, long long limit, const char *strategy, char *where)
{
    if (im->nsems == im->cap) {
        im->cap = im->cap ? im->cap * 2 : 16;
        im->sems = argo_xrealloc(im->sems, im->cap * sizeof(*im->sems));
    }
    im->sems[im->nsems] = (import_sem){name, limit, strategy, where, im->nsems};
    im->nsems++;
}

/* One data key as a semaphore, NS/ConfigMap/NAME/KEY. */
static int cm_semaphore(configmap *cm, const cm_key *k)
{
    long long limit = 0;
    int st = read_limit(cm, k, &limit);
    if (st)
        return st;
    cli_buf name = {0};
    cli_buf_addf(&name, "%s/ConfigMap/%s/%s", cm->ns, cm->name, k->key);
    if (!argo_name_ok(name.s)) {
        st = ay_error(cm->im->c, cm->f, k->kn,
                      "ConfigMap %s, key %s: \"%s\" is not a sluice lock name (%s)", cm->name,
                      k->key, name.s, name_rule);
        cli_buf_free(&name);
        return st;
    }
    char where[1100];
    ay_where(cm->f, k->kn, where, sizeof(where));
    add_sem(cm->im, name.s, limit, k->strategy ? k->strategy : "strict", cli_xstrdup(where));
    return 0;
}

/* metadata.name, the namespace and data. */
static int cm_header(configmap *cm)
{
    yaml_node_t *meta = ay_get(cm->d, cm->obj, "metadata");
    cm->name = ay_get_str(cm->d, meta, "name");
    if (!cm->name)
        return ay_error(cm->im->c, cm->f, cm->obj, "a ConfigMap without metadata.name");
    cm->ns = ay_get_str(cm->d, meta, "namespace");
    if (!cm->ns)
        cm->ns = cm->im->ns_flag;
    if (!cm->ns)
        return ay_error(cm->im->c, cm->f, cm->obj,
                        "ConfigMap %s has no metadata.namespace; pass --namespace NS, the "
                        "namespace of the workflows that use it (Argo looks the ConfigMap up "
                        "in the workflow's namespace)",
                        cm->name);
    cm->data = ay_get(cm->d, cm->obj, "data");
    if (!ay_null(cm->data) && !ay_is_map(cm->data))
        return ay_error(cm->im->c, cm->f, cm->data,
                        "ConfigMap %s: data must be a mapping of keys to limits", cm->name);
    return 0;
}

static int configmap_read(configmap *cm)
{
    int st = cm_header(cm);
    if (st)
        return st;
    if (ay_null(cm->data)) {
        ay_warn(cm->f, cm->obj, "ConfigMap %s has no data: no semaphores", cm->name);
        return 0;
    }
    if ((st = read_keys(cm)) || (st = strategy_keys(cm)) || (st = strategies_key(cm)))
        return st;
    for (size_t i = 0; i < cm->nkeys && !st; i++)
        if (!cm->keys[i].not_semaphore)
            st = cm_semaphore(cm, &cm->keys[i]);
    return st;
}

static int import_configmap(importer *im, const ay_file *f, const ay_obj *o)
{
    configmap cm = {.im = im, .f = f, .d = o->doc, .obj = o->node};
    int st = configmap_read(&cm);
    free(cm.keys);
    free(cm.sorted);
    if (cm.has_inner)
        yaml_document_delete(&cm.inner);
    im->nconfigmaps++;
    return st;
}

/* ---- import: files, checks, output ------------------------------------------------------- */

static int import_object(importer *im, const ay_file *f, const ay_obj *o)
{
    const char *kind = kind_of(o);
    if (!kind)
        return ay_error(im->c, f, o->node,
                        "not a Kubernetes object: it has no kind (Argo's semaphore limits are "
                        "in a kind: ConfigMap)");
    if (strcmp(kind, "ConfigMap") == 0)
        return import_configmap(im, f, o);
    char where[1100];
    ay_where(f, o->node, where, sizeof(where));
    const char *name = name_of(o);
    fprintf(stderr, "sluice: %s: skipped %s %s: not a ConfigMap\n", where, kind,
            name ? name : "(no name)");
    return 0;
}

static int import_file(importer *im, const char *path)
{
    ay_file f;
    int st = ay_load(im->c, path, &f);
    if (st)
        return st;
    ay_obj *objs = NULL;
    size_t n = 0;
    st = ay_objects(im->c, &f, &objs, &n);
    for (size_t i = 0; i < n && !st; i++)
        st = import_object(im, &f, &objs[i]);
    free(objs);
    ay_free(&f);
    return st;
}

static int sem_cmp(const void *a, const void *b)
{
    const import_sem *x = *(const import_sem *const *)a, *y = *(const import_sem *const *)b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->order < y->order ? -1 : x->order > y->order);
}

/* Each name once: the server's configuration file refuses a name twice. */
static int check_unique(importer *im)
{
    const import_sem **by = cli_xmalloc(im->nsems * sizeof(*by));
    for (size_t i = 0; i < im->nsems; i++)
        by[i] = &im->sems[i];
    qsort(by, im->nsems, sizeof(*by), sem_cmp);
    int st = 0;
    for (size_t i = 1; i < im->nsems && !st; i++)
        if (strcmp(by[i - 1]->name, by[i]->name) == 0) {
            fprintf(stderr,
                    "sluice: %s: semaphore %s is given twice (first at %s); give each "
                    "ConfigMap once\n",
                    by[i]->where, by[i]->name, by[i - 1]->where);
            st = im->c->usage_status;
        }
    free(by);
    return st;
}

static int import_check(importer *im, const char *const *files, int nfiles)
{
    if (!im->nconfigmaps) {
        fprintf(stderr, "sluice: no ConfigMap in %s%s; Argo's semaphore limits are in one: "
                        "kubectl get configmap NAME -n NS -o yaml > FILE\n",
                strcmp(files[0], "-") == 0 ? "<stdin>" : files[0],
                nfiles > 1 ? " and the other files" : "");
        return im->c->usage_status;
    }
    if (!im->nsems) {
        fprintf(stderr, "sluice: the ConfigMaps hold no semaphore limits (no data keys)\n");
        return im->c->usage_status;
    }
    return check_unique(im);
}

/* The sluiced.yaml fragment, or with --json {"semaphores": [...]}. */
static void import_print(const importer *im)
{
    if (!im->c->json) {
        puts("semaphores:");
        for (size_t i = 0; i < im->nsems; i++)
            printf("  - {name: \"%s\", limit: %lld, strategy: %s}\n", im->sems[i].name,
                   im->sems[i].limit, im->sems[i].strategy);
        return;
    }
    cli_buf *items = cli_xmalloc(im->nsems * sizeof(*items));
    const char **texts = cli_xmalloc(im->nsems * sizeof(*texts));
    for (size_t i = 0; i < im->nsems; i++) {
        items[i] = (cli_buf){0};
        cli_buf_addf(&items[i], "{\"name\": \"%s\", \"limit\": %lld, \"strategy\": \"%s\"}",
                     im->sems[i].name, im->sems[i].limit, im->sems[i].strategy);
        texts[i] = items[i].s;
    }
    cli_json_list("semaphores", texts, im->nsems, stdout);
    for (size_t i = 0; i < im->nsems; i++)
        cli_buf_free(&items[i]);
    free(items);
    free(texts);
}

/* Configures one semaphore; prints it, or keeps its JSON in *json. */
static int apply_one(const importer *im, sl_client *cl, const import_sem *s, char **json)
{
    sl_client_lock *l = NULL;
    sl_client_error err = {0};
    if (sl_client_semaphore_set(cl, s->name, (uint64_t)s->limit, s->strategy, NULL, &l, &err) !=
        SL_CLIENT_OK) {
        char what[400];
        snprintf(what, sizeof(what), "cannot configure semaphore %s", s->name);
        return cli_fail(im->c, what, &err);
    }
    if (im->c->json)
        *json = cli_xstrdup(l->json);
    else
        printf("configured %s: limit %llu, %s\n", l->name, (unsigned long long)l->limit,
               l->strategy ? l->strategy : s->strategy);
    fflush(stdout);
    sl_client_lock_free(l);
    return 0;
}

static int import_apply(importer *im)
{
    sl_client *cl = NULL;
    int st = cli_connect(im->c, &cl);
    if (st)
        return st;
    char **json = calloc(im->nsems ? im->nsems : 1, sizeof(*json));
    if (!json)
        cli_oom();
    size_t done = 0;
    for (; done < im->nsems && !st; done++)
        st = apply_one(im, cl, &im->sems[done], &json[done]);
    if (st && done > 1)
        fprintf(stderr, "%zu of the %zu semaphores were configured before this one.\n", done - 1,
                im->nsems);
    if (!st && im->c->json)
        cli_json_list("semaphores", (const char *const *)json, im->nsems, stdout);
    for (size_t i = 0; i < im->nsems; i++)
        free(json[i]);
    free(json);
    sl_client_free(cl);
    return st;
}

static void importer_free(importer *im)
{
    for (size_t i = 0; i < im->nsems; i++) {
        free(im->sems[i].name);
        free(im->sems[i].where);
    }
    free(im->sems);
}

int cli_import(cli *c, int argc, char **argv)
{
    const char **pos = cli_xmalloc((size_t)(argc + 1) * sizeof(*pos));
    const char *ns = NULL, *tmpl = NULL;
    bool apply = false;
    int n = 0;
    int st = parse_args(c, import_flags, argc, argv, pos, &n, &ns, &tmpl, &apply);
    if (st == 0 && n == 0)
        st = cli_usage(c, "missing the source: sluice import argo FILE...");
    else if (st == 0 && strcmp(pos[0], "argo") != 0)
        st = cli_usage(c, "cannot import from '%s': the source is argo (sluice import argo "
                          "FILE...)",
                       pos[0]);
    else if (st == 0 && n == 1)
        st = cli_usage(c, "missing FILE: sluice import argo FILE... (- reads standard input)");
    importer im = {.c = c, .ns_flag = ns};
    for (int i = 1; st == 0 && i < n; i++)
        st = import_file(&im, pos[i]);
    if (st == 0)
        st = import_check(&im, pos + 1, n - 1);
    if (st == 0 && apply)
        st = import_apply(&im);
    else if (st == 0)
        import_print(&im);
    importer_free(&im);
    free(pos);
    return st < 0 ? 0 : st;
}

/* ---- argo flags: a workflow's synchronization ------------------------------------------------ */

typedef struct workflow {
    cli *c;
    ay_file file;     /* the file read */
    const ay_file *f; /* &file */
    yaml_document_t *d;
    yaml_node_t *obj, *spec;
    const char *name, *kind, *ns, *ns_flag;
    const char *spec_path; /* "spec", or "spec.workflowSpec" for a CronWorkflow */
    char *sems[CLI_MAX_LOCKS], *mutexes[CLI_MAX_LOCKS];
    size_t nsems, nmutexes;
    const char *rebalance_key;
    bool has_priority;
    long long priority;
} workflow;

static bool workflow_kind(const char *kind)
{
    return kind && (strcmp(kind, "Workflow") == 0 || strcmp(kind, "WorkflowTemplate") == 0 ||
                    strcmp(kind, "ClusterWorkflowTemplate") == 0 ||
                    strcmp(kind, "CronWorkflow") == 0);
}

/* "{{workflow.parameters.x}}" left in a name: Argo fills it in at run time. */
static void warn_expression(const workflow *w, const yaml_node_t *at, const char *name)
{
    const char *open = strstr(name, "{{");
    if (!open)
        return;
    const char *close = strstr(open, "}}");
    int len = close ? (int)(close - open) + 2 : (int)strlen(open);
    bool whole = open == name && (size_t)len == strlen(name);
    ay_warn(w->f, at,
            "%.*s%s%s is an Argo expression, which Argo fills in when the workflow runs; "
            "replace it with its value in the flags",
            len, open, whole ? "" : " in ", whole ? "" : name);
}

/* The namespace of a lock: its own, else the workflow's, else --namespace. */
static const char *lock_namespace(const workflow *w, yaml_node_t *lock)
{
    const char *ns = ay_get_str(w->d, lock, "namespace");
    if (ns)
        return ns;
    if (w->ns)
        return w->ns;
    ay_error(w->c, w->f, lock,
             "%s %s has no metadata.namespace and this lock names none; pass --namespace NS, "
             "the namespace the workflow runs in (Argo's locks default to it)",
             w->kind, w->name);
    return NULL;
}

static bool has_lock(char *const *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], name) == 0)
            return true;
    return false;
}

/* NS/KIND/A, or NS/KIND/A/B; a lock given twice (in both of Argo's forms)
 * is taken once. */
static int add_lock(workflow *w, yaml_node_t *at, bool semaphore, const char *ns, const char *kind,
                    const char *a, const char *b)
{
    cli_buf name = {0};
    cli_buf_addf(&name, "%s/%s/%s%s%s", ns, kind, a, b ? "/" : "", b ? b : "");
    int st = 0;
    if (semaphore ? has_lock(w->sems, w->nsems, name.s)
                  : has_lock(w->mutexes, w->nmutexes, name.s))
        cli_buf_free(&name);
    else if (w->nsems + w->nmutexes == CLI_MAX_LOCKS)
        st = ay_error(w->c, w->f, at, "more than %d locks: one claim holds at most %d",
                      CLI_MAX_LOCKS, CLI_MAX_LOCKS);
    else if (!strstr(name.s, "{{") && !argo_name_ok(name.s))
        st = ay_error(w->c, w->f, at, "\"%s\" is not a sluice lock name (%s)", name.s,
                      name_rule);
    else if (semaphore)
        w->sems[w->nsems++] = name.s;
    else
        w->mutexes[w->nmutexes++] = name.s;
    if (st)
        cli_buf_free(&name);
    else if (name.s)
        warn_expression(w, at, name.s);
    return st;
}

static int sem_rebalance_key(workflow *w, yaml_node_t *sem)
{
    yaml_node_t *rk = ay_get(w->d, sem, "rebalanceKey");
    const char *key = ay_str(rk);
    if (!key)
        return 0;
    if (w->rebalance_key && strcmp(w->rebalance_key, key) != 0)
        return ay_error(w->c, w->f, rk,
                        "two rebalance keys, \"%s\" and \"%s\": a sluice claim has one; give "
                        "the semaphores the same rebalanceKey",
                        w->rebalance_key, key);
    if (!w->rebalance_key)
        warn_expression(w, rk, key);
    w->rebalance_key = key;
    return 0;
}

/* The parts of a semaphore's name after NS: KIND/A[/B]. */
static int semaphore_parts(workflow *w, yaml_node_t *sem, const char **kind, const char **a,
                           const char **b, yaml_node_t **at)
{
    yaml_node_t *cm = ay_get(w->d, sem, "configMapKeyRef");
    yaml_node_t *db = ay_get(w->d, sem, "database");
    if (!ay_null(cm) && !ay_null(db))
        return ay_error(w->c, w->f, sem,
                        "a semaphore with both configMapKeyRef and database; Argo refuses it "
                        "too: keep one");
    if (ay_null(cm) && ay_null(db))
        return ay_error(w->c, w->f, sem,
                        "a semaphore needs configMapKeyRef: {name: CONFIGMAP, key: KEY} or "
                        "database: {key: KEY}");
    *at = ay_null(cm) ? db : cm;
    if (!ay_null(cm)) {
        *kind = "ConfigMap";
        *a = ay_get_str(w->d, cm, "name");
        *b = ay_get_str(w->d, cm, "key");
        if (!*a || !*b)
            return ay_error(w->c, w->f, cm, "configMapKeyRef needs a name and a key");
        return 0;
    }
    *kind = "Database";
    *a = ay_get_str(w->d, db, "key");
    *b = NULL;
    if (!*a)
        return ay_error(w->c, w->f, db, "database needs a key: database: {key: KEY}");
    return 0;
}

/* semaphore: {configMapKeyRef: {name, key}} or {database: {key}}, with
 * namespace and rebalanceKey. */
static int add_semaphore(workflow *w, yaml_node_t *sem)
{
    if (!ay_is_map(sem))
        return ay_error(w->c, w->f, sem,
                        "a semaphore must be a mapping with configMapKeyRef or database");
    const char *kind = NULL, *a = NULL, *b = NULL;
    yaml_node_t *at = NULL;
    int st = semaphore_parts(w, sem, &kind, &a, &b, &at);
    if (st)
        return st;
    const char *ns = lock_namespace(w, sem);
    if (!ns)
        return w->c->usage_status;
    if ((st = sem_rebalance_key(w, sem)))
        return st;
    return add_lock(w, at, true, ns, kind, a, b);
}

/* mutex: {name, namespace, database}. */
static int add_mutex(workflow *w, yaml_node_t *mtx)
{
    const char *name = ay_get_str(w->d, mtx, "name");
    if (!ay_is_map(mtx) || !name)
        return ay_error(w->c, w->f, mtx, "a mutex needs a name: mutex: {name: NAME}");
    const char *ns = lock_namespace(w, mtx);
    if (!ns)
        return w->c->usage_status;
    bool db = ay_true(ay_get(w->d, mtx, "database"));
    return add_lock(w, mtx, false, ns, db ? "Database" : "Mutex", name, NULL);
}

/* One of semaphore/mutex (a mapping) or semaphores/mutexes (a list). */
static int sync_entry(workflow *w, yaml_node_t *sync, const char *key, bool list, bool semaphore)
{
    yaml_node_t *n = ay_get(w->d, sync, key);
    if (ay_null(n))
        return 0;
    if (!list)
        return semaphore ? add_semaphore(w, n) : add_mutex(w, n);
    if (!ay_is_seq(n))
        return ay_error(w->c, w->f, n, "%s must be a list", key);
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top;
         it++) {
        yaml_node_t *item = yaml_document_get_node(w->d, *it);
        int st = semaphore ? add_semaphore(w, item) : add_mutex(w, item);
        if (st)
            return st;
    }
    return 0;
}

static int sync_block(workflow *w, yaml_node_t *sync)
{
    if (!ay_is_map(sync))
        return ay_error(w->c, w->f, sync, "synchronization must be a mapping");
    int st;
    if ((st = sync_entry(w, sync, "semaphore", false, true)) ||
        (st = sync_entry(w, sync, "semaphores", true, true)) ||
        (st = sync_entry(w, sync, "mutex", false, false)) ||
        (st = sync_entry(w, sync, "mutexes", true, false)))
        return st;
    if (!w->nsems && !w->nmutexes)
        return ay_error(w->c, w->f, sync,
                        "this synchronization block has no semaphore, semaphores, mutex or "
                        "mutexes");
    return 0;
}

/* A priority: a whole number in sluice's range (int32, as Argo's). */
static int read_priority(workflow *w, yaml_node_t *n)
{
    const char *v = ay_str(n);
    if (!v)
        return 0;
    char *end;
    errno = 0;
    long long p = strtoll(v, &end, 10);
    if (!*v || *end || errno || p < INT32_MIN || p > INT32_MAX)
        return ay_error(w->c, w->f, n,
                        "priority \"%s\" is not a whole number from %d to %d", v, INT32_MIN,
                        INT32_MAX);
    w->has_priority = true;
    w->priority = p;
    return 0;
}

/* ---- argo flags: finding the block ---------------------------------------------------------- */

/* The names of the templates that have a synchronization block, "a, b". */
static void sync_templates(const workflow *w, cli_buf *out)
{
    yaml_node_t *ts = ay_get(w->d, w->spec, "templates");
    if (!ay_is_seq(ts))
        return;
    for (yaml_node_item_t *it = ts->data.sequence.items.start; it < ts->data.sequence.items.top;
         it++) {
        yaml_node_t *t = yaml_document_get_node(w->d, *it);
        const char *name = ay_get_str(w->d, t, "name");
        if (name && !ay_null(ay_get(w->d, t, "synchronization")))
            cli_buf_addf(out, "%s%s", out->len ? ", " : "", name);
    }
}

/* An error that ends with the templates one could ask for instead. */
static int no_block(const workflow *w, const yaml_node_t *at, const char *what)
{
    cli_buf names = {0};
    sync_templates(w, &names);
    if (names.len)
        ay_error(w->c, w->f, at, "%s; templates with one: %s (pass --template NAME)", what,
                 names.s);
    else
        ay_error(w->c, w->f, at, "%s, and none of its templates has one either", what);
    const char *ref = ay_get_str(w->d, ay_get(w->d, w->spec, "workflowTemplateRef"), "name");
    if (ref)
        fprintf(stderr, "It runs the WorkflowTemplate %s: give that template's file.\n", ref);
    cli_buf_free(&names);
    return w->c->usage_status;
}

static yaml_node_t *find_template(const workflow *w, const char *name)
{
    yaml_node_t *ts = ay_get(w->d, w->spec, "templates");
    if (!ay_is_seq(ts))
        return NULL;
    for (yaml_node_item_t *it = ts->data.sequence.items.start; it < ts->data.sequence.items.top;
         it++) {
        yaml_node_t *t = yaml_document_get_node(w->d, *it);
        const char *n = ay_get_str(w->d, t, "name");
        if (n && strcmp(n, name) == 0)
            return t;
    }
    return NULL;
}

/* The block asked for: the workflow's, or the template's. */
static int read_block(workflow *w, const char *tmpl)
{
    char what[600];
    if (!tmpl) {
        yaml_node_t *sync = ay_get(w->d, w->spec, "synchronization");
        if (ay_null(sync)) {
            snprintf(what, sizeof(what), "%s %s has no %s.synchronization", w->kind, w->name,
                     w->spec_path);
            return no_block(w, w->obj, what);
        }
        int st = sync_block(w, sync);
        return st ? st : read_priority(w, ay_get(w->d, w->spec, "priority"));
    }
    yaml_node_t *t = find_template(w, tmpl);
    if (!t) {
        snprintf(what, sizeof(what), "%s %s has no template %.200s", w->kind, w->name, tmpl);
        return no_block(w, w->obj, what);
    }
    yaml_node_t *sync = ay_get(w->d, t, "synchronization");
    if (ay_null(sync)) {
        snprintf(what, sizeof(what), "template %.200s has no synchronization block", tmpl);
        return no_block(w, t, what);
    }
    int st = sync_block(w, sync);
    yaml_node_t *prio = ay_get(w->d, t, "priority");
    if (!st)
        st = read_priority(w, ay_null(prio) ? ay_get(w->d, w->spec, "priority") : prio);
    return st;
}

/* The one workflow of the file. */
static int find_workflow(workflow *w, const ay_obj *objs, size_t n)
{
    const ay_obj *found = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!workflow_kind(kind_of(&objs[i])))
            continue;
        if (found)
            return ay_error(w->c, w->f, objs[i].node,
                            "a second workflow in the file (the first is %s); give a file "
                            "with one workflow",
                            name_of(found) ? name_of(found) : "unnamed");
        found = &objs[i];
    }
    if (!found)
        return ay_error(w->c, w->f, n ? objs[0].node : NULL,
                        "no Argo workflow here: expected kind Workflow, WorkflowTemplate, "
                        "ClusterWorkflowTemplate or CronWorkflow");
    w->d = found->doc;
    w->obj = found->node;
    w->kind = kind_of(found);
    w->name = name_of(found);
    if (!w->name)
        w->name = "(unnamed)";
    w->ns = ay_get_str(w->d, ay_get(w->d, w->obj, "metadata"), "namespace");
    if (!w->ns)
        w->ns = w->ns_flag;
    return 0;
}

/* spec, or spec.workflowSpec for a CronWorkflow. */
static int find_spec(workflow *w)
{
    w->spec_path = "spec";
    w->spec = ay_get(w->d, w->obj, "spec");
    if (strcmp(w->kind, "CronWorkflow") == 0) {
        w->spec_path = "spec.workflowSpec";
        w->spec = ay_get(w->d, w->spec, "workflowSpec");
    }
    if (!ay_is_map(w->spec))
        return ay_error(w->c, w->f, w->obj, "%s %s has no %s", w->kind, w->name, w->spec_path);
    return 0;
}

/* ---- argo flags: output --------------------------------------------------------------- */

static void add_word(cli_buf *out, const char *flag, const char *value)
{
    cli_buf_addf(out, "%s%s ", out->len ? " " : "", flag);
    argo_shell_quote(value, out);
}

static void print_flags(const workflow *w)
{
    cli_buf out = {0};
    for (size_t i = 0; i < w->nsems; i++)
        add_word(&out, "--semaphore", w->sems[i]);
    for (size_t i = 0; i < w->nmutexes; i++)
        add_word(&out, "--mutex", w->mutexes[i]);
    if (w->rebalance_key)
        add_word(&out, "--rebalance-key", w->rebalance_key);
    if (w->has_priority) {
        char n[32];
        snprintf(n, sizeof(n), "%lld", w->priority);
        add_word(&out, "--priority", n);
    }
    puts(out.s);
    cli_buf_free(&out);
}

static void json_names(cli_buf *out, const char *key, char *const *names, size_t n)
{
    cli_buf_addf(out, "\"%s\": [", key);
    for (size_t i = 0; i < n; i++) {
        if (i)
            cli_buf_add(out, ", ");
        argo_json_str(names[i], out);
    }
    cli_buf_add(out, "]");
}

static void print_json(const workflow *w)
{
    cli_buf out = {0};
    cli_buf_add(&out, "{");
    json_names(&out, "semaphores", w->sems, w->nsems);
    cli_buf_add(&out, ", ");
    json_names(&out, "mutexes", w->mutexes, w->nmutexes);
    if (w->has_priority)
        cli_buf_addf(&out, ", \"priority\": %lld", w->priority);
    else
        cli_buf_add(&out, ", \"priority\": null");
    cli_buf_add(&out, ", \"rebalance_key\": ");
    if (w->rebalance_key)
        argo_json_str(w->rebalance_key, &out);
    else
        cli_buf_add(&out, "null");
    cli_buf_add(&out, "}");
    puts(out.s);
    cli_buf_free(&out);
}

static int argo_flags(workflow *w, const char *path, const char *tmpl)
{
    int st = ay_load(w->c, path, &w->file);
    if (st)
        return st;
    w->f = &w->file;
    ay_obj *objs = NULL;
    size_t n = 0;
    if (!(st = ay_objects(w->c, w->f, &objs, &n)) && !(st = find_workflow(w, objs, n)) &&
        !(st = find_spec(w)) && !(st = read_block(w, tmpl))) {
        if (w->c->json)
            print_json(w);
        else
            print_flags(w);
    }
    for (size_t i = 0; i < w->nsems; i++)
        free(w->sems[i]);
    for (size_t i = 0; i < w->nmutexes; i++)
        free(w->mutexes[i]);
    free(objs);
    ay_free(&w->file);
    return st;
}

int cli_argo(cli *c, int argc, char **argv)
{
    const char **pos = cli_xmalloc((size_t)(argc + 1) * sizeof(*pos));
    workflow w = {.c = c};
    const char *tmpl = NULL;
    bool apply = false;
    int n = 0;
    int st = parse_args(c, flags_flags, argc, argv, pos, &n, &w.ns_flag, &tmpl, &apply);
    if (st == 0 && n == 0)
        st = cli_usage(c, "missing the command: sluice argo flags FILE");
    else if (st == 0 && strcmp(pos[0], "flags") != 0)
        st = cli_usage(c, "no command 'argo %s': use sluice argo flags FILE", pos[0]);
    else if (st == 0 && n != 2)
        st = cli_usage(c, "%s: sluice argo flags [--template NAME] FILE",
                       n < 2 ? "missing FILE" : "one FILE at a time");
    else if (st == 0 && tmpl && !*tmpl)
        st = cli_usage(c, "--template needs a template's name");
    if (st == 0)
        st = argo_flags(&w, pos[1], tmpl);
    free(pos);
    return st < 0 ? 0 : st;
}
