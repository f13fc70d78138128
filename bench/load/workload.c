/* workload.c - clients as threads, the measured window, and the checks of
 * what they saw (see workload.h for the definitions). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu_time.h"
#include "workload.h"

/* After the window, clients finish the cycle they are in; a long poll is
 * answered within the server's 30 s cap, so 40 s means something is stuck. */
#define DRAIN_NS (40 * 1000000000LL)
#define POLL_NS (20 * 1000000LL)
/* Tokens kept per client for the duplicate check: 8 MiB. */
#define MAX_TOKENS_PER_CLIENT (1u << 20)

/* What all clients of one lock share, to check each other. */
typedef struct lock_watch {
    sl_load_lock lock;  /* its limit included */
    atomic_int holders; /* clients that learnt they hold and have not released */
    atomic_int max_holders;
    _Atomic uint64_t max_token;  /* the largest token any client has learnt */
    _Atomic uint64_t last_token; /* mutex: the latest grant's token */
    atomic_int last_holder;      /* mutex: the latest holder's index, -1 before the first */
    _Atomic int64_t release_ns;  /* mutex: when the latest holder began to release */
} lock_watch;

typedef struct run run;

typedef struct client {
    int index;
    run *run;
    lock_watch *watch;
    void *session;
    char holder[32];
    pthread_t thread;
    bool started;
    sl_hist cycle, handoff;
    uint64_t cycles, transitions, changes, grants, resumed;
    uint64_t holder_violations, token_violations;
    uint64_t *tokens; /* every token learnt, up to MAX_TOKENS_PER_CLIENT */
    size_t ntokens, cap;
    bool truncated;
} client;

struct run {
    const sl_load_config *cfg;
    const sl_workload *w;
    int64_t from_ns, until_ns; /* the measured window */
    atomic_bool stop;          /* a client failed: everyone stops */
    atomic_bool interrupted;   /* sessions were interrupted: later failures are ours */
    atomic_int running;        /* client threads not yet finished */
    atomic_uint errors;
    pthread_mutex_t error_lock;
    char first_error[700];
    lock_watch *locks;
    int nlocks;
    client *clients;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void sleep_ns(int64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000LL),
                          .tv_nsec = (long)(ns % 1000000000LL)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static bool in_window(const run *r, int64_t t)
{
    return t >= r->from_ns && t < r->until_ns;
}

const char *sl_workload_name(sl_workload_kind kind)
{
    switch (kind) {
    case SL_WORKLOAD_UNCONTENDED:
        return "uncontended";
    case SL_WORKLOAD_CONTENDED:
        return "contended";
    case SL_WORKLOAD_SEMAPHORE:
        return "semaphore";
    case SL_WORKLOAD_CONNECT:
        return "connect";
    case SL_WORKLOAD_RESUME:
        return "resume";
    }
    return "?";
}

static void atomic_max_int(atomic_int *a, int v)
{
    int cur = atomic_load(a);
    while (v > cur && !atomic_compare_exchange_weak(a, &cur, v))
        ;
}

static void atomic_max_u64(_Atomic uint64_t *a, uint64_t v)
{
    uint64_t cur = atomic_load(a);
    while (v > cur && !atomic_compare_exchange_weak(a, &cur, v))
        ;
}

/* ---- one client -------------------------------------------------------- */

/* Records the failure (the first one in words) and stops the run. Failures
 * caused by our own interrupt at the end are not counted. */
static int client_fail(client *c, const char *what)
{
    run *r = c->run;
    if (atomic_load(&r->interrupted))
        return -1;
    atomic_fetch_add(&r->errors, 1);
    pthread_mutex_lock(&r->error_lock);
    if (!r->first_error[0])
        snprintf(r->first_error, sizeof r->first_error, "client %d: %s: %s", c->index, what,
                 r->cfg->backend->error(c->session));
    pthread_mutex_unlock(&r->error_lock);
    atomic_store(&r->stop, true);
    return -1;
}

static void keep_token(client *c, uint64_t token)
{
    if (c->ntokens == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        uint64_t *n;
        if (cap > MAX_TOKENS_PER_CLIENT || !(n = realloc(c->tokens, cap * sizeof *n))) {
            c->truncated = true;
            return;
        }
        c->tokens = n;
        c->cap = cap;
    }
    c->tokens[c->ntokens++] = token;
}

/* The client just learnt (at learnt_ns) that it holds g; it had asked at
 * asked_ns, when the largest token learnt by anyone was floor. */
static void on_granted(client *c, const sl_load_grant *g, int64_t asked_ns, int64_t learnt_ns,
                       uint64_t floor)
{
    lock_watch *lw = c->watch;
    run *r = c->run;
    bool tokens = r->cfg->backend->tokens; /* else every token is 0: nothing to check */
    int holders = atomic_fetch_add(&lw->holders, 1) + 1;
    bool bad_token = tokens && g->token <= floor;
    c->grants++;
    if (holders > lw->lock.limit)
        c->holder_violations++;
    atomic_max_int(&lw->max_holders, holders);
    if (tokens) {
        atomic_max_u64(&lw->max_token, g->token);
        keep_token(c, g->token);
    }
    if (lw->lock.limit == 1) {
        /* One holder at a time: grants are learnt in the order they were
         * made, so each token must exceed the previous holder's. */
        uint64_t prev_token = atomic_exchange(&lw->last_token, g->token);
        int prev_holder = atomic_exchange(&lw->last_holder, c->index);
        int64_t released = atomic_load(&lw->release_ns);
        bad_token = bad_token || (tokens && g->token <= prev_token);
        if (prev_holder >= 0 && in_window(r, learnt_ns)) {
            c->transitions++;
            c->changes += prev_holder != c->index;
            if (asked_ns <= released)
                sl_hist_record(&c->handoff, (uint64_t)(learnt_ns - released));
        }
    }
    c->token_violations += bad_token;
}

/* acquire -> (hold for no time) -> release. */
static int cycle(client *c)
{
    const sl_load_backend *be = c->run->cfg->backend;
    lock_watch *lw = c->watch;
    sl_load_grant g;
    uint64_t floor = atomic_load(&lw->max_token);
    int64_t t0 = now_ns(), t1, t2;
    if (be->acquire(c->session, &lw->lock, &g) < 0)
        return client_fail(c, "acquire");
    t1 = now_ns();
    on_granted(c, &g, t0, t1, floor);
    atomic_fetch_sub(&lw->holders, 1);
    if (lw->lock.limit == 1)
        atomic_store(&lw->release_ns, now_ns());
    if (be->release(c->session, &g) < 0)
        return client_fail(c, "release");
    t2 = now_ns();
    if (in_window(c->run, t2)) {
        c->cycles++;
        sl_hist_record(&c->cycle, (uint64_t)(t2 - t0));
    }
    return 0;
}

/* connect -> one request -> close, on a new connection. */
static int connect_cycle(client *c)
{
    const sl_load_backend *be = c->run->cfg->backend;
    int64_t t0 = now_ns(), t1;
    int rc = be->connect_once(c->session, c->run->w->kind == SL_WORKLOAD_RESUME);
    if (rc < 0)
        return client_fail(c, "connect");
    t1 = now_ns();
    if (in_window(c->run, t1)) {
        c->cycles++;
        c->resumed += rc == 1;
        sl_hist_record(&c->cycle, (uint64_t)(t1 - t0));
    }
    return 0;
}

static void *client_main(void *arg)
{
    client *c = arg;
    run *r = c->run;
    bool connect = SL_WORKLOAD_IS_CONNECT(r->w->kind);
    while (!atomic_load(&r->stop) && now_ns() < r->until_ns)
        if ((connect ? connect_cycle(c) : cycle(c)) < 0)
            break;
    atomic_fetch_sub(&r->running, 1);
    return NULL;
}

/* ---- the run ----------------------------------------------------------- */

static int set_locks(run *r)
{
    const sl_workload *w = r->w;
    int i;
    r->nlocks = w->kind == SL_WORKLOAD_UNCONTENDED ? w->clients : 1;
    r->locks = calloc((size_t)r->nlocks, sizeof *r->locks);
    if (!r->locks)
        return -1;
    for (i = 0; i < r->nlocks; i++) {
        lock_watch *lw = &r->locks[i];
        lw->lock.kind = w->kind == SL_WORKLOAD_SEMAPHORE ? SL_LOAD_SEMAPHORE : SL_LOAD_MUTEX;
        if (w->kind == SL_WORKLOAD_UNCONTENDED)
            snprintf(lw->lock.name, sizeof lw->lock.name, "%s/u-%d", r->cfg->prefix, i);
        else if (w->kind == SL_WORKLOAD_CONTENDED || SL_WORKLOAD_IS_CONNECT(w->kind))
            snprintf(lw->lock.name, sizeof lw->lock.name, "%s/one", r->cfg->prefix); /* unused */
        else
            snprintf(lw->lock.name, sizeof lw->lock.name, "%s/pool", r->cfg->prefix);
        lw->lock.limit = w->kind == SL_WORKLOAD_SEMAPHORE ? w->limit : 1;
        atomic_init(&lw->holders, 0);
        atomic_init(&lw->max_holders, 0);
        atomic_init(&lw->max_token, 0);
        atomic_init(&lw->last_token, 0);
        atomic_init(&lw->last_holder, -1);
        atomic_init(&lw->release_ns, 0);
    }
    return 0;
}

/* Client i's server: entry i (round robin) of a comma-separated list, so
 * that the clients of one lock spread over the servers of a shared-mode
 * cluster (each hands the lock to clients on other servers). */
static const char *address_of(const char *list, int i, char *out, size_t cap)
{
    int n = 1;
    for (const char *p = list; *p; p++)
        n += *p == ',';
    const char *p = list;
    for (int k = i % n; k > 0; k--)
        p = strchr(p, ',') + 1;
    size_t len = strcspn(p, ",");
    snprintf(out, cap, "%.*s", (int)(len < cap ? len : cap - 1), p);
    return out;
}

static int open_sessions(run *r, char *err, size_t cap)
{
    const sl_load_backend *be = r->cfg->backend;
    int i;
    r->clients = calloc((size_t)r->w->clients, sizeof *r->clients);
    if (!r->clients) {
        snprintf(err, cap, "out of memory for %d clients", r->w->clients);
        return -1;
    }
    for (i = 0; i < r->w->clients; i++) {
        client *c = &r->clients[i];
        c->index = i;
        c->run = r;
        c->watch = &r->locks[r->nlocks == 1 ? 0 : i];
        snprintf(c->holder, sizeof c->holder, "load-%d", i);
        sl_hist_init(&c->cycle);
        sl_hist_init(&c->handoff);
        char address[256];
        if (be->session_open(address_of(r->cfg->address, i, address, sizeof address), c->holder,
                             &c->session, err, cap) < 0)
            return -1;
    }
    return 0;
}

static void close_sessions(run *r)
{
    int i;
    for (i = 0; r->clients && i < r->w->clients; i++) {
        if (r->clients[i].session)
            r->cfg->backend->session_close(r->clients[i].session);
        free(r->clients[i].tokens);
    }
    free(r->clients);
    free(r->locks);
}

/* A thread that cannot start fails the run like a failed request. */
static int start_clients(run *r)
{
    int i, rc;
    for (i = 0; i < r->w->clients; i++) {
        atomic_fetch_add(&r->running, 1);
        rc = pthread_create(&r->clients[i].thread, NULL, client_main, &r->clients[i]);
        if (rc != 0) {
            atomic_fetch_sub(&r->running, 1);
            atomic_fetch_add(&r->errors, 1);
            pthread_mutex_lock(&r->error_lock);
            if (!r->first_error[0])
                snprintf(r->first_error, sizeof r->first_error, "client %d: pthread_create: %s", i,
                         strerror(rc));
            pthread_mutex_unlock(&r->error_lock);
            atomic_store(&r->stop, true);
            return -1;
        }
        r->clients[i].started = true;
    }
    return 0;
}

static void interrupt_all(run *r)
{
    int i;
    atomic_store(&r->interrupted, true);
    for (i = 0; i < r->w->clients; i++)
        r->cfg->backend->interrupt(r->clients[i].session);
}

/* Sleeps until t; false if the run was stopped meanwhile. */
static bool wait_until(run *r, int64_t t)
{
    int64_t now;
    while ((now = now_ns()) < t) {
        if (atomic_load(&r->stop))
            return false;
        sleep_ns(t - now < POLL_NS ? t - now : POLL_NS);
    }
    return !atomic_load(&r->stop);
}

static void sample_cpu(const run *r, double *load, double *user, double *server)
{
    *load = sl_cpu_self_seconds(user);
    if (r->cfg->server_pid <= 0 || sl_cpu_process_seconds(r->cfg->server_pid, server) < 0)
        *server = -1;
}

/* The measured window, CPU sampled at both ends; then the drain. */
static void measure(run *r, sl_load_result *out)
{
    double load0, user0, server0, load1, user1, server1;
    int64_t give_up = r->until_ns + DRAIN_NS;
    out->load_cpu_s = -1; /* unless the window completes */
    out->server_cpu_s = -1;
    if (wait_until(r, r->from_ns)) {
        sample_cpu(r, &load0, &user0, &server0);
        if (wait_until(r, r->until_ns)) {
            sample_cpu(r, &load1, &user1, &server1);
            out->load_cpu_s = load1 - load0;
            out->load_user_s = user1 - user0;
            out->server_cpu_s = server0 >= 0 && server1 >= 0 ? server1 - server0 : -1;
        }
    }
    while (atomic_load(&r->running) > 0 && !atomic_load(&r->stop) && now_ns() < give_up)
        sleep_ns(POLL_NS);
    if (atomic_load(&r->running) > 0) {
        if (!atomic_load(&r->stop)) {
            atomic_fetch_add(&r->errors, 1);
            pthread_mutex_lock(&r->error_lock);
            snprintf(r->first_error, sizeof r->first_error,
                     "%d client(s) still blocked %lld s after the end", atomic_load(&r->running),
                     DRAIN_NS / 1000000000LL);
            pthread_mutex_unlock(&r->error_lock);
        }
        interrupt_all(r); /* the others may wait for a lock a failed client holds */
    }
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Tokens handed out twice on one lock, over every client of that lock. */
static uint64_t duplicates(const run *r, const lock_watch *lw, bool *truncated)
{
    size_t n = 0, k = 0, i;
    uint64_t *all, dup = 0;
    int j;
    for (j = 0; j < r->w->clients; j++)
        if (r->clients[j].watch == lw)
            n += r->clients[j].ntokens;
    all = malloc((n ? n : 1) * sizeof *all);
    if (!all) {
        *truncated = true;
        return 0;
    }
    for (j = 0; j < r->w->clients; j++) {
        const client *c = &r->clients[j];
        if (c->watch != lw || c->ntokens == 0) /* tokens is NULL then */
            continue;
        memcpy(all + k, c->tokens, c->ntokens * sizeof *all);
        k += c->ntokens;
    }
    qsort(all, n, sizeof *all, cmp_u64);
    for (i = 1; i < n; i++)
        dup += all[i] == all[i - 1];
    free(all);
    return dup;
}

static void collect(run *r, sl_load_result *out)
{
    int i;
    out->min_client_cycles = UINT64_MAX;
    for (i = 0; i < r->w->clients; i++) {
        const client *c = &r->clients[i];
        sl_hist_merge(&out->cycle, &c->cycle);
        sl_hist_merge(&out->handoff, &c->handoff);
        out->cycles += c->cycles;
        out->transitions += c->transitions;
        out->changes += c->changes;
        out->grants += c->grants;
        out->resumed += c->resumed;
        out->holder_violations += c->holder_violations;
        out->token_violations += c->token_violations;
        out->tokens_truncated = out->tokens_truncated || c->truncated;
        if (c->cycles < out->min_client_cycles)
            out->min_client_cycles = c->cycles;
        if (c->cycles > out->max_client_cycles)
            out->max_client_cycles = c->cycles;
    }
    for (i = 0; i < r->nlocks; i++) {
        int m = atomic_load(&r->locks[i].max_holders);
        if (m > out->max_holders)
            out->max_holders = m;
        out->duplicate_tokens += duplicates(r, &r->locks[i], &out->tokens_truncated);
    }
    out->errors = atomic_load(&r->errors);
    memcpy(out->first_error, r->first_error, sizeof out->first_error);
}

/* The service's history of the run, replayed (when the backend has one). */
static void check_history(run *r, void *control, uint64_t mark, sl_load_result *out)
{
    const sl_load_backend *be = r->cfg->backend;
    sl_load_lock *locks;
    int i;
    if (!be->history_check || out->errors || SL_WORKLOAD_IS_CONNECT(r->w->kind))
        return;
    locks = calloc((size_t)r->nlocks, sizeof *locks);
    if (!locks)
        return;
    for (i = 0; i < r->nlocks; i++)
        locks[i] = r->locks[i].lock;
    if (be->history_check(control, mark, locks, r->nlocks, &out->history) == 0) {
        out->history_checked = true;
    } else {
        out->errors++;
        snprintf(out->first_error, sizeof out->first_error, "history: %s", be->error(control));
    }
    free(locks);
}

/* Opens the sessions, prepares the service (semaphore, history mark),
 * runs the clients, and undoes the preparation. */
static int run_clients(run *r, sl_load_result *out)
{
    const sl_load_backend *be = r->cfg->backend;
    const sl_workload *w = r->w;
    void *control = NULL;
    uint64_t mark = 0;
    int64_t start;
    int i, rc = -1;
    char first[256]; /* the control session's: the list's first server */
    if (set_locks(r) < 0 || open_sessions(r, out->first_error, sizeof out->first_error) < 0 ||
        be->session_open(address_of(r->cfg->address, 0, first, sizeof first), "load-control",
                         &control, out->first_error, sizeof out->first_error) < 0)
        goto done;
    if (be->history_mark && !SL_WORKLOAD_IS_CONNECT(w->kind) &&
        be->history_mark(control, &mark) < 0)
        goto control_failed;
    if (w->kind == SL_WORKLOAD_SEMAPHORE &&
        be->semaphore_create(control, r->locks[0].lock.name, w->limit) < 0)
        goto control_failed;
    start = now_ns();
    r->from_ns = start + (int64_t)(r->cfg->warmup_s * 1e9);
    r->until_ns = r->from_ns + (int64_t)(r->cfg->duration_s * 1e9);
    out->seconds = r->cfg->duration_s;
    if (start_clients(r) == 0)
        measure(r, out);
    else
        interrupt_all(r);
    for (i = 0; i < w->clients; i++)
        if (r->clients[i].started)
            pthread_join(r->clients[i].thread, NULL);
    collect(r, out);
    check_history(r, control, mark, out);
    if (w->kind == SL_WORKLOAD_SEMAPHORE && !out->errors &&
        be->semaphore_delete(control, r->locks[0].lock.name) < 0) {
        out->errors++;
        snprintf(out->first_error, sizeof out->first_error, "%s", be->error(control));
    }
    rc = 0;
    goto done;
control_failed:
    snprintf(out->first_error, sizeof out->first_error, "%s", be->error(control));
done:
    if (control)
        be->session_close(control);
    close_sessions(r);
    return rc;
}

int sl_workload_run(const sl_load_config *cfg, const sl_workload *w, sl_load_result *out)
{
    run r;
    int rc;
    memset(out, 0, sizeof *out);
    out->workload = *w;
    out->server_cpu_s = -1;
    sl_hist_init(&out->cycle);
    sl_hist_init(&out->handoff);
    if (w->clients < 1 || w->clients > SL_WORKLOAD_MAX_CLIENTS || w->limit < 1) {
        snprintf(out->first_error, sizeof out->first_error, "bad workload: %d clients, limit %d",
                 w->clients, w->limit);
        return -1;
    }
    memset(&r, 0, sizeof r);
    r.cfg = cfg;
    r.w = w;
    atomic_init(&r.stop, false);
    atomic_init(&r.interrupted, false);
    atomic_init(&r.running, 0);
    atomic_init(&r.errors, 0);
    pthread_mutex_init(&r.error_lock, NULL);
    rc = run_clients(&r, out);
    pthread_mutex_destroy(&r.error_lock);
    return rc;
}

bool sl_load_result_ok(const sl_load_result *r)
{
    return r->errors == 0 && r->holder_violations == 0 && r->token_violations == 0 &&
           r->duplicate_tokens == 0 && r->max_holders <= r->workload.limit &&
           (!r->history_checked || (r->history.out_of_order == 0 && r->history.over_limit == 0 &&
                                    r->history.grants == r->grants));
}
