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
    const char *tmpl;  /* the template whose block it is; NULL: the workflow's */
    yaml_node_t *sync; /* the block read */
} workflow;

/* The keys Argo's types have (SemaphoreRef, Mutex, ConfigMapKeySelector,
 * SyncDatabaseRef); anything else is a slip that would lose a lock. */
static const char *const sync_keys[] = {"semaphore", "semaphores", "mutex", "mutexes", NULL};
static const char *const semaphore_keys[] = {"configMapKeyRef", "database", "namespace",
                                             "rebalanceKey", NULL};
static const char *const configmap_ref_keys[] = {"name", "key", "optional", NULL};
static const char *const database_ref_keys[] = {"key", NULL};
static const char *const mutex_keys[] = {"name", "namespace", "database", NULL};

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
    ay_warn(w->f, rk,
            "rebalanceKey is no Argo field (no Argo release has one; `argo lint` refuses it): "
            "sluice reads it as its own --rebalance-key");
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
    argo_check_keys(w->f, w->d, cm, "configMapKeyRef", configmap_ref_keys);
    argo_check_keys(w->f, w->d, db, "a semaphore's database", database_ref_keys);
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
    argo_check_keys(w->f, w->d, sem, "a semaphore", semaphore_keys);
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

/* A YAML boolean as Kubernetes reads one (YAML 1.1: true, yes, on...,
 * unquoted): 1 or 0, or -1 for anything else (a quoted "yes" is a
 * string, which Argo's bool field refuses). Missing: 0. */
static int yaml_bool(const yaml_node_t *n)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on",
                                      "On",   "ON",   "y",    "Y",   NULL};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off",
                                     "Off",   "OFF",   "n",     "N",  NULL};
    if (ay_null(n))
        return 0;
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return -1;
    for (size_t i = 0; yes[i]; i++)
        if (strcmp(ay_str(n), yes[i]) == 0)
            return 1;
    for (size_t i = 0; no[i]; i++)
        if (strcmp(ay_str(n), no[i]) == 0)
            return 0;
    return -1;
}

/* mutex: {name, namespace, database}. */
static int add_mutex(workflow *w, yaml_node_t *mtx)
{
    const char *name = ay_get_str(w->d, mtx, "name");
    if (!ay_is_map(mtx) || !name)
        return ay_error(w->c, w->f, mtx, "a mutex needs a name: mutex: {name: NAME}");
    argo_check_keys(w->f, w->d, mtx, "a mutex", mutex_keys);
    yaml_node_t *dbn = ay_get(w->d, mtx, "database");
    int db = yaml_bool(dbn);
    if (db < 0)
        return ay_error(w->c, w->f, dbn,
                        "a mutex's database is true or false (a YAML boolean, unquoted), "
                        "not %s%s%s: Argo refuses it too; write database: true for a "
                        "database mutex",
                        dbn->type == YAML_SCALAR_NODE ? "the string \"" : "a ",
                        dbn->type == YAML_SCALAR_NODE
                            ? ay_str(dbn)
                            : (dbn->type == YAML_MAPPING_NODE ? "mapping" : "list"),
                        dbn->type == YAML_SCALAR_NODE ? "\"" : "");
    const char *ns = lock_namespace(w, mtx);
    if (!ns)
        return w->c->usage_status;
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
    w->sync = sync;
    argo_check_keys(w->f, w->d, sync, "a synchronization block", sync_keys);
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
    w->tmpl = tmpl;
    int st = sync_block(w, sync);
    yaml_node_t *prio = ay_get(w->d, t, "priority");
    if (!st && !ay_null(prio))
        ay_warn(w->f, prio,
                "template %s's priority is not the lock queue's: Argo queues every lock's "
                "waiters by the workflow's %s.priority (a template's was its pods' "
                "scheduling priority); --priority is the workflow's",
                tmpl, w->spec_path);
    return st ? st : read_priority(w, ay_get(w->d, w->spec, "priority"));
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

static void flags_line(const workflow *w, cli_buf *out)
{
    for (size_t i = 0; i < w->nsems; i++)
        add_word(out, "--semaphore", w->sems[i]);
    for (size_t i = 0; i < w->nmutexes; i++)
        add_word(out, "--mutex", w->mutexes[i]);
    if (w->rebalance_key)
        add_word(out, "--rebalance-key", w->rebalance_key);
    if (w->has_priority) {
        char n[32];
        snprintf(n, sizeof(n), "%lld", w->priority);
        add_word(out, "--priority", n);
    }
}

static void print_flags(const workflow *w)
{
    cli_buf out = {0};
    flags_line(w, &out);
    puts(out.s);
    cli_buf_free(&out);
}

/* The lease of a workflow-level claim: as long as the workflow may run
 * (spec.activeDeadlineSeconds), else a bound to adjust. */
static void workflow_lease(const workflow *w, char *buf, size_t cap)
{
    const char *ads = ay_get_str(w->d, w->spec, "activeDeadlineSeconds");
    char *end = NULL;
    long long s = ads ? strtoll(ads, &end, 10) : 0;
    if (ads && *ads && !*end && s > 0 && s < 100000000)
        snprintf(buf, cap, "%llds", s);
    else
        snprintf(buf, cap, "4h");
}

/* Which kind of block it is, on stderr. A workflow-level block is held by
 * Argo for the whole workflow, across its pods: flags under one step's
 * `sluice run` would hold it for that pod alone, so say so loudly and how
 * to carry it (docs/integrations/argo.md, "Workflow-level locks"). */
static void tell_level(const workflow *w)
{
    if (w->tmpl) {
        ay_note(w->f, w->sync,
                "template %s's block is template-level: Argo holds it while each of the "
                "template's pods runs, as `sluice run FLAGS -- COMMAND` does in the pod",
                w->tmpl);
        return;
    }
    cli_buf line = {0};
    flags_line(w, &line);
    char lease[32];
    workflow_lease(w, lease, sizeof(lease));
    ay_warn(w->f, w->sync,
            "%s %s's %s.synchronization is a WORKFLOW-LEVEL lock: Argo holds it for the whole "
            "workflow, across all of its pods. These flags under one step's `sluice run` "
            "would hold it for that step's pod alone. Carry it as a claim that the workflow's "
            "first step takes and its exit handler (spec.onExit) ends:\n"
            "  first step:    sluice acquire --holder '{{workflow.uid}}/workflow' --timeout %s "
            "--lease %s %s\n"
            "  exit handler:  sluice claims release --holder-prefix '{{workflow.uid}}/'\n"
            "The lease bounds a claim whose exit handler never ran: keep it, and the wait, as "
            "long as the workflow may run (its activeDeadlineSeconds). Recipe: "
            "docs/integrations/argo.md, \"Workflow-level locks\"",
            w->kind, w->name, w->spec_path, lease, lease, line.s);
    cli_buf_free(&line);
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
    cli_buf_add(&out, "{\"level\": ");
    argo_json_str(w->tmpl ? "template" : "workflow", &out);
    cli_buf_add(&out, ", ");
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
        tell_level(w);
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
    argo_opts o = {0};
    int n = 0;
    int st = argo_parse_args(c, flags_flags, argc, argv, pos, &n, &o);
    const char *tmpl = o.tmpl;
    w.ns_flag = o.ns;
    free(o.configmaps);
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
