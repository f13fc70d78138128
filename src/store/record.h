/* record.h - a batch of engine changes as one record: the unit the store
 * appends to its log (one row per batch), whatever the backend.
 *
 * A record is the captured batch itself (store_int.h: operations with their
 * parameters, in the order they must be applied) in a compact binary form:
 *
 *   record := version:u8 op*
 *   op     := code:u8 nparams:varint param*
 *   param  := 0                            (NULL)
 *           | 1 zigzag(value):varint       (a 64-bit integer)
 *           | 2 length:varint bytes        (text, no terminator)
 *
 * Operation codes and their parameters are part of the file format: never
 * renumbered, never reordered; a later version may append parameters to an
 * operation (a reader binds the ones it knows and the rest as NULL or
 * their column's default) or add operations. The parameters of each are
 * those of the state row it writes (sqlite_schema.c has the columns). */
#ifndef SL_STORE_RECORD_H
#define SL_STORE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "store_int.h"

#define SL_REC_VERSION 1

typedef enum {
    SL_REC_CLAIM_UPSERT = 1,  /* the claims row, 25 parameters (actor appended later:
                               * older records lack it, and such a claim has none) */
    SL_REC_CLAIM_DELETE = 2,  /* id */
    SL_REC_LOCK_UPSERT = 3,   /* key, token */
    SL_REC_LOCK_DELETE = 4,   /* key */
    SL_REC_CONFIG_UPSERT = 5, /* name, limit, strategy, lease, source, overtake, rules
                               * (rules appended later: older records lack it, and
                               * such a configuration has none) */
    SL_REC_CONFIG_DELETE = 6, /* name */
    SL_REC_EVENT = 7,         /* seq, time, type, claim, holder, locks, reason, slots, held,
                               * actor (slots and held appended later, actor later still:
                               * older records lack them) */
    SL_REC_COUNTERS = 8,      /* next_seq, next_arrival, next_grant, token_floor */
    SL_REC_OP_MAX = 8,
} sl_rec_op;

/* The growing bytes of one record. */
typedef struct sl_rec_buf {
    unsigned char *p;
    size_t n, cap;
} sl_rec_buf;

void sl_rec_buf_free(sl_rec_buf *out);
/* Writes b's operations as a record into out (emptied first). Aborts when
 * out of memory, as capturing a batch does. */
void sl_rec_encode(const sl_store_batch *b, sl_rec_buf *out);
/* Reads a record back into b (cleared first): the same operations and
 * parameters. -1 with a reason in b's error when the bytes are not a record
 * this build can read (a newer version, cut short, an unknown operation). */
int sl_rec_decode(const void *p, size_t n, sl_store_batch *b);

#endif
