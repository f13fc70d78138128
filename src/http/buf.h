/* buf.h - a growable byte buffer with a consumed front (buf.c).
 *
 * The HTTP layer's input and output buffers, and the scratch that answers
 * are written into. Bytes are appended at the end and consumed from the
 * front; the space is kept and reused, so a connection in a steady state
 * allocates nothing. Bounds are the caller's: every user checks its own
 * limit before it appends (every buffer the daemon keeps has a maximum). Out of
 * memory aborts, as everywhere in the daemon. */
#ifndef SL_HTTP_BUF_H
#define SL_HTTP_BUF_H

#include <stddef.h>

typedef struct sl_buf {
    char *p;
    size_t off; /* consumed: the data is p[off..len) */
    size_t len;
    size_t cap;
} sl_buf;

/* The unconsumed bytes, and how many. */
static inline char *sl_buf_data(const sl_buf *b)
{
    return b->off ? b->p + b->off : b->p; /* never NULL + 0: undefined in C */
}
static inline size_t sl_buf_size(const sl_buf *b)
{
    return b->len - b->off;
}

/* Room for n more bytes at the end (moving the data to the front first
 * when that makes room); returns where they go. */
char *sl_buf_space(sl_buf *b, size_t n);
/* Records that n bytes were written at sl_buf_space's pointer. */
void sl_buf_commit(sl_buf *b, size_t n);
void sl_buf_add_slow(sl_buf *b, const void *p, size_t n);
/* Appends n bytes: inline when they fit, as they do on a warm connection. */
static inline void sl_buf_add(sl_buf *b, const void *p, size_t n)
{
    if (b->cap - b->len >= n && n > 0) {
        __builtin_memcpy(b->p + b->len, p, n);
        b->len += n;
        return;
    }
    sl_buf_add_slow(b, p, n);
}
void sl_buf_adds(sl_buf *b, const char *s);
/* A number in decimal, without printf. */
void sl_buf_addu(sl_buf *b, unsigned long long v);
void sl_buf_addf(sl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops n bytes from the front. */
void sl_buf_consume(sl_buf *b, size_t n);
void sl_buf_clear(sl_buf *b);
/* Frees the space; the buffer is empty and usable again. */
void sl_buf_free(sl_buf *b);
/* Gives back space above keep bytes when the buffer is empty (a burst
 * should not pin its memory on an idle connection). */
void sl_buf_shrink(sl_buf *b, size_t keep);

#endif
