/* test_client.c - libsluice against a real sluiced.
 *
 * Every call of include/sluice/client.h, checked on what it returns: the
 * states, tokens, positions, counts and errors (HTTP status, API code and
 * the server's message) the server reports. A shared server (started once
 * for the group, each test using names of its own) serves most tests; the
 * tests that stop, kill or restart a server start their own.
 *
 * The server helper forks and execs $SLUICED on a free loopback port with a
 * temporary store and waits for /healthz (polling every 10 ms, with a
 * deadline). Tests synchronise on what the server or a callback reports,
 * never on a sleep; the only sleeps are where time must pass (a keeper
 * keeping a 1 s lease alive for 3 s, a wait that must run out). */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_int.h"
#include "sluice/client.h"

#define READY_DEADLINE_MS 15000
#define READY_POLL_MS 10
/* How long a test waits for something that should happen at once; generous
 * for sanitizer builds on a loaded machine, and never the expected time. */
#define SOON_MS 10000

/* ---- a sluiced of our own ------------------------------------------------------- */

typedef struct server {
    pid_t pid;
    int port;
    char dir[128];
    char store[192];
    char config[192];
    char log[192];
    char url[64];
} server;

static server g_srv; /* the group's server */

static int64_t now_ms(void)
{
    return sl__now_ms();
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    close(fd);
    return ntohs(a.sin_port);
}

static void print_log(const server *s)
{
    FILE *f = fopen(s->log, "r");
    if (!f)
        return;
    char line[512];
    fprintf(stderr, "---- sluiced log (%s) ----\n", s->log);
    while (fgets(line, sizeof(line), f))
        fputs(line, stderr);
    fprintf(stderr, "---- end ----\n");
    fclose(f);
}

static sl_client *client_for(const server *s)
{
    sl_client_options o = {.server = s->url, .connect_timeout_ms = 2000};
    sl_client *c = NULL;
    sl_client_error err;
    int rc = sl_client_new(&o, &c, &err);
    if (rc != SL_CLIENT_OK)
        fail_msg("sl_client_new: %s", err.message);
    return c;
}

/* Starts sluiced on s->port with s->store; true once /healthz answers,
 * false if it exited first (the port was taken). */
static bool server_exec(server *s)
{
    const char *bin = getenv("SLUICED");
    if (!bin || !*bin)
        fail_msg("SLUICED is not set: it names the sluiced binary (CTest sets it)");
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    char listen[32], store[200];
    snprintf(listen, sizeof(listen), "127.0.0.1:%d", s->port);
    snprintf(store, sizeof(store), "sqlite:%s", s->store);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        if (s->config[0])
            execl(bin, bin, "--listen", listen, "--store", store, "--log-level", "warn", "--config",
                  s->config, (char *)NULL);
        else
            execl(bin, bin, "--listen", listen, "--store", store, "--log-level", "warn",
                  (char *)NULL);
        _exit(127);
    }
    s->pid = pid;
    sl_client *c = client_for(s);
    int64_t deadline = now_ms() + READY_DEADLINE_MS;
    bool ready = false;
    while (now_ms() < deadline) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            s->pid = 0;
            break;
        }
        sl_client_status *st = NULL;
        if (sl_client_status_get(c, &st, NULL) == SL_CLIENT_OK) {
            sl_client_status_free(st);
            ready = true;
            break;
        }
        sl__sleep_ms(READY_POLL_MS);
    }
    sl_client_free(c);
    if (!ready && s->pid) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
        print_log(s);
        fail_msg("sluiced did not answer /healthz within %d ms", READY_DEADLINE_MS);
    }
    return ready;
}

/* A new server with an empty store on a free port; config (may be NULL)
 * is written as its YAML configuration. */
static void server_start(server *s, const char *config)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->dir, sizeof(s->dir), "/tmp/sluice-client-test-XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->store, sizeof(s->store), "%s/sluice.db", s->dir);
    snprintf(s->log, sizeof(s->log), "%s/sluiced.log", s->dir);
    if (config) {
        snprintf(s->config, sizeof(s->config), "%s/sluice.yaml", s->dir);
        FILE *f = fopen(s->config, "w");
        assert_non_null(f);
        fputs(config, f);
        fclose(f);
    }
    for (int attempt = 0; attempt < 5; attempt++) {
        s->port = free_port();
        if (server_exec(s))
            return;
    }
    print_log(s);
    fail_msg("sluiced exited before it was ready, five times");
}

/* Starts it again on the same port and store (after a stop or a kill). */
static void server_restart(server *s)
{
    if (!server_exec(s)) {
        print_log(s);
        fail_msg("sluiced did not start again on port %d", s->port);
    }
}

/* SIGTERM (a clean stop, status 0 required) or SIGKILL. */
static void server_stop(server *s, int sig)
{
    if (!s->pid)
        return;
    kill(s->pid, sig);
    int status = 0;
    assert_int_equal(waitpid(s->pid, &status, 0), s->pid);
    s->pid = 0;
    if (sig == SIGTERM && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        print_log(s);
        fail_msg("sluiced did not exit cleanly after SIGTERM (status %d)", status);
    }
}

static void server_cleanup(server *s)
{
    if (s->pid)
        server_stop(s, SIGTERM);
    DIR *d = opendir(s->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            char p[512];
            snprintf(p, sizeof(p), "%s/%s", s->dir, e->d_name);
            unlink(p);
        }
        closedir(d);
        rmdir(s->dir);
    }
}

static int group_setup(void **state)
{
    (void)state;
    signal(SIGPIPE, SIG_IGN);
    server_start(&g_srv, NULL);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    server_cleanup(&g_srv);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------- */

/* A claim of one mutex (or semaphore when sem) with optional fields. */
typedef struct claim_opts {
    const char *group, *cancel, *grace, *lease;
    int priority;
    unsigned slots;
    int64_t wait_ms;
} claim_opts;

static sl_client_claim *claim_one(sl_client *c, const char *holder, bool sem, const char *name,
                                  const claim_opts *o)
{
    sl_client_lock_req lock = {.semaphore = sem, .name = name, .slots = o ? o->slots : 0};
    sl_client_claim_req req = {.holder = holder, .locks = &lock, .nlocks = 1};
    if (o) {
        req.group = o->group;
        req.cancel = o->cancel;
        req.grace = o->grace;
        req.lease = o->lease;
        req.priority = o->priority;
        req.wait_ms = o->wait_ms;
    }
    sl_client_claim *claim = NULL;
    sl_client_error err;
    int rc = sl_client_claim_create(c, &req, &claim, &err);
    if (rc != SL_CLIENT_OK)
        fail_msg("claim %s on %s: %s", holder, name, err.message);
    assert_non_null(claim);
    return claim;
}

static void release(sl_client *c, const char *id)
{
    sl_client_error err;
    int rc = sl_client_claim_release(c, id, NULL, &err);
    if (rc != SL_CLIENT_OK)
        fail_msg("release %s: %s", id, err.message);
}

static char *state_of(sl_client *c, const char *id)
{
    sl_client_claim *claim = NULL;
    assert_int_equal(sl_client_claim_get(c, id, 0, NULL, &claim, NULL), SL_CLIENT_OK);
    char *s = strdup(claim->state);
    sl_client_claim_free(claim);
    return s;
}

static void assert_state(sl_client *c, const char *id, const char *want)
{
    char *s = state_of(c, id);
    assert_string_equal(s, want);
    free(s);
}

static void assert_http_error(int rc, const sl_client_error *err, long status, const char *code)
{
    assert_int_equal(rc, SL_CLIENT_EHTTP);
    assert_int_equal(err->rc, SL_CLIENT_EHTTP);
    assert_int_equal(err->status, status);
    assert_string_equal(err->code, code);
    assert_true(strlen(err->message) > 0);
}

static void set_semaphore(sl_client *c, const char *name, uint64_t limit)
{
    sl_client_lock *l = NULL;
    sl_client_error err;
    int rc = sl_client_semaphore_set(c, name, limit, NULL, NULL, &l, &err);
    if (rc != SL_CLIENT_OK)
        fail_msg("semaphore %s: %s", name, err.message);
    sl_client_lock_free(l);
}

/* A one-shot signal between a callback's thread and the test. */
typedef struct signal_box {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;
} signal_box;

static void box_init(signal_box *b)
{
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->cv, NULL);
    b->count = 0;
}

static void box_destroy(signal_box *b)
{
    pthread_cond_destroy(&b->cv);
    pthread_mutex_destroy(&b->mu);
}

static void box_post(signal_box *b)
{
    pthread_mutex_lock(&b->mu);
    b->count++;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

/* Waits until count >= n, at most ms; returns the count. */
static int box_wait(signal_box *b, int n, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&b->mu);
    while (b->count < n && pthread_cond_timedwait(&b->cv, &b->mu, &until) == 0) {
    }
    int count = b->count;
    pthread_mutex_unlock(&b->mu);
    return count;
}

/* ---- parsers ----------------------------------------------------------------------- */

static void test_durations(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        int64_t ms;
    } good[] = {
        {"0", 0},
        {"250ms", 250},
        {"30s", 30000},
        {"5m", 300000},
        {"1h30m", 5400000},
        {"1m30.5s", 90500},
        {"1.5", 1500},
        {"30", 30000},
        {"1s500ms", 1500},
        {"1.0005s", 1001},
        {"1.0004s", 1000},
        {"2h", 7200000},
        {"1h0m1s", 3600000 + 1000},
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        int64_t ms = -7;
        if (sl__duration_parse(good[i].text, &ms) != 0)
            fail_msg("\"%s\" should parse", good[i].text);
        assert_int_equal(ms, good[i].ms);
    }
    static const char *const bad[] = {"",   "s",   "30 s", "30s1m", "1s1s", "1m30",
                                      "5.", ".5s", "1x",   "-1s",   "1msx"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t ms = -7;
        if (sl__duration_parse(bad[i], &ms) == 0)
            fail_msg("\"%s\" should not parse", bad[i]);
        assert_int_equal(ms, -7);
    }
}

static void test_times(void **state)
{
    (void)state;
    int64_t ms = -7;
    assert_int_equal(sl__time_parse("1970-01-01T00:00:00.000Z", &ms), 0);
    assert_int_equal(ms, 0);
    assert_int_equal(sl__time_parse("2026-01-02T03:04:05.678Z", &ms), 0);
    assert_int_equal(ms, 1767323045678LL);
    assert_int_equal(sl__time_parse("2026-11-22T10:00:00Z", &ms), 0);
    assert_int_equal(ms, 1795341600000LL);
    assert_int_equal(sl__time_parse("2026-11-22T11:30:00.000+01:30", &ms), 0);
    assert_int_equal(ms, 1795341600000LL);
    assert_int_equal(sl__time_parse("2026-11-22T09:00:00.000-01:00", &ms), 0);
    assert_int_equal(ms, 1795341600000LL);
    assert_int_equal(sl__time_parse("2024-02-29T00:00:00.0005Z", &ms), 0);
    assert_int_equal(ms, 1709164800001LL);
    static const char *const bad[] = {"",
                                      "2026-11-22",
                                      "2026-11-22T10:00:00",
                                      "2026-13-01T00:00:00Z",
                                      "2026-11-22T24:00:00Z",
                                      "2026-11-22T10:00:00.Z",
                                      "2026-11-22T10:00:00Zx",
                                      "2026-11-22 10:00:00Z"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ms = -7;
        if (sl__time_parse(bad[i], &ms) == 0)
            fail_msg("\"%s\" should not parse", bad[i]);
        assert_int_equal(ms, -7);
    }
}

/* The parser refuses an answer that is not what docs/api.md says, naming the
 * field, and leaves nothing allocated. */
static void test_parse_refuses(void **state)
{
    (void)state;
    sl_client_error err;
    sl_client_claim claim;
    json_t *o = json_loads("{\"id\":\"x\",\"state\":\"held\",\"holder\":\"h\",\"locks\":"
                           "[{\"kind\":\"mutex\",\"name\":\"m\",\"slots\":1,\"token\":3,"
                           "\"position\":null}],\"tags\":{\"a\":\"b\"},\"created\":"
                           "\"2026-11-22T10:00:00.000Z\",\"expires\":null,\"lease\":\"1m30s\","
                           "\"timeout\":\"0\",\"reason\":\"held\",\"by\":null,\"group\":null}",
                           0, NULL);
    assert_non_null(o);
    assert_int_equal(sl__parse_claim(o, &claim, &err), SL_CLIENT_OK);
    assert_string_equal(claim.id, "x");
    assert_int_equal(claim.nlocks, 1);
    assert_true(claim.locks[0].has_token);
    assert_int_equal(claim.locks[0].token, 3);
    assert_int_equal(claim.locks[0].position, 0);
    assert_int_equal(claim.ntags, 1);
    assert_string_equal(claim.tags[0].key, "a");
    assert_int_equal(claim.created_ms, 1795341600000LL);
    assert_int_equal(claim.expires_ms, -1);
    assert_int_equal(claim.lease_ms, 90000);
    assert_null(claim.group);
    assert_null(claim.by);
    sl__claim_clear(&claim);

    json_object_set_new(o, "lease", json_string("soon"));
    assert_int_equal(sl__parse_claim(o, &claim, &err), SL_CLIENT_EPROTO);
    assert_non_null(strstr(err.message, "\"lease\""));
    assert_null(claim.id);
    json_object_set_new(o, "lease", json_string("30s"));
    json_object_set_new(o, "locks", json_pack("[{s:s,s:s}]", "kind", "door", "name", "m"));
    assert_int_equal(sl__parse_claim(o, &claim, &err), SL_CLIENT_EPROTO);
    assert_non_null(strstr(err.message, "kind"));
    json_object_del(o, "id");
    assert_int_equal(sl__parse_claim(o, &claim, &err), SL_CLIENT_EPROTO);
    json_decref(o);

    /* A release by prefix's counts are all required: one left out is not 0. */
    sl_client_release_counts n;
    o = json_loads("{\"released\":2,\"withdrawn\":1}", 0, NULL);
    assert_non_null(o);
    assert_int_equal(sl__parse_release_counts(o, &n, &err), SL_CLIENT_EPROTO);
    assert_non_null(strstr(err.message, "\"skipped\""));
    assert_null(n.json);
    json_object_set_new(o, "skipped", json_integer(-1));
    assert_int_equal(sl__parse_release_counts(o, &n, &err), SL_CLIENT_EPROTO);
    json_object_set_new(o, "skipped", json_integer(4));
    assert_int_equal(sl__parse_release_counts(o, &n, &err), SL_CLIENT_OK);
    assert_int_equal(n.released + n.withdrawn + n.skipped, 7);
    sl_client_release_counts_free(&n);
    json_decref(o);
}

/* ---- the client handle --------------------------------------------------------- */

static void test_client_options(void **state)
{
    (void)state;
    sl_client *c = NULL;
    sl_client_error err;
    unsetenv("SLUICE_SERVER");
    unsetenv("SLUICE_TOKEN");
    assert_int_equal(sl_client_new(NULL, &c, &err), SL_CLIENT_OK);
    assert_string_equal(sl_client_server(c), SL_CLIENT_DEFAULT_SERVER);
    sl_client_free(c);

    setenv("SLUICE_SERVER", "127.0.0.1:9/", 1);
    assert_int_equal(sl_client_new(NULL, &c, &err), SL_CLIENT_OK);
    assert_string_equal(sl_client_server(c), "http://127.0.0.1:9");
    sl_client_free(c);

    sl_client_options o = {.server = "https://sluice.example:7700//"};
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_OK);
    assert_string_equal(sl_client_server(c), "https://sluice.example:7700");
    sl_client_free(c);
    unsetenv("SLUICE_SERVER");

    o.server = "ftp://x";
    c = (sl_client *)&o; /* must be reset */
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_EINVAL);
    assert_null(c);
    assert_int_equal(err.rc, SL_CLIENT_EINVAL);
    assert_non_null(strstr(err.message, "ftp://x"));
    o.server = "http://a b";
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_EINVAL);
    o.server = "http://127.0.0.1:1";
    o.token = "two\nlines";
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_EINVAL);
    assert_int_equal(sl_client_new(&o, NULL, &err), SL_CLIENT_EINVAL);

    for (int rc = SL_CLIENT_OK; rc >= SL_CLIENT_ETIMEOUT; rc--)
        assert_true(strlen(sl_client_strerror(rc)) > 0);
    assert_string_equal(sl_client_strerror(SL_CLIENT_ECONNECT), "the server could not be reached");
    assert_true(sl_client_state_ended("released"));
    assert_true(sl_client_state_ended("timed_out"));
    assert_true(sl_client_state_ended("canceled"));
    assert_false(sl_client_state_ended("revoking"));
    assert_false(sl_client_state_ended("held"));
    assert_false(sl_client_state_ended(NULL));
}

/* Nothing listens: ECONNECT, status 0, a message that names the URL and
 * asks whether sluiced runs there. */
static void test_econnect(void **state)
{
    (void)state;
    server s = {.port = free_port()};
    snprintf(s.url, sizeof(s.url), "http://127.0.0.1:%d", s.port);
    sl_client *c = client_for(&s);
    sl_client_error err;
    sl_client_status *st = NULL;
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_ECONNECT);
    assert_null(st);
    assert_int_equal(err.rc, SL_CLIENT_ECONNECT);
    assert_int_equal(err.status, 0);
    assert_string_equal(err.code, "");
    assert_non_null(strstr(err.message, s.url));
    /* The library speaks to any program that links it: no word of the
     * CLI's --server, which the CLI adds itself. */
    assert_non_null(strstr(err.message, "is sluiced running"));
    assert_null(strstr(err.message, "--server"));
    sl_client_claim *claim = NULL;
    assert_int_equal(sl_client_claim_get(c, "abc", 0, NULL, &claim, &err), SL_CLIENT_ECONNECT);
    assert_null(claim);
    sl_client_lock_list list;
    assert_int_equal(sl_client_semaphores(c, &list, &err), SL_CLIENT_ECONNECT);
    assert_int_equal(list.n, 0);
    sl_client_free(c);
}

static void test_status(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_status *st = NULL;
    sl_client_error err;
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_OK);
    assert_string_equal(st->status, "ok");
    assert_true(strlen(st->version) > 0);
    char store[256];
    snprintf(store, sizeof(store), "sqlite:%s", g_srv.store);
    assert_string_equal(st->store, store);
    assert_true(st->next_seq >= 1);
    assert_non_null(strstr(st->json, "\"status\":\"ok\""));
    /* The counts move with a claim. */
    uint64_t held = st->held;
    sl_client_status_free(st);
    sl_client_claim *a = claim_one(c, "st/a", false, "st/m", NULL);
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_OK);
    assert_int_equal(st->held, held + 1);
    release(c, a->id);
    sl_client_claim_free(a);
    sl_client_status_free(st);
    sl_client_free(c);
}

/* ---- locks ------------------------------------------------------------------------ */

static const sl_client_lock *find_lock(const sl_client_lock_list *l, const char *name)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].name, name) == 0)
            return &l->items[i];
    return NULL;
}

static void test_semaphores(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_lock *l = NULL;
    assert_int_equal(sl_client_semaphore_set(c, "sem1/db", 2, "skip", "30s", &l, &err),
                     SL_CLIENT_OK);
    assert_true(l->semaphore);
    assert_string_equal(l->name, "sem1/db");
    assert_string_equal(l->strategy, "skip");
    assert_int_equal(l->limit, 2);
    assert_int_equal(l->lease_ms, 30000);
    assert_int_equal(l->used, 0);
    assert_null(l->from_pattern);
    assert_int_equal(l->nholders, 0);
    assert_int_equal(l->npending, 0);
    assert_non_null(strstr(l->json, "\"kind\":\"semaphore\""));
    sl_client_lock_free(l);

    sl_client_claim *a = claim_one(c, "sem1/a", true, "sem1/db", &(claim_opts){.slots = 2});
    assert_string_equal(a->state, "held");
    assert_int_equal(a->lease_ms, 30000); /* the semaphore's lease */
    assert_true(a->expires_ms > 0);
    sl_client_claim *b = claim_one(c, "sem1/b", true, "sem1/db", NULL);
    assert_string_equal(b->state, "pending");

    assert_int_equal(sl_client_semaphore_get(c, "sem1/db", &l, &err), SL_CLIENT_OK);
    assert_int_equal(l->used, 2);
    assert_int_equal(l->nholders, 1);
    assert_int_equal(l->holders_count, 1);
    assert_string_equal(l->holders[0].claim, a->id);
    assert_string_equal(l->holders[0].holder, "sem1/a");
    assert_int_equal(l->holders[0].slots, 2);
    assert_int_equal(l->holders[0].token, a->locks[0].token);
    assert_int_equal(l->token, a->locks[0].token);
    assert_true(l->holders[0].since_ms > 0);
    assert_int_equal(l->holders[0].expires_ms, a->expires_ms);
    assert_int_equal(l->npending, 1);
    assert_int_equal(l->pending_count, 1);
    assert_string_equal(l->pending[0].claim, b->id);
    assert_string_equal(l->pending[0].holder, "sem1/b");
    assert_int_equal(l->pending[0].slots, 1);
    assert_int_equal(l->pending[0].position, 1);
    assert_int_equal(l->pending[0].priority, 0);
    assert_int_equal(l->pending[0].created_ms, b->created_ms);
    assert_non_null(strstr(l->pending[0].reason, "at_limit"));
    sl_client_lock_free(l);

    sl_client_lock_list list;
    assert_int_equal(sl_client_semaphores(c, &list, &err), SL_CLIENT_OK);
    const sl_client_lock *e = find_lock(&list, "sem1/db");
    assert_non_null(e);
    assert_int_equal(e->holders_count, 1);
    assert_int_equal(e->pending_count, 1);
    assert_int_equal(e->nholders, 0);
    assert_int_equal(e->used, 2);
    assert_int_equal(e->limit, 2);
    for (size_t i = 1; i < list.n; i++) /* sorted by name */
        assert_true(strcmp(list.items[i - 1].name, list.items[i].name) < 0);
    sl_client_lock_list_free(&list);
    assert_int_equal(list.n, 0);

    /* In use: 409 conflict, with the server's message. */
    assert_http_error(sl_client_semaphore_delete(c, "sem1/db", &err), &err, 409, "conflict");
    release(c, a->id);
    release(c, b->id);
    assert_int_equal(sl_client_semaphore_delete(c, "sem1/db", &err), SL_CLIENT_OK);
    l = (sl_client_lock *)&err; /* must be reset */
    assert_http_error(sl_client_semaphore_get(c, "sem1/db", &l, &err), &err, 404, "not_found");
    assert_null(l);
    assert_non_null(strstr(err.message, "sem1/db"));

    assert_http_error(sl_client_semaphore_set(c, "sem1/x", 1, "fast", NULL, &l, &err), &err, 400,
                      "bad_request");
    assert_non_null(strstr(err.message, "strategy"));
    assert_http_error(sl_client_semaphore_set(c, "/bad//name", 1, NULL, NULL, &l, &err), &err, 400,
                      "bad_request");
    assert_int_equal(sl_client_semaphore_set(c, NULL, 1, NULL, NULL, &l, &err), SL_CLIENT_EINVAL);

    /* A pattern, and a semaphore made from it. */
    assert_int_equal(sl_client_semaphore_set(c, "sem1/tenant/*", 3, NULL, NULL, &l, &err),
                     SL_CLIENT_OK);
    assert_string_equal(l->name, "sem1/tenant/*");
    assert_string_equal(l->strategy, "strict");
    sl_client_lock_free(l);
    assert_int_equal(sl_client_semaphore_get(c, "sem1/tenant/a", &l, &err), SL_CLIENT_OK);
    assert_string_equal(l->from_pattern, "sem1/tenant/*");
    assert_int_equal(l->limit, 3);
    sl_client_lock_free(l);
    assert_int_equal(sl_client_semaphore_delete(c, "sem1/tenant/*", &err), SL_CLIENT_OK);

    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

static void test_mutexes(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_claim *a = claim_one(c, "mtx1/a", false, "mtx1/deploy", NULL);
    sl_client_claim *b = claim_one(c, "mtx1/b", false, "mtx1/deploy", NULL);
    assert_string_equal(a->state, "held");
    assert_string_equal(b->state, "pending");

    sl_client_lock *l = NULL;
    assert_int_equal(sl_client_mutex_get(c, "mtx1/deploy", &l, &err), SL_CLIENT_OK);
    assert_false(l->semaphore);
    assert_string_equal(l->name, "mtx1/deploy");
    assert_int_equal(l->limit, 1);
    assert_int_equal(l->used, 1);
    assert_int_equal(l->nholders, 1);
    assert_string_equal(l->holders[0].claim, a->id);
    assert_int_equal(l->holders[0].token, a->locks[0].token);
    assert_int_equal(l->holders[0].expires_ms, -1); /* no lease */
    assert_int_equal(l->npending, 1);
    assert_string_equal(l->pending[0].claim, b->id);
    assert_int_equal(l->pending[0].position, 1);
    assert_non_null(strstr(l->json, "\"kind\":\"mutex\""));
    sl_client_lock_free(l);

    /* Every mutex name answers, used or not. */
    assert_int_equal(sl_client_mutex_get(c, "mtx1/idle", &l, &err), SL_CLIENT_OK);
    assert_int_equal(l->used, 0);
    assert_int_equal(l->nholders, 0);
    sl_client_lock_free(l);

    sl_client_lock_list list;
    assert_int_equal(sl_client_mutexes(c, &list, &err), SL_CLIENT_OK);
    const sl_client_lock *e = find_lock(&list, "mtx1/deploy");
    assert_non_null(e);
    assert_false(e->semaphore);
    assert_int_equal(e->holders_count, 1);
    assert_int_equal(e->pending_count, 1);
    assert_null(find_lock(&list, "mtx1/idle"));
    sl_client_lock_list_free(&list);

    release(c, a->id);
    release(c, b->id);
    assert_int_equal(sl_client_mutexes(c, &list, &err), SL_CLIENT_OK);
    assert_null(find_lock(&list, "mtx1/deploy"));
    sl_client_lock_list_free(&list);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

/* ---- claims -------------------------------------------------------------------- */

static void test_claim_create(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    set_semaphore(c, "cc/sem", 3);
    sl_client_lock_req locks[] = {{.name = "cc/m"},
                                  {.semaphore = true, .name = "cc/sem", .slots = 2}};
    sl_client_tag_req tags[] = {{"env", "prod"}};
    sl_client_claim_req req = {.holder = "cc/h",
                               .locks = locks,
                               .nlocks = 2,
                               .tags = tags,
                               .ntags = 1,
                               .group = "cc/g",
                               .priority = 5,
                               .created = "2099-01-02T03:04:05.678Z",
                               .rebalance_key = "k1",
                               .lease = "30s",
                               .timeout = "10m"};
    sl_client_claim *a = NULL;
    assert_int_equal(sl_client_claim_create(c, &req, &a, &err), SL_CLIENT_OK);
    assert_int_equal(err.rc, SL_CLIENT_OK);
    assert_int_equal(strlen(a->id), 22);
    assert_string_equal(a->state, "held");
    assert_string_equal(a->holder, "cc/h");
    assert_string_equal(a->group, "cc/g");
    assert_string_equal(a->rebalance_key, "k1");
    assert_string_equal(a->reason, "held");
    assert_null(a->by);
    assert_int_equal(a->priority, 5);
    assert_int_equal(a->created_ms, 4071006245678LL);
    assert_int_equal(a->lease_ms, 30000);
    assert_int_equal(a->timeout_ms, 600000);
    assert_true(a->expires_ms > 1767323045678LL);
    assert_true(a->nlocks >= 2); /* the group adds a mutex of its own */
    assert_false(a->locks[0].semaphore);
    assert_string_equal(a->locks[0].name, "cc/m");
    assert_int_equal(a->locks[0].slots, 1);
    assert_true(a->locks[0].has_token);
    assert_true(a->locks[0].token > 0);
    assert_int_equal(a->locks[0].position, 0);
    assert_true(a->locks[1].semaphore);
    assert_string_equal(a->locks[1].name, "cc/sem");
    assert_int_equal(a->locks[1].slots, 2);
    assert_true(a->locks[1].has_token);
    assert_int_equal(a->ntags, 1);
    assert_string_equal(a->tags[0].key, "env");
    assert_string_equal(a->tags[0].value, "prod");
    assert_int_equal(a->queue_position, 0);
    assert_null(a->rule);
    assert_non_null(strstr(a->json, a->id));

    /* Pending, with its place in each queue. */
    sl_client_claim *b = claim_one(c, "cc/b", false, "cc/m", NULL);
    sl_client_claim *d = claim_one(c, "cc/d", false, "cc/m", NULL);
    assert_string_equal(b->state, "pending");
    assert_false(b->locks[0].has_token);
    assert_int_equal(b->locks[0].position, 1);
    assert_int_equal(d->locks[0].position, 2);
    assert_int_equal(b->expires_ms, -1);
    assert_int_equal(b->ntags, 0);
    assert_null(b->group);
    assert_true(strlen(b->reason) > 0);

    /* The POST's own long poll: pending when the wait runs out. */
    int64_t t0 = now_ms();
    sl_client_claim *w = claim_one(c, "cc/w", false, "cc/m", &(claim_opts){.wait_ms = 300});
    int64_t took = now_ms() - t0;
    assert_string_equal(w->state, "pending");
    assert_true(took >= 250);
    assert_true(took < SOON_MS);
    /* ... and held at once when it can be. */
    sl_client_claim *f = claim_one(c, "cc/f", false, "cc/free", &(claim_opts){.wait_ms = 20000});
    assert_string_equal(f->state, "held");

    /* Errors: the server's status, code and message. */
    sl_client_claim *x = (sl_client_claim *)&err;
    sl_client_lock_req m = {.name = "cc/m"};
    sl_client_claim_req bad = {.holder = "cc/x", .locks = &m, .nlocks = 1, .cancel = "pending"};
    assert_http_error(sl_client_claim_create(c, &bad, &x, &err), &err, 400, "bad_request");
    assert_null(x);
    assert_non_null(strstr(err.message, "group"));
    sl_client_lock_req unknown = {.semaphore = true, .name = "cc/nosuch"};
    sl_client_claim_req bad2 = {.holder = "cc/x", .locks = &unknown, .nlocks = 1};
    assert_http_error(sl_client_claim_create(c, &bad2, &x, &err), &err, 422, "unknown_semaphore");
    assert_non_null(strstr(err.message, "cc/nosuch"));
    sl_client_lock_req twice[] = {{.name = "cc/m"}, {.name = "cc/m"}};
    sl_client_claim_req bad3 = {.holder = "cc/x", .locks = twice, .nlocks = 2};
    assert_http_error(sl_client_claim_create(c, &bad3, &x, &err), &err, 400, "bad_request");
    /* Refused before any request. */
    sl_client_claim_req nobody = {.locks = &m, .nlocks = 1};
    assert_int_equal(sl_client_claim_create(c, &nobody, &x, &err), SL_CLIENT_EINVAL);
    assert_int_equal(err.status, 0);
    assert_non_null(strstr(err.message, "holder"));
    sl_client_lock_req noname = {.semaphore = true};
    sl_client_claim_req bad4 = {.holder = "cc/x", .locks = &noname, .nlocks = 1};
    assert_int_equal(sl_client_claim_create(c, &bad4, &x, &err), SL_CLIENT_EINVAL);
    assert_int_equal(sl_client_claim_create(c, &bad4, &x, NULL), SL_CLIENT_EINVAL);
    sl_client_claim_req latin1 = {.holder = "caf\xe9", .locks = &m, .nlocks = 1};
    assert_int_equal(sl_client_claim_create(c, &latin1, &x, &err), SL_CLIENT_EINVAL);
    assert_non_null(strstr(err.message, "UTF-8"));
    assert_true(sl__utf8_valid("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    assert_false(sl__utf8_valid("\xc0\xaf"));     /* overlong '/' */
    assert_false(sl__utf8_valid("\xed\xa0\x80")); /* a surrogate */
    assert_false(sl__utf8_valid("\xe2\x82"));     /* cut short */

    sl_client_claim *list[] = {a, b, d, w, f};
    for (size_t i = 0; i < 5; i++) {
        release(c, list[i]->id);
        sl_client_claim_free(list[i]);
    }
    sl_client_free(c);
}

typedef struct get_job {
    const server *srv;
    const char *id, *seen;
    int64_t wait_ms;
    int rc;
    sl_client_claim *out;
    int64_t took;
} get_job;

static void *get_thread(void *arg)
{
    get_job *j = arg;
    sl_client *c = client_for(j->srv);
    int64_t t0 = now_ms();
    j->rc = sl_client_claim_get(c, j->id, j->wait_ms, j->seen, &j->out, NULL);
    j->took = now_ms() - t0;
    sl_client_free(c);
    return NULL;
}

/* ---- a proxy that loses answers ---------------------------------------------------------
 *
 * Forwards one request per connection to the group's server and, for the
 * first `drop` of them, closes the client's connection instead of passing
 * the answer on: the server did the work, the client never heard. */

typedef struct lossy {
    int lfd, port, target;
    int drop;     /* answers still to lose */
    int forwards; /* requests that reached the server */
    pthread_t thread;
} lossy;

/* Reads one HTTP message (headers and a Content-Length body) into buf;
 * its length, or -1. */
static ssize_t read_message(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    char *end = NULL;
    while (!end) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            return -1;
        n += (size_t)r;
        buf[n] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    size_t want = (size_t)(end + 4 - buf);
    for (char *h = buf; h < end; h = strstr(h, "\r\n") + 2)
        if (strncasecmp(h, "Content-Length:", 15) == 0)
            want += strtoul(h + 15, NULL, 10);
    while (n < want) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            return -1;
        n += (size_t)r;
    }
    return (ssize_t)n;
}

static void *lossy_main(void *arg)
{
    lossy *p = arg;
    static char buf[1 << 16];
    for (;;) {
        int cfd = accept(p->lfd, NULL, NULL);
        if (cfd < 0)
            return NULL;
        ssize_t n = read_message(cfd, buf, sizeof(buf));
        int sfd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->target)};
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (n > 0 && connect(sfd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
            write(sfd, buf, (size_t)n) == n) {
            __atomic_add_fetch(&p->forwards, 1, __ATOMIC_SEQ_CST);
            ssize_t m = read_message(sfd, buf, sizeof(buf));
            if (__atomic_load_n(&p->drop, __ATOMIC_SEQ_CST) > 0)
                __atomic_sub_fetch(&p->drop, 1, __ATOMIC_SEQ_CST);
            else if (m > 0)
                (void)!write(cfd, buf, (size_t)m); /* a client gone meanwhile is its business */
        }
        close(sfd);
        close(cfd);
    }
}

static void lossy_start(lossy *p, int target, int drop)
{
    memset(p, 0, sizeof(*p));
    p->target = target;
    p->drop = drop;
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(p->lfd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(p->lfd, (struct sockaddr *)&a, &len), 0);
    p->port = ntohs(a.sin_port);
    assert_int_equal(listen(p->lfd, 8), 0);
    assert_int_equal(pthread_create(&p->thread, NULL, lossy_main, p), 0);
}

static void lossy_stop(lossy *p)
{
    shutdown(p->lfd, SHUT_RDWR); /* accept returns: the thread ends */
    pthread_join(p->thread, NULL);
    close(p->lfd);
}

static size_t claims_of_holder(sl_client *c, const char *holder)
{
    sl_client_claim_list l;
    assert_int_equal(sl_client_claims(c, NULL, holder, NULL, &l, NULL), SL_CLIENT_OK);
    size_t n = l.n;
    sl_client_claim_list_free(&l);
    return n;
}

/* A creation whose answer is lost is sent again with the same
 * Idempotency-Key, and the server answers the claim the first attempt
 * made: one claim, never two. */
static void test_create_retries_with_its_key(void **state)
{
    (void)state;
    lossy p;
    lossy_start(&p, g_srv.port, 1);
    char url[64];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d", p.port);
    sl_client_options o = {.server = url, .connect_timeout_ms = 2000};
    sl_client *through = NULL;
    assert_int_equal(sl_client_new(&o, &through, NULL), SL_CLIENT_OK);
    sl_client_claim *a = claim_one(through, "idem/retry", false, "idem/m", NULL);
    assert_string_equal(a->state, "held");
    assert_int_equal(__atomic_load_n(&p.forwards, __ATOMIC_SEQ_CST), 2);
    sl_client *c = client_for(&g_srv);
    assert_int_equal(claims_of_holder(c, "idem/retry"), 1);
    release(c, a->id);

    /* A key of the caller's: the same key finds the same claim; another
     * request with it is 409; a key that cannot be sent is EINVAL. */
    sl_client_lock_req lock = {.name = "idem/k"};
    sl_client_claim_req req = {.holder = "idem/key", .locks = &lock, .nlocks = 1,
                               .idempotency_key = "k-123"};
    sl_client_claim *x = NULL, *y = NULL;
    sl_client_error err;
    assert_int_equal(sl_client_claim_create(c, &req, &x, &err), SL_CLIENT_OK);
    assert_int_equal(sl_client_claim_create(c, &req, &y, &err), SL_CLIENT_OK);
    assert_string_equal(x->id, y->id);
    req.priority = 3;
    sl_client_claim *z = NULL;
    assert_http_error(sl_client_claim_create(c, &req, &z, &err), &err, 409, "conflict");
    req.idempotency_key = "bad\nkey";
    assert_int_equal(sl_client_claim_create(c, &req, &z, &err), SL_CLIENT_EINVAL);
    char key[33];
    sl_client_idempotency_key(key);
    assert_int_equal(strlen(key), 32);
    release(c, x->id);
    sl_client_claim_free(a);
    sl_client_claim_free(x);
    sl_client_claim_free(y);
    sl_client_free(through);
    sl_client_free(c);
    lossy_stop(&p);
}

static void test_claim_get_wait(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_claim *a = claim_one(c, "gw/a", false, "gw/m", NULL);
    sl_client_claim *b = claim_one(c, "gw/b", false, "gw/m", NULL);

    sl_client_claim *got = NULL;
    assert_int_equal(sl_client_claim_get(c, b->id, 0, NULL, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->id, b->id);
    assert_string_equal(got->state, "pending");
    assert_int_equal(got->locks[0].position, 1);
    sl_client_claim_free(got);

    /* seen defaults to the state on arrival: the wait runs out. */
    int64_t t0 = now_ms();
    assert_int_equal(sl_client_claim_get(c, b->id, 300, NULL, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "pending");
    assert_true(now_ms() - t0 >= 250);
    sl_client_claim_free(got);

    /* seen differs from the state: answered at once. */
    t0 = now_ms();
    assert_int_equal(sl_client_claim_get(c, b->id, 20000, "held", &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "pending");
    assert_true(now_ms() - t0 < SOON_MS);
    sl_client_claim_free(got);

    /* A wait wakes when the state changes. */
    get_job j = {.srv = &g_srv, .id = b->id, .seen = "pending", .wait_ms = 25000};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, get_thread, &j), 0);
    release(c, a->id);
    pthread_join(t, NULL);
    assert_int_equal(j.rc, SL_CLIENT_OK);
    assert_string_equal(j.out->state, "held");
    assert_true(j.out->locks[0].has_token);
    assert_true(j.took < SOON_MS);
    sl_client_claim_free(j.out);

    got = (sl_client_claim *)&err;
    assert_http_error(sl_client_claim_get(c, "no-such-claim", 0, NULL, &got, &err), &err, 404,
                      "not_found");
    assert_null(got);
    assert_http_error(sl_client_claim_get(c, b->id, 100, "sleeping", &got, &err), &err, 400,
                      "bad_request");
    assert_int_equal(sl_client_claim_get(c, "", 0, NULL, &got, &err), SL_CLIENT_EINVAL);

    release(c, b->id);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

static void test_renew(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_claim *r = claim_one(c, "rn/r", false, "rn/m", &(claim_opts){.lease = "30s"});
    sl_client_claim *got = NULL;
    assert_int_equal(sl_client_claim_renew(c, r->id, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "held");
    assert_int_equal(got->lease_ms, 30000);
    assert_true(got->expires_ms >= r->expires_ms);
    sl_client_claim_free(got);

    /* A newer claim of the group revokes it: 409, and the claim says so. */
    sl_client_claim *a =
        claim_one(c, "rn/a", false, "rn/g-lock", &(claim_opts){.group = "rn/g", .lease = "30s"});
    assert_string_equal(a->state, "held");
    sl_client_claim *b =
        claim_one(c, "rn/b", false, "rn/g-lock",
                  &(claim_opts){.group = "rn/g", .cancel = "in-progress", .grace = "30s"});
    assert_string_equal(b->state, "pending");
    assert_http_error(sl_client_claim_renew(c, a->id, &got, &err), &err, 409, "conflict");
    assert_non_null(got);
    assert_string_equal(got->state, "revoking");
    assert_string_equal(got->by, b->id);
    assert_non_null(strstr(err.message, "revoked"));
    sl_client_claim_free(got);

    /* Ended (a revoked holder that releases ends canceled, engine.md): 409
     * too, with the final claim. */
    release(c, a->id);
    assert_http_error(sl_client_claim_renew(c, a->id, &got, &err), &err, 409, "conflict");
    assert_string_equal(got->state, "canceled");
    assert_non_null(strstr(err.message, "ended"));
    sl_client_claim_free(got);
    assert_state(c, b->id, "held");

    got = (sl_client_claim *)&err;
    assert_http_error(sl_client_claim_renew(c, "no-such-claim", &got, &err), &err, 404,
                      "not_found");
    assert_null(got);

    release(c, b->id);
    release(c, r->id);
    sl_client_claim_free(r);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

static void test_release(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_claim *a = claim_one(c, "rl/a", false, "rl/m", NULL);
    sl_client_claim *b = claim_one(c, "rl/b", false, "rl/m", NULL);
    sl_client_claim *got = NULL;
    assert_int_equal(sl_client_claim_release(c, b->id, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "withdrawn");
    sl_client_claim_free(got);
    assert_int_equal(sl_client_claim_release(c, a->id, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "released");
    assert_true(got->locks[0].has_token); /* the token stays set after it ends */
    sl_client_claim_free(got);
    /* Again: the same final claim. */
    assert_int_equal(sl_client_claim_release(c, a->id, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "released");
    sl_client_claim_free(got);
    assert_int_equal(sl_client_claim_release(c, b->id, NULL, &err), SL_CLIENT_OK);
    assert_http_error(sl_client_claim_release(c, "no-such-claim", NULL, &err), &err, 404,
                      "not_found");
    assert_int_equal(sl_client_claim_release(c, NULL, NULL, &err), SL_CLIENT_EINVAL);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

/* A release by holder prefix: the prefix's pending claims withdrawn (never
 * granted on the way out), its held ones released, the counts the server
 * answered; other holders untouched; the prefix escaped in the query. */
static void test_claims_release(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_claim *a = claim_one(c, "rp-run-42/a", false, "rp/m", NULL);
    sl_client_claim *b = claim_one(c, "rp-run-42/b", false, "rp/m", NULL);
    sl_client_claim *x = claim_one(c, "rp-run-420/x", false, "rp/x", NULL);
    assert_string_equal(b->state, "pending");
    sl_client_release_counts n;
    assert_int_equal(sl_client_claims_release(c, "rp-run-42/", &n, &err), SL_CLIENT_OK);
    assert_int_equal(n.released, 1);
    assert_int_equal(n.withdrawn, 1);
    assert_int_equal(n.canceled, 0);
    assert_int_equal(n.skipped, 0);
    assert_non_null(strstr(n.json, "\"released\":1"));
    sl_client_release_counts_free(&n);
    assert_null(n.json);
    assert_state(c, a->id, "released");
    assert_state(c, b->id, "withdrawn");
    assert_state(c, x->id, "held");
    /* Nothing left of the prefix: not an error, all 0. */
    assert_int_equal(sl_client_claims_release(c, "rp-run-42/", &n, &err), SL_CLIENT_OK);
    assert_int_equal(n.released + n.withdrawn + n.skipped, 0);
    sl_client_release_counts_free(&n);
    /* '&' would start another parameter, '#' end the URL, '+' read as a blank. */
    sl_client_claim *o = claim_one(c, "rp-odd/a b&c=d:e+f%g#h?i", false, "rp/odd", NULL);
    assert_int_equal(sl_client_claims_release(c, "rp-odd/a b&c=d:e+f%g#h?", &n, &err),
                     SL_CLIENT_OK);
    assert_int_equal(n.released, 1);
    sl_client_release_counts_free(&n);
    assert_state(c, o->id, "released");
    /* Refused here (an empty prefix), and by the server (too long). */
    assert_int_equal(sl_client_claims_release(c, "", &n, &err), SL_CLIENT_EINVAL);
    assert_int_equal(sl_client_claims_release(c, NULL, &n, &err), SL_CLIENT_EINVAL);
    assert_int_equal(sl_client_claims_release(c, "p", NULL, &err), SL_CLIENT_EINVAL);
    char longp[255];
    memset(longp, 'p', sizeof(longp) - 1);
    longp[sizeof(longp) - 1] = '\0';
    assert_http_error(sl_client_claims_release(c, longp, &n, &err), &err, 400, "bad_request");
    assert_null(n.json);
    assert_state(c, x->id, "held");
    release(c, x->id);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_claim_free(x);
    sl_client_claim_free(o);
    sl_client_free(c);
}

/* A semaphore nothing configures, made by its claims' inline limit and
 * gone with the last of them; a different limit meanwhile is a conflict. */
static void test_inline_limit(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_lock_req lock = {.semaphore = true, .name = "il/steps", .slots = 1, .limit = 2};
    sl_client_claim_req req = {.holder = "il/a", .locks = &lock, .nlocks = 1};
    sl_client_claim *a = NULL, *b = NULL, *d = NULL;
    assert_int_equal(sl_client_claim_create(c, &req, &a, &err), SL_CLIENT_OK);
    req.holder = "il/b";
    assert_int_equal(sl_client_claim_create(c, &req, &b, &err), SL_CLIENT_OK);
    req.holder = "il/d";
    assert_int_equal(sl_client_claim_create(c, &req, &d, &err), SL_CLIENT_OK);
    assert_string_equal(a->state, "held");
    assert_string_equal(b->state, "held");
    assert_string_equal(d->state, "pending");
    assert_int_equal(a->locks[0].limit, 2);
    assert_int_equal(d->locks[0].position, 1);
    sl_client_lock *l = NULL;
    assert_int_equal(sl_client_semaphore_get(c, "il/steps", &l, &err), SL_CLIENT_OK);
    assert_int_equal(l->limit, 2);
    sl_client_lock_free(l);

    sl_client_claim *x = (sl_client_claim *)&err;
    lock.limit = 3;
    req.holder = "il/x";
    assert_http_error(sl_client_claim_create(c, &req, &x, &err), &err, 409, "conflict");
    assert_null(x);
    assert_non_null(strstr(err.message, "3"));

    /* A claim that gives no limit has none in its answer. */
    sl_client_claim *m = claim_one(c, "il/m", false, "il/m", NULL);
    assert_int_equal(m->locks[0].limit, 0);
    release(c, m->id);

    release(c, d->id);
    release(c, b->id);
    release(c, a->id);
    l = NULL;
    assert_http_error(sl_client_semaphore_get(c, "il/steps", &l, &err), &err, 404, "not_found");
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_claim_free(d);
    sl_client_claim_free(m);
    sl_client_free(c);
}

/* Several groups, each with its cancel: one revokes, the other counts. */
static void test_groups(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    set_semaphore(c, "group/gr-repo-*", 5);
    sl_client_group_req g_old[] = {{.name = "gr-pr-12"}, {.name = "gr-repo-x"}};
    sl_client_claim_req req = {.holder = "gr/old", .groups = g_old, .ngroups = 2};
    sl_client_claim *old = NULL, *young = NULL, *got = NULL;
    assert_int_equal(sl_client_claim_create(c, &req, &old, &err), SL_CLIENT_OK);
    assert_string_equal(old->state, "held");
    assert_string_equal(old->group, "gr-pr-12");
    assert_int_equal(old->ngroups, 2);
    assert_string_equal(old->groups[0].name, "gr-pr-12");
    assert_string_equal(old->groups[0].cancel, "none");
    assert_string_equal(old->groups[1].name, "gr-repo-x");
    assert_int_equal(old->nlocks, 2);
    assert_true(old->locks[1].semaphore); /* the pattern's semaphore */

    /* The shorthand is the first group, the list the rest. */
    sl_client_group_req g_young[] = {{.name = "gr-repo-x", .cancel = "none"}};
    req = (sl_client_claim_req){.holder = "gr/young", .group = "gr-pr-12",
                                .cancel = "in-progress", .grace = "0", .groups = g_young,
                                .ngroups = 1};
    assert_int_equal(sl_client_claim_create(c, &req, &young, &err), SL_CLIENT_OK);
    assert_string_equal(young->state, "held");
    assert_int_equal(young->ngroups, 2);
    assert_string_equal(young->groups[0].cancel, "in-progress");
    assert_int_equal(sl_client_claim_get(c, old->id, 0, NULL, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "canceled");
    assert_non_null(strstr(got->reason, young->id));
    sl_client_claim_free(got);

    /* One group: no list. */
    sl_client_claim *one = claim_one(c, "gr/one", false, "gr/m", &(claim_opts){.group = "gr-1"});
    assert_int_equal(one->ngroups, 0);
    assert_null(one->groups);
    assert_string_equal(one->group, "gr-1");
    release(c, one->id);

    sl_client_group_req nameless[] = {{.cancel = "pending"}};
    req = (sl_client_claim_req){.holder = "gr/bad", .groups = nameless, .ngroups = 1};
    got = (sl_client_claim *)&err;
    assert_int_equal(sl_client_claim_create(c, &req, &got, &err), SL_CLIENT_EINVAL);
    assert_null(got);
    req = (sl_client_claim_req){.holder = "gr/bad", .groups = NULL, .ngroups = 1};
    assert_int_equal(sl_client_claim_create(c, &req, &got, &err), SL_CLIENT_EINVAL);
    /* Nine in all: the server's limit is 8. */
    sl_client_group_req nine[8];
    char names[8][16];
    for (int i = 0; i < 8; i++) {
        snprintf(names[i], sizeof(names[i]), "gr-nine-%d", i);
        nine[i] = (sl_client_group_req){.name = names[i]};
    }
    req = (sl_client_claim_req){.holder = "gr/bad", .group = "gr-nine", .groups = nine,
                                .ngroups = 8};
    assert_http_error(sl_client_claim_create(c, &req, &got, &err), &err, 400, "bad_request");

    release(c, young->id);
    sl_client_claim_free(old);
    sl_client_claim_free(young);
    sl_client_claim_free(one);
    sl_client_free(c);
}

/* DELETE /v1/queue: the waiters of a lock and/or of a holder prefix end
 * canceled; holders stay. */
static void test_queue_clear(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_claim *h = claim_one(c, "qc/h", false, "qc/m", NULL);
    sl_client_claim *w1 = claim_one(c, "qc/w1", false, "qc/m", NULL);
    sl_client_claim *w2 = claim_one(c, "qc-x/w2", false, "qc/m", NULL);
    /* Holders may hold what a query must escape: '&' would start another
     * parameter, '#' end the URL, '+' read as a blank. */
    sl_client_claim *oh = claim_one(c, "qc/oh", false, "qc/o:k=v", NULL);
    sl_client_claim *ow = claim_one(c, "qc/a b&c+d#e?f", false, "qc/o:k=v", NULL);
    sl_client_queue_cleared n;
    assert_int_equal(sl_client_queue_clear(c, "mtx/qc/m", "qc-x/", &n, &err), SL_CLIENT_OK);
    assert_int_equal(n.canceled, 1);
    assert_non_null(strstr(n.json, "\"canceled\":1"));
    sl_client_queue_cleared_free(&n);
    assert_null(n.json);
    assert_state(c, w2->id, "canceled");
    assert_state(c, w1->id, "pending");
    assert_int_equal(sl_client_queue_clear(c, "mtx/qc/m", NULL, &n, &err), SL_CLIENT_OK);
    assert_int_equal(n.canceled, 1);
    sl_client_queue_cleared_free(&n);
    assert_state(c, w1->id, "canceled");
    assert_state(c, h->id, "held");
    assert_int_equal(sl_client_queue_clear(c, "mtx/qc/o:k=v", "qc/a b&c+d#e?", &n, &err),
                     SL_CLIENT_OK);
    assert_int_equal(n.canceled, 1);
    sl_client_queue_cleared_free(&n);
    assert_state(c, ow->id, "canceled");
    /* Nothing to cancel is not an error. */
    assert_int_equal(sl_client_queue_clear(c, NULL, "qc/", &n, &err), SL_CLIENT_OK);
    assert_int_equal(n.canceled, 0);
    sl_client_queue_cleared_free(&n);

    assert_int_equal(sl_client_queue_clear(c, NULL, NULL, &n, &err), SL_CLIENT_EINVAL);
    assert_int_equal(sl_client_queue_clear(c, "", NULL, &n, &err), SL_CLIENT_EINVAL);
    assert_int_equal(sl_client_queue_clear(c, NULL, "", &n, &err), SL_CLIENT_EINVAL);
    assert_int_equal(sl_client_queue_clear(c, "mtx/qc/m", NULL, NULL, &err), SL_CLIENT_EINVAL);
    assert_http_error(sl_client_queue_clear(c, "qc/m", NULL, &n, &err), &err, 400,
                      "bad_request");
    assert_null(n.json);
    release(c, h->id);
    release(c, oh->id);
    sl_client_claim_free(h);
    sl_client_claim_free(w1);
    sl_client_claim_free(w2);
    sl_client_claim_free(oh);
    sl_client_claim_free(ow);
    sl_client_free(c);
}

/* Clearing a queue needs the operate permission: a claim-only token is
 * refused; prefixes give operate (and an admin may). */
static void test_queue_clear_needs_operate(void **state)
{
    (void)state;
    server s;
    server_start(&s, "tokens:\n"
                     "  - name: admin\n"
                     "    token: \"s3cret-admin-0123456789\"\n"
                     "    admin: true\n"
                     "  - name: ci\n"
                     "    token: \"s3cret-ci-0123456789\"\n"
                     "    claim: [\"qa/\"]\n");
    sl_client_error err;
    sl_client_queue_cleared n;
    sl_client_options o = {.server = s.url, .token = "s3cret-ci-0123456789"};
    sl_client *c = NULL;
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_OK);
    assert_http_error(sl_client_queue_clear(c, "mtx/qa/m", NULL, &n, &err), &err, 403,
                      "forbidden");
    sl_client_free(c);
    o.token = "s3cret-admin-0123456789";
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_OK);
    assert_int_equal(sl_client_queue_clear(c, "mtx/qa/m", NULL, &n, &err), SL_CLIENT_OK);
    assert_int_equal(n.canceled, 0);
    sl_client_queue_cleared_free(&n);
    sl_client_free(c);
    server_cleanup(&s);
}

/* An operator's cancel: pending and held claims end canceled, with the
 * operator's reason, not the client's own withdrawn/released; a revoking
 * claim carries revoke_at, then ends canceled too. */
static void test_cancel(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_claim *a = claim_one(c, "cn/a", false, "cn/m", NULL);
    sl_client_claim *b = claim_one(c, "cn/b", false, "cn/m", NULL);
    assert_string_equal(b->state, "pending");
    assert_int_equal(a->revoke_at_ms, -1);
    sl_client_claim *got = NULL;
    assert_int_equal(sl_client_claim_cancel(c, b->id, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "canceled");
    assert_string_equal(got->reason, "canceled by an operator");
    sl_client_claim_free(got);
    assert_int_equal(sl_client_claim_cancel(c, a->id, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "canceled");
    assert_string_equal(got->reason, "canceled by an operator");
    sl_client_claim_free(got);
    /* Ended: answered as it is. */
    assert_int_equal(sl_client_claim_cancel(c, a->id, NULL, &err), SL_CLIENT_OK);
    assert_http_error(sl_client_claim_cancel(c, "no-such-claim", NULL, &err), &err, 404,
                      "not_found");
    assert_int_equal(sl_client_claim_cancel(c, NULL, NULL, &err), SL_CLIENT_EINVAL);

    sl_client_claim *old = claim_one(c, "cn/old", false, "cn/r", &(claim_opts){.group = "cn/g"});
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t wall = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    sl_client_claim *young = claim_one(
        c, "cn/young", false, "cn/r",
        &(claim_opts){.group = "cn/g", .cancel = "in-progress", .grace = "1h"});
    assert_int_equal(sl_client_claim_get(c, old->id, 0, NULL, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "revoking");
    /* An hour from the revocation, by the server's clock (the same host's). */
    assert_true(got->revoke_at_ms >= wall + 3600 * 1000 - 5000);
    assert_true(got->revoke_at_ms <= wall + 3600 * 1000 + 5000);
    sl_client_claim_free(got);
    assert_int_equal(sl_client_claim_cancel(c, old->id, &got, &err), SL_CLIENT_OK);
    assert_string_equal(got->state, "canceled");
    assert_string_equal(got->reason, "canceled by an operator");
    assert_int_equal(got->revoke_at_ms, -1);
    sl_client_claim_free(got);
    assert_state(c, young->id, "held");
    release(c, young->id);
    sl_client_claim_free(old);
    sl_client_claim_free(young);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

/* A semaphore's rules: put with every one, read back; a put without them
 * turns them off; the why answer's preempt, share and admit_at. */
static void test_semaphore_rules(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_lock *l = NULL;
    sl_client_semaphore_config cfg = {.limit = 2,
                                      .lease = "1m",
                                      .preempt = true,
                                      .preempt_grace = "1m",
                                      .max_pending = 3,
                                      .on_full = "drop_oldest",
                                      .rate = "30/m",
                                      .burst = 1,
                                      .backdate = "1m"};
    assert_int_equal(sl_client_semaphore_put(c, "rules/a", &cfg, &l, &err), SL_CLIENT_OK);
    assert_int_equal(l->limit, 2);
    assert_int_equal(l->lease_ms, 60000);
    assert_false(l->inline_limit);
    assert_int_equal(l->overtake_limit_ms, -1);
    assert_true(l->preempt);
    assert_int_equal(l->preempt_grace_ms, 60000);
    assert_int_equal(l->max_pending, 3);
    assert_string_equal(l->on_full, "drop_oldest");
    assert_int_equal(l->nweights, 0);
    assert_int_equal(l->default_weight, 0);
    assert_string_equal(l->rate, "30/1m");
    assert_int_equal(l->burst, 1);
    assert_int_equal(l->backdate_ms, 60000);
    sl_client_lock_free(l);

    /* The preempting semaphore's why: a priority-10 waiter and the holder it revoked
     * (without the rate, whose bucket fills from the server's start). */
    cfg = (sl_client_semaphore_config){.limit = 2, .preempt = true, .preempt_grace = "1m"};
    assert_int_equal(sl_client_semaphore_put(c, "rules/a", &cfg, &l, &err), SL_CLIENT_OK);
    sl_client_lock_free(l);
    sl_client_claim *lo = claim_one(c, "rules/lo", true, "rules/a", &(claim_opts){.slots = 2});
    sl_client_claim *hi =
        claim_one(c, "rules/hi", true, "rules/a", &(claim_opts){.priority = 10});
    assert_string_equal(lo->state, "held");
    assert_string_equal(hi->state, "pending");
    sl_client_why *w = NULL;
    assert_int_equal(sl_client_claim_why(c, hi->id, &w, &err), SL_CLIENT_OK);
    assert_string_equal(w->reasons[0].preempt_status, "waiting");
    assert_int_equal(w->reasons[0].preempt_holders, 1);
    assert_false(w->reasons[0].has_share);
    assert_int_equal(w->reasons[0].admit_at_ms, -1);
    sl_client_why_free(w);
    release(c, lo->id);
    release(c, hi->id);
    sl_client_claim_free(lo);
    sl_client_claim_free(hi);

    /* Rebalanced, with weights; skip, with its overtake limit. */
    sl_client_weight_req ws[] = {{"acme", 3}, {"beta", 2}};
    cfg = (sl_client_semaphore_config){.limit = 8, .strategy = "rebalanced", .weights = ws,
                                       .nweights = 2, .default_weight = 2};
    assert_int_equal(sl_client_semaphore_put(c, "rules/w", &cfg, &l, &err), SL_CLIENT_OK);
    assert_int_equal(l->nweights, 2);
    assert_string_equal(l->weights[0].key, "acme");
    assert_int_equal(l->weights[0].weight, 3);
    assert_string_equal(l->weights[1].key, "beta");
    assert_int_equal(l->weights[1].weight, 2);
    assert_int_equal(l->default_weight, 2);
    assert_false(l->preempt);
    assert_null(l->rate);
    assert_int_equal(l->max_pending, 0);
    assert_null(l->on_full);
    sl_client_lock_free(l);
    cfg = (sl_client_semaphore_config){.limit = 1, .strategy = "skip", .overtake_limit = "30s"};
    assert_int_equal(sl_client_semaphore_put(c, "rules/k", &cfg, &l, &err), SL_CLIENT_OK);
    assert_int_equal(l->overtake_limit_ms, 30000);
    sl_client_lock_free(l);

    /* A put without the rules turns them off (sl_client_semaphore_set is one). */
    assert_int_equal(sl_client_semaphore_set(c, "rules/a", 2, NULL, NULL, &l, &err),
                     SL_CLIENT_OK);
    assert_false(l->preempt);
    assert_int_equal(l->preempt_grace_ms, 0);
    assert_int_equal(l->max_pending, 0);
    assert_null(l->rate);
    assert_int_equal(l->backdate_ms, 0);
    sl_client_lock_free(l);

    /* The server's refusals, and the library's own. */
    cfg = (sl_client_semaphore_config){.limit = 1, .burst = 3};
    l = (sl_client_lock *)&err;
    assert_http_error(sl_client_semaphore_put(c, "rules/bad", &cfg, &l, &err), &err, 400,
                      "bad_request");
    assert_non_null(strstr(err.message, "burst applies only with a rate"));
    assert_null(l);
    cfg = (sl_client_semaphore_config){.limit = 1, .nweights = 1};
    assert_int_equal(sl_client_semaphore_put(c, "rules/bad", &cfg, &l, &err), SL_CLIENT_EINVAL);
    assert_int_equal(sl_client_semaphore_put(c, "rules/bad", NULL, &l, &err), SL_CLIENT_EINVAL);

    /* A share and an admit_at, as the server writes them (parsed directly). */
    json_t *o = json_loads(
        "{\"state\":\"pending\",\"reasons\":[{\"lock\":\"sem/x\",\"rule\":\"quota\",\"used\":8,"
        "\"limit\":8,\"position\":2,\"ahead_count\":1,\"ahead\":[\"a\"],\"message\":\"m\","
        "\"preempt\":null,\"share\":{\"quota\":6,\"held\":7,\"weight\":3,\"weights\":4}},"
        "{\"lock\":\"sem/r\",\"rule\":\"rate\",\"used\":0,\"limit\":5,\"position\":1,"
        "\"ahead_count\":0,\"ahead\":[],\"message\":\"m\",\"preempt\":null,\"share\":null,"
        "\"admit_at\":\"1970-01-01T00:00:02.500Z\"}]}",
        0, NULL);
    sl_client_why parsed;
    assert_int_equal(sl__parse_why(o, &parsed, &err), SL_CLIENT_OK);
    assert_true(parsed.reasons[0].has_share);
    assert_int_equal(parsed.reasons[0].share_quota, 6);
    assert_int_equal(parsed.reasons[0].share_held, 7);
    assert_int_equal(parsed.reasons[0].share_weight, 3);
    assert_int_equal(parsed.reasons[0].share_weights, 4);
    assert_null(parsed.reasons[0].preempt_status);
    assert_int_equal(parsed.reasons[0].admit_at_ms, -1);
    assert_false(parsed.reasons[1].has_share);
    assert_int_equal(parsed.reasons[1].admit_at_ms, 2500);
    sl_client_why *wp = malloc(sizeof(*wp));
    assert_non_null(wp);
    *wp = parsed;
    sl_client_why_free(wp);
    json_decref(o);
    sl_client_free(c);
}

static void test_why(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    set_semaphore(c, "why/db", 1);
    sl_client_claim *a = claim_one(c, "why/a", true, "why/db", NULL);
    sl_client_claim *b = claim_one(c, "why/b", true, "why/db", NULL);
    sl_client_claim *d = claim_one(c, "why/d", true, "why/db", NULL);

    sl_client_why *w = NULL;
    assert_int_equal(sl_client_claim_why(c, d->id, &w, &err), SL_CLIENT_OK);
    assert_string_equal(w->state, "pending");
    assert_int_equal(w->nreasons, 1);
    assert_string_equal(w->reasons[0].lock, "sem/why/db");
    assert_string_equal(w->reasons[0].rule, "at_limit");
    assert_int_equal(w->reasons[0].used, 1);
    assert_int_equal(w->reasons[0].limit, 1);
    assert_int_equal(w->reasons[0].position, 2);
    assert_int_equal(w->reasons[0].ahead_count, 1);
    assert_int_equal(w->reasons[0].nahead, 1);
    assert_string_equal(w->reasons[0].ahead[0], b->id);
    assert_non_null(strstr(w->reasons[0].message, "at_limit"));
    assert_non_null(strstr(w->json, "\"reasons\""));
    sl_client_why_free(w);

    /* A held claim: its state and no reasons. */
    assert_int_equal(sl_client_claim_why(c, a->id, &w, &err), SL_CLIENT_OK);
    assert_string_equal(w->state, "held");
    assert_int_equal(w->nreasons, 0);
    sl_client_why_free(w);

    w = (sl_client_why *)&err;
    assert_http_error(sl_client_claim_why(c, "no-such-claim", &w, &err), &err, 404, "not_found");
    assert_null(w);

    release(c, d->id);
    release(c, b->id);
    release(c, a->id);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_claim_free(d);
    sl_client_free(c);
}

static size_t index_of(const sl_client_claim_list *l, const char *id)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->items[i].id, id) == 0)
            return i;
    return (size_t)-1;
}

static void test_queue(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    set_semaphore(c, "q/db", 1);
    sl_client_claim *a = claim_one(c, "q/a", true, "q/db", NULL);
    sl_client_claim *b = claim_one(c, "q/b", true, "q/db", NULL);
    sl_client_claim *d = claim_one(c, "q/d", true, "q/db", &(claim_opts){.priority = 5});

    sl_client_claim_list q;
    assert_int_equal(sl_client_queue(c, "sem/q/db", &q, &err), SL_CLIENT_OK);
    assert_int_equal(q.n, 2);
    assert_string_equal(q.items[0].id, d->id); /* priority first */
    assert_int_equal(q.items[0].queue_position, 1);
    assert_string_equal(q.items[0].rule, "at_limit");
    assert_int_equal(q.items[0].priority, 5);
    assert_string_equal(q.items[1].id, b->id);
    assert_int_equal(q.items[1].queue_position, 2);
    assert_string_equal(q.items[1].state, "pending");
    sl_client_claim_list_free(&q);

    /* The whole queue: other tests' claims may be there too. */
    assert_int_equal(sl_client_queue(c, NULL, &q, &err), SL_CLIENT_OK);
    size_t id = index_of(&q, d->id), ib = index_of(&q, b->id);
    assert_true(id < ib && ib < q.n);
    assert_int_equal(index_of(&q, a->id), (size_t)-1);
    assert_int_equal(q.items[id].queue_position, id + 1);
    assert_int_equal(q.items[ib].queue_position, ib + 1);
    sl_client_claim_list_free(&q);

    assert_http_error(sl_client_queue(c, "q/db", &q, &err), &err, 400, "bad_request");
    assert_int_equal(q.n, 0);

    release(c, a->id);
    release(c, b->id);
    release(c, d->id);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_claim_free(d);
    sl_client_free(c);
}

/* Listings come a page at a time; the library follows the pages. */
static void test_listings_follow_pages(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_claim *made[7];
    for (size_t i = 0; i < 7; i++)
        made[i] = claim_one(c, "pages/h", false, "pages/m", NULL);
    unsigned was = sl__list_page_size;
    sl__list_page_size = 2;
    sl_client_claim_list l;
    sl_client_error err;
    assert_int_equal(sl_client_claims(c, NULL, "pages/h", NULL, &l, &err), SL_CLIENT_OK);
    assert_int_equal(l.n, 7);
    for (size_t i = 0; i < 7; i++)
        assert_string_equal(l.items[i].id, made[i]->id);
    sl_client_claim_list_free(&l);
    assert_int_equal(sl_client_queue(c, "mtx/pages/m", &l, &err), SL_CLIENT_OK);
    assert_int_equal(l.n, 6);
    for (size_t i = 0; i < 6; i++) {
        assert_string_equal(l.items[i].id, made[i + 1]->id);
        assert_int_equal(l.items[i].queue_position, i + 1);
    }
    sl_client_claim_list_free(&l);
    sl__list_page_size = was;
    for (size_t i = 7; i-- > 0;) {
        release(c, made[i]->id);
        sl_client_claim_free(made[i]);
    }
    sl_client_free(c);
}

static void test_claims_list(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    sl_client_claim *a = claim_one(c, "cl/h1", false, "cl/m", NULL);
    sl_client_claim *b = claim_one(c, "cl/h1", false, "cl/m", NULL);
    sl_client_claim *d = claim_one(c, "cl/h2 with space", false, "cl/m", NULL);

    sl_client_claim_list l;
    assert_int_equal(sl_client_claims(c, NULL, "cl/h1", NULL, &l, &err), SL_CLIENT_OK);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.items[0].id, a->id); /* arrival order */
    assert_string_equal(l.items[1].id, b->id);
    sl_client_claim_list_free(&l);

    assert_int_equal(sl_client_claims(c, "pending", "cl/h1", NULL, &l, &err), SL_CLIENT_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.items[0].id, b->id);
    sl_client_claim_list_free(&l);

    /* The holder is escaped in the query. */
    assert_int_equal(sl_client_claims(c, NULL, "cl/h2 with space", NULL, &l, &err), SL_CLIENT_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.items[0].id, d->id);
    sl_client_claim_list_free(&l);

    /* ?lock=: that lock's holders, then its waiters in order. */
    assert_int_equal(sl_client_claims(c, NULL, NULL, "mtx/cl/m", &l, &err), SL_CLIENT_OK);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.items[0].id, a->id);
    assert_string_equal(l.items[1].id, b->id);
    assert_string_equal(l.items[2].id, d->id);
    sl_client_claim_list_free(&l);

    assert_int_equal(sl_client_claims(c, "held", NULL, "mtx/cl/m", &l, &err), SL_CLIENT_OK);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.items[0].id, a->id);
    sl_client_claim_list_free(&l);

    assert_http_error(sl_client_claims(c, "sleeping", NULL, NULL, &l, &err), &err, 400,
                      "bad_request");
    assert_http_error(sl_client_claims(c, NULL, NULL, "cl/m", &l, &err), &err, 400, "bad_request");

    release(c, a->id);
    release(c, b->id);
    release(c, d->id);
    assert_int_equal(sl_client_claims(c, "released", "cl/h1", NULL, &l, &err), SL_CLIENT_OK);
    assert_int_equal(l.n, 2); /* b was granted when a left, then released */
    sl_client_claim_list_free(&l);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_claim_free(d);
    sl_client_free(c);
}

/* ---- await ------------------------------------------------------------------------ */

typedef struct await_job {
    const server *srv;
    const char *id;
    int64_t timeout_ms;
    sl_client_retry retry;
    int rc;
    sl_client_claim *out;
    sl_client_error err;
    signal_box answers;  /* progress with a claim */
    signal_box failures; /* progress with an error */
    char first_state[16], last_state[16];
    int fail_rc;
    char fail_message[1024];
} await_job;

static void await_progress(void *ud, const sl_client_claim *claim, const sl_client_error *err)
{
    await_job *j = ud;
    if (err) {
        j->fail_rc = err->rc;
        snprintf(j->fail_message, sizeof(j->fail_message), "%s", err->message);
        box_post(&j->failures);
        return;
    }
    assert_non_null(claim);
    if (!j->first_state[0])
        snprintf(j->first_state, sizeof(j->first_state), "%s", claim->state);
    snprintf(j->last_state, sizeof(j->last_state), "%s", claim->state);
    box_post(&j->answers);
}

static void *await_thread(void *arg)
{
    await_job *j = arg;
    sl_client *c = client_for(j->srv);
    j->rc = sl_client_claim_await(c, j->id, j->timeout_ms, &j->retry, await_progress, j, &j->out,
                                  &j->err);
    sl_client_free(c);
    return NULL;
}

static void await_job_init(await_job *j, const server *s, const char *id, int64_t timeout_ms)
{
    memset(j, 0, sizeof(*j));
    j->srv = s;
    j->id = id;
    j->timeout_ms = timeout_ms;
    j->retry.interval_ms = 50;
    j->retry.jitter_ms = 20;
    box_init(&j->answers);
    box_init(&j->failures);
}

static void await_job_done(await_job *j)
{
    sl_client_claim_free(j->out);
    box_destroy(&j->answers);
    box_destroy(&j->failures);
}

static void test_await_wakes(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_claim *a = claim_one(c, "aw/a", false, "aw/m", NULL);
    sl_client_claim *b = claim_one(c, "aw/b", false, "aw/m", NULL);
    await_job j;
    await_job_init(&j, &g_srv, b->id, 60000);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, await_thread, &j), 0);
    /* Its first look reports pending at once; then it long-polls. */
    assert_true(box_wait(&j.answers, 1, SOON_MS) >= 1);
    int64_t t0 = now_ms();
    release(c, a->id);
    pthread_join(t, NULL);
    assert_true(now_ms() - t0 < SOON_MS);
    assert_int_equal(j.rc, SL_CLIENT_OK);
    assert_string_equal(j.out->state, "held");
    assert_string_equal(j.out->id, b->id);
    assert_string_equal(j.first_state, "pending");
    assert_string_equal(j.last_state, "held");
    assert_int_equal(j.failures.count, 0);
    await_job_done(&j);

    /* Already held: answered at once. */
    sl_client_claim *out = NULL;
    sl_client_error err;
    assert_int_equal(sl_client_claim_await(c, b->id, 5000, NULL, NULL, NULL, &out, &err),
                     SL_CLIENT_OK);
    assert_string_equal(out->state, "held");
    sl_client_claim_free(out);

    /* An ended claim also ends the wait. */
    release(c, b->id);
    assert_int_equal(sl_client_claim_await(c, b->id, 5000, NULL, NULL, NULL, &out, &err),
                     SL_CLIENT_OK);
    assert_string_equal(out->state, "released");
    sl_client_claim_free(out);

    /* An unknown claim is not retried. */
    out = (sl_client_claim *)&err;
    assert_http_error(sl_client_claim_await(c, "no-such-claim", 5000, NULL, NULL, NULL, &out, &err),
                      &err, 404, "not_found");
    assert_null(out);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

static void test_await_timeout(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_claim *a = claim_one(c, "at/a", false, "at/m", NULL);
    sl_client_claim *b = claim_one(c, "at/b", false, "at/m", NULL);
    sl_client_claim *out = NULL;
    sl_client_error err;
    int answers = 0;
    int64_t t0 = now_ms();
    int rc = sl_client_claim_await(c, b->id, 400, NULL, NULL, &answers, &out, &err);
    int64_t took = now_ms() - t0;
    assert_int_equal(rc, SL_CLIENT_ETIMEOUT);
    assert_int_equal(err.rc, SL_CLIENT_ETIMEOUT);
    assert_non_null(out); /* the last answer */
    assert_string_equal(out->id, b->id);
    assert_string_equal(out->state, "pending");
    assert_non_null(strstr(err.message, "pending"));
    assert_true(took >= 350);
    assert_true(took < SOON_MS);
    sl_client_claim_free(out);
    release(c, b->id);
    release(c, a->id);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

/* The server is down when the wait starts: await retries (reporting each
 * failure) and succeeds once the server is back on the same port. */
static void test_await_retries_while_down(void **state)
{
    (void)state;
    server s;
    server_start(&s, NULL);
    sl_client *c = client_for(&s);
    sl_client_claim *a = claim_one(c, "ad/a", false, "ad/m", NULL);
    sl_client_claim *b = claim_one(c, "ad/b", false, "ad/m", NULL);
    release(c, a->id); /* b holds, as the restarted server will say */
    server_stop(&s, SIGTERM);

    await_job j;
    await_job_init(&j, &s, b->id, 60000);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, await_thread, &j), 0);
    assert_true(box_wait(&j.failures, 2, SOON_MS) >= 2); /* it retried */
    assert_int_equal(j.fail_rc, SL_CLIENT_ECONNECT);
    assert_non_null(strstr(j.fail_message, s.url));
    assert_int_equal(j.answers.count, 0);
    server_restart(&s);
    pthread_join(t, NULL);
    assert_int_equal(j.rc, SL_CLIENT_OK);
    assert_string_equal(j.out->id, b->id);
    assert_string_equal(j.out->state, "held");
    await_job_done(&j);

    /* Down until the deadline: ETIMEOUT naming the last failure. */
    server_stop(&s, SIGKILL);
    sl_client_claim *out = (sl_client_claim *)&j;
    sl_client_error err;
    sl_client_retry fast = {.interval_ms = 50, .jitter_ms = 10};
    assert_int_equal(sl_client_claim_await(c, b->id, 300, &fast, NULL, NULL, &out, &err),
                     SL_CLIENT_ETIMEOUT);
    assert_null(out);
    assert_non_null(strstr(err.message, s.url));

    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
    server_cleanup(&s);
}

/* ---- events ------------------------------------------------------------------------- */

static uint64_t next_seq(sl_client *c)
{
    sl_client_status *st = NULL;
    assert_int_equal(sl_client_status_get(c, &st, NULL), SL_CLIENT_OK);
    uint64_t n = st->next_seq;
    sl_client_status_free(st);
    return n;
}

static void test_events_page(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_error err;
    uint64_t since = next_seq(c) - 1;
    sl_client_claim *a = claim_one(c, "ev/a", false, "ev/m", NULL);
    release(c, a->id);

    sl_client_event_page p;
    assert_int_equal(sl_client_events(c, since, a->id, 0, 0, &p, &err), SL_CLIENT_OK);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.items[0].type, "claim.queued");
    assert_string_equal(p.items[1].type, "claim.acquired");
    assert_string_equal(p.items[2].type, "claim.released");
    for (size_t i = 0; i < p.n; i++) {
        assert_string_equal(p.items[i].claim, a->id);
        assert_string_equal(p.items[i].holder, "ev/a");
        assert_int_equal(p.items[i].nlocks, 1);
        assert_string_equal(p.items[i].locks[0], "mtx/ev/m");
        assert_true(p.items[i].time_ms > 0);
        assert_non_null(strstr(p.items[i].json, "\"seq\""));
        if (i > 0)
            assert_true(p.items[i].seq > p.items[i - 1].seq);
    }
    assert_true(p.items[0].seq > since);
    uint64_t last = p.items[2].seq;
    assert_true(p.next >= last);
    sl_client_event_page_free(&p);
    assert_int_equal(p.n, 0);

    /* limit: one at a time, next is where it stopped. */
    assert_int_equal(sl_client_events(c, since, a->id, 1, 0, &p, &err), SL_CLIENT_OK);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.items[0].type, "claim.queued");
    assert_int_equal(p.next, p.items[0].seq);
    sl_client_event_page_free(&p);

    /* A semaphore's events have no claim. */
    uint64_t s2 = next_seq(c) - 1;
    set_semaphore(c, "ev/sem", 4);
    assert_int_equal(sl_client_events(c, s2, NULL, 0, 0, &p, &err), SL_CLIENT_OK);
    assert_true(p.n >= 1);
    assert_string_equal(p.items[0].type, "semaphore.updated");
    assert_null(p.items[0].claim);
    assert_null(p.items[0].holder);
    sl_client_event_page_free(&p);

    /* The end of the log, with a wait: empty after the wait. */
    uint64_t end = next_seq(c) - 1;
    int64_t t0 = now_ms();
    assert_int_equal(sl_client_events(c, end, "no-such-claim", 0, 300, &p, &err), SL_CLIENT_OK);
    assert_int_equal(p.n, 0);
    assert_true(now_ms() - t0 >= 250);
    sl_client_event_page_free(&p);
    assert_http_error(sl_client_events(c, 0, NULL, 100000, 0, &p, &err), &err, 400, "bad_request");
    sl_client_claim_free(a);
    sl_client_free(c);
}

typedef struct follow_job {
    const server *srv;
    uint64_t since;
    char *stop_id;          /* set from the main thread (guarded by seen's lock) */
    uint64_t seqs[64];
    char types[64][32];
    char claims[64][32];
    size_t n;
    signal_box seen;
    int rc;
    sl_client_error err;
} follow_job;

static int follow_fn(void *ud, const sl_client_event *ev)
{
    follow_job *j = ud;
    pthread_mutex_lock(&j->seen.mu);
    bool stop = false;
    if (j->n < 64) {
        j->seqs[j->n] = ev->seq;
        snprintf(j->types[j->n], sizeof(j->types[0]), "%s", ev->type);
        snprintf(j->claims[j->n], sizeof(j->claims[0]), "%s", ev->claim ? ev->claim : "");
        j->n++;
    }
    stop = j->stop_id && ev->claim && strcmp(ev->claim, j->stop_id) == 0 &&
           strcmp(ev->type, "claim.released") == 0;
    pthread_mutex_unlock(&j->seen.mu);
    box_post(&j->seen);
    return stop || j->n >= 64;
}

static void *follow_thread(void *arg)
{
    follow_job *j = arg;
    sl_client *c = client_for(j->srv);
    sl_client_retry r = {.interval_ms = 50, .jitter_ms = 20};
    j->rc = sl_client_events_follow(c, j->since, &r, follow_fn, j, &j->err);
    sl_client_free(c);
    return NULL;
}

/* Catch-up from `since`: the log's events in order, then stop on request. */
static void test_events_follow(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    uint64_t since = next_seq(c) - 1;
    sl_client_claim *a = claim_one(c, "ef/a", false, "ef/m", NULL);
    sl_client_claim *b = claim_one(c, "ef/b", false, "ef/m", NULL);
    release(c, a->id);
    release(c, b->id);

    follow_job j = {.srv = &g_srv, .since = since, .stop_id = b->id};
    box_init(&j.seen);
    follow_thread(&j);
    assert_int_equal(j.rc, SL_CLIENT_OK);
    /* a: queued, acquired; b: queued, waiting; a released; b acquired, released. */
    const char *want[][2] = {{"claim.queued", a->id},   {"claim.acquired", a->id},
                             {"claim.queued", b->id},   {"claim.waiting", b->id},
                             {"claim.released", a->id}, {"claim.acquired", b->id},
                             {"claim.released", b->id}};
    size_t k = 0;
    for (size_t i = 0; i < j.n; i++) {
        if (i > 0)
            assert_true(j.seqs[i] == j.seqs[i - 1] + 1);
        if (strcmp(j.claims[i], a->id) != 0 && strcmp(j.claims[i], b->id) != 0)
            continue; /* another test's, if any */
        assert_true(k < 7);
        assert_string_equal(j.types[i], want[k][0]);
        assert_string_equal(j.claims[i], want[k][1]);
        k++;
    }
    assert_int_equal(k, 7);
    assert_int_equal(j.seqs[0], since + 1);
    box_destroy(&j.seen);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

/* Live events, through a server restart: the stream resumes after the last
 * event seen, none lost and none twice. */
static void test_events_follow_reconnects(void **state)
{
    (void)state;
    server s;
    server_start(&s, NULL);
    sl_client *c = client_for(&s);
    follow_job j = {.srv = &s, .since = next_seq(c) - 1};
    box_init(&j.seen);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, follow_thread, &j), 0);

    sl_client_claim *a = claim_one(c, "er/a", false, "er/m", NULL);
    release(c, a->id);
    assert_true(box_wait(&j.seen, 3, SOON_MS) >= 3); /* a's three events arrived live */
    server_stop(&s, SIGTERM);
    server_restart(&s);
    sl_client_claim *b = claim_one(c, "er/b", false, "er/m", NULL);
    pthread_mutex_lock(&j.seen.mu);
    j.stop_id = b->id;
    pthread_mutex_unlock(&j.seen.mu);
    release(c, b->id);
    pthread_join(t, NULL);
    assert_int_equal(j.rc, SL_CLIENT_OK);
    assert_int_equal(j.n, 6);
    for (size_t i = 1; i < j.n; i++)
        assert_int_equal(j.seqs[i], j.seqs[i - 1] + 1);
    assert_string_equal(j.claims[0], a->id);
    assert_string_equal(j.types[2], "claim.released");
    assert_string_equal(j.claims[3], b->id);
    assert_string_equal(j.types[3], "claim.queued");
    assert_string_equal(j.types[5], "claim.released");
    box_destroy(&j.seen);

    /* Never reached: follow says so instead of retrying for ever. */
    server_stop(&s, SIGKILL);
    follow_job dead = {.srv = &s};
    box_init(&dead.seen);
    follow_thread(&dead);
    assert_int_equal(dead.rc, SL_CLIENT_ECONNECT);
    assert_int_equal(dead.n, 0);
    box_destroy(&dead.seen);

    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
    server_cleanup(&s);
}

/* ---- the keeper ---------------------------------------------------------------------- */

typedef struct lost_box {
    signal_box box;
    sl_client_lost why;
    bool had_claim;
    char state[16];
    int err_rc;
    char message[1024];
    int64_t at;
} lost_box;

static void on_lost(void *ud, sl_client_lost why, const sl_client_claim *claim,
                    const sl_client_error *err)
{
    lost_box *l = ud;
    pthread_mutex_lock(&l->box.mu);
    l->why = why;
    l->had_claim = claim != NULL;
    snprintf(l->state, sizeof(l->state), "%s", claim ? claim->state : "");
    l->err_rc = err ? err->rc : 0;
    snprintf(l->message, sizeof(l->message), "%s", err ? err->message : "");
    l->at = now_ms();
    pthread_mutex_unlock(&l->box.mu);
    box_post(&l->box);
}

static sl_client_keeper *keep(const server *s, const char *id, int64_t lease_ms, lost_box *l)
{
    sl_client_options o = {.server = s->url};
    sl_client_retry r = {.interval_ms = 100, .jitter_ms = 50};
    sl_client_keeper *k = NULL;
    sl_client_error err;
    memset(l, 0, sizeof(*l));
    box_init(&l->box);
    int rc = sl_client_keeper_start(&o, id, lease_ms, &r, on_lost, l, &k, &err);
    if (rc != SL_CLIENT_OK)
        fail_msg("keeper: %s", err.message);
    return k;
}

static size_t count_events(sl_client *c, const char *id, const char *type)
{
    sl_client_event_page p;
    assert_int_equal(sl_client_events(c, 0, id, 0, 0, &p, NULL), SL_CLIENT_OK);
    size_t n = 0;
    for (size_t i = 0; i < p.n; i++)
        n += strcmp(p.items[i].type, type) == 0;
    sl_client_event_page_free(&p);
    return n;
}

/* A 1 s lease kept for 3 s: still held, renewed along the way. */
static void test_keeper_keeps_alive(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_claim *a = claim_one(c, "kp/a", false, "kp/alive", &(claim_opts){.lease = "1s"});
    assert_string_equal(a->state, "held");
    lost_box l;
    sl_client_keeper *k = keep(&g_srv, a->id, 1000, &l);
    sl__sleep_ms(3000); /* time must pass: three leases */
    assert_state(c, a->id, "held");
    assert_int_equal(l.box.count, 0);
    assert_true(count_events(c, a->id, "claim.renewed") >= 2);
    int64_t t0 = now_ms();
    sl_client_keeper_stop(k);
    assert_true(now_ms() - t0 < 2000);
    assert_int_equal(l.box.count, 0); /* stopping is not a loss */
    box_destroy(&l.box);

    /* Without the keeper the lease runs out (polled without a wait: a
     * wait would itself be a sign of life). */
    int64_t deadline = now_ms() + SOON_MS;
    char *st = state_of(c, a->id);
    while (strcmp(st, "held") == 0 && now_ms() < deadline) {
        free(st);
        sl__sleep_ms(20);
        st = state_of(c, a->id);
    }
    assert_string_equal(st, "expired");
    free(st);
    sl_client_claim_free(a);
    sl_client_free(c);
}

static void test_keeper_revoked(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_claim *a =
        claim_one(c, "kr/a", false, "kr/m", &(claim_opts){.group = "kr/g", .lease = "1s"});
    lost_box l;
    sl_client_keeper *k = keep(&g_srv, a->id, 1000, &l);
    int64_t t0 = now_ms();
    sl_client_claim *b =
        claim_one(c, "kr/b", false, "kr/m",
                  &(claim_opts){.group = "kr/g", .cancel = "in-progress", .grace = "30s"});
    assert_int_equal(box_wait(&l.box, 1, SOON_MS), 1);
    assert_int_equal(l.why, SL_CLIENT_LOST_REVOKED);
    assert_true(l.had_claim);
    assert_string_equal(l.state, "revoking");
    /* Promptly: the long poll answers at once, well within a lease. */
    assert_true(l.at - t0 < 1000);
    sl_client_keeper_stop(k);
    assert_int_equal(l.box.count, 1); /* once */
    box_destroy(&l.box);
    release(c, a->id);
    assert_state(c, b->id, "held");
    release(c, b->id);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

static void test_keeper_ended(void **state)
{
    (void)state;
    sl_client *c = client_for(&g_srv);
    sl_client_claim *a = claim_one(c, "ke/a", false, "ke/m", &(claim_opts){.lease = "1s"});
    lost_box l;
    sl_client_keeper *k = keep(&g_srv, a->id, 1000, &l);
    int64_t t0 = now_ms();
    release(c, a->id); /* elsewhere */
    assert_int_equal(box_wait(&l.box, 1, SOON_MS), 1);
    assert_int_equal(l.why, SL_CLIENT_LOST_ENDED);
    assert_string_equal(l.state, "released");
    assert_true(l.at - t0 < 1000);
    sl_client_keeper_stop(k);
    box_destroy(&l.box);

    /* Watching only (lease 0): the stop cuts its 25 s long poll short. */
    sl_client_claim *b = claim_one(c, "ke/b", false, "ke/m", NULL);
    k = keep(&g_srv, b->id, 0, &l);
    sl__sleep_ms(200); /* let it get into its long poll */
    t0 = now_ms();
    sl_client_keeper_stop(k);
    assert_true(now_ms() - t0 < 1000);
    assert_int_equal(l.box.count, 0);
    box_destroy(&l.box);
    release(c, b->id);

    sl_client_keeper *none = (sl_client_keeper *)&l;
    sl_client_error err;
    assert_int_equal(sl_client_keeper_start(NULL, "", 1000, NULL, on_lost, &l, &none, &err),
                     SL_CLIENT_EINVAL);
    assert_null(none);
    assert_int_equal(sl_client_keeper_start(NULL, "x", -1, NULL, on_lost, &l, &none, &err),
                     SL_CLIENT_EINVAL);
    sl_client_keeper_stop(NULL);
    sl_client_claim_free(a);
    sl_client_claim_free(b);
    sl_client_free(c);
}

/* The server dies and stays down longer than the lease: UNREACHABLE, once,
 * no sooner than the lease allows and not much later. */
static void test_keeper_unreachable(void **state)
{
    (void)state;
    server s;
    server_start(&s, NULL);
    sl_client *c = client_for(&s);
    sl_client_claim *a = claim_one(c, "ku/a", false, "ku/m", &(claim_opts){.lease = "1s"});
    lost_box l;
    sl_client_keeper *k = keep(&s, a->id, 1000, &l);
    /* It got through at least once (a renewal) before the kill. */
    sl_client_claim *got = NULL;
    assert_int_equal(sl_client_claim_get(c, a->id, 0, NULL, &got, NULL), SL_CLIENT_OK);
    sl_client_claim_free(got);
    while (count_events(c, a->id, "claim.renewed") == 0)
        sl__sleep_ms(10);
    int64_t killed = now_ms();
    server_stop(&s, SIGKILL);
    assert_int_equal(box_wait(&l.box, 1, SOON_MS), 1);
    assert_int_equal(l.why, SL_CLIENT_LOST_UNREACHABLE);
    assert_false(l.had_claim);
    assert_int_equal(l.err_rc, SL_CLIENT_ECONNECT);
    assert_non_null(strstr(l.message, s.url));
    /* A renewal got through just before the kill: about a lease later. */
    assert_true(l.at - killed >= 300);
    assert_true(l.at - killed < 3000);
    sl_client_keeper_stop(k);
    assert_int_equal(l.box.count, 1);
    box_destroy(&l.box);
    sl_client_claim_free(a);
    sl_client_free(c);
    server_cleanup(&s);
}

/* ---- auth ------------------------------------------------------------------------------ */

static void test_auth(void **state)
{
    (void)state;
    server s;
    server_start(&s, "tokens:\n"
                     "  - name: admin\n"
                     "    token: \"s3cret-admin-0123456789\"\n"
                     "    admin: true\n");
    sl_client_error err;
    sl_client_lock_list list;
    sl_client *c = client_for(&s);
    sl_client_status *st = NULL;
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_OK); /* /healthz is open */
    sl_client_status_free(st);
    assert_http_error(sl_client_semaphores(c, &list, &err), &err, 401, "unauthorized");
    sl_client_free(c);

    sl_client_options o = {.server = s.url, .token = "s3cret-admin-0123456789"};
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_OK);
    assert_int_equal(sl_client_semaphores(c, &list, &err), SL_CLIENT_OK);
    sl_client_lock_list_free(&list);
    sl_client_free(c);

    setenv("SLUICE_TOKEN", "s3cret-admin-0123456789", 1);
    o.token = NULL;
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_OK);
    assert_int_equal(sl_client_mutexes(c, &list, &err), SL_CLIENT_OK);
    sl_client_lock_list_free(&list);
    sl_client_free(c);
    setenv("SLUICE_TOKEN", "wrong", 1);
    assert_int_equal(sl_client_new(&o, &c, &err), SL_CLIENT_OK);
    assert_http_error(sl_client_mutexes(c, &list, &err), &err, 401, "unauthorized");
    sl_client_free(c);
    unsetenv("SLUICE_TOKEN");
    server_cleanup(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_times),
        cmocka_unit_test(test_parse_refuses),
        cmocka_unit_test(test_client_options),
        cmocka_unit_test(test_econnect),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_semaphores),
        cmocka_unit_test(test_mutexes),
        cmocka_unit_test(test_claim_create),
        cmocka_unit_test(test_create_retries_with_its_key),
        cmocka_unit_test(test_claim_get_wait),
        cmocka_unit_test(test_renew),
        cmocka_unit_test(test_release),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_claims_release),
        cmocka_unit_test(test_inline_limit),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_queue_clear),
        cmocka_unit_test(test_queue_clear_needs_operate),
        cmocka_unit_test(test_semaphore_rules),
        cmocka_unit_test(test_why),
        cmocka_unit_test(test_queue),
        cmocka_unit_test(test_claims_list),
        cmocka_unit_test(test_listings_follow_pages),
        cmocka_unit_test(test_await_wakes),
        cmocka_unit_test(test_await_timeout),
        cmocka_unit_test(test_await_retries_while_down),
        cmocka_unit_test(test_events_page),
        cmocka_unit_test(test_events_follow),
        cmocka_unit_test(test_events_follow_reconnects),
        cmocka_unit_test(test_keeper_keeps_alive),
        cmocka_unit_test(test_keeper_revoked),
        cmocka_unit_test(test_keeper_ended),
        cmocka_unit_test(test_keeper_unreachable),
        cmocka_unit_test(test_auth),
    };
    int failed = cmocka_run_group_tests(tests, group_setup, group_teardown);
    curl_global_cleanup(); /* so that LeakSanitizer sees nothing of libcurl's */
    return failed;
}
