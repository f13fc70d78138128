/* log_read.c - the events of a log record as the API shows them (log_read.h):
 * the part of reading the event log that is the same for every backend. */
#include <string.h>

#include "log_read.h"
#include "rows_json.h"

/* Longest values read back from the log (longer means the record is
 * damaged): an event type name, and an event's lock keys as JSON. */
#define EV_TYPE_MAX 32
#define EV_LOCKS_MAX (SL_CLAIM_LOCKS_MAX * (6 * SL_LOCK_KEY_MAX + 3) + 2)

static bool param_text(const sl_store_batch *b, const sb_param *p, size_t max, bool nullable,
                       const char **out)
{
    *out = NULL;
    if (p->type == SB_NULL)
        return nullable;
    if (p->type != SB_TEXT || p->len > max)
        return false;
    *out = b->text + p->off;
    return strlen(*out) == p->len;
}

/* One event operation of a record as the API's event; false when damaged. */
static bool op_event(const sl_store_batch *b, const sb_op *op, sl_store_event *ev)
{
    memset(ev, 0, sizeof(*ev));
    const sb_param *p = &b->params[op->first];
    if (op->nparams < 7 || p[0].type != SB_INT || p[1].type != SB_INT)
        return false;
    ev->seq = (uint64_t)p[0].i;
    ev->time_ms = p[1].i;
    ev->held = -1;
    if (!(param_text(b, &p[2], EV_TYPE_MAX, false, &ev->type) &&
          param_text(b, &p[3], SL_ID_MAX, true, &ev->claim) &&
          param_text(b, &p[4], SL_HOLDER_MAX, true, &ev->holder) &&
          param_text(b, &p[5], EV_LOCKS_MAX, false, &ev->locks) &&
          param_text(b, &p[6], SL_ROWS_REASON_MAX, false, &ev->reason)))
        return false;
    /* Appended later (record.h): absent from older records. */
    if (op->nparams > 7 && !param_text(b, &p[7], SL_ROWS_SLOTS_MAX, true, &ev->slots))
        return false;
    if (op->nparams > 8 && p[8].type == SB_INT)
        ev->held = p[8].i != 0;
    else if (op->nparams > 8 && p[8].type != SB_NULL)
        return false;
    if (op->nparams > 9 && !param_text(b, &p[9], SL_ACTOR_MAX, true, &ev->actor))
        return false;
    return true;
}


/* The types that end a claim (docs/api.md's events): none follows them. */
static bool ended(const char *type)
{
    static const char *const end[] = {"claim.released", "claim.withdrawn", "claim.expired",
                                      "claim.timed_out", "claim.superseded", "claim.canceled"};
    for (size_t i = 0; i < sizeof(end) / sizeof(end[0]); i++)
        if (strcmp(type, end[i]) == 0)
            return true;
    return false;
}

static int damaged(sl_store *st, int64_t id, const char *why)
{
    return sl__store_fail(st, SL_STORE_EDATA, "the store %s: log record %lld is damaged: %s",
                          st->label, (long long)id, why);
}

bool sl__log_scan_spent(const sl_log_scan *sc)
{
    return sc->budget > 0 && sc->examined >= sc->budget;
}

bool sl__log_scan_done(const sl_log_scan *sc)
{
    return sc->stopped || sc->ended || sc->passed >= sc->limit || sl__log_scan_spent(sc);
}

/* Events at or before since are not counted: only the first record has
 * them, and counting them could stop a read before it moved `next`. */
int sl__log_scan_record(sl_store *st, sl_store_batch *b, int64_t id, const void *rec, size_t n,
                        sl_log_scan *sc)
{
    if (sl_rec_decode(rec, n, b) != 0)
        return damaged(st, id, sl_store_batch_error(b));
    for (size_t i = 0; i < b->nops && !sc->stopped && sc->passed < sc->limit &&
                       !sl__log_scan_spent(sc);
         i++) {
        if (b->ops[i].stmt != SL_REC_EVENT)
            continue;
        sl_store_event ev;
        if (!op_event(b, &b->ops[i], &ev))
            return damaged(st, id, "an event is missing a field, or has one of the wrong type "
                                   "or too long");
        bool other = sc->claim && (!ev.claim || strcmp(ev.claim, sc->claim));
        if (!other && sc->to_end && ended(ev.type))
            sc->ended = true; /* nothing of the claim comes after its end */
        if (ev.seq > sc->rec_hi)
            sc->rec_hi = ev.seq;
        if (ev.seq <= sc->since)
            continue;
        /* Every event passed over counts against the budget, so a read
         * that skips most of the log still ends soon (docs/store.md). */
        sc->examined++;
        sc->last = ev.seq;
        if (other)
            continue;
        int rc = sc->fn(sc->ud, &ev);
        if (rc == SL_STORE_EVENT_SKIP)
            continue;
        sc->passed++;
        sc->stopped = rc != 0;
    }
    return 0;
}

int sl__log_read_at(sl_store *st, const sl_store_seqs *at, sl_log_scan *sc, sl_log_at_fn read,
                    bool *walk)
{
    *walk = false;
    bool found = true;
    for (size_t i = 0; i < at->n && found && !sl__log_scan_done(sc); i++) {
        /* Listed seqs in a record already read were taken with it. */
        if (at->seq[i] <= sc->since || at->seq[i] <= sc->rec_hi)
            continue;
        int rc = read(st, at->seq[i], sc, &found);
        if (rc)
            return rc;
    }
    if (!found || !at->more || sl__log_scan_done(sc))
        return 0;
    if (sc->rec_hi > sc->since)
        sc->since = sc->rec_hi;
    *walk = true;
    return 0;
}
