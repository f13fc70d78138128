/* etcd_spawn.c - starts and stops a throwaway etcd (see etcd_spawn.h). The
 * free ports, the SIGTERM and the clean-up are sluiced_spawn.c's.
 *
 * What "a clean exit" means for etcd: on SIGTERM it runs its shutdown
 * handlers (stops the server, closes the WAL), logs "received terminated
 * signal, shutting down", then restores the default action and sends
 * itself the signal again (etcd's pkg/osutil), so a clean stop ends "killed
 * by SIGTERM", never with status 0. The stop therefore requires that status
 * and that line in its log; a crash (a Go panic exits with status 2) or a
 * hang fails the run. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "etcd_spawn.h"
#include "http.h"
#include "json_scan.h"

#define READY_TIMEOUT_MS 20000 /* the first start creates and fsyncs the WAL and snapshot dirs */
#define POLL_MS 20
#define ATTEMPTS 3 /* another process may take a free port before etcd binds it */
#define SHUTDOWN_LINE "received terminated signal, shutting down"
#define LOG_TAIL 8192 /* the shutdown line is among the last ones logged */

typedef struct urls {
    char client[64], peer[64], cluster[96];
} urls;

static void set_urls(urls *u, int client_port, int peer_port)
{
    snprintf(u->client, sizeof u->client, "http://127.0.0.1:%d", client_port);
    snprintf(u->peer, sizeof u->peer, "http://127.0.0.1:%d", peer_port);
    snprintf(u->cluster, sizeof u->cluster, "sluice-load=http://127.0.0.1:%d", peer_port);
}

/* The child: its log (etcd logs to stderr) into dir/etcd.log, so that it
 * does not mix with the table, then etcd. */
static void exec_etcd(const char *binary, const urls *u, const char *dir)
{
    char data[300], log[300];
    char *argv[] = {(char *)binary,
                    "--name",
                    "sluice-load",
                    "--data-dir",
                    data,
                    "--listen-client-urls",
                    (char *)u->client,
                    "--advertise-client-urls",
                    (char *)u->client,
                    "--listen-peer-urls",
                    (char *)u->peer,
                    "--initial-advertise-peer-urls",
                    (char *)u->peer,
                    "--initial-cluster",
                    (char *)u->cluster,
                    NULL};
    int fd;
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(log, sizeof log, "%s/etcd.log", dir);
    fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
    }
    execv(binary, argv);
    fprintf(stderr, "sluice-load: cannot run %s: %s\n", binary, strerror(errno));
    _exit(127);
}

static pid_t launch(const char *binary, const urls *u, const char *dir)
{
    pid_t pid = fork();
    if (pid == 0)
        exec_etcd(binary, u, dir);
    return pid;
}

/* One GET /health: true when etcd says it is healthy (it has a leader). */
static bool healthy(const char *port)
{
    sl_http_conn *c;
    const sl_http_response *r;
    sl_json_span v;
    bool ok = false;
    if (sl_http_conn_new("127.0.0.1", port, 1000, &c) < 0)
        return false;
    if (sl_http_conn_request(c, "GET", "/health", NULL, 0, &r) == 0 && r->status == 200)
        ok = sl_json_member(sl_json_span_of(r->body, r->body_len), "health", &v) == 0 &&
             sl_json_is_string(v, "true");
    sl_http_conn_free(c);
    return ok;
}

static int wait_ready(pid_t pid, const char *port, int *status)
{
    int waited;
    *status = -1;
    for (waited = 0; waited < READY_TIMEOUT_MS; waited += POLL_MS) {
        if (waitpid(pid, status, WNOHANG) == pid)
            return -1;
        if (healthy(port))
            return 0;
        sl_spawn_sleep_ms(POLL_MS);
    }
    return -1;
}

/* One try on two ports that were free a moment ago: 0 when etcd answers. */
static int try_start(const char *binary, sl_spawn *out, int *status)
{
    int client = sl_spawn_free_port(), peer = sl_spawn_free_port();
    char port[16];
    urls u;
    *status = -1;
    if (client < 0 || peer < 0 || client == peer)
        return -1;
    set_urls(&u, client, peer);
    snprintf(port, sizeof port, "%d", client);
    snprintf(out->address, sizeof out->address, "127.0.0.1:%d", client);
    out->pid = launch(binary, &u, out->dir);
    if (out->pid < 0)
        return -1;
    if (wait_ready(out->pid, port, status) == 0)
        return 0;
    if (*status == -1) /* still running but not answering: give up on it */
        *status = sl_spawn_terminate(out->pid);
    out->pid = 0;
    return -1;
}

/* The last LOG_TAIL bytes of dir/etcd.log, NUL-terminated ("" when none). */
static const char *log_tail(const char *dir)
{
    static char tail[LOG_TAIL + 1];
    char path[300];
    FILE *f;
    size_t n;
    long size;
    tail[0] = '\0';
    snprintf(path, sizeof path, "%s/etcd.log", dir);
    if (!(f = fopen(path, "r")))
        return tail;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > LOG_TAIL)
        fseek(f, size - LOG_TAIL, SEEK_SET);
    else
        fseek(f, 0, SEEK_SET);
    n = fread(tail, 1, LOG_TAIL, f);
    fclose(f);
    tail[n] = '\0';
    return tail;
}

/* The log's last line, for a message (at most 300 bytes of it). */
static void last_line(const char *dir, char *out, size_t cap)
{
    const char *t = log_tail(dir);
    size_t end = strlen(t), start;
    while (end > 0 && (t[end - 1] == '\n' || t[end - 1] == '\r'))
        end--;
    for (start = end; start > 0 && t[start - 1] != '\n'; start--)
        ;
    /* cppcheck sees only the "" that log_tail starts with, not what fread
     * puts after it, and so takes the line for empty. */
    // cppcheck-suppress knownConditionTrueFalse
    snprintf(out, cap, "%.*s", (int)(end - start > 300 ? 300 : end - start), t + start);
}

int sl_etcd_spawn_start(const char *binary, sl_spawn *out, char *err, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    char data[300], line[320];
    int attempt, status = -1;
    memset(out, 0, sizeof *out);
    snprintf(out->dir, sizeof out->dir, "%s/sluice-load-etcd-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(out->dir)) {
        snprintf(err, cap, "mkdtemp %s: %s", out->dir, strerror(errno));
        return -1;
    }
    snprintf(data, sizeof data, "%s/data", out->dir);
    for (attempt = 0; attempt < ATTEMPTS; attempt++) {
        if (try_start(binary, out, &status) == 0)
            return 0;
        sl_spawn_remove_dir(data); /* a half-made member must not be restarted */
    }
    last_line(out->dir, line, sizeof line);
    if (status != -1 && WIFEXITED(status))
        snprintf(err, cap, "%s exited with status %d before answering /health; it last logged: %s",
                 binary, WEXITSTATUS(status), line[0] ? line : "nothing");
    else
        snprintf(err, cap, "%s did not answer /health within %d s", binary,
                 READY_TIMEOUT_MS / 1000);
    sl_spawn_remove_dir(out->dir);
    return -1;
}

int sl_etcd_spawn_stop(sl_spawn *s, char *err, size_t cap)
{
    int status;
    bool logged;
    if (s->pid <= 0)
        return 0;
    status = sl_spawn_terminate(s->pid);
    s->pid = 0;
    logged = strstr(log_tail(s->dir), SHUTDOWN_LINE) != NULL;
    sl_spawn_remove_dir(s->dir);
    if (status != -1 &&
        ((WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) ||
         (WIFEXITED(status) && WEXITSTATUS(status) == 0)) &&
        logged)
        return 0;
    if (status == -1)
        snprintf(err, cap, "etcd did not stop within 30 s of SIGTERM");
    else if (WIFEXITED(status))
        snprintf(err, cap, "etcd exited with status %d", WEXITSTATUS(status));
    else if (!logged)
        snprintf(err, cap, "etcd was killed by signal %d without logging its shutdown",
                 WTERMSIG(status));
    else
        snprintf(err, cap, "etcd was killed by signal %d", WTERMSIG(status));
    return -1;
}
