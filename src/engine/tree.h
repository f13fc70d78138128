/* tree.h - an intrusive, order-statistic AVL tree.
 *
 * Every queue in the engine is one of these: nodes are embedded in the
 * structures they order, each node carries a weight (the slots a claim asks
 * for), and each subtree knows its node count and weight sum. That is what
 * makes "my position in this queue" and "slots asked for by the claims ahead
 * of me" O(log n) instead of a walk of the queue.
 *
 * The tree never allocates. A node belongs to at most one tree at a time;
 * the comparator must order distinct nodes strictly (never return 0 for two
 * different nodes that are in the tree at the same time). */
#ifndef SL_ENGINE_TREE_H
#define SL_ENGINE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sl_tnode {
    struct sl_tnode *left, *right, *parent;
    uint64_t sum;    /* weights of this subtree */
    uint32_t count;  /* nodes in this subtree */
    uint32_t weight; /* this node's own weight */
    int32_t height;  /* 1 for a leaf */
} sl_tnode;

/* < 0 when a orders before b, > 0 after. */
typedef int (*sl_tree_cmp)(const sl_tnode *a, const sl_tnode *b);

typedef struct sl_tree {
    sl_tnode *root;
    sl_tnode *first, *last; /* kept, not searched: queues are mostly taken at
                             * the head and joined at the tail */
    sl_tree_cmp cmp;
} sl_tree;

void sl__tree_init(sl_tree *t, sl_tree_cmp cmp);
/* Inserts n (not in any tree) with the given weight. O(log n). */
void sl__tree_insert(sl_tree *t, sl_tnode *n, uint32_t weight);
/* Removes n, which must be in t. O(log n). n's fields are garbage after. */
void sl__tree_remove(sl_tree *t, sl_tnode *n);
sl_tnode *sl__tree_first(const sl_tree *t); /* NULL when empty; O(1) */
sl_tnode *sl__tree_last(const sl_tree *t); /* O(1) */
sl_tnode *sl__tree_next(const sl_tnode *n); /* NULL after the last */
sl_tnode *sl__tree_prev(const sl_tnode *n); /* NULL before the first */
size_t sl__tree_count(const sl_tree *t);
uint64_t sl__tree_sum(const sl_tree *t);
/* How many nodes order before n (n must be in a tree). O(log n). */
size_t sl__tree_rank(const sl_tnode *n);
/* The sum of the weights of the nodes ordered before n. O(log n). */
uint64_t sl__tree_sum_before(const sl_tnode *n);
/* The node with the given rank (0-based), NULL when rank >= count. */
sl_tnode *sl__tree_at(const sl_tree *t, size_t rank);

/* Bulk loading, for restoring saved queues: a million inserts cost a
 * million walks to the root, each level a cache miss. Instead,
 * sl__tree_defer() lists n (not in any tree) at the back of an empty or
 * deferred tree in O(1), comparing and balancing nothing, and
 * sl__tree_build() sorts what was listed (only when it came out of order:
 * O(n) otherwise) and builds a perfectly balanced tree from it in O(n).
 * In between, no other function may be called on t. */
void sl__tree_defer(sl_tree *t, sl_tnode *n, uint32_t weight);
/* Whether t holds deferred nodes not built yet. */
bool sl__tree_deferred(const sl_tree *t);
void sl__tree_build(sl_tree *t);

#define sl__container_of(ptr, type, member) \
    ((type *)(void *)((char *)(ptr) - offsetof(type, member)))

#endif
