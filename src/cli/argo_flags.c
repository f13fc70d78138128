/* argo_flags.c - sluice argo flags [--namespace NS] [--template NAME] FILE:
 * a workflow's (or one template's) synchronization block as `sluice run`
 * flags (docs/cli.md, "Coming from Argo Workflows"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "argo.h"

static const cli_flag flags_flags[] = {
    {"namespace", true, ARGO_NAMESPACE},
    {"template", true, ARGO_TEMPLATE},
    {0},
};

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
                      argo_name_rule);
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
        if (!workflow_kind(argo_kind(&objs[i])))
            continue;
        if (found)
            return ay_error(w->c, w->f, objs[i].node,
                            "a second workflow in the file (the first is %s); give a file "
                            "with one workflow",
                            argo_name(found) ? argo_name(found) : "unnamed");
        found = &objs[i];
    }
    if (!found)
        return ay_error(w->c, w->f, n ? objs[0].node : NULL,
                        "no Argo workflow here: expected kind Workflow, WorkflowTemplate, "
                        "ClusterWorkflowTemplate or CronWorkflow");
    w->d = found->doc;
    w->obj = found->node;
    w->kind = argo_kind(found);
    w->name = argo_name(found);
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
    int st = argo_parse_args(c, flags_flags, argc, argv, pos, &n, &w.ns_flag, &tmpl, &apply);
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
