/* heap.h - the timer heap: a binary min-heap of deadlines.
 *
 * Leases, pending timeouts, revocation grace and the purge of ended claims
 * are all deadlines on a claim; each claim has one sl_timer armed at the
 * earliest of them. Firing, moving and cancelling a timer are O(log n), and
 * nothing ever scans the claims to find what is due. Ties on `at` are broken
 * by `seq` so that the order in which timers fire is reproducible. */
#ifndef SL_ENGINE_HEAP_H
#define SL_ENGINE_HEAP_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"

#define SL_TIMER_IDLE SIZE_MAX

typedef struct sl_timer {
    int64_t at;   /* deadline, engine milliseconds */
    uint64_t seq; /* tie-break, set by the owner before arming */
    size_t index; /* place in the heap, SL_TIMER_IDLE when not armed */
} sl_timer;

/* A heap slot keeps a copy of its timer's key: sifting compares slots of
 * the array only, and touches a timer just to tell it where it now is
 * (a write, which the CPU need not wait for; a read of a cold claim it must). */
typedef struct sl_hentry {
    int64_t at;
    uint64_t seq;
    sl_timer *t;
} sl_hentry;

typedef struct sl_heap {
    sl_hentry *v;
    size_t n, cap;
    sl_mem *mem;
} sl_heap;

void sl__heap_init(sl_heap *h, sl_mem *mem);
/* Frees the array; timers still armed are left idle (index SL_TIMER_IDLE). */
void sl__heap_free(sl_heap *h);
void sl__timer_init(sl_timer *t, uint64_t seq); /* index = SL_TIMER_IDLE */
/* Arms t at `at`, or moves it there if armed (nothing to do if it is
 * armed there already). */
void sl__heap_set(sl_heap *h, sl_timer *t, int64_t at);
/* Disarms t; harmless when it is not armed. */
void sl__heap_cancel(sl_heap *h, sl_timer *t);
/* The earliest timer, NULL when none is armed. */
sl_timer *sl__heap_peek(const sl_heap *h);
size_t sl__heap_count(const sl_heap *h);

#endif
