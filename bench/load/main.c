/* main.c - sluice-load: the command line, the plan of runs, and the report.
 *
 * Runs the workloads of workload.h one after the other against one service
 * (sluiced, Redis or PostgreSQL, given by address, or a throwaway one started here), prints a
 * row per run as it finishes and then what each run's checks found. Exit
 * status: 0 when every run passed every check, 1 when a check failed or a
 * request failed, 2 when the command line or the setup was wrong. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "address.h"
#include "backend.h"
#include "etcd_spawn.h"
#include "sluiced_spawn.h"
#ifdef SL_LOAD_HAVE_REDIS
#include "redis_spawn.h"
#endif
#include "scale.h"
#include "tls.h"
#ifdef SL_LOAD_HAVE_PG
#include "pg_spawn.h"
#endif
#include "workload.h"

#define MAX_RUNS 32
#define MAX_SECONDS 3600.0

static const char usage[] =
    "usage: sluice-load [options] [uncontended] [contended] [semaphore] [connect] [resume]\n"
    "                   [scale]\n"
    "\n"
    "Loads a lock service with clients that acquire and release locks in a loop, and\n"
    "prints cycles/s, latency percentiles and CPU time per cycle of this program and of\n"
    "the server. Every run checks what the clients saw: never more holders than the\n"
    "limit, fencing tokens that only grow, grants in FIFO order in the server's event\n"
    "log. With no workload named, those three run. connect and resume (named only)\n"
    "measure new connections: connect, handshake, one request, close; resume offers\n"
    "the previous TLS session. scale (sluice only, named alone or with others) fills\n"
    "sluiced with a million pending claims and measures memory, latency and restarts\n"
    "(bench/README.md).\n"
    "\n"
    "  --sluiced PATH          start a throwaway sluiced (free port, temporary store)\n"
    "  --durability MODE       normal (default) or full, for that sluiced\n"
    "  --server HOST:PORT      else the service to load (default 127.0.0.1:7700); sluice:\n"
    "                          a comma-separated list spreads the clients over the\n"
    "                          servers of a shared-mode cluster, round robin;\n"
    "                          https://HOST:PORT speaks TLS\n"
    "  --tls                   the throwaway sluiced or redis-server serves TLS only,\n"
    "                          with a self-signed certificate made for the run\n"
    "  --plain-and-tls         two throwaway servers, one in clear and one over TLS;\n"
    "                          each workload runs on both, one right after the other,\n"
    "                          and the TLS/plain ratios are printed (sluice, redis)\n"
    "  --tls-ca FILE           verify a TLS server against these CA certificates\n"
    "                          (default: the system's, or the throwaway certificate)\n"
    "  --tls-insecure          verify nothing (neither chain nor name): for a server\n"
    "                          whose CA you do not have; says so in the output\n"
    "  --server-pid PID        its process, for its CPU time per cycle\n"
    "  --backend NAME          the service: sluice (default), redis (SET NX PX and a\n"
    "                          sorted-set semaphore, polled; no fencing tokens), or\n"
    "                          redis-durable (redis with --redis-durable), postgres\n"
    "                          (blocking advisory locks), postgres-poll (advisory\n"
    "                          locks, polled) or postgres-rows (a table of slots)\n"
    "  --redis HOST:PORT       a running Redis, for --backend redis (rediss://HOST:PORT:\n"
    "                          over TLS)\n"
    "  --redis-server PATH     else start a throwaway one (free port, temporary\n"
    "                          directory, no snapshots; default /usr/bin/redis-server)\n"
    "  --redis-durable         that one with appendonly yes, appendfsync always\n"
    "  --redis-poll-ms MS      sleep between attempts on a taken lock (default 10)\n"
    "  --redis-lease-ms MS     a grant's lease, PX (default 30000)\n"
    "  --pg HOST:PORT|CONNINFO a running PostgreSQL, for --backend postgres*\n"
    "                          (HOST:PORT connects as user postgres to db postgres)\n"
    "  --pg-bindir DIR         else start a throwaway one from DIR's initdb and\n"
    "                          postgres (default: pg_config --bindir)\n"
    "  --pg-poll-ms MS         sleep between attempts on a taken lock (default 10)\n"
    "  --etcd HOST:PORT        a running etcd, for --backend etcd (lease and txn, waits\n"
    "                          watched; the revision as token) or etcd-lock (etcd's\n"
    "                          lock API; no semaphore)\n"
    "  --etcd-server PATH      else start a throwaway one (free ports, temporary data\n"
    "                          directory, default settings; default /usr/bin/etcd)\n"
    "  --etcd-poll-ms MS       etcd: poll a taken lock every MS instead of watching it\n"
    "  -d, --duration SECS     measured time per run (default 5)\n"
    "  -w, --warmup SECS       unmeasured time before it (default 1)\n"
    "  -c, --connections LIST  clients of the uncontended runs (default 1,8,32)\n"
    "  --contended-clients N   clients on the one mutex (default 8)\n"
    "  --semaphore-clients N   clients on the semaphore (default 64)\n"
    "  --semaphore-limit N     its slots (default 10)\n"
    "  --connect-clients N     clients of connect and resume (default 8)\n"
    "  --short                 smoke test: 1 s runs after 0.25 s of warm-up; uncontended\n"
    "                          with 1 and 8 clients, contended with 8, semaphore with 8\n"
    "                          clients on 4 slots (so that they still wait)\n"
    "  --scale-locks N         scale: mutexes, each held by one claim (default 10000)\n"
    "  --scale-waiters N       scale: claims queued behind each holder (default 100)\n"
    "                          (--short: 100 locks x 10 waiters)\n"
    "  -h, --help\n"
    "\n"
    "Exit status: 0 all checks passed, 1 a check or a request failed, 2 bad usage or setup.\n"
    "example: sluice-load --sluiced build/release/src/server/sluiced -d 10 contended\n";

typedef struct options {
    const char *sluiced, *durability, *server, *backend;
    const char *redis, *redis_server; /* --backend redis */
    bool redis_durable;
    int redis_poll_ms, redis_lease_ms;
    const char *pg, *pg_bindir; /* --backend postgres* */
    int pg_poll_ms;
    const char *etcd, *etcd_server; /* --backend etcd|etcd-lock */
    int etcd_poll_ms;               /* 0: watch */
    long server_pid;
    double duration, warmup;
    int connections[MAX_RUNS], nconnections;
    int contended_clients, semaphore_clients, semaphore_limit, connect_clients;
    bool tls, plain_and_tls, tls_insecure;
    const char *tls_ca;
    bool want[SL_WORKLOAD_KINDS]; /* by sl_workload_kind */
    bool scale;                   /* scale.h's run, after the others */
    int scale_locks, scale_waiters;
} options;

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    long v;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    long v;
    if (parse_long(s, lo, hi, &v) < 0)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_seconds(const char *s, double lo, double *out)
{
    char *end;
    double v;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= MAX_SECONDS))
        return -1;
    *out = v;
    return 0;
}

/* "1,8,32" */
static int parse_list(const char *s, options *o)
{
    char buf[256], *tok, *save = NULL;
    if (strlen(s) >= sizeof buf)
        return -1;
    memcpy(buf, s, strlen(s) + 1);
    o->nconnections = 0;
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (o->nconnections == MAX_RUNS ||
            parse_int(tok, 1, SL_WORKLOAD_MAX_CLIENTS, &o->connections[o->nconnections]) < 0)
            return -1;
        o->nconnections++;
    }
    return o->nconnections > 0 ? 0 : -1;
}

static void set_defaults(options *o)
{
    memset(o, 0, sizeof *o);
    o->durability = "normal";
    o->server = "127.0.0.1:7700";
    o->backend = "sluice";
    o->redis_server = "/usr/bin/redis-server";
    o->redis_poll_ms = 10;
    o->redis_lease_ms = 30000;
    o->pg_poll_ms = 10;
    o->etcd_server = "/usr/bin/etcd";
    o->duration = 5;
    o->warmup = 1;
    o->connections[0] = 1;
    o->connections[1] = 8;
    o->connections[2] = 32;
    o->nconnections = 3;
    o->contended_clients = 8;
    o->semaphore_clients = 64;
    o->semaphore_limit = 10;
    o->connect_clients = 8;
    o->scale_locks = 10000;
    o->scale_waiters = 100;
}

static void apply_short(options *o)
{
    o->duration = 1;
    o->warmup = 0.25;
    o->connections[0] = 1;
    o->connections[1] = 8;
    o->nconnections = 2;
    o->contended_clients = 8;
    o->semaphore_clients = 8;
    o->semaphore_limit = 4;
    o->scale_locks = 100;
    o->scale_waiters = 10;
}

static int parse_workloads(int argc, char **argv, options *o)
{
    int i, k;
    for (i = optind; i < argc; i++) {
        if (strcmp(argv[i], "scale") == 0) {
            o->scale = true;
            continue;
        }
        for (k = 0;
             k < SL_WORKLOAD_KINDS && strcmp(argv[i], sl_workload_name((sl_workload_kind)k)) != 0;
             k++)
            ;
        if (k == SL_WORKLOAD_KINDS) {
            fprintf(stderr, "sluice-load: unknown workload \"%s\"\n", argv[i]);
            return -1;
        }
        o->want[k] = true;
    }
    if (optind == argc)
        o->want[0] = o->want[1] = o->want[2] = true;
    return 0;
}

enum {
    O_SLUICED = 256,
    O_DURABILITY,
    O_SERVER,
    O_PID,
    O_BACKEND,
    O_CC,
    O_SC,
    O_SL,
    O_SHORT,
    O_SCALE_LOCKS,
    O_SCALE_WAITERS,
    O_REDIS,
    O_REDIS_SERVER,
    O_REDIS_DURABLE,
    O_REDIS_POLL,
    O_REDIS_LEASE,
    O_ETCD,
    O_ETCD_SERVER,
    O_ETCD_POLL,
    O_PG,
    O_PG_BINDIR,
    O_PG_POLL,
    O_TLS,
    O_PLAIN_AND_TLS,
    O_TLS_CA,
    O_TLS_INSECURE,
    O_CONNECT_CLIENTS,
};

static const struct option long_options[] = {
    {"sluiced", required_argument, NULL, O_SLUICED},
    {"durability", required_argument, NULL, O_DURABILITY},
    {"server", required_argument, NULL, O_SERVER},
    {"server-pid", required_argument, NULL, O_PID},
    {"backend", required_argument, NULL, O_BACKEND},
    {"duration", required_argument, NULL, 'd'},
    {"warmup", required_argument, NULL, 'w'},
    {"connections", required_argument, NULL, 'c'},
    {"contended-clients", required_argument, NULL, O_CC},
    {"semaphore-clients", required_argument, NULL, O_SC},
    {"semaphore-limit", required_argument, NULL, O_SL},
    {"short", no_argument, NULL, O_SHORT},
    {"scale-locks", required_argument, NULL, O_SCALE_LOCKS},
    {"scale-waiters", required_argument, NULL, O_SCALE_WAITERS},
    {"redis", required_argument, NULL, O_REDIS},
    {"redis-server", required_argument, NULL, O_REDIS_SERVER},
    {"redis-durable", no_argument, NULL, O_REDIS_DURABLE},
    {"redis-poll-ms", required_argument, NULL, O_REDIS_POLL},
    {"redis-lease-ms", required_argument, NULL, O_REDIS_LEASE},
    {"etcd", required_argument, NULL, O_ETCD},
    {"etcd-server", required_argument, NULL, O_ETCD_SERVER},
    {"etcd-poll-ms", required_argument, NULL, O_ETCD_POLL},
    {"pg", required_argument, NULL, O_PG},
    {"pg-bindir", required_argument, NULL, O_PG_BINDIR},
    {"pg-poll-ms", required_argument, NULL, O_PG_POLL},
    {"tls", no_argument, NULL, O_TLS},
    {"plain-and-tls", no_argument, NULL, O_PLAIN_AND_TLS},
    {"tls-ca", required_argument, NULL, O_TLS_CA},
    {"tls-insecure", no_argument, NULL, O_TLS_INSECURE},
    {"connect-clients", required_argument, NULL, O_CONNECT_CLIENTS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* One option from getopt_long: 0, or -1 when its value is bad. */
static int set_option(options *o, int ch, const char *arg)
{
    switch (ch) {
    case O_SLUICED:
        o->sluiced = arg;
        return 0;
    case O_DURABILITY:
        o->durability = arg;
        return 0;
    case O_SERVER:
        o->server = arg;
        return 0;
    case O_PID:
        return parse_long(arg, 1, 1L << 30, &o->server_pid);
    case O_BACKEND:
        o->backend = arg;
        return 0;
    case 'd':
        return parse_seconds(arg, 0.01, &o->duration);
    case 'w':
        return parse_seconds(arg, 0, &o->warmup);
    case 'c':
        return parse_list(arg, o);
    case O_CC:
        return parse_int(arg, 1, SL_WORKLOAD_MAX_CLIENTS, &o->contended_clients);
    case O_SC:
        return parse_int(arg, 1, SL_WORKLOAD_MAX_CLIENTS, &o->semaphore_clients);
    case O_SL:
        return parse_int(arg, 1, 1000000, &o->semaphore_limit);
    case O_SHORT:
        return 0; /* applied before the others */
    case O_SCALE_LOCKS:
        return parse_int(arg, 1, 10000000, &o->scale_locks);
    case O_SCALE_WAITERS:
        return parse_int(arg, 1, 10000000, &o->scale_waiters);
    case O_REDIS:
        o->redis = arg;
        return 0;
    case O_REDIS_SERVER:
        o->redis_server = arg;
        return 0;
    case O_REDIS_DURABLE:
        o->redis_durable = true;
        return 0;
    case O_REDIS_POLL:
        return parse_int(arg, 1, 60000, &o->redis_poll_ms);
    case O_REDIS_LEASE:
        return parse_int(arg, 1, 86400000, &o->redis_lease_ms);
    case O_ETCD:
        o->etcd = arg;
        return 0;
    case O_ETCD_SERVER:
        o->etcd_server = arg;
        return 0;
    case O_ETCD_POLL:
        return parse_int(arg, 1, 60000, &o->etcd_poll_ms);
    case O_PG:
        o->pg = arg;
        return 0;
    case O_PG_BINDIR:
        o->pg_bindir = arg;
        return 0;
    case O_PG_POLL:
        return parse_int(arg, 1, 60000, &o->pg_poll_ms);
    case O_TLS:
        o->tls = true;
        return 0;
    case O_PLAIN_AND_TLS:
        o->plain_and_tls = true;
        return 0;
    case O_TLS_CA:
        o->tls_ca = arg;
        return 0;
    case O_TLS_INSECURE:
        o->tls_insecure = true;
        return 0;
    case O_CONNECT_CLIENTS:
        return parse_int(arg, 1, SL_WORKLOAD_MAX_CLIENTS, &o->connect_clients);
    case 'h':
        fputs(usage, stdout);
        exit(0);
    default:
        return -1;
    }
}

/* The backends by name; etcd will join them here. */
static const sl_load_backend *find_backend(const char *name)
{
    static const sl_load_backend *const backends[] = {
        &sl_load_backend_sluice,
        &sl_load_backend_etcd,
        &sl_load_backend_etcd_lock,
#ifdef SL_LOAD_HAVE_REDIS
        &sl_load_backend_redis,
#endif
#ifdef SL_LOAD_HAVE_PG
        &sl_load_backend_postgres,
        &sl_load_backend_postgres_poll,
        &sl_load_backend_postgres_rows,
#endif
        NULL,
    };
    int i;
    for (i = 0; backends[i]; i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

/* postgres, postgres-poll, postgres-rows: one server, three recipes. */
static bool is_pg(const char *backend)
{
    return strncmp(backend, "postgres", strlen("postgres")) == 0;
}

/* etcd and etcd-lock: one server, two recipes. */
static bool is_etcd(const char *backend)
{
    return strncmp(backend, "etcd", strlen("etcd")) == 0;
}

/* The throwaway server started here, if any (else the address is given). */
static bool throwaway(const options *o)
{
    if (strcmp(o->backend, "redis") == 0)
        return !o->redis;
    return strcmp(o->backend, "sluice") == 0 && o->sluiced;
}

static int check_tls_options(const options *o)
{
    bool sluice_or_redis = strcmp(o->backend, "sluice") == 0 || strcmp(o->backend, "redis") == 0;
    if ((o->tls || o->plain_and_tls) && (!sluice_or_redis || !throwaway(o))) {
        fprintf(stderr, "sluice-load: --tls and --plain-and-tls start a throwaway sluiced "
                        "(--sluiced PATH) or redis-server over TLS; for a server you started, "
                        "give its address as https://HOST:PORT (sluice) or rediss://HOST:PORT "
                        "(redis)\n");
        return -1;
    }
    if (o->tls && o->plain_and_tls) {
        fprintf(stderr, "sluice-load: --plain-and-tls already runs over TLS: drop --tls\n");
        return -1;
    }
    if (o->tls_insecure && o->tls_ca) {
        fprintf(stderr, "sluice-load: --tls-insecure checks no certificate: drop --tls-ca\n");
        return -1;
    }
    if (o->scale && (o->tls || o->plain_and_tls || sl_load_url_is_tls(o->server))) {
        fprintf(stderr, "sluice-load: scale runs in clear only (its fill pipelines requests on "
                        "sockets of its own): run it without TLS\n");
        return -1;
    }
    return 0;
}

static int parse_options(int argc, char **argv, options *o)
{
    bool bad = false;
    int ch, i;
    set_defaults(o);
    /* --short first, wherever it is, so that the other flags can still
     * override its choices. */
    for (i = 1; i < argc; i++)
        if (strcmp(argv[i], "--short") == 0)
            apply_short(o);
    while ((ch = getopt_long(argc, argv, "d:w:c:h", long_options, NULL)) != -1)
        bad |= set_option(o, ch, optarg) < 0;
    if (bad || parse_workloads(argc, argv, o) < 0) {
        fputs(usage, stderr);
        return -1;
    }
    if (strcmp(o->durability, "normal") != 0 && strcmp(o->durability, "full") != 0) {
        fprintf(stderr, "sluice-load: --durability is normal or full, not \"%s\"\n", o->durability);
        return -1;
    }
    /* redis-durable is redis on a server that fsyncs every write: one
     * protocol, so one backend, but its own name in the table. */
    if (strcmp(o->backend, "redis-durable") == 0) {
        o->backend = "redis";
        o->redis_durable = true;
    }
    if (!find_backend(o->backend)) {
        fprintf(stderr, "sluice-load: unknown backend \"%s\" (sluice, etcd, etcd-lock%s%s)\n",
                o->backend,
#ifdef SL_LOAD_HAVE_REDIS
                ", redis, redis-durable"
#else
                "; redis needs a build with hiredis"
#endif
                ,
#ifdef SL_LOAD_HAVE_PG
                ", postgres, postgres-poll, postgres-rows"
#else
                "; postgres needs a build with libpq"
#endif
        );
        return -1;
    }
    if (strcmp(o->backend, "redis") == 0 ? o->sluiced != NULL : o->redis != NULL) {
        fprintf(stderr, "sluice-load: --sluiced is for --backend sluice, --redis for redis\n");
        return -1;
    }
    if (is_pg(o->backend) ? o->sluiced != NULL : o->pg != NULL) {
        fprintf(stderr, "sluice-load: --sluiced is for --backend sluice, --pg for postgres*\n");
        return -1;
    }
    if (is_etcd(o->backend) ? o->sluiced != NULL : (o->etcd != NULL || o->etcd_poll_ms > 0)) {
        fprintf(stderr, "sluice-load: --sluiced is for --backend sluice, --etcd* for etcd*\n");
        return -1;
    }
    if (o->redis && o->redis_durable) {
        fprintf(stderr, "sluice-load: --redis-durable configures a redis-server started here, "
                        "not one given with --redis\n");
        return -1;
    }
    return check_tls_options(o);
}

static int plan(const options *o, sl_workload *runs)
{
    int n = 0, i;
    if (o->want[SL_WORKLOAD_UNCONTENDED])
        for (i = 0; i < o->nconnections; i++)
            runs[n++] = (sl_workload){SL_WORKLOAD_UNCONTENDED, o->connections[i], 1};
    if (o->want[SL_WORKLOAD_CONTENDED])
        runs[n++] = (sl_workload){SL_WORKLOAD_CONTENDED, o->contended_clients, 1};
    if (o->want[SL_WORKLOAD_SEMAPHORE])
        runs[n++] = (sl_workload){SL_WORKLOAD_SEMAPHORE, o->semaphore_clients, o->semaphore_limit};
    if (o->want[SL_WORKLOAD_CONNECT])
        runs[n++] = (sl_workload){SL_WORKLOAD_CONNECT, o->connect_clients, 1};
    if (o->want[SL_WORKLOAD_RESUME])
        runs[n++] = (sl_workload){SL_WORKLOAD_RESUME, o->connect_clients, 1};
    return n;
}

/* ---- the report -------------------------------------------------------- */

static bool has_equivalent(const sl_load_backend *b, sl_workload_kind kind)
{
    if (SL_WORKLOAD_IS_CONNECT(kind))
        return b->connect_once != NULL;
    return b->workloads == 0 || (b->workloads & (1u << kind)) != 0;
}

/* A run the backend has no equivalent for. */
static void print_row_none(const char *backend, const sl_workload *w)
{
    printf("%-13s %-12s %7d %5d %10s %10s %10s %11s %11s %8s %11s %11s\n", backend,
           sl_workload_name(w->kind), w->clients, w->limit, "-", "-", "-", "-", "-", "-", "-", "-");
    fflush(stdout);
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

static const char *fmt_per_cycle(double cpu_s, uint64_t cycles, char *buf, size_t cap)
{
    if (cpu_s < 0 || cycles == 0)
        snprintf(buf, cap, "-");
    else
        snprintf(buf, cap, "%.1f us", cpu_s / (double)cycles * 1e6);
    return buf;
}

static void print_header(void)
{
    printf("%-13s %-12s %7s %5s %10s %10s %10s %11s %11s %8s %11s %11s\n", "backend", "workload",
           "clients", "limit", "cycles/s", "cycle p50", "cycle p99", "handoff p50", "handoff p99",
           "changed", "load cpu/c", "server cpu/c");
}

static void print_row(const char *backend, const sl_load_result *r)
{
    char a[32], b[32], c[32], d[32], e[32], f[32], changed[16];
    bool mutex1 = r->workload.kind == SL_WORKLOAD_CONTENDED;
    if (mutex1 && r->transitions)
        snprintf(changed, sizeof changed, "%.1f%%",
                 100.0 * (double)r->changes / (double)r->transitions);
    else
        snprintf(changed, sizeof changed, "-");
    printf("%-13s %-12s %7d %5d %10.0f %10s %10s %11s %11s %8s %11s %11s\n", backend,
           sl_workload_name(r->workload.kind), r->workload.clients, r->workload.limit,
           r->seconds > 0 ? (double)r->cycles / r->seconds : 0.0,
           fmt_ns(sl_hist_quantile(&r->cycle, 0.50), a, sizeof a),
           fmt_ns(sl_hist_quantile(&r->cycle, 0.99), b, sizeof b),
           mutex1 ? fmt_ns(sl_hist_quantile(&r->handoff, 0.50), c, sizeof c) : "-",
           mutex1 ? fmt_ns(sl_hist_quantile(&r->handoff, 0.99), d, sizeof d) : "-", changed,
           fmt_per_cycle(r->load_cpu_s, r->cycles, e, sizeof e),
           fmt_per_cycle(r->server_cpu_s, r->cycles, f, sizeof f));
    fflush(stdout);
}

/* The tail of the latencies, and how the generator's CPU time splits. */
static void print_details(const sl_load_result *r)
{
    char a[32], b[32], c[32], d[32];
    printf("  cycle p99.9 %s, max %s", fmt_ns(sl_hist_quantile(&r->cycle, 0.999), a, sizeof a),
           fmt_ns(r->cycle.count ? r->cycle.max : 0, b, sizeof b));
    if (r->workload.kind == SL_WORKLOAD_CONTENDED)
        printf("; handoff p99.9 %s, max %s",
               fmt_ns(sl_hist_quantile(&r->handoff, 0.999), c, sizeof c),
               fmt_ns(r->handoff.count ? r->handoff.max : 0, d, sizeof d));
    if (r->load_cpu_s >= 0 && r->cycles)
        printf("; load CPU per cycle %.1f us user + %.1f us system",
               r->load_user_s / (double)r->cycles * 1e6,
               (r->load_cpu_s - r->load_user_s) / (double)r->cycles * 1e6);
    printf("\n");
}

/* A connect run: how many handshakes resumed, then the tail. */
static void print_connect_checks(const sl_load_result *r, bool tls)
{
    if (!tls)
        printf("  %llu connections in the window, in clear\n", (unsigned long long)r->cycles);
    else
        printf(
            "  %llu connections in the window, %llu of their TLS handshakes resumed a session%s\n",
            (unsigned long long)r->cycles, (unsigned long long)r->resumed,
            r->workload.kind == SL_WORKLOAD_RESUME && r->cycles && !r->resumed
                ? " (the server resumed none: this row is of full handshakes)"
                : "");
    print_details(r);
    if (r->errors)
        printf("  %llu error(s), the first: %s\n", (unsigned long long)r->errors, r->first_error);
}

static void print_checks(bool tokens, bool tls, const sl_load_result *r)
{
    char tok[80];
    printf("%s %d: %s\n", sl_workload_name(r->workload.kind), r->workload.clients,
           sl_load_result_ok(r) ? "ok" : "FAILED");
    if (SL_WORKLOAD_IS_CONNECT(r->workload.kind)) {
        print_connect_checks(r, tls);
        return;
    }
    if (tokens)
        snprintf(tok, sizeof tok, "tokens %s, %llu given twice%s",
                 r->token_violations ? "WENT BACKWARDS" : "increasing",
                 (unsigned long long)r->duplicate_tokens,
                 r->tokens_truncated ? " (not all kept)" : "");
    else
        snprintf(tok, sizeof tok, "no fencing tokens to check");
    printf("  clients: %llu grants, at most %d holder(s) of %d at once (%llu over), %s; cycles "
           "per client %llu..%llu",
           (unsigned long long)r->grants, r->max_holders, r->workload.limit,
           (unsigned long long)r->holder_violations, tok, (unsigned long long)r->min_client_cycles,
           (unsigned long long)r->max_client_cycles);
    if (r->workload.kind == SL_WORKLOAD_CONTENDED)
        printf("; %llu handoffs timed", (unsigned long long)r->handoff.count);
    printf("\n");
    print_details(r);
    if (r->history_checked)
        printf("  event log: %llu events, %llu grants (the clients saw %llu), %llu out of FIFO "
               "order, %llu over the limit\n",
               (unsigned long long)r->history.events, (unsigned long long)r->history.grants,
               (unsigned long long)r->grants, (unsigned long long)r->history.out_of_order,
               (unsigned long long)r->history.over_limit);
    if (r->errors)
        printf("  %llu error(s), the first: %s\n", (unsigned long long)r->errors, r->first_error);
}

/* ---- main -------------------------------------------------------------- */

/* An etcd session's lease outlives the session (warm-up, window and the
 * generator's 40 s drain, with room to spare), so that no client has to
 * keep it alive: at least ETCD_LEASE_TTL_S. */
#define ETCD_LEASE_TTL_S 600
static int etcd_lease_ttl(const options *o)
{
    double need = o->warmup + o->duration + 100;
    return need > ETCD_LEASE_TTL_S ? (int)need : ETCD_LEASE_TTL_S;
}

/* One service to load: its name in the table (redis-durable for redis on
 * a durable server, -tls added over TLS), where, and its process. */
typedef struct target {
    char label[40];
    const char *address;
    pid_t pid;
    bool tls;
} target;

/* One run on one target, its row printed; 1 when it failed. */
static int run_one(const options *o, const target *t, const sl_workload *w, int index,
                   sl_load_result *res)
{
    sl_load_config cfg = {
        find_backend(o->backend), t->address, NULL, o->warmup, o->duration, t->pid};
    char prefix[64];
    snprintf(prefix, sizeof prefix, "sluice-load/%ld/%d", (long)getpid(), index);
    cfg.prefix = prefix;
    res->workload = *w;
    if (!has_equivalent(cfg.backend, w->kind) || (w->kind == SL_WORKLOAD_RESUME && !t->tls)) {
        print_row_none(t->label, w);
        return 0;
    }
    if (sl_workload_run(&cfg, w, res) < 0) {
        fprintf(stderr, "sluice-load: %s %d cannot run: %s\n", sl_workload_name(w->kind),
                w->clients, res->first_error);
        res->errors = 1;
        return 1;
    }
    print_row(t->label, res);
    return !sl_load_result_ok(res);
}

/* Over TLS against in clear: cycles/s of each workload, run one right
 * after the other. */
static void print_tls_ratios(const target *t, const sl_workload *runs, int n,
                             const sl_load_result *res)
{
    int i, j;
    printf("\n%s / %s: cycles/s over TLS divided by the same workload's in clear (run just "
           "before it; resume against connect), and the server's CPU per cycle\n",
           t[1].label, t[0].label);
    for (i = 0; i < n; i++) {
        const sl_load_result *q = &res[i * 2 + 1], *p = &res[i * 2];
        if (runs[i].kind == SL_WORKLOAD_RESUME) /* in clear: connect's row */
            for (j = 0, p = NULL; j < n; j++)
                if (runs[j].kind == SL_WORKLOAD_CONNECT)
                    p = &res[j * 2];
        if (!p || p->seconds <= 0 || q->seconds <= 0 || !p->cycles || !q->cycles)
            continue;
        double a = (double)p->cycles / p->seconds, b = (double)q->cycles / q->seconds;
        printf("  %-12s %5d clients  %8.0f / %8.0f cycles/s  %6.2fx",
               sl_workload_name(runs[i].kind), runs[i].clients, b, a, b / a);
        if (p->server_cpu_s > 0 && q->server_cpu_s > 0) {
            double sa = p->server_cpu_s / (double)p->cycles,
                   sb = q->server_cpu_s / (double)q->cycles;
            printf("   server CPU/cycle %7.1f / %7.1f us  %6.2fx", sb * 1e6, sa * 1e6, sb / sa);
        }
        printf("\n");
    }
}

static int run_all(const options *o, const target *t, int nt)
{
    sl_workload runs[MAX_RUNS + SL_WORKLOAD_KINDS];
    sl_load_result *results;
    const sl_load_backend *be = find_backend(o->backend);
    int n = plan(o, runs), i, j, failed = 0;
    results = calloc((size_t)(n * nt), sizeof *results);
    if (!results)
        return 2;
    for (j = 0; j < nt; j++)
        printf("sluice-load: %s at %s; %g s measured per run after %g s of warm-up; CPU per "
               "cycle from getrusage and %s%s\n",
               t[j].label, t[j].address, o->duration, o->warmup,
               t[j].pid > 0 ? "/proc/PID/stat" : "(no server pid: use --server-pid)",
               t[j].tls && sl_tls_client_insecure(sl_load_tls)
                   ? "; TLS certificates NOT verified (--tls-insecure)"
                   : "");
    printf("\n");
    print_header();
    for (i = 0; i < n; i++)
        for (j = 0; j < nt; j++)
            failed |= run_one(o, &t[j], &runs[i], i * nt + j, &results[i * nt + j]);
    printf("\nchecks (over the whole run, warm-up and drain included) and details\n");
    for (j = 0; j < nt; j++)
        for (i = 0; i < n; i++) {
            const sl_load_result *r = &results[i * nt + j];
            if (nt > 1)
                printf("%s ", t[j].label);
            if (has_equivalent(be, runs[i].kind) &&
                (runs[i].kind != SL_WORKLOAD_RESUME || t[j].tls))
                print_checks(be->tokens, t[j].tls, r);
            else
                printf("%s %d: not run (%s has no equivalent)\n", sl_workload_name(runs[i].kind),
                       runs[i].clients, t[j].label);
        }
    if (nt == 2)
        print_tls_ratios(t, runs, n, results);
    free(results);
    return failed;
}

/* How the throwaway sluiced runs: a scale run past the server's default
 * limit of 10 million claims gets a configuration file raising it. */
#define SLUICED_MAX_CLAIMS 10000000L
static sl_spawn_opts sluiced_opts(const options *o)
{
    sl_spawn_opts so = {o->durability, 0, NULL, false};
    long need = (long)o->scale_locks * (o->scale_waiters + 1) * 11 / 10 + 1000000;
    if (o->scale && need > SLUICED_MAX_CLAIMS)
        so.max_claims = (size_t)need;
    return so;
}

/* The scale run (sluice only): with a server started here it restarts it. */
static int run_scale(const options *o, const char *address, pid_t pid, sl_spawn *spawn)
{
    char prefix[64];
    sl_scale_config sc;
    if (strcmp(o->backend, "sluice") != 0) {
        printf("\nscale: not run: it measures sluiced with a million pending claims across "
               "restarts, which %s has no equivalent for\n",
               o->backend);
        return 0;
    }
    memset(&sc, 0, sizeof sc);
    snprintf(prefix, sizeof prefix, "sluice-load/%ld/scale", (long)getpid());
    sc.address = address;
    sc.server_pid = pid;
    sc.spawn = spawn;
    sc.binary = o->sluiced;
    sc.spawn_opts = sluiced_opts(o);
    sc.prefix = prefix;
    sc.locks = o->scale_locks;
    sc.waiters = o->scale_waiters;
    sc.fill_connections = 16;
    sc.fill_depth = 32;
    sc.clients = 4;
    sc.contended_clients = o->contended_clients;
    sc.warmup_s = o->warmup;
    sc.duration_s = o->duration;
    sc.handoffs = 1000;
    return sl_scale_run(&sc);
}

/* Starts the throwaway server asked for (a sluiced, or a redis-server
 * unless --redis names one), or none; over TLS when tls is set (sluiced
 * and redis-server only). 0, or -1 after saying why. */
static int start_server(const options *o, bool tls, sl_spawn *spawn, bool *started)
{
    char err[512];
    int rc = 0;
    *started = false;
    if (strcmp(o->backend, "redis") == 0 && !o->redis) {
#ifdef SL_LOAD_HAVE_REDIS
        rc = sl_redis_spawn_start(o->redis_server, o->redis_durable, tls, spawn, err, sizeof err);
#endif
    } else if (is_pg(o->backend) && !o->pg) {
#ifdef SL_LOAD_HAVE_PG
        rc = sl_pg_spawn_start(o->pg_bindir, spawn, err, sizeof err);
#endif
    } else if (is_etcd(o->backend) && !o->etcd) {
        rc = sl_etcd_spawn_start(o->etcd_server, spawn, err, sizeof err);
    } else if (o->sluiced) {
        sl_spawn_opts so = sluiced_opts(o);
        so.tls = tls;
        rc = sl_spawn_start_opts(o->sluiced, &so, spawn, err, sizeof err);
    } else {
        return 0;
    }
    if (rc < 0) {
        fprintf(stderr, "sluice-load: %s\n", err);
        return -1;
    }
    *started = true;
    return 0;
}

static int stop_server(const options *o, sl_spawn *spawn)
{
    char err[512];
    int rc = 0;
    if (is_etcd(o->backend)) {
        if ((rc = sl_etcd_spawn_stop(spawn, err, sizeof err)) < 0)
            fprintf(stderr, "sluice-load: %s\n", err);
        return rc;
    }
#ifdef SL_LOAD_HAVE_PG
    if (is_pg(o->backend)) {
        if ((rc = sl_pg_spawn_stop(spawn, err, sizeof err)) < 0)
            fprintf(stderr, "sluice-load: %s\n", err);
        return rc;
    }
#endif
#ifdef SL_LOAD_HAVE_REDIS
    if (strcmp(o->backend, "redis") == 0)
        rc = sl_redis_spawn_stop(spawn, err, sizeof err);
    else
#endif
        rc = sl_spawn_stop(spawn, err, sizeof err);
    (void)o;
    if (rc < 0)
        fprintf(stderr, "sluice-load: %s\n", err);
    return rc;
}

/* The TLS client context for https:// and rediss:// addresses: the CA
 * given, else the throwaway server's certificate, else the system's trust
 * store; none is made when nothing speaks TLS. 0, or -1 after saying why. */
static int setup_tls(const options *o, const target *t, int nt, const sl_spawn *tls_spawn)
{
    char err[600];
    bool any = false;
    int i;
    for (i = 0; i < nt; i++)
        any |= t[i].tls;
    if (!any)
        return 0;
    const char *ca = o->tls_ca ? o->tls_ca : tls_spawn && tls_spawn->ca[0] ? tls_spawn->ca : NULL;
    if (sl_tls_client_new(ca, o->tls_insecure, &sl_load_tls, err, sizeof err) < 0) {
        fprintf(stderr, "sluice-load: %s\n", err);
        return -1;
    }
    return 0;
}

static void set_target(target *t, const char *label, const char *address, pid_t pid)
{
    t->tls = sl_load_url_is_tls(address);
    snprintf(t->label, sizeof t->label, "%s%s", label, t->tls ? "-tls" : "");
    t->address = address;
    t->pid = pid;
}

static bool any_workload(const options *o)
{
    int k;
    for (k = 0; k < SL_WORKLOAD_KINDS; k++)
        if (o->want[k])
            return true;
    return false;
}

int main(int argc, char **argv)
{
    options o;
    sl_spawn spawn[2]; /* [1]: the TLS one of --plain-and-tls */
    target t[2];
    const char *address, *label;
    bool started[2] = {false, false};
    pid_t pid;
    int rc, nt = 1, i;
    if (parse_options(argc, argv, &o) < 0)
        return 2;
    memset(spawn, 0, sizeof spawn);
    address = o.server;
    label = o.backend;
    pid = (pid_t)o.server_pid;
#ifdef SL_LOAD_HAVE_REDIS
    if (strcmp(o.backend, "redis") == 0) {
        sl_load_redis_configure(o.redis_poll_ms, o.redis_lease_ms);
        address = o.redis;
        label = o.redis_durable ? "redis-durable" : "redis";
    }
#endif
#ifdef SL_LOAD_HAVE_PG
    if (is_pg(o.backend)) {
        sl_load_pg_configure(o.pg_poll_ms);
        address = o.pg;
    }
#endif
    if (is_etcd(o.backend)) {
        sl_load_etcd_configure(o.etcd_poll_ms, etcd_lease_ttl(&o));
        address = o.etcd;
    }
    if (start_server(&o, o.tls, &spawn[0], &started[0]) < 0)
        return 2;
    if (started[0]) {
        address = spawn[0].url[0] ? spawn[0].url : spawn[0].address;
        pid = spawn[0].pid;
    }
    set_target(&t[0], label, address, pid);
    rc = 0;
    if (o.plain_and_tls) {
        nt = 2;
        if (start_server(&o, true, &spawn[1], &started[1]) < 0)
            rc = 2;
        else
            set_target(&t[1], label, spawn[1].url, spawn[1].pid);
    }
    if (rc == 0 && setup_tls(&o, t, nt, o.plain_and_tls ? &spawn[1] : &spawn[0]) < 0)
        rc = 2;
    if (rc == 0 && any_workload(&o))
        rc = run_all(&o, t, nt);
    if (rc != 2 && o.scale) {
        int src = run_scale(&o, address, pid, started[0] ? &spawn[0] : NULL);
        rc = src > rc ? src : rc;
    }
    for (i = 0; i < 2; i++)
        if (started[i] && stop_server(&o, &spawn[i]) < 0)
            rc = rc ? rc : 1;
    sl_tls_client_free(sl_load_tls);
    if (rc == 1)
        fprintf(stderr, "sluice-load: FAILED: a check or a request failed (see above)\n");
    return rc;
}
