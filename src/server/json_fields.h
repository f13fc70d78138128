/* json_fields.h - words for what is wrong in a JSON body (json_fields.c). */
#ifndef SL_SERVER_JSON_FIELDS_H
#define SL_SERVER_JSON_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Refuses an object holding a key that is not in names (NULL-terminated):
 * -1 and, in err, "<where>unknown field "K" (did you mean "X"?); <shape>",
 * where is a prefix such as "locks[0]: " (or ""), shape says what the
 * object may hold. 0 when every key is known. */
int sl_json_known_fields(json_t *obj, const char *const *names, const char *where,
                         const char *shape, char *err, size_t cap);
/* "a number", "a string", "an array", "an object", "a boolean", "null". */
const char *sl_json_type_words(const json_t *v);
/* The value as compact JSON ("1e12" reads 1000000000000.0), cut with "..."
 * to fit cap. */
void sl_json_value_text(const json_t *v, char *buf, size_t cap);

/* A duration field (absent: *ms unchanged): a string ("30s") or a number of
 * seconds. -1 and a message naming the field, the value, what is wrong with
 * it and the forms accepted. */
int sl_body_duration(json_t *v, const char *field, int64_t *ms, char *err, size_t cap);
/* The same for a lease, which is 0 (none) or at least SL_LEASE_MIN_MS. */
int sl_body_lease(json_t *v, int64_t *ms, char *err, size_t cap);

#endif
