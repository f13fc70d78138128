/* sigpipe.c - signals (and news from other threads) as records on a pipe.
 *
 * `sluice run` must react to several things at once: its command exiting
 * (SIGCHLD), signals to pass on to the command, the keeper thread saying
 * the claim is lost, and a deadline for SIGKILL. A handler may do almost
 * nothing safely, so each of these writes a two-byte record to a pipe, and
 * the main thread reads them in poll() with the deadline as its timeout:
 * one loop, no races between a flag and a sleep. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static int pipe_fd[2] = {-1, -1};
static sigset_t caught; /* every signal given to cli_sigpipe_catch */

static void post(unsigned char what, unsigned char from_user)
{
    int saved = errno; /* a handler must leave errno as it found it */
    unsigned char rec[2] = {what, from_user};
    /* Non-blocking: if the pipe is full (64 KiB of records), the main thread
     * has plenty to read already; dropping a repeat is harmless. */
    ssize_t w = write(pipe_fd[1], rec, sizeof(rec));
    (void)w;
    errno = saved;
}

static void on_signal(int sig, siginfo_t *info, void *uctx)
{
    (void)uctx;
    /* si_code <= 0 (SI_USER, SI_QUEUE, SI_TKILL): sent by a process. The
     * terminal's ^C and the kernel's SIGCHLD have positive codes. */
    post((unsigned char)sig, info && info->si_code <= 0);
}

bool cli_sigpipe_open(void)
{
    if (pipe_fd[0] >= 0)
        return true;
    if (pipe(pipe_fd) != 0) {
        fprintf(stderr, "sluice: cannot make a pipe: %s\n", strerror(errno));
        return false;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(pipe_fd[i], F_SETFD, FD_CLOEXEC);
        fcntl(pipe_fd[i], F_SETFL, fcntl(pipe_fd[i], F_GETFL) | O_NONBLOCK);
    }
    sigemptyset(&caught);
    return true;
}

void cli_sigpipe_catch(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | (sig == SIGCHLD ? SA_NOCLDSTOP : 0);
    sigfillset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    sigaddset(&caught, sig);
}

void cli_sigpipe_reset(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    for (int sig = 1; sig < 65; sig++)
        if (sigismember(&caught, sig) == 1)
            sigaction(sig, &sa, NULL);
}

void cli_sigpipe_post(int what)
{
    post((unsigned char)what, 0);
}

void cli_sigpipe_block(bool block)
{
    pthread_sigmask(block ? SIG_BLOCK : SIG_UNBLOCK, &caught, NULL);
}

int cli_sigpipe_wait(int64_t timeout_ms, cli_note *out)
{
    int64_t deadline = timeout_ms < 0 ? -1 : cli_mono_ms() + timeout_ms;
    for (;;) {
        unsigned char rec[2];
        ssize_t r = read(pipe_fd[0], rec, sizeof(rec));
        if (r == 2) {
            out->what = rec[0];
            out->from_user = rec[1] != 0;
            return 1;
        }
        /* Records are written whole (2 bytes < PIPE_BUF), so r is 2, or -1. */
        int wait_ms = -1;
        if (deadline >= 0) {
            int64_t left = deadline - cli_mono_ms();
            if (left <= 0)
                return 0;
            wait_ms = left > 60000 ? 60000 : (int)left;
        }
        struct pollfd p = {.fd = pipe_fd[0], .events = POLLIN};
        poll(&p, 1, wait_ms);
    }
}
