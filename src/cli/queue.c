/* queue.c - the queue of pending claims, every claim, and why one waits.
 *
 *   sluice queue list [--lock KEY] | why ID | cancel ID
 *   sluice queue clear KEY [--holder-prefix P] | clear --holder-prefix P
 *   sluice claims list [--state S] [--holder H] [--lock KEY] | info ID
 *   sluice claims release --holder-prefix P
 *
 * `queue cancel` is an operator's cancel (POST /v1/claims/{id}/cancel): the
 * claim, pending, held or revoking, ends `canceled` "by an operator", so
 * that its own client (a sluice run) can tell it from its own release.
 * `queue clear` is the same cancel for every pending claim on a lock
 * and/or of a holder prefix (DELETE /v1/queue?lock=&holder_prefix=).
 * `claims release` is a run's cleanup (DELETE /v1/claims?holder_prefix=):
 * the client's own release of every live claim of the prefix. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

enum { QF_LOCK = 1, QF_STATE, QF_HOLDER, QF_HOLDER_PREFIX };

static const cli_flag queue_flags[] = {
    {"lock", true, QF_LOCK},
    {"holder-prefix", true, QF_HOLDER_PREFIX},
    {0},
};
static const cli_flag claims_flags[] = {
    {"lock", true, QF_LOCK},
    {"state", true, QF_STATE},
    {"holder", true, QF_HOLDER},
    {"holder-prefix", true, QF_HOLDER_PREFIX},
    {0},
};

typedef struct filters {
    const char *lock, *state, *holder;
    const char *holder_prefix; /* claims release; "" when given empty */
} filters;

/* "mtx/NAME" or "sem/NAME", as --lock and queue clear take a lock. */
static bool lock_key(const char *s)
{
    return strncmp(s, "mtx/", 4) == 0 || strncmp(s, "sem/", 4) == 0;
}

/* SUB [ARG] with flags anywhere; fills pos (at most 3) and the filters. */
static int parse(cli *c, const cli_flag *flags, int argc, char **argv, const char **pos, int *n,
                 filters *fl)
{
    int i = 0;
    const char *val = NULL;
    *n = 0;
    for (;;) {
        int r = cli_flag_next(c, flags, argc, argv, &i, &val);
        if (r == CLI_HELP)
            return -1;
        if (r == CLI_BAD)
            return CLI_EXIT_USAGE;
        if (r == CLI_END)
            break;
        if (r == CLI_ARG) {
            if (*n == 3)
                return cli_usage(c, "too many arguments");
            pos[(*n)++] = val;
        } else if (r == QF_LOCK) {
            if (!lock_key(val))
                return cli_usage(c, "--lock takes a lock key, mtx/NAME or sem/NAME, not '%s'", val);
            fl->lock = val;
        } else if (r == QF_STATE) {
            fl->state = val;
        } else if (r == QF_HOLDER) {
            fl->holder = val;
        } else if (r == QF_HOLDER_PREFIX) {
            fl->holder_prefix = val;
        }
    }
    /* After "--", ids (which may start with '-'). */
    for (; i < argc && *n < 3; i++)
        pos[(*n)++] = argv[i];
    return 0;
}

static void print_claims_json(const char *key, const sl_client_claim_list *list)
{
    const char **items = cli_xmalloc((list->n ? list->n : 1) * sizeof(*items));
    for (size_t i = 0; i < list->n; i++)
        items[i] = list->items[i].json;
    cli_json_list(key, items, list->n, stdout);
    free(items);
}

static int queue_list(cli *c, sl_client *cl, const filters *fl)
{
    sl_client_claim_list list = {0};
    sl_client_error err = {0};
    if (sl_client_queue(cl, fl->lock, &list, &err) != SL_CLIENT_OK)
        return cli_fail(c, "cannot read the queue", &err);
    if (c->json) {
        print_claims_json("queue", &list);
    } else {
        static const char *const h[] = {"POS",   "CLAIM",   "HOLDER", "PRIORITY",
                                        "LOCKS", "CREATED", "REASON"};
        cli_table *t = cli_table_new(c, 7, h);
        for (size_t i = 0; i < list.n; i++) {
            const sl_client_claim *q = &list.items[i];
            cli_buf locks = {0};
            char created[64];
            cli_claim_locks(q, &locks);
            cli_time(c, q->created_ms, created, sizeof(created));
            cli_table_cellf(t, NULL, "%zu", q->queue_position);
            cli_table_cell(t, q->id, NULL);
            cli_table_cell(t, q->holder, NULL);
            cli_table_cellf(t, NULL, "%d", q->priority);
            cli_table_cell(t, locks.s, NULL);
            cli_table_cell(t, created, NULL);
            cli_table_cell(t, q->reason, cli_color_state(c, "pending"));
            cli_buf_free(&locks);
        }
        cli_table_print(t, stdout, fl->lock ? "Nothing waits for that lock." : "Nothing waits.");
    }
    sl_client_claim_list_free(&list);
    return 0;
}

/* The preempt status of a why reason in words. */
static void preempt_words(const sl_client_why_reason *r, char *buf, size_t cap)
{
    unsigned long long n = (unsigned long long)r->preempt_holders;
    const char *s = r->preempt_status;
    const char *holders = n == 1 ? "holder" : "holders";
    if (strcmp(s, "waiting") == 0)
        snprintf(buf, cap, "%llu %s revoking; their slots will let it in once they leave", n,
                 holders);
    else if (strcmp(s, "will") == 0)
        snprintf(buf, cap, "it will revoke %llu %s of lower priority once its other locks allow it",
                 n, holders);
    else if (strcmp(s, "not_head") == 0)
        snprintf(buf, cap, "not yet: a claim ahead of it in the line comes first");
    else if (strcmp(s, "too_few") == 0)
        snprintf(buf, cap, "none: it is first, but holders of lower priority hold too few slots");
    else
        snprintf(buf, cap, "%s (%llu %s)", s, n, holders);
}

/* Under the table: what the rules say for each lock, in words. */
static void why_rules(cli *c, const sl_client_why *why)
{
    bool first = true;
    for (size_t i = 0; i < why->nreasons; i++) {
        const sl_client_why_reason *r = &why->reasons[i];
        bool rate = r->rule && strcmp(r->rule, "rate") == 0 && r->admit_at_ms >= 0;
        if (!r->preempt_status && !r->has_share && !rate)
            continue;
        if (first)
            printf("\n");
        first = false;
        if (r->preempt_status) {
            char words[160];
            preempt_words(r, words, sizeof(words));
            printf("%s: preempt: %s\n", r->lock, words);
        }
        if (r->has_share)
            printf("%s: share: quota %llu, its key holds %llu, weight %llu of %llu\n", r->lock,
                   (unsigned long long)r->share_quota, (unsigned long long)r->share_held,
                   (unsigned long long)r->share_weight, (unsigned long long)r->share_weights);
        if (rate) {
            char at[64];
            cli_time(c, r->admit_at_ms, at, sizeof(at));
            printf("%s: rate: admitted %s%s (when its rate's bucket has a token)\n", r->lock,
                   c->out_tty ? "" : "at ", at);
        }
    }
}

static int queue_why(cli *c, sl_client *cl, const char *id)
{
    sl_client_why *why = NULL;
    sl_client_error err = {0};
    if (sl_client_claim_why(cl, id, &why, &err) != SL_CLIENT_OK)
        return cli_fail(c, "cannot ask why the claim waits", &err);
    if (c->json) {
        printf("%s\n", why->json);
    } else if (why->nreasons == 0) {
        printf("Claim %s is %s%s%s: nothing blocks it.\n", id, cli_color_state(c, why->state),
               why->state, cli_color_off(c));
    } else {
        printf("Claim %s is %s%s%s:\n", id, cli_color_state(c, why->state), why->state,
               cli_color_off(c));
        static const char *const h[] = {"LOCK",     "RULE",  "USED",   "LIMIT",
                                        "POSITION", "AHEAD", "MESSAGE"};
        cli_table *t = cli_table_new(c, 7, h);
        for (size_t i = 0; i < why->nreasons; i++) {
            const sl_client_why_reason *r = &why->reasons[i];
            cli_table_cell(t, r->lock, NULL);
            cli_table_cell(t, r->rule,
                           strcmp(r->rule ? r->rule : "", "other_lock") == 0
                               ? NULL
                               : cli_color_state(c, "pending"));
            cli_table_cellf(t, NULL, "%llu", (unsigned long long)r->used);
            cli_table_cellf(t, NULL, "%llu", (unsigned long long)r->limit);
            cli_table_cellf(t, NULL, "%zu", r->position);
            cli_table_cellf(t, NULL, "%zu", r->ahead_count);
            cli_table_cell(t, r->message, NULL);
        }
        cli_table_print(t, stdout, NULL);
        why_rules(c, why);
    }
    sl_client_why_free(why);
    return 0;
}

static int queue_cancel(cli *c, sl_client *cl, const char *id)
{
    sl_client_claim *final = NULL;
    sl_client_error err = {0};
    if (sl_client_claim_cancel(cl, id, &final, &err) != SL_CLIENT_OK)
        return cli_fail(c, "cannot cancel the claim", &err);
    if (c->json)
        printf("%s\n", final->json);
    else
        printf("%s %s%s%s\n", final->id, cli_color_state(c, final->state), final->state,
               cli_color_off(c));
    sl_client_claim_free(final);
    return 0;
}

static int claims_list(cli *c, sl_client *cl, const filters *fl)
{
    sl_client_claim_list list = {0};
    sl_client_error err = {0};
    if (sl_client_claims(cl, fl->state, fl->holder, fl->lock, &list, &err) != SL_CLIENT_OK)
        return cli_fail(c, "cannot list claims", &err);
    if (c->json) {
        print_claims_json("claims", &list);
    } else {
        static const char *const h[] = {"CLAIM",    "STATE",   "HOLDER",  "LOCKS",
                                        "PRIORITY", "CREATED", "EXPIRES", "REASON"};
        cli_table *t = cli_table_new(c, 8, h);
        for (size_t i = 0; i < list.n; i++) {
            const sl_client_claim *q = &list.items[i];
            cli_buf locks = {0};
            char created[64], exp[64];
            cli_claim_locks(q, &locks);
            cli_time(c, q->created_ms, created, sizeof(created));
            cli_time(c, q->expires_ms, exp, sizeof(exp));
            cli_table_cell(t, q->id, NULL);
            cli_table_cell(t, q->state, cli_color_state(c, q->state));
            cli_table_cell(t, q->holder, NULL);
            cli_table_cell(t, locks.s, NULL);
            cli_table_cellf(t, NULL, "%d", q->priority);
            cli_table_cell(t, created, NULL);
            cli_table_cell(t, exp, NULL);
            cli_table_cell(t, q->reason, NULL);
            cli_buf_free(&locks);
        }
        cli_table_print(t, stdout, "No claims.");
    }
    sl_client_claim_list_free(&list);
    return 0;
}

static int claims_info(cli *c, sl_client *cl, const char *id)
{
    sl_client_claim *q = NULL;
    sl_client_error err = {0};
    if (sl_client_claim_get(cl, id, 0, NULL, &q, &err) != SL_CLIENT_OK)
        return cli_fail(c, "cannot read the claim", &err);
    if (c->json) {
        printf("%s\n", q->json);
        sl_client_claim_free(q);
        return 0;
    }
    char t1[64], t2[64], d1[32], d2[32];
    cli_time(c, q->created_ms, t1, sizeof(t1));
    cli_time(c, q->expires_ms, t2, sizeof(t2));
    cli_duration_none(q->lease_ms, d1, sizeof(d1));
    cli_duration_none(q->timeout_ms, d2, sizeof(d2));
    cli_fields *f = cli_fields_new(c);
    cli_fields_add(f, "Claim", NULL, "%s", q->id);
    cli_fields_add(f, "State", cli_color_state(c, q->state), "%s", q->state);
    cli_fields_add(f, "Holder", NULL, "%s", q->holder);
    cli_fields_add(f, "Priority", NULL, "%d", q->priority);
    cli_fields_add(f, "Created", NULL, "%s", t1);
    cli_fields_add(f, "Expires", NULL, "%s", t2);
    cli_fields_add(f, "Lease", NULL, "%s", d1);
    cli_fields_add(f, "Timeout", NULL, "%s", d2);
    if (q->ngroups) {
        cli_buf groups = {0};
        for (size_t i = 0; i < q->ngroups; i++)
            cli_buf_addf(&groups, "%s%s (cancel %s)", i ? ", " : "", q->groups[i].name,
                         q->groups[i].cancel);
        cli_fields_add(f, "Groups", NULL, "%s", groups.s);
        cli_buf_free(&groups);
    } else if (q->group) {
        cli_fields_add(f, "Group", NULL, "%s", q->group);
    }
    if (q->rebalance_key)
        cli_fields_add(f, "Rebalance key", NULL, "%s", q->rebalance_key);
    if (q->ntags) {
        cli_buf tags = {0};
        for (size_t i = 0; i < q->ntags; i++)
            cli_buf_addf(&tags, "%s%s=%s", i ? ", " : "", q->tags[i].key, q->tags[i].value);
        cli_fields_add(f, "Tags", NULL, "%s", tags.s);
        cli_buf_free(&tags);
    }
    cli_fields_add(f, "Reason", NULL, "%s", q->reason ? q->reason : "-");
    if (q->by)
        cli_fields_add(f, "By", NULL, "%s", q->by);
    cli_fields_print(f, stdout);
    printf("\nLocks (%zu):\n", q->nlocks);
    if (q->nlocks) {
        static const char *const h[] = {"LOCK", "SLOTS", "TOKEN", "POSITION", "LIMIT"};
        /* LIMIT only when the claim gave a semaphore an inline limit. */
        bool limits = false;
        for (size_t i = 0; i < q->nlocks; i++)
            limits = limits || q->locks[i].limit > 0;
        cli_table *t = cli_table_new(c, limits ? 5 : 4, h);
        for (size_t i = 0; i < q->nlocks; i++) {
            const sl_client_claim_lock *l = &q->locks[i];
            char key[300];
            cli_lock_key(l, key, sizeof(key));
            cli_table_cell(t, key, NULL);
            cli_table_cellf(t, NULL, "%u", l->slots);
            if (l->has_token)
                cli_table_cellf(t, NULL, "%llu", (unsigned long long)l->token);
            else
                cli_table_cell(t, "-", NULL);
            if (l->position)
                cli_table_cellf(t, NULL, "%zu", l->position);
            else
                cli_table_cell(t, "-", NULL);
            if (limits && l->limit)
                cli_table_cellf(t, NULL, "%u", l->limit);
            else if (limits)
                cli_table_cell(t, "-", NULL);
        }
        cli_table_print(t, stdout, NULL);
    }
    sl_client_claim_free(q);
    return 0;
}

static int claims_release(cli *c, sl_client *cl, const filters *fl)
{
    sl_client_release_counts n = {0};
    sl_client_error err = {0};
    if (sl_client_claims_release(cl, fl->holder_prefix, &n, &err) != SL_CLIENT_OK)
        return cli_fail(c, "cannot release the claims", &err);
    if (c->json)
        printf("%s\n", n.json);
    else
        printf("released %llu, withdrawn %llu, canceled %llu, skipped %llu\n",
               (unsigned long long)n.released, (unsigned long long)n.withdrawn,
               (unsigned long long)n.canceled, (unsigned long long)n.skipped);
    sl_client_release_counts_free(&n);
    return 0;
}

static int queue_clear(cli *c, sl_client *cl, const char *lock, const filters *fl)
{
    sl_client_queue_cleared n = {0};
    sl_client_error err = {0};
    if (sl_client_queue_clear(cl, lock, fl->holder_prefix, &n, &err) != SL_CLIENT_OK)
        return cli_fail(c, "cannot clear the queue", &err);
    if (c->json)
        printf("%s\n", n.json);
    else
        printf("canceled %llu\n", (unsigned long long)n.canceled);
    sl_client_queue_cleared_free(&n);
    return 0;
}

/* queue clear: a lock (the argument, or --lock as list takes it), a holder
 * prefix, or both; an empty one is a usage error rather than the server's
 * 400, and without either it would be the whole queue's. */
static int check_clear(const cli *c, int nargs, const char *arg, const filters *fl)
{
    if (nargs > 1)
        return cli_usage(c, "'queue clear' takes one lock: sluice queue clear sem/NAME");
    if (nargs == 1 && fl->lock)
        return cli_usage(c, "give the lock once: as the argument or as --lock");
    if (nargs == 1 && (!lock_key(arg) || !arg[4]))
        return cli_usage(c, "'queue clear' takes a lock key, mtx/NAME or sem/NAME, not '%s'", arg);
    if (fl->lock && !fl->lock[4])
        return cli_usage(c, "--lock takes a lock key, mtx/NAME or sem/NAME, not '%s'", fl->lock);
    if (nargs == 0 && !fl->lock && !fl->holder_prefix)
        return cli_usage(c, "'queue clear' needs a lock (sem/NAME, mtx/NAME), "
                            "--holder-prefix PREFIX, or both: it cancels every pending claim "
                            "on the lock and/or of holders starting with the prefix");
    if (fl->holder_prefix && !*fl->holder_prefix)
        return cli_usage(c, "--holder-prefix must not be empty: give the start of the "
                            "holders (e.g. RUN/)");
    return 0;
}

/* claims release: no id, and a prefix that is given and not empty (the
 * server refuses an empty one too; here it is a usage error, exit 2). */
static int check_release(const cli *c, int nargs, const filters *fl)
{
    if (nargs != 0)
        return cli_usage(c, "'claims release' takes no arguments: it releases by "
                            "--holder-prefix (to release one claim: sluice release ID)");
    if (!fl->holder_prefix)
        return cli_usage(c, "'claims release' needs --holder-prefix PREFIX: the claims whose "
                            "holder starts with it (e.g. RUN/)");
    if (!*fl->holder_prefix)
        return cli_usage(c, "--holder-prefix must not be empty: give the start of the "
                            "holders (e.g. RUN/)");
    if (fl->lock || fl->state || fl->holder)
        return cli_usage(c, "--lock, --state and --holder go with 'claims list'");
    return 0;
}

/* The arguments of SUB other than release: list none, the others one id;
 * the filters go with list only. */
static int check_args(const cli *c, const char *sub, bool list, int nargs, const filters *fl)
{
    if (fl->holder_prefix)
        return cli_usage(c, "--holder-prefix goes with '%s'",
                         strcmp(c->command, "queue") == 0 ? "queue clear" : "claims release");
    if (list && nargs != 0)
        return cli_usage(c, "'%s list' takes no arguments", c->command);
    if (!list && nargs != 1)
        return cli_usage(c, "give one claim id: sluice %s %s ID", c->command, sub);
    if (!list && (fl->lock || fl->state || fl->holder))
        return cli_usage(c, "--lock, --state and --holder go with '%s list'", c->command);
    return 0;
}

/* The shared shape: SUB [ID], a default of list, one connection. */
static int dispatch(cli *c, int argc, char **argv, bool queue)
{
    const char *pos[3];
    int n;
    filters fl = {0};
    int st = parse(c, queue ? queue_flags : claims_flags, argc, argv, pos, &n, &fl);
    if (st != 0)
        return st < 0 ? 0 : st;
    const char *sub = n ? pos[0] : "list";
    int nargs = n ? n - 1 : 0;
    bool list = strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0;
    bool why = queue && strcmp(sub, "why") == 0;
    bool cancel = queue && strcmp(sub, "cancel") == 0;
    bool info = !queue && strcmp(sub, "info") == 0;
    bool release = !queue && strcmp(sub, "release") == 0;
    bool clear = queue && strcmp(sub, "clear") == 0;
    if (!list && !why && !cancel && !info && !release && !clear)
        return cli_usage(c, "no command '%s %s': use %s", c->command, sub,
                         queue ? "list, why, cancel or clear" : "list, info or release");
    if (clear)
        st = check_clear(c, nargs, nargs ? pos[1] : NULL, &fl);
    else
        st = release ? check_release(c, nargs, &fl) : check_args(c, sub, list, nargs, &fl);
    if (st != 0)
        return st;
    sl_client *cl = NULL;
    if ((st = cli_connect(c, &cl)) != 0)
        return st;
    if (list)
        st = queue ? queue_list(c, cl, &fl) : claims_list(c, cl, &fl);
    else if (why)
        st = queue_why(c, cl, pos[1]);
    else if (cancel)
        st = queue_cancel(c, cl, pos[1]);
    else if (release)
        st = claims_release(c, cl, &fl);
    else if (clear)
        st = queue_clear(c, cl, nargs ? pos[1] : fl.lock, &fl);
    else
        st = claims_info(c, cl, pos[1]);
    sl_client_free(cl);
    return st;
}

int cli_queue(cli *c, int argc, char **argv)
{
    return dispatch(c, argc, argv, true);
}

int cli_claims(cli *c, int argc, char **argv)
{
    return dispatch(c, argc, argv, false);
}
