/* query.c - request targets: the path and the query parameters, decoded. */
#include <string.h>

#include "query.h"

static int hex(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F')
        return ch - 'A' + 10;
    return -1;
}

/* Decodes in[0..n) into out, which has room for n + 1 bytes (decoding
 * never grows); -1 for a bad or NUL escape. */
static int decode(const char *in, size_t n, char *out, int plus_is_space)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = in[i];
        if (ch == '%') {
            if (n - i < 3)
                return -1;
            int a = hex(in[i + 1]), b = hex(in[i + 2]);
            if (a < 0 || b < 0 || (a == 0 && b == 0))
                return -1;
            ch = (char)(a * 16 + b);
            i += 2;
        } else if (ch == '+' && plus_is_space) {
            ch = ' ';
        }
        out[o++] = ch;
    }
    out[o] = '\0';
    return 0;
}

/* One "key=value" piece of the query into q's space at *used. */
static int add_param(sl_query *q, const char *s, size_t n, size_t *used, const char **why)
{
    if (q->n == SL_QUERY_PARAMS_MAX) {
        *why = "the query has more than 32 parameters";
        return -1;
    }
    const char *eq = memchr(s, '=', n);
    size_t klen = eq ? (size_t)(eq - s) : n;
    size_t vlen = eq ? n - klen - 1 : 0;
    char *key = q->space + *used;
    char *value = key + klen + 1;
    if (decode(s, klen, key, 1) != 0 || decode(eq ? eq + 1 : "", vlen, value, 1) != 0) {
        *why = "the query has a malformed %-escape (use %XX with two hex digits, not %00)";
        return -1;
    }
    *used += klen + vlen + 2;
    q->key[q->n] = key;
    q->value[q->n] = value;
    q->n++;
    return 0;
}

static int parse_query(sl_query *q, const char *s, size_t len, const char **why)
{
    size_t used = 0, start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '&')
            continue;
        if (i > start && add_param(q, s + start, i - start, &used, why) != 0)
            return -1;
        start = i + 1;
    }
    return 0;
}

int sl_target_parse(const char *target, char *path, size_t cap, sl_query *q, const char **why)
{
    q->n = 0;
    /* The absolute form a proxy may send: the authority is not ours to check. */
    if (strncmp(target, "http://", 7) == 0 || strncmp(target, "https://", 8) == 0) {
        const char *slash = strchr(strstr(target, "//") + 2, '/');
        target = slash ? slash : "/";
    }
    if (target[0] != '/') {
        *why = "the request target must be a path starting with /";
        return -1;
    }
    size_t plen = strcspn(target, "?#");
    if (plen >= cap) {
        *why = "the request path is too long";
        return -1;
    }
    if (decode(target, plen, path, 0) != 0) {
        *why = "the path has a malformed %-escape (use %XX with two hex digits, not %00)";
        return -1;
    }
    if (target[plen] != '?')
        return 0;
    const char *qs = target + plen + 1;
    size_t qlen = strcspn(qs, "#");
    if (qlen > SL_HTTP_TARGET_MAX) {
        *why = "the query is too long";
        return -1;
    }
    return parse_query(q, qs, qlen, why);
}

const char *sl_query_find(const sl_query *q, const char *key)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->key[i], key) == 0)
            return q->value[i];
    return NULL;
}
