/* store_int.h - what every store backend shares: the table of functions
 * behind store.h, and the error message.
 *
 * store.c parses the URL and calls the backend's open; every other public
 * call goes through the backend's table, so that a second backend
 * (PostgreSQL) adds a file and a line in store.c and nothing else. */
#ifndef SL_STORE_INT_H
#define SL_STORE_INT_H

#include <stdarg.h>

#include "store.h"

/* Longest message kept in a store (messages are cut, never overflowed). */
#define SL_STORE_ERR_MAX 1024

typedef struct sl_store_ops {
    void (*close)(sl_store *st);
    int (*load)(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats);
    int (*write)(sl_store *st, sl_engine *eng, const sl_changes *ch);
    int (*config_source)(sl_store *st, const char *name, bool *found, sl_config_source *out);
    int (*events)(sl_store *st, uint64_t since, const char *claim, size_t limit,
                  sl_store_event_fn fn, void *ud, uint64_t *next);
    int (*last_seq)(sl_store *st, uint64_t *out);
    int (*prune_events)(sl_store *st, int64_t before_ms, uint64_t *deleted);
} sl_store_ops;

/* The head of every backend's struct (the backend embeds it first). */
struct sl_store {
    const sl_store_ops *ops;
    sl_config_source source; /* given to configurations written from now on */
    int schema;              /* the schema version the store is at */
    char err[SL_STORE_ERR_MAX];
};

/* Sets st's message (printf-style) and returns code. */
int sl__store_fail(sl_store *st, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void sl__store_vfail(char *buf, size_t cap, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));

/* The SQLite backend; path is the URL's part after "sqlite:". On failure
 * *out is NULL and err holds the message. */
int sl__sqlite_open(const char *path, const sl_store_opts *opts, sl_store **out, char *err,
                    size_t errlen);
/* The schema version this build's SQLite backend writes. */
extern const int sl__sqlite_nmigrations;

#endif
