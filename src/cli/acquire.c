/* acquire.c - `sluice acquire`, `sluice release` and `sluice renew`: a
 * claim held across the lines of a shell script.
 *
 *   id=$(sluice acquire --mutex deploy) || exit
 *   ./deploy.sh
 *   sluice release "$id"
 *
 * acquire waits exactly as run does (hold.c) and prints the claim's id. By
 * default the claim has a lease (30s, SLUICE_LEASE) and a detached keeper
 * process (keep.c) renews it while the calling script lives, so that a
 * crashed script's claim is freed within a lease, never held for ever.
 * With --lease D the script renews it itself (`sluice renew ID`, as for a
 * claim acquired in one CI step and released in another); --lease 0 sends
 * none. */
#include <string.h>

#include "cli.h"

static const cli_flag acquire_flags[] = {CLI_CLAIM_FLAGS, {0}};

/* run's statuses, as acquire reports them: its own 1 and 2 where run has
 * 121 and 120, the same 122-124. */
static int acquire_status(int st)
{
    switch (st) {
    case RUN_EXIT_USAGE:
        return CLI_EXIT_USAGE;
    case RUN_EXIT_REFUSED:
        return CLI_EXIT_SERVER;
    default:
        return st;
    }
}

int cli_acquire(cli *c, int argc, char **argv)
{
    cli_claim_flags f;
    cli_claim_flags_init(&f);
    int i = 0, st = 0;
    const char *val = NULL;
    for (;;) {
        int r = cli_flag_next(c, acquire_flags, argc, argv, &i, &val);
        if (r == CLI_HELP)
            goto out;
        if (r == CLI_BAD) {
            st = CLI_EXIT_USAGE;
            goto out;
        }
        if (r == CLI_END)
            break;
        if (r == CLI_ARG) {
            st = cli_usage(c, "acquire takes no arguments, only flags ('%s')", val);
            goto out;
        }
        if (!cli_claim_flag(c, &f, r, val)) {
            st = CLI_EXIT_USAGE;
            goto out;
        }
    }
    if (i < argc) {
        st = cli_usage(c, "acquire takes no command: use 'sluice run' to run one");
        goto out;
    }
    if (!cli_claim_flags_check(c, &f)) {
        st = CLI_EXIT_USAGE;
        goto out;
    }
    /* No --lease: a lease, and a keeper to renew it. */
    bool keep = f.lease_ms < 0;
    if (keep && !cli_default_lease(c, &f.lease_ms)) {
        st = CLI_EXIT_USAGE;
        goto out;
    }
    keep = keep && f.lease_ms > 0;
    cli_acquire_caller = cli_caller_pid();
    sl_client_claim *claim = NULL;
    st = acquire_status(cli_claim_hold(c, &f, &claim));
    if (st == 0 && keep && claim->lease_ms > 0) {
        char why[512];
        if (cli_keep_start(c, claim, cli_acquire_caller, why, sizeof(why)) != 0) {
            /* Unkept, the claim would lapse within its lease under a script
             * that believes it holds it: give it back and say so. */
            fprintf(stderr,
                    "sluice: cannot start the process that keeps claim %s alive (%s); released "
                    "it. Give --lease D and renew it with 'sluice renew ID' instead.\n",
                    claim->id, why);
            sl_client *cl = NULL;
            sl_client_error err;
            if (cli_connect(c, &cl) == 0) {
                sl_client_claim_release(cl, claim->id, NULL, &err);
                sl_client_free(cl);
            }
            st = CLI_EXIT_SERVER;
        }
    }
    if (st == 0) {
        if (c->json)
            printf("%s\n", claim->json);
        else
            printf("%s\n", claim->id);
    }
    sl_client_claim_free(claim);
out:
    cli_claim_flags_free(&f);
    return st;
}

#define MAX_IDS 256

int cli_release(cli *c, int argc, char **argv)
{
    const char *id[MAX_IDS];
    int n, st = cli_args(c, argc, argv, id, MAX_IDS, &n);
    if (st != 0)
        return st < 0 ? 0 : st;
    if (n == 0)
        return cli_usage(c, "give the claim's id, as printed by 'sluice acquire'");
    sl_client *cl = NULL;
    if ((st = cli_connect(c, &cl)) != 0)
        return st;
    for (int i = 0; i < n; i++) {
        sl_client_claim *final = NULL;
        sl_client_error err = {0};
        if (sl_client_claim_release(cl, id[i], &final, &err) != SL_CLIENT_OK) {
            char what[300];
            snprintf(what, sizeof(what), "cannot release claim %s", id[i]);
            int s = cli_fail(c, what, &err);
            if (s > st)
                st = s;
            continue;
        }
        if (c->json)
            printf("%s\n", final->json);
        else
            printf("%s %s%s%s\n", final->id, cli_color_state(c, final->state), final->state,
                   cli_color_off(c));
        sl_client_claim_free(final);
    }
    sl_client_free(cl);
    return st;
}

int cli_renew(cli *c, int argc, char **argv)
{
    const char *id[MAX_IDS];
    int n, st = cli_args(c, argc, argv, id, MAX_IDS, &n);
    if (st != 0)
        return st < 0 ? 0 : st;
    if (n == 0)
        return cli_usage(c, "give the claim's id, as printed by 'sluice acquire'");
    sl_client *cl = NULL;
    if ((st = cli_connect(c, &cl)) != 0)
        return st;
    for (int i = 0; i < n; i++) {
        sl_client_claim *claim = NULL;
        sl_client_error err = {0};
        int rc = sl_client_claim_renew(cl, id[i], &claim, &err);
        if (rc != SL_CLIENT_OK) {
            char what[300];
            snprintf(what, sizeof(what), "cannot renew claim %s", id[i]);
            int s = cli_fail(c, what, &err);
            if (err.status == 409)
                fprintf(stderr, "The claim is %s: stop using what it protected.\n",
                        claim && claim->state ? claim->state : "revoking or ended");
            sl_client_claim_free(claim);
            if (s > st)
                st = s;
            continue;
        }
        if (c->json) {
            printf("%s\n", claim->json);
        } else {
            char t[64];
            cli_time(c, claim->expires_ms, t, sizeof(t));
            printf("%s %s%s%s, expires %s\n", claim->id, cli_color_state(c, claim->state),
                   claim->state, cli_color_off(c), t);
        }
        sl_client_claim_free(claim);
    }
    sl_client_free(cl);
    return st;
}
