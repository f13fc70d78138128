/* tree.c - the intrusive order-statistic AVL tree behind every queue.
 *
 * Each node caches its subtree's height, node count and weight sum, so a
 * claim's position in its queue and the slots asked for ahead of it come from
 * one walk up the parent pointers. Every structural change goes through the
 * rotations and rebalance() below, which keep those caches exact; nodes live
 * inside other structures, so the tree only ever relinks, never copies. */
#include <stddef.h>
#include <stdint.h>

#include "tree.h"

static int32_t height(const sl_tnode *n)
{
    return n ? n->height : 0;
}

static uint32_t count(const sl_tnode *n)
{
    return n ? n->count : 0;
}

static uint64_t sum(const sl_tnode *n)
{
    return n ? n->sum : 0;
}

static void update(sl_tnode *n)
{
    int32_t l = height(n->left), r = height(n->right);
    n->height = 1 + (l > r ? l : r);
    n->count = 1 + count(n->left) + count(n->right);
    n->sum = n->weight + sum(n->left) + sum(n->right);
}

/* Points whatever held old (its parent, or the root) at repl instead. */
static void replace_child(sl_tree *t, sl_tnode *parent, const sl_tnode *old, sl_tnode *repl)
{
    if (parent == NULL)
        t->root = repl;
    else if (parent->left == old)
        parent->left = repl;
    else
        parent->right = repl;
}

static sl_tnode *rotate_left(sl_tree *t, sl_tnode *x)
{
    sl_tnode *y = x->right;
    x->right = y->left;
    if (y->left)
        y->left->parent = x;
    y->parent = x->parent;
    replace_child(t, x->parent, x, y);
    y->left = x;
    x->parent = y;
    update(x); /* x is now below y, so it must be fixed first */
    update(y);
    return y;
}

static sl_tnode *rotate_right(sl_tree *t, sl_tnode *x)
{
    sl_tnode *y = x->left;
    x->left = y->right;
    if (y->right)
        y->right->parent = x;
    y->parent = x->parent;
    replace_child(t, x->parent, x, y);
    y->right = x;
    x->parent = y;
    update(x);
    update(y);
    return y;
}

/* Restores balance at n and returns the node now at n's place. */
static sl_tnode *balance(sl_tree *t, sl_tnode *n)
{
    int32_t b = height(n->left) - height(n->right);
    if (b > 1) {
        if (height(n->left->left) < height(n->left->right))
            rotate_left(t, n->left);
        return rotate_right(t, n);
    }
    if (b < -1) {
        if (height(n->right->right) < height(n->right->left))
            rotate_right(t, n->right);
        return rotate_left(t, n);
    }
    update(n);
    return n;
}

/* Counts and sums change on every ancestor, so this always walks to the root:
 * O(log n) because the tree is balanced. */
static void rebalance(sl_tree *t, sl_tnode *n)
{
    while (n != NULL)
        n = balance(t, n)->parent;
}

static sl_tnode *leftmost(sl_tnode *n)
{
    while (n && n->left)
        n = n->left;
    return n;
}

static sl_tnode *rightmost(sl_tnode *n)
{
    while (n && n->right)
        n = n->right;
    return n;
}

void sl__tree_init(sl_tree *t, sl_tree_cmp cmp)
{
    t->root = NULL;
    t->first = t->last = NULL;
    t->cmp = cmp;
}

/* A node that orders after all others (a claim joining the back of its
 * queue, the common case) is hung under the last one without a search. */
void sl__tree_insert(sl_tree *t, sl_tnode *n, uint32_t weight)
{
    sl_tnode *parent = NULL, **link = &t->root;
    if (t->last && t->cmp(n, t->last) > 0) {
        parent = t->last;
        link = &parent->right;
    } else {
        while (*link != NULL) {
            parent = *link;
            link = t->cmp(n, parent) < 0 ? &parent->left : &parent->right;
        }
    }
    n->left = n->right = NULL;
    n->parent = parent;
    n->weight = weight;
    update(n);
    *link = n;
    if (!t->first || t->cmp(n, t->first) < 0)
        t->first = n;
    if (!t->last || t->cmp(n, t->last) > 0)
        t->last = n;
    rebalance(t, parent);
}

/* Puts s, n's in-order successor, where n is, so that n leaves from a place
 * with at most one child without either payload moving. Returns the deepest
 * node whose subtree changed. */
static sl_tnode *splice_successor(sl_tree *t, sl_tnode *n, sl_tnode *s)
{
    sl_tnode *fix = s;
    if (s != n->right) {
        fix = s->parent;
        fix->left = s->right;
        if (s->right)
            s->right->parent = fix;
        s->right = n->right;
        s->right->parent = s;
    }
    s->left = n->left;
    s->left->parent = s;
    s->parent = n->parent;
    replace_child(t, n->parent, n, s);
    return fix;
}

void sl__tree_remove(sl_tree *t, sl_tnode *n)
{
    sl_tnode *fix;
    if (n == t->first)
        t->first = sl__tree_next(n);
    if (n == t->last)
        t->last = sl__tree_prev(n);
    if (n->left && n->right) {
        fix = splice_successor(t, n, leftmost(n->right));
    } else {
        sl_tnode *child = n->left ? n->left : n->right;
        if (child)
            child->parent = n->parent;
        replace_child(t, n->parent, n, child);
        fix = n->parent;
    }
    rebalance(t, fix);
    n->left = n->right = n->parent = NULL;
}

sl_tnode *sl__tree_first(const sl_tree *t)
{
    return t->first;
}

sl_tnode *sl__tree_last(const sl_tree *t)
{
    return t->last;
}

sl_tnode *sl__tree_next(const sl_tnode *n)
{
    if (n->right)
        return leftmost(n->right);
    const sl_tnode *c = n;
    sl_tnode *p = n->parent;
    while (p && c == p->right) {
        c = p;
        p = p->parent;
    }
    return p;
}

sl_tnode *sl__tree_prev(const sl_tnode *n)
{
    if (n->left)
        return rightmost(n->left);
    const sl_tnode *c = n;
    sl_tnode *p = n->parent;
    while (p && c == p->left) {
        c = p;
        p = p->parent;
    }
    return p;
}

size_t sl__tree_count(const sl_tree *t)
{
    return count(t->root);
}

uint64_t sl__tree_sum(const sl_tree *t)
{
    return sum(t->root);
}

/* Every ancestor reached from its right holds itself and its left subtree
 * ahead of n. */
size_t sl__tree_rank(const sl_tnode *n)
{
    size_t r = count(n->left);
    for (const sl_tnode *c = n; c->parent; c = c->parent)
        if (c == c->parent->right)
            r += (size_t)count(c->parent->left) + 1;
    return r;
}

uint64_t sl__tree_sum_before(const sl_tnode *n)
{
    uint64_t s = sum(n->left);
    for (const sl_tnode *c = n; c->parent; c = c->parent)
        if (c == c->parent->right)
            s += sum(c->parent->left) + c->parent->weight;
    return s;
}

sl_tnode *sl__tree_at(const sl_tree *t, size_t rank)
{
    sl_tnode *n = t->root;
    while (n != NULL) {
        size_t l = count(n->left);
        if (rank == l)
            return n;
        if (rank < l) {
            n = n->left;
        } else {
            rank -= l + 1;
            n = n->right;
        }
    }
    return NULL;
}

/* ---- bulk loading -------------------------------------------------------- */

/* A deferred tree is a list: root NULL, first and last its ends, each node
 * linked to the next through right. */
bool sl__tree_deferred(const sl_tree *t)
{
    return t->root == NULL && t->first != NULL;
}

void sl__tree_defer(sl_tree *t, sl_tnode *n, uint32_t weight)
{
    n->left = n->right = n->parent = NULL;
    n->weight = weight;
    if (t->last)
        t->last->right = n;
    else
        t->first = n;
    t->last = n;
}

/* Merges two sorted lists; ties keep a's nodes first. */
static sl_tnode *merge(sl_tnode *a, sl_tnode *b, sl_tree_cmp cmp)
{
    sl_tnode head, *tail = &head;
    while (a && b) {
        sl_tnode **from = cmp(b, a) < 0 ? &b : &a;
        tail->right = *from;
        tail = *from;
        *from = (*from)->right;
    }
    tail->right = a ? a : b;
    return head.right;
}

/* Sorts the first n nodes of the list at *list and returns them as a
 * sorted list; *list moves past them. Recursion depth log2(n). */
static sl_tnode *sort_list(sl_tnode **list, size_t n, sl_tree_cmp cmp)
{
    if (n == 1) {
        sl_tnode *x = *list;
        *list = x->right;
        x->right = NULL;
        return x;
    }
    sl_tnode *a = sort_list(list, n / 2, cmp);
    sl_tnode *b = sort_list(list, n - n / 2, cmp);
    return merge(a, b, cmp);
}

/* The balanced tree of the first n nodes of the sorted list at *list, in
 * order (so the middle one is the root); *list moves past them. Subtree
 * sizes differ by at most one at every node, so heights do too: a valid
 * AVL tree. */
static sl_tnode *build(sl_tnode **list, size_t n)
{
    if (n == 0)
        return NULL;
    sl_tnode *left = build(list, n / 2);
    sl_tnode *root = *list;
    *list = root->right;
    root->left = left;
    if (left)
        left->parent = root;
    root->right = build(list, n - n / 2 - 1);
    if (root->right)
        root->right->parent = root;
    update(root);
    return root;
}

void sl__tree_build(sl_tree *t)
{
    if (!sl__tree_deferred(t))
        return;
    size_t n = 1;
    bool sorted = true;
    for (sl_tnode *x = t->first; x->right; x = x->right, n++)
        sorted = sorted && t->cmp(x, x->right) < 0;
    sl_tnode *list = t->first;
    if (!sorted) {
        list = sort_list(&list, n, t->cmp);
        t->first = list;
        for (t->last = list; t->last->right; t->last = t->last->right)
            ;
    }
    t->root = build(&list, n);
    t->root->parent = NULL;
}
