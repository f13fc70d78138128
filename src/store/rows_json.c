/* rows_json.c - the JSON text of a claim's locks and tags and of an
 * event's lock keys (rows_json.h): written by capture.c, read back by the
 * backends' loads (sqlite_load.c).
 *
 * The shapes are fixed and small ([[kind, name, slots, via, token], ...]
 * and [[key, value], ...]), so both directions are written out here rather
 * than going through a general JSON library: loading a million claims
 * parses two million of these, and a general parser's allocations per
 * value cost more than the rest of the load together (measured: jansson
 * 2.5 us a row, this 0.1 us). The reader is strict and bounded: it accepts
 * what the writer writes plus JSON whitespace and the standard escapes of
 * ASCII characters, and nothing else. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rows_json.h"

/* ---- writing ------------------------------------------------------------- */

void sl__rows_buf_reset(sl_rows_buf *b)
{
    b->n = 0;
    b->over = false;
}

void sl__rows_buf_free(sl_rows_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static void buf_add(sl_rows_buf *b, const char *s, size_t len)
{
    if (b->over || b->n + len + 1 > SL_ROWS_JSON_MAX) {
        b->over = true;
        return;
    }
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            abort();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

/* Appends s with JSON's escapes (names use a safe alphabet, but the store
 * does not rely on it). */
static void buf_esc(sl_rows_buf *b, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        buf_add(b, run, (size_t)(s - run));
        char esc[8];
        snprintf(esc, sizeof(esc), "\\u%04x", ch);
        buf_add(b, esc, 6);
        run = s + 1;
    }
    buf_add(b, run, (size_t)(s - run));
}

static void buf_str(sl_rows_buf *b, const char *s)
{
    buf_add(b, "\"", 1);
    buf_esc(b, s);
    buf_add(b, "\"", 1);
}

static void buf_i64(sl_rows_buf *b, int64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%" PRId64, v);
    buf_add(b, digits, (size_t)n);
}

void sl__rows_locks_json(const sl_claim *c, size_t n, sl_rows_buf *b)
{
    sl__rows_buf_reset(b);
    buf_add(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(c, i, &lv);
        buf_add(b, i ? ",[" : "[", i ? 2 : 1);
        buf_i64(b, (int64_t)lv.kind);
        buf_add(b, ",", 1);
        buf_str(b, lv.name);
        buf_add(b, ",", 1);
        buf_i64(b, (int64_t)lv.slots);
        buf_add(b, ",", 1);
        buf_i64(b, (int64_t)lv.via);
        buf_add(b, ",", 1);
        buf_i64(b, (int64_t)lv.token); /* the same bits as the unsigned token */
        buf_add(b, "]", 1);
    }
    buf_add(b, "]", 1);
}

void sl__rows_tags_json(const sl_claim *c, size_t n, sl_rows_buf *b)
{
    sl__rows_buf_reset(b);
    buf_add(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        sl_tag t;
        sl_claim_tag_get(c, i, &t);
        buf_add(b, i ? ",[" : "[", i ? 2 : 1);
        buf_str(b, t.key);
        buf_add(b, ",", 1);
        buf_str(b, t.value);
        buf_add(b, "]", 1);
    }
    buf_add(b, "]", 1);
}

void sl__rows_event_locks_json(const sl_event *ev, size_t nlocks, sl_rows_buf *b)
{
    sl__rows_buf_reset(b);
    buf_add(b, "[", 1);
    if (ev->claim) {
        for (size_t i = 0; i < nlocks; i++) {
            sl_claim_lock_view lv;
            sl_claim_lock_peek(ev->claim, i, &lv);
            if (i)
                buf_add(b, ",", 1);
            buf_str(b, lv.key);
        }
    } else if (ev->name) {
        buf_add(b, "\"sem/", 5);
        buf_esc(b, ev->name);
        buf_add(b, "\"", 1);
    }
    buf_add(b, "]", 1);
}

/* ---- reading ------------------------------------------------------------- */

typedef struct jp {
    char *p, *end; /* a mutable copy: strings are decoded in place */
} jp;

static void ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool lit(jp *j, char c)
{
    ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

static bool num(jp *j, int64_t lo, int64_t hi, int64_t *out)
{
    ws(j);
    bool neg = j->p < j->end && *j->p == '-';
    if (neg)
        j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
        return false;
    /* Magnitudes up to 2^63 (INT64_MIN's), in an unsigned accumulator. */
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++) {
        unsigned d = (unsigned)(*j->p - '0');
        if (v > (limit - d) / 10)
            return false;
        v = v * 10 + d;
    }
    int64_t x = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    if (x < lo || x > hi)
        return false;
    *out = x;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The character a one-letter escape stands for, 0 for none. */
static char unescape(char e)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *p = e ? strchr(from, e) : NULL;
    return p ? to[p - from] : 0;
}

/* A string of at most max bytes, decoded in place and NUL-terminated. */
static bool str(jp *j, size_t max, const char **out)
{
    if (!lit(j, '"'))
        return false;
    char *w = j->p, *start = j->p;
    for (;;) {
        if (j->p >= j->end)
            return false;
        char c = *j->p++;
        if (c == '"')
            break;
        if ((unsigned char)c < 0x20)
            return false;
        if (c == '\\') {
            if (j->p >= j->end)
                return false;
            char e = *j->p++;
            if (e == 'u') {
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    int h = j->p < j->end ? hexval(*j->p++) : -1;
                    if (h < 0)
                        return false;
                    v = v * 16 + h;
                }
                if (v == 0 || v >= 0x80) /* the writer escapes ASCII only */
                    return false;
                c = (char)v;
            } else if (!(c = unescape(e))) {
                return false;
            }
        }
        *w++ = c;
        if ((size_t)(w - start) > max)
            return false;
    }
    *w = '\0'; /* w < the closing quote's position, already read */
    *out = start;
    return true;
}

/* Opens the outer array; true with *empty set when it is []. */
static bool open_array(jp *j, char *scratch, const char *text, size_t len, bool *empty)
{
    memcpy(scratch, text, len);
    scratch[len] = '\0';
    j->p = scratch;
    j->end = scratch + len;
    if (!lit(j, '['))
        return false;
    *empty = lit(j, ']');
    return true;
}

static bool close_array(jp *j)
{
    ws(j);
    return j->p == j->end;
}

int sl__rows_parse_locks(const char *text, size_t len, char *scratch, sl_claim_lock_rec *out,
                       size_t max, size_t *n)
{
    jp j;
    bool empty = false;
    *n = 0;
    if (!open_array(&j, scratch, text, len, &empty))
        return -1;
    if (empty)
        return close_array(&j) ? 0 : -1;
    do {
        size_t i = *n;
        if (i >= max)
            return -2;
        int64_t kind, slots, via, token;
        const char *name;
        if (!lit(&j, '[') || !num(&j, SL_KIND_MUTEX, SL_KIND_SEMAPHORE, &kind) || !lit(&j, ',') ||
            !str(&j, SL_NAME_MAX, &name) || !lit(&j, ',') || !num(&j, 1, SL_LIMIT_MAX, &slots) ||
            !lit(&j, ',') || !num(&j, SL_VIA_LOCK, SL_VIA_GROUP, &via) || !lit(&j, ',') ||
            !num(&j, INT64_MIN, INT64_MAX, &token) || !lit(&j, ']'))
            return -3;
        out[i] =
            (sl_claim_lock_rec){(sl_kind)kind, name, (uint32_t)slots, (sl_via)via, (uint64_t)token};
        (*n)++;
    } while (lit(&j, ','));
    return lit(&j, ']') && close_array(&j) ? 0 : -1;
}

int sl__rows_parse_tags(const char *text, size_t len, char *scratch, sl_tag *out, size_t max,
                      size_t *n)
{
    jp j;
    bool empty = false;
    *n = 0;
    if (!open_array(&j, scratch, text, len, &empty))
        return -1;
    if (empty)
        return close_array(&j) ? 0 : -1;
    do {
        size_t i = *n;
        if (i >= max)
            return -2;
        if (!lit(&j, '[') || !str(&j, SL_NAME_MAX, &out[i].key) || !lit(&j, ',') ||
            !str(&j, SL_NAME_MAX, &out[i].value) || !lit(&j, ']'))
            return -3;
        (*n)++;
    } while (lit(&j, ','));
    return lit(&j, ']') && close_array(&j) ? 0 : -1;
}
