/* base64.h - standard base64 (RFC 4648 section 4, with padding) for etcd's
 * JSON gateway, which carries every key and value as base64 text.
 *
 * Both directions write into a caller's buffer of cap bytes and add a NUL,
 * so that the result can go straight into a JSON body or a comparison. */
#ifndef SL_BENCH_BASE64_H
#define SL_BENCH_BASE64_H

#include <stddef.h>

/* Bytes needed to encode n bytes, the NUL included. */
#define SL_BASE64_ENCODED_SIZE(n) ((((n) + 2) / 3) * 4 + 1)

/* Encodes len bytes of in: the length of the text written (NUL not
 * counted), or -1 when cap is too small (then out is "" if cap > 0). */
long sl_base64_encode(const void *in, size_t len, char *out, size_t cap);
/* Decodes the len characters of text (padded, no whitespace): the number of
 * bytes written before the NUL, or -1 when text is not base64 or out (cap
 * bytes, NUL included) is too small. */
long sl_base64_decode(const char *text, size_t len, char *out, size_t cap);

#endif
