/* test_sqlite_crash.c - what sl_store_write acknowledged survives a killed
 * process (SL_DURABILITY_NORMAL: WAL, synchronous=NORMAL).
 *
 * A child process loads the store, then writes batches in a loop: each
 * makes one to three claims held (on a semaphore every claim shares, so
 * tokens grow, and a mutex of its own), ends some others, lets claims wait
 * and be purged; after each successful write it sends the ids and tokens
 * of the claims it made held down a pipe. The parent reads a random number
 * of acknowledgements, SIGKILLs the child (most often in the middle of the
 * next transaction), reopens and loads the store, and checks that every
 * acknowledged claim is there, held, with its token. Twenty rounds on one
 * store, each from a different seed, so each round also restores what the
 * killed rounds before it left. No sleeps: the parent waits on the pipe. */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "store_support.h"
#include "support.h"

#define ROUNDS 20
#define ACKS_MAX 4096      /* acknowledged claims over all rounds */
#define PIPE_WAIT_MS 60000 /* a child silent this long is stuck */
#define POOL_LIMIT 1000000

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* ---- the child ----------------------------------------------------------- */

static void child_die(int fd, const char *what, const char *detail)
{
    char line[1200];
    int n = snprintf(line, sizeof(line), "ERR %s: %s\n", what, detail);
    if (write(fd, line, (size_t)n) < 0)
        _exit(3);
    _exit(2);
}

static sl_claim *child_claim(sl_engine *eng, int fd, int64_t now, const char *id, const char *lock2,
                             bool pool)
{
    sl_lock_req locks[2] = {{SL_KIND_SEMAPHORE, "pool", 1, 0}, {SL_KIND_MUTEX, lock2, 1, 0}};
    sl_claim_req req;
    memset(&req, 0, sizeof(req));
    req.id = id;
    req.holder = id;
    req.locks = pool ? locks : locks + 1;
    req.nlocks = pool ? 2 : 1;
    req.grace_ms = -1;
    req.lease_ms = -1;
    sl_claim *c = NULL;
    sl_error err;
    if (sl_claim_create(eng, &req, now, &c, &err) != 0)
        child_die(fd, "claim", err.what);
    return c;
}

/* Never returns: loops until killed (or a bound, which the parent never
 * lets it reach). */
static void child(const char *dir, int fd, int round, uint64_t seed)
{
    sl_engine_opts o;
    sl_engine_opts_default(&o);
    o.ended_retention_ms = 50; /* purges happen within a round */
    o.idle_locks_max = 16;     /* and evictions */
    sl_engine *eng = NULL;
    if (sl_engine_new(&o, &eng) != 0)
        child_die(fd, "engine", "sl_engine_new failed");
    sl_store_opts so = {ts_url(dir), SL_DURABILITY_NORMAL};
    sl_store *st = NULL;
    char err[1024];
    if (sl_store_open(&so, &st, err, sizeof(err)) != 0)
        child_die(fd, "open", err);
    int64_t now = (int64_t)round * 1000000;
    if (sl_store_load(st, eng, now, NULL) != 0)
        child_die(fd, "load", sl_store_error(st));
    if (!sl_config_find(eng, "pool")) {
        sl_error e;
        if (sl_sem_set(eng, "pool", POOL_LIMIT, SL_STRICT, 0, now, &e) != 0)
            child_die(fd, "sem", e.what);
        child_claim(eng, fd, now, "blocker", "busy", false);
    }
    for (int i = 0; i < 100000; i++) {
        now++;
        char line[512];
        size_t n = 0;
        int held = 1 + (int)(rnd(&seed) % 3);
        for (int k = 0; k < held; k++) {
            char id[32], mtx[48];
            snprintf(id, sizeof(id), "r%d-%d-%d", round, i, k);
            snprintf(mtx, sizeof(mtx), "own/%s", id);
            sl_claim *c = child_claim(eng, fd, now, id, mtx, true);
            sl_claim_lock_view lv;
            sl_claim_lock_get(eng, c, 0, &lv);
            n += (size_t)snprintf(line + n, sizeof(line) - n, "%s %llu\n", id,
                                  (unsigned long long)lv.token);
        }
        /* Noise: a waiter that stays, and a claim that comes and goes. */
        char id[32];
        snprintf(id, sizeof(id), "w%d-%d", round, i);
        child_claim(eng, fd, now, id, "busy", rnd(&seed) % 2);
        snprintf(id, sizeof(id), "x%d-%d", round, i);
        char idle[48];
        snprintf(idle, sizeof(idle), "idle/%s", id); /* goes idle, then is evicted */
        sl_claim *x = child_claim(eng, fd, now, id, idle, true);
        if (sl_claim_release(eng, x, SL_REASON_RELEASED, now) != 0)
            child_die(fd, "release", id);
        sl_changes ch;
        sl_engine_changes(eng, &ch);
        if (sl_store_write(st, eng, &ch) != 0)
            child_die(fd, "write", sl_store_error(st));
        sl_engine_changes_clear(eng);
        if (write(fd, line, n) != (ssize_t)n)
            _exit(4);
    }
    _exit(5);
}

/* ---- the parent ---------------------------------------------------------- */

typedef struct ack {
    char id[48];
    uint64_t token;
} ack;

typedef struct acks {
    ack v[ACKS_MAX];
    size_t n;
    char partial[1024]; /* a line not yet complete */
    size_t plen;
} acks;

/* Adds the complete lines of buf; returns how many were added. */
static size_t take_lines(acks *a, const char *buf, size_t len)
{
    size_t added = 0;
    for (size_t i = 0; i < len; i++) {
        if (buf[i] != '\n') {
            assert_true(a->plen + 1 < sizeof(a->partial));
            a->partial[a->plen++] = buf[i];
            continue;
        }
        a->partial[a->plen] = '\0';
        a->plen = 0;
        if (strncmp(a->partial, "ERR ", 4) == 0)
            fail_msg("child: %s", a->partial);
        assert_true(a->n < ACKS_MAX);
        ack *k = &a->v[a->n];
        char *sp = strchr(a->partial, ' ');
        assert_non_null(sp);
        *sp = '\0';
        assert_true(strlen(a->partial) < sizeof(k->id));
        memcpy(k->id, a->partial, strlen(a->partial) + 1);
        k->token = strtoull(sp + 1, NULL, 10);
        a->n++;
        added++;
    }
    return added;
}

/* Reads acknowledgements until `want` more came, or to the end of the pipe
 * when want is 0. */
static void read_acks(int fd, acks *a, size_t want)
{
    size_t got = 0;
    for (;;) {
        if (want && got >= want)
            return;
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, PIPE_WAIT_MS);
        if (rc < 0 && errno == EINTR)
            continue;
        assert_true(rc == 1);
        char buf[4096];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR)
            continue;
        assert_true(n >= 0);
        if (n == 0) {
            if (want)
                fail_msg("the child ended after %zu of %zu acknowledgements", got, want);
            return;
        }
        got += take_lines(a, buf, (size_t)n);
    }
}

static void check_round(const char *dir, const acks *a, int round)
{
    sl_store *st = ts_open(dir, SL_DURABILITY_NORMAL);
    sl_store_load_stats stats;
    sl_engine *eng = ts_load(st, NULL, (int64_t)round * 1000000 + 999999, &stats);
    uint64_t top = 0;
    for (size_t i = 0; i < a->n; i++) {
        sl_claim *c = sl_claim_find(eng, a->v[i].id);
        if (!c)
            fail_msg("round %d: acknowledged claim %s is missing", round, a->v[i].id);
        sl_claim_view v;
        sl_claim_get(c, &v);
        if (v.state != SL_HELD)
            fail_msg("round %d: %s is %s", round, v.id, sl_state_name(v.state));
        sl_claim_lock_view lv;
        sl_claim_lock_get(eng, c, 0, &lv);
        if (lv.token != a->v[i].token)
            fail_msg("round %d: %s has token %llu, acknowledged %llu", round, v.id,
                     (unsigned long long)lv.token, (unsigned long long)a->v[i].token);
        if (lv.token > top)
            top = lv.token;
    }
    /* The state is whole: the pool counts every holder once, its token is
     * past every acknowledged one, and the event sequence goes on past the
     * log. */
    sl_lock_view pool;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, "pool", &pool, NULL), 0);
    assert_true(pool.token >= top);
    assert_true(pool.used >= a->n);
    assert_int_equal(pool.used, pool.nholders);
    uint64_t last = 0;
    assert_int_equal(sl_store_last_seq(st, &last), 0);
    sl_engine_stats es;
    sl_engine_stats_get(eng, &es);
    assert_int_equal(es.next_seq, last + 1);
    assert_true(stats.pending >= 1);
    t_free(eng);
    sl_store_close(st);
}

static void killed_writer_keeps_acknowledged(void **state)
{
    (void)state;
    char *dir = ts_tmpdir();
    acks *a = calloc(1, sizeof(*a));
    assert_non_null(a);
    size_t total_rounds_acks = 0;
    for (int round = 0; round < ROUNDS; round++) {
        uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(round + 1);
        size_t want = 1 + (size_t)(rnd(&seed) % 120);
        int fds[2];
        assert_int_equal(pipe(fds), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(fds[0]);
            child(dir, fds[1], round, seed);
        }
        close(fds[1]);
        read_acks(fds[0], a, want);
        assert_int_equal(kill(pid, SIGKILL), 0);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        /* Lines written before the kill were acknowledged too. */
        read_acks(fds[0], a, 0);
        close(fds[0]);
        assert_int_equal(a->plen, 0);
        total_rounds_acks = a->n;
        check_round(dir, a, round);
    }
    print_message("%d rounds, %zu acknowledged claims checked\n", ROUNDS, total_rounds_acks);
    free(a);
    ts_rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TS_TEST(killed_writer_keeps_acknowledged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
