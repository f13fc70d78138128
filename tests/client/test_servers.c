/* test_servers.c - libsluice given several servers (shared mode).
 *
 * The list's parsing (SLUICE_SERVER and the server option: each entry
 * checked as one URL is, errors naming the entry and its position, at most
 * SL__SERVERS_MAX), and the failover's rules, against canned servers: a
 * thread on a loopback port that answers every request with one fixed
 * answer (or closes the connection without one) and keeps what it was
 * sent. What is checked is what each server received: which server a call
 * went to, what it was sent again, and what it was not.
 *
 * No sleeps: every wait is a request's own; the only clock checks are the
 * lower bound of a Retry-After and the upper bound of a give-up. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "client_int.h"
#include "sluice/client.h"

#define HEAD_MAX 4096

/* The answers the canned servers give: status line, extra headers, body. */
typedef struct answer {
    const char *status, *headers, *body;
} answer;

static const answer health_ok = {
    "200 OK", "", "{\"status\":\"ok\",\"version\":\"0.1.0\",\"store\":\"x\",\"role\":\"leader\"}"};
static const answer no_leader = {"503 Service Unavailable", "",
                                 "{\"error\":{\"code\":\"no_leader\",\"message\":\"no leader\"}}"};
static const answer no_leader_retry_after = {
    "503 Service Unavailable", "Retry-After: 1\r\n",
    "{\"error\":{\"code\":\"no_leader\",\"message\":\"no leader\"}}"};
static const answer leader_changed = {
    "503 Service Unavailable", "Retry-After: 0\r\n",
    "{\"error\":{\"code\":\"leader_changed\",\"message\":\"leader changed\"}}"};
static const answer leader_unverified = {
    "503 Service Unavailable", "Retry-After: 0\r\n",
    "{\"error\":{\"code\":\"leader_unverified\",\"message\":\"cannot prove the leader\"}}"};
static const answer not_found = {"404 Not Found", "",
                                 "{\"error\":{\"code\":\"not_found\",\"message\":\"no claim\"}}"};
static const answer no_content = {"204 No Content", "", NULL};
static const answer events_empty = {"200 OK", "", "{\"events\":[],\"next\":1}"};
static const answer claim_created = {
    "201 Created", "", "{\"id\":\"abc\",\"state\":\"held\",\"holder\":\"h\",\"locks\":[]}"};
/* Closes the connection without answering. */
static const answer hang_up = {NULL, NULL, NULL};

/* ---- a canned server ------------------------------------------------------------ */

typedef struct canned {
    int fd, port;
    char url[64];
    char answer[1024]; /* the whole HTTP answer; "": close without one */
    long linger_ms;    /* before answering (or closing) */
    pthread_t thread;
    pthread_mutex_t mu;
    int hits;            /* requests received */
    char last[HEAD_MAX]; /* the last one's head and body */
    atomic_int stop;
} canned;

static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
    socklen_t len = sizeof(a);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

/* A port nobody listens on: bound, never listened, closed. */
static int dead_port(void)
{
    int port;
    close(listen_any(&port));
    return port;
}

/* Reads a request's head and its Content-Length body into buf. */
static void read_request(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    char *end = NULL;
    while (n + 1 < cap && !end) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = '\0';
        end = strstr(buf, "\r\n\r\n");
    }
    buf[n] = '\0';
    const char *cl = end ? strstr(buf, "Content-Length: ") : NULL;
    size_t want = end ? (size_t)(end + 4 - buf) + (cl ? strtoul(cl + 16, NULL, 10) : 0) : 0;
    while (n < want && n + 1 < cap) {
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    buf[n] = '\0';
}

static void *canned_main(void *arg)
{
    canned *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd p = {.fd = s->fd, .events = POLLIN};
        if (poll(&p, 1, 20) <= 0)
            continue;
        int conn = accept(s->fd, NULL, NULL);
        if (conn < 0)
            continue;
        char req[HEAD_MAX];
        read_request(conn, req, sizeof(req));
        pthread_mutex_lock(&s->mu);
        s->hits++;
        snprintf(s->last, sizeof(s->last), "%s", req);
        pthread_mutex_unlock(&s->mu);
        if (s->linger_ms)
            sl__sleep_ms(s->linger_ms);
        if (s->answer[0]) {
            ssize_t w = write(conn, s->answer, strlen(s->answer));
            (void)w;
        }
        close(conn);
    }
    return NULL;
}

static void canned_start(canned *s, const answer *a)
{
    memset(s, 0, sizeof(*s));
    if (a->status) {
        const char *body = a->body ? a->body : "";
        snprintf(s->answer, sizeof(s->answer),
                 "HTTP/1.1 %s\r\nContent-Type: application/json\r\nConnection: close\r\n%s"
                 "Content-Length: %zu\r\n\r\n%s",
                 a->status, a->headers, strlen(body), body);
    }
    s->fd = listen_any(&s->port);
    assert_int_equal(listen(s->fd, 16), 0);
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->stop, 0);
    assert_int_equal(pthread_create(&s->thread, NULL, canned_main, s), 0);
}

static void canned_stop(canned *s)
{
    atomic_store(&s->stop, 1);
    pthread_join(s->thread, NULL);
    close(s->fd);
    pthread_mutex_destroy(&s->mu);
}

static int hits(canned *s)
{
    pthread_mutex_lock(&s->mu);
    int n = s->hits;
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* The wait (ms) in the last request's "wait=Nms", or -1. */
static long last_wait(canned *s)
{
    pthread_mutex_lock(&s->mu);
    const char *w = strstr(s->last, "wait=");
    long v = w ? strtol(w + 5, NULL, 10) : -1;
    pthread_mutex_unlock(&s->mu);
    return v;
}

/* A client of the list "a,b[,c]" (NULL entries left out). */
static sl_client *client_of(const char *a, const char *b, const char *c)
{
    char list[256];
    snprintf(list, sizeof(list), "%s,%s%s%s", a, b, c ? "," : "", c ? c : "");
    sl_client_options o = {.server = list, .connect_timeout_ms = 2000};
    sl_client *cl = NULL;
    sl_client_error err;
    if (sl_client_new(&o, &cl, &err) != SL_CLIENT_OK)
        fail_msg("sl_client_new(%s): %s", list, err.message);
    return cl;
}

/* ---- the list ------------------------------------------------------------------ */

static int new_client(const char *server, sl_client **c, sl_client_error *err)
{
    sl_client_options o = {.server = server};
    *c = NULL;
    return sl_client_new(&o, c, err);
}

static void test_one_url_as_ever(void **state)
{
    (void)state;
    sl_client *c = NULL;
    sl_client_error err;
    assert_int_equal(new_client("127.0.0.1:9/", &c, &err), SL_CLIENT_OK);
    assert_int_equal(sl_client_server_count(c), 1);
    assert_string_equal(sl_client_server_at(c, 0), "http://127.0.0.1:9");
    assert_string_equal(sl_client_server(c), "http://127.0.0.1:9");
    assert_null(sl_client_server_at(c, 1));
    sl_client_free(c);
    /* The message of one bad URL is the one it always was. */
    assert_int_equal(new_client("ftp://x", &c, &err), SL_CLIENT_EINVAL);
    assert_string_equal(err.message, "\"ftp://x\" is not a server URL: use http://HOST:PORT "
                                     "(from --server or SLUICE_SERVER)");
    assert_int_equal(new_client(" http://a", &c, &err), SL_CLIENT_EINVAL);
}

static void test_list_normalised(void **state)
{
    (void)state;
    sl_client *c = NULL;
    sl_client_error err;
    assert_int_equal(new_client(" http://a:1 ,b:2//,\thttps://c:3/ ", &c, &err), SL_CLIENT_OK);
    assert_int_equal(sl_client_server_count(c), 3);
    assert_string_equal(sl_client_server_at(c, 0), "http://a:1");
    assert_string_equal(sl_client_server_at(c, 1), "http://b:2");
    assert_string_equal(sl_client_server_at(c, 2), "https://c:3");
    assert_string_equal(sl_client_server(c), "http://a:1"); /* the first, before any answered */
    sl_client_free(c);

    /* From the environment, when the option is not set. */
    setenv("SLUICE_SERVER", "http://x:1,http://y:2", 1);
    assert_int_equal(sl_client_new(NULL, &c, &err), SL_CLIENT_OK);
    assert_int_equal(sl_client_server_count(c), 2);
    assert_string_equal(sl_client_server_at(c, 1), "http://y:2");
    sl_client_free(c);
    unsetenv("SLUICE_SERVER");
}

static void test_list_errors_name_the_entry(void **state)
{
    (void)state;
    sl_client *c = NULL;
    sl_client_error err;
    setenv("SLUICE_SERVER", "http://a:1,htp://b", 1);
    assert_int_equal(sl_client_new(NULL, &c, &err), SL_CLIENT_EINVAL);
    assert_null(c);
    assert_int_equal(err.rc, SL_CLIENT_EINVAL);
    assert_string_equal(err.message, "SLUICE_SERVER entry 2 (\"htp://b\") is not an http:// URL: "
                                     "give each server as http://HOST:PORT, separated by commas");
    unsetenv("SLUICE_SERVER");

    assert_int_equal(new_client("http://a,,http://b", &c, &err), SL_CLIENT_EINVAL);
    assert_non_null(strstr(err.message, "--server entry 2 is empty"));
    assert_int_equal(new_client("http://a,", &c, &err), SL_CLIENT_EINVAL);
    assert_non_null(strstr(err.message, "--server entry 2 is empty"));
    assert_int_equal(new_client(",http://a", &c, &err), SL_CLIENT_EINVAL);
    assert_non_null(strstr(err.message, "--server entry 1 is empty"));
    assert_int_equal(new_client("http://a b,http://c", &c, &err), SL_CLIENT_EINVAL);
    assert_non_null(strstr(err.message, "--server entry 1 (\"http://a b\")"));
    assert_int_equal(new_client("http://a,http://b?x=1", &c, &err), SL_CLIENT_EINVAL);
    assert_non_null(strstr(err.message, "entry 2 (\"http://b?x=1\")"));
}

static void test_list_is_bounded(void **state)
{
    (void)state;
    char list[512] = "";
    for (int i = 0; i < SL__SERVERS_MAX; i++)
        snprintf(list + strlen(list), sizeof(list) - strlen(list), "%shttp://h%d:1", i ? "," : "",
                 i);
    sl_client *c = NULL;
    sl_client_error err;
    assert_int_equal(new_client(list, &c, &err), SL_CLIENT_OK);
    assert_int_equal(sl_client_server_count(c), SL__SERVERS_MAX);
    sl_client_free(c);
    strcat(list, ",http://one-more:1");
    assert_int_equal(new_client(list, &c, &err), SL_CLIENT_EINVAL);
    assert_non_null(strstr(err.message, "--server names 17 servers; at most 16"));
}

/* ---- failover ------------------------------------------------------------------ */

/* 503 no_leader: the next server, which is then kept for the next call. */
static void test_between_leaders_moves_on_and_stays(void **state)
{
    (void)state;
    canned a, b;
    canned_start(&a, &no_leader);
    canned_start(&b, &health_ok);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_status *st = NULL;
    sl_client_error err;
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_OK);
    assert_string_equal(st->role, "leader");
    sl_client_status_free(st);
    assert_string_equal(sl_client_server(c), b.url);
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_OK);
    sl_client_status_free(st);
    assert_int_equal(hits(&a), 1);
    assert_int_equal(hits(&b), 2);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* A refused connection first costs no pause: the next server at once. */
static void test_dead_server_first(void **state)
{
    (void)state;
    canned b;
    canned_start(&b, &health_ok);
    char dead[64];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", dead_port());
    sl_client *c = client_of(dead, b.url, NULL);
    sl_client_status *st = NULL;
    sl_client_error err;
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_OK);
    sl_client_status_free(st);
    assert_string_equal(sl_client_server(c), b.url);
    sl_client_free(c);
    canned_stop(&b);
}

/* Any other answer is the cluster's: returned, no other server asked. */
static void test_other_answers_are_returned(void **state)
{
    (void)state;
    canned a, b;
    canned_start(&a, &not_found);
    canned_start(&b, &claim_created);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_claim *claim = NULL;
    sl_client_error err;
    assert_int_equal(sl_client_claim_get(c, "abc", 0, NULL, &claim, &err), SL_CLIENT_EHTTP);
    assert_int_equal(err.status, 404);
    assert_string_equal(err.code, "not_found");
    assert_int_equal(hits(&b), 0);
    assert_string_equal(sl_client_server(c), a.url);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* Deleting a configuration is not sent twice once it may have arrived
 * (the connection closed without an answer); it moves on when refused. */
static void test_delete_of_a_configuration_is_not_resent(void **state)
{
    (void)state;
    canned a, b;
    canned_start(&a, &hang_up);
    canned_start(&b, &no_content);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_error err;
    assert_int_equal(sl_client_semaphore_delete(c, "db", &err), SL_CLIENT_ECONNECT);
    assert_int_equal(hits(&a), 1);
    assert_int_equal(hits(&b), 0);
    sl_client_free(c);

    char dead[64];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", dead_port());
    c = client_of(dead, b.url, NULL);
    assert_int_equal(sl_client_semaphore_delete(c, "db", &err), SL_CLIENT_OK);
    assert_int_equal(hits(&b), 1);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* A claim's release after the same break is sent again (an ended claim is
 * answered as it is). */
static void test_release_is_resent(void **state)
{
    (void)state;
    canned a, b;
    canned_start(&a, &hang_up);
    canned_start(&b, &claim_created);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_error err;
    assert_int_equal(sl_client_claim_release(c, "abc", NULL, &err), SL_CLIENT_OK);
    assert_int_equal(hits(&a), 1);
    assert_int_equal(hits(&b), 1);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* A release by holder prefix is not sent twice once it may have arrived:
 * sent again, it would count only what the first had left. It moves on
 * when refused, with the prefix escaped in its query. */
static void test_release_by_prefix_is_not_resent(void **state)
{
    (void)state;
    static const answer counts = {"200 OK", "", "{\"released\":2,\"withdrawn\":1,\"skipped\":0}"};
    canned a, b;
    canned_start(&a, &hang_up);
    canned_start(&b, &counts);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_error err;
    sl_client_release_counts n;
    assert_int_equal(sl_client_claims_release(c, "run-42/", &n, &err), SL_CLIENT_ECONNECT);
    assert_int_equal(hits(&a), 1);
    assert_int_equal(hits(&b), 0);
    sl_client_free(c);

    char dead[64];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", dead_port());
    c = client_of(dead, b.url, NULL);
    assert_int_equal(sl_client_claims_release(c, "run 42/&x", &n, &err), SL_CLIENT_OK);
    assert_int_equal(hits(&b), 1);
    assert_int_equal(n.released, 2);
    assert_int_equal(n.withdrawn, 1);
    pthread_mutex_lock(&b.mu);
    assert_non_null(strstr(b.last, "DELETE /v1/claims?holder_prefix=run%2042%2F%26x HTTP/1.1"));
    pthread_mutex_unlock(&b.mu);
    sl_client_release_counts_free(&n);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* Clearing a queue is not sent twice once it may have arrived either: sent
 * again, it would count only what the first had left. It moves on when
 * refused, with the lock and the prefix escaped in its query. */
static void test_queue_clear_is_not_resent(void **state)
{
    (void)state;
    static const answer cleared = {"200 OK", "", "{\"canceled\":3}"};
    canned a, b;
    canned_start(&a, &hang_up);
    canned_start(&b, &cleared);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_error err;
    sl_client_queue_cleared n;
    assert_int_equal(sl_client_queue_clear(c, "sem/db", NULL, &n, &err), SL_CLIENT_ECONNECT);
    assert_int_equal(hits(&a), 1);
    assert_int_equal(hits(&b), 0);
    sl_client_free(c);

    char dead[64];
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", dead_port());
    c = client_of(dead, b.url, NULL);
    assert_int_equal(sl_client_queue_clear(c, "sem/k=v", "run 42/&x", &n, &err), SL_CLIENT_OK);
    assert_int_equal(hits(&b), 1);
    assert_int_equal(n.canceled, 3);
    pthread_mutex_lock(&b.mu);
    assert_non_null(strstr(b.last, "DELETE /v1/queue?lock=sem%2Fk%3Dv&holder_prefix=run%2042%2F%26x "
                                   "HTTP/1.1"));
    pthread_mutex_unlock(&b.mu);
    sl_client_queue_cleared_free(&n);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* A creation is sent again with the same Idempotency-Key, every time. */
static void test_creation_resent_with_its_key(void **state)
{
    (void)state;
    canned a, b, d;
    canned_start(&a, &leader_changed);
    canned_start(&b, &leader_changed);
    canned_start(&d, &claim_created);
    sl_client *c = client_of(a.url, b.url, d.url);
    sl_client_lock_req lock = {.name = "m"};
    sl_client_claim_req req = {.holder = "h", .locks = &lock, .nlocks = 1};
    sl_client_claim *claim = NULL;
    sl_client_error err;
    assert_int_equal(sl_client_claim_create(c, &req, &claim, &err), SL_CLIENT_OK);
    assert_string_equal(claim->id, "abc");
    sl_client_claim_free(claim);
    char ka[64] = "", kb[64] = "", kd[64] = "";
    canned *s[] = {&a, &b, &d};
    char *k[] = {ka, kb, kd};
    for (int i = 0; i < 3; i++) {
        const char *h = strstr(s[i]->last, "Idempotency-Key: ");
        assert_non_null(h);
        snprintf(k[i], 64, "%.*s", (int)strcspn(h + 17, "\r\n"), h + 17);
    }
    assert_int_equal(strlen(ka), 32);
    assert_string_equal(ka, kb);
    assert_string_equal(ka, kd);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
    canned_stop(&d);
}

/* A server that cannot prove the leader it would relay to (503
 * leader_unverified): the next server is asked. */
static void test_leader_unverified_goes_to_the_next(void **state)
{
    (void)state;
    canned a, b;
    canned_start(&a, &leader_unverified);
    canned_start(&b, &claim_created);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_lock_req lock = {.name = "m"};
    sl_client_claim_req req = {.holder = "h", .locks = &lock, .nlocks = 1};
    sl_client_claim *claim = NULL;
    sl_client_error err;
    assert_int_equal(sl_client_claim_create(c, &req, &claim, &err), SL_CLIENT_OK);
    assert_string_equal(claim->id, "abc");
    assert_int_equal(hits(&a), 1);
    sl_client_claim_free(claim);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* Retry-After is honoured: the next attempt comes no sooner. */
static void test_retry_after_is_honoured(void **state)
{
    (void)state;
    canned a, b;
    canned_start(&a, &no_leader_retry_after);
    canned_start(&b, &health_ok);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_status *st = NULL;
    sl_client_error err;
    int64_t t0 = sl__now_ms();
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_OK);
    assert_true(sl__now_ms() - t0 >= 950);
    sl_client_status_free(st);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* A long poll cut off resumes on the next server with what is left. */
static void test_long_poll_resumes_with_the_rest(void **state)
{
    (void)state;
    canned a, b;
    canned_start(&a, &hang_up);
    a.linger_ms = 300;
    canned_start(&b, &events_empty);
    sl_client *c = client_of(a.url, b.url, NULL);
    sl_client_event_page page;
    sl_client_error err;
    assert_int_equal(sl_client_events(c, 0, NULL, 0, 5000, &page, &err), SL_CLIENT_OK);
    assert_int_equal(page.next, 1);
    sl_client_event_page_free(&page);
    assert_int_equal(last_wait(&a), 5000);
    long rest = last_wait(&b);
    assert_true(rest > 0 && rest <= 4700);
    sl_client_free(c);
    canned_stop(&a);
    canned_stop(&b);
}

/* Nothing answers: the last failure, said for the whole list, by the
 * caller's deadline. */
static void test_gives_up_by_the_deadline(void **state)
{
    (void)state;
    char d1[64], d2[64];
    snprintf(d1, sizeof(d1), "http://127.0.0.1:%d", dead_port());
    snprintf(d2, sizeof(d2), "http://127.0.0.1:%d", dead_port());
    sl_client *c = client_of(d1, d2, NULL);
    c->call_deadline = sl__now_ms() + 400;
    sl_client_status *st = NULL;
    sl_client_error err;
    int64_t t0 = sl__now_ms();
    assert_int_equal(sl_client_status_get(c, &st, &err), SL_CLIENT_ECONNECT);
    assert_true(sl__now_ms() - t0 < 5000);
    assert_null(st);
    assert_non_null(strstr(err.message, "none of the 2 servers answered in "));
    assert_non_null(strstr(err.message, "cannot reach the sluice server at http://127.0.0.1:"));
    /* E15: said to a program that links the library, which has no --server */
    assert_null(strstr(err.message, "--server"));
    assert_non_null(strstr(err.message, "(is sluiced running, at that URL?)"));
    sl_client_free(c);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    unsetenv("SLUICE_SERVER");
    unsetenv("SLUICE_TOKEN");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_url_as_ever),
        cmocka_unit_test(test_list_normalised),
        cmocka_unit_test(test_list_errors_name_the_entry),
        cmocka_unit_test(test_list_is_bounded),
        cmocka_unit_test(test_between_leaders_moves_on_and_stays),
        cmocka_unit_test(test_dead_server_first),
        cmocka_unit_test(test_other_answers_are_returned),
        cmocka_unit_test(test_delete_of_a_configuration_is_not_resent),
        cmocka_unit_test(test_release_is_resent),
        cmocka_unit_test(test_release_by_prefix_is_not_resent),
        cmocka_unit_test(test_queue_clear_is_not_resent),
        cmocka_unit_test(test_creation_resent_with_its_key),
        cmocka_unit_test(test_retry_after_is_honoured),
        cmocka_unit_test(test_long_poll_resumes_with_the_rest),
        cmocka_unit_test(test_gives_up_by_the_deadline),
        cmocka_unit_test(test_leader_unverified_goes_to_the_next),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
