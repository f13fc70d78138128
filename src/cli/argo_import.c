/* argo_import.c - sluice import argo [--namespace NS] [--configmap NAME]
 * [--strategy-keys] [--apply] FILE...: Argo's semaphore ConfigMaps as
 * sluice semaphores named as Argo names them (NS/ConfigMap/NAME/KEY),
 * printed as a sluiced.yaml fragment or configured on the server with
 * --apply (docs/cli.md, "Coming from Argo Workflows").
 *
 * Argo reads a ConfigMap key only when a workflow names it, so a key that
 * holds no number is skipped, not refused. Strategies are sluice's: Argo
 * has none (a "rebalanced" strategy was proposed and never merged), so
 * KEY-strategy and semaphoreStrategies are read only with
 * --strategy-keys. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "argo.h"

static const cli_flag import_flags[] = {
    {"namespace", true, ARGO_NAMESPACE},
    {"apply", false, ARGO_APPLY},
    {"configmap", true, ARGO_CONFIGMAP},
    {"strategy-keys", false, ARGO_STRATEGY_KEYS},
    {0},
};

#define MAX_LIMIT 1000000000LL /* the server's largest semaphore limit */
/* Data keys read in all: more than a file of ARGO_MAX_INPUT bytes can hold
 * without YAML aliases, which could otherwise make a small file cost
 * hours (the same data under a million ConfigMaps). */
#define MAX_KEYS (ARGO_MAX_INPUT / 4)
#define STRATEGY_SUFFIX "-strategy"
#define STRATEGIES_KEY "semaphoreStrategies"

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
    const argo_opts *o;
    const char *ns_flag;
    bool *named_seen; /* per --configmap NAME: was it in the input */
    import_sem *sems;
    size_t nsems, cap;
    size_t nconfigmaps;
    size_t nkeys; /* data keys read, at most MAX_KEYS */
} importer;

/* One data key of a ConfigMap. */
typedef struct cm_key {
    const char *key;
    yaml_node_t *kn, *vn;
    bool not_semaphore;   /* KEY-strategy or semaphoreStrategies, or no number */
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

/* A strategy (sluice's --strategy-keys convention: default or rebalanced) as
 * sluice names it, or NULL. */
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
                        "ConfigMap %s, key %s: \"%s\" is not a strategy (for key %s); with "
                        "--strategy-keys write rebalanced or default (sluice's strict), or "
                        "leave the flag out to take every key as a semaphore",
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

/* Whether v is a number as Argo reads a limit (Go's strconv.Atoi: an
 * optional sign, then decimal digits); its value in *out (saturated). */
static bool atoi_number(const char *v, long long *out)
{
    if (!v)
        return false;
    const char *d = *v == '+' || *v == '-' ? v + 1 : v;
    if (!all_digits(d))
        return false;
    errno = 0;
    *out = strtoll(v, NULL, 10); /* ERANGE saturates: out of range anyway */
    return true;
}

/* A value as a message shows it: its first line, at most 40 characters. */
static void shown_value(const yaml_node_t *vn, char *buf, size_t cap)
{
    const char *v = ay_str(vn);
    if (vn->type != YAML_SCALAR_NODE) {
        snprintf(buf, cap, "a %s", vn->type == YAML_MAPPING_NODE ? "mapping" : "list");
        return;
    }
    v = v ? v : "";
    size_t n = strcspn(v, "\r\n");
    bool cut = n > 40 || v[n];
    snprintf(buf, cap, "\"%.*s%s\"", (int)(n > 40 ? 40 : n), v, cut ? "..." : "");
}

/* A limit: a whole number from 0 to MAX_LIMIT, as a string or a number. */
static int read_limit(const configmap *cm, const cm_key *k, long long *out)
{
    long long n = -1;
    if (atoi_number(ay_str(k->vn), &n) && n >= 0 && n <= MAX_LIMIT) {
        *out = n;
        return 0;
    }
    return ay_error(cm->im->c, cm->f, k->vn,
                    "ConfigMap %s, key %s: %s is no semaphore limit sluice can take; write a "
                    "whole number from 0 to %lld, like %s: \"2\"",
                    cm->name, k->key, ay_str(k->vn), MAX_LIMIT, k->key);
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
                      k->key, name.s, argo_name_rule);
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
    cm->data = ay_get(cm->d, cm->obj, "data");
    if (!ay_null(cm->data) && !ay_is_map(cm->data))
        return ay_error(cm->im->c, cm->f, cm->data,
                        "ConfigMap %s: data must be a mapping of keys to limits", cm->name);
    return 0;
}

/* A hint for a key that --strategy-keys would read as a strategy. */
static const char *strategy_hint(const configmap *cm, const cm_key *k)
{
    size_t n = strlen(k->key), m = strlen(STRATEGY_SUFFIX);
    bool named = strcmp(k->key, STRATEGIES_KEY) == 0 ||
                 (n > m && strcmp(k->key + n - m, STRATEGY_SUFFIX) == 0);
    return named && !cm->im->o->strategy_keys
               ? "; sluice reads it as a strategy with --strategy-keys (no Argo has strategies)"
               : "";
}

/* Keys whose values are no number are no semaphores: Argo reads a key
 * only when a workflow names it (with strconv.Atoi), so a ConfigMap may
 * hold anything else (kube-root-ca.crt, Argo's own configuration). Each
 * is skipped with a warning, or the whole ConfigMap in one line when no
 * key of it holds a number. */
static void skip_non_numbers(configmap *cm)
{
    size_t numbers = 0, candidates = 0;
    long long v;
    for (size_t i = 0; i < cm->nkeys; i++)
        if (!cm->keys[i].not_semaphore) {
            candidates++;
            numbers += atoi_number(ay_str(cm->keys[i].vn), &v);
        }
    cli_buf names = {0};
    for (size_t i = 0; i < cm->nkeys; i++) {
        cm_key *k = &cm->keys[i];
        if (k->not_semaphore || atoi_number(ay_str(k->vn), &v))
            continue;
        k->not_semaphore = true;
        if (!numbers) {
            if (names.len < 80)
                cli_buf_addf(&names, "%s%s", names.len ? ", " : "", k->key);
            continue;
        }
        char shown[64];
        shown_value(k->vn, shown, sizeof(shown));
        ay_warn(cm->f, k->vn,
                "ConfigMap %s, key %s: %s is not a number: skipped, no semaphore (Argo "
                "reads a limit only from a key a workflow names)%s",
                cm->name, k->key, shown, strategy_hint(cm, k));
    }
    if (candidates && !numbers)
        ay_warn(cm->f, cm->obj,
                "ConfigMap %s: skipped, no key holds a number (%s%s): no semaphores",
                cm->name, names.s, names.len >= 80 ? ", ..." : "");
    cli_buf_free(&names);
}

static bool named_by_flag(importer *im, const char *name)
{
    if (!im->o->nconfigmaps)
        return true;
    bool hit = false;
    for (size_t i = 0; i < im->o->nconfigmaps; i++)
        if (strcmp(im->o->configmaps[i], name) == 0)
            hit = im->named_seen[i] = true;
    return hit;
}

static int configmap_read(configmap *cm)
{
    const char *name = ay_get_str(cm->d, ay_get(cm->d, cm->obj, "metadata"), "name");
    if (name && !named_by_flag(cm->im, name)) {
        char where[1100];
        ay_where(cm->f, cm->obj, where, sizeof(where));
        fprintf(stderr, "sluice: %s: skipped ConfigMap %s: not named by --configmap\n", where,
                name);
        return 0;
    }
    int st = cm_header(cm);
    if (st)
        return st;
    if (ay_null(cm->data)) {
        ay_warn(cm->f, cm->obj, "ConfigMap %s has no data: no semaphores", cm->name);
        return 0;
    }
    if ((st = read_keys(cm)))
        return st;
    if (cm->im->o->strategy_keys && ((st = strategy_keys(cm)) || (st = strategies_key(cm))))
        return st;
    skip_non_numbers(cm);
    /* Asked only of a ConfigMap with semaphores: Argo's own install
     * ConfigMaps come without a namespace (kustomize sets it). */
    bool any = false;
    for (size_t i = 0; i < cm->nkeys; i++)
        any = any || !cm->keys[i].not_semaphore;
    if (any && !cm->ns)
        return ay_error(cm->im->c, cm->f, cm->obj,
                        "ConfigMap %s has no metadata.namespace; pass --namespace NS, the "
                        "namespace of the workflows that use it (Argo looks the ConfigMap up "
                        "in the workflow's namespace)",
                        cm->name);
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
    const char *kind = argo_kind(o);
    if (!kind)
        return ay_error(im->c, f, o->node,
                        "not a Kubernetes object: it has no kind (Argo's semaphore limits are "
                        "in a kind: ConfigMap)");
    if (strcmp(kind, "ConfigMap") == 0)
        return import_configmap(im, f, o);
    char where[1100];
    ay_where(f, o->node, where, sizeof(where));
    const char *name = argo_name(o);
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
    for (size_t i = 0; i < im->o->nconfigmaps; i++)
        if (!im->named_seen[i]) {
            fprintf(stderr,
                    "sluice: --configmap %s: no ConfigMap of that name in the input; check the "
                    "name (kubectl get configmap -n NS)\n",
                    im->o->configmaps[i]);
            return im->c->usage_status;
        }
    if (!im->nsems) {
        fprintf(stderr, "sluice: the ConfigMaps hold no semaphore limits (no data key holds a "
                        "whole number)\n");
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
    argo_opts o = {0};
    int n = 0;
    int st = argo_parse_args(c, import_flags, argc, argv, pos, &n, &o);
    if (st == 0 && n == 0)
        st = cli_usage(c, "missing the source: sluice import argo FILE...");
    else if (st == 0 && strcmp(pos[0], "argo") != 0)
        st = cli_usage(c, "cannot import from '%s': the source is argo (sluice import argo "
                          "FILE...)",
                       pos[0]);
    else if (st == 0 && n == 1)
        st = cli_usage(c, "missing FILE: sluice import argo FILE... (- reads standard input)");
    importer im = {.c = c, .o = &o, .ns_flag = o.ns,
                   .named_seen = calloc(o.nconfigmaps + 1, sizeof(bool))};
    if (!im.named_seen)
        cli_oom();
    for (int i = 1; st == 0 && i < n; i++)
        st = import_file(&im, pos[i]);
    if (st == 0)
        st = import_check(&im, pos + 1, n - 1);
    if (st == 0 && o.apply)
        st = import_apply(&im);
    else if (st == 0)
        import_print(&im);
    importer_free(&im);
    free(im.named_seen);
    free(o.configmaps);
    free(pos);
    return st < 0 ? 0 : st;
}

