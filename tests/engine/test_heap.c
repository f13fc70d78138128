/* test_heap.c - tests of the timer heap against a flat array of timers.
 *
 * Random runs arm, move, cancel and pop timers, many sharing a deadline so
 * that the seq tie-break is exercised, and after every step check the heap
 * property, every timer's recorded index and the earliest timer against a
 * linear scan. Popping everything must yield timers in (at, seq) order. A
 * counting allocator checks growth and that the heap frees what it took. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "heap.h"
#include "mem.h"

static uint64_t g_seed;
static long g_step = -1;

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            fail_msg("seed=%" PRIu64 " step=%ld: %s", g_seed, g_step, #c);                         \
    } while (0)

typedef struct counter {
    size_t allocs, reallocs, frees;
} counter;

static void *count_alloc(void *ud, void *ptr, size_t size)
{
    counter *c = ud;
    if (size == 0) {
        c->frees += ptr != NULL;
        free(ptr);
        return NULL;
    }
    if (ptr == NULL)
        c->allocs++;
    else
        c->reallocs++;
    void *p = realloc(ptr, size);
    assert_non_null(p);
    return p;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *s >> 33;
}

static int before(const sl_timer *a, const sl_timer *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

/* The reference: the armed timers are those whose flag is set. */
typedef struct world {
    counter c;
    sl_mem mem;
    sl_heap h;
    sl_timer *t;
    int *armed;
    size_t n;
    uint64_t rng;
} world;

static void world_init(world *w, size_t n, uint64_t seed)
{
    w->c = (counter){0};
    sl__mem_init(&w->mem, count_alloc, &w->c);
    sl__heap_init(&w->h, &w->mem);
    w->t = calloc(n, sizeof *w->t);
    w->armed = calloc(n, sizeof *w->armed);
    assert_non_null(w->t);
    assert_non_null(w->armed);
    w->n = n;
    w->rng = seed;
    g_seed = seed;
    /* seq runs against the pool order so ties are not settled by index. */
    for (size_t i = 0; i < n; i++)
        sl__timer_init(&w->t[i], (uint64_t)(n - i) * 3);
}

static void world_free(world *w)
{
    sl__heap_free(&w->h);
    for (size_t i = 0; i < w->n; i++)
        CHECK(w->t[i].index == SL_TIMER_IDLE);
    CHECK(w->mem.live == 0);
    free(w->t);
    free(w->armed);
}

static const sl_timer *ref_min(const world *w)
{
    const sl_timer *m = NULL;
    for (size_t i = 0; i < w->n; i++)
        if (w->armed[i] && (m == NULL || before(&w->t[i], m)))
            m = &w->t[i];
    return m;
}

static void check(const world *w)
{
    const sl_heap *h = &w->h;
    size_t armed = 0;
    for (size_t i = 0; i < w->n; i++) {
        armed += (size_t)w->armed[i];
        if (!w->armed[i])
            CHECK(w->t[i].index == SL_TIMER_IDLE);
        else
            CHECK(w->t[i].index < h->n && h->v[w->t[i].index].t == &w->t[i] &&
                  h->v[w->t[i].index].at == w->t[i].at &&
                  h->v[w->t[i].index].seq == w->t[i].seq);
    }
    CHECK(sl__heap_count(h) == armed);
    CHECK(h->n <= h->cap);
    for (size_t i = 1; i < h->n; i++)
        CHECK(!before(h->v[i].t, h->v[(i - 1) / 2].t));
    CHECK(sl__heap_peek(h) == ref_min(w));
}

/* Deadlines from a narrow range make ties common; a few are extreme. */
static int64_t random_at(uint64_t *rng)
{
    switch (lcg(rng) % 16) {
    case 0:
        return INT64_MIN;
    case 1:
        return INT64_MAX;
    case 2:
        return -(int64_t)(lcg(rng) % 1000);
    default:
        return (int64_t)(lcg(rng) % 50);
    }
}

static void pop(world *w)
{
    sl_timer *t = sl__heap_peek(&w->h);
    CHECK(t == ref_min(w));
    if (t == NULL)
        return;
    sl__heap_cancel(&w->h, t);
    CHECK(t->index == SL_TIMER_IDLE);
    w->armed[t - w->t] = 0;
}

static void random_step(world *w)
{
    size_t i = (size_t)(lcg(&w->rng) % w->n);
    switch (lcg(&w->rng) % 8) {
    case 0:
    case 1:
    case 2:
    case 3:
        sl__heap_set(&w->h, &w->t[i], random_at(&w->rng)); /* arm or move */
        w->armed[i] = 1;
        break;
    case 4:
    case 5:
        sl__heap_cancel(&w->h, &w->t[i]); /* idle or not */
        w->armed[i] = 0;
        break;
    default:
        pop(w);
    }
}

static void run_seed(uint64_t seed, size_t n, long steps)
{
    world w;
    world_init(&w, n, seed);
    for (g_step = 0; g_step < steps; g_step++) {
        random_step(&w);
        check(&w);
    }
    while (sl__heap_count(&w.h) > 0) {
        pop(&w);
        check(&w);
    }
    g_step = -1;
    world_free(&w);
}

static void test_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++)
        run_seed(seed, 300, 20000);
    for (uint64_t seed = 100; seed < 140; seed++)
        run_seed(seed, 5, 300); /* tiny heaps: root and last slot cases */
    const char *extra = getenv("SL_TEST_SEED");
    if (extra != NULL && *extra != '\0')
        run_seed(strtoull(extra, NULL, 0), 300, 20000);
}

static void test_empty(void **state)
{
    (void)state;
    world w;
    world_init(&w, 1, 0);
    assert_null(sl__heap_peek(&w.h));
    assert_int_equal(sl__heap_count(&w.h), 0);
    sl__heap_cancel(&w.h, &w.t[0]); /* harmless when idle */
    assert_int_equal(w.t[0].index, SL_TIMER_IDLE);
    assert_int_equal(w.c.allocs, 0);
    world_free(&w);
}

/* Pops come out by deadline, equal deadlines by seq, whatever the order in
 * which the timers were armed. */
static void test_pop_order(void **state)
{
    (void)state;
    enum { N = 2000 };
    world w;
    world_init(&w, N, 77);
    for (size_t i = 0; i < N; i++) {
        w.t[i].seq = lcg(&w.rng) << 20 | i; /* distinct, in no order */
        sl__heap_set(&w.h, &w.t[i], (int64_t)(lcg(&w.rng) % 10) - 5);
        w.armed[i] = 1;
    }
    check(&w);
    const sl_timer *last = NULL;
    for (size_t k = 0; k < N; k++) {
        sl_timer *t = sl__heap_peek(&w.h);
        assert_non_null(t);
        if (last)
            assert_true(before(last, t));
        sl__heap_cancel(&w.h, t);
        last = t;
    }
    assert_null(sl__heap_peek(&w.h));
    world_free(&w);
}

static void test_move(void **state)
{
    (void)state;
    world w;
    world_init(&w, 3, 0);
    w.t[0].seq = 0;
    w.t[1].seq = 1;
    w.t[2].seq = 2;
    sl__heap_set(&w.h, &w.t[0], 10);
    sl__heap_set(&w.h, &w.t[1], 20);
    sl__heap_set(&w.h, &w.t[2], 30);
    assert_ptr_equal(sl__heap_peek(&w.h), &w.t[0]);
    sl__heap_set(&w.h, &w.t[0], 40); /* later: sinks */
    assert_ptr_equal(sl__heap_peek(&w.h), &w.t[1]);
    sl__heap_set(&w.h, &w.t[2], 5); /* earlier: rises */
    assert_ptr_equal(sl__heap_peek(&w.h), &w.t[2]);
    sl__heap_set(&w.h, &w.t[1], 5); /* a tie, lost on seq */
    assert_ptr_equal(sl__heap_peek(&w.h), &w.t[1]);
    sl__heap_set(&w.h, &w.t[1], 5); /* no move at all */
    assert_int_equal(sl__heap_count(&w.h), 3);
    sl__heap_cancel(&w.h, &w.t[1]);
    sl__heap_cancel(&w.h, &w.t[1]); /* twice is harmless */
    assert_int_equal(sl__heap_count(&w.h), 2);
    assert_ptr_equal(sl__heap_peek(&w.h), &w.t[2]);
    world_free(&w);
}

/* One array, allocated on the first arm and doubled from 64. */
static void test_growth(void **state)
{
    (void)state;
    enum { N = 1000 };
    world w;
    world_init(&w, N, 5);
    for (size_t i = 0; i < N; i++) {
        sl__heap_set(&w.h, &w.t[i], (int64_t)(N - i));
        w.armed[i] = 1;
        size_t want = 64;
        while (want < i + 1)
            want *= 2;
        assert_int_equal(w.h.cap, want);
        assert_int_equal(w.mem.live, 1);
    }
    assert_int_equal(w.c.allocs, 1);
    assert_int_equal(w.c.reallocs, 4); /* 128, 256, 512, 1024 */
    check(&w);
    /* Freeing with timers armed leaves them idle, ready for re-arming. */
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),     cmocka_unit_test(test_move),
        cmocka_unit_test(test_pop_order), cmocka_unit_test(test_growth),
        cmocka_unit_test(test_random),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
