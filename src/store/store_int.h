/* store_int.h - what every store backend shares: the table of functions
 * behind store.h, and the error message.
 *
 * store.c parses the URL and calls the backend's open; every other public
 * call goes through the backend's table, so that a second backend
 * (PostgreSQL) adds a file and a line in store.c and nothing else. */
#ifndef SL_STORE_INT_H
#define SL_STORE_INT_H

#include <stdarg.h>
#include <stdint.h>

#include "rows_json.h"
#include "store.h"

/* Longest message kept in a store (messages are cut, never overflowed). */
#define SL_STORE_ERR_MAX 1024

typedef struct sl_store_ops {
    void (*close)(sl_store *st);
    int (*load)(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats);
    int (*commit)(sl_store *st, sl_store_batch *b);
    bool (*commit_overlaps)(const sl_store *st);
    bool (*commit_inline)(const sl_store *st); /* NULL: false */
    int (*append)(sl_store *st, sl_store_batch *b); /* NULL when not inline */
    int (*sync)(sl_store *st, sl_store_batch *b);
    bool (*checkpoint_due)(const sl_store *st);
    int (*checkpoint)(sl_store *st);
    int (*config_source)(sl_store *st, const char *name, bool *found, sl_config_source *out);
    int (*events)(sl_store *st, uint64_t since, const char *claim, const sl_store_seqs *at,
                  int64_t from_ms, int64_t to_ms, size_t limit, sl_store_event_fn fn, void *ud,
                  uint64_t *next);
    int (*last_seq)(sl_store *st, uint64_t *out);
    int (*apply)(sl_store *st);
    int64_t (*last_time)(const sl_store *st);
    uint64_t (*log_unapplied)(const sl_store *st);
    const char *(*checkpoint_error)(const sl_store *st);
    /* Shared mode; NULL for a backend that is never shared. */
    int (*elector_start)(sl_store *st, const sl_elector_opts *o, sl_elector **out, char *err,
                         size_t cap);
    void (*set_epoch)(sl_store *st, uint64_t epoch);
    void (*sever)(sl_store *st);
} sl_store_ops;

/* A captured batch: operations (record.h's sl_rec_op) in order, with their
 * parameters; text lives in one arena and is named by offset, so that the
 * arena may grow. It is written to the log as one record (record.h). */
typedef enum { SB_NULL, SB_INT, SB_TEXT } sb_type;

typedef struct sb_param {
    int64_t i;          /* SB_INT */
    uint32_t off, len;  /* SB_TEXT: bytes of b->text */
    uint8_t type;
} sb_param;

typedef struct sb_op {
    uint32_t stmt;
    uint32_t nparams;
    size_t first; /* its parameters are params[first .. first + nparams - 1] */
} sb_op;

struct sl_store_batch {
    sb_op *ops;
    size_t nops, capops;
    sb_param *params;
    size_t nparams, capparams;
    char *text;
    size_t ntext, captext;
    /* The log row's columns: the highest event seq given out so far, the
     * newest event time in the batch (0: none), how many events. */
    uint64_t seq_hi;
    int64_t time_hi;
    uint32_t nevents;
    bool prune;
    int64_t prune_before;
    uint64_t pruned;
    char err[SL_STORE_ERR_MAX];
};

/* store.c: recording a batch (aborts when out of memory, as the engine's
 * allocations of a batch do). */
void sl__batch_clear(sl_store_batch *b);
void sl__batch_op(sl_store_batch *b, uint32_t stmt);
void sl__batch_int(sl_store_batch *b, int64_t v);
void sl__batch_text(sl_store_batch *b, const char *s, size_t len); /* NULL: SQL NULL */
void sl__batch_str(sl_store_batch *b, const char *s);              /* NULL: SQL NULL */
int sl__batch_fail(sl_store_batch *b, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The head of every backend's struct (the backend embeds it first). */
struct sl_store {
    const sl_store_ops *ops;
    sl_config_source source; /* given to configurations written from now on */
    int schema;              /* the schema version the store is at */
    sl_store_batch *scratch; /* sl_store_write's batch, made on first use */
    const char *label;       /* the store in messages: a path, a URL without secrets */
    sl_rows_buf locks_json, tags_json; /* capture's, reused by every batch */
    size_t scan_budget;      /* sl_store_set_scan_budget (0: none) */
    bool read_partial;       /* sl_store_read_partial */
    bool (*yield)(void *arg); /* sl_store_set_yield */
    void *yield_arg;
    char err[SL_STORE_ERR_MAX];
};

/* Sets st's message (printf-style) and returns code. */
int sl__store_fail(sl_store *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sl__store_vfail(char *buf, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* capture.c: an engine batch into b (the store's capture, whatever the
 * backend). */
int sl__capture(sl_store *st, sl_engine *eng, const sl_changes *ch, sl_store_batch *b);

/* The SQLite backend; path is the URL's part after "sqlite:". On failure
 * *out is NULL and err holds the message. */
int sl__sqlite_open(const char *path, const sl_store_opts *opts, sl_store **out, char *err,
                    size_t errlen);
/* The PostgreSQL backend; url is a libpq connection string (a URI or
 * key=value pairs). On failure *out is NULL and err holds the message. */
int sl__pg_open(const char *url, const sl_store_opts *opts, sl_store **out, char *err,
                size_t errlen);
/* The schema version this build's SQLite backend writes. */
extern const int sl__sqlite_nmigrations;

/* A semaphore.updated event's reason: the new configuration's values, or
 * what a change changed (sem_reason.c). */
void sl__sem_reason(const sl_event *ev, char *buf, size_t cap);

#endif
