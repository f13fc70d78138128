/* duration.c - human durations on the command line ("30s", "5m", "1h30m").
 *
 * Flags and environment variables take durations as API.md writes them, so
 * what a user types is what the server would accept: a sequence of
 * number+unit pairs (ms, s, m, h, d; a number may have a fraction), or a
 * bare number of seconds. The command checks them itself so that a typo is
 * a usage error before anything is sent, and sends the server whole
 * milliseconds ("90000ms"). Also here: the two ways of printing one. */
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* About 292 years in ms fits int64; cap far below so sums never overflow. */
#define DURATION_MAX_MS ((int64_t)100 * 365 * 24 * 3600 * 1000)

static int64_t unit_ms(const char *u, size_t n)
{
    if (n == 2 && memcmp(u, "ms", 2) == 0)
        return 1;
    if (n == 1) {
        switch (u[0]) {
        case 's':
            return 1000;
        case 'm':
            return 60 * 1000;
        case 'h':
            return 3600 * 1000;
        case 'd':
            return 24 * 3600 * 1000;
        }
    }
    return 0;
}

int cli_duration_parse(const char *s, int64_t *ms)
{
    if (!s || !*s)
        return -1;
    const char *p = s;
    double total = 0;
    bool any_unit = false;
    while (*p) {
        /* digits, optionally "." and digits: no signs, exponents or hex. */
        double v = 0, scale = 1;
        size_t digits = 0;
        for (; isdigit((unsigned char)*p); p++, digits++)
            v = v * 10 + (*p - '0');
        if (*p == '.') {
            for (p++; isdigit((unsigned char)*p); p++, digits++) {
                scale /= 10;
                v += (*p - '0') * scale;
            }
        }
        if (digits == 0 || v > (double)DURATION_MAX_MS)
            return -1;
        const char *u = p;
        while (*p && isalpha((unsigned char)*p))
            p++;
        size_t n = (size_t)(p - u);
        if (n == 0) {
            /* A bare number is seconds, but only on its own ("10", not "1m10"). */
            if (any_unit || *p)
                return -1;
            total = v * 1000;
            break;
        }
        int64_t unit = unit_ms(u, n);
        if (unit == 0)
            return -1;
        total += v * (double)unit;
        any_unit = true;
        if (total > (double)DURATION_MAX_MS)
            return -1;
    }
    if (total > (double)DURATION_MAX_MS)
        return -1;
    *ms = (int64_t)(total + 0.5);
    return 0;
}

void cli_duration_format(int64_t ms, char *buf, size_t cap)
{
    if (ms <= 0) {
        snprintf(buf, cap, "0");
        return;
    }
    static const struct {
        const char *name;
        int64_t ms;
    } units[] = {{"h", 3600000}, {"m", 60000}, {"s", 1000}, {"ms", 1}};
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]) && ms > 0; i++) {
        int64_t n = ms / units[i].ms;
        if (n == 0)
            continue;
        ms -= n * units[i].ms;
        int w = snprintf(buf + len, len < cap ? cap - len : 0, "%" PRId64 "%s", n, units[i].name);
        if (w > 0)
            len += (size_t)w;
    }
}

void cli_duration_none(int64_t ms, char *buf, size_t cap)
{
    if (ms <= 0)
        snprintf(buf, cap, "none");
    else
        cli_duration_format(ms, buf, cap);
}

void cli_duration_human(int64_t ms, char *buf, size_t cap)
{
    if (ms < 0)
        ms = -ms;
    if (ms < 1000) {
        snprintf(buf, cap, "%" PRId64 "ms", ms);
        return;
    }
    int64_t s = ms / 1000;
    /* The larger unit, and the next one when it is not zero. */
    int64_t big, small;
    const char *bu, *su;
    if (s < 60) {
        snprintf(buf, cap, "%" PRId64 "s", s);
        return;
    } else if (s < 3600) {
        big = s / 60, small = s % 60, bu = "m", su = "s";
    } else if (s < 86400) {
        big = s / 3600, small = (s % 3600) / 60, bu = "h", su = "m";
    } else {
        big = s / 86400, small = (s % 86400) / 3600, bu = "d", su = "h";
    }
    if (small)
        snprintf(buf, cap, "%" PRId64 "%s%" PRId64 "%s", big, bu, small, su);
    else
        snprintf(buf, cap, "%" PRId64 "%s", big, bu);
}

bool cli_duration_env(const cli *c, const char *var, int64_t def, int64_t *out)
{
    const char *v = getenv(var);
    if (!v || !*v) {
        *out = def;
        return true;
    }
    if (cli_duration_parse(v, out) != 0) {
        cli_usage(c, "%s=%s is not a duration: use one such as 250ms, 30s, 5m or 1h30m", var, v);
        return false;
    }
    return true;
}
