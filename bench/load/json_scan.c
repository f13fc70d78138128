/* json_scan.c - values found in JSON text in place (see json_scan.h). */
#include <string.h>

#include "json_scan.h"

static const char *skip_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
        p++;
    return p;
}

/* p is at the opening quote; returns what follows the closing one, or NULL. */
static const char *skip_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '"')
            return p + 1;
        if ((unsigned char)*p < 0x20)
            return NULL;
        if (*p == '\\' && ++p == end)
            return NULL;
    }
    return NULL;
}

/* An object or array: brackets counted, strings skipped (so a bracket in a
 * string does not count), depth bounded. */
static const char *skip_container(const char *p, const char *end)
{
    int depth = 0;
    while (p < end) {
        char c = *p;
        if (c == '"') {
            p = skip_string(p, end);
            if (!p)
                return NULL;
            continue;
        }
        if (c == '{' || c == '[') {
            if (++depth > SL_JSON_MAX_DEPTH)
                return NULL;
        } else if (c == '}' || c == ']') {
            if (--depth == 0)
                return p + 1;
        }
        p++;
    }
    return NULL;
}

/* A number or literal: up to the next delimiter. */
static const char *skip_scalar(const char *p, const char *end)
{
    const char *start = p;
    if (*p == '\0' || !strchr("-0123456789tfn", *p))
        return NULL;
    while (p < end && *p != '\0' && !strchr(",}] \t\r\n", *p))
        p++;
    return p > start ? p : NULL;
}

/* Returns what follows the value at p, or NULL when there is none. */
static const char *skip_value(const char *p, const char *end)
{
    if (p >= end)
        return NULL;
    if (*p == '"')
        return skip_string(p, end);
    if (*p == '{' || *p == '[')
        return skip_container(p, end);
    return skip_scalar(p, end);
}

sl_json_span sl_json_span_of(const char *text, size_t len)
{
    const char *p = skip_ws(text, text + len);
    const char *end = text + len;
    sl_json_span s;
    while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r'))
        end--;
    s.p = p;
    s.len = (size_t)(end - p);
    return s;
}

int sl_json_member(sl_json_span obj, const char *key, sl_json_span *out)
{
    const char *p = obj.p, *end = obj.p + obj.len;
    size_t key_len = strlen(key);
    if (obj.len == 0 || *p != '{')
        return SL_JSON_ETYPE;
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return SL_JSON_ENOTFOUND;
    while (p < end) {
        const char *k = p + 1, *v;
        if (*p != '"' || !(p = skip_string(p, end)))
            return SL_JSON_EMALFORMED;
        bool match = (size_t)(p - 1 - k) == key_len && memcmp(k, key, key_len) == 0;
        p = skip_ws(p, end);
        if (p >= end || *p != ':')
            return SL_JSON_EMALFORMED;
        v = skip_ws(p + 1, end);
        if (!(p = skip_value(v, end)))
            return SL_JSON_EMALFORMED;
        if (match) {
            out->p = v;
            out->len = (size_t)(p - v);
            return 0;
        }
        p = skip_ws(p, end);
        if (p < end && *p == '}')
            return SL_JSON_ENOTFOUND;
        if (p >= end || *p != ',')
            return SL_JSON_EMALFORMED;
        p = skip_ws(p + 1, end);
    }
    return SL_JSON_EMALFORMED;
}

int sl_json_iter_init(sl_json_iter *it, sl_json_span arr)
{
    if (arr.len == 0 || arr.p[0] != '[')
        return SL_JSON_ETYPE;
    it->p = arr.p + 1;
    it->end = arr.p + arr.len;
    it->first = true;
    return 0;
}

int sl_json_iter_next(sl_json_iter *it, sl_json_span *out)
{
    const char *p = skip_ws(it->p, it->end), *v;
    if (p >= it->end)
        return SL_JSON_EMALFORMED;
    if (*p == ']')
        return 0;
    if (!it->first) {
        if (*p != ',')
            return SL_JSON_EMALFORMED;
        p = skip_ws(p + 1, it->end);
    }
    v = p;
    if (!(p = skip_value(v, it->end)))
        return SL_JSON_EMALFORMED;
    it->first = false;
    it->p = p;
    out->p = v;
    out->len = (size_t)(p - v);
    return 1;
}

int sl_json_int64(sl_json_span v, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t n = 0, max;
    if (v.len > 0 && v.p[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == v.len)
        return SL_JSON_ETYPE;
    max = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < v.len; i++) {
        unsigned d = (unsigned)(v.p[i] - '0');
        if (d > 9)
            return SL_JSON_ETYPE;
        if (n > (max - d) / 10)
            return SL_JSON_ERANGE;
        n = n * 10 + d;
    }
    *out = neg ? (int64_t)(0 - n) : (int64_t)n;
    return 0;
}

static int hex4(const char *p, const char *end, unsigned *out)
{
    unsigned v = 0;
    int i;
    if (end - p < 4)
        return -1;
    for (i = 0; i < 4; i++) {
        char c = p[i];
        unsigned d = (c >= '0' && c <= '9')   ? (unsigned)(c - '0')
                     : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10)
                     : (c >= 'A' && c <= 'F') ? (unsigned)(c - 'A' + 10)
                                              : 16u;
        if (d == 16)
            return -1;
        v = v * 16 + d;
    }
    *out = v;
    return 0;
}

/* A \u escape (p after the 'u'), a surrogate pair included, as a code
 * point; returns the input consumed, or 0 when malformed. */
static size_t unicode_escape(const char *p, const char *end, unsigned *cp)
{
    unsigned hi, lo;
    if (hex4(p, end, &hi) < 0)
        return 0;
    if (hi < 0xD800 || hi > 0xDFFF) {
        *cp = hi;
        return 4;
    }
    if (hi > 0xDBFF || end - p < 10 || p[4] != '\\' || p[5] != 'u' || hex4(p + 6, end, &lo) < 0 ||
        lo < 0xDC00 || lo > 0xDFFF)
        return 0;
    *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
    return 10;
}

static size_t utf8_encode(unsigned cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* One escape (p after the backslash) into o: returns input consumed, or 0. */
static size_t unescape(const char *p, const char *end, char *o, size_t *olen)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *m;
    unsigned cp;
    size_t used;
    if (p >= end)
        return 0;
    if (*p != 'u') {
        m = memchr(from, *p, sizeof from - 1);
        if (!m)
            return 0;
        o[0] = to[m - from];
        *olen = 1;
        return 1;
    }
    used = unicode_escape(p + 1, end, &cp);
    if (!used)
        return 0;
    *olen = utf8_encode(cp, o);
    return used + 1;
}

int sl_json_string(sl_json_span v, char *buf, size_t cap)
{
    const char *p, *end;
    size_t n = 0;
    if (v.len < 2 || v.p[0] != '"' || v.p[v.len - 1] != '"')
        return SL_JSON_ETYPE;
    p = v.p + 1;
    end = v.p + v.len - 1;
    while (p < end) {
        char tmp[4];
        size_t olen = 1;
        if (*p == '\\') {
            size_t used = unescape(p + 1, end, tmp, &olen);
            if (!used)
                return SL_JSON_EMALFORMED;
            p += used + 1;
        } else {
            tmp[0] = *p++;
        }
        if (olen >= cap - n)
            return SL_JSON_ERANGE;
        memcpy(buf + n, tmp, olen);
        n += olen;
    }
    if (cap == 0)
        return SL_JSON_ERANGE;
    buf[n] = '\0';
    return 0;
}

bool sl_json_is_string(sl_json_span v, const char *s)
{
    size_t n = strlen(s);
    return v.len == n + 2 && v.p[0] == '"' && v.p[n + 1] == '"' && memcmp(v.p + 1, s, n) == 0;
}

bool sl_json_is_null(sl_json_span v)
{
    return v.len == 4 && memcmp(v.p, "null", 4) == 0;
}
