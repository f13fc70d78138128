/* pg_spawn.c - starts and stops a throwaway PostgreSQL server (see
 * pg_spawn.h). The free port, the stop and the clean-up are sluiced_spawn.c's. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <libpq-fe.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg_spawn.h"

#define INITDB_TIMEOUT_MS 120000 /* bootstrapping takes seconds, more under ASan load */
#define READY_TIMEOUT_MS 30000
#define POLL_MS 20
#define ATTEMPTS 3 /* another process may take the free port before the server binds it */
/* Debian's clusters have 100. A run opens one connection per client plus a
 * control one, and the semaphore run has 64 clients: room for -c 256. */
#define MAX_CONNECTIONS "300"
#define SUPERUSER "postgres"

/* Whom initdb and postgres run as: ourselves, or when we are root an
 * unprivileged user, since PostgreSQL will not run as root. */
typedef struct run_as {
    bool drop;
    uid_t uid;
    gid_t gid;
    char name[32];
} run_as;

static bool has_binaries(const char *dir)
{
    char path[512];
    snprintf(path, sizeof path, "%s/initdb", dir);
    if (access(path, X_OK) != 0)
        return false;
    snprintf(path, sizeof path, "%s/postgres", dir);
    return access(path, X_OK) == 0;
}

/* libpq-dev's pg_config names the server's bindir even when the server
 * package is not installed, hence has_binaries() after it. */
static bool bindir_from_pg_config(char *out, size_t cap)
{
    FILE *p = popen("pg_config --bindir 2>/dev/null", "r");
    size_t n;
    bool ok;
    if (!p)
        return false;
    ok = fgets(out, (int)cap, p) != NULL;
    if (pclose(p) != 0)
        ok = false;
    if (!ok)
        return false;
    n = strcspn(out, "\r\n");
    out[n] = '\0';
    return n > 0 && has_binaries(out);
}

/* Debian installs each major version in /usr/lib/postgresql/N/bin: the
 * highest N with both binaries. */
static bool bindir_newest(char *out, size_t cap)
{
    glob_t g;
    long best = -1;
    size_t i;
    if (glob("/usr/lib/postgresql/*/bin", 0, NULL, &g) != 0)
        return false;
    for (i = 0; i < g.gl_pathc; i++) {
        long v = strtol(g.gl_pathv[i] + strlen("/usr/lib/postgresql/"), NULL, 10);
        if (v > best && has_binaries(g.gl_pathv[i]) && strlen(g.gl_pathv[i]) < cap) {
            best = v;
            memcpy(out, g.gl_pathv[i], strlen(g.gl_pathv[i]) + 1);
        }
    }
    globfree(&g);
    return best >= 0;
}

static int find_bindir(const char *given, char *out, size_t cap, char *err, size_t ecap)
{
    if (given) {
        if (!has_binaries(given) || strlen(given) >= cap) {
            snprintf(err, ecap, "no executable initdb and postgres in %s", given);
            return -1;
        }
        memcpy(out, given, strlen(given) + 1);
        return 0;
    }
    if (bindir_from_pg_config(out, cap) || bindir_newest(out, cap))
        return 0;
    snprintf(err, ecap,
             "no PostgreSQL server binaries found (pg_config --bindir, "
             "/usr/lib/postgresql/*/bin): apt-get install postgresql, or --pg-bindir DIR");
    return -1;
}

static int choose_user(run_as *r, char *err, size_t cap)
{
    static const char *const candidates[] = {"postgres", "nobody"};
    size_t i;
    memset(r, 0, sizeof *r);
    if (geteuid() != 0)
        return 0;
    for (i = 0; i < sizeof candidates / sizeof *candidates; i++) {
        struct passwd *pw = getpwnam(candidates[i]);
        if (pw && pw->pw_uid != 0) {
            r->drop = true;
            r->uid = pw->pw_uid;
            r->gid = pw->pw_gid;
            snprintf(r->name, sizeof r->name, "%s", candidates[i]);
            return 0;
        }
    }
    snprintf(err, cap,
             "running as root, and there is no user postgres or nobody to run "
             "PostgreSQL as (it refuses to run as root)");
    return -1;
}

/* In the child: output to log, the user dropped to, then argv. Never returns. */
static void exec_child(const run_as *r, const char *dir, const char *log, char *const argv[])
{
    int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || null < 0 || dup2(null, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
        _exit(126);
    /* initdb reads its working directory, which may be one the dropped-to
     * user cannot enter. */
    if (chdir(dir) != 0)
        _exit(126);
    if (r->drop && (setgroups(0, NULL) != 0 || setgid(r->gid) != 0 || setuid(r->uid) != 0)) {
        fprintf(stderr, "sluice-load: cannot become %s: %s\n", r->name, strerror(errno));
        _exit(126);
    }
    execv(argv[0], argv);
    fprintf(stderr, "sluice-load: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static pid_t launch(const run_as *r, const char *dir, const char *log, char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0)
        exec_child(r, dir, log, argv);
    return pid;
}

/* The last line of the log, for the error message (the directory with the
 * log is removed when the start fails). */
static void log_tail(const char *path, char *out, size_t cap)
{
    char buf[512], *line;
    size_t n = 0;
    long size;
    FILE *f = fopen(path, "r");
    out[0] = '\0';
    if (!f)
        return;
    if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0) {
        fseek(f, size > (long)sizeof buf - 1 ? size - (long)sizeof buf + 1 : 0, SEEK_SET);
        n = fread(buf, 1, sizeof buf - 1, f);
    }
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = '\0';
    line = strrchr(buf, '\n');
    /* Cut to cap on purpose: the message has room for one line's start. */
    const char *tail = line ? line + 1 : buf;
    size_t len = strlen(tail);
    if (cap == 0)
        return;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, tail, len);
    out[len] = '\0';
}

/* Waits up to timeout_ms for pid to exit: its status, or -1 (then killed). */
static int wait_exit(pid_t pid, int timeout_ms)
{
    int status, waited;
    for (waited = 0; waited < timeout_ms; waited += POLL_MS) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return status;
        sl_spawn_sleep_ms(POLL_MS);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* --no-sync only skips initdb's final flush of the new files: the server
 * still fsyncs every commit. Locale C so that no locale needs to exist. */
static int run_initdb(const run_as *r, const char *bindir, const char *dir, char *err, size_t cap)
{
    char initdb[512], data[320], log[320], tail[256];
    int status;
    pid_t pid;
    snprintf(initdb, sizeof initdb, "%s/initdb", bindir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(log, sizeof log, "%s/initdb.log", dir);
    {
        char *argv[] = {initdb,  "-D", data,   "-U",         SUPERUSER,   "-A",
                        "trust", "-E", "UTF8", "--locale=C", "--no-sync", NULL};
        pid = launch(r, dir, log, argv);
    }
    if (pid < 0) {
        snprintf(err, cap, "fork: %s", strerror(errno));
        return -1;
    }
    status = wait_exit(pid, INITDB_TIMEOUT_MS);
    if (status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    log_tail(log, tail, sizeof tail);
    if (status == -1)
        snprintf(err, cap, "%s did not finish within %d s", initdb, INITDB_TIMEOUT_MS / 1000);
    else
        snprintf(err, cap, "%s failed (status %d): %s", initdb,
                 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), tail);
    return -1;
}

/* The settings of a Debian cluster are initdb's defaults (fsync on,
 * synchronous_commit on, shared_buffers 128MB) plus what this needs:
 * loopback only, the socket in our directory, more connections. Debian
 * also turns ssl on; it stays off, as sluiced and Redis are loaded in clear. */
static pid_t launch_postgres(const run_as *r, const char *bindir, const char *dir, int port)
{
    char postgres[512], data[320], log[320], portbuf[16], sockets[300];
    snprintf(postgres, sizeof postgres, "%s/postgres", bindir);
    snprintf(data, sizeof data, "%s/data", dir);
    snprintf(log, sizeof log, "%s/postgres.log", dir);
    snprintf(portbuf, sizeof portbuf, "%d", port);
    snprintf(sockets, sizeof sockets, "unix_socket_directories=%s", dir);
    {
        char *argv[] = {postgres,
                        "-D",
                        data,
                        "-p",
                        portbuf,
                        "-c",
                        "listen_addresses=127.0.0.1",
                        "-c",
                        sockets,
                        "-c",
                        "max_connections=" MAX_CONNECTIONS,
                        NULL};
        return launch(r, dir, log, argv);
    }
}

static bool accepts(int port)
{
    char conninfo[160];
    snprintf(conninfo, sizeof conninfo,
             "host=127.0.0.1 port=%d dbname=postgres user=" SUPERUSER " connect_timeout=2", port);
    return PQping(conninfo) == PQPING_OK;
}

/* 0 once the server accepts connections; -1 when it exited (*status says
 * how) or never did. */
static int wait_ready(pid_t pid, int port, int *status)
{
    int waited;
    *status = -1;
    for (waited = 0; waited < READY_TIMEOUT_MS; waited += POLL_MS) {
        if (waitpid(pid, status, WNOHANG) == pid)
            return -1;
        if (accepts(port))
            return 0;
        sl_spawn_sleep_ms(POLL_MS);
    }
    return -1;
}

static int make_dir(const run_as *r, sl_spawn *out, char *err, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(out->dir, sizeof out->dir, "%s/sluice-load-pg-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(out->dir)) {
        snprintf(err, cap, "mkdtemp %s: %s", out->dir, strerror(errno));
        return -1;
    }
    if (r->drop && chown(out->dir, r->uid, r->gid) != 0) {
        snprintf(err, cap, "chown %s to %s: %s", out->dir, r->name, strerror(errno));
        sl_spawn_remove_dir(out->dir);
        return -1;
    }
    return 0;
}

/* postgres on a free port, up to ATTEMPTS times; 0 once it answers. */
static int start_server(const run_as *r, const char *bindir, sl_spawn *out, char *err, size_t cap)
{
    char log[320], tail[256];
    int attempt, status = -1;
    for (attempt = 0; attempt < ATTEMPTS; attempt++) {
        int p = sl_spawn_free_port();
        if (p < 0)
            break;
        snprintf(out->address, sizeof out->address, "127.0.0.1:%d", p);
        out->pid = launch_postgres(r, bindir, out->dir, p);
        if (out->pid < 0)
            break;
        if (wait_ready(out->pid, p, &status) == 0)
            return 0;
        if (status == -1) /* still running but not answering: give up on it */
            status = sl_spawn_terminate(out->pid);
        out->pid = 0;
    }
    snprintf(log, sizeof log, "%s/postgres.log", out->dir);
    log_tail(log, tail, sizeof tail);
    if (status != -1 && WIFEXITED(status))
        snprintf(err, cap, "%s/postgres exited with status %d before accepting connections: %s",
                 bindir, WEXITSTATUS(status), tail);
    else
        snprintf(err, cap, "%s/postgres did not accept connections within %d s: %s", bindir,
                 READY_TIMEOUT_MS / 1000, tail);
    return -1;
}

int sl_pg_spawn_start(const char *given_bindir, sl_spawn *out, char *err, size_t cap)
{
    char bindir[256];
    run_as r;
    memset(out, 0, sizeof *out);
    if (find_bindir(given_bindir, bindir, sizeof bindir, err, cap) < 0 ||
        choose_user(&r, err, cap) < 0 || make_dir(&r, out, err, cap) < 0)
        return -1;
    if (run_initdb(&r, bindir, out->dir, err, cap) < 0 ||
        start_server(&r, bindir, out, err, cap) < 0) {
        sl_spawn_remove_dir(out->dir);
        return -1;
    }
    return 0;
}

/* SIGINT is PostgreSQL's fast shutdown: it ends the sessions left (a failed
 * run may leave some) where SIGTERM would wait for them. The SIGTERM that
 * sl_spawn_stop_named() sends next does not undo it. */
int sl_pg_spawn_stop(sl_spawn *s, char *err, size_t cap)
{
    if (s->pid > 0)
        kill(s->pid, SIGINT);
    return sl_spawn_stop_named(s, "postgres", err, cap);
}
