/* duration.c - human durations on the command line ("30s", "5m", "1h30m").
 *
 * Flags and environment variables take durations in the one grammar the
 * server and its configuration file use (docs/configuration.md), so that
 * what a user types here is what the API would accept, with the same value:
 * number+unit pairs, units h, m, s, ms, largest first and each at most
 * once, a number possibly with up to 9 decimals; or a bare number of
 * seconds. There is no day unit (as in Go's durations): "2d" is refused,
 * and the message says to write "48h". The command checks them itself so
 * that a typo is a usage error before anything is sent, and sends the
 * server whole milliseconds ("90000ms").
 *
 * The parser mirrors the server's (src/server/duration.c) rule for rule:
 * exact integer arithmetic, at most 15 integer and 9 fraction digits per
 * number, fractions of a millisecond rounded half up once on the exact
 * sum, a duration that is not zero never rounded to zero (0 means none),
 * at most 100 years. tests/cli/test_duration.c runs both over tricky and
 * random inputs and requires the same verdict and value. The CLI cannot
 * link the server's code (cli -> client only), hence the copy.
 *
 * Also here: the ways of printing one. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* 100 years in ms, as the server's SL_DURATION_MAX_MS. */
#define DURATION_MAX_MS ((int64_t)100 * 365 * 24 * 3600 * 1000)
#define FRAC_SCALE 1000000000LL /* fraction digits scaled to 1e-9 of their unit */
#define INT_DIGITS_MAX 15
#define FRAC_DIGITS_MAX 9
#define DAY_MS ((int64_t)24 * 3600 * 1000)

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* digits[.digits] at *p: the integer part is required (no ".5"), a '.'
 * needs a digit after it (no "5."). *frac is scaled to 9 digits. */
static int number_parse(const char **p, int64_t *ipart, int64_t *frac)
{
    const char *s = *p;
    int64_t v = 0;
    int n = 0;
    for (; is_digit(*s); s++) {
        if (++n > INT_DIGITS_MAX)
            return -1;
        v = v * 10 + (*s - '0');
    }
    if (n == 0)
        return -1;
    int64_t f = 0;
    if (*s == '.') {
        int k = 0;
        for (s++; is_digit(*s); s++) {
            if (++k > FRAC_DIGITS_MAX)
                return -1;
            f = f * 10 + (*s - '0');
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

/* Adds ipart + frac/1e9 units of unit_ms: whole milliseconds into *whole
 * (checked against the maximum before each product is formed), the
 * sub-millisecond rest, in 1e-9 ms, into *nano. */
static int add_part(int64_t ipart, int64_t frac, int64_t unit_ms, int64_t *whole, int64_t *nano)
{
    if (ipart > DURATION_MAX_MS / unit_ms)
        return -1;
    int64_t w = ipart * unit_ms;
    if (w > DURATION_MAX_MS - *whole)
        return -1;
    *whole += w;
    int64_t fn = frac * unit_ms;
    *whole += fn / FRAC_SCALE;
    *nano += fn % FRAC_SCALE;
    return *whole > DURATION_MAX_MS ? -1 : 0;
}

/* The text from s as a duration; when allow_days, one leading "Nd" part is
 * read too (only to say what to write instead). */
static int parse(const char *s, bool allow_days, int64_t *ms)
{
    if (!s || !*s)
        return -1;
    /* Largest first; the index is the order units must come in. */
    static const struct {
        size_t len;
        int64_t ms;
    } units[] = {{1, DAY_MS}, {1, 3600000}, {1, 60000}, {1, 1000}, {2, 1}};
    const char *p = s;
    int64_t whole = 0, nano = 0;
    bool nonzero = false;
    size_t next = allow_days ? 0 : 1; /* units largest first, each at most once */
    int parts = 0;
    while (*p) {
        int64_t ipart, frac;
        if (number_parse(&p, &ipart, &frac) != 0)
            return -1;
        nonzero = nonzero || ipart != 0 || frac != 0;
        if (*p == '\0') {
            /* A bare number is seconds, but only as the whole text:
             * "1m30" is a mistake, not 1m30s. */
            if (parts != 0 || add_part(ipart, frac, 1000, &whole, &nano) != 0)
                return -1;
            break;
        }
        size_t u; /* "ms" before "m": the longest unit name that matches */
        if (p[0] == 'm' && p[1] == 's')
            u = 4;
        else if (p[0] == 'd')
            u = 0;
        else if (p[0] == 'h')
            u = 1;
        else if (p[0] == 'm')
            u = 2;
        else if (p[0] == 's')
            u = 3;
        else
            return -1;
        if (u < next)
            return -1; /* out of order ("30s1m"), repeated ("1s1s"), or a day */
        next = u + 1;
        p += units[u].len;
        if (add_part(ipart, frac, units[u].ms, &whole, &nano) != 0)
            return -1;
        parts++;
    }
    whole += nano / FRAC_SCALE;
    nano %= FRAC_SCALE;
    if (nano >= FRAC_SCALE / 2)
        whole++;
    if (whole == 0 && nonzero)
        whole = 1; /* 0 means none: a duration that is not zero stays so */
    if (whole > DURATION_MAX_MS)
        return -1;
    *ms = whole;
    return 0;
}

int cli_duration_parse(const char *s, int64_t *ms)
{
    return parse(s, false, ms);
}

bool cli_duration_arg(const cli *c, const char *name, const char *val, int64_t *out)
{
    if (parse(val, false, out) == 0)
        return true;
    /* "--lease 2d", "SLUICE_CLAIM_TIMEOUT=2d": as the user wrote it. */
    char sep = name[0] == '-' ? ' ' : '=';
    int64_t ms;
    if (parse(val, true, &ms) == 0) {
        char h[48];
        cli_duration_format(ms, h, sizeof(h));
        cli_usage(c, "%s%c%s is not a duration: there is no day unit; write %s", name, sep, val, h);
    } else {
        cli_usage(c, "%s%c%s is not a duration: use one such as 250ms, 30s, 5m or 1h30m", name, sep,
                  val);
    }
    return false;
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
    return cli_duration_arg(c, var, v, out);
}
