/* log_read.h - reading the event log out of the store's log records
 * (record.h), for every backend: a backend finds the records to read (by
 * seq, by time, by claim) and hands each to sl__log_scan_record, which
 * passes the events the read wants to its callback. */
#ifndef SL_STORE_LOG_READ_H
#define SL_STORE_LOG_READ_H

#include "record.h"
#include "store_int.h"

typedef struct sl_log_scan {
    uint64_t since;     /* events after this seq */
    const char *claim;  /* of this claim only, or NULL */
    int64_t to_ms;      /* a record past this time (the claim's end) ends the read */
    size_t limit, passed;
    size_t budget;      /* events after since examined at most (0: no bound) */
    size_t examined;    /* and so far: taken, skipped, or of another claim */
    bool stopped;       /* fn stopped */
    bool to_end;        /* read the claim up to its end event */
    bool ended;         /* and it was seen */
    uint64_t last;      /* the last seq examined */
    uint64_t rec_hi;    /* the highest seq of the records decoded */
    sl_store_event_fn fn;
    void *ud;
} sl_log_scan;

/* Whether the scan examined its budget: it stops there, with a partial
 * page whose `next` is sc->last. */
bool sl__log_scan_spent(const sl_log_scan *sc);
/* Whether the scan has ended: fn stopped, the limit, the claim's end, or
 * the budget. */
bool sl__log_scan_done(const sl_log_scan *sc);

/* Decodes record id (n bytes at rec) into scratch and passes its wanted
 * events to sc->fn, until sl__log_scan_done. SL_STORE_EDATA with st's
 * message when the record or an event in it is damaged. */
int sl__log_scan_record(sl_store *st, sl_store_batch *scratch, int64_t id, const void *rec,
                        size_t n, sl_log_scan *sc);

/* A backend's read of the record holding seq (the first whose seq_hi is at
 * least seq) through sl__log_scan_record; *found false when no record
 * does (seq is not committed yet). */
typedef int (*sl_log_at_fn)(sl_store *st, uint64_t seq, sl_log_scan *sc, bool *found);
/* Reads the records holding the listed seqs after sc->since, one search
 * each (sl_store_claim_events_at), until sl__log_scan_done. *walk says
 * whether the read goes on by walking the log after them (at->more, and
 * the listed ones all read): from sc->since, which is then past the last
 * record read. */
int sl__log_read_at(sl_store *st, const sl_store_seqs *at, sl_log_scan *sc, sl_log_at_fn read,
                    bool *walk);

#endif
