/* keep.c - acquire's keeper: a small detached process that keeps a claim
 * alive exactly as long as the script that acquired it.
 *
 *   id=$(sluice acquire --mutex deploy) || exit
 *   ./deploy.sh                      # the claim is renewed meanwhile
 *   sluice release "$id"             # or the script dies: released soon after
 *
 * By default acquire sends a lease (30s, as run does) so that a claim can
 * never outlive a crashed script by more than that, and leaves this process
 * behind to renew it with libsluice's keeper (src/client/keeper.c) while the
 * caller lives. It stops when:
 *  - the caller is gone (exited, killed): it releases the claim, so that the
 *    next claim gets in at once rather than when the lease runs out;
 *  - the claim has ended (`sluice release ID`, an operator's cancel, the
 *    lease lost while the server was away): nothing left to keep;
 *  - the claim is revoked (a newer claim of its group): renewing is refused
 *    then; it waits until the claim's revoke_at and releases earlier if the
 *    caller goes first.
 * While the server cannot be reached it keeps trying, as long as the caller
 * lives (a server restarted gives held claims a lease to come back).
 *
 * The caller is acquire's parent, the shell running the script. A shell may
 * run `$(sluice acquire ...)` in a forked subshell that exits as soon as
 * acquire does (bash does when the substitution has a redirection); taking
 * that subshell for the caller would release the claim at once, while the
 * script goes on believing it holds it. So the caller is the first ancestor
 * that is not a forked copy of its own parent (same executable, same
 * command line). Erring towards an outer shell keeps a claim longer than
 * needed, never shorter.
 *
 * Detached properly: a double fork and setsid (no terminal signals, no
 * zombie for the caller to reap), stdin, stdout and stderr on /dev/null and
 * every other descriptor closed (so that `id=$(sluice acquire ...)` returns
 * at once: the substitution reads until every writer of its pipe is gone),
 * and the working directory "/". acquire prints the id only once the keeper
 * reports, through a pipe, that it runs. The caller is watched through a
 * pidfd (immune to pid reuse); where the kernel refuses one, by polling the
 * pid and its start time. */
/* syscall(2), for pidfd_open where libc has no wrapper: not POSIX. */
#define _DEFAULT_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "cli.h"

/* How far up the process tree forked subshells are looked through. */
#define CALLER_DEPTH_MAX 16
/* Without a pidfd, the caller is looked at this often. */
#define CALLER_POLL_MS 500
/* /proc/PID/cmdline compared up to this size (longer ones are compared by
 * their first bytes only: a subshell's is its parent's, byte for byte). */
#define CMDLINE_MAX 8192
/* A revoked claim is waited on this much past its revoke_at, in case the
 * clocks differ; by then the server has ended it. */
#define REVOKE_SLACK_MS 2000
#define RELEASE_TRIES 3

/* ---- the caller ----------------------------------------------------------------- */

/* Reads a /proc file into buf (NUL-terminated); its length, or -1. */
static ssize_t read_proc(pid_t pid, const char *what, char *buf, size_t cap)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%ld/%s", (long)pid, what);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t n = 0;
    while (n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* The fields of /proc/PID/stat after the command's name (which may hold
 * spaces and parentheses: it ends at the last ')'). */
static const char *stat_fields(pid_t pid, char *buf, size_t cap)
{
    if (read_proc(pid, "stat", buf, cap) <= 0)
        return NULL;
    char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] == ' ' ? close_paren + 2 : NULL;
}

/* The parent of pid, its state letter and its start time (clock ticks
 * since boot, which tells a process from a later one with the same pid);
 * false when /proc cannot say. */
static bool proc_info(pid_t pid, pid_t *ppid, char *state, unsigned long long *start)
{
    char buf[1024];
    const char *f = stat_fields(pid, buf, sizeof(buf));
    if (!f)
        return false;
    /* Fields from 3: state ppid pgrp session tty_nr tpgid flags minflt
     * cminflt majflt cmajflt utime stime cutime cstime priority nice
     * num_threads itrealvalue starttime. */
    char st = f[0];
    char *end;
    long pp = strtol(f + 2, &end, 10);
    const char *p = end;
    for (int field = 5; field < 22 && p; field++)
        p = strchr(p + 1, ' '); /* the blank before field+1 */
    if (!p)
        return false;
    unsigned long long t = strtoull(p, NULL, 10);
    if (ppid)
        *ppid = (pid_t)pp;
    if (state)
        *state = st;
    if (start)
        *start = t;
    return true;
}

/* Whether a is a forked copy of b: the same executable and command line,
 * as a subshell is of the shell that forked it. */
static bool same_program(pid_t a, pid_t b)
{
    char ea[4096], eb[4096], pa[64], pb[64];
    snprintf(pa, sizeof(pa), "/proc/%ld/exe", (long)a);
    snprintf(pb, sizeof(pb), "/proc/%ld/exe", (long)b);
    ssize_t na = readlink(pa, ea, sizeof(ea)), nb = readlink(pb, eb, sizeof(eb));
    if (na <= 0 || na != nb || memcmp(ea, eb, (size_t)na) != 0)
        return false;
    char *ca = malloc(CMDLINE_MAX), *cb = malloc(CMDLINE_MAX);
    bool same = false;
    if (ca && cb) {
        ssize_t la = read_proc(a, "cmdline", ca, CMDLINE_MAX);
        ssize_t lb = read_proc(b, "cmdline", cb, CMDLINE_MAX);
        same = la > 0 && la == lb && memcmp(ca, cb, (size_t)la) == 0;
    }
    free(ca);
    free(cb);
    return same;
}

pid_t cli_caller_pid(void)
{
    pid_t p = getppid();
    for (int depth = 0; depth < CALLER_DEPTH_MAX; depth++) {
        pid_t up;
        if (!proc_info(p, &up, NULL, NULL) || up <= 1 || !same_program(p, up))
            break;
        p = up;
    }
    return p;
}

typedef struct caller {
    pid_t pid;
    int pidfd;                /* -1: none, poll the pid */
    unsigned long long start; /* its start time, when /proc says; else 0 */
} caller;

static int pidfd_of(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    errno = ENOSYS;
    return -1;
#endif
}

static bool caller_gone(const caller *w)
{
    if (kill(w->pid, 0) != 0 && errno == ESRCH)
        return true;
    char st;
    unsigned long long start;
    if (proc_info(w->pid, NULL, &st, &start))
        return st == 'Z' || st == 'X' || (w->start && start != w->start);
    return false;
}

/* ---- the keeper process -------------------------------------------------------------- */

typedef struct keep_note {
    sl_client_lost why;
    int64_t revoke_at_ms;
} keep_note;

static int note_fd = -1; /* the write end, for the keeper thread */

static void on_lost(void *ud, sl_client_lost why, const sl_client_claim *claim,
                    const sl_client_error *err)
{
    (void)ud;
    (void)err;
    keep_note n = {why, why == SL_CLIENT_LOST_REVOKED && claim ? claim->revoke_at_ms : -1};
    ssize_t w = write(note_fd, &n, sizeof(n));
    (void)w;
}

/* Waits up to timeout_ms (-1: no limit) for the caller to go or a note to
 * come: 1 caller gone, 2 note (in *n), 0 timeout. */
static int wait_event(const caller *w, int note_rd, int64_t timeout_ms, keep_note *n)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cli_mono_ms() + timeout_ms;
    for (;;) {
        struct pollfd p[2] = {{.fd = note_rd, .events = POLLIN},
                              {.fd = w->pidfd, .events = POLLIN}};
        int step = w->pidfd >= 0 ? -1 : CALLER_POLL_MS;
        if (deadline >= 0) {
            int64_t left = deadline - cli_mono_ms();
            if (left <= 0)
                return 0;
            if (step < 0 || left < step)
                step = left > 60000 ? 60000 : (int)left;
        }
        int r = poll(p, w->pidfd >= 0 ? 2 : 1, step);
        if (r < 0 && errno != EINTR)
            return 1; /* cannot watch: as if gone, so the claim is not kept blind */
        if (r > 0 && (p[0].revents & POLLIN)) {
            if (read(note_rd, n, sizeof(*n)) == (ssize_t)sizeof(*n))
                return 2;
        }
        if (w->pidfd >= 0 ? r > 0 && p[1].revents != 0 : caller_gone(w))
            return 1;
    }
}

static void release_claim(const sl_client_options *opts, const char *id,
                          const sl_client_retry *retry)
{
    sl_client *cl = NULL;
    if (sl_client_new(opts, &cl, NULL) != SL_CLIENT_OK)
        return; /* the lease frees it */
    for (int i = 0; i < RELEASE_TRIES; i++) {
        sl_client_error err;
        int rc = sl_client_claim_release(cl, id, NULL, &err);
        if (rc == SL_CLIENT_OK || rc == SL_CLIENT_EHTTP)
            break;
        struct timespec ts = {.tv_sec = (time_t)(retry->interval_ms / 1000),
                              .tv_nsec = (long)(retry->interval_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    sl_client_free(cl);
}

/* The keeper process's life; its exit status. Tells acquire on status_fd
 * "1" once the keeper runs, or why it cannot. */
static int keep_main(const sl_client_options *opts, const char *id, int64_t lease_ms,
                     const sl_client_retry *retry, const caller *w, int status_fd)
{
    int np[2];
    if (pipe(np) != 0) {
        dprintf(status_fd, "cannot make a pipe: %s", strerror(errno));
        return 1;
    }
    note_fd = np[1];
    sl_client_keeper *k = NULL;
    sl_client_error err;
    if (sl_client_keeper_start(opts, id, lease_ms, retry, on_lost, NULL, &k, &err) !=
        SL_CLIENT_OK) {
        dprintf(status_fd, "%s", err.message);
        return 1;
    }
    ssize_t wr = write(status_fd, "1", 1);
    (void)wr;
    close(status_fd);

    for (;;) {
        keep_note n;
        int ev = wait_event(w, np[0], -1, &n);
        sl_client_keeper_stop(k);
        k = NULL;
        if (ev == 1) {
            release_claim(opts, id, retry);
            return 0;
        }
        if (n.why == SL_CLIENT_LOST_ENDED)
            return 0;
        if (n.why == SL_CLIENT_LOST_REVOKED) {
            /* Renewals are refused now. Until revoke_at the claim keeps its
             * slots; release it sooner if the caller goes first. */
            int64_t left = n.revoke_at_ms > 0 ? n.revoke_at_ms - cli_now_ms() : 0;
            if (wait_event(w, np[0], left + REVOKE_SLACK_MS, &n) == 1)
                release_claim(opts, id, retry);
            return 0;
        }
        /* Unreachable for a whole lease: try again while the caller lives;
         * a renewal refused (the claim expired meanwhile) ends it above. */
        if (sl_client_keeper_start(opts, id, lease_ms, retry, on_lost, NULL, &k, &err) !=
            SL_CLIENT_OK)
            return 1;
    }
}

/* In the keeper process: stdio on /dev/null, every other descriptor but
 * keep_a and keep_b closed. */
static void detach_fds(int keep_a, int keep_b)
{
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        for (int fd = 0; fd < 3; fd++)
            if (null != fd)
                dup2(null, fd);
        if (null > 2)
            close(null);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        int dfd = dirfd(d);
        int fds[1024];
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && n < sizeof(fds) / sizeof(fds[0])) {
            char *end;
            long fd = strtol(e->d_name, &end, 10);
            if (*end == '\0' && fd > 2 && fd != dfd && fd != keep_a && fd != keep_b)
                fds[n++] = (int)fd;
        }
        closedir(d);
        for (size_t i = 0; i < n; i++)
            close(fds[i]);
    } else {
        for (int fd = 3; fd < 1024; fd++)
            if (fd != keep_a && fd != keep_b)
                close(fd);
    }
}

int cli_keep_start(cli *c, const sl_client_claim *claim, pid_t caller_pid, char *why,
                   size_t why_cap)
{
    int64_t interval, jit;
    if (!cli_duration_env(c, "SLUICE_CLAIM_POLL_INTERVAL", 1000, &interval) ||
        !cli_duration_env(c, "SLUICE_CLAIM_POLL_JITTER", 500, &jit)) {
        snprintf(why, why_cap, "a bad SLUICE_CLAIM_POLL_* variable");
        return -1;
    }
    sl_client_retry retry = {interval > 0 ? interval : 1, jit > 0 ? jit : 1};
    caller w = {.pid = caller_pid, .pidfd = pidfd_of(caller_pid), .start = 0};
    proc_info(caller_pid, NULL, NULL, &w.start);
    /* The caller is our ancestor: still the one we looked at if it is
     * still up our chain now that the pidfd is open. */
    if (w.pidfd >= 0 && cli_caller_pid() != caller_pid) {
        close(w.pidfd);
        snprintf(why, why_cap, "the calling process exited meanwhile");
        return -1;
    }
    int sp[2];
    if (pipe(sp) != 0) {
        snprintf(why, why_cap, "cannot make a pipe: %s", strerror(errno));
        if (w.pidfd >= 0)
            close(w.pidfd);
        return -1;
    }
    c->opts.server = c->server;
    c->opts.token = c->token;
    c->opts.cacert = c->cacert;
    c->opts.cert = c->cert;
    c->opts.key = c->key;
    fflush(stdout);
    fflush(stderr);
    pid_t mid = fork();
    if (mid == 0) {
        close(sp[0]);
        setsid();
        pid_t k = fork();
        if (k != 0)
            _exit(k < 0 ? 1 : 0);
        /* The keeper, adopted by init (or a subreaper) once mid exits. */
        detach_fds(sp[1], w.pidfd);
        if (chdir("/") != 0) {
            /* harmless: it only keeps a directory busy */
        }
        signal(SIGPIPE, SIG_IGN);
#ifdef __linux__
        prctl(PR_SET_NAME, "sluice-keeper");
#endif
        _exit(keep_main(&c->opts, claim->id, claim->lease_ms, &retry, &w, sp[1]));
    }
    close(sp[1]);
    if (w.pidfd >= 0)
        close(w.pidfd);
    if (mid < 0) {
        close(sp[0]);
        snprintf(why, why_cap, "cannot fork: %s", strerror(errno));
        return -1;
    }
    int ws;
    while (waitpid(mid, &ws, 0) < 0 && errno == EINTR) {
    }
    /* "1" once the keeper runs; else its reason, or nothing if it died. */
    char buf[512];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(sp[0], buf + n, sizeof(buf) - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (buf[0] == '1' || n == sizeof(buf) - 1)
            break;
    }
    close(sp[0]);
    buf[n] = '\0';
    if (n > 0 && buf[0] == '1')
        return 0;
    snprintf(why, why_cap, "%s", n > 0 ? buf : "the keeper process could not start");
    return -1;
}
