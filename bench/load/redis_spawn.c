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

#define READY_TIMEOUT_MS 10000
#define POLL_MS 20
#define ATTEMPTS 3 /* another process may take the free port before the server binds it */

static pid_t launch(const char *binary, bool durable, int port, const char *dir)
{
    char portbuf[16], log[320];
    pid_t pid;
    snprintf(portbuf, sizeof portbuf, "%d", port);
    snprintf(log, sizeof log, "%s/redis.log", dir);
    pid = fork();
    if (pid == 0) {
        /* The log goes to a file so that it does not mix with the table. */
        char *argv[] = {(char *)binary,
                        "--port",
                        portbuf,
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
        execv(binary, argv);
        fprintf(stderr, "sluice-load: cannot run %s: %s\n", binary, strerror(errno));
        _exit(127);
    }
    return pid;
}

static bool answers_ping(int port)
{
    struct timeval tv = {.tv_sec = 1, .tv_usec = 0};
    redisContext *c = redisConnectWithTimeout("127.0.0.1", port, tv);
    redisReply *r;
    bool ok = false;
    if (c && !c->err) {
        r = redisCommand(c, "PING");
        ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;
        freeReplyObject(r);
    }
    if (c)
        redisFree(c);
    return ok;
}

static int wait_ready(pid_t pid, int port, int *status)
{
    int waited;
    *status = -1;
    for (waited = 0; waited < READY_TIMEOUT_MS; waited += POLL_MS) {
        if (waitpid(pid, status, WNOHANG) == pid)
            return -1;
        if (answers_ping(port))
            return 0;
        sl_spawn_sleep_ms(POLL_MS);
    }
    return -1;
}

int sl_redis_spawn_start(const char *binary, bool durable, sl_spawn *out, char *err, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    int attempt, status = -1;
    memset(out, 0, sizeof *out);
    snprintf(out->dir, sizeof out->dir, "%s/sluice-load-redis-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(out->dir)) {
        snprintf(err, cap, "mkdtemp %s: %s", out->dir, strerror(errno));
        return -1;
    }
    for (attempt = 0; attempt < ATTEMPTS; attempt++) {
        int p = sl_spawn_free_port();
        if (p < 0)
            break;
        snprintf(out->address, sizeof out->address, "127.0.0.1:%d", p);
        out->pid = launch(binary, durable, p, out->dir);
        if (out->pid < 0)
            break;
        if (wait_ready(out->pid, p, &status) == 0)
            return 0;
        if (status == -1) /* still running but not answering: give up on it */
            status = sl_spawn_terminate(out->pid);
        out->pid = 0;
    }
    if (status != -1 && WIFEXITED(status))
        snprintf(err, cap, "%s exited with status %d before answering PING", binary,
                 WEXITSTATUS(status));
    else
        snprintf(err, cap, "%s did not answer PING within %d s", binary, READY_TIMEOUT_MS / 1000);
    sl_spawn_remove_dir(out->dir);
    return -1;
}

int sl_redis_spawn_stop(sl_spawn *s, char *err, size_t cap)
{
    return sl_spawn_stop_named(s, "redis-server", err, cap);
}
