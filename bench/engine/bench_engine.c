/* bench_engine.c - how fast the engine runs, and how much memory a waiting
 * claim costs, with up to a million claims pending.
 *
 * In-process and single-threaded, it times the operations a busy server
 * repeats, each with N claims pending (1, 10k, 1M):
 *   churn    a waiter joins a held mutex's queue and withdraws (insert and
 *            remove in a queue of N), at the tail or at a random place;
 *   handoff  the holder releases, the head waiter is granted and a new
 *            waiter joins, so N stays constant (a grant with N waiting);
 *   spread   handoff and churn on random mutexes among 100k, each held,
 *            with the N waiters spread over them;
 * and, as a reference, claim+release of a free mutex. It also counts the
 * bytes one pending claim costs, through the engine's allocator hook and
 * through the process's resident size.
 *
 * docs/engine.md ("Costs") wants O(log n) operations and small memory per pending claim;
 * the issue wants cost(1M pending) within 3x of cost(1 pending). The last
 * table checks that, for information: the exit status is 1 only when the
 * engine misbehaves (an error, a wrong count, a leak), never for a slow
 * figure.
 *
 * Steady state on purpose: every op is followed by sl_engine_changes_clear
 * (the server clears once per batch), ended claims are purged at once
 * (ended_retention_ms 0), and the clock stands still, so nothing expires and
 * the engine stays the same size however long a measurement runs. Every
 * claim has a 30 s lease, so the timer heap holds all N, as on a server.
 * The sizes of one op take turns round by round and a figure is the
 * fastest round (see measure), so that a neighbour's burst of CPU on a
 * shared machine skews neither a figure nor a ratio. */
#include <malloc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#define ID_LEN 22     /* random-looking ids, as clients are told to choose */
#define LOCK_NAME_CAP 32 /* room for "res/" and any size_t */
#define MAX_ROUNDS 1024
#define PRIO_SPREAD 1024 /* random priorities for the random-place churn */
#define LEASE_MS 30000
#define SETUP_BATCH 1024 /* claims created per batch while building */

/* A 16-character holder: the engine copies it, so its content is moot. */
static const char HOLDER[] = "ci/deploy-run-42";

typedef struct sizes {
    size_t n[3];      /* pending claims: small, middle, big */
    size_t nlocks;    /* mutexes of the spread scenarios */
    size_t round;     /* ops per timed round */
    uint64_t min_ops; /* a measurement runs until both minimums are met */
    double min_secs;
    double max_secs; /* ... or this long */
} sizes;

static const sizes FULL = {{1, 10000, 1000000}, 100000, 5000, 200000, 1.0, 4.0};
static const sizes QUICK = {{1, 100, 10000}, 10000, 1000, 20000, 0.05, 0.5};

typedef enum { OP_FREE, OP_CHURN_TAIL, OP_CHURN_RANDOM, OP_HANDOFF, OP_SPREAD_HANDOFF,
               OP_SPREAD_CHURN, OP_COUNT } op_kind;

/* Short names for --only, in op_kind order. */
static const char *const OP_NAMES[OP_COUNT] = {"free",    "churn-tail",     "churn-random",
                                               "handoff", "spread-handoff", "spread-churn"};

static void die(const char *what, long long a, long long b)
{
    fprintf(stderr, "bench_engine: %s (%lld, %lld)\n", what, a, b);
    exit(1);
}

/* ---- the counting allocator ---------------------------------------------- */

/* Live bytes and blocks as malloc sees them (usable size, so the figure is
 * what the heap really gives the engine, rounding included). */
typedef struct counter {
    long long bytes, blocks;
} counter;

static void *count_alloc(void *ud, void *ptr, size_t size)
{
    counter *c = ud;
    if (ptr) {
        c->bytes -= (long long)malloc_usable_size(ptr);
        c->blocks--;
    }
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    void *p = realloc(ptr, size);
    if (p == NULL) {
        fputs("bench_engine: out of memory\n", stderr);
        abort();
    }
    c->bytes += (long long)malloc_usable_size(p);
    c->blocks++;
    return p;
}

static long long rss_bytes(void)
{
    long size = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f == NULL)
        return -1;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : (long long)resident * sysconf(_SC_PAGESIZE);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- ids and randomness ---------------------------------------------------- */

static uint64_t mix(uint64_t x) /* splitmix64's finalizer: a bijection */
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/* Claim n's id: 22 base-62 characters. The first 11 spell mix(n) whole
 * (62^11 > 2^64), so ids never collide. */
static void make_id(uint64_t n, char out[ID_LEN + 1])
{
    static const char b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    uint64_t a = mix(n), b = mix(n ^ 0x5851f42d4c957f2dull);
    for (int i = 0; i < ID_LEN / 2; i++, a /= 62)
        out[i] = b62[a % 62];
    for (int i = ID_LEN / 2; i < ID_LEN; i++, b /= 62)
        out[i] = b62[b % 62];
    out[ID_LEN] = '\0';
}

static uint64_t rng_next(uint64_t *s) /* xorshift64* */
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545f4914f6cdd1dull;
}

/* ---- a world: mutexes, each held, with waiters ---------------------------- */

/* One mutex of a world: its holder then its waiters in queue order sit in
 * the world's ring at ring[off + (head + k) % len], k = 0 .. len-1. One
 * struct (one cache line) so that the bench's own bookkeeping costs one
 * miss per random lock, not four. */
typedef struct mutex {
    char name[LOCK_NAME_CAP];
    size_t off, len, head;
} mutex;

typedef struct world {
    sl_engine *eng;
    counter mem;
    int64_t now; /* stands still: nothing expires while we measure */
    uint64_t ids;
    uint64_t rng;
    size_t nlocks, npending;
    bool held;               /* every lock has a holder */
    mutex *locks;
    sl_claim **ring;
} world;

static sl_claim *claim_on(world *w, const char *id, const char *lock, int32_t prio)
{
    sl_lock_req lr = {SL_KIND_MUTEX, lock, 1, 0};
    sl_claim_req req;
    memset(&req, 0, sizeof(req));
    req.id = id;
    req.holder = HOLDER;
    req.locks = &lr;
    req.nlocks = 1;
    req.priority = prio;
    req.grace_ms = -1;
    req.lease_ms = LEASE_MS;
    sl_claim *c;
    sl_error err;
    int rc = sl_claim_create(w->eng, &req, w->now, &c, &err);
    if (rc) {
        fprintf(stderr, "bench_engine: claim %s on %s: %s\n", id, lock, err.what);
        exit(1);
    }
    return c;
}

static sl_claim *claim_next(world *w, size_t lock, int32_t prio)
{
    char id[ID_LEN + 1];
    make_id(w->ids++, id);
    return claim_on(w, id, w->locks[lock].name, prio);
}

static void release(world *w, sl_claim *c, sl_reason reason)
{
    int rc = sl_claim_release(w->eng, c, reason, w->now);
    if (rc)
        die("sl_claim_release failed", rc, 0);
}

/* The engine and the world's own arrays; the arrays are touched here so that
 * later resident-size readings count only the engine. */
static void world_open(world *w, size_t nlocks, size_t npending, bool held)
{
    memset(w, 0, sizeof(*w));
    sl_engine_opts o;
    sl_engine_opts_default(&o);
    o.alloc = count_alloc;
    o.alloc_ud = &w->mem;
    o.ended_retention_ms = 0;
    if (sl_engine_new(&o, &w->eng))
        die("sl_engine_new failed", 0, 0);
    w->now = 1700000000000;
    w->rng = 0x9e3779b97f4a7c15ull;
    w->nlocks = nlocks;
    w->npending = npending;
    w->held = held;
    w->locks = calloc(nlocks, sizeof(*w->locks));
    w->ring = calloc(nlocks + npending, sizeof(*w->ring));
    if (!w->locks || !w->ring)
        die("out of memory", 0, 0);
    memset(w->ring, 0xff, (nlocks + npending) * sizeof(*w->ring)); /* make it resident */
    size_t off = 0;
    for (size_t i = 0; i < nlocks; i++) {
        mutex *m = &w->locks[i];
        if (nlocks == 1)
            snprintf(m->name, LOCK_NAME_CAP, "deploy");
        else
            snprintf(m->name, LOCK_NAME_CAP, "res/%06zu", i);
        m->off = off;
        m->len = (held ? 1 : 0) + npending / nlocks + (i < npending % nlocks ? 1 : 0);
        off += m->len;
    }
}

static void world_holders(world *w)
{
    for (size_t i = 0; w->held && i < w->nlocks; i++) {
        w->ring[w->locks[i].off] = claim_next(w, i, 0);
        if ((i + 1) % SETUP_BATCH == 0)
            sl_engine_changes_clear(w->eng);
    }
    sl_engine_changes_clear(w->eng);
}

/* Waiters go round the locks one at a time, so that the claims of one queue
 * lie scattered in memory as they would on a server. */
static void world_waiters(world *w, bool random_prio)
{
    size_t made = 0;
    for (size_t k = 1; made < w->npending; k++) {
        for (size_t i = 0; i < w->nlocks && made < w->npending; i++) {
            if (k >= w->locks[i].len)
                continue;
            int32_t prio = random_prio ? (int32_t)(rng_next(&w->rng) % PRIO_SPREAD) : 0;
            w->ring[w->locks[i].off + k] = claim_next(w, i, prio);
            if (++made % SETUP_BATCH == 0)
                sl_engine_changes_clear(w->eng);
        }
    }
    sl_engine_changes_clear(w->eng);
}

/* What the engine must hold between two ops: every lock held, the N
 * waiters, and at most one ended claim not yet purged. */
static void world_check(world *w)
{
    sl_engine_stats s;
    sl_engine_stats_get(w->eng, &s);
    size_t held = w->held ? w->nlocks : 0;
    if (s.pending != w->npending || s.held != held)
        die("wrong pending/held count", (long long)s.pending, (long long)s.held);
    if (s.ended > 1 || s.claims != s.pending + s.held + s.ended)
        die("ended claims pile up", (long long)s.ended, (long long)s.claims);
}

static void world_close(world *w)
{
    sl_engine_free(w->eng);
    if (w->mem.bytes != 0 || w->mem.blocks != 0)
        die("the engine did not return all its memory", w->mem.bytes, w->mem.blocks);
    free(w->locks);
    free(w->ring);
}

/* ---- the ops --------------------------------------------------------------- */

/* A new waiter on lock li, withdrawn at once. */
static void op_churn(world *w, const char *id, size_t li, int32_t prio)
{
    sl_claim *c = claim_on(w, id, w->locks[li].name, prio);
    release(w, c, SL_REASON_WITHDRAWN);
    sl_engine_changes_clear(w->eng);
}

/* Lock li's holder releases, its head waiter is granted, and a new claim
 * joins at the tail (or is granted at once when nobody waited). */
static void op_handoff(world *w, const char *id, size_t li)
{
    mutex *m = &w->locks[li];
    sl_claim **r = w->ring + m->off;
    release(w, r[m->head], SL_REASON_RELEASED);
    r[m->head] = claim_on(w, id, m->name, 0);
    m->head = (m->head + 1) % m->len;
    sl_engine_changes_clear(w->eng);
}

/* After a handoff on li, its ring's head must hold the lock and the claim
 * that just joined must wait (or hold, when it is the only one). */
static void check_handoff(world *w, size_t li)
{
    const mutex *m = &w->locks[li];
    sl_claim **r = w->ring + m->off;
    size_t h = m->head, last = (h + m->len - 1) % m->len;
    sl_claim_view v;
    sl_claim_get(r[h], &v);
    if (v.state != SL_HELD)
        die("the head of the queue was not granted", (long long)li, v.state);
    sl_claim_get(r[last], &v);
    if (v.state != (m->len > 1 ? SL_PENDING : SL_HELD))
        die("the new claim is in the wrong state", (long long)li, v.state);
}

typedef struct round_in {
    char (*ids)[ID_LEN + 1];
    size_t *lock;
    int32_t *prio;
} round_in;

/* The rounds timed on one world. */
typedef struct timing {
    double ns[MAX_ROUNDS]; /* per op, one per round */
    size_t nr;
    uint64_t ops;
    double secs;
} timing;

typedef struct result {
    uint64_t ops;
    double best; /* the fastest round, ns per op */
    double median;
} result;

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* One timed round of n ops on w; ids, locks and priorities are drawn first
 * so that the clock times the engine, and the engine's counts are checked
 * after. */
static void run_round(world *w, op_kind kind, const round_in *in, size_t n, timing *t)
{
    for (size_t i = 0; i < n; i++) {
        make_id(w->ids++, in->ids[i]);
        in->lock[i] = w->nlocks > 1 ? (size_t)(rng_next(&w->rng) % w->nlocks) : 0;
        in->prio[i] = kind == OP_CHURN_RANDOM ? (int32_t)(rng_next(&w->rng) % PRIO_SPREAD) : 0;
    }
    double t0 = now_s();
    switch (kind) {
    case OP_FREE:
        for (size_t i = 0; i < n; i++) {
            release(w, claim_on(w, in->ids[i], w->locks[0].name, 0), SL_REASON_RELEASED);
            sl_engine_changes_clear(w->eng);
        }
        break;
    case OP_CHURN_TAIL:
    case OP_CHURN_RANDOM:
    case OP_SPREAD_CHURN:
        for (size_t i = 0; i < n; i++)
            op_churn(w, in->ids[i], in->lock[i], in->prio[i]);
        break;
    case OP_HANDOFF:
    case OP_SPREAD_HANDOFF:
        for (size_t i = 0; i < n; i++)
            op_handoff(w, in->ids[i], in->lock[i]);
        break;
    case OP_COUNT:
        break;
    }
    double dt = now_s() - t0;
    t->ns[t->nr++] = dt * 1e9 / (double)n;
    t->ops += n;
    t->secs += dt;
    world_check(w);
    if (kind == OP_HANDOFF || kind == OP_SPREAD_HANDOFF)
        check_handoff(w, in->lock[n - 1]);
}

static bool timing_done(const timing *t, const sizes *sz)
{
    bool enough = t->ops >= sz->min_ops && t->secs >= sz->min_secs;
    return t->nr >= 5 && (enough || t->secs >= sz->max_secs);
}

/* Times one op on nw worlds (the same op with different N), a round on
 * each in turn, until every one has run long enough. Taking turns puts the
 * worlds under the same machine noise, which matters for their ratios: on
 * a shared VM a neighbour can slow everything 2x for seconds. The figure
 * kept is the fastest round, since noise only ever adds time (a round is
 * thousands of ops, so no round is fast by luck); the median is reported
 * beside it. */
static void measure(world *ws, size_t nw, op_kind kind, const sizes *sz, result *out)
{
    size_t n = sz->round;
    round_in in = {malloc(n * sizeof(*in.ids)), malloc(n * sizeof(size_t)),
                   malloc(n * sizeof(int32_t))};
    timing *t = calloc(nw, sizeof(*t));
    if (!in.ids || !in.lock || !in.prio || !t)
        die("out of memory", 0, 0);
    for (bool done = false; !done;) {
        done = true;
        for (size_t j = 0; j < nw; j++) {
            if (t[j].nr == MAX_ROUNDS)
                continue;
            run_round(&ws[j], kind, &in, n, &t[j]);
            done = done && (timing_done(&t[j], sz) || t[j].nr == MAX_ROUNDS);
        }
    }
    for (size_t j = 0; j < nw; j++) {
        qsort(t[j].ns, t[j].nr, sizeof(double), cmp_double);
        out[j].ops = t[j].ops;
        out[j].best = t[j].ns[0];
        out[j].median = t[j].ns[t[j].nr / 2];
    }
    free(t);
    free(in.ids);
    free(in.lock);
    free(in.prio);
}

/* ---- the report ------------------------------------------------------------ */

static const char *count_text(size_t n, char *buf, size_t cap)
{
    if (n >= 1000000 && n % 1000000 == 0)
        snprintf(buf, cap, "%zuM", n / 1000000);
    else if (n >= 1000 && n % 1000 == 0)
        snprintf(buf, cap, "%zuk", n / 1000);
    else
        snprintf(buf, cap, "%zu", n);
    return buf;
}

static void op_label(op_kind kind, const sizes *sz, char *buf, size_t cap)
{
    char locks[24];
    count_text(sz->nlocks, locks, sizeof(locks));
    switch (kind) {
    case OP_FREE:
        snprintf(buf, cap, "free mutex: claim+release");
        break;
    case OP_CHURN_TAIL:
        snprintf(buf, cap, "1 mutex: churn at the tail");
        break;
    case OP_CHURN_RANDOM:
        snprintf(buf, cap, "1 mutex: churn at random places");
        break;
    case OP_HANDOFF:
        snprintf(buf, cap, "1 mutex: handoff");
        break;
    case OP_SPREAD_HANDOFF:
        snprintf(buf, cap, "%s mutexes: handoff", locks);
        break;
    case OP_SPREAD_CHURN:
        snprintf(buf, cap, "%s mutexes: churn", locks);
        break;
    case OP_COUNT:
        buf[0] = '\0';
        break;
    }
}

static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL)
        return;
    char line[256];
    while (fgets(line, sizeof(line), f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            colon += 1 + (colon[1] == ' ');
            colon[strcspn(colon, "\n")] = '\0';
            snprintf(buf, cap, "%s", colon);
            break;
        }
    }
    fclose(f);
}

/* Bytes per pending claim: n waiters on nlocks held mutexes. */
static void memory(const sizes *sz, size_t nlocks)
{
    size_t n = sz->n[2];
    world w;
    world_open(&w, nlocks, n, true);
    long long b0 = w.mem.bytes, r0 = rss_bytes();
    world_holders(&w);
    long long b1 = w.mem.bytes, r1 = rss_bytes();
    world_waiters(&w, false);
    long long b2 = w.mem.bytes, r2 = rss_bytes();
    world_check(&w);
    char ns[24], ls[24];
    printf("  %6s pending on %4s mutex%s  %7.1f B/claim allocated  %7.1f B/claim RSS",
           count_text(n, ns, sizeof(ns)), count_text(nlocks, ls, sizeof(ls)),
           nlocks == 1 ? "  " : "es", (double)(b2 - b1) / (double)n,
           (double)(r2 - r1) / (double)n);
    if (nlocks > 1)
        printf("   (each held mutex: %.1f B allocated, %.1f B RSS)",
               (double)(b1 - b0) / (double)nlocks, (double)(r1 - r0) / (double)nlocks);
    printf("\n");
    fflush(stdout);
    world_close(&w);
}

static void usage(FILE *out)
{
    fputs("usage: bench_engine [--quick] [--only OP] [--n N] [--secs S] [--help]\n"
          "\n"
          "Times the sluice engine in-process with 1, 10k and 1M claims pending:\n"
          "churn (a waiter joins a held mutex and withdraws), handoff (the holder\n"
          "releases to the head waiter and a new waiter joins), both spread over\n"
          "100k mutexes too; and measures the memory one pending claim costs.\n"
          "Prints ns/op and ops/s, and cost(1M)/cost(1) against the 3x target.\n"
          "\n"
          "  --quick      10k claims instead of 1M, 10k mutexes, short runs (a smoke test)\n"
          "  --only OP    time one op only, skipping memory (for a profiler): free,\n"
          "               churn-tail, churn-random, handoff, spread-handoff, spread-churn\n"
          "  --n N        time with N pending only, no memory or ratios (for a profiler)\n"
          "  --secs S     time each case for at least S seconds (default 1; quick 0.05)\n"
          "  --help       this text\n"
          "\n"
          "Exit status: 0, or 1 when the engine fails or misbehaves (never for speed).\n",
          out);
}

int main(int argc, char **argv)
{
    const sizes *sz = &FULL;
    int only = -1;
    long long only_n = -1;
    double secs = -1;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--quick") == 0) {
            sz = &QUICK;
        } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
            i++;
            for (int k = 0; k < OP_COUNT; k++)
                if (strcmp(argv[i], OP_NAMES[k]) == 0)
                    only = k;
            if (only < 0) {
                fprintf(stderr, "bench_engine: no op named %s\n", argv[i]);
                usage(stderr);
                return 2;
            }
        } else if (strcmp(argv[i], "--n") == 0 && i + 1 < argc) {
            char *end;
            only_n = strtoll(argv[++i], &end, 10);
            if (*end != '\0' || only_n < 1) {
                fprintf(stderr, "bench_engine: --n wants a count of at least 1\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--secs") == 0 && i + 1 < argc) {
            char *end;
            secs = strtod(argv[++i], &end);
            if (*end != '\0' || !(secs > 0 && secs <= 3600)) {
                fprintf(stderr, "bench_engine: --secs wants seconds, more than 0\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "bench_engine: unknown argument %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    sizes cur = *sz;
    size_t nsizes = 3;
    if (only_n > 0) {
        cur.n[0] = (size_t)only_n;
        nsizes = 1;
    }
    if (secs > 0) {
        cur.min_secs = secs;
        cur.max_secs = secs * 4;
    }
    char cpu[128], big[24], label[64];
    cpu_model(cpu, sizeof(cpu));
    count_text(cur.n[2], big, sizeof(big));
    printf("sluice engine benchmark%s\n", sz == &QUICK ? " (--quick)" : "");
    printf("cpu: %s; one thread\n", cpu);
#ifndef __OPTIMIZE__
    printf("warning: not an optimized build; figures mean little\n");
#endif
    printf("claims: 22-char ids, 16-char holders, one mutex each, 30 s lease; batch\n"
           "cleared after every op; ended claims purged at once. ns/op: the fastest\n"
           "timed round (median beside it); the sizes take turns, round by round\n\n");

    if (only < 0 && nsizes == 3) {
        printf("memory per pending claim (alloc hook: malloc_usable_size; RSS: /proc/self/statm)\n");
        memory(&cur, 1);
        memory(&cur, cur.nlocks);
        printf("\n");
    }

    printf("%-34s %7s %9s %9s %9s %10s\n", "operation", "pending", "ops", "ns/op", "median",
           "ops/s");
    double ns[OP_COUNT][3] = {{0}};
    for (int k = 0; k < OP_COUNT; k++) {
        if (only >= 0 && k != only)
            continue;
        op_label((op_kind)k, &cur, label, sizeof(label));
        bool spread = k == OP_SPREAD_HANDOFF || k == OP_SPREAD_CHURN;
        size_t nw = k == OP_FREE ? 1 : nsizes;
        world ws[3];
        result r[3];
        for (size_t j = 0; j < nw; j++) {
            world_open(&ws[j], spread ? cur.nlocks : 1, k == OP_FREE ? 0 : cur.n[j], k != OP_FREE);
            world_holders(&ws[j]);
            world_waiters(&ws[j], k == OP_CHURN_RANDOM);
        }
        measure(ws, nw, (op_kind)k, &cur, r);
        for (size_t j = 0; j < nw; j++) {
            char nbuf[24];
            ns[k][j] = r[j].best;
            printf("%-34s %7s %9llu %9.1f %9.1f %10.0f\n", label,
                   count_text(ws[j].npending, nbuf, sizeof(nbuf)), (unsigned long long)r[j].ops,
                   r[j].best, r[j].median, 1e9 / r[j].best);
            world_close(&ws[j]);
        }
        fflush(stdout);
    }
    if (nsizes < 3)
        return 0;

    printf("\ncost(%s pending) / cost(1 pending), target <= 3x\n", big);
    for (int k = OP_CHURN_TAIL; k < OP_COUNT; k++) {
        if (only >= 0 && k != only)
            continue;
        op_label((op_kind)k, &cur, label, sizeof(label));
        double ratio = ns[k][2] / ns[k][0];
        printf("  %-34s %5.2fx  %s\n", label, ratio, ratio <= 3.0 ? "PASS" : "FAIL");
    }
    return 0;
}
