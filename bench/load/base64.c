/* base64.c - base64 encoding and decoding (see base64.h). */
#include <stdbool.h>
#include <stdint.h>

#include "base64.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

long sl_base64_encode(const void *in, size_t len, char *out, size_t cap)
{
    const unsigned char *p = in;
    size_t i, o = 0;
    if (cap == 0)
        return -1;
    out[0] = '\0';
    if (len > (cap - 1) / 4 * 3)
        return -1;
    for (i = 0; i + 2 < len; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = alphabet[(v >> 6) & 63];
        out[o++] = alphabet[v & 63];
    }
    if (i < len) { /* one or two bytes left: pad to four characters */
        uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < len ? (uint32_t)p[i + 1] << 8 : 0);
        out[o++] = alphabet[v >> 18];
        out[o++] = alphabet[(v >> 12) & 63];
        out[o++] = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        out[o++] = '=';
    }
    out[o] = '\0';
    return (long)o;
}

/* A character's six bits, or -1. */
static int sextet(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

/* One group of four characters into 1 to 3 bytes; pad is how many of the
 * last two are '='. */
static int decode_group(const char *t, int pad, unsigned char *b)
{
    int k, v[4] = {0, 0, 0, 0};
    for (k = 0; k < 4 - pad; k++)
        if ((v[k] = sextet(t[k])) < 0)
            return -1;
    b[0] = (unsigned char)(v[0] << 2 | v[1] >> 4);
    b[1] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
    b[2] = (unsigned char)((v[2] & 3) << 6 | v[3]);
    /* Bits below the last byte must be zero (RFC 4648 section 3.5): one
     * text per value. */
    if ((pad == 1 && (v[2] & 3)) || (pad == 2 && (v[1] & 15)))
        return -1;
    return 3 - pad;
}

long sl_base64_decode(const char *text, size_t len, char *out, size_t cap)
{
    size_t i, o = 0;
    int k;
    if (cap == 0)
        return -1;
    out[0] = '\0';
    if (len % 4 != 0)
        return -1;
    for (i = 0; i < len; i += 4) {
        unsigned char b[3];
        bool last = i + 4 == len;
        int pad = last ? (text[i + 3] == '=') + (text[i + 3] == '=' && text[i + 2] == '=') : 0;
        int n = decode_group(text + i, pad, b);
        if (n < 0 || o + (size_t)n >= cap) {
            out[0] = '\0';
            return -1;
        }
        for (k = 0; k < n; k++)
            out[o++] = (char)b[k];
    }
    out[o] = '\0';
    return (long)o;
}
