/* histogram.c - log-linear latency buckets (see histogram.h). */
#include <math.h>
#include <string.h>

#include "histogram.h"

#define SUB (1u << SL_HIST_SUB_BITS)

static unsigned msb(uint64_t v)
{
    return 63u - (unsigned)__builtin_clzll(v);
}

static unsigned bucket_of(uint64_t v)
{
    unsigned top;
    if (v < SUB)
        return (unsigned)v;
    top = msb(v);
    if (top > SL_HIST_MAX_BITS)
        return SL_HIST_BUCKETS - 1;
    /* The SUB_BITS bits after the leading one pick the bucket within its
     * power of two. */
    return SUB + (top - SL_HIST_SUB_BITS) * SUB +
           (unsigned)((v >> (top - SL_HIST_SUB_BITS)) & (SUB - 1));
}

/* The smallest value of bucket b, and its width. */
static uint64_t bucket_low(unsigned b, uint64_t *width)
{
    unsigned top, sub;
    if (b < SUB) {
        *width = 1;
        return b;
    }
    top = SL_HIST_SUB_BITS + (b - SUB) / SUB;
    sub = (b - SUB) % SUB;
    *width = (uint64_t)1 << (top - SL_HIST_SUB_BITS);
    return (uint64_t)(SUB + sub) << (top - SL_HIST_SUB_BITS);
}

void sl_hist_init(sl_hist *h)
{
    memset(h, 0, sizeof *h);
    h->min = UINT64_MAX;
}

void sl_hist_record(sl_hist *h, uint64_t value)
{
    h->buckets[bucket_of(value)]++;
    h->count++;
    h->sum += value;
    if (value < h->min)
        h->min = value;
    if (value > h->max)
        h->max = value;
}

void sl_hist_merge(sl_hist *into, const sl_hist *from)
{
    unsigned i;
    for (i = 0; i < SL_HIST_BUCKETS; i++)
        into->buckets[i] += from->buckets[i];
    into->count += from->count;
    into->sum += from->sum;
    if (from->min < into->min)
        into->min = from->min;
    if (from->max > into->max)
        into->max = from->max;
}

uint64_t sl_hist_quantile(const sl_hist *h, double q)
{
    uint64_t rank, seen = 0, width, v;
    unsigned i;
    if (h->count == 0)
        return 0;
    rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    if (rank >= h->count)
        return h->max;
    for (i = 0; i < SL_HIST_BUCKETS; i++) {
        seen += h->buckets[i];
        if (seen >= rank)
            break;
    }
    if (i >= SL_HIST_BUCKETS - 1) /* the last bucket is open-ended */
        return h->max;
    v = bucket_low(i, &width) + width / 2;
    if (v < h->min)
        v = h->min;
    if (v > h->max)
        v = h->max;
    return v;
}
