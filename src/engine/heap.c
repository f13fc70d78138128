/* heap.c - the timer heap that says which claim deadline comes next.
 *
 * An array-backed binary min-heap ordered by (at, seq); every timer records
 * its own slot, so moving or cancelling one needs no search and stays
 * O(log n). Each slot copies its timer's key, so that sifting through a
 * million timers reads the array, not a million scattered claims. The seq tie-break makes the firing order of equal deadlines the
 * same on every run, not an accident of insertion history. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "heap.h"

#define FIRST_CAP 64

static int before(const sl_hentry *a, const sl_hentry *b)
{
    if (a->at != b->at)
        return a->at < b->at;
    return a->seq < b->seq;
}

static void place(sl_heap *h, size_t i, sl_hentry e)
{
    h->v[i] = e;
    e.t->index = i;
}

static void sift_up(sl_heap *h, size_t i)
{
    sl_hentry e = h->v[i];
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!before(&e, &h->v[p]))
            break;
        place(h, i, h->v[p]);
        i = p;
    }
    place(h, i, e);
}

static void sift_down(sl_heap *h, size_t i)
{
    sl_hentry e = h->v[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n)
            break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c]))
            c++;
        if (!before(&h->v[c], &e))
            break;
        place(h, i, h->v[c]);
        i = c;
    }
    place(h, i, e);
}

/* The slot at i may now belong higher or lower, not both. */
static void fix(sl_heap *h, size_t i)
{
    if (i > 0 && before(&h->v[i], &h->v[(i - 1) / 2]))
        sift_up(h, i);
    else
        sift_down(h, i);
}

static void reserve_one(sl_heap *h)
{
    if (h->n < h->cap)
        return;
    size_t cap = h->cap ? h->cap * 2 : FIRST_CAP;
    if (cap > SIZE_MAX / sizeof *h->v)
        abort(); /* a wrapped size would hand back an array too small */
    h->v = sl__realloc(h->mem, h->v, cap * sizeof *h->v);
    h->cap = cap;
}

void sl__heap_init(sl_heap *h, sl_mem *mem)
{
    h->v = NULL;
    h->n = h->cap = 0;
    h->mem = mem;
}

/* Timers still armed are left idle so that their owners may re-arm them on
 * another heap. */
void sl__heap_free(sl_heap *h)
{
    for (size_t i = 0; i < h->n; i++)
        h->v[i].t->index = SL_TIMER_IDLE;
    sl__free(h->mem, h->v);
    h->v = NULL;
    h->n = h->cap = 0;
}

void sl__timer_init(sl_timer *t, uint64_t seq)
{
    t->at = 0;
    t->seq = seq;
    t->index = SL_TIMER_IDLE;
}

void sl__heap_set(sl_heap *h, sl_timer *t, int64_t at)
{
    if (t->index != SL_TIMER_IDLE) {
        if (t->at == at)
            return;
        t->at = at;
        h->v[t->index].at = at;
        fix(h, t->index);
        return;
    }
    t->at = at;
    reserve_one(h);
    place(h, h->n++, (sl_hentry){at, t->seq, t});
    sift_up(h, t->index);
}

void sl__heap_cancel(sl_heap *h, sl_timer *t)
{
    if (t->index == SL_TIMER_IDLE)
        return;
    size_t i = t->index;
    sl_hentry last = h->v[--h->n];
    t->index = SL_TIMER_IDLE;
    if (i == h->n)
        return;
    place(h, i, last);
    fix(h, i);
}

sl_timer *sl__heap_peek(const sl_heap *h)
{
    return h->n ? h->v[0].t : NULL;
}

size_t sl__heap_count(const sl_heap *h)
{
    return h->n;
}
