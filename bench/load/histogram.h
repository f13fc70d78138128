/* histogram.h - latencies in fixed memory, for percentiles.
 *
 * Log-linear buckets in the manner of HdrHistogram: values below 64 ns have
 * a bucket each; above, every power of two is split into 64 equal buckets,
 * so a bucket is at most 1/64 (1.6%) of its value wide. Values up to 2^40 ns
 * (18 minutes) are kept apart; larger ones share the last bucket. Memory is
 * fixed (about 17 KiB) however many values go in, so a client can record
 * every cycle of a long run. min, max, count and sum are exact. One
 * histogram per thread: recording is not atomic; merge them afterwards. */
#ifndef SL_BENCH_HISTOGRAM_H
#define SL_BENCH_HISTOGRAM_H

#include <stdint.h>

#define SL_HIST_SUB_BITS 6
#define SL_HIST_MAX_BITS 40
#define SL_HIST_BUCKETS (((SL_HIST_MAX_BITS - SL_HIST_SUB_BITS) + 2) << SL_HIST_SUB_BITS)

typedef struct sl_hist {
    uint64_t count;
    uint64_t sum;
    uint64_t min, max;
    uint64_t buckets[SL_HIST_BUCKETS];
} sl_hist;

void sl_hist_init(sl_hist *h);
void sl_hist_record(sl_hist *h, uint64_t value);
/* Adds every value of from to into. */
void sl_hist_merge(sl_hist *into, const sl_hist *from);
/* The value at quantile q (0 to 1): the middle of the bucket holding the
 * ceil(q * count)-th smallest value, clamped to [min, max]; the maximum for
 * the largest value or one in the open-ended last bucket; 0 when empty. */
uint64_t sl_hist_quantile(const sl_hist *h, double q);

#endif
