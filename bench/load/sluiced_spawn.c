/* sluiced_spawn.c - starts and stops a throwaway sluiced (see sluiced_spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "sluiced_spawn.h"
#include "tls.h"

#define READY_TIMEOUT_MS 10000
#define STOP_TIMEOUT_MS 30000 /* LeakSanitizer's report at exit may take a while */
#define POLL_MS 20
#define ATTEMPTS 3 /* another process may take the free port before the server binds it */

void sl_spawn_sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* A loopback port that was free a moment ago: bind to 0, read, close. */
int sl_spawn_free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
    if (s < 0)
        return -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        port = ntohs(a.sin_port);
    close(s);
    return port;
}

/* limits.max_claims for the server, in dir/sluiced.yaml. */
static int write_config(const char *dir, size_t max_claims, char *path, size_t cap)
{
    FILE *f;
    snprintf(path, cap, "%s/sluiced.yaml", dir);
    f = fopen(path, "w");
    if (!f)
        return -1;
    fprintf(f, "# written by sluice-load for a scale run\nlimits:\n  max_claims: %zu\n",
            max_claims);
    return fclose(f) == 0 ? 0 : -1;
}

int sl_spawn_make_cert(sl_spawn *s, char *key_path, size_t kcap, char *err, size_t cap)
{
    snprintf(s->ca, sizeof s->ca, "%s/cert.pem", s->dir);
    snprintf(key_path, kcap, "%s/key.pem", s->dir);
    return sl_tls_make_self_signed(s->ca, key_path, err, cap);
}

static pid_t launch(const char *binary, const sl_spawn_opts *o, const sl_spawn *s)
{
    const char *address = s->address, *dir = s->dir;
    char listen[80], store[300], config[300], key[300];
    char *argv[20];
    int n = 0;
    pid_t pid;
    snprintf(listen, sizeof listen, "%s", address);
    snprintf(store, sizeof store, "sqlite:%s/sluice.db", dir);
    if (o->max_claims && write_config(dir, o->max_claims, config, sizeof config) < 0)
        return -1;
    argv[n++] = (char *)binary;
    argv[n++] = "--listen";
    argv[n++] = listen;
    argv[n++] = "--store";
    argv[n++] = store;
    argv[n++] = "--durability";
    argv[n++] = (char *)o->durability;
    argv[n++] = "--log-level";
    argv[n++] = o->log_path ? "info" : "warn";
    if (o->max_claims) {
        argv[n++] = "--config";
        argv[n++] = config;
    }
    if (o->tls) { /* the certificate sl_spawn_start_opts made */
        snprintf(key, sizeof key, "%s/key.pem", dir);
        argv[n++] = "--tls-cert";
        argv[n++] = (char *)s->ca;
        argv[n++] = "--tls-key";
        argv[n++] = key;
    }
    argv[n] = NULL;
    pid = fork();
    if (pid == 0) {
        if (o->log_path) {
            int fd = open(o->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
            if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
                _exit(127);
        }
        execv(binary, argv);
        fprintf(stderr, "sluice-load: cannot run %s: %s\n", binary, strerror(errno));
        _exit(127);
    }
    return pid;
}

/* One GET /healthz: true when it answers 200 (over TLS when tls is set). */
static bool healthy(const char *port, sl_tls_client *tls)
{
    sl_http_conn *c;
    const sl_http_response *r;
    bool ok;
    if (sl_http_conn_new_tls("127.0.0.1", port, 1000, tls, &c) < 0)
        return false;
    ok = sl_http_conn_request(c, "GET", "/healthz", NULL, 0, &r) == 0 && r->status == 200;
    sl_http_conn_free(c);
    return ok;
}

/* 0 once healthy; -1 when the server exited (*status says how) or never
 * answered. */
static int wait_ready(pid_t pid, const char *port, sl_tls_client *tls, int *status)
{
    int waited;
    *status = -1;
    for (waited = 0; waited < READY_TIMEOUT_MS; waited += POLL_MS) {
        if (waitpid(pid, status, WNOHANG) == pid)
            return -1;
        if (healthy(port, tls))
            return 0;
        sl_spawn_sleep_ms(POLL_MS);
    }
    return -1;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* Removes dir and all in it: a store with its WAL, or Redis's log and
 * appendonlydir/. */
void sl_spawn_remove_dir(const char *dir)
{
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* SIGTERM, then SIGKILL if it will not go; the exit status, or -1. */
int sl_spawn_terminate(pid_t pid)
{
    int status, waited;
    kill(pid, SIGTERM);
    for (waited = 0; waited < STOP_TIMEOUT_MS; waited += POLL_MS) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        sl_spawn_sleep_ms(POLL_MS);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

int sl_spawn_start(const char *binary, const char *durability, sl_spawn *out, char *err, size_t cap)
{
    sl_spawn_opts o = {durability, 0, NULL, false};
    return sl_spawn_start_opts(binary, &o, out, err, cap);
}

int sl_spawn_start_opts(const char *binary, const sl_spawn_opts *opts, sl_spawn *out, char *err,
                        size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    sl_tls_client *tls = NULL;
    char key[300];
    int attempt, status = -1;
    memset(out, 0, sizeof *out);
    snprintf(out->dir, sizeof out->dir, "%s/sluice-load-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(out->dir)) {
        snprintf(err, cap, "mkdtemp %s: %s", out->dir, strerror(errno));
        return -1;
    }
    if (opts->tls && (sl_spawn_make_cert(out, key, sizeof key, err, cap) < 0 ||
                      sl_tls_client_new(out->ca, false, &tls, err, cap) < 0)) {
        sl_spawn_remove_dir(out->dir);
        return -1;
    }
    for (attempt = 0; attempt < ATTEMPTS; attempt++) {
        char port[16];
        int p = sl_spawn_free_port();
        if (p < 0)
            break;
        snprintf(port, sizeof port, "%d", p);
        snprintf(out->address, sizeof out->address, "127.0.0.1:%d", p);
        snprintf(out->url, sizeof out->url, "%s%s", opts->tls ? "https://" : "", out->address);
        out->pid = launch(binary, opts, out);
        if (out->pid < 0)
            break;
        if (wait_ready(out->pid, port, tls, &status) == 0) {
            sl_tls_client_free(tls);
            return 0;
        }
        if (status == -1) /* still running but not answering: give up on it */
            status = sl_spawn_terminate(out->pid);
        out->pid = 0;
    }
    if (status != -1 && WIFEXITED(status))
        snprintf(err, cap, "%s exited with status %d before answering /healthz", binary,
                 WEXITSTATUS(status));
    else
        snprintf(err, cap, "%s did not answer /healthz within %d s", binary,
                 READY_TIMEOUT_MS / 1000);
    sl_tls_client_free(tls);
    sl_spawn_remove_dir(out->dir);
    return -1;
}

int sl_spawn_stop_named(sl_spawn *s, const char *name, char *err, size_t cap)
{
    int status;
    if (s->pid <= 0) { /* it exited already (a scale run saw it go) */
        if (s->dir[0])
            sl_spawn_remove_dir(s->dir);
        return 0;
    }
    status = sl_spawn_terminate(s->pid);
    s->pid = 0;
    sl_spawn_remove_dir(s->dir);
    if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (status != -1 && WIFSIGNALED(status))
            snprintf(err, cap, "%s was killed by signal %d", name, WTERMSIG(status));
        else if (status != -1)
            snprintf(err, cap, "%s exited with status %d", name, WEXITSTATUS(status));
        else
            snprintf(err, cap, "%s did not stop within %d s of SIGTERM", name,
                     STOP_TIMEOUT_MS / 1000);
        return -1;
    }
    return 0;
}

int sl_spawn_stop(sl_spawn *s, char *err, size_t cap)
{
    return sl_spawn_stop_named(s, "sluiced", err, cap);
}

int sl_spawn_halt(sl_spawn *s, bool crash)
{
    int status;
    pid_t pid = s->pid;
    s->pid = 0;
    if (pid <= 0)
        return -1;
    if (!crash)
        return sl_spawn_terminate(pid);
    kill(pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return status;
}

int sl_spawn_relaunch(const char *binary, const sl_spawn_opts *opts, sl_spawn *s, char *err,
                      size_t cap)
{
    s->pid = launch(binary, opts, s);
    if (s->pid > 0)
        return 0;
    snprintf(err, cap, "cannot start %s again: %s", binary, strerror(errno));
    s->pid = 0;
    return -1;
}
