/* query.h - a request target split into its decoded path and query
 * parameters (query.c).
 *
 * The path keeps '+' and decodes %XX (docs/api.md: %2F stands for '/' in a
 * name); the query decodes %XX and '+' (a space), as forms do. A %XX that is
 * not two hex digits, or that decodes to NUL, is refused rather than passed
 * on half-decoded. A parameter without '=' has the empty value; empty
 * pieces ("a=1&&b=2") are skipped. */
#ifndef SL_HTTP_QUERY_H
#define SL_HTTP_QUERY_H

#include <stddef.h>

#include "http.h"

#define SL_QUERY_PARAMS_MAX 32

typedef struct sl_query {
    size_t n;
    const char *key[SL_QUERY_PARAMS_MAX];
    const char *value[SL_QUERY_PARAMS_MAX];
    char space[SL_HTTP_TARGET_MAX + 2 * SL_QUERY_PARAMS_MAX]; /* keys and values, NUL-ended */
} sl_query;

/* Splits target ("/path?query", or an absolute "http://host/path?query")
 * into path (decoded, NUL-ended, cap bytes at most) and q. 0, or -1 with
 * *why saying what was wrong. */
int sl_target_parse(const char *target, char *path, size_t cap, sl_query *q, const char **why);
/* The first value of key, NULL when absent. */
const char *sl_query_find(const sl_query *q, const char *key);

#endif
