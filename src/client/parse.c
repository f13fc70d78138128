/* parse.c - the server's JSON into the public structs: durations, times
 * and the field reads that parse_claims.c and parse_locks.c build on.
 *
 * Every string is copied (the structs outlive the JSON), times become Unix
 * milliseconds (-1 for null) and durations milliseconds, with small parsers
 * of the server's own formats: no strtod (its decimal point follows the
 * locale) and no timegm (not ISO C). A field of the wrong type, or a
 * required one missing, is SL_CLIENT_EPROTO naming the field; a parse that
 * fails frees what it had allocated and leaves the struct zeroed. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "parse_int.h"

/* ---- durations and times ------------------------------------------------------ */

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* digits[.digits] at *p: *ipart, and the fraction as nanounits (9 digits). */
static int number(const char **p, int64_t *ipart, int64_t *frac)
{
    const char *s = *p;
    int64_t v = 0, f = 0;
    int n = 0, k = 0;
    for (; is_digit(*s); s++) {
        if (++n > 15)
            return -1;
        v = v * 10 + (*s - '0');
    }
    if (n == 0)
        return -1;
    if (*s == '.') {
        for (s++; is_digit(*s); s++) {
            if (++k > 9)
                return -1;
            f = f * 10 + (*s - '0');
        }
        if (k == 0)
            return -1;
        for (; k < 9; k++)
            f *= 10;
    }
    *ipart = v;
    *frac = f;
    *p = s;
    return 0;
}

int sl__duration_parse(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return -1;
    static const int64_t unit_ms[] = {3600000, 60000, 1000, 1};
    const char *p = s;
    int64_t total = 0;
    size_t next = 0; /* units largest first, each at most once */
    bool first = true;
    while (*p) {
        int64_t ipart, frac;
        if (number(&p, &ipart, &frac) != 0)
            return -1;
        size_t u;
        if (*p == '\0') {
            if (!first)
                return -1; /* "1m30" is not a duration */
            u = 2;         /* a bare number is seconds */
        } else if (p[0] == 'm' && p[1] == 's') {
            u = 3;
            p += 2;
        } else if (*p == 'h' || *p == 'm' || *p == 's') {
            u = *p == 'h' ? 0 : *p == 'm' ? 1 : 2;
            p++;
        } else {
            return -1;
        }
        if (u < next)
            return -1;
        next = u + 1;
        first = false;
        if (ipart > (INT64_MAX / 2) / unit_ms[u])
            return -1;
        /* frac * unit fits: 1e9 * 3.6e6 < 9.2e18. Rounded half up. */
        int64_t part = ipart * unit_ms[u] + (frac * unit_ms[u] + 500000000) / 1000000000;
        if (part > INT64_MAX / 2 - total)
            return -1;
        total += part;
    }
    *ms = total;
    return 0;
}

static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit((*p)[i]))
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int sep(const char **p, char a, char b)
{
    if (**p != a && **p != b)
        return -1;
    (*p)++;
    return 0;
}

/* Days from 1970-01-01 (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

int sl__time_parse(const char *s, int64_t *ms)
{
    if (!s)
        return -1;
    const char *p = s;
    int y, mo, d, h, mi, sec;
    if (digits(&p, 4, &y) || sep(&p, '-', '-') || digits(&p, 2, &mo) || sep(&p, '-', '-') ||
        digits(&p, 2, &d) || sep(&p, 'T', 't') || digits(&p, 2, &h) || sep(&p, ':', ':') ||
        digits(&p, 2, &mi) || sep(&p, ':', ':') || digits(&p, 2, &sec))
        return -1;
    if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
        return -1;
    int64_t milli = 0;
    if (*p == '.') {
        int k = 0;
        int64_t nano = 0;
        for (p++; is_digit(*p); p++) {
            if (++k > 9)
                return -1;
            nano = nano * 10 + (*p - '0');
        }
        if (k == 0)
            return -1;
        for (; k < 9; k++)
            nano *= 10;
        milli = (nano + 500000) / 1000000;
    }
    int offset_min = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh) || sep(&p, ':', ':') || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        offset_min = sign * (oh * 60 + om);
    } else {
        return -1;
    }
    if (*p)
        return -1;
    if (sec == 60) { /* a leap second: the minute's last millisecond, as the server reads it */
        sec = 59;
        milli = 999;
    }
    int64_t days = days_from_civil(y, mo, d);
    *ms = ((days * 24 + h) * 60 + mi - offset_min) * 60000 + sec * 1000LL + milli;
    return 0;
}
/* ---- fields -------------------------------------------------------------------- */

void sl__pf_fail(pctx *p, int rc, const char *field, const char *expected)
{
    if (p->rc != SL_CLIENT_OK)
        return;
    p->rc = rc;
    if (rc == SL_CLIENT_ENOMEM)
        sl__err_oom(p->err);
    else
        sl__err_set(p->err, rc, "the server's %s has no valid \"%s\" (%s expected)", p->what, field,
                    expected);
}

char *sl__pf_dup(pctx *p, const char *s)
{
    char *d = strdup(s);
    if (!d)
        sl__pf_fail(p, SL_CLIENT_ENOMEM, "", "");
    return d;
}

/* A string field: required ones must be strings; optional ones may be null
 * or missing (then NULL, or "" when empty_default). */
char *sl__pf_str(pctx *p, const json_t *o, const char *key, bool required, bool empty_default)
{
    if (p->rc)
        return NULL;
    const json_t *v = json_object_get(o, key);
    if (json_is_string(v))
        return sl__pf_dup(p, json_string_value(v));
    if (required || (v && !json_is_null(v))) {
        sl__pf_fail(p, SL_CLIENT_EPROTO, key, "a string");
        return NULL;
    }
    return empty_default ? sl__pf_dup(p, "") : NULL;
}

/* A whole number >= 0; missing or null gives dflt unless required. */
uint64_t sl__pf_uint(pctx *p, const json_t *o, const char *key, bool required, uint64_t dflt,
                     bool *present)
{
    if (present)
        *present = false;
    if (p->rc)
        return dflt;
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v) && json_integer_value(v) >= 0) {
        if (present)
            *present = true;
        return (uint64_t)json_integer_value(v);
    }
    if (required || (v && !json_is_null(v)))
        sl__pf_fail(p, SL_CLIENT_EPROTO, key, "a whole number");
    return dflt;
}

int64_t sl__pf_int(pctx *p, const json_t *o, const char *key, int64_t dflt)
{
    if (p->rc)
        return dflt;
    const json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return (int64_t)json_integer_value(v);
    if (v && !json_is_null(v))
        sl__pf_fail(p, SL_CLIENT_EPROTO, key, "a whole number");
    return dflt;
}

/* A time: -1 when null or missing. */
int64_t sl__pf_time(pctx *p, const json_t *o, const char *key)
{
    if (p->rc)
        return -1;
    const json_t *v = json_object_get(o, key);
    int64_t ms;
    if (!v || json_is_null(v))
        return -1;
    if (!json_is_string(v) || sl__time_parse(json_string_value(v), &ms) != 0) {
        sl__pf_fail(p, SL_CLIENT_EPROTO, key, "an RFC 3339 time");
        return -1;
    }
    return ms;
}

/* A duration: 0 when missing; a string or a number of seconds. */
int64_t sl__pf_duration(pctx *p, const json_t *o, const char *key)
{
    if (p->rc)
        return 0;
    const json_t *v = json_object_get(o, key);
    int64_t ms = 0;
    if (!v || json_is_null(v))
        return 0;
    /* Seconds past INT64_MAX / 1000 have no milliseconds: not a duration. */
    if (json_is_integer(v) && json_integer_value(v) >= 0 &&
        json_integer_value(v) <= INT64_MAX / 1000)
        return (int64_t)json_integer_value(v) * 1000;
    if (!json_is_string(v) || sl__duration_parse(json_string_value(v), &ms) != 0)
        sl__pf_fail(p, SL_CLIENT_EPROTO, key, "a duration");
    return ms;
}

char *sl__pf_dump(pctx *p, const json_t *o)
{
    if (p->rc)
        return NULL;
    char *s = json_dumps(o, JSON_COMPACT);
    if (!s)
        sl__pf_fail(p, SL_CLIENT_ENOMEM, "", "");
    return s;
}

/* calloc for n items (n may be 0: NULL is then fine). */
void *sl__pf_alloc(pctx *p, size_t n, size_t size)
{
    if (p->rc || n == 0)
        return NULL;
    void *a = calloc(n, size);
    if (!a)
        sl__pf_fail(p, SL_CLIENT_ENOMEM, "", "");
    return a;
}

const json_t *sl__pf_array(pctx *p, const json_t *o, const char *key, bool required)
{
    if (p->rc)
        return NULL;
    const json_t *v = json_object_get(o, key);
    if (json_is_array(v))
        return v;
    if (required || (v && !json_is_null(v)))
        sl__pf_fail(p, SL_CLIENT_EPROTO, key, "an array");
    return NULL;
}

void sl__pf_free_strings(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* An array of strings into a new char* array. */
char **sl__pf_strings(pctx *p, const json_t *arr, const char *key, size_t *n)
{
    *n = 0;
    size_t count = json_array_size(arr);
    char **v = sl__pf_alloc(p, count, sizeof(*v));
    for (size_t i = 0; v && i < count && !p->rc; i++) {
        const json_t *s = json_array_get(arr, i);
        if (!json_is_string(s)) {
            sl__pf_fail(p, SL_CLIENT_EPROTO, key, "strings");
            break;
        }
        v[i] = sl__pf_dup(p, json_string_value(s));
        if (v[i])
            *n = i + 1;
    }
    return v;
}

bool sl__pf_object(pctx *p, const json_t *o)
{
    if (json_is_object(o))
        return true;
    if (!p->rc) {
        p->rc = SL_CLIENT_EPROTO;
        sl__err_set(p->err, SL_CLIENT_EPROTO, "the server's %s is not a JSON object", p->what);
    }
    return false;
}
