/* record.c - batches as records and back (record.h has the format). */
#include <stdlib.h>
#include <string.h>

#include "record.h"

enum { P_NULL = 0, P_INT = 1, P_TEXT = 2 };

void sl_rec_buf_free(sl_rec_buf *out)
{
    free(out->p);
    memset(out, 0, sizeof(*out));
}

static unsigned char *room(sl_rec_buf *out, size_t more)
{
    if (out->n + more > out->cap) {
        size_t cap = out->cap ? out->cap : 512;
        while (cap < out->n + more)
            cap *= 2;
        unsigned char *p = realloc(out->p, cap);
        if (!p)
            abort();
        out->p = p;
        out->cap = cap;
    }
    return out->p + out->n;
}

static void put_varint(sl_rec_buf *out, uint64_t v)
{
    unsigned char *p = room(out, 10);
    size_t i = 0;
    while (v >= 0x80) {
        p[i++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    p[i++] = (unsigned char)v;
    out->n += i;
}

static void put_byte(sl_rec_buf *out, unsigned char c)
{
    *room(out, 1) = c;
    out->n++;
}

void sl_rec_encode(const sl_store_batch *b, sl_rec_buf *out)
{
    out->n = 0;
    put_byte(out, SL_REC_VERSION);
    for (size_t i = 0; i < b->nops; i++) {
        const sb_op *op = &b->ops[i];
        put_byte(out, (unsigned char)op->stmt);
        put_varint(out, op->nparams);
        for (uint32_t k = 0; k < op->nparams; k++) {
            const sb_param *p = &b->params[op->first + k];
            if (p->type == SB_INT) {
                put_byte(out, P_INT);
                /* zigzag: small negative numbers (-1 for "unset") stay short */
                put_varint(out, ((uint64_t)p->i << 1) ^ (p->i < 0 ? UINT64_MAX : 0));
            } else if (p->type == SB_TEXT) {
                put_byte(out, P_TEXT);
                put_varint(out, p->len);
                memcpy(room(out, p->len), b->text + p->off, p->len);
                out->n += p->len;
            } else {
                put_byte(out, P_NULL);
            }
        }
    }
}

typedef struct reader {
    const unsigned char *p, *end;
} reader;

static int get_varint(reader *r, uint64_t *v)
{
    *v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end)
            return -1;
        unsigned char c = *r->p++;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

static int bad(sl_store_batch *b, const char *why)
{
    sl__batch_fail(b, SL_STORE_EDATA, "a batch record is damaged: %s", why);
    return -1;
}

static int get_param(reader *r, sl_store_batch *b)
{
    if (r->p >= r->end)
        return bad(b, "it ends inside an operation");
    unsigned char type = *r->p++;
    uint64_t v;
    switch (type) {
    case P_NULL:
        sl__batch_text(b, NULL, 0);
        return 0;
    case P_INT:
        if (get_varint(r, &v) != 0)
            return bad(b, "an integer is cut short");
        sl__batch_int(b, (int64_t)(v >> 1) ^ -(int64_t)(v & 1));
        return 0;
    case P_TEXT:
        if (get_varint(r, &v) != 0 || v > (uint64_t)(r->end - r->p))
            return bad(b, "a text is longer than the record");
        sl__batch_text(b, (const char *)r->p, (size_t)v);
        r->p += v;
        return 0;
    default:
        return bad(b, "a parameter has an unknown type");
    }
}

int sl_rec_decode(const void *p, size_t n, sl_store_batch *b)
{
    sl__batch_clear(b);
    reader r = {p, (const unsigned char *)p + n};
    if (n == 0 || *r.p != SL_REC_VERSION)
        return bad(b, n ? "it has a format version this build does not know (written by a "
                          "newer sluice?)"
                        : "it is empty");
    r.p++;
    while (r.p < r.end) {
        unsigned char code = *r.p++;
        uint64_t np;
        if (code == 0 || code > SL_REC_OP_MAX)
            return bad(b, "it has an unknown operation");
        if (get_varint(&r, &np) != 0 || np > 64)
            return bad(b, "an operation has too many parameters");
        sl__batch_op(b, code);
        for (uint64_t k = 0; k < np; k++)
            if (get_param(&r, b) != 0)
                return -1;
    }
    return 0;
}
