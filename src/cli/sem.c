/* sem.c - semaphores (also called pools) and mutexes.
 *
 *   sluice sem list | info NAME | set NAME LIMIT [--strategy S] [--lease D] | rm NAME
 *   sluice pools ...      the same commands, by the name pool users know
 *   sluice mutex list | info NAME
 *
 * Listings are one row per lock; info shows one lock, its holders and its
 * queue. --json prints the server's own JSON for each. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { SF_STRATEGY = 1, SF_LEASE };

static const cli_flag set_flags[] = {
    {"strategy", true, SF_STRATEGY},
    {"lease", true, SF_LEASE},
    {0},
};

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
                                        "HOLDERS", "PENDING", "TOKEN", "FROM"};
        t = cli_table_new(c, 9, h);
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
        if (semaphores)
            cli_table_cell(t, l->from_pattern ? l->from_pattern : "-", NULL);
    }
    cli_table_print(t, stdout,
                    semaphores ? "No semaphores. Configure one with: sluice sem set NAME LIMIT"
                               : "No mutex has holders or waiters.");
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

static int sem_set(cli *c, sl_client *cl, const char *name, const char *limit_s,
                   const char *strategy, int64_t lease_ms)
{
    long long limit;
    if (!cli_parse_int(c, "LIMIT", limit_s, 0, 1000000000, &limit))
        return CLI_EXIT_USAGE;
    char lease[32];
    const char *lease_arg = NULL; /* none given: the server's default */
    if (lease_ms >= 0) {
        snprintf(lease, sizeof(lease), "%lldms", (long long)lease_ms);
        lease_arg = lease;
    }
    sl_client_lock *l = NULL;
    sl_client_error err = {0};
    if (sl_client_semaphore_set(cl, name, (uint64_t)limit, strategy, lease_arg, &l, &err) !=
        SL_CLIENT_OK)
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
    const char *pos[4], *strategy = NULL, *val = NULL;
    int n = 0, i = 0;
    int64_t lease_ms = -1;
    bool set_flag = false;
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
        } else if (r == SF_STRATEGY) {
            if (strcmp(val, "strict") != 0 && strcmp(val, "skip") != 0 &&
                strcmp(val, "rebalanced") != 0)
                return cli_usage(c, "--strategy takes strict, skip or rebalanced, not '%s'", val);
            strategy = val;
            set_flag = true;
        } else if (r == SF_LEASE) {
            if (!cli_duration_arg(c, "--lease", val, &lease_ms))
                return c->usage_status;
            set_flag = true;
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
    if (set_flag && !set)
        return cli_usage(c, "--strategy and --lease go with '%s set'", c->command);
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
    if (st)
        return st;
    sl_client *cl = NULL;
    if ((st = cli_connect(c, &cl)) != 0)
        return st;
    if (list)
        st = lock_list(c, cl, semaphore);
    else if (info)
        st = lock_info(c, cl, args[0], semaphore);
    else if (set)
        st = sem_set(c, cl, args[0], args[1], strategy, lease_ms);
    else
        st = sem_rm(c, cl, args[0]);
    sl_client_free(cl);
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
