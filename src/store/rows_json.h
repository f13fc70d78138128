/* rows_json.h - the JSON text of a claim's locks and tags, of an event's
 * lock keys and of a configuration's rules, as every backend stores them
 * in its rows and records (rows_json.c), and the strict readers of that
 * text. */
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

/* An event's actor (sl_event.actor) is at most engine.h's SL_ACTOR_MAX
 * bytes: a token's name or a certificate's identity. Longer ones are cut to
 * it when captured, so that a record is never read back as damaged. */

/* JSON text of one configuration's rules: SL_WEIGHTS_MAX keys of
 * SL_NAME_MAX characters, every one escaped as \u00XX, come to 392 KiB;
 * the other rules add a few hundred bytes. */
#define SL_RULES_JSON_MAX (512 * 1024)

typedef struct sl_rows_buf {
    char *p;
    size_t n, cap;
    size_t max; /* the most text the writer allows (set by each writer) */
    bool over;  /* something did not fit under max */
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
/* The JSON object of a configuration's rules, with only those that are set
 * ({"preempt":true,"max_pending":5,"weights":{"paying":3},...}, durations
 * in integer milliseconds); false when none is (then nothing is stored:
 * the column is NULL). b->over is set when it passes SL_RULES_JSON_MAX. */
bool sl__rows_rules_json(const sl_sem_rules *r, sl_rows_buf *b);
/* Parse what the writers above wrote: len bytes of text are copied into
 * scratch (at least len + 1 bytes), where the strings are decoded and out's
 * names point. At most max entries; *n gets how many. Returns 0, -1 when
 * the text is not such an array, -2 when it has more than max entries, -3
 * when entry *n is malformed. */
int sl__rows_parse_locks(const char *text, size_t len, char *scratch, sl_claim_lock_rec *out,
                       size_t max, size_t *n);
int sl__rows_parse_tags(const char *text, size_t len, char *scratch, sl_tag *out, size_t max,
                      size_t *n);

/* A configuration's rules read back; rules.weights points into weights,
 * whose keys point into keys (owned: sl__rows_rules_free). */
typedef struct sl_rows_rules {
    sl_sem_rules rules;
    sl_weight weights[SL_WEIGHTS_MAX];
    char *keys;
} sl_rows_rules;

/* Parses what sl__rows_rules_json wrote (len bytes; NULL text: no rule is
 * set) into out, which is then freed with sl__rows_rules_free whatever
 * the result. Returns 0, or -1 with why (cap bytes) saying what is wrong.
 * It checks the shape and each value's range; whether the rules go
 * together (weights need the rebalanced strategy) is the engine's to say. */
int sl__rows_parse_rules(const char *text, size_t len, sl_rows_rules *out, char *why, size_t cap);
void sl__rows_rules_free(sl_rows_rules *r);
/* A saved configuration into the engine: its rules column (text, len;
 * NULL for none) parsed into o, then sl_engine_restore_config. -1 with why
 * in words when the column is malformed or the engine refuses it; both
 * backends' loaders report it as a bad row. */
int sl__rows_restore_config(sl_engine *eng, const char *name, sl_sem_opts *o, const char *text,
                            size_t len, char *why, size_t cap);

#endif
