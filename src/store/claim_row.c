/* claim_row.c - one claims row into a restore record (claim_row.h). */
#include <stdio.h>
#include <string.h>

#include "claim_row.h"

/* The words for a JSON column's parse result (sl__rows_parse_*'s codes). */
static bool json_ok(sl_claim_row *r, const char *what, const char *shape, int rc, size_t n)
{
    if (rc == 0)
        return true;
    if (rc == -1)
        snprintf(r->what, sizeof(r->what), "its %ss are not a JSON array of arrays", what);
    else if (rc == -2)
        snprintf(r->what, sizeof(r->what), "it has too many %ss", what);
    else
        snprintf(r->what, sizeof(r->what), "its %s %zu is malformed (not %s)", what, n, shape);
    return false;
}

static bool read_json(const sl_claim_cols *c, sl_claim_row *r)
{
    const char *text;
    size_t len, n = 0;
    if (!c->text_at(c->src, SL_CC_LOCKS, SL_ROWS_JSON_MAX, false, &text, &len)) {
        snprintf(r->what, sizeof(r->what), "its locks are missing or too long");
        return false;
    }
    int rc = sl__rows_parse_locks(text, len, r->scratch, r->locks, SL_CLAIM_LOCKS_MAX, &n);
    r->rec.v.nlocks = n;
    if (!json_ok(r, "lock", "[kind, name, slots, via, token]", rc, n))
        return false;
    if (!c->text_at(c->src, SL_CC_TAGS, SL_ROWS_JSON_MAX, false, &text, &len)) {
        snprintf(r->what, sizeof(r->what), "its tags are missing or too long");
        return false;
    }
    n = 0;
    rc = sl__rows_parse_tags(text, len, r->scratch2, r->tags, SL_TAGS_MAX, &n);
    r->rec.v.ntags = n;
    if (!json_ok(r, "tag", "[key, value]", rc, n))
        return false;
    r->rec.locks = r->locks;
    r->rec.tags = r->tags;
    return true;
}

static void fill_view(sl_claim_view *v, const int64_t *x, const char *const *t)
{
    v->id = t[SL_CC_ID];
    v->holder = t[SL_CC_HOLDER];
    v->rebalance_key = t[SL_CC_RKEY];
    v->group = t[SL_CC_GROUP];
    v->by = t[SL_CC_BY];
    v->idem = t[SL_CC_IDEM];
    v->idem_fp = (uint64_t)x[SL_CC_IDEM_FP];
    v->actor = t[SL_CC_ACTOR];
    v->arrival = (uint64_t)x[SL_CC_ARRIVAL];
    v->state = (sl_state)x[SL_CC_STATE];
    v->priority = (int32_t)x[SL_CC_PRIORITY];
    v->created_ms = x[SL_CC_CREATED];
    v->arrived_ms = x[SL_CC_ARRIVED];
    v->cancel = (sl_cancel)x[SL_CC_CANCEL];
    v->grace_ms = x[SL_CC_GRACE];
    v->lease_ms = x[SL_CC_LEASE];
    v->timeout_ms = x[SL_CC_TIMEOUT];
    v->life_ms = x[SL_CC_LIFE];
    v->expires_ms = -1; /* derived by the engine */
    v->granted_ms = x[SL_CC_GRANTED];
    v->grant_seq = (uint64_t)x[SL_CC_GRANT_SEQ];
    v->revoke_at_ms = x[SL_CC_REVOKE_AT];
    v->ended_ms = x[SL_CC_ENDED];
    v->reason = (sl_reason)x[SL_CC_REASON];
}

bool sl__claim_row_read(const sl_claim_cols *c, sl_claim_row *r)
{
    static const struct {
        int col;
        int64_t lo, hi;
    } ints[] = {
        {SL_CC_ARRIVAL, INT64_MIN, INT64_MAX},   {SL_CC_STATE, SL_PENDING, SL_CANCELED},
        {SL_CC_PRIORITY, INT32_MIN, INT32_MAX},  {SL_CC_CREATED, INT64_MIN, INT64_MAX},
        {SL_CC_ARRIVED, INT64_MIN, INT64_MAX},   {SL_CC_CANCEL, SL_CANCEL_NONE, SL_CANCEL_IN_PROGRESS},
        {SL_CC_GRACE, INT64_MIN, INT64_MAX},     {SL_CC_LEASE, INT64_MIN, INT64_MAX},
        {SL_CC_TIMEOUT, INT64_MIN, INT64_MAX},   {SL_CC_LIFE, INT64_MIN, INT64_MAX},
        {SL_CC_GRANTED, INT64_MIN, INT64_MAX},   {SL_CC_GRANT_SEQ, INT64_MIN, INT64_MAX},
        {SL_CC_REVOKE_AT, INT64_MIN, INT64_MAX}, {SL_CC_ENDED, INT64_MIN, INT64_MAX},
        {SL_CC_REASON, SL_REASON_NONE, SL_REASON_QUEUE_FULL},
        {SL_CC_IDEM_FP, INT64_MIN, INT64_MAX},
    };
    static const struct {
        int col;
        size_t max;
        bool nullable;
    } texts[] = {{SL_CC_HOLDER, SL_HOLDER_MAX, false}, {SL_CC_RKEY, SL_NAME_MAX, true},
                 {SL_CC_GROUP, SL_NAME_MAX, true},     {SL_CC_BY, SL_ID_MAX, true},
                 {SL_CC_IDEM, SL_IDEM_MAX, true},      {SL_CC_ACTOR, SL_ACTOR_MAX, true}};
    int64_t x[SL_CC_COUNT] = {0};
    const char *t[SL_CC_COUNT] = {0};
    size_t len;
    memset(&r->rec, 0, sizeof(r->rec));
    if (!c->text_at(c->src, SL_CC_ID, SL_ID_MAX, false, &t[SL_CC_ID], &len)) {
        snprintf(r->what, sizeof(r->what), "its id is missing or too long");
        return false;
    }
    r->rec.v.id = t[SL_CC_ID];
    for (size_t k = 0; k < sizeof(ints) / sizeof(ints[0]); k++)
        if (!c->int_at(c->src, ints[k].col, ints[k].lo, ints[k].hi, &x[ints[k].col])) {
            snprintf(r->what, sizeof(r->what),
                     "its column %s is missing, of the wrong type or out of range",
                     c->name(c->src, ints[k].col));
            return false;
        }
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++)
        if (!c->text_at(c->src, texts[k].col, texts[k].max, texts[k].nullable, &t[texts[k].col],
                        &len)) {
            snprintf(r->what, sizeof(r->what), "its column %s is missing or too long",
                     c->name(c->src, texts[k].col));
            return false;
        }
    fill_view(&r->rec.v, x, t);
    return read_json(c, r);
}
