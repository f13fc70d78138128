/* rows_json.h - the JSON text of a claim's locks and tags and of an
 * event's lock keys, as every backend stores them in its rows and records
 * (rows_json.c), and the strict readers of that text. */
#ifndef SL_STORE_ROWS_JSON_H
#define SL_STORE_ROWS_JSON_H

#include <stdbool.h>
#include <stddef.h>

#include "engine.h"

/* JSON text of one claim's locks or tags. Bounded: a claim has at most
 * SL_CLAIM_LOCKS_MAX locks of SL_NAME_MAX-character names and SL_TAGS_MAX
 * tags; with every character escaped as \u00XX that is below 256 KiB. */
#define SL_ROWS_JSON_MAX (256 * 1024)

/* An event's reason in words (store.c's sl_store_event_reason): a reason
 * text, a claim id and a lock key fit with room to spare. */
#define SL_ROWS_REASON_MAX 512

/* An event's slots text ("1,2": store.h's sl_store_event.slots): a number
 * of at most 10 digits and a comma per lock of a claim. */
#define SL_ROWS_SLOTS_MAX (SL_CLAIM_LOCKS_MAX * 11)

typedef struct sl_rows_buf {
    char *p;
    size_t n, cap;
    bool over; /* something did not fit under SL_ROWS_JSON_MAX */
} sl_rows_buf;

/* The JSON text of a claim's locks ([[kind, name, slots,
 * via, token], ...]; positions are not saved, and not computed), of its tags ([[key, value], ...])
 * and of an event's lock keys (["mtx/a", "sem/b"]); b->over is set when the
 * text would pass SL_ROWS_JSON_MAX. */
void sl__rows_buf_reset(sl_rows_buf *b);
void sl__rows_buf_free(sl_rows_buf *b);
void sl__rows_locks_json(const sl_claim *c, size_t n, sl_rows_buf *b);
void sl__rows_tags_json(const sl_claim *c, size_t n, sl_rows_buf *b);
void sl__rows_event_locks_json(const sl_event *ev, size_t nlocks, sl_rows_buf *b);
/* Parse what the writers above wrote: len bytes of text are copied into
 * scratch (at least len + 1 bytes), where the strings are decoded and out's
 * names point. At most max entries; *n gets how many. Returns 0, -1 when
 * the text is not such an array, -2 when it has more than max entries, -3
 * when entry *n is malformed. */
int sl__rows_parse_locks(const char *text, size_t len, char *scratch, sl_claim_lock_rec *out,
                       size_t max, size_t *n);
int sl__rows_parse_tags(const char *text, size_t len, char *scratch, sl_tag *out, size_t max,
                      size_t *n);

#endif
