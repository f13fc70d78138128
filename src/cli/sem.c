/* sem.c - semaphores (also called pools) and mutexes.
 *
 *   sluice sem list | info NAME | rm NAME
 *   sluice sem set NAME LIMIT [--strategy S] [--lease D] [--overtake-limit D]
 *                  [--preempt [--preempt-grace D]] [--max-pending N [--on-full F]]
 *                  [--weight KEY=N]... [--default-weight N] [--rate N/PERIOD [--burst N]]
 *                  [--backdate D]
 *   sluice pools ...      the same commands, by the name pool users know
 *   sluice mutex list | info NAME
 *
 * Listings are one row per lock; info shows one lock, its rules, its
 * holders and its queue. --json prints the server's own JSON for each.
 * set sends the whole configuration (a PUT replaces it): a rule whose flag
 * is not given is off. Flags are checked here for their syntax only (exit
 * 2 with the fix); what the server refuses (a companion flag without its
 * rule, a weight on a strict semaphore...) it says itself (exit 1). */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum {
    SF_STRATEGY = 1,
    SF_LEASE,
    SF_OVERTAKE,
    SF_PREEMPT,
    SF_PREEMPT_GRACE,
    SF_MAX_PENDING,
    SF_ON_FULL,
    SF_WEIGHT,
    SF_DEFAULT_WEIGHT,
    SF_RATE,
    SF_BURST,
    SF_BACKDATE,
};

static const cli_flag set_flags[] = {
    {"strategy", true, SF_STRATEGY},
    {"lease", true, SF_LEASE},
    {"overtake-limit", true, SF_OVERTAKE},
    {"preempt", false, SF_PREEMPT},
    {"preempt-grace", true, SF_PREEMPT_GRACE},
    {"max-pending", true, SF_MAX_PENDING},
    {"on-full", true, SF_ON_FULL},
    {"weight", true, SF_WEIGHT},
    {"default-weight", true, SF_DEFAULT_WEIGHT},
    {"rate", true, SF_RATE},
    {"burst", true, SF_BURST},
    {"backdate", true, SF_BACKDATE},
    {0},
};

#define MAX_WEIGHTS 256    /* docs/api.md: at most 256 keys */
#define MAX_WEIGHT 1000000 /* docs/api.md: a weight is 1 to 1 000 000 */
#define MAX_COUNT 1000000000LL

/* What set's flags gave; durations as "NNNms" strings (NULL: not given). */
typedef struct set_opts {
    sl_client_semaphore_config cfg;
    sl_client_weight_req weights[MAX_WEIGHTS];
    char *owned[MAX_WEIGHTS + 8];
    size_t nowned;
} set_opts;

static const char *own(set_opts *o, char *s)
{
    o->owned[o->nowned++] = s;
    return s;
}

static void set_opts_free(set_opts *o)
{
    for (size_t i = 0; i < o->nowned; i++)
        free(o->owned[i]);
}

/* A duration flag into an "NNNms" string; false after a usage message. */
static bool duration_opt(const cli *c, set_opts *o, const char *flag, const char *val,
                         const char **out)
{
    int64_t ms;
    if (!cli_duration_arg(c, flag, val, &ms))
        return false;
    char buf[32];
    snprintf(buf, sizeof(buf), "%lldms", (long long)ms);
    *out = own(o, cli_xstrdup(buf));
    return true;
}

/* --rate N/PERIOD: N a whole number from 1, PERIOD a duration or a bare
 * unit (h, m, s, ms). Whether PERIOD is above 0 the server says. */
static bool rate_ok(const char *val)
{
    const char *slash = strchr(val, '/');
    if (!slash || slash == val || !slash[1])
        return false;
    for (const char *p = val; p < slash; p++)
        if (*p < '0' || *p > '9')
            return false;
    if (slash - val > 10 || strtoll(val, NULL, 10) < 1 || strtoll(val, NULL, 10) > MAX_COUNT)
        return false;
    const char *per = slash + 1;
    int64_t ms;
    return strcmp(per, "h") == 0 || strcmp(per, "m") == 0 || strcmp(per, "s") == 0 ||
           strcmp(per, "ms") == 0 || cli_duration_parse(per, &ms) == 0;
}

/* One of set's flags; false after a usage message. */
static bool set_flag(const cli *c, set_opts *o, int id, const char *val)
{
    sl_client_semaphore_config *cfg = &o->cfg;
    long long n;
    switch (id) {
    case SF_STRATEGY:
        if (strcmp(val, "strict") != 0 && strcmp(val, "skip") != 0 &&
            strcmp(val, "rebalanced") != 0) {
            cli_usage(c, "--strategy takes strict, skip or rebalanced, not '%s'", val);
            return false;
        }
        cfg->strategy = val;
        return true;
    case SF_LEASE:
        return duration_opt(c, o, "--lease", val, &cfg->lease);
    case SF_OVERTAKE:
        return duration_opt(c, o, "--overtake-limit", val, &cfg->overtake_limit);
    case SF_PREEMPT:
        cfg->preempt = true;
        return true;
    case SF_PREEMPT_GRACE:
        return duration_opt(c, o, "--preempt-grace", val, &cfg->preempt_grace);
    case SF_MAX_PENDING:
        if (!cli_parse_int(c, "--max-pending", val, 0, MAX_COUNT, &n))
            return false;
        cfg->max_pending = (uint64_t)n;
        return true;
    case SF_ON_FULL:
        if (strcmp(val, "reject") != 0 && strcmp(val, "drop_oldest") != 0) {
            cli_usage(c, "--on-full takes reject or drop_oldest, not '%s'", val);
            return false;
        }
        cfg->on_full = val;
        return true;
    case SF_WEIGHT: {
        const char *eq = strrchr(val, '=');
        if (!eq || eq == val) {
            cli_usage(c,
                      "--weight takes KEY=N (a rebalance key and its weight), such as "
                      "--weight acme=3, not '%s'",
                      val);
            return false;
        }
        char what[64];
        snprintf(what, sizeof(what), "the weight in --weight %.*s=N",
                 (int)(eq - val) > 20 ? 20 : (int)(eq - val), val);
        if (!cli_parse_int(c, what, eq + 1, 1, MAX_WEIGHT, &n))
            return false;
        char *key = cli_xmalloc((size_t)(eq - val) + 1);
        memcpy(key, val, (size_t)(eq - val));
        key[eq - val] = '\0';
        own(o, key);
        for (size_t i = 0; i < cfg->nweights; i++)
            if (strcmp(o->weights[i].key, key) == 0) {
                cli_usage(c, "--weight gives the key '%s' twice: give each key once", key);
                return false;
            }
        if (cfg->nweights == MAX_WEIGHTS) {
            cli_usage(c, "at most %d --weight flags (keys) on one semaphore", MAX_WEIGHTS);
            return false;
        }
        o->weights[cfg->nweights].key = key;
        o->weights[cfg->nweights++].weight = (uint64_t)n;
        cfg->weights = o->weights;
        return true;
    }
    case SF_DEFAULT_WEIGHT:
        if (!cli_parse_int(c, "--default-weight", val, 1, MAX_WEIGHT, &n))
            return false;
        cfg->default_weight = (uint64_t)n;
        return true;
    case SF_RATE:
        if (!rate_ok(val)) {
            cli_usage(c,
                      "--rate takes N/PERIOD, N grants (1 to 1000000000) per PERIOD (a "
                      "duration or a unit: h, m, s, ms), such as --rate 30/1m or --rate "
                      "5/s, not '%s'",
                      val);
            return false;
        }
        cfg->rate = val;
        return true;
    case SF_BURST:
        if (!cli_parse_int(c, "--burst", val, 1, MAX_COUNT, &n))
            return false;
        cfg->burst = (uint64_t)n;
        return true;
    case SF_BACKDATE:
        return duration_opt(c, o, "--backdate", val, &cfg->backdate);
    }
    return true;
}

/* The names of the rules that are on, comma-separated ("-" for none);
 * sep ", " for people, "," in narrow table cells. */
static void rules_on(const sl_client_lock *l, const char *sep, cli_buf *out)
{
    const char *names[6];
    size_t n = 0;
    if (l->preempt)
        names[n++] = "preempt";
    if (l->max_pending)
        names[n++] = "max_pending";
    if (l->nweights || l->default_weight > 1)
        names[n++] = "weights";
    if (l->rate)
        names[n++] = "rate";
    if (l->backdate_ms)
        names[n++] = "backdate";
    if (!n)
        cli_buf_add(out, "-");
    for (size_t i = 0; i < n; i++)
        cli_buf_addf(out, "%s%s", i ? sep : "", names[i]);
}

static void print_list(cli *c, const sl_client_lock_list *list, bool semaphores)
{
    if (c->json) {
        const char **items = cli_xmalloc((list->n ? list->n : 1) * sizeof(*items));
        for (size_t i = 0; i < list->n; i++)
            items[i] = list->items[i].json;
        cli_json_list(semaphores ? "semaphores" : "mutexes", items, list->n, stdout);
        free(items);
        return;
    }
    cli_table *t;
    if (semaphores) {
        static const char *const h[] = {"NAME",    "LIMIT",   "USED",  "STRATEGY", "LEASE",
                                        "HOLDERS", "PENDING", "TOKEN", "FROM",     "RULES"};
        t = cli_table_new(c, 10, h);
    } else {
        static const char *const h[] = {"NAME", "HOLDERS", "PENDING", "TOKEN"};
        t = cli_table_new(c, 4, h);
    }
    for (size_t i = 0; i < list->n; i++) {
        const sl_client_lock *l = &list->items[i];
        cli_table_cell(t, l->name, NULL);
        if (semaphores) {
            char lease[32];
            cli_duration_none(l->lease_ms, lease, sizeof(lease));
            cli_table_cellf(t, NULL, "%llu", (unsigned long long)l->limit);
            cli_table_cellf(t, NULL, "%llu", (unsigned long long)l->used);
            cli_table_cell(t, l->strategy, NULL);
            cli_table_cell(t, lease, NULL);
        }
        cli_table_cellf(t, NULL, "%zu", l->holders_count);
        cli_table_cellf(t, l->pending_count ? cli_color_state(c, "pending") : NULL, "%zu",
                        l->pending_count);
        cli_table_cellf(t, NULL, "%llu", (unsigned long long)l->token);
        if (semaphores) {
            cli_buf rules = {0};
            rules_on(l, ",", &rules);
            cli_table_cell(t,
                           l->from_pattern   ? l->from_pattern
                           : l->inline_limit ? "(inline)"
                                             : "-",
                           NULL);
            cli_table_cell(t, rules.s, NULL);
            cli_buf_free(&rules);
        }
    }
    cli_table_print(t, stdout,
                    semaphores ? "No semaphores. Configure one with: sluice sem set NAME LIMIT"
                               : "No mutex has holders or waiters.");
}

/* The rules of a semaphore: which are on, then a line for each. */
static void print_rules(cli_fields *f, const sl_client_lock *l)
{
    char d[32];
    if (l->overtake_limit_ms >= 0) {
        cli_duration_format(l->overtake_limit_ms, d, sizeof(d));
        cli_fields_add(f, "Overtake limit", NULL, "%s", l->overtake_limit_ms ? d : "none");
    }
    cli_buf on = {0};
    rules_on(l, ", ", &on);
    cli_fields_add(f, "Rules", NULL, "%s", strcmp(on.s, "-") == 0 ? "none" : on.s);
    cli_buf_free(&on);
    if (l->preempt) {
        cli_duration_format(l->preempt_grace_ms, d, sizeof(d));
        cli_fields_add(f, "Preempt", NULL, "yes, grace %s", d);
    }
    if (l->max_pending)
        cli_fields_add(f, "Max pending", NULL, "%llu, on full %s",
                       (unsigned long long)l->max_pending, l->on_full ? l->on_full : "reject");
    if (l->strategy && strcmp(l->strategy, "rebalanced") == 0) {
        cli_buf w = {0};
        for (size_t i = 0; i < l->nweights; i++)
            cli_buf_addf(&w, "%s%s=%llu", i ? ", " : "", l->weights[i].key,
                         (unsigned long long)l->weights[i].weight);
        cli_fields_add(f, "Weights", NULL, "%s (other keys %llu)", w.s ? w.s : "none",
                       (unsigned long long)(l->default_weight ? l->default_weight : 1));
        cli_buf_free(&w);
    }
    if (l->rate)
        cli_fields_add(f, "Rate", NULL, "%s, burst %llu", l->rate, (unsigned long long)l->burst);
    if (l->backdate_ms) {
        cli_duration_format(l->backdate_ms, d, sizeof(d));
        cli_fields_add(f, "Backdate", NULL, "%s", d);
    }
}

/* One lock: its fields, then its holders and its queue. */
static void print_lock(cli *c, const sl_client_lock *l)
{
    if (c->json) {
        printf("%s\n", l->json);
        return;
    }
    cli_fields *f = cli_fields_new(c);
    cli_fields_add(f, "Name", NULL, "%s", l->name);
    cli_fields_add(f, "Kind", NULL, "%s", l->semaphore ? "semaphore" : "mutex");
    if (l->semaphore) {
        char lease[32];
        cli_duration_none(l->lease_ms, lease, sizeof(lease));
        cli_fields_add(f, "Limit", NULL, "%llu", (unsigned long long)l->limit);
        cli_fields_add(f, "Used", NULL, "%llu", (unsigned long long)l->used);
        cli_fields_add(f, "Strategy", NULL, "%s", l->strategy ? l->strategy : "-");
        cli_fields_add(f, "Lease", NULL, "%s", lease);
        if (l->from_pattern)
            cli_fields_add(f, "From pattern", NULL, "%s", l->from_pattern);
        if (l->inline_limit)
            cli_fields_add(f, "Inline", NULL,
                           "yes: made by its claims' inline limit, "
                           "forgotten once none holds or waits");
        print_rules(f, l);
    } else {
        cli_fields_add(f, "Held", NULL, "%s", l->nholders ? "yes" : "no");
    }
    cli_fields_add(f, "Token", NULL, "%llu", (unsigned long long)l->token);
    cli_fields_print(f, stdout);

    printf("\nHolders (%zu):\n", l->nholders);
    if (l->nholders) {
        static const char *const h[] = {"CLAIM", "HOLDER", "SLOTS", "TOKEN", "SINCE", "EXPIRES"};
        cli_table *t = cli_table_new(c, 6, h);
        for (size_t i = 0; i < l->nholders; i++) {
            const sl_client_holder *o = &l->holders[i];
            char since[64], exp[64];
            cli_time(c, o->since_ms, since, sizeof(since));
            cli_time(c, o->expires_ms, exp, sizeof(exp));
            cli_table_cell(t, o->claim, NULL);
            cli_table_cell(t, o->holder, NULL);
            cli_table_cellf(t, NULL, "%u", o->slots);
            cli_table_cellf(t, NULL, "%llu", (unsigned long long)o->token);
            cli_table_cell(t, since, NULL);
            cli_table_cell(t, exp, NULL);
        }
        cli_table_print(t, stdout, NULL);
    }
    printf("\nPending (%zu):\n", l->npending);
    if (l->npending) {
        static const char *const h[] = {"POS",      "CLAIM",   "HOLDER", "SLOTS",
                                        "PRIORITY", "CREATED", "REASON"};
        cli_table *t = cli_table_new(c, 7, h);
        for (size_t i = 0; i < l->npending; i++) {
            const sl_client_waiter *w = &l->pending[i];
            char created[64];
            cli_time(c, w->created_ms, created, sizeof(created));
            cli_table_cellf(t, NULL, "%zu", w->position);
            cli_table_cell(t, w->claim, NULL);
            cli_table_cell(t, w->holder, NULL);
            cli_table_cellf(t, NULL, "%u", w->slots);
            cli_table_cellf(t, NULL, "%d", w->priority);
            cli_table_cell(t, created, NULL);
            cli_table_cell(t, w->reason, NULL);
        }
        cli_table_print(t, stdout, NULL);
    }
}

static int need(cli *c, int n, int want, const char *usage)
{
    if (n == want)
        return 0;
    return cli_usage(c, "%s: sluice %s", n < want ? "missing argument" : "too many arguments",
                     usage);
}

static int sem_set(cli *c, sl_client *cl, const char *name, const char *limit_s, set_opts *o)
{
    long long limit;
    if (!cli_parse_int(c, "LIMIT", limit_s, 0, MAX_COUNT, &limit))
        return CLI_EXIT_USAGE;
    o->cfg.limit = (uint64_t)limit;
    sl_client_lock *l = NULL;
    sl_client_error err = {0};
    if (sl_client_semaphore_put(cl, name, &o->cfg, &l, &err) != SL_CLIENT_OK)
        return cli_fail(c, "cannot configure the semaphore", &err);
    print_lock(c, l);
    sl_client_lock_free(l);
    return 0;
}

static int sem_rm(cli *c, sl_client *cl, const char *name)
{
    sl_client_error err = {0};
    if (sl_client_semaphore_delete(cl, name, &err) != SL_CLIENT_OK) {
        int st = cli_fail(c, "cannot delete the semaphore", &err);
        if (err.status == 409)
            fprintf(stderr, "It has holders or waiters: see 'sluice sem info %s'.\n", name);
        return st;
    }
    /* The server accepted the name, so it holds no character JSON escapes. */
    if (c->json)
        printf("{\"deleted\": \"%s\"}\n", name);
    else
        printf("deleted semaphore %s\n", name);
    return 0;
}

static int lock_info(cli *c, sl_client *cl, const char *name, bool semaphore)
{
    sl_client_lock *l = NULL;
    sl_client_error err = {0};
    int rc = semaphore ? sl_client_semaphore_get(cl, name, &l, &err)
                       : sl_client_mutex_get(cl, name, &l, &err);
    int st = 0;
    if (rc != SL_CLIENT_OK) {
        st = cli_fail(c, semaphore ? "cannot read the semaphore" : "cannot read the mutex", &err);
        if (semaphore && err.status == 404)
            fprintf(stderr, "Configure it with: sluice sem set %s LIMIT\n", name);
    } else {
        print_lock(c, l);
    }
    sl_client_lock_free(l);
    return st;
}

static int lock_list(cli *c, sl_client *cl, bool semaphore)
{
    sl_client_lock_list list = {0};
    sl_client_error err = {0};
    int rc = semaphore ? sl_client_semaphores(cl, &list, &err) : sl_client_mutexes(cl, &list, &err);
    int st = 0;
    if (rc != SL_CLIENT_OK)
        st = cli_fail(c, semaphore ? "cannot list semaphores" : "cannot list mutexes", &err);
    else
        print_list(c, &list, semaphore);
    sl_client_lock_list_free(&list);
    return st;
}

/* Both commands: SUBCOMMAND [ARGS], flags anywhere; list by default. */
static int lock_command(cli *c, int argc, char **argv, bool semaphore)
{
    const char *pos[4], *val = NULL;
    int n = 0, i = 0;
    bool set_given = false;
    static set_opts o; /* large (the weights); one per process */
    for (;;) {
        int r = cli_flag_next(c, semaphore ? set_flags : NULL, argc, argv, &i, &val);
        if (r == CLI_HELP)
            return 0;
        if (r == CLI_BAD)
            return CLI_EXIT_USAGE;
        if (r == CLI_END)
            break;
        if (r == CLI_ARG) {
            if (n == 4)
                return cli_usage(c, "too many arguments");
            pos[n++] = val;
        } else {
            if (!set_flag(c, &o, r, val)) {
                set_opts_free(&o);
                return c->usage_status;
            }
            set_given = true;
        }
    }
    const char *sub = n ? pos[0] : "list";
    int nargs = n ? n - 1 : 0;
    const char *const *args = pos + 1;
    bool list = strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0;
    bool info = strcmp(sub, "info") == 0;
    bool set = semaphore && strcmp(sub, "set") == 0;
    bool rm = semaphore && strcmp(sub, "rm") == 0;
    if (!list && !info && !set && !rm)
        return cli_usage(c, "no command '%s %s': use %s", c->command, sub,
                         semaphore ? "list, info, set or rm" : "list or info");
    if (set_given && !set) {
        set_opts_free(&o);
        return cli_usage(c, "--strategy, --lease and the rules' flags go with '%s set'",
                         c->command);
    }
    /* What each takes: list nothing, set NAME LIMIT, info and rm NAME. */
    int want = 1;
    const char *shape = " NAME";
    if (list) {
        want = 0;
        shape = "";
    } else if (set) {
        want = 2;
        shape = " NAME LIMIT";
    }
    char usage[64];
    snprintf(usage, sizeof(usage), "%s %s%s", c->command, sub, shape);
    int st = need(c, nargs, want, usage);
    sl_client *cl = NULL;
    if (st || (st = cli_connect(c, &cl)) != 0) {
        set_opts_free(&o);
        return st;
    }
    if (list)
        st = lock_list(c, cl, semaphore);
    else if (info)
        st = lock_info(c, cl, args[0], semaphore);
    else if (set)
        st = sem_set(c, cl, args[0], args[1], &o);
    else
        st = sem_rm(c, cl, args[0]);
    sl_client_free(cl);
    set_opts_free(&o);
    return st;
}

int cli_sem(cli *c, int argc, char **argv)
{
    return lock_command(c, argc, argv, true);
}

int cli_mutex(cli *c, int argc, char **argv)
{
    return lock_command(c, argc, argv, false);
}
