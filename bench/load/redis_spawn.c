/* redis_spawn.c - starts and stops a throwaway redis-server (see
 * redis_spawn.h). The free port, the stop and the clean-up are sluiced_spawn.c's. */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "redis_spawn.h"
#include "redis_tls.h"

#define READY_TIMEOUT_MS 10000
#define POLL_MS 20
#define ATTEMPTS 3 /* another process may take the free port before the server binds it */

static pid_t launch(const char *binary, bool durable, int port, const sl_spawn *s)
{
    const char *dir = s->dir;
    char portbuf[16], log[320], key[320];
    bool tls = s->ca[0] != '\0';
    pid_t pid;
    snprintf(portbuf, sizeof portbuf, "%d", port);
    snprintf(log, sizeof log, "%s/redis.log", dir);
    snprintf(key, sizeof key, "%s/key.pem", dir);
    pid = fork();
    if (pid == 0) {
        /* The log goes to a file so that it does not mix with the table.
         * Over TLS the plain port is off (0) and clients need no
         * certificate; the CA file is the server's own certificate, which
         * Redis wants even when it does not ask clients for one. */
        char *argv[] = {(char *)binary,
                        "--port",
                        tls ? "0" : portbuf,
                        "--tls-port",
                        tls ? portbuf : "0",
                        "--tls-cert-file",
                        (char *)s->ca,
                        "--tls-key-file",
                        key,
                        "--tls-ca-cert-file",
                        (char *)s->ca,
                        "--tls-auth-clients",
                        "no",
                        "--bind",
                        "127.0.0.1",
                        "--dir",
                        (char *)dir,
                        "--logfile",
                        log,
                        "--daemonize",
                        "no",
                        "--save",
                        "",
                        "--appendonly",
                        durable ? "yes" : "no",
                        "--appendfsync",
                        durable ? "always" : "everysec",
                        NULL};
        if (!tls) /* no TLS arguments at all for a plain server */
            memmove(argv + 3, argv + 13, (sizeof argv / sizeof argv[0] - 13) * sizeof argv[0]);
        execv(binary, argv);
        fprintf(stderr, "sluice-load: cannot run %s: %s\n", binary, strerror(errno));
        _exit(127);
    }
    return pid;
}

static bool answers_ping_tls(int port, sl_tls_client *tls)
{
    char portbuf[16], err[256];
    sl_resp_tls *c;
    redisReply *r;
    bool ok;
    snprintf(portbuf, sizeof portbuf, "%d", port);
    if (sl_resp_tls_connect("127.0.0.1", portbuf, 1000, tls, &c, err, sizeof err) < 0)
        return false;
    r = sl_resp_tls_command(c, "PING");
    ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
    freeReplyObject(r);
    sl_resp_tls_free(c);
    return ok;
}

static bool answers_ping(int port, sl_tls_client *tls)
{
    struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
    redisContext *c;
    redisReply *r;
    bool ok = false;
    if (tls)
        return answers_ping_tls(port, tls);
    c = redisConnectWithTimeout("127.0.0.1", port, tv);
    if (c && !c->err) {
        r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

static int wait_ready(pid_t pid, int port, sl_tls_client *tls, int *status)
{
    int waited;
    *status = -1;
    for (waited = 0; waited < READY_TIMEOUT_MS; waited += POLL_MS) {
        if (waitpid(pid, status, WNOHANG) == pid)
            return -1;
        if (answers_ping(port, tls))
            return 0;
        sl_spawn_sleep_ms(POLL_MS);
    }
    return -1;
}

int sl_redis_spawn_start(const char *binary, bool durable, bool tls, sl_spawn *out, char *err,
                         size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    sl_tls_client *client = NULL;
    char key[300];
    int attempt, status = -1;
    memset(out, 0, sizeof *out);
    snprintf(out->dir, sizeof out->dir, "%s/sluice-load-redis-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(out->dir)) {
        snprintf(err, cap, "mkdtemp %s: %s", out->dir, strerror(errno));
        return -1;
    }
    if (tls && (sl_spawn_make_cert(out, key, sizeof key, err, cap) < 0 ||
                sl_tls_client_new(out->ca, false, &client, err, cap) < 0)) {
        sl_spawn_remove_dir(out->dir);
        return -1;
    }
    for (attempt = 0; attempt < ATTEMPTS; attempt++) {
        int p = sl_spawn_free_port();
        if (p < 0)
            break;
        snprintf(out->address, sizeof out->address, "127.0.0.1:%d", p);
        snprintf(out->url, sizeof out->url, "%s%s", tls ? "rediss://" : "", out->address);
        out->pid = launch(binary, durable, p, out);
        if (out->pid < 0)
            break;
        if (wait_ready(out->pid, p, client, &status) == 0) {
            sl_tls_client_free(client);
            return 0;
        }
        if (status == -1) /* still running but not answering: give up on it */
            status = sl_spawn_terminate(out->pid);
        out->pid = 0;
    }
    if (status != -1 && WIFEXITED(status))
        snprintf(err, cap, "%s exited with status %d before answering PING", binary,
                 WEXITSTATUS(status));
    else
        snprintf(err, cap, "%s did not answer PING within %d s", binary, READY_TIMEOUT_MS / 1000);
    sl_tls_client_free(client);
    sl_spawn_remove_dir(out->dir);
    return -1;
}

int sl_redis_spawn_stop(sl_spawn *s, char *err, size_t cap)
{
    return sl_spawn_stop_named(s, "redis-server", err, cap);
}
