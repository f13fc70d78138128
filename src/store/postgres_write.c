/* postgres_write.c - a captured batch (capture.c) committed as one record
 * (record.h) in one new row of `log`: one statement, one round trip, with
 * the leader's epoch fence in it (postgres.c's PQ_LOG_INSERT). The state
 * tables are brought forward later (postgres_apply.c). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "postgres_int.h"

static int fail(sl_pg *pg, sl_store_batch *b, const char *why)
{
    return sl__batch_fail(b, SL_STORE_EIO, "the store %s: %s", pg->label, why);
}

static int fenced(sl_pg *pg, sl_store_batch *b)
{
    return sl__batch_fail(b, SL_STORE_EFENCED,
                          "the store %s: another server leads now (this one's epoch %lld is "
                          "over); nothing was written",
                          pg->label, (long long)pg->epoch);
}

/* Runs a fenced statement: 0, SL_STORE_EFENCED, or SL_STORE_EIO. */
static int run_fenced(sl_pg *pg, sl_store_batch *b, pq_stmt which, int n, const char *const *v,
                      const int *len, const int *fmt)
{
    char name[16];
    snprintf(name, sizeof(name), "s%d", (int)which);
    PGresult *r = PQexecPrepared(pg->wc, name, n, v, len, fmt, 0);
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    int rc = 0;
    if (sl__pg_fenced(r))
        rc = fenced(pg, b);
    else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
        const char *m = r ? PQresultErrorMessage(r) : PQerrorMessage(pg->wc);
        char why[512];
        snprintf(why, sizeof(why), "a statement failed: %.*s", (int)strcspn(m, "\n"), m);
        rc = fail(pg, b, why);
    }
    PQclear(r);
    return rc;
}

static int append(sl_pg *pg, sl_store_batch *b, int64_t time_hi)
{
    sl_rec_encode(b, &pg->rec);
    char id[24], seq[24], t[24], n[16], epoch[24];
    snprintf(id, sizeof(id), "%" PRId64, (int64_t)pg->next_id);
    snprintf(seq, sizeof(seq), "%" PRId64, (int64_t)b->seq_hi);
    snprintf(t, sizeof(t), "%" PRId64, time_hi);
    snprintf(n, sizeof(n), "%u", b->nevents);
    snprintf(epoch, sizeof(epoch), "%" PRId64, (int64_t)pg->epoch);
    const char *v[6] = {id, seq, t, n, (const char *)pg->rec.p, epoch};
    int len[6] = {0, 0, 0, 0, (int)pg->rec.n, 0};
    int fmt[6] = {0, 0, 0, 0, 1, 0};
    return run_fenced(pg, b, PQ_LOG_INSERT, 6, v, len, fmt);
}

/* The fence alone, first in a transaction of several statements. */
static int fence(sl_pg *pg, sl_store_batch *b)
{
    char epoch[24];
    snprintf(epoch, sizeof(epoch), "%" PRId64, (int64_t)pg->epoch);
    const char *v[1] = {epoch};
    return run_fenced(pg, b, PQ_FENCE, 1, v, NULL, NULL);
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
    if (rc == 0 && b->prune)
        rc = fence(pg, b);
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
