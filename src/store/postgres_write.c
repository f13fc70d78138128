/* postgres_write.c - a captured batch (capture.c) committed as one record
 * (record.h) in one new row of `log`: one statement, one round trip. The
 * state tables are brought forward later (postgres_apply.c). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "postgres_int.h"

static int fail(sl_pg *pg, sl_store_batch *b, const char *why)
{
    return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s", pg->label, why);
}

static int append(sl_pg *pg, sl_store_batch *b, int64_t time_hi)
{
    sl_rec_encode(b, &pg->rec);
    char id[24], seq[24], t[24], n[16], why[512];
    snprintf(id, sizeof(id), "%" PRId64, (int64_t)pg->next_id);
    snprintf(seq, sizeof(seq), "%" PRId64, (int64_t)b->seq_hi);
    snprintf(t, sizeof(t), "%" PRId64, time_hi);
    snprintf(n, sizeof(n), "%u", b->nevents);
    const char *v[5] = {id, seq, t, n, (const char *)pg->rec.p};
    int len[5] = {0, 0, 0, 0, (int)pg->rec.n};
    int fmt[5] = {0, 0, 0, 0, 1};
    PGresult *r = sl__pg_exec(pg->wc, PQ_LOG_INSERT, 5, v, len, fmt, 0, why, sizeof(why));
    if (!r)
        return fail(pg, b, why);
    PQclear(r);
    return 0;
}

int sl__pg_commit(sl_store *st, sl_store_batch *b)
{
    sl_pg *pg = (sl_pg *)st;
    if (sl_store_batch_empty(b))
        return 0;
    char why[512];
    if (sl__pg_ensure(pg, pg->wc, why, sizeof(why)) != 0)
        return fail(pg, b, why);
    int64_t time_hi = b->time_hi > pg->last_time ? b->time_hi : pg->last_time;
    int rc = b->prune && sl__pg_simple(pg->wc, "BEGIN", why, sizeof(why)) != 0 ? fail(pg, b, why)
                                                                                : 0;
    if (rc == 0 && b->nops)
        rc = append(pg, b, time_hi);
    if (rc == 0 && b->prune)
        rc = sl__pg_prune_in(pg, b->prune_before, &b->pruned, b);
    if (rc == 0 && b->prune && sl__pg_simple(pg->wc, "COMMIT", why, sizeof(why)) != 0)
        rc = fail(pg, b, why);
    if (rc && b->prune)
        sl__pg_simple(pg->wc, "ROLLBACK", why, sizeof(why));
    if (rc == 0 && b->nops) {
        pg->next_id++;
        pg->last_time = time_hi;
    }
    return rc;
}
