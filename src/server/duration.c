/* duration.c - durations ("1h30m", "250ms", "1.5") and RFC 3339 timestamps.
 *
 * Everything here is exact integer arithmetic on the characters: no strtod
 * (its decimal point follows the locale), no timegm or gmtime (not ISO C,
 * and they read the time zone database). Numbers are parsed as an integer
 * part of at most 15 digits and a fraction of at most 9 digits; every
 * product is checked against SL_DURATION_MAX_MS before it is formed.
 *
 * Rounding: fractions finer than a millisecond are rounded half up, once,
 * on the exact sum ("1.0005s" is 1001 ms, "1.0004s" is 1000 ms), in
 * durations and timestamps alike. A duration that is not zero never rounds
 * to zero, because 0 means "none": anything in (0 ms, 1 ms) becomes 1 ms.
 *
 * Leap seconds: a timestamp with second 60 is accepted (RFC 3339 allows it)
 * and read as the last millisecond of its minute, hh:mm:59.999, whatever
 * its fraction. Unix time has no leap seconds; this keeps such a time in
 * its minute and in order with the times around it. */
#include "duration.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 10^9: the fraction digits are scaled to nanounits of their unit. */
#define FRAC_SCALE 1000000000LL
#define INT_DIGITS_MAX 15
#define FRAC_DIGITS_MAX 9

/* The last millisecond a timestamp may name: 9999-12-31T23:59:59.999Z. */
#define TIME_MAX_MS 253402300799999LL
#define DAY_MS 86400000LL

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* Reads digits[.digits] at *p. The integer part is required (no ".5"), and
 * a '.' must be followed by a digit (no "5."). *frac is the fraction scaled
 * to 9 digits: ".5" gives 500000000. Advances *p past the number. */
static int number_parse(const char **p, int64_t *ipart, int64_t *frac)
{
    const char *s = *p;
    int64_t v = 0;
    int n = 0;
    while (is_digit(*s)) {
        if (++n > INT_DIGITS_MAX)
            return -1;
        v = v * 10 + (*s - '0');
        s++;
    }
    if (n == 0)
        return -1;
    int64_t f = 0;
    if (*s == '.') {
        s++;
        int k = 0;
        while (is_digit(*s)) {
            if (++k > FRAC_DIGITS_MAX)
                return -1;
            f = f * 10 + (*s - '0');
            s++;
        }
        if (k == 0)
            return -1;
        for (; k < FRAC_DIGITS_MAX; k++)
            f *= 10;
    }
    *ipart = v;
    *frac = f;
    *p = s;
    return 0;
}

/* Adds ipart + frac/1e9 units of unit_ms milliseconds: whole milliseconds
 * into *whole (checked against the maximum), the sub-millisecond rest, in
 * units of 1e-9 ms, into *nano. frac * unit_ms is at most 1e9 * 3.6e6, far
 * inside int64_t. */
static int add_part(int64_t ipart, int64_t frac, int64_t unit_ms, int64_t *whole, int64_t *nano)
{
    if (ipart > SL_DURATION_MAX_MS / unit_ms)
        return -1;
    int64_t w = ipart * unit_ms;
    if (w > SL_DURATION_MAX_MS - *whole)
        return -1;
    *whole += w;
    int64_t fn = frac * unit_ms; /* 1e-9 ms */
    *whole += fn / FRAC_SCALE;
    *nano += fn % FRAC_SCALE;
    return *whole > SL_DURATION_MAX_MS ? -1 : 0;
}

/* Rounds the sub-millisecond rest half up into whole, and keeps a non-zero
 * duration from becoming 0 ("none"). */
static int finish(int64_t whole, int64_t nano, bool nonzero, int64_t *ms)
{
    whole += nano / FRAC_SCALE;
    nano %= FRAC_SCALE;
    if (nano >= FRAC_SCALE / 2)
        whole++;
    if (whole == 0 && nonzero)
        whole = 1;
    if (whole > SL_DURATION_MAX_MS)
        return -1;
    *ms = whole;
    return 0;
}

/* Why digits at p do not make a number (number_parse failed there). */
static const char *number_problem(const char *p)
{
    size_t n = 0;
    while (is_digit(p[n]))
        n++;
    if (n > INT_DIGITS_MAX)
        return "has a number with too many digits";
    if (p[n] == '.' && !is_digit(p[n + 1]))
        return "has a '.' with no digit after it (1.5s or 1s, not 1.s)";
    return "has more than 9 digits after a '.'";
}

/* What follows a number where a unit should be, when it is no unit. */
static const char *unit_problem(char ch)
{
    if (ch == 'd')
        return "has a day unit 'd', which durations do not have: write hours instead (24h "
               "for 1d)";
    if (ch == 'u' || ch == 'n' || (unsigned char)ch == 0xC2 || (unsigned char)ch == 0xCE)
        return "is finer than a millisecond: the smallest unit is ms";
    if (ch == 'w' || ch == 'y')
        return "has a unit durations do not have: use h, m, s or ms (168h for a week)";
    if (ch == ' ')
        return "has a space in it: write the parts together, as in 1h30m";
    return "has something other than a unit (h, m, s, ms) after a number";
}

/* The parser, saying what is wrong: NULL when s is a duration. */
static const char *parse(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return "is empty";
    /* Largest first; the index is the order units must come in. */
    static const struct {
        size_t len;
        int64_t ms;
    } units[] = {{1, 3600000}, {1, 60000}, {1, 1000}, {2, 1}};
    static const char *const too_long = "is longer than 100 years, the longest duration";

    const char *p = s;
    int64_t whole = 0, nano = 0;
    bool nonzero = false;
    size_t next = 0; /* units must come largest first, each at most once */
    int parts = 0;
    while (*p) {
        int64_t ipart, frac;
        if (number_parse(&p, &ipart, &frac) != 0) {
            if (*p == '-')
                return "is negative: a duration is 0 (none) or positive";
            if (*p == '.')
                return "needs a digit before its '.' (0.5s, not .5s)";
            if (is_digit(*p))
                return number_problem(p);
            return parts ? "has something other than a number after a unit"
                         : "does not start with a number";
        }
        nonzero = nonzero || ipart != 0 || frac != 0;
        if (*p == '\0') {
            /* A bare number is seconds, but only as the whole text:
             * "1m30" is a mistake, not 1m30s. */
            if (parts != 0)
                return "ends in a number without its unit (1m30s, not 1m30)";
            if (add_part(ipart, frac, 1000, &whole, &nano) != 0)
                return too_long;
            break;
        }
        /* "ms" before "m": the longest unit name that matches. */
        size_t u;
        if (p[0] == 'm' && p[1] == 's')
            u = 3;
        else if (p[0] == 'h')
            u = 0;
        else if (p[0] == 'm')
            u = 1;
        else if (p[0] == 's')
            u = 2;
        else
            return unit_problem(p[0]);
        if (u < next)
            return "has its units out of order or twice: largest first, each once (1h30m)";
        next = u + 1;
        p += units[u].len;
        if (add_part(ipart, frac, units[u].ms, &whole, &nano) != 0)
            return too_long;
        parts++;
    }
    return finish(whole, nano, nonzero, ms) == 0 ? NULL : too_long;
}

int sl_duration_parse(const char *s, int64_t *ms)
{
    return parse(s, ms) ? -1 : 0;
}

const char *sl_duration_problem(const char *s)
{
    int64_t ms;
    return parse(s, &ms);
}

int sl_duration_from_seconds(double seconds, int64_t *ms)
{
    /* NaN fails every comparison, so test for what is allowed. */
    if (!(seconds >= 0.0) || !(seconds <= (double)SL_DURATION_MAX_MS / 1000.0))
        return -1;
    double x = seconds * 1000.0 + 0.5; /* >= 0, so truncation is floor */
    int64_t v = (int64_t)x;
    if (v == 0 && seconds > 0.0)
        v = 1;
    if (v > SL_DURATION_MAX_MS)
        return -1;
    *ms = v;
    return 0;
}

/* Copies a formatted text into buf, truncated to cap - 1 bytes. */
static void put(char *buf, size_t cap, const char *text, size_t len)
{
    if (cap == 0)
        return;
    if (len >= cap)
        len = cap - 1;
    memcpy(buf, text, len);
    buf[len] = '\0';
}

void sl_duration_format(int64_t ms, char *buf, size_t cap)
{
    char tmp[48];
    size_t n = 0;
    /* Durations are never negative; should one come, say so rather than
     * hide it. The magnitude is taken without negating INT64_MIN. */
    uint64_t v = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    if (ms < 0)
        tmp[n++] = '-';
    if (v == 0) {
        put(buf, cap, "0", 1);
        return;
    }
    if (v < 1000) {
        n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%ums", (unsigned)v);
        put(buf, cap, tmp, n);
        return;
    }
    uint64_t h = v / 3600000, m = v / 60000 % 60, s = v / 1000 % 60, milli = v % 1000;
    if (h)
        n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%lluh", (unsigned long long)h);
    if (m)
        n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%llum", (unsigned long long)m);
    if (s || milli) {
        n += (size_t)snprintf(tmp + n, sizeof(tmp) - n, "%llu", (unsigned long long)s);
        if (milli) {
            char frac[5];
            snprintf(frac, sizeof(frac), ".%03u", (unsigned)milli);
            size_t fl = 4;
            while (frac[fl - 1] == '0')
                fl--; /* ".500" -> ".5" */
            memcpy(tmp + n, frac, fl);
            n += fl;
        }
        tmp[n++] = 's';
    }
    put(buf, cap, tmp, n);
}

/* ---- timestamps ---------------------------------------------------------- */

static bool leap_year(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int64_t y, int m)
{
    static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap_year(y) ? 29 : days[m - 1];
}

/* Days from 1970-01-01 to the proleptic Gregorian date y-m-d (Howard
 * Hinnant's days_from_civil: eras of 400 years, years starting in March so
 * that the leap day is the last day of a year). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;                                   /* [0, 399] */
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; /* [0, 365] */
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           /* [0, 146096] */
    return era * 146097 + doe - 719468;
}

/* The inverse: the date of a day number (days since 1970-01-01). */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Exactly n digits at *p, as a number; advances *p. */
static int fixed_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char ch = (*p)[i];
        if (!is_digit(ch))
            return -1;
        v = v * 10 + (ch - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

static int expect(const char **p, char a, char b)
{
    if (**p != a && **p != b)
        return -1;
    (*p)++;
    return 0;
}

int sl_time_parse(const char *s, int64_t *ms)
{
    if (!s)
        return -1;
    const char *p = s;
    int year, mon, day, hour, min, sec;
    if (fixed_digits(&p, 4, &year) || expect(&p, '-', '-') || fixed_digits(&p, 2, &mon) ||
        expect(&p, '-', '-') || fixed_digits(&p, 2, &day) || expect(&p, 'T', 't') ||
        fixed_digits(&p, 2, &hour) || expect(&p, ':', ':') || fixed_digits(&p, 2, &min) ||
        expect(&p, ':', ':') || fixed_digits(&p, 2, &sec))
        return -1;
    if (year < 1970 || mon < 1 || mon > 12 || day < 1 || day > days_in_month(year, mon) ||
        hour > 23 || min > 59 || sec > 60)
        return -1;

    int64_t nano = 0; /* fraction of a second in 1e-9 s, i.e. 1e-6 ms */
    if (*p == '.') {
        p++;
        int k = 0;
        while (is_digit(*p)) {
            if (++k > FRAC_DIGITS_MAX)
                return -1;
            nano = nano * 10 + (*p - '0');
            p++;
        }
        if (k == 0)
            return -1;
        for (; k < FRAC_DIGITS_MAX; k++)
            nano *= 10;
    }

    int64_t offset_min = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1;
        int oh, om;
        p++;
        if (fixed_digits(&p, 2, &oh) || expect(&p, ':', ':') || fixed_digits(&p, 2, &om))
            return -1;
        if (oh > 23 || om > 59)
            return -1;
        offset_min = sign * (oh * 60 + om);
    } else {
        return -1;
    }
    if (*p != '\0')
        return -1;

    int64_t milli;
    if (sec == 60) {
        sec = 59; /* a leap second: the last millisecond of the minute */
        milli = 999;
    } else {
        milli = nano / 1000000;
        if (nano % 1000000 >= 500000)
            milli++; /* may reach 1000: carried by the sum below */
    }
    int64_t days = days_from_civil(year, mon, day);
    int64_t t = ((days * 24 + hour) * 60 + min - offset_min) * 60000 + sec * 1000LL + milli;
    /* Years 1970..9999 as written; in UTC the offset may still move the
     * time out of range, which is refused too. */
    if (t < 0 || t > TIME_MAX_MS)
        return -1;
    *ms = t;
    return 0;
}

/* v (0 <= v < 10^width) in width decimal digits, zero-padded. */
static void digits(char *out, int v, int width)
{
    for (int i = width - 1; i >= 0; i--) {
        out[i] = (char)('0' + v % 10);
        v /= 10;
    }
}

void sl_time_format(int64_t ms, char *buf, size_t cap)
{
    /* Floor division, so that times before 1970 format as well. */
    int64_t days = ms / DAY_MS, rem = ms % DAY_MS;
    if (rem < 0) {
        days--;
        rem += DAY_MS;
    }
    int64_t y;
    int m, d;
    civil_from_days(days, &y, &m, &d);
    int hour = (int)(rem / 3600000), min = (int)(rem / 60000 % 60), sec = (int)(rem / 1000 % 60);
    int milli = (int)(rem % 1000);
    char tmp[64];
    int n;
    if (y >= 0 && y <= 9999) {
        /* Every claim in every answer has a few of these: digits by hand,
         * as snprintf costs ten times more. */
        n = 24;
        digits(tmp, (int)y, 4);
        tmp[4] = '-';
        digits(tmp + 5, m, 2);
        tmp[7] = '-';
        digits(tmp + 8, d, 2);
        tmp[10] = 'T';
        digits(tmp + 11, hour, 2);
        tmp[13] = ':';
        digits(tmp + 14, min, 2);
        tmp[16] = ':';
        digits(tmp + 17, sec, 2);
        tmp[19] = '.';
        digits(tmp + 20, milli, 3);
        tmp[23] = 'Z';
    } else {
        n = snprintf(tmp, sizeof(tmp), "%04lld-%02d-%02dT%02d:%02d:%02d.%03dZ", (long long)y, m,
                     d, hour, min, sec, milli);
    }
    put(buf, cap, tmp, n > 0 ? (size_t)n : 0);
}

/* The period of a rate, "1m" or "m" (one of the unit): NULL with *ms set,
 * or what is wrong with it, in the duration parser's words. */
static const char *rate_period(const char *p, int64_t *ms)
{
    char one[40];
    if (*p >= 'a' && *p <= 'z') {
        int n = snprintf(one, sizeof(one), "1%s", p);
        if (n < 0 || (size_t)n >= sizeof(one))
            return "is not a duration";
        p = one;
    }
    const char *problem = parse(p, ms);
    if (problem)
        return problem;
    return *ms > 0 ? NULL : "is 0: a period is a positive duration, such as 1s or 1m";
}

const char *sl_rate_problem(const char *s)
{
    /* Names the period in its own words: the text is built per call. */
    static _Thread_local char text[200];
    const char *slash = strchr(s, '/');
    if (!slash)
        return "has no '/'";
    if (slash == s || strspn(s, "0123456789") != (size_t)(slash - s) || slash - s > 10)
        return "does not start with a whole number of grants";
    unsigned long long n = strtoull(s, NULL, 10);
    if (n == 0)
        return "allows no grant at all: a rate allows 1 to 1000000000 grants per period (a "
               "limit of 0 is the way to pause a semaphore)";
    if (n > 1000000000ull)
        return "allows more than 1000000000 grants per period, the most a rate allows: use a "
               "longer period";
    int64_t ms;
    const char *problem = rate_period(slash + 1, &ms);
    if (!problem)
        return NULL;
    snprintf(text, sizeof(text), "has a period after the '/' that %s", problem);
    return text;
}

int sl_rate_parse(const char *s, uint32_t *count, int64_t *period_ms)
{
    if (sl_rate_problem(s))
        return -1;
    *count = (uint32_t)strtoul(s, NULL, 10);
    return rate_period(strchr(s, '/') + 1, period_ms) ? -1 : 0;
}

void sl_rate_format(uint32_t count, int64_t period_ms, char *buf, size_t cap)
{
    char period[32];
    sl_duration_format(period_ms, period, sizeof(period));
    snprintf(buf, cap, "%u/%s", (unsigned)count, period);
}
