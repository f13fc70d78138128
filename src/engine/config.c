/* config.c - semaphore configurations: exact names and patterns.
 *
 * A configuration gives a semaphore its limit, strategy and default lease.
 * An exact name beats any pattern and the longest matching pattern wins.
 * Patterns are few and change rarely, so matching is a scan of the patterns
 * and a change to a pattern looks again at every semaphore not configured
 * by exact name: the cost sits on configuration calls, never on claims. */
#include <string.h>

#include "engine_int.h"

/* The namespaces tags and groups make locks in ("tag/", "group/"): the
 * length of the one name starts with, else 0. */
static size_t reserved_prefix(const char *name, size_t len)
{
    static const char *const spaces[] = {"tag/", "group/"};
    for (size_t i = 0; i < sizeof(spaces) / sizeof(spaces[0]); i++) {
        size_t n = strlen(spaces[i]);
        if (len >= n && memcmp(name, spaces[i], n) == 0)
            return n;
    }
    return 0;
}

/* Whether pattern p configures name. A pattern reaches into the tag and
 * group namespaces only when it names them: a catch-all "*" (or "g*")
 * must not turn every concurrency group into an N-slot semaphore, nor make
 * every tag a lock. */
static bool pattern_matches(const sl_config *p, const char *name, size_t len)
{
    size_t plen = (size_t)p->len - 1;
    if (plen > len || memcmp(p->name, name, plen) != 0)
        return false;
    size_t ns = reserved_prefix(name, len);
    return ns == 0 || plen >= ns;
}

const sl_config *sl__config_resolve(const sl_engine *eng, const char *name, size_t len)
{
    sl_hnode *n = sl__hash_find(&eng->configs, name, len);
    if (n)
        return sl__container_of(n, sl_config, hnode);
    const sl_config *best = NULL;
    for (size_t i = 0; i < eng->patterns.n; i++) {
        const sl_config *p = eng->patterns.v[i];
        if (pattern_matches(p, name, len) && (!best || p->len > best->len))
            best = p;
    }
    return best;
}

/* Every semaphore not configured by exact name takes its configuration
 * again, since the set of patterns or their values changed. */
static void reresolve_list(sl_engine *eng, sl_lock *l)
{
    while (l) {
        sl_lock *next = l->next;
        if (l->kind == SL_KIND_SEMAPHORE && (!l->cfg || l->cfg->pattern))
            sl__lock_apply_config(eng, l, sl__config_resolve(eng, l->key + 4, l->keylen - 4u));
        l = next;
    }
}

static void reresolve_patterned(sl_engine *eng)
{
    reresolve_list(eng, eng->active_head);
    reresolve_list(eng, eng->idle_head);
}

static int bad(sl_error *err, const char *what, const char *field, const char *name,
               int64_t value)
{
    sl__error_set(err, SL_EINVAL, what, field, name, value);
    return SL_EINVAL;
}

static int check_weights(const char *name, const sl_sem_rules *r, sl_error *err)
{
    if (r->nweights > SL_WEIGHTS_MAX)
        return bad(err, "at most 256 keys have their own weight", "weights", name,
                   (int64_t)r->nweights);
    if (r->default_weight > SL_WEIGHT_MAX)
        return bad(err, "a weight is 1 to 1000000", "default_weight", name, r->default_weight);
    for (size_t i = 0; i < r->nweights; i++) {
        const sl_weight *w = &r->weights[i];
        size_t len = w->key ? strlen(w->key) : 0;
        if (len == 0 || len > SL_NAME_MAX)
            return bad(err, "a weighted rebalance key is 1 to 253 characters", "weights", name,
                       0);
        if (w->weight == 0 || w->weight > SL_WEIGHT_MAX)
            return bad(err, "a weight is 1 to 1000000", "weights", name, w->weight);
        for (size_t j = 0; j < i; j++)
            if (strcmp(r->weights[j].key, w->key) == 0)
                return bad(err, "a rebalance key is weighted twice", "weights", name, 0);
    }
    return 0;
}

/* The rules of sl_sem_rules: each off when zeroed, bounded when on. */
static int check_rules(const char *name, const sl_sem_opts *o, sl_error *err)
{
    const sl_sem_rules *r = &o->rules;
    if (r->preempt_grace_ms < 0)
        return bad(err, "preempt_grace is 0 (at once) or a positive duration", "preempt_grace",
                   name, r->preempt_grace_ms);
    if (r->preempt && o->strategy == SL_REBALANCED)
        return bad(err,
                   "preempt applies to strict and skip semaphores: a rebalanced one hands "
                   "out slots by share, not by priority",
                   "preempt", name, 0);
    if ((unsigned)r->on_full > SL_ON_FULL_DROP_OLDEST)
        return bad(err, "on_full is reject or drop_oldest", "on_full", name, r->on_full);
    if (r->max_pending > SL_LIMIT_MAX)
        return bad(err, "max_pending is at most 1000000000", "max_pending", name,
                   r->max_pending);
    if ((r->nweights > 0 || r->default_weight > 0) && o->strategy != SL_REBALANCED)
        return bad(err, "weights apply to the rebalanced strategy only", "weights", name, 0);
    int rc = check_weights(name, r, err);
    if (rc)
        return rc;
    if (r->rate_count > SL_LIMIT_MAX || r->rate_burst > SL_LIMIT_MAX)
        return bad(err, "a rate allows at most 1000000000 grants per period", "rate", name,
                   r->rate_count);
    if (r->rate_count > 0 && r->rate_period_ms <= 0)
        return bad(err, "a rate's period is a positive duration", "rate", name,
                   r->rate_period_ms);
    if (r->rate_count > 0 &&
        (uint64_t)(r->rate_burst ? r->rate_burst : r->rate_count) >
            ((uint64_t)1 << 62) / (uint64_t)r->rate_period_ms)
        return bad(err, "a rate's burst times its period is too large; use a shorter period",
                   "rate", name, r->rate_period_ms);
    if (r->rate_count == 0 && r->rate_burst > 0)
        return bad(err, "a burst needs a rate", "rate_burst", name, r->rate_burst);
    if (r->backdate_ms < 0)
        return bad(err, "backdate is 0 (none) or a positive duration", "backdate", name,
                   r->backdate_ms);
    return 0;
}

static int check_set(const char *name, size_t len, const sl_sem_opts *o, bool saved,
                     sl_error *err)
{
    if (!(saved ? sl__name_valid_saved(name, len, true) : sl_name_valid(name, len, true))) {
        sl__error_set(err, SL_EINVAL,
                      "a semaphore name is 1 to 253 characters of A-Z a-z 0-9 . _ - / : =, "
                      "no leading or trailing '/', no '//', no '.' or '..' segment, optionally "
                      "ending in '*'",
                      "name", name, 0);
        return SL_EINVAL;
    }
    if (o->limit > SL_LIMIT_MAX) {
        sl__error_set(err, SL_EINVAL, "a limit is at most 1000000000", "limit", name, o->limit);
        return SL_EINVAL;
    }
    if ((unsigned)o->strategy > SL_REBALANCED) {
        sl__error_set(err, SL_EINVAL, "strategy is strict, skip or rebalanced", "strategy",
                      name, o->strategy);
        return SL_EINVAL;
    }
    if (o->lease_ms < 0) {
        sl__error_set(err, SL_EINVAL, "a lease is 0 (none) or a positive duration", "lease",
                      name, o->lease_ms);
        return SL_EINVAL;
    }
    if (o->overtake_ms < 0) {
        sl__error_set(err, SL_EINVAL, "an overtake limit is 0 (none) or a positive duration",
                      "overtake_limit", name, o->overtake_ms);
        return SL_EINVAL;
    }
    return check_rules(name, o, err);
}

/* Copies the rules, the weights into one block the configuration owns. */
static void rules_set(sl_engine *eng, sl_config *cfg, const sl_sem_rules *r)
{
    sl__free(&eng->mem, (void *)cfg->rules.weights);
    cfg->rules = *r;
    cfg->rules.weights = NULL;
    if (r->nweights == 0)
        return;
    size_t bytes = r->nweights * sizeof(sl_weight);
    for (size_t i = 0; i < r->nweights; i++)
        bytes += strlen(r->weights[i].key) + 1;
    sl_weight *w = sl__calloc(&eng->mem, 1, bytes);
    char *p = (char *)(w + r->nweights);
    for (size_t i = 0; i < r->nweights; i++) {
        size_t len = strlen(r->weights[i].key);
        memcpy(p, r->weights[i].key, len + 1);
        w[i] = (sl_weight){p, r->weights[i].weight};
        p += len + 1;
    }
    cfg->rules.weights = w;
}

static void config_free(sl_engine *eng, sl_config *cfg)
{
    sl__free(&eng->mem, (void *)cfg->rules.weights);
    sl__free(&eng->mem, cfg);
}

static sl_config *config_new(sl_engine *eng, const char *name, size_t len)
{
    sl_config *cfg = sl__calloc(&eng->mem, 1, sizeof(*cfg) + len + 1);
    memcpy(cfg->name, name, len);
    cfg->len = (uint16_t)len;
    cfg->pattern = name[len - 1] == '*';
    sl__hash_insert(&eng->configs, &cfg->hnode);
    if (cfg->pattern)
        sl__pvec_push(&eng->mem, &eng->patterns, cfg);
    return cfg;
}

/* Gives a configuration its values and the semaphores it configures too:
 * the one of its name, or every one a pattern may now match. */
static void config_apply(sl_engine *eng, sl_config *cfg, const sl_sem_opts *o)
{
    cfg->limit = o->limit;
    cfg->strategy = o->strategy;
    cfg->lease_ms = o->lease_ms;
    cfg->overtake_ms = o->overtake_ms;
    rules_set(eng, cfg, &o->rules);
    if (cfg->pattern) {
        reresolve_patterned(eng);
        return;
    }
    char key[SL_LOCK_KEY_MAX + 1];
    size_t klen;
    sl__lock_key(SL_KIND_SEMAPHORE, cfg->name, cfg->len, key, &klen);
    sl__lock_apply_config(eng, sl__lock_get(eng, key, klen), cfg);
}

void sl_sem_opts_default(sl_sem_opts *o, uint32_t limit)
{
    memset(o, 0, sizeof(*o));
    o->limit = limit;
    o->strategy = SL_STRICT;
    o->lease_ms = 0;
    o->overtake_ms = SL_OVERTAKE_DEFAULT_MS;
}

int sl_sem_set(sl_engine *eng, const char *name, uint32_t limit, sl_strategy strategy,
               int64_t lease_ms, int64_t now, sl_error *err)
{
    sl_sem_opts o;
    sl_sem_opts_default(&o, limit);
    o.strategy = strategy;
    o.lease_ms = lease_ms;
    return sl_sem_configure(eng, name, &o, now, err);
}

static bool weights_same(const sl_sem_rules *a, const sl_sem_rules *b)
{
    if (a->nweights != b->nweights || a->default_weight != b->default_weight)
        return false;
    for (size_t i = 0; i < b->nweights; i++) {
        size_t j = 0;
        while (j < a->nweights && strcmp(a->weights[j].key, b->weights[i].key) != 0)
            j++;
        if (j == a->nweights || a->weights[j].weight != b->weights[i].weight)
            return false;
    }
    return true;
}

static bool rules_same(const sl_sem_rules *a, const sl_sem_rules *b)
{
    return a->preempt == b->preempt && a->preempt_grace_ms == b->preempt_grace_ms &&
           a->max_pending == b->max_pending && a->on_full == b->on_full &&
           a->rate_count == b->rate_count && a->rate_period_ms == b->rate_period_ms &&
           a->rate_burst == b->rate_burst && a->backdate_ms == b->backdate_ms &&
           weights_same(a, b);
}

static bool config_same(const sl_config *cfg, const sl_sem_opts *o)
{
    return cfg->limit == o->limit && cfg->strategy == o->strategy &&
           cfg->lease_ms == o->lease_ms && cfg->overtake_ms == o->overtake_ms &&
           rules_same(&cfg->rules, &o->rules);
}

static void opts_of(const sl_config *cfg, sl_sem_opts *out)
{
    *out = (sl_sem_opts){cfg->limit, cfg->strategy, cfg->lease_ms, cfg->overtake_ms,
                         cfg->rules};
    out->rules.weights = NULL;
    out->rules.nweights = 0;
}

/* What the event says changed, taken before the change. */
static sl_sem_change *change_new(sl_engine *eng, const sl_config *cfg, const sl_sem_opts *o)
{
    sl_sem_change *chg = sl__batch_alloc(eng, sizeof(*chg));
    chg->created = cfg == NULL;
    chg->weights = cfg ? !weights_same(&cfg->rules, &o->rules) : o->rules.nweights > 0;
    if (cfg)
        opts_of(cfg, &chg->before);
    chg->after = *o;
    chg->after.rules.weights = NULL;
    chg->after.rules.nweights = 0;
    return chg;
}

/* Writes down the rate buckets a change may touch, under the rules they
 * have now: the change keeps their level (rate.c), and a semaphore that had
 * a bucket from a pattern keeps it under a new exact configuration. A pattern's semaphores
 * with a rate are all on the active list (lock.c keeps them there). */
static void settle_buckets(sl_engine *eng, const char *name, size_t len, int64_t now)
{
    if (name[len - 1] == '*') {
        for (sl_lock *l = eng->active_head; l; l = l->next)
            if (l->kind == SL_KIND_SEMAPHORE && (!l->cfg || l->cfg->pattern))
                sl__rate_settle(eng, l, now);
        return;
    }
    char key[SL_LOCK_KEY_MAX + 1];
    size_t klen;
    sl__lock_key(SL_KIND_SEMAPHORE, name, len, key, &klen);
    sl_lock *l = sl__lock_find(eng, key, klen);
    if (l)
        sl__rate_settle(eng, l, now);
}

int sl_sem_configure(sl_engine *eng, const char *name, const sl_sem_opts *o, int64_t now,
                     sl_error *err)
{
    size_t len = name ? strlen(name) : 0;
    int rc = check_set(name, len, o, false, err);
    if (rc)
        return rc;
    sl_engine_advance(eng, now);
    sl_hnode *n = sl__hash_find(&eng->configs, name, len);
    sl_config *cfg = n ? sl__container_of(n, sl_config, hnode) : NULL;
    if (!cfg) {
        if (sl__hash_count(&eng->configs) >= eng->opts.configs_max) {
            sl__error_set(err, SL_ELIMIT, "too many semaphore configurations", "name", name,
                          (int64_t)eng->opts.configs_max);
            return SL_ELIMIT;
        }
    } else if (config_same(cfg, o)) {
        return 0; /* set again as it is: nothing changes, not even a bucket */
    }
    sl_sem_change *chg = change_new(eng, cfg, o);
    settle_buckets(eng, name, len, now);
    if (!cfg) {
        cfg = config_new(eng, name, len);
        cfg->at_start = eng->starting;
    }
    config_apply(eng, cfg, o);
    sl__event_sem(eng, SL_EV_SEMAPHORE_UPDATED, cfg, cfg->name, now)->change = chg;
    sl__changes_config(eng, cfg->name);
    sl__settle(eng, now);
    return 0;
}

/* A semaphore the configuration configures that has holders or waiters. */
static const sl_lock *config_in_use(const sl_engine *eng, const sl_config *cfg)
{
    for (const sl_lock *l = eng->active_head; l; l = l->next)
        if (l->cfg == cfg && sl__lock_busy(l))
            return l;
    return NULL;
}

static void unbind_list(sl_engine *eng, sl_lock *l, const sl_config *cfg)
{
    while (l) {
        sl_lock *next = l->next;
        if (l->cfg == cfg)
            sl__lock_apply_config(eng, l, sl__config_resolve(eng, l->key + 4, l->keylen - 4u));
        l = next;
    }
}

int sl_sem_delete(sl_engine *eng, const char *name, int64_t now, sl_error *err)
{
    size_t len = name ? strlen(name) : 0;
    sl_engine_advance(eng, now);
    sl_hnode *n = len ? sl__hash_find(&eng->configs, name, len) : NULL;
    if (!n) {
        sl__error_set(err, SL_ENOTFOUND, "no semaphore or pattern is configured by that name",
                      "name", name, 0);
        return SL_ENOTFOUND;
    }
    sl_config *cfg = sl__container_of(n, sl_config, hnode);
    const sl_lock *busy = config_in_use(eng, cfg);
    if (busy && cfg->pattern) {
        sl__error_set(err, SL_ECONFLICT,
                      "this semaphore, made from the pattern, has holders or waiters; delete the "
                      "pattern once no semaphore made from it is in use",
                      "name", busy->key + 4, 0);
        return SL_ECONFLICT;
    }
    if (busy) {
        sl__error_set(err, SL_ECONFLICT,
                      "the semaphore has holders or waiters; delete it once they are gone",
                      "name", name, 0);
        return SL_ECONFLICT;
    }
    sl__hash_remove(&eng->configs, &cfg->hnode);
    for (size_t i = 0; i < eng->patterns.n; i++) {
        if (eng->patterns.v[i] == cfg) {
            eng->patterns.v[i] = eng->patterns.v[--eng->patterns.n];
            break;
        }
    }
    unbind_list(eng, eng->active_head, cfg);
    unbind_list(eng, eng->idle_head, cfg);
    sl__event_sem(eng, SL_EV_SEMAPHORE_DELETED, NULL, cfg->name, now);
    sl__changes_config(eng, sl__batch_strdup(eng, cfg->name, cfg->len));
    config_free(eng, cfg);
    sl__settle(eng, now);
    return 0;
}

const sl_config *sl_config_find(const sl_engine *eng, const char *name)
{
    sl_hnode *n = name ? sl__hash_find(&eng->configs, name, strlen(name)) : NULL;
    return n ? sl__container_of(n, sl_config, hnode) : NULL;
}

const sl_config *sl_config_next(const sl_engine *eng, const sl_config *prev)
{
    sl_hnode *n = prev ? sl__hash_next(&eng->configs, &prev->hnode)
                       : sl__hash_first(&eng->configs);
    return n ? sl__container_of(n, sl_config, hnode) : NULL;
}

void sl_config_get(const sl_config *cfg, sl_config_view *out)
{
    out->name = cfg->name;
    out->pattern = cfg->pattern;
    out->limit = cfg->limit;
    out->strategy = cfg->strategy;
    out->lease_ms = cfg->lease_ms;
    out->overtake_ms = cfg->overtake_ms;
    out->rules = cfg->rules;
}

int sl_engine_restore_config(sl_engine *eng, const char *name, const sl_sem_opts *o)
{
    size_t len = name ? strlen(name) : 0;
    int rc = check_set(name, len, o, true, NULL);
    if (rc)
        return rc;
    if (sl__hash_find(&eng->configs, name, len))
        return SL_ECONFLICT;
    sl__restore_finish(eng); /* claims came first, against the order asked */
    sl_config *cfg = config_new(eng, name, len);
    cfg->at_start = true;
    config_apply(eng, cfg, o);
    return 0;
}

void sl__config_free_all(sl_engine *eng)
{
    sl_pvec all = {0};
    for (sl_hnode *n = sl__hash_first(&eng->configs); n; n = sl__hash_next(&eng->configs, n))
        sl__pvec_push(&eng->mem, &all, sl__container_of(n, sl_config, hnode));
    for (size_t i = 0; i < all.n; i++) {
        sl__hash_remove(&eng->configs, &((sl_config *)all.v[i])->hnode);
        config_free(eng, all.v[i]);
    }
    sl__pvec_free(&eng->mem, &all);
}
