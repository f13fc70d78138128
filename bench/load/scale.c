/* scale.c - the scale run's phases and report (see scale.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "fill.h"
#include "http.h"
#include "json_scan.h"
#include "scale.h"
#include "workload.h"

#define PROBE_MS 2                  /* between attempts while a restart loads */
#define SERVE_DEADLINE_S 300.0      /* a restart that takes longer has failed */
#define REQUEST_TIMEOUT_MS 60000
#define SAMPLES 100                 /* locks whose claims are read back after a restart */
#define CLAIM_PATH "/v1/claims/"
#define KIB 1024.0
#define MIB (1024.0 * 1024.0)

/* What one server life (start, or a restart) measured. */
typedef struct life {
    const char *how;   /* "SIGTERM", "SIGKILL" */
    double stop_s;     /* from the signal until the old process was reaped */
    int exit_status;   /* waitpid's status of the old process */
    double health_s;   /* from the fork until GET /healthz answered 200 */
    double serve_s;    /* ... and a GET of a held claim answered it right */
    long load_ms;      /* the server's "store loaded in N ms"; -1 unknown */
    long rss_kb;
} life;

typedef struct scale {
    sl_scale_config *cfg;
    sl_fill_lock *locks;
    sl_http_conn *conn; /* the control connection */
    int failed;
    uint64_t held, pending; /* what the server must hold now */
    long rss_start, rss_empty, rss_full;
    sl_load_result *lat[6]; /* uncontended, contended: empty, full, full after the restarts */
    sl_fill_result fill;
    life lives[2];
    int nlives;
    sl_hist release, next; /* phase 6 */
    int handed;
} scale;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void check_failed(scale *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void check_failed(scale *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("  FAILED: ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
    s->failed = 1;
}

/* VmRSS of /proc/PID/status in KiB, or -1. */
static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    long kb = -1;
    FILE *f;
    if (pid <= 0)
        return -1;
    snprintf(path, sizeof path, "/proc/%ld/status", (long)pid);
    if (!(f = fopen(path, "r")))
        return -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

static const char *fmt_ns(uint64_t ns, char *buf, size_t cap)
{
    if (ns < 1000000)
        snprintf(buf, cap, "%.1f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, cap, "%.2f ms", (double)ns / 1e6);
    else
        snprintf(buf, cap, "%.2f s", (double)ns / 1e9);
    return buf;
}

static const char *fmt_rss(long kb, char *buf, size_t cap)
{
    if (kb < 0)
        snprintf(buf, cap, "- (no server pid)");
    else
        snprintf(buf, cap, "%.1f MiB", (double)kb / KIB);
    return buf;
}

/* ---- requests on the control connection ---------------------------------- */

static int split_address(const char *address, char *host, size_t hcap, char *port, size_t pcap)
{
    const char *colon = strrchr(address, ':');
    size_t hlen = colon ? (size_t)(colon - address) : 0;
    if (!colon || hlen == 0 || hlen >= hcap || strlen(colon + 1) >= pcap)
        return -1;
    memcpy(host, address, hlen);
    host[hlen] = '\0';
    if (host[0] == '[' && hlen > 2) {
        memmove(host, host + 1, hlen - 2);
        host[hlen - 2] = '\0';
    }
    memcpy(port, colon + 1, strlen(colon + 1) + 1);
    return 0;
}

static int open_conn(const char *address, int timeout_ms, sl_http_conn **out)
{
    char host[256], port[16];
    if (split_address(address, host, sizeof host, port, sizeof port) < 0)
        return -1;
    return sl_http_conn_new(host, port, timeout_ms, out);
}

/* GET target; 0 with *r when it answered want. */
static int get(sl_http_conn *c, const char *target, int want, const sl_http_response **r)
{
    return sl_http_conn_request(c, "GET", target, NULL, 0, r) == 0 && (*r)->status == want ? 0 : -1;
}

/* The claim's state is want; when held, its first lock's token is token
 * (if token is not 0); when pending, its first lock's position is
 * position (if not 0). why gets what differed. */
static int claim_is(sl_http_conn *c, const char *id, const char *want, uint64_t token,
                    int64_t position, char *why, size_t cap)
{
    char target[128];
    const sl_http_response *r = NULL;
    sl_json_span body, v, locks, lock0;
    sl_json_iter it;
    int64_t n;
    snprintf(target, sizeof target, CLAIM_PATH "%s", id);
    if (get(c, target, 200, &r) < 0) {
        snprintf(why, cap, "GET %s: %s", target,
                 r ? r->body : sl_http_conn_error(c));
        return -1;
    }
    body = sl_json_span_of(r->body, r->body_len);
    if (sl_json_member(body, "state", &v) < 0 || !sl_json_is_string(v, want) ||
        sl_json_member(body, "locks", &locks) < 0 || sl_json_iter_init(&it, locks) < 0 ||
        sl_json_iter_next(&it, &lock0) != 1)
        goto wrong;
    if (token && (sl_json_member(lock0, "token", &v) < 0 || sl_json_int64(v, &n) < 0 ||
                  (uint64_t)n != token))
        goto wrong;
    if (position && (sl_json_member(lock0, "position", &v) < 0 || sl_json_int64(v, &n) < 0 ||
                     n != position))
        goto wrong;
    return 0;
wrong:
    snprintf(why, cap, "%s should be %s (token %llu, position %lld): %.300s", id, want,
             (unsigned long long)token, (long long)position, r->body);
    return -1;
}

/* claims.held and claims.pending of GET /v1/status (the leader's, from any
 * server of a cluster). */
static int server_counts(scale *s, int64_t *held, int64_t *pending)
{
    const sl_http_response *r;
    sl_json_span claims, v;
    if (get(s->conn, "/v1/status", 200, &r) < 0 ||
        sl_json_member(sl_json_span_of(r->body, r->body_len), "claims", &claims) < 0 ||
        sl_json_member(claims, "held", &v) < 0 || sl_json_int64(v, held) < 0 ||
        sl_json_member(claims, "pending", &v) < 0 || sl_json_int64(v, pending) < 0)
        return -1;
    return 0;
}

static void check_counts(scale *s, const char *when)
{
    int64_t held, pending;
    if (server_counts(s, &held, &pending) < 0) {
        check_failed(s, "%s: GET /v1/status: no claim counts (%s)", when,
                     sl_http_conn_error(s->conn));
        return;
    }
    printf("  %s: the server counts %lld held and %lld pending claims (expected %llu and %llu)\n",
           when, (long long)held, (long long)pending, (unsigned long long)s->held,
           (unsigned long long)s->pending);
    if ((uint64_t)held != s->held || (uint64_t)pending != s->pending)
        check_failed(s, "%s: the counts differ from the claims created", when);
}

/* The holder and the last waiter of SAMPLES locks spread over all. */
static void check_samples(scale *s, const char *when)
{
    const sl_scale_config *cfg = s->cfg;
    int n = cfg->locks < SAMPLES ? cfg->locks : SAMPLES, bad = 0;
    char why[600];
    for (int i = 0; i < n; i++) {
        const sl_fill_lock *l = &s->locks[(int)((long)i * cfg->locks / n)];
        if (claim_is(s->conn, l->holder, "held", l->token, 0, why, sizeof why) < 0 ||
            claim_is(s->conn, l->last, "pending", 0, cfg->waiters, why, sizeof why) < 0) {
            if (!bad++)
                check_failed(s, "%s: %s", when, why);
        }
    }
    printf("  %s: %d of %d sampled locks as created (holder held with its token, last waiter "
           "at position %d)\n",
           when, n - bad, n, cfg->waiters);
}

/* ---- phases 1 and 3: latency --------------------------------------------- */

static void print_latency(const char *label, const sl_load_result *r, const sl_load_result *base)
{
    char a[32], b[32], c[32], d[32], e[32];
    double rate = r->seconds > 0 ? (double)r->cycles / r->seconds : 0;
    printf("  %-12s %3d clients %8.0f cycles/s  cycle p50 %9s p99 %9s p99.9 %9s", label,
           r->workload.clients, rate, fmt_ns(sl_hist_quantile(&r->cycle, 0.5), a, sizeof a),
           fmt_ns(sl_hist_quantile(&r->cycle, 0.99), b, sizeof b),
           fmt_ns(sl_hist_quantile(&r->cycle, 0.999), c, sizeof c));
    if (r->workload.kind == SL_WORKLOAD_CONTENDED)
        printf("  handoff p50 %9s p99 %9s", fmt_ns(sl_hist_quantile(&r->handoff, 0.5), d, sizeof d),
               fmt_ns(sl_hist_quantile(&r->handoff, 0.99), e, sizeof e));
    if (r->server_cpu_s >= 0 && r->cycles)
        printf("  server cpu/c %.1f us", r->server_cpu_s / (double)r->cycles * 1e6);
    if (base && base->cycles && r->cycles) {
        double p50 = (double)sl_hist_quantile(&r->cycle, 0.5) /
                     (double)sl_hist_quantile(&base->cycle, 0.5);
        double p99 = (double)sl_hist_quantile(&r->cycle, 0.99) /
                     (double)sl_hist_quantile(&base->cycle, 0.99);
        double brate = (double)base->cycles / base->seconds;
        printf("\n  %-12s vs empty: cycle p50 %.2fx, p99 %.2fx, cycles/s %.2fx", "", p50, p99,
               rate / brate);
    }
    printf("\n");
    fflush(stdout);
}

/* Runs kind with clients on fresh mutexes named PREFIX/lat-SLOT/...;
 * s->lat[slot] keeps the result. */
static void latency(scale *s, int slot, sl_workload_kind kind, int clients)
{
    const sl_scale_config *cfg = s->cfg;
    sl_workload w = {kind, clients, 1};
    char prefix[SL_LOAD_NAME_MAX];
    sl_load_config lc = {&sl_load_backend_sluice, cfg->address, prefix,
                         cfg->warmup_s,           cfg->duration_s, cfg->server_pid};
    sl_load_result *r = s->lat[slot];
    snprintf(prefix, sizeof prefix, "%s/lat-%d", cfg->prefix, slot);
    if (sl_workload_run(&lc, &w, r) < 0 || !sl_load_result_ok(r)) {
        check_failed(s, "%s %d: %s", sl_workload_name(kind), clients,
                     r->first_error[0] ? r->first_error : "a check failed");
        return;
    }
    print_latency(sl_workload_name(kind), r, slot >= 2 ? s->lat[slot % 2] : NULL);
}

static void latency_runs(scale *s, int base)
{
    latency(s, base, SL_WORKLOAD_UNCONTENDED, s->cfg->clients);
    latency(s, base + 1, SL_WORKLOAD_CONTENDED, s->cfg->contended_clients);
}

/* ---- phase 2: fill ------------------------------------------------------- */

static int fill(scale *s)
{
    const sl_scale_config *cfg = s->cfg;
    sl_fill_config fc = {cfg->address,    cfg->prefix,          cfg->locks,
                         cfg->waiters,    cfg->fill_connections, cfg->fill_depth};
    sl_fill_result *r = &s->fill;
    if (sl_fill_run(&fc, s->locks, r) < 0) {
        check_failed(s, "fill: %s", r->error);
        return -1;
    }
    s->held = r->held;
    s->pending = r->pending;
    printf("fill: %llu claims in %.1f s: %.0f claims/s over %d connections with %d requests in "
           "flight each; answered %llu held and %llu pending, as they should\n",
           (unsigned long long)r->created, r->seconds, (double)r->created / r->seconds,
           cfg->fill_connections < cfg->locks ? cfg->fill_connections : cfg->locks,
           cfg->fill_depth, (unsigned long long)r->held, (unsigned long long)r->pending);
    return 0;
}

/* ---- phases 4 and 5: restart --------------------------------------------- */

/* The server's "store ... loaded in N ms" from its log, or -1. */
static long load_ms(const char *log_path)
{
    char line[1024];
    long ms = -1;
    FILE *f = fopen(log_path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, " loaded in ");
        if (p && sscanf(p, " loaded in %ld ms", &ms) == 1)
            break;
    }
    fclose(f);
    return ms;
}

/* Polls until the new server answers /healthz, then a GET of lock 0's
 * holder; fills lv's times. -1 when it exited or never served. */
static int wait_serving(scale *s, double t0, life *lv)
{
    const sl_fill_lock *l0 = &s->locks[0];
    char why[600] = "";
    pid_t pid = s->cfg->spawn->pid;
    int status;
    while (now_s() - t0 < SERVE_DEADLINE_S) {
        sl_http_conn *c;
        const sl_http_response *r;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            check_failed(s, "the restarted server exited (status %d) before serving", status);
            s->cfg->spawn->pid = 0;
            return -1;
        }
        if (open_conn(s->cfg->address, 1000, &c) == 0) {
            bool ok = get(c, "/healthz", 200, &r) == 0;
            if (ok && lv->health_s == 0)
                lv->health_s = now_s() - t0;
            if (ok && claim_is(c, l0->holder, "held", l0->token, 0, why, sizeof why) == 0) {
                lv->serve_s = now_s() - t0;
                sl_http_conn_free(c);
                return 0;
            }
            sl_http_conn_free(c);
        }
        sleep_ms(PROBE_MS);
    }
    check_failed(s, "the restarted server did not serve within %.0f s (%s)", SERVE_DEADLINE_S,
                 why);
    return -1;
}

static void print_life(const life *lv)
{
    char a[48];
    printf("%s restart: the old server %s after %.2f s; the new one answered /healthz %.2f s "
           "after its fork, and a held claim %.2f s after",
           lv->how, WIFEXITED(lv->exit_status) ? "exited" : "was killed", lv->stop_s, lv->health_s,
           lv->serve_s);
    if (lv->load_ms >= 0)
        printf(" (its log: store loaded in %ld ms)", lv->load_ms);
    printf("; RSS %s\n", fmt_rss(lv->rss_kb, a, sizeof a));
    fflush(stdout);
}

static void restart(scale *s, bool crash)
{
    sl_scale_config *cfg = s->cfg;
    life *lv = &s->lives[s->nlives++];
    sl_spawn_opts o = cfg->spawn_opts;
    char log_path[320], err[512];
    double t0;
    memset(lv, 0, sizeof *lv);
    lv->how = crash ? "SIGKILL" : "SIGTERM";
    snprintf(log_path, sizeof log_path, "%s/restart-%d.log", cfg->spawn->dir, s->nlives);
    o.log_path = log_path;
    sl_http_conn_free(s->conn); /* its connection dies with the server */
    s->conn = NULL;
    t0 = now_s();
    lv->exit_status = sl_spawn_halt(cfg->spawn, crash);
    lv->stop_s = now_s() - t0;
    if (!crash && (lv->exit_status == -1 || !WIFEXITED(lv->exit_status) ||
                   WEXITSTATUS(lv->exit_status) != 0))
        check_failed(s, "sluiced did not exit with status 0 on SIGTERM (status %d)",
                     lv->exit_status);
    t0 = now_s();
    if (sl_spawn_relaunch(cfg->binary, &o, cfg->spawn, err, sizeof err) < 0) {
        check_failed(s, "%s", err);
        return;
    }
    cfg->server_pid = cfg->spawn->pid;
    if (wait_serving(s, t0, lv) < 0)
        return;
    lv->load_ms = load_ms(log_path);
    lv->rss_kb = rss_kb(cfg->server_pid);
    print_life(lv);
    if (open_conn(cfg->address, REQUEST_TIMEOUT_MS, &s->conn) < 0) {
        check_failed(s, "cannot connect to %s", cfg->address);
        return;
    }
    check_counts(s, crash ? "after SIGKILL" : "after SIGTERM");
    check_samples(s, crash ? "after SIGKILL" : "after SIGTERM");
}

/* ---- phase 6: handoff on loaded locks ------------------------------------ */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Releases lock i's holder; its first waiter must hold it next, with the
 * next token. */
static int hand_on(scale *s, sl_fill_lock *l, char *why, size_t cap)
{
    char target[128];
    const sl_http_response *r = NULL;
    sl_json_span v;
    int64_t t0 = now_ns(), t1;
    snprintf(target, sizeof target, CLAIM_PATH "%s", l->holder);
    if (sl_http_conn_request(s->conn, "DELETE", target, NULL, 0, &r) < 0 || r->status != 200 ||
        sl_json_member(sl_json_span_of(r->body, r->body_len), "state", &v) < 0 ||
        !sl_json_is_string(v, "released")) {
        snprintf(why, cap, "DELETE %s: %s", target, r ? r->body : sl_http_conn_error(s->conn));
        return -1;
    }
    t1 = now_ns();
    sl_hist_record(&s->release, (uint64_t)(t1 - t0));
    if (claim_is(s->conn, l->second, "held", l->token + 1, 0, why, cap) < 0)
        return -1;
    sl_hist_record(&s->next, (uint64_t)(now_ns() - t1));
    memcpy(l->holder, l->second, sizeof l->holder);
    l->token++;
    s->pending--;
    return 0;
}

static void handoffs(scale *s)
{
    const sl_scale_config *cfg = s->cfg;
    int n = cfg->handoffs < cfg->locks ? cfg->handoffs : cfg->locks, bad = 0;
    char why[600], a[32], b[32], c[32], d[32];
    if (n <= 0)
        return;
    for (int i = 0; i < n; i++) {
        sl_fill_lock *l = &s->locks[(int)((long)i * cfg->locks / n)];
        if (hand_on(s, l, why, sizeof why) < 0 && !bad++)
            check_failed(s, "handoff: %s", why);
    }
    s->handed = n - bad;
    printf("handoff on loaded mutexes: %d of %d holders released, each mutex then held by its "
           "first waiter with the next token; DELETE p50 %s p99 %s, then GET of the new holder "
           "p50 %s p99 %s\n",
           n - bad, n, fmt_ns(sl_hist_quantile(&s->release, 0.5), a, sizeof a),
           fmt_ns(sl_hist_quantile(&s->release, 0.99), b, sizeof b),
           fmt_ns(sl_hist_quantile(&s->next, 0.5), c, sizeof c),
           fmt_ns(sl_hist_quantile(&s->next, 0.99), d, sizeof d));
    check_counts(s, "after the handoffs");
}

/* ---- the report ---------------------------------------------------------- */

static void print_targets(const scale *s)
{
    const sl_scale_config *cfg = s->cfg;
    uint64_t claims = s->fill.created;
    printf("\ntargets (information, not checks)\n");
    if (s->rss_full > 0 && s->rss_empty > 0 && claims)
        printf("  memory:  %.1f MiB with %llu claims (target < 1024 MiB: %s); %.0f bytes per "
               "claim over the empty server's %.1f MiB\n",
               (double)s->rss_full / KIB, (unsigned long long)claims,
               s->rss_full < 1024L * 1024L ? "met" : "MISSED",
               (double)(s->rss_full - s->rss_empty) * KIB / (double)claims,
               (double)s->rss_empty / KIB);
    else
        printf("  memory:  - (give --server-pid)\n");
    for (int slot = 2; slot <= 4; slot += 2)
        if (s->lat[0]->cycles && s->lat[slot]->cycles) {
            double p50 = (double)sl_hist_quantile(&s->lat[slot]->cycle, 0.5) /
                         (double)sl_hist_quantile(&s->lat[0]->cycle, 0.5);
            printf("  latency: uncontended cycle p50 %.2fx the empty server's with %llu claims%s "
                   "(target <= 3x: %s)\n",
                   p50, (unsigned long long)claims, slot == 4 ? ", after the restarts" : "",
                   p50 <= 3 ? "met" : "MISSED");
        }
    for (int i = 0; i < s->nlives; i++)
        if (s->lives[i].serve_s > 0)
            printf("  restart: serving %.2f s after the fork, after %s (target < 5 s: %s)\n",
                   s->lives[i].serve_s, s->lives[i].how, s->lives[i].serve_s < 5 ? "met" : "MISSED");
    if (!cfg->spawn)
        printf("  restart: - (the server was not started here: use --sluiced)\n");
}

/* ---- the run ------------------------------------------------------------- */

static int setup(scale *s, sl_scale_config *cfg)
{
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    s->locks = calloc((size_t)cfg->locks, sizeof *s->locks);
    for (int i = 0; i < 6; i++)
        if (!(s->lat[i] = calloc(1, sizeof *s->lat[i])))
            return -1;
    sl_hist_init(&s->release);
    sl_hist_init(&s->next);
    if (!s->locks) {
        fprintf(stderr, "sluice-load: out of memory for %d locks\n", cfg->locks);
        return -1;
    }
    if (open_conn(cfg->address, REQUEST_TIMEOUT_MS, &s->conn) < 0) {
        fprintf(stderr, "sluice-load: \"%s\" is not HOST:PORT\n", cfg->address);
        return -1;
    }
    return 0;
}

static void teardown(scale *s)
{
    sl_http_conn_free(s->conn);
    free(s->locks);
    for (int i = 0; i < 6; i++)
        free(s->lat[i]);
}

static void phases(scale *s)
{
    sl_scale_config *cfg = s->cfg;
    char a[48];
    s->rss_start = rss_kb(cfg->server_pid);
    printf("empty server: RSS %s at the start\n", fmt_rss(s->rss_start, a, sizeof a));
    latency_runs(s, 0);
    s->rss_empty = rss_kb(cfg->server_pid);
    printf("  RSS %s after the latency runs\n", fmt_rss(s->rss_empty, a, sizeof a));
    if (fill(s) < 0)
        return;
    s->rss_full = rss_kb(cfg->server_pid);
    printf("full server: RSS %s", fmt_rss(s->rss_full, a, sizeof a));
    if (s->rss_full > 0 && s->rss_empty > 0)
        printf(", %.0f bytes per claim over the empty server",
               (double)(s->rss_full - s->rss_empty) * KIB / (double)s->fill.created);
    printf("\n");
    check_counts(s, "after the fill");
    latency_runs(s, 2);
    if (!cfg->spawn) {
        printf("restarts: skipped (the server was not started here: use --sluiced)\n");
    } else {
        restart(s, false);
        if (s->conn)
            restart(s, true);
        if (s->conn) {
            printf("full server after the restarts\n");
            latency_runs(s, 4);
        }
    }
    if (s->conn)
        handoffs(s);
}

int sl_scale_run(sl_scale_config *cfg)
{
    scale s;
    if (cfg->locks < 1 || cfg->waiters < 1) {
        fprintf(stderr, "sluice-load: scale needs at least 1 lock and 1 waiter\n");
        return 2;
    }
    if (setup(&s, cfg) < 0) {
        teardown(&s);
        return 2;
    }
    printf("sluice-load: scale at %s: %d mutexes x (1 holder + %d waiters) = %llu claims; "
           "latency runs of %g s after %g s of warm-up\n\n",
           cfg->address, cfg->locks, cfg->waiters,
           (unsigned long long)cfg->locks * (unsigned long long)(cfg->waiters + 1), cfg->duration_s,
           cfg->warmup_s);
    phases(&s);
    print_targets(&s);
    printf("\nscale: %s\n", s.failed ? "FAILED" : "every check passed");
    teardown(&s);
    return s.failed;
}
