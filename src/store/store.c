/* store.c - the store's public face: the URL picks a backend, every other
 * call goes through that backend's table, and the words of an event's
 * reason (the same whatever the backend). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

void sl__store_vfail(char *buf, size_t cap, const char *fmt, va_list ap)
{
    if (cap == 0)
        return;
    int n = vsnprintf(buf, cap, fmt, ap);
    if (n < 0)
        buf[0] = '\0';
}

int sl__store_fail(sl_store *st, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl__store_vfail(st->err, sizeof(st->err), fmt, ap);
    va_end(ap);
    return code;
}

static int url_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int url_fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl__store_vfail(err, errlen, fmt, ap);
    va_end(ap);
    return SL_STORE_EURL;
}

void sl_store_url_label(const char *url, char *out, size_t cap)
{
    if (cap == 0)
        return;
    /* Cut from the whole URL, then shortened: a URL cut first could end
     * inside its password, before the '@' that shows where it ends. */
    char *l = strdup(url ? url : "");
    if (!l)
        abort();
    /* A URI's user info: scheme://user:password@host */
    char *scheme = strstr(l, "://");
    char *at = scheme ? strchr(scheme + 3, '@') : NULL;
    char *colon = at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
    if (colon)
        memmove(colon, at, strlen(at) + 1);
    /* password=... in libpq's key=value form or a URI's query */
    for (char *pw = strstr(l, "password="); pw; pw = strstr(pw + 9, "password=")) {
        char *end = pw + 9;
        while (*end && *end != ' ' && *end != '&')
            end++;
        memmove(pw + 9, end, strlen(end) + 1);
    }
    snprintf(out, cap, "%s", l);
    free(l);
}

int sl_store_open(const sl_store_opts *opts, sl_store **out, char *err, size_t errlen)
{
    *out = NULL;
    if (errlen)
        err[0] = '\0';
    const char *url = opts ? opts->url : NULL;
    if (!url || !*url)
        return url_fail(err, errlen,
                        "no store URL given: use sqlite:PATH (the embedded store, e.g. "
                        "sqlite:/var/lib/sluice/sluice.db)");
    if (strncmp(url, "sqlite:", 7) == 0) {
        if (url[7] == '\0')
            return url_fail(err, errlen,
                            "the store URL \"%s\" names no file: use sqlite:PATH, e.g. "
                            "sqlite:/var/lib/sluice/sluice.db",
                            url);
        return sl__sqlite_open(url + 7, opts, out, err, errlen);
    }
    if (strncmp(url, "postgres://", 11) == 0 || strncmp(url, "postgresql://", 13) == 0)
        return sl__pg_open(url, opts, out, err, errlen);
    if (strncmp(url, "postgres:", 9) == 0 && url[9] && url[9] != '/') /* postgres:host=... */
        return sl__pg_open(url + 9, opts, out, err, errlen);
    return url_fail(err, errlen,
                    "the store URL \"%.200s\" is not understood: supported are sqlite:PATH "
                    "(the embedded store, e.g. sqlite:/var/lib/sluice/sluice.db) and "
                    "postgres://USER@HOST/DB (PostgreSQL)",
                    url);
}

void sl_store_close(sl_store *st)
{
    if (!st)
        return;
    sl_store_batch_free(st->scratch);
    sl__rows_buf_free(&st->locks_json);
    sl__rows_buf_free(&st->tags_json);
    st->ops->close(st);
}

const char *sl_store_error(const sl_store *st)
{
    return st->err;
}

int sl_store_schema_version(const sl_store *st)
{
    return st->schema;
}

int sl_store_current_schema(void)
{
    return sl__sqlite_nmigrations;
}

int sl_store_load(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats)
{
    st->err[0] = '\0';
    return st->ops->load(st, eng, now, stats);
}

void sl_store_set_source(sl_store *st, sl_config_source src)
{
    st->source = src;
}

int sl_store_config_source(sl_store *st, const char *name, bool *found, sl_config_source *out)
{
    st->err[0] = '\0';
    return st->ops->config_source(st, name, found, out);
}

/* ---- batches ------------------------------------------------------------- */

static void *grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    void *q = realloc(p, n * size);
    if (!q)
        abort();
    *cap = n;
    return q;
}

sl_store_batch *sl_store_batch_new(void)
{
    return calloc(1, sizeof(sl_store_batch));
}

void sl_store_batch_free(sl_store_batch *b)
{
    if (!b)
        return;
    free(b->ops);
    free(b->params);
    free(b->text);
    free(b);
}

void sl__batch_clear(sl_store_batch *b)
{
    b->nops = b->nparams = b->ntext = 0;
    b->seq_hi = 0;
    b->time_hi = 0;
    b->nevents = 0;
    b->prune = false;
    b->pruned = 0;
    b->err[0] = '\0';
}

bool sl_store_batch_empty(const sl_store_batch *b)
{
    return b->nops == 0 && !b->prune;
}

size_t sl_store_batch_rows(const sl_store_batch *b)
{
    return b->nops;
}

void sl_store_batch_prune(sl_store_batch *b, int64_t before_ms)
{
    b->prune = true;
    b->prune_before = before_ms;
}

uint64_t sl_store_batch_pruned(const sl_store_batch *b)
{
    return b->pruned;
}

const char *sl_store_batch_error(const sl_store_batch *b)
{
    return b->err;
}

void sl__batch_op(sl_store_batch *b, uint32_t stmt)
{
    b->ops = grow(b->ops, &b->capops, b->nops + 1, sizeof(*b->ops));
    b->ops[b->nops++] = (sb_op){stmt, 0, b->nparams};
}

static sb_param *next_param(sl_store_batch *b)
{
    b->params = grow(b->params, &b->capparams, b->nparams + 1, sizeof(*b->params));
    b->ops[b->nops - 1].nparams++;
    sb_param *p = &b->params[b->nparams++];
    memset(p, 0, sizeof(*p));
    return p;
}

void sl__batch_int(sl_store_batch *b, int64_t v)
{
    sb_param *p = next_param(b);
    p->type = SB_INT;
    p->i = v;
}

void sl__batch_text(sl_store_batch *b, const char *s, size_t len)
{
    sb_param *p = next_param(b);
    if (!s)
        return; /* SB_NULL */
    if (len >= UINT32_MAX || b->ntext + len + 1 >= UINT32_MAX)
        abort(); /* rows are bounded far below this (SL_ROWS_JSON_MAX) */
    b->text = grow(b->text, &b->captext, b->ntext + len + 1, 1);
    memcpy(b->text + b->ntext, s, len);
    b->text[b->ntext + len] = '\0';
    p->type = SB_TEXT;
    p->off = (uint32_t)b->ntext;
    p->len = (uint32_t)len;
    b->ntext += len + 1;
}

void sl__batch_str(sl_store_batch *b, const char *s)
{
    sl__batch_text(b, s, s ? strlen(s) : 0);
}

int sl__batch_fail(sl_store_batch *b, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl__store_vfail(b->err, sizeof(b->err), fmt, ap);
    va_end(ap);
    return code;
}

int sl_store_capture(sl_store *st, sl_engine *eng, const sl_changes *ch, sl_store_batch *b)
{
    sl__batch_clear(b);
    return sl__capture(st, eng, ch, b);
}

int sl_store_commit(sl_store *st, sl_store_batch *b)
{
    b->err[0] = '\0';
    return st->ops->commit(st, b);
}

bool sl_store_commit_overlaps(const sl_store *st)
{
    return st->ops->commit_overlaps(st);
}

bool sl_store_commit_inline(const sl_store *st)
{
    return st->ops->commit_inline && st->ops->commit_inline(st);
}

int sl_store_append(sl_store *st, sl_store_batch *b)
{
    return st->ops->append(st, b);
}

int sl_store_sync(sl_store *st, sl_store_batch *b)
{
    return st->ops->sync(st, b);
}

bool sl_store_checkpoint_due(const sl_store *st)
{
    return st->ops->checkpoint_due(st);
}

int sl_store_checkpoint(sl_store *st)
{
    return st->ops->checkpoint(st);
}

void sl_store_set_yield(sl_store *st, bool (*fn)(void *arg), void *arg)
{
    st->yield = fn;
    st->yield_arg = arg;
}

const char *sl_store_checkpoint_error(const sl_store *st)
{
    return st->ops->checkpoint_error(st);
}

/* Capture and commit in one go, with the store's own batch. */
int sl_store_write(sl_store *st, sl_engine *eng, const sl_changes *ch)
{
    st->err[0] = '\0';
    if (!st->scratch && !(st->scratch = sl_store_batch_new()))
        return sl__store_fail(st, SL_STORE_EIO, "out of memory for a batch");
    int rc = sl_store_capture(st, eng, ch, st->scratch);
    if (rc == 0)
        rc = sl_store_commit(st, st->scratch);
    if (rc)
        return sl__store_fail(st, rc, "%s", st->scratch->err);
    if (sl_store_checkpoint_due(st))
        sl_store_checkpoint(st); /* a failure only leaves a longer WAL */
    return 0;
}

void sl_store_set_scan_budget(sl_store *st, size_t events)
{
    st->scan_budget = events;
}

bool sl_store_read_partial(const sl_store *st)
{
    return st->read_partial;
}

int sl_store_events(sl_store *st, uint64_t since, const char *claim, size_t limit,
                    sl_store_event_fn fn, void *ud, uint64_t *next)
{
    st->err[0] = '\0';
    st->read_partial = false;
    return st->ops->events(st, since, claim, NULL, INT64_MIN, INT64_MAX, limit, fn, ud, next);
}

int sl_store_claim_events(sl_store *st, uint64_t since, const char *claim, int64_t from_ms,
                          int64_t to_ms, size_t limit, sl_store_event_fn fn, void *ud,
                          uint64_t *next)
{
    st->err[0] = '\0';
    st->read_partial = false;
    return st->ops->events(st, since, claim, NULL, from_ms, to_ms, limit, fn, ud, next);
}

int sl_store_claim_events_at(sl_store *st, uint64_t since, const char *claim,
                             const sl_store_seqs *at, int64_t from_ms, int64_t to_ms,
                             size_t limit, sl_store_event_fn fn, void *ud, uint64_t *next)
{
    st->err[0] = '\0';
    st->read_partial = false;
    return st->ops->events(st, since, claim, at, from_ms, to_ms, limit, fn, ud, next);
}

uint64_t sl_store_log_unapplied(const sl_store *st)
{
    return st->ops->log_unapplied(st);
}

int64_t sl_store_last_time(const sl_store *st)
{
    return st->ops->last_time(st);
}

int sl_store_elector_start(sl_store *st, const sl_elector_opts *o, sl_elector **out, char *err,
                           size_t cap)
{
    *out = NULL;
    return st->ops->elector_start ? st->ops->elector_start(st, o, out, err, cap) : 0;
}

void sl_store_set_epoch(sl_store *st, uint64_t epoch)
{
    if (st->ops->set_epoch)
        st->ops->set_epoch(st, epoch);
}

void sl_store_sever(sl_store *st)
{
    if (st->ops->sever)
        st->ops->sever(st);
}

int sl_store_apply(sl_store *st)
{
    st->err[0] = '\0';
    return st->ops->apply(st);
}

int sl_store_last_seq(sl_store *st, uint64_t *out)
{
    st->err[0] = '\0';
    return st->ops->last_seq(st, out);
}

int sl_store_prune_events(sl_store *st, int64_t before_ms, uint64_t *deleted)
{
    st->err[0] = '\0';
    *deleted = 0;
    if (!st->scratch && !(st->scratch = sl_store_batch_new()))
        return sl__store_fail(st, SL_STORE_EIO, "out of memory for a batch");
    sl__batch_clear(st->scratch);
    sl_store_batch_prune(st->scratch, before_ms);
    int rc = sl_store_commit(st, st->scratch);
    if (rc)
        return sl__store_fail(st, rc, "%s", st->scratch->err);
    *deleted = st->scratch->pruned;
    return 0;
}

/* ---- reasons ------------------------------------------------------------- */

/* How a claim ended or why it is revoking, naming the claim that superseded
 * or revoked it. */
static void ended_reason(const sl_event *ev, char *buf, size_t cap)
{
    sl_claim_view v;
    sl_claim_get(ev->claim, &v);
    const char *text = sl_reason_text(ev->reason);
    if (!v.by || !*v.by) {
        snprintf(buf, cap, "%s", text);
        return;
    }
    switch (ev->reason) {
    case SL_REASON_SUPERSEDED:
    case SL_REASON_REVOKED:
        snprintf(buf, cap, "%s (%s)", text, v.by);
        break;
    case SL_REASON_GRACE:
    case SL_REASON_REVOKED_FREED:
        snprintf(buf, cap, "%s (revoked by %s)", text, v.by);
        break;
    default:
        snprintf(buf, cap, "%s", text);
        break;
    }
}

void sl_store_event_reason(sl_engine *eng, const sl_event *ev, char *buf, size_t cap)
{
    (void)eng; /* everything needed is in the event and its claim */
    if (cap == 0)
        return;
    buf[0] = '\0';
    switch (ev->type) {
    case SL_EV_CLAIM_QUEUED:
        break;
    case SL_EV_CLAIM_WAITING: {
        sl_claim_view v;
        sl_claim_get(ev->claim, &v);
        if (ev->rule == SL_RULE_NONE || ev->rule_lock >= v.nlocks) {
            snprintf(buf, cap, "waiting");
            break;
        }
        sl_claim_lock_view lv;
        sl_claim_lock_peek(ev->claim, ev->rule_lock, &lv);
        snprintf(buf, cap, "%s on %s", sl_rule_name(ev->rule), lv.key);
        break;
    }
    case SL_EV_CLAIM_ACQUIRED:
        snprintf(buf, cap, "granted");
        break;
    case SL_EV_CLAIM_RENEWED:
        snprintf(buf, cap, "lease renewed");
        break;
    case SL_EV_CLAIM_RELEASED:
    case SL_EV_CLAIM_WITHDRAWN:
    case SL_EV_CLAIM_EXPIRED:
    case SL_EV_CLAIM_TIMED_OUT:
    case SL_EV_CLAIM_SUPERSEDED:
    case SL_EV_CLAIM_REVOKING:
    case SL_EV_CLAIM_CANCELED:
        ended_reason(ev, buf, cap);
        break;
    case SL_EV_SEMAPHORE_UPDATED:
        sl__sem_reason(ev, buf, cap);
        break;
    case SL_EV_SEMAPHORE_DELETED:
        snprintf(buf, cap, "configuration removed");
        break;
    }
}
