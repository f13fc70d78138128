/* json_scan.h - finds values in a JSON text without building a tree.
 *
 * The load generator reads two or three fields of every response ("state",
 * the first lock's "token"); a DOM parser would cost more client CPU than
 * the HTTP exchange itself. A span is a value's text inside the caller's
 * buffer: nothing is copied or allocated, and a span is valid as long as the
 * text is.
 *
 * This is a scanner, not a validator: members are found only in the object
 * they are asked of (a key nested deeper never matches), strings are skipped
 * with their escapes, and nesting is bounded by SL_JSON_MAX_DEPTH; text that
 * is not JSON yields SL_JSON_EMALFORMED where the scanner trips on it, and
 * never a read outside the span. */
#ifndef SL_BENCH_JSON_SCAN_H
#define SL_BENCH_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_JSON_MAX_DEPTH 64

enum {
    SL_JSON_ENOTFOUND = -1,  /* no such member */
    SL_JSON_EMALFORMED = -2, /* not JSON where it was scanned */
    SL_JSON_ETYPE = -3,      /* a value of another type than asked (null included) */
    SL_JSON_ERANGE = -4,     /* a number outside int64, a string longer than the buffer */
};

typedef struct sl_json_span {
    const char *p;
    size_t len;
} sl_json_span;

/* An array being walked: set up by sl_json_iter_init, advanced by
 * sl_json_iter_next. */
typedef struct sl_json_iter {
    const char *p, *end;
    bool first;
} sl_json_iter;

/* The span of a whole text, leading and trailing whitespace left out. */
sl_json_span sl_json_span_of(const char *text, size_t len);
/* The value of member key in object obj. 0, SL_JSON_ENOTFOUND,
 * SL_JSON_ETYPE (obj is not an object) or SL_JSON_EMALFORMED. Keys are
 * compared as they are written (no escapes are decoded in keys). */
int sl_json_member(sl_json_span obj, const char *key, sl_json_span *out /* OUT */);
/* Starts walking array arr: 0 or SL_JSON_ETYPE. */
int sl_json_iter_init(sl_json_iter *it, sl_json_span arr);
/* The next element: 1 and *out, 0 at the end, or SL_JSON_EMALFORMED. */
int sl_json_iter_next(sl_json_iter *it, sl_json_span *out /* OUT */);
/* An integer value (no fraction or exponent): 0, SL_JSON_ETYPE or SL_JSON_ERANGE. */
int sl_json_int64(sl_json_span v, int64_t *out /* OUT */);
/* A string value, unescaped and NUL-terminated into buf (cap bytes, NUL
 * included; \u escapes become UTF-8): 0, SL_JSON_ETYPE, SL_JSON_ERANGE
 * (too long) or SL_JSON_EMALFORMED (a bad escape). */
int sl_json_string(sl_json_span v, char *buf, size_t cap);
/* The value is the string s, written without escapes (as every string the
 * load generator compares is). */
bool sl_json_is_string(sl_json_span v, const char *s);
/* The value is the literal null. */
bool sl_json_is_null(sl_json_span v);

#endif
