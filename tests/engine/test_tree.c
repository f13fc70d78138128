/* test_tree.c - tests of the order-statistic AVL tree against a sorted array.
 *
 * Randomised runs insert and remove thousands of nodes and, after every step,
 * compare the tree with a plain sorted array: order both ways, count, sum,
 * rank, sum_before and sl__tree_at, while a recursive checker recomputes
 * every cached height, count and sum and checks the parent links and the AVL
 * balance. Bulk loading (defer, then build) is checked the same way, from
 * sorted, reversed and shuffled input. Seeds are fixed so that a failure replays; SL_TEST_SEED runs one
 * more seed of your choice, and every failure names the seed and step. */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mem.h"
#include "tree.h"

static uint64_t g_seed;
static long g_step = -1;

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c))                                                                                  \
            fail_msg("seed=%" PRIu64 " step=%ld: %s", g_seed, g_step, #c);                         \
    } while (0)

/* A counting allocator: the tests own their node pools through sl_mem so
 * that a leak shows as a live block left over. */
static void *count_alloc(void *ud, void *ptr, size_t size)
{
    size_t *calls = ud;
    (*calls)++;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    void *p = realloc(ptr, size);
    assert_non_null(p);
    return p;
}

static uint64_t lcg(uint64_t *s)
{
    *s = *s * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *s >> 33;
}

static size_t below(uint64_t *s, size_t n)
{
    return (size_t)(lcg(s) % n);
}

typedef struct item {
    uint32_t key;
    uint32_t weight;
    int in;
    sl_tnode node; /* not first, so container_of is exercised */
} item;

static item *of(const sl_tnode *n)
{
    return sl__container_of(n, item, node);
}

static int cmp_items(const sl_tnode *a, const sl_tnode *b)
{
    uint32_t x = of(a)->key, y = of(b)->key;
    return x < y ? -1 : x > y;
}

/* The tree under test and its reference: ref holds the inserted items
 * sorted by key. */
typedef struct world {
    sl_mem mem;
    size_t calls;
    sl_tree t;
    item *pool;
    size_t npool;
    item **ref;
    size_t nref;
    uint64_t *before; /* before[i]: weights of ref[0..i) */
    uint64_t rng;
} world;

static void world_init(world *w, size_t npool, uint64_t seed)
{
    sl__mem_init(&w->mem, count_alloc, &w->calls);
    w->calls = 0;
    sl__tree_init(&w->t, cmp_items);
    w->pool = sl__calloc(&w->mem, npool, sizeof *w->pool);
    w->ref = sl__calloc(&w->mem, npool, sizeof *w->ref);
    w->before = sl__calloc(&w->mem, npool + 1, sizeof *w->before);
    w->npool = npool;
    w->nref = 0;
    w->rng = seed;
    g_seed = seed;
    /* Multiplying by an odd constant is a bijection mod 2^32: distinct keys
     * in an order unrelated to the pool's. */
    for (size_t i = 0; i < npool; i++)
        w->pool[i].key = (uint32_t)(i * UINT32_C(2654435761));
}

static void world_free(world *w)
{
    sl__free(&w->mem, w->pool);
    sl__free(&w->mem, w->ref);
    sl__free(&w->mem, w->before);
    assert_int_equal(w->mem.live, 0);
}

/* Where key is or would go in ref. */
static size_t ref_pos(const world *w, uint32_t key)
{
    size_t lo = 0, hi = w->nref;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w->ref[mid]->key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void put(world *w, item *it, uint32_t weight)
{
    size_t i = ref_pos(w, it->key);
    memmove(&w->ref[i + 1], &w->ref[i], (w->nref - i) * sizeof *w->ref);
    w->ref[i] = it;
    w->nref++;
    it->in = 1;
    it->weight = weight;
    /* Garbage in the links must not matter to insert. */
    memset(&it->node, 0xa5, sizeof it->node);
    sl__tree_insert(&w->t, &it->node, weight);
}

static void take(world *w, item *it)
{
    size_t i = ref_pos(w, it->key);
    CHECK(i < w->nref && w->ref[i] == it);
    memmove(&w->ref[i], &w->ref[i + 1], (w->nref - i - 1) * sizeof *w->ref);
    w->nref--;
    it->in = 0;
    sl__tree_remove(&w->t, &it->node);
}

/* Recomputes what each node caches and checks its links; returns the
 * subtree's height. */
static int32_t check_node(const sl_tnode *n, const sl_tnode *parent, uint32_t *count, uint64_t *sum)
{
    if (n == NULL) {
        *count = 0;
        *sum = 0;
        return 0;
    }
    CHECK(n->parent == parent);
    uint32_t lc, rc;
    uint64_t ls, rs;
    int32_t lh = check_node(n->left, n, &lc, &ls);
    int32_t rh = check_node(n->right, n, &rc, &rs);
    CHECK(lh - rh <= 1 && rh - lh <= 1);
    CHECK(n->height == 1 + (lh > rh ? lh : rh));
    CHECK(n->count == 1 + lc + rc);
    CHECK(n->sum == n->weight + ls + rs);
    CHECK(n->weight == of(n)->weight);
    CHECK(of(n)->in);
    *count = n->count;
    *sum = n->sum;
    return n->height;
}

/* The fewest nodes an AVL tree of height h can hold: the sparsest such tree
 * has subtrees of heights h-1 and h-2, each as sparse. */
static uint64_t min_nodes(int32_t h)
{
    uint64_t a = 0, b = 1; /* heights 0 and 1 */
    if (h == 0)
        return 0;
    for (int32_t i = 1; i < h; i++) {
        uint64_t c = a + b + 1;
        a = b;
        b = c;
    }
    return b;
}

static void check_structure(const world *w)
{
    uint32_t count;
    uint64_t sum;
    int32_t h = check_node(w->t.root, NULL, &count, &sum);
    CHECK(count == w->nref);
    CHECK(sl__tree_count(&w->t) == w->nref);
    CHECK(sl__tree_sum(&w->t) == w->before[w->nref]);
    CHECK(min_nodes(h) <= w->nref);
}

static void fill_before(world *w)
{
    w->before[0] = 0;
    for (size_t i = 0; i < w->nref; i++)
        w->before[i + 1] = w->before[i] + w->ref[i]->weight;
}

static void check_order(const world *w)
{
    size_t i = 0;
    for (sl_tnode *n = sl__tree_first(&w->t); n; n = sl__tree_next(n), i++)
        CHECK(i < w->nref && of(n) == w->ref[i]);
    CHECK(i == w->nref);
    for (sl_tnode *n = sl__tree_last(&w->t); n; n = sl__tree_prev(n)) {
        CHECK(i > 0);
        CHECK(of(n) == w->ref[--i]);
    }
    CHECK(i == 0);
}

static void check_index(const world *w, size_t i)
{
    const sl_tnode *n = &w->ref[i]->node;
    CHECK(sl__tree_rank(n) == i);
    CHECK(sl__tree_sum_before(n) == w->before[i]);
    CHECK(sl__tree_at(&w->t, i) == n);
}

/* Everything after every step; positions on a sample unless all is set. */
static void verify(world *w, int all)
{
    fill_before(w);
    check_structure(w);
    check_order(w);
    CHECK(sl__tree_at(&w->t, w->nref) == NULL);
    CHECK(sl__tree_at(&w->t, SIZE_MAX) == NULL);
    if (w->nref == 0) {
        CHECK(sl__tree_first(&w->t) == NULL && sl__tree_last(&w->t) == NULL);
        return;
    }
    if (all) {
        for (size_t i = 0; i < w->nref; i++)
            check_index(w, i);
        return;
    }
    check_index(w, 0);
    check_index(w, w->nref - 1);
    for (int k = 0; k < 16; k++)
        check_index(w, below(&w->rng, w->nref));
}

static uint32_t random_weight(uint64_t *rng)
{
    switch (below(rng, 8)) {
    case 0:
        return 0;
    case 1:
        return UINT32_MAX; /* sums must not wrap at 32 bits */
    default:
        return (uint32_t)below(rng, 100);
    }
}

/* Grows towards a target size, then shrinks, so the tree passes through many
 * shapes and sizes; every removal hits a random node, often an inner one. */
static void run_seed(uint64_t seed, size_t npool, long steps)
{
    world w;
    world_init(&w, npool, seed);
    size_t target = npool;
    for (g_step = 0; g_step < steps; g_step++) {
        if (g_step % 1000 == 0)
            target = 1 + below(&w.rng, npool);
        int grow = w.nref < target ? below(&w.rng, 10) < 7 : below(&w.rng, 10) < 3;
        item *it = &w.pool[below(&w.rng, npool)];
        if (grow && !it->in)
            put(&w, it, random_weight(&w.rng));
        else if (!grow && it->in)
            take(&w, it);
        verify(&w, g_step % 256 == 0);
    }
    while (w.nref > 0)
        take(&w, w.ref[below(&w.rng, w.nref)]);
    verify(&w, 1);
    g_step = -1;
    world_free(&w);
}

static void test_random(void **state)
{
    (void)state;
    static const uint64_t seeds[] = {1, 2, 3, 42, UINT64_C(0xdeadbeef)};
    for (size_t i = 0; i < sizeof seeds / sizeof seeds[0]; i++)
        run_seed(seeds[i], 1500, 6000);
    const char *extra = getenv("SL_TEST_SEED");
    if (extra != NULL && *extra != '\0')
        run_seed(strtoull(extra, NULL, 0), 1500, 6000);
}

/* Small pools make insert-after-remove of the same node and near-empty trees
 * common. */
static void test_random_small(void **state)
{
    (void)state;
    for (uint64_t seed = 100; seed < 120; seed++)
        run_seed(seed, 12, 500);
}

static void test_empty(void **state)
{
    (void)state;
    sl_tree t;
    sl__tree_init(&t, cmp_items);
    assert_null(sl__tree_first(&t));
    assert_null(sl__tree_last(&t));
    assert_null(sl__tree_at(&t, 0));
    assert_int_equal(sl__tree_count(&t), 0);
    assert_int_equal(sl__tree_sum(&t), 0);
}

static void test_single(void **state)
{
    (void)state;
    sl_tree t;
    item it = {.key = 7};
    sl__tree_init(&t, cmp_items);
    sl__tree_insert(&t, &it.node, 5);
    assert_ptr_equal(sl__tree_first(&t), &it.node);
    assert_ptr_equal(sl__tree_last(&t), &it.node);
    assert_null(sl__tree_next(&it.node));
    assert_null(sl__tree_prev(&it.node));
    assert_int_equal(sl__tree_rank(&it.node), 0);
    assert_int_equal(sl__tree_sum_before(&it.node), 0);
    assert_int_equal(sl__tree_sum(&t), 5);
    sl__tree_remove(&t, &it.node);
    assert_null(t.root);
    /* Fields are garbage after removal; the node must be reusable. */
    sl__tree_insert(&t, &it.node, 9);
    assert_int_equal(sl__tree_sum(&t), 9);
    assert_int_equal(it.node.height, 1);
}

/* Inserts the pool's items whose keys are listed, in that order. */
static void put_keys(world *w, const uint32_t *keys, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        w->pool[i].key = keys[i];
        put(w, &w->pool[i], keys[i]);
    }
    verify(w, 1);
}

static item *by_key(world *w, uint32_t key)
{
    size_t i = ref_pos(w, key);
    assert_true(i < w->nref && w->ref[i]->key == key);
    return w->ref[i];
}

/* The successor of a node with two children is either its right child or
 * deeper down; both relinkings must leave every other node where it was. */
static void test_remove_two_children(void **state)
{
    (void)state;
    static const uint32_t keys[] = {50, 30, 70, 20, 40, 60, 80, 65, 10, 35, 45, 90};
    world w;
    world_init(&w, 12, 0);
    put_keys(&w, keys, 12);
    assert_int_equal(of(w.t.root)->key, 50);
    take(&w, by_key(&w, 50)); /* successor 60 is deep, with a right child */
    verify(&w, 1);
    assert_int_equal(of(w.t.root)->key, 60);
    take(&w, by_key(&w, 60)); /* successor 65 is now 70's left leaf */
    verify(&w, 1);
    take(&w, by_key(&w, 30)); /* successor 35 */
    verify(&w, 1);
    world_free(&w);

    static const uint32_t direct[] = {2, 1, 3, 4};
    world_init(&w, 4, 0);
    put_keys(&w, direct, 4);
    item *three = by_key(&w, 3);
    assert_ptr_equal(three->node.parent, w.t.root); /* the direct-child case */
    take(&w, by_key(&w, 2));
    verify(&w, 1);
    assert_ptr_equal(of(w.t.root), three);
    assert_int_equal(of(w.t.root->left)->key, 1);
    assert_int_equal(of(w.t.root->right)->key, 4);
    world_free(&w);
}

/* Sorted input is the classic worst case of an unbalanced tree. */
static void test_sequential(void **state)
{
    (void)state;
    world w;
    world_init(&w, 4096, 7);
    for (size_t i = 0; i < w.npool; i++) {
        w.pool[i].key = (uint32_t)i;
        put(&w, &w.pool[i], 1);
        if (i % 97 == 0)
            verify(&w, 0);
    }
    verify(&w, 1);
    assert_int_equal(sl__tree_sum(&w.t), 4096);
    assert_true(w.t.root->height <= 13);
    for (size_t i = 0; i < w.npool; i += 2)
        take(&w, &w.pool[i]);
    verify(&w, 1);
    while (w.nref > 0) {
        take(&w, of(w.t.root)); /* mostly nodes with two children */
        if (w.nref % 31 == 0)
            verify(&w, 1);
    }
    verify(&w, 1);
    for (size_t i = w.npool; i-- > 0;)
        put(&w, &w.pool[i], (uint32_t)i);
    verify(&w, 1);
    while (w.nref > 0)
        take(&w, w.ref[w.nref - 1]);
    verify(&w, 1);
    world_free(&w);
}

static void test_wide_sums(void **state)
{
    (void)state;
    world w;
    world_init(&w, 64, 0);
    for (size_t i = 0; i < w.npool; i++)
        put(&w, &w.pool[i], UINT32_MAX);
    verify(&w, 1);
    assert_true(sl__tree_sum(&w.t) == 64 * (uint64_t)UINT32_MAX);
    const sl_tnode *last = sl__tree_last(&w.t);
    assert_true(sl__tree_sum_before(last) == 63 * (uint64_t)UINT32_MAX);
    while (w.nref > 0)
        take(&w, w.ref[0]);
    world_free(&w);
}

/* ---- bulk loading -------------------------------------------------------- */

/* Lists it in the deferred tree (and in ref, sorted, as put does). */
static void defer(world *w, item *it, uint32_t weight)
{
    size_t i = ref_pos(w, it->key);
    memmove(&w->ref[i + 1], &w->ref[i], (w->nref - i) * sizeof *w->ref);
    w->ref[i] = it;
    w->nref++;
    it->in = 1;
    it->weight = weight;
    memset(&it->node, 0xa5, sizeof it->node); /* garbage in the links must not matter */
    sl__tree_defer(&w->t, &it->node, weight);
}

/* n items listed in order 0 (sorted), 1 (reversed) or 2 (shuffled), then
 * built: the tree must be exactly what n inserts would give in content,
 * order and positions, balanced, and go on working as a tree. */
static void build_case(size_t n, int order, uint64_t seed)
{
    world w;
    world_init(&w, n + 1, seed);
    size_t *idx = sl__calloc(&w.mem, n, sizeof *idx);
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    if (order == 2)
        for (size_t i = n; i > 1; i--) {
            size_t j = below(&w.rng, i), t = idx[i - 1];
            idx[i - 1] = idx[j];
            idx[j] = t;
        }
    /* Keys grow with the index (order 0) or fall (1); listed by idx. */
    for (size_t i = 0; i < n; i++)
        w.pool[i].key = (uint32_t)(order == 1 ? n - i : i) * 16 + 1;
    assert_false(sl__tree_deferred(&w.t));
    for (size_t i = 0; i < n; i++)
        defer(&w, &w.pool[idx[i]], random_weight(&w.rng));
    assert_true(sl__tree_deferred(&w.t));
    sl__tree_build(&w.t);
    assert_false(sl__tree_deferred(&w.t));
    verify(&w, 1);
    /* Perfectly balanced: the height is that of a complete tree. */
    int32_t h = 0;
    while (((size_t)1 << h) <= n)
        h++;
    assert_int_equal(w.t.root->height, h);
    /* It is a tree like any other now. */
    item *spare = &w.pool[n];
    spare->key = 8; /* below every other key */
    put(&w, spare, 3);
    verify(&w, 1);
    for (g_step = 0; w.nref > 0; g_step++) {
        take(&w, w.ref[below(&w.rng, w.nref)]);
        if (g_step % 7 == 0)
            verify(&w, 0);
    }
    g_step = -1;
    verify(&w, 1);
    sl__free(&w.mem, idx);
    world_free(&w);
}

static void test_build(void **state)
{
    (void)state;
    static const size_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 100, 1000, 4097};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        for (int order = 0; order < 3; order++)
            build_case(sizes[i], order, 1000 + i);
}

/* Building an empty tree does nothing; a tree built once may be listed
 * into again only when emptied. */
static void test_build_empty(void **state)
{
    (void)state;
    sl_tree t;
    sl__tree_init(&t, cmp_items);
    sl__tree_build(&t);
    assert_null(t.root);
    assert_null(sl__tree_first(&t));
    item a = {.key = 1}, b = {.key = 2};
    sl__tree_defer(&t, &b.node, 1);
    sl__tree_defer(&t, &a.node, 1);
    sl__tree_build(&t);
    assert_ptr_equal(sl__tree_first(&t), &a.node);
    assert_ptr_equal(sl__tree_last(&t), &b.node);
    assert_int_equal(sl__tree_count(&t), 2);
    sl__tree_build(&t); /* built: nothing to do */
    assert_int_equal(sl__tree_count(&t), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_single),
        cmocka_unit_test(test_remove_two_children),
        cmocka_unit_test(test_sequential),
        cmocka_unit_test(test_wide_sums),
        cmocka_unit_test(test_random),
        cmocka_unit_test(test_random_small),
        cmocka_unit_test(test_build),
        cmocka_unit_test(test_build_empty),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
