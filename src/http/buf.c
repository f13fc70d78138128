/* buf.c - a growable byte buffer with a consumed front (see buf.h). */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *sl_buf_space(sl_buf *b, size_t n)
{
    if (b->cap - b->len >= n && b->p) /* a NULL p grows first: never NULL + 0 */
        return b->p + b->len;
    /* Moving the data to the front is cheaper than growing when most of
     * the buffer is consumed already. */
    if (b->off > 0) {
        size_t size = b->len - b->off;
        memmove(b->p, b->p + b->off, size);
        b->off = 0;
        b->len = size;
        if (b->cap - b->len >= n)
            return b->p + b->len;
    }
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->len < n) {
        if (cap > ((size_t)-1) / 2)
            abort();
        cap *= 2;
    }
    char *p = realloc(b->p, cap);
    if (!p)
        abort();
    b->p = p;
    b->cap = cap;
    return b->p + b->len;
}

void sl_buf_commit(sl_buf *b, size_t n)
{
    b->len += n;
}

void sl_buf_add_slow(sl_buf *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    memcpy(sl_buf_space(b, n), p, n);
    b->len += n;
}

void sl_buf_addu(sl_buf *b, unsigned long long v)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    sl_buf_add(b, tmp + i, sizeof(tmp) - i);
}

void sl_buf_adds(sl_buf *b, const char *s)
{
    sl_buf_add(b, s, strlen(s));
}

void sl_buf_addf(sl_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *at = sl_buf_space(b, 128);
    int n = vsnprintf(at, b->cap - b->len, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= b->cap - b->len) {
        at = sl_buf_space(b, (size_t)n + 1);
        va_start(ap, fmt);
        vsnprintf(at, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t)n;
}

void sl_buf_consume(sl_buf *b, size_t n)
{
    b->off += n;
    if (b->off >= b->len)
        b->off = b->len = 0;
}

void sl_buf_clear(sl_buf *b)
{
    b->off = b->len = 0;
}

void sl_buf_free(sl_buf *b)
{
    free(b->p);
    b->p = NULL;
    b->off = b->len = b->cap = 0;
}

void sl_buf_shrink(sl_buf *b, size_t keep)
{
    if (b->off == b->len && b->cap > keep)
        sl_buf_free(b);
}
