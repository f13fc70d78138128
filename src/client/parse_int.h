/* parse_int.h - what the parsers of the server's JSON share (parse.c:
 * durations, times and fields; parse_claims.c; parse_locks.c). */
#ifndef SL_CLIENT_PARSE_INT_H
#define SL_CLIENT_PARSE_INT_H

#include "client_int.h"

/* The first failure of a parse; later field reads are no-ops. */
typedef struct pctx {
    sl_client_error *err;
    int rc;
    const char *what; /* "claim", "lock", ... for messages */
} pctx;

/* Field reads: after the first failure (p->rc set) each is a no-op that
 * returns a zero value, so a parse reads every field and checks once. */
void sl__pf_fail(pctx *p, int rc, const char *field, const char *expected);
char *sl__pf_dup(pctx *p, const char *s);
char *sl__pf_str(pctx *p, const json_t *o, const char *key, bool required, bool empty_default);
uint64_t sl__pf_uint(pctx *p, const json_t *o, const char *key, bool required, uint64_t dflt,
                     bool *present);
int64_t sl__pf_int(pctx *p, const json_t *o, const char *key, int64_t dflt);
int64_t sl__pf_time(pctx *p, const json_t *o, const char *key);
int64_t sl__pf_duration(pctx *p, const json_t *o, const char *key);
char *sl__pf_dump(pctx *p, const json_t *o);
void *sl__pf_alloc(pctx *p, size_t n, size_t size);
const json_t *sl__pf_array(pctx *p, const json_t *o, const char *key, bool required);
void sl__pf_free_strings(char **v, size_t n);
char **sl__pf_strings(pctx *p, const json_t *arr, const char *key, size_t *n);
bool sl__pf_object(pctx *p, const json_t *o);

#endif
