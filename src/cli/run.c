/* run.c - `sluice run`: run a command while holding a claim.
 *
 *   sluice run [LOCK FLAGS] [--kill-grace D] -- COMMAND [ARGS...]
 *
 * Claims (hold.c), then runs the command with the claim kept alive by the
 * library's keeper thread, releases the claim when the command ends and
 * exits with the command's status. When the keeper says the claim is lost
 * (revoked by a newer claim of its group, ended, or not renewed for a whole
 * lease), the command is no longer safe to run: it gets SIGTERM, SIGKILL
 * after --kill-grace (for a revoked claim, cut to end before the server
 * hands its slots on: stop_command), and sluice exits 125.
 *
 * The command stays in sluice's process group, so a terminal's ^C reaches
 * it directly; signals sent to sluice by other processes are passed on to
 * it. On Linux the command also gets SIGTERM if sluice itself dies (kill
 * -9), since its claim is then about to lapse. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"

#define RUN_DEFAULT_KILL_GRACE_MS 10000
/* A revoked claim keeps its slots until its revoke_at (the revoking claim's
 * --grace); then the server hands them on, whether COMMAND has stopped or
 * not. So the kill grace is cut to end this long before revoke_at: the
 * margin covers a difference between the server's clock and ours (revoke_at
 * is the server's wall clock, read against ours) and the time SIGKILL takes
 * to end COMMAND. A second is far more than either on one host or between
 * hosts kept in step by NTP, and costs little against the default 30s
 * grace. */
#define REVOKE_MARGIN_MS 1000
/* The main loop also looks at the child this often, in case a SIGCHLD
 * record was lost to a full pipe. */
#define CHILD_CHECK_MS 1000

enum { RF_KILL_GRACE = 1 };

static const cli_flag run_flags[] = {
    CLI_CLAIM_FLAGS,
    {"kill-grace", true, RF_KILL_GRACE},
    {0},
};

/* Signals passed on to the command when another process sends them. */
static const int forwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

typedef struct lost_note {
    sl_client_lost why;
    int64_t revoke_at_ms; /* revoked: when the server hands the slots on; else -1 */
    char msg[1200];
} lost_note;

/* The keeper's thread: word what happened, then wake the main loop. */
static void on_lost(void *ud, sl_client_lost why, const sl_client_claim *claim,
                    const sl_client_error *err)
{
    lost_note *n = ud;
    n->why = why;
    n->revoke_at_ms = why == SL_CLIENT_LOST_REVOKED && claim ? claim->revoke_at_ms : -1;
    switch (why) {
    case SL_CLIENT_LOST_REVOKED:
        /* The reason names the revoking claim already. */
        if (claim && claim->reason && *claim->reason)
            snprintf(n->msg, sizeof(n->msg), "the claim was revoked: %s", claim->reason);
        else
            snprintf(n->msg, sizeof(n->msg), "the claim was revoked by claim %s",
                     claim && claim->by ? claim->by : "?");
        break;
    case SL_CLIENT_LOST_ENDED:
        if (cli_claim_operator_canceled(claim)) {
            snprintf(n->msg, sizeof(n->msg),
                     "the claim was canceled by an operator (sluice queue cancel)");
            break;
        }
        snprintf(n->msg, sizeof(n->msg), "the claim ended %s%s%s%s",
                 claim && claim->state ? claim->state : "", claim && claim->reason ? " (" : "",
                 claim && claim->reason ? claim->reason : "", claim && claim->reason ? ")" : "");
        break;
    case SL_CLIENT_LOST_UNREACHABLE:
    default:
        snprintf(n->msg, sizeof(n->msg),
                 "the claim's lease is presumed lost: no renewal reached the server for a "
                 "whole lease (%s)",
                 err && err->message[0] ? err->message : "unreachable");
        break;
    }
    cli_sigpipe_post(CLI_NOTE_LOST);
}

/* SLUICE_CLAIM_ID, SLUICE_FENCING_TOKEN(S), SLUICE_SERVER for the command.
 * SLUICE_FENCING_TOKENS is "mtx/a=3,sem/db=17,sem/tag/env=prod=9".
 * SLUICE_SERVER is the whole list, so that a nested sluice fails over too. */
static void set_env(const sl_client_claim *claim, const sl_client *cl)
{
    setenv("SLUICE_CLAIM_ID", claim->id, 1);
    cli_buf servers = {0};
    cli_servers_join(cl, ",", &servers);
    setenv("SLUICE_SERVER", servers.s, 1);
    cli_buf_free(&servers);
    cli_buf all = {0};
    bool first = true;
    for (size_t i = 0; i < claim->nlocks; i++) {
        const sl_client_claim_lock *l = &claim->locks[i];
        if (!l->has_token)
            continue;
        if (first) {
            char tok[32];
            snprintf(tok, sizeof(tok), "%llu", (unsigned long long)l->token);
            setenv("SLUICE_FENCING_TOKEN", tok, 1);
        }
        /* Lock keys, not names: a mutex and a semaphore may share a name,
         * and a name may hold '=' (tag/env=prod); a token is all digits, so
         * each entry splits at its last '='. */
        char key[300];
        cli_lock_key(l, key, sizeof(key));
        cli_buf_addf(&all, "%s%s=%llu", first ? "" : ",", key, (unsigned long long)l->token);
        first = false;
    }
    if (first) {
        /* None of its own: never pass on an outer sluice run's. */
        unsetenv("SLUICE_FENCING_TOKEN");
        unsetenv("SLUICE_FENCING_TOKENS");
    } else {
        setenv("SLUICE_FENCING_TOKENS", all.s, 1);
    }
    cli_buf_free(&all);
}

static void release(sl_client *cl, const char *id)
{
    sl_client_error err = {0};
    if (sl_client_claim_release(cl, id, NULL, &err) != SL_CLIENT_OK)
        fprintf(stderr, "sluice: could not release claim %s (%s); its lease will free it\n", id,
                err.message[0] ? err.message : sl_client_strerror(err.rc));
}

/* In the child, between fork and exec: async-signal-safe calls only. */
_Noreturn static void child(char **cmd, int err_fd, pid_t parent, const sigset_t *mask)
{
    cli_sigpipe_reset();
    signal(SIGPIPE, SIG_DFL); /* libcurl may ignore it meanwhile; never pass that on */
    sigprocmask(SIG_SETMASK, mask, NULL);
#ifdef __linux__
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != parent)
        _exit(RUN_EXIT_REVOKED); /* sluice died before the line above */
#else
    (void)parent;
#endif
    execvp(cmd[0], cmd);
    int e = errno;
    ssize_t w = write(err_fd, &e, sizeof(e));
    (void)w;
    _exit(e == ENOENT ? RUN_EXIT_NOTFOUND : RUN_EXIT_NOEXEC);
}

static int wait_status(int ws)
{
    if (WIFEXITED(ws))
        return WEXITSTATUS(ws);
    if (WIFSIGNALED(ws))
        return 128 + WTERMSIG(ws);
    return RUN_EXIT_NOEXEC;
}

/* The claim is lost: SIGTERM now, and returns the time to allow before
 * SIGKILL. For a revoked claim that is --kill-grace cut to end a margin
 * before the claim's revoke_at, so that COMMAND is dead before the server
 * hands its slots to the revoking claim: two commands never run at once.
 * With nothing left before revoke_at, SIGKILL at once (*killed). A claim
 * that has already ended (--grace 0 cancels at once, a lease ran out) has
 * no such moment: its slots are gone, and --kill-grace applies as given. */
static int64_t stop_command(pid_t pid, const lost_note *lost, int64_t kill_grace, bool *killed)
{
    char g[32], left_s[32];
    cli_duration_format(kill_grace, g, sizeof(g));
    if (lost->why != SL_CLIENT_LOST_REVOKED || lost->revoke_at_ms < 0) {
        fprintf(stderr, "sluice: %s; stopping the command (SIGTERM, SIGKILL after %s)\n",
                lost->msg, g);
        kill(pid, SIGTERM);
        return kill_grace;
    }
    int64_t left = lost->revoke_at_ms - cli_now_ms();
    int64_t cut = left - REVOKE_MARGIN_MS;
    if (cut < 0)
        cut = 0;
    cli_duration_format(left > 0 ? left : 0, left_s, sizeof(left_s));
    if (cut >= kill_grace) {
        fprintf(stderr, "sluice: %s; stopping the command (SIGTERM, SIGKILL after %s)\n",
                lost->msg, g);
        kill(pid, SIGTERM);
        return kill_grace;
    }
    if (cut == 0) {
        fprintf(stderr,
                "sluice: %s; the server hands its slots on in %s, too soon for --kill-grace "
                "%s: stopping the command with SIGKILL now\n",
                lost->msg, left_s, g);
        kill(pid, SIGKILL);
        *killed = true;
        return 0;
    }
    char c_s[32];
    cli_duration_format(cut, c_s, sizeof(c_s));
    fprintf(stderr,
            "sluice: %s; the server hands its slots on in %s, so --kill-grace %s is cut to %s: "
            "stopping the command (SIGTERM, SIGKILL after %s)\n",
            lost->msg, left_s, g, c_s, c_s);
    kill(pid, SIGTERM);
    return cut;
}

static int run_command(cli *c, sl_client *cl, const sl_client_claim *claim, char **cmd,
                       int64_t kill_grace)
{
    lost_note lost = {0};
    sl_client_keeper *k = NULL;
    sl_client_error err = {0};
    int64_t interval, jit;
    if (!cli_duration_env(c, "SLUICE_CLAIM_POLL_INTERVAL", 1000, &interval) ||
        !cli_duration_env(c, "SLUICE_CLAIM_POLL_JITTER", 500, &jit)) {
        release(cl, claim->id);
        return RUN_EXIT_USAGE;
    }
    sl_client_retry retry = {interval > 0 ? interval : 1, jit > 0 ? jit : 1};

    set_env(claim, cl);
    cli_sigpipe_catch(SIGCHLD);
    for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        cli_sigpipe_catch(forwarded[i]);

    /* The keeper first: without it the claim would lapse under the command.
     * Its thread starts with our signals blocked, so it never runs them. */
    sigset_t old;
    pthread_sigmask(SIG_SETMASK, NULL, &old);
    cli_sigpipe_block(true);
    c->opts.server = c->server;
    c->opts.token = c->token;
    c->opts.cacert = c->cacert;
    c->opts.cert = c->cert;
    c->opts.key = c->key;
    int rc = sl_client_keeper_start(&c->opts, claim->id, claim->lease_ms, &retry, on_lost, &lost,
                                    &k, &err);
    if (rc != SL_CLIENT_OK) {
        cli_sigpipe_block(false);
        cli_fail(c, "cannot keep the claim alive", &err);
        release(cl, claim->id);
        return RUN_EXIT_REFUSED;
    }

    int ep[2];
    if (pipe(ep) != 0) {
        cli_sigpipe_block(false);
        fprintf(stderr, "sluice: cannot make a pipe: %s\n", strerror(errno));
        sl_client_keeper_stop(k);
        release(cl, claim->id);
        return RUN_EXIT_NOEXEC;
    }
    for (int i = 0; i < 2; i++) {
        int fl = fcntl(ep[i], F_GETFD);
        fcntl(ep[i], F_SETFD, fl | FD_CLOEXEC);
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        close(ep[0]);
        child(cmd, ep[1], parent, &old);
    }
    cli_sigpipe_block(false);
    close(ep[1]);
    if (pid < 0) {
        fprintf(stderr, "sluice: cannot start the command: %s\n", strerror(errno));
        close(ep[0]);
        sl_client_keeper_stop(k);
        release(cl, claim->id);
        return RUN_EXIT_NOEXEC;
    }
    /* The exec pipe closes (0 bytes) when exec succeeds, or brings errno. */
    int exec_errno = 0;
    ssize_t r;
    do
        r = read(ep[0], &exec_errno, sizeof(exec_errno));
    while (r < 0 && errno == EINTR);
    close(ep[0]);

    int ws = 0;
    bool stopping = false, killed = false;
    int64_t kill_at = 0;
    if (r == (ssize_t)sizeof(exec_errno)) {
        while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
        }
        sl_client_keeper_stop(k);
        release(cl, claim->id);
        fprintf(stderr, "sluice: cannot run '%s': %s\n", cmd[0], strerror(exec_errno));
        if (exec_errno == ENOENT)
            fputs("Check the command's name, or give its path.\n", stderr);
        return exec_errno == ENOENT ? RUN_EXIT_NOTFOUND : RUN_EXIT_NOEXEC;
    }

    for (;;) {
        int64_t timeout = CHILD_CHECK_MS;
        if (stopping && !killed) {
            int64_t left = kill_at - cli_mono_ms();
            timeout = left < 0 ? 0 : left < timeout ? left : timeout;
        }
        cli_note n;
        int got = cli_sigpipe_wait(timeout, &n);
        if (waitpid(pid, &ws, WNOHANG) == pid)
            break;
        if (!got) {
            if (stopping && !killed && cli_mono_ms() >= kill_at) {
                char g[32];
                cli_duration_format(kill_grace, g, sizeof(g));
                fprintf(stderr, "sluice: the command did not stop within %s; sending SIGKILL\n", g);
                kill(pid, SIGKILL);
                killed = true;
            }
            continue;
        }
        if (n.what == SIGCHLD || n.what == CLI_NOTE_HOLD_DONE)
            continue;
        if (n.what == CLI_NOTE_LOST) {
            if (!stopping) {
                kill_grace = stop_command(pid, &lost, kill_grace, &killed);
                stopping = true;
                kill_at = cli_mono_ms() + kill_grace;
            }
            continue;
        }
        if (n.from_user)
            kill(pid, n.what);
    }
    sl_client_keeper_stop(k);
    cli_sigpipe_reset();
    release(cl, claim->id);
    if (stopping) {
        fprintf(stderr, "sluice: the command was stopped (status %d); exiting %d\n",
                wait_status(ws), RUN_EXIT_REVOKED);
        return RUN_EXIT_REVOKED;
    }
    return wait_status(ws);
}

int cli_run(cli *c, int argc, char **argv)
{
    c->usage_status = RUN_EXIT_USAGE;
    cli_claim_flags f;
    cli_claim_flags_init(&f);
    int64_t kill_grace = RUN_DEFAULT_KILL_GRACE_MS;
    int i = 0, start = -1, st = 0;
    const char *val = NULL;
    while (start < 0) {
        int r = cli_flag_next(c, run_flags, argc, argv, &i, &val);
        switch (r) {
        case CLI_HELP:
            st = 0;
            goto out;
        case CLI_BAD:
            st = RUN_EXIT_USAGE;
            goto out;
        case CLI_END:
            start = i;
            break;
        case CLI_ARG:
            start = i - 1; /* the command starts at the first argument */
            break;
        case RF_KILL_GRACE:
            if (!cli_duration_arg(c, "--kill-grace", val, &kill_grace)) {
                st = RUN_EXIT_USAGE;
                goto out;
            }
            break;
        default:
            if (!cli_claim_flag(c, &f, r, val)) {
                st = RUN_EXIT_USAGE;
                goto out;
            }
        }
    }
    if (start >= argc) {
        st = cli_usage(c, "give the command to run after --, as in: sluice run --mutex deploy "
                          "-- ./deploy.sh");
        goto out;
    }
    if (!cli_claim_flags_check(c, &f)) {
        st = RUN_EXIT_USAGE;
        goto out;
    }
    /* A killed `sluice run` frees its slots a lease after its last renewal. */
    if (f.lease_ms < 0 && !cli_default_lease(c, &f.lease_ms)) {
        st = RUN_EXIT_USAGE;
        goto out;
    }

    sl_client *cl = NULL;
    if (cli_connect(c, &cl) != 0) {
        st = RUN_EXIT_REFUSED;
        goto out;
    }
    sl_client_claim *claim = NULL;
    st = cli_claim_hold(c, &f, &claim);
    if (st == 0) {
        fflush(stdout);
        fflush(stderr);
        st = run_command(c, cl, claim, argv + start, kill_grace);
    }
    sl_client_claim_free(claim);
    sl_client_free(cl);
out:
    cli_claim_flags_free(&f);
    return st;
}
