/* test_http_tls.c - the load generator's HTTP client over TLS (bench/load/tls.h,
 * http_conn.c) against a real sluiced serving HTTPS.
 *
 * The CA, the server's certificate and a stranger CA are made at test time
 * with the openssl command (as tests/server/test_tls.py does); sluiced (the
 * path in $SLUICED) listens on a free loopback port with them. Checked: a
 * handshake and an answer; keep-alive (many requests, one handshake);
 * session resumption offered and taken, and not offered by default; a
 * certificate from a CA the client does not trust refused in the handshake,
 * with the reason in words, and accepted only with the explicit insecure
 * flag; a CA file that cannot be read; and, against a listener that never
 * answers, a handshake bounded by the timeout and one interrupted from
 * another thread. Every wait is on an answer or an event, with a deadline. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "tls.h"

#define DEADLINE_MS 20000

static char dir[256];
static char port[16];
static pid_t server = -1;

static char *path(const char *name)
{
    static char buf[4][512];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = ms * 1000000L};
    nanosleep(&ts, NULL);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd);
}

#define KEYGEN "-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"

/* ca.pem (the CA), srv.pem (127.0.0.1 and localhost, signed by ca) and
 * other.pem (a CA the client is not told about), with the openssl command. */
static int make_certificates(void)
{
    return sh("cd %s && exec >openssl.log 2>&1 && "
              "openssl req -x509 " KEYGEN " -keyout ca.key -out ca.pem -days 2 -subj /CN=ca && "
              "openssl req -x509 " KEYGEN " -keyout other.key -out other.pem -days 2 "
              "-subj /CN=other && "
              "openssl req " KEYGEN " -keyout srv.key -out srv.csr -subj /CN=server && "
              "echo subjectAltName=DNS:localhost,IP:127.0.0.1 >srv.ext && "
              "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -days 2 -out srv.pem "
              "-extfile srv.ext",
              dir);
}

static int free_port(void)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    int s = socket(AF_INET, SOCK_STREAM, 0), p = -1;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &len) == 0)
        p = ntohs(a.sin_port);
    close(s);
    return p;
}

/* GET /healthz over TLS, trusting ca.pem: 0 on 200. */
static int healthy(sl_tls_client *cl)
{
    sl_http_conn *c;
    const sl_http_response *r;
    int rc = -1;
    if (sl_http_conn_new_tls("127.0.0.1", port, 1000, cl, &c) < 0)
        return -1;
    if (sl_http_conn_request(c, "GET", "/healthz", NULL, 0, &r) == 0 && r->status == 200)
        rc = 0;
    sl_http_conn_free(c);
    return rc;
}

static int start_sluiced(void **state)
{
    const char *binary = getenv("SLUICED");
    char listen[64], store[320], err[256];
    sl_tls_client *cl;
    int64_t deadline = now_ms() + DEADLINE_MS;
    (void)state;
    if (!binary) {
        fprintf(stderr, "SLUICED is not set (the path of sluiced)\n");
        return -1;
    }
    snprintf(dir, sizeof dir, "/tmp/bench-http-tls-XXXXXX");
    if (!mkdtemp(dir) || make_certificates() != 0) {
        fprintf(stderr, "cannot make the certificates in %s (openssl.log)\n", dir);
        return -1;
    }
    snprintf(port, sizeof port, "%d", free_port());
    snprintf(listen, sizeof listen, "127.0.0.1:%s", port);
    snprintf(store, sizeof store, "sqlite:%s/s.db", dir);
    server = fork();
    if (server == 0) {
        execl(binary, binary, "--listen", listen, "--store", store, "--log-level", "warn",
              "--tls-cert", path("srv.pem"), "--tls-key", path("srv.key"), (char *)NULL);
        _exit(127);
    }
    if (sl_tls_client_new(path("ca.pem"), false, &cl, err, sizeof err) < 0) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    while (healthy(cl) < 0 && now_ms() < deadline && waitpid(server, NULL, WNOHANG) == 0)
        sleep_ms(20);
    sl_tls_client_free(cl);
    return now_ms() < deadline ? 0 : -1;
}

static int stop_sluiced(void **state)
{
    int status = -1;
    (void)state;
    if (server > 0) {
        kill(server, SIGTERM);
        waitpid(server, &status, 0);
    }
    sh("rm -rf %s", dir);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static sl_tls_client *client(const char *ca, bool insecure)
{
    sl_tls_client *cl;
    char err[512];
    int rc = sl_tls_client_new(ca ? path(ca) : NULL, insecure, &cl, err, sizeof err);
    if (rc < 0)
        fail_msg("%s", err);
    return cl;
}

static void handshake_and_answer(void **state)
{
    sl_tls_client *cl = client("ca.pem", false);
    sl_http_conn *c;
    const sl_http_response *r;
    uint64_t hs, resumed;
    (void)state;
    assert_int_equal(sl_http_conn_new_tls("127.0.0.1", port, DEADLINE_MS, cl, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/healthz", NULL, 0, &r), 0);
    assert_int_equal(r->status, 200);
    assert_non_null(strstr(r->body, "\"status\""));
    sl_http_conn_tls_counts(c, &hs, &resumed);
    assert_int_equal(hs, 1);
    assert_int_equal(resumed, 0);
    sl_http_conn_free(c);
    sl_tls_client_free(cl);
}

/* A claim and its release, then 50 more requests: all on one handshake. */
static void keep_alive(void **state)
{
    sl_tls_client *cl = client("ca.pem", false);
    sl_http_conn *c;
    const sl_http_response *r;
    uint64_t hs, resumed;
    char location[256];
    int i;
    (void)state;
    assert_int_equal(sl_http_conn_new_tls("127.0.0.1", port, DEADLINE_MS, cl, &c), 0);
    const char *claim = "{\"holder\":\"t\",\"locks\":[{\"mutex\":\"tls-keep-alive\"}]}";
    assert_int_equal(sl_http_conn_request(c, "POST", "/v1/claims", claim, strlen(claim), &r), 0);
    assert_int_equal(r->status, 201);
    assert_non_null(r->location);
    assert_true(r->keep_alive);
    snprintf(location, sizeof location, "%s", r->location);
    assert_int_equal(sl_http_conn_request(c, "DELETE", location, NULL, 0, &r), 0);
    assert_int_equal(r->status, 200);
    assert_non_null(strstr(r->body, "\"released\""));
    for (i = 0; i < 50; i++) {
        assert_int_equal(sl_http_conn_request(c, "GET", "/healthz", NULL, 0, &r), 0);
        assert_int_equal(r->status, 200);
    }
    sl_http_conn_tls_counts(c, &hs, &resumed);
    assert_int_equal(hs, 1);
    sl_http_conn_free(c);
    sl_tls_client_free(cl);
}

/* New connections one after the other: with resume, every one after the
 * first resumes the session the previous one was given; without, none. */
static void session_resumption(void **state)
{
    sl_tls_client *cl = client("ca.pem", false);
    const sl_http_response *r;
    uint64_t hs, resumed;
    int pass, i;
    (void)state;
    for (pass = 0; pass < 2; pass++) {
        sl_http_conn *c;
        assert_int_equal(sl_http_conn_new_tls("127.0.0.1", port, DEADLINE_MS, cl, &c), 0);
        sl_http_conn_set_resume(c, pass == 1);
        for (i = 0; i < 4; i++) {
            assert_int_equal(sl_http_conn_request(c, "GET", "/healthz", NULL, 0, &r), 0);
            assert_int_equal(r->status, 200);
            sl_http_conn_close(c);
        }
        sl_http_conn_tls_counts(c, &hs, &resumed);
        assert_int_equal(hs, 4);
        assert_int_equal(resumed, pass == 1 ? 3 : 0);
        sl_http_conn_free(c);
    }
    sl_tls_client_free(cl);
}

static void untrusted_certificate_refused(void **state)
{
    sl_tls_client *cl = client("other.pem", false);
    sl_http_conn *c;
    const sl_http_response *r;
    uint64_t hs, resumed;
    (void)state;
    assert_int_equal(sl_http_conn_new_tls("127.0.0.1", port, DEADLINE_MS, cl, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/healthz", NULL, 0, &r), SL_HTTP_ETLS);
    assert_null(r);
    const char *e = sl_http_conn_error(c);
    if (!strstr(e, "the server's certificate was refused: unable to get local issuer") ||
        !strstr(e, "other.pem"))
        fail_msg("unexpected error: %s", e);
    sl_http_conn_tls_counts(c, &hs, &resumed);
    assert_int_equal(hs, 0);
    sl_http_conn_free(c);
    sl_tls_client_free(cl);
    /* Only the explicit flag skips the check. */
    cl = client("other.pem", true);
    assert_true(sl_tls_client_insecure(cl));
    assert_int_equal(sl_http_conn_new_tls("127.0.0.1", port, DEADLINE_MS, cl, &c), 0);
    assert_int_equal(sl_http_conn_request(c, "GET", "/healthz", NULL, 0, &r), 0);
    assert_int_equal(r->status, 200);
    sl_http_conn_free(c);
    sl_tls_client_free(cl);
}

static void unreadable_ca_file(void **state)
{
    sl_tls_client *cl = NULL;
    char err[512];
    (void)state;
    assert_int_equal(sl_tls_client_new(path("nothing.pem"), false, &cl, err, sizeof err), -1);
    assert_null(cl);
    if (!strstr(err, "cannot read the CA file") || !strstr(err, "nothing.pem: No such file"))
        fail_msg("unexpected error: %s", err);
    /* A file with no certificate in it. */
    assert_int_equal(sl_tls_client_new(path("srv.ext"), false, &cl, err, sizeof err), -1);
    if (!strstr(err, "cannot read the CA file") || !strstr(err, "srv.ext: "))
        fail_msg("unexpected error: %s", err);
}

/* A listener that accepts and never answers: reports each byte it reads. */
typedef struct silent {
    int lfd, seen[2];
    char port[16];
    pthread_t thread;
} silent;

static void *silent_serve(void *arg)
{
    silent *s = arg;
    char buf[4096];
    int fd = accept(s->lfd, NULL, NULL);
    if (fd < 0)
        return NULL;
    while (read(fd, buf, sizeof buf) > 0) /* the ClientHello, until the client gives up */
        if (write(s->seen[1], "h", 1) != 1)
            break;
    close(fd);
    return NULL;
}

static void silent_start(silent *s)
{
    struct sockaddr_in a;
    socklen_t len = sizeof a;
    memset(s, 0, sizeof *s);
    assert_int_equal(pipe(s->seen), 0);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(s->lfd, 4), 0);
    assert_int_equal(getsockname(s->lfd, (struct sockaddr *)&a, &len), 0);
    snprintf(s->port, sizeof s->port, "%d", ntohs(a.sin_port));
    assert_int_equal(pthread_create(&s->thread, NULL, silent_serve, s), 0);
}

static void silent_stop(silent *s)
{
    pthread_join(s->thread, NULL);
    close(s->lfd);
    close(s->seen[0]);
    close(s->seen[1]);
}

static void handshake_timeout(void **state)
{
    sl_tls_client *cl = client("ca.pem", false);
    silent s;
    sl_http_conn *c;
    const sl_http_response *r;
    int64_t t0;
    (void)state;
    silent_start(&s);
    assert_int_equal(sl_http_conn_new_tls("127.0.0.1", s.port, 200, cl, &c), 0);
    t0 = now_ms();
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), SL_HTTP_ETIMEDOUT);
    assert_true(now_ms() - t0 >= 190 && now_ms() - t0 < DEADLINE_MS);
    assert_string_equal(sl_http_conn_error(c), "timed out: TLS handshake: no answer within 200 ms");
    sl_http_conn_free(c); /* the listener reads EOF and ends */
    silent_stop(&s);
    sl_tls_client_free(cl);
}

typedef struct interrupter {
    silent *s;
    sl_http_conn *c;
} interrupter;

/* Once the listener has the ClientHello, the client waits in its
 * handshake: interrupt it. */
static void *interrupt_in_handshake(void *arg)
{
    interrupter *it = arg;
    char one;
    if (read(it->s->seen[0], &one, 1) == 1)
        sl_http_conn_interrupt(it->c);
    return NULL;
}

static void handshake_interrupted(void **state)
{
    sl_tls_client *cl = client("ca.pem", false);
    silent s;
    interrupter it;
    pthread_t t;
    sl_http_conn *c;
    const sl_http_response *r;
    int64_t t0;
    (void)state;
    silent_start(&s);
    assert_int_equal(sl_http_conn_new_tls("127.0.0.1", s.port, 60000, cl, &c), 0);
    it.s = &s;
    it.c = c;
    assert_int_equal(pthread_create(&t, NULL, interrupt_in_handshake, &it), 0);
    t0 = now_ms();
    assert_int_equal(sl_http_conn_request(c, "GET", "/", NULL, 0, &r), SL_HTTP_EINTERRUPTED);
    assert_true(now_ms() - t0 < DEADLINE_MS);
    pthread_join(t, NULL);
    sl_http_conn_free(c);
    silent_stop(&s);
    sl_tls_client_free(cl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(handshake_and_answer),  cmocka_unit_test(keep_alive),
        cmocka_unit_test(session_resumption),    cmocka_unit_test(untrusted_certificate_refused),
        cmocka_unit_test(unreadable_ca_file),    cmocka_unit_test(handshake_timeout),
        cmocka_unit_test(handshake_interrupted),
    };
    return cmocka_run_group_tests(tests, start_sluiced, stop_sluiced);
}
