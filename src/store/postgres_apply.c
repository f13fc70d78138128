/* postgres_apply.c - the state tables brought forward from the log, as
 * sqlite_apply.c does for SQLite (see there, and docs/store.md): records in
 * id order, each exactly once, in one transaction with meta.applied.
 *
 * The statements of a whole apply go to the server in libpq's pipeline
 * mode: one round trip for thousands of statements, where one round trip
 * each would make the apply slower than the commits it follows. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "postgres_int.h"

static int afail(sl_pg *pg, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int afail(sl_pg *pg, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl__store_vfail(pg->apply_err, sizeof(pg->apply_err), fmt, ap);
    va_end(ap);
    return code;
}

/* The statement that writes an operation, and how many parameters it
 * takes (postgres.c's statements): PostgreSQL wants exactly that many. */
static int stmt_of(uint32_t op, pq_stmt *out, uint32_t *nparams)
{
    switch (op) {
    case SL_REC_CLAIM_UPSERT: *out = PQ_CLAIM_UPSERT; *nparams = 25; return 0;
    case SL_REC_CLAIM_DELETE: *out = PQ_CLAIM_DELETE; *nparams = 1; return 0;
    case SL_REC_LOCK_UPSERT: *out = PQ_LOCK_UPSERT; *nparams = 2; return 0;
    case SL_REC_LOCK_DELETE: *out = PQ_LOCK_DELETE; *nparams = 1; return 0;
    case SL_REC_CONFIG_UPSERT: *out = PQ_CONFIG_UPSERT; *nparams = 7; return 0;
    case SL_REC_CONFIG_DELETE: *out = PQ_CONFIG_DELETE; *nparams = 1; return 0;
    case SL_REC_COUNTERS: *out = PQ_META_UPDATE; *nparams = 4; return 0;
    default: return -1;
    }
}

#define PARAMS_MAX 32

/* Queues one prepared statement of nparams parameters in the pipeline,
 * with b's parameters of op as text (integers written into ints[]). A
 * record of an older build lacks the parameters appended since (record.h):
 * they are NULL; a newer build's extra ones are not this build's to write. */
static int send_op(sl_pg *pg, pq_stmt which, const sl_store_batch *b, const sb_op *op,
                   uint32_t nparams)
{
    const char *v[PARAMS_MAX];
    char ints[PARAMS_MAX][24];
    if (nparams > PARAMS_MAX)
        return -1;
    for (uint32_t i = 0; i < nparams; i++) {
        const sb_param *p = i < op->nparams ? &b->params[op->first + i] : NULL;
        v[i] = NULL;
        if (p && p->type == SB_INT) {
            snprintf(ints[i], sizeof(ints[i]), "%" PRId64, p->i);
            v[i] = ints[i];
        } else if (p && p->type == SB_TEXT) {
            v[i] = b->text + p->off; /* NUL-terminated in the batch */
        }
    }
    char name[16];
    snprintf(name, sizeof(name), "s%d", (int)which);
    return PQsendQueryPrepared(pg->wc, name, (int)nparams, v, NULL, NULL, 0) ? 0 : -1;
}

/* A claim's first event: claim_log notes the record (as SQLite's apply). */
static int send_claim_log(sl_pg *pg, const sl_store_batch *b, const sb_op *op, int64_t id)
{
    static const char queued[] = "claim.queued";
    if (op->nparams < 4)
        return 0;
    const sb_param *type = &b->params[op->first + 2], *claim = &b->params[op->first + 3];
    if (claim->type != SB_TEXT || type->type != SB_TEXT || type->len != sizeof(queued) - 1 ||
        memcmp(b->text + type->off, queued, type->len) != 0)
        return 0;
    char first[24], name[16];
    snprintf(first, sizeof(first), "%" PRId64, id);
    snprintf(name, sizeof(name), "s%d", (int)PQ_CLAIM_LOG_ADD);
    const char *v[2] = {b->text + claim->off, first};
    return PQsendQueryPrepared(pg->wc, name, 2, v, NULL, NULL, 0) ? 0 : -1;
}

/* Queues every statement of record id. */
static int send_record(sl_pg *pg, int64_t id, const void *rec, size_t n)
{
    sl_store_batch *b = pg->apply_batch;
    if (sl_rec_decode(rec, n, b) != 0)
        return afail(pg, SL_STORE_EDATA, "the store %s: log record %lld: %s", pg->label,
                     (long long)id, sl_store_batch_error(b));
    for (size_t i = 0; i < b->nops; i++) {
        const sb_op *op = &b->ops[i];
        pq_stmt which;
        uint32_t nparams;
        int rc = 0;
        if (op->stmt == SL_REC_EVENT)
            rc = send_claim_log(pg, b, op, id);
        else if (stmt_of(op->stmt, &which, &nparams) == 0)
            rc = send_op(pg, which, b, op, nparams);
        if (rc)
            return afail(pg, SL_STORE_EIO, "the store %s: cannot send a statement: %s", pg->label,
                         PQerrorMessage(pg->wc));
    }
    return 0;
}

/* Reads the results of the pipeline up to its sync; the first failure is
 * kept. */
static int drain(sl_pg *pg)
{
    int rc = 0;
    for (;;) {
        PGresult *r = PQgetResult(pg->wc);
        if (!r && PQstatus(pg->wc) == CONNECTION_BAD)
            return afail(pg, SL_STORE_EIO, "the store %s: the connection broke while applying: %s",
                         pg->label, PQerrorMessage(pg->wc));
        if (!r)
            continue; /* the end of one statement's results */
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_PIPELINE_SYNC) {
            PQclear(r);
            return rc;
        }
        if (rc == 0 && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
            const char *m = PQresultErrorMessage(r);
            if (sl__pg_fenced(r))
                rc = afail(pg, SL_STORE_EFENCED,
                           "the store %s: another server leads now; this one's apply stopped",
                           pg->label);
            else
                rc = afail(pg, SL_STORE_EIO, "the store %s: cannot apply the log: %.*s",
                           pg->label, (int)strcspn(m, "\n"), m);
        }
        PQclear(r);
    }
}

/* The records after pg->applied (at most max, 0: all), read in one query. */
static PGresult *read_records(sl_pg *pg, size_t max)
{
    char after[24], lim[24], why[512];
    snprintf(after, sizeof(after), "%" PRId64, (int64_t)pg->applied);
    snprintf(lim, sizeof(lim), "%" PRId64, max ? (int64_t)max : INT64_MAX);
    const char *v[2] = {after, lim};
    PGresult *r = sl__pg_exec(pg->wc, PQ_APPLY_READ, 2, v, NULL, NULL, 1, why, sizeof(why));
    if (!r)
        afail(pg, SL_STORE_EIO, "the store %s: cannot read the log: %s", pg->label, why);
    return r;
}

static int64_t be64(const char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | (unsigned char)p[i];
    return (int64_t)v;
}

/* BEGIN, every record's statements, meta.applied, COMMIT: one pipeline. */
static int apply_records(sl_pg *pg, PGresult *rows, int64_t *last)
{
    char name[16], applied[24];
    int rc = PQenterPipelineMode(pg->wc) ? 0 : -1;
    if (rc)
        return afail(pg, SL_STORE_EIO, "the store %s: cannot enter pipeline mode: %s", pg->label,
                     PQerrorMessage(pg->wc));
    PQsendQueryParams(pg->wc, "BEGIN", 0, NULL, NULL, NULL, NULL, 0);
    /* Fenced like a commit: a deposed leader's apply must not move the
     * state (or meta.applied) under the new leader's load. */
    char epoch[24];
    snprintf(epoch, sizeof(epoch), "%" PRId64, (int64_t)pg->epoch);
    const char *ev[1] = {epoch};
    snprintf(name, sizeof(name), "s%d", (int)PQ_FENCE);
    PQsendQueryPrepared(pg->wc, name, 1, ev, NULL, NULL, 0);
    int n = PQntuples(rows);
    for (int i = 0; rc == 0 && i < n; i++) {
        int64_t id = be64(PQgetvalue(rows, i, 0));
        rc = send_record(pg, id, PQgetvalue(rows, i, 1), (size_t)PQgetlength(rows, i, 1));
        if (rc == 0)
            *last = id;
    }
    if (rc == 0) {
        snprintf(applied, sizeof(applied), "%" PRId64, *last);
        const char *v[1] = {applied};
        snprintf(name, sizeof(name), "s%d", (int)PQ_APPLIED_SET);
        PQsendQueryPrepared(pg->wc, name, 1, v, NULL, NULL, 0);
        snprintf(name, sizeof(name), "s%d", (int)PQ_CLAIM_LOG_PRUNE);
        PQsendQueryPrepared(pg->wc, name, 0, NULL, NULL, NULL, 0);
        PQsendQueryParams(pg->wc, "COMMIT", 0, NULL, NULL, NULL, NULL, 0);
    } else {
        PQsendQueryParams(pg->wc, "ROLLBACK", 0, NULL, NULL, NULL, NULL, 0);
    }
    PQpipelineSync(pg->wc);
    int drained = drain(pg);
    PQexitPipelineMode(pg->wc);
    if (rc == 0 && drained) {
        char why[512];
        sl__pg_simple(pg->wc, "ROLLBACK", why, sizeof(why)); /* an aborted transaction */
    }
    return rc ? rc : drained;
}

int sl__pg_apply(sl_pg *pg, size_t max)
{
    if (sl__pg_pending(pg) <= 0)
        return 0;
    if (!pg->apply_batch && !(pg->apply_batch = sl_store_batch_new()))
        return afail(pg, SL_STORE_EIO, "out of memory for a log record");
    char why[512];
    if (sl__pg_ensure(pg, pg->wc, why, sizeof(why)) != 0)
        return afail(pg, SL_STORE_EIO, "the store %s: %s", pg->label, why);
    PGresult *rows = read_records(pg, max);
    if (!rows)
        return SL_STORE_EIO;
    int64_t last = pg->applied;
    int rc = PQntuples(rows) ? apply_records(pg, rows, &last) : 0;
    PQclear(rows);
    if (rc)
        return rc;
    pg->applied = last;
    pg->applied_at_ms = sl__pg_now_ms();
    return 0;
}

int64_t sl__pg_pending(const sl_pg *pg)
{
    return pg->next_id - 1 - pg->applied;
}

bool sl__pg_apply_due(const sl_pg *pg)
{
    int64_t pending = sl__pg_pending(pg);
    return pending >= PQ_APPLY_DUE ||
           (pending > 0 && sl__pg_now_ms() - pg->applied_at_ms >= PQ_APPLY_AFTER_MS);
}
