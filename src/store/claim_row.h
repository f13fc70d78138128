/* claim_row.h - one row of the claims table checked and turned into a
 * restore record, whatever the backend: both loaders select
 * SL_CLAIM_COLUMNS and read each row through their own accessors, so the
 * checks (types, ranges, lengths, the JSON of locks and tags) and the
 * words for a damaged row are the same on SQLite and PostgreSQL. */
#ifndef SL_CLAIM_ROW_H
#define SL_CLAIM_ROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "rows_json.h"

#define SL_CLAIM_COLUMNS                                                                           \
    "arrival, id, holder, state, priority, created, arrived, rebalance_key, grp, cancel, grace," \
    " lease, timeout, life, granted, grant_seq, revoke_at, ended, reason, by_claim, locks, tags," \
    " idem, idem_fp, actor"

/* The columns, in SL_CLAIM_COLUMNS' order. */
enum {
    SL_CC_ARRIVAL, SL_CC_ID, SL_CC_HOLDER, SL_CC_STATE, SL_CC_PRIORITY, SL_CC_CREATED,
    SL_CC_ARRIVED, SL_CC_RKEY, SL_CC_GROUP, SL_CC_CANCEL, SL_CC_GRACE, SL_CC_LEASE,
    SL_CC_TIMEOUT, SL_CC_LIFE, SL_CC_GRANTED, SL_CC_GRANT_SEQ, SL_CC_REVOKE_AT, SL_CC_ENDED,
    SL_CC_REASON, SL_CC_BY, SL_CC_LOCKS, SL_CC_TAGS, SL_CC_IDEM, SL_CC_IDEM_FP, SL_CC_ACTOR, SL_CC_COUNT
};

/* A row read: its strings point into the backend's row and into scratch
 * (the decoded JSON) until the next row. */
typedef struct sl_claim_row {
    sl_claim_rec rec;
    sl_claim_lock_rec locks[SL_CLAIM_LOCKS_MAX];
    sl_tag tags[SL_TAGS_MAX];
    char what[160];                     /* why the row was refused */
    char scratch[SL_ROWS_JSON_MAX + 1]; /* the decoded strings of locks */
    char scratch2[SL_ROWS_JSON_MAX + 1]; /* ... and of tags */
} sl_claim_row;

/* How a backend reads a column of its current row. */
typedef struct sl_claim_cols {
    /* An integer in [lo, hi]; false when NULL, not an integer or out of range. */
    bool (*int_at)(void *src, int col, int64_t lo, int64_t hi, int64_t *out);
    /* Text of at most max bytes, NUL-terminated, and its length; NULL (and
     * true) for a NULL that nullable allows. */
    bool (*text_at)(void *src, int col, size_t max, bool nullable, const char **out,
                    size_t *len);
    const char *(*name)(void *src, int col);
    void *src;
} sl_claim_cols;

/* Reads the current row into row->rec: true, or false with row->what
 * saying what is wrong (row->rec.v.id is NULL when the id itself is). */
bool sl__claim_row_read(const sl_claim_cols *c, sl_claim_row *row);

#endif
