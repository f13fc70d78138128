/* conf_sems.c - a semaphore of the configuration file: its rules
 * (strategy, preemption, queue, rate) and its weights. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf_load.h"
#include "duration.h"
#include "sem_rules.h"

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
        return sl__conf_fail(ld, path,
                             "a rebalance key must be a single value, like paying, not %s",
                             k->type == YAML_SEQUENCE_NODE ? "a list" : "keys with values");
    const char *key = (const char *)k->data.scalar.value;
    if (k->data.scalar.length == 0 || k->data.scalar.length > SL_NAME_MAX ||
        strlen(key) != k->data.scalar.length)
        return sl__conf_fail(ld, path, MSG_WEIGHT_KEY_FMT, key);
    size_t at = strcspn(key, SL_CONTROL_BYTES);
    if (key[at])
        return sl__conf_fail(
            ld, path,
            "a rebalance key has a control character (byte 0x%02x) at position %zu; use "
            "printable characters only, as a claim's rebalance_key does",
            (unsigned char)key[at], at + 1);
    snprintf(path, sizeof(path), "semaphores[%zu].weights.%.*s", i, KEY_IN_PATH, key);
    for (size_t e = 0; e < j; e++)
        if (strcmp(w[e].key, key) == 0)
            return sl__conf_fail(ld, path, "is given twice; keep one");
    ld->here = &v->start_mark;
    if (v->type != YAML_SCALAR_NODE)
        return sl__conf_fail(ld, path, "expected a single value, found %s; write a weight, like 3",
                             v->type == YAML_SEQUENCE_NODE ? "a list" : "keys with values");
    const char *text = (const char *)v->data.scalar.value;
    uint64_t weight = 0;
    if (sl__conf_range(ld, path, text, 1, SL_WEIGHT_MAX, "3", &weight) != 0)
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
        return sl__conf_fail(ld, path, "is given twice; keep one");
    if (!node || (node->type == YAML_SCALAR_NODE && node->data.scalar.length == 0 &&
                  node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE))
        return 0; /* left out, or "weights:" and nothing, like an empty section */
    if (s->strategy != SL_REBALANCED)
        return sl__conf_fail(ld, path, MSG_REBALANCED_ONLY);
    if (node->type != YAML_MAPPING_NODE)
        return sl__conf_fail(
            ld, path,
            "expected keys with values (a rebalance key and its weight, like paying: 3), "
            "found %s",
            node->type == YAML_SEQUENCE_NODE ? "a list" : "a single value");
    size_t n = (size_t)(node->data.mapping.pairs.top - node->data.mapping.pairs.start);
    if (n > SL_WEIGHTS_MAX)
        return sl__conf_fail(ld, path, MSG_WEIGHTS_MAX_FMT, n);
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
    if (rs->preempt &&
        sl__conf_bool(ld, sem_path(path, i, "preempt"), rs->preempt, &r->preempt) != 0)
        return -1;
    r->preempt_grace_ms = r->preempt ? CONF_PREEMPT_GRACE_DEFAULT_MS : 0;
    if (!rs->preempt_grace)
        return 0;
    sem_path(path, i, "preempt_grace");
    if (!r->preempt)
        return sl__conf_fail(ld, path, MSG_GRACE_NEEDS_PREEMPT);
    return sl__conf_duration(ld, path, rs->preempt_grace, &r->preempt_grace_ms);
}

static int conv_queue(loader *ld, const raw_sem *rs, size_t i, sl_sem_rules *r)
{
    char path[PATH_CAP];
    uint64_t v = 0;
    if (rs->max_pending && sl__conf_count(ld, sem_path(path, i, "max_pending"), rs->max_pending,
                                          SL_LIMIT_MAX, "50", &v) != 0)
        return -1;
    r->max_pending = (uint32_t)v;
    if (!rs->on_full)
        return 0;
    sem_path(path, i, "on_full");
    if (sl_on_full_parse(rs->on_full, &r->on_full) != 0)
        return sl__conf_fail(
            ld, path,
            "\"%.100s\" is not a way to meet a full queue; use reject (a claim arriving "
            "at a full queue is refused) or drop_oldest (the oldest waiter gives way)",
            rs->on_full);
    if (r->max_pending == 0)
        return sl__conf_fail(ld, path, MSG_ON_FULL_NEEDS_MAX_PENDING);
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
        return sl__conf_fail(ld, path, MSG_REBALANCED_ONLY);
    if (sl__conf_range(ld, path, rs->default_weight, 1, SL_WEIGHT_MAX, "1", &v) != 0)
        return -1;
    s->rules.default_weight = (uint32_t)v;
    return 0;
}

static int conv_rate(loader *ld, const raw_sem *rs, size_t i, sl_sem_rules *r)
{
    char path[PATH_CAP];
    uint64_t v = 0;
    if (rs->burst && !rs->rate)
        return sl__conf_fail(ld, sem_path(path, i, "burst"), MSG_BURST_NEEDS_RATE);
    if (!rs->rate)
        return 0;
    const char *problem = sl_rate_problem(rs->rate);
    if (problem)
        return sl__conf_fail(
            ld, sem_path(path, i, "rate"),
            "\"%.100s\" %s; write N/PERIOD, a number of grants per a duration, like "
            "100/1m or 5/1s",
            rs->rate, problem);
    sl_rate_parse(rs->rate, &r->rate_count, &r->rate_period_ms);
    if (rs->burst &&
        sl__conf_range(ld, sem_path(path, i, "burst"), rs->burst, 1, SL_LIMIT_MAX, "5", &v) != 0)
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
    if (rs->backdate && sl__conf_duration(ld, sem_path(path, i, "backdate"), rs->backdate,
                                          &s->rules.backdate_ms) != 0)
        return -1;
    return 0;
}

static int conv_semaphore(loader *ld, weights_doc *wd, const raw_sem *rs, size_t i, sl_conf_sem *s)
{
    char path[PATH_CAP];
    uint64_t limit = 0;
    s->name = sl__conf_xstrdup(rs->name ? rs->name : "");
    if (sl__conf_count(ld, sem_path(path, i, "limit"), rs->limit ? rs->limit : "", SL_LIMIT_MAX,
                       "65536", &limit) != 0)
        return -1;
    s->limit = (uint32_t)limit;
    s->strategy = SL_STRICT;
    sem_path(path, i, "strategy");
    if (rs->strategy && sl_strategy_parse(rs->strategy, &s->strategy) != 0)
        return sl__conf_fail(
            ld, path, "\"%.100s\" is not a strategy; use strict, skip or rebalanced", rs->strategy);
    if (rs->lease &&
        sl__conf_duration(ld, sem_path(path, i, "lease"), rs->lease, &s->lease_ms) != 0)
        return -1;
    s->overtake_ms = SL_OVERTAKE_DEFAULT_MS;
    sem_path(path, i, "overtake_limit");
    if (rs->overtake_limit && s->strategy != SL_SKIP)
        return sl__conf_fail(ld, path,
                             "applies to the skip strategy only; leave it out or use "
                             "strategy: skip");
    if (rs->overtake_limit && sl__conf_duration(ld, path, rs->overtake_limit, &s->overtake_ms) != 0)
        return -1;
    return conv_rules(ld, wd, rs, i, s);
}

int sl__conf_semaphores(loader *ld, const raw_conf *r, sl_conf *n)
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
