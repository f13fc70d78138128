/* test_duration.c - src/server/duration.c: durations and RFC 3339 times.
 *
 * Tables of texts that must parse to exact milliseconds (units in order,
 * fractions, rounding half up, the 100-year maximum) and of texts that must
 * be refused (order, repeats, junk, signs, overflow); formatting of chosen
 * values and round trips over many; timestamps with offsets, fractions,
 * leap years and leap seconds, against an independent day-by-day calendar
 * from 1970 to 9999. */
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "duration.h"

#define MAX_MS SL_DURATION_MAX_MS  /* 3153600000000 = 876000h */
#define TIME_MAX 253402300799999LL /* 9999-12-31T23:59:59.999Z */

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

typedef struct {
    const char *text;
    int64_t ms;
} row;

/* A small deterministic generator for round trips over many values. */
static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 11;
}

/* ---- durations: parse ------------------------------------------------------ */

static void duration_parse_valid(void **state)
{
    (void)state;
    static const row rows[] = {
        {"0", 0},
        {"0s", 0},
        {"0ms", 0},
        {"0h0m0s0ms", 0},
        {"0.0", 0},
        {"0.000000000s", 0},
        {"250ms", 250},
        {"30s", 30000},
        {"5m", 300000},
        {"1h", 3600000},
        {"1h30m", 5400000},
        {"1.5s", 1500},
        {"1m30.5s", 90500},
        {"2h3m4s5ms", 7384005},
        {"1h1ms", 3600001}, /* units may be skipped */
        {"1m0s", 60000},
        {"1.5s500ms", 2000}, /* s then ms is in order */
        /* A bare number is seconds. */
        {"30", 30000},
        {"1.5", 1500},
        {"1", 1000},
        {"000000000000001", 1000}, /* 15 integer digits */
        /* Fractions of any unit. */
        {"1.5h", 5400000},
        {"0.5m", 30000},
        {"0.1h", 360000},
        {"1.123456789s", 1123}, /* 9 fraction digits */
        {"1h0.5m", 3630000},
        /* Rounding half up, once, on the exact sum. */
        {"1.0005s", 1001},
        {"1.0004s", 1000},
        {"1.0004999s", 1000},
        {"1.999999999s", 2000},
        {"1.5ms", 2},
        {"1.4ms", 1},
        {"2.5ms", 3},
        {"0.0005s0.5ms", 1},      /* 0.5 + 0.5 ms = 1 ms exactly */
        {"0.0004s0.4ms", 1},      /* 0.8 ms rounds to 1 */
        {"1.0002s0.3ms", 1001},   /* 0.2 + 0.3 = 0.5: up */
        {"59m59.9995s", 3600000}, /* the carry crosses every unit */
        /* Not zero never becomes zero: 0 means "none". */
        {"0.0004s", 1},
        {"0.0001", 1},
        {"0.000000001s", 1},
        {"0.4ms", 1},
        /* Bounds. */
        {"999ms", 999},
        {"1000ms", 1000},
        {"876000h", MAX_MS},
        {"52560000m", MAX_MS},
        {"3153600000s", MAX_MS},
        {"3153600000", MAX_MS},
        {"3153600000000ms", MAX_MS},
        {"875999h59m59.999s", MAX_MS - 1},
        {"875999h59m59.9994s", MAX_MS - 1},
        {"875999h59m59.9995s", MAX_MS}, /* rounds up to exactly the maximum */
    };
    for (size_t i = 0; i < COUNT(rows); i++) {
        int64_t ms = -42;
        if (sl_duration_parse(rows[i].text, &ms) != 0)
            fail_msg("\"%s\" was refused; want %lld ms", rows[i].text, (long long)rows[i].ms);
        if (ms != rows[i].ms)
            fail_msg("\"%s\" parsed to %lld ms; want %lld", rows[i].text, (long long)ms,
                     (long long)rows[i].ms);
    }
}

static void duration_parse_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        /* signs */
        "-1s",
        "-1",
        "+1s",
        "-0",
        "1h-30m",
        /* spaces */
        " 1s",
        "1s ",
        "1 s",
        "1h 30m",
        "\t1s",
        /* order and repeats */
        "30s1m",
        "1s1s",
        "1m1h",
        "1ms1s",
        "1ms1ms",
        "1h1h",
        "1m30s1m",
        "1s1h",
        /* numbers */
        "1.5.5s",
        "1..5s",
        ".5s",
        "5.s",
        "1.s",
        ".5",
        "5.",
        "1,5s",
        "1e3",
        "1e3s",
        "0x10",
        "1_000s",
        "١s",
        /* units */
        "s",
        "ms",
        "h",
        "m",
        "1x",
        "1S",
        "1H",
        "1M",
        "1Ms",
        "1mS",
        "1d",
        "1w",
        "1us",
        "1ns",
        "1sec",
        "1min",
        "1hh",
        "1mss",
        "1msm",
        "1hm",
        "1h30",
        "1m30",
        "1s5",
        /* trailing junk */
        "1s!",
        "30s\n",
        "1h30mx",
        /* digit limits */
        "1000000000000000s", /* 16 integer digits */
        "0000000000000001",
        "1.1234567891s", /* 10 fraction digits */
        "0.0000000001",
        /* over the maximum */
        "876000h1ms",
        "876001h",
        "3153600000001ms",
        "3153600001",
        "3153600000.001",
        "999999999999999h", /* 15 digits, would overflow int64 once multiplied */
        "999999999999999m",
        "999999999999999",
        "876000.000001h",
        "875999h60m1ms",
    };
    for (size_t i = 0; i < COUNT(bad); i++) {
        int64_t ms = -42;
        if (sl_duration_parse(bad[i], &ms) == 0)
            fail_msg("\"%s\" was accepted as %lld ms; want it refused", bad[i], (long long)ms);
        assert_int_equal(ms, -42); /* a refusal leaves the output alone */
    }
    int64_t ms = -42;
    assert_int_equal(sl_duration_parse(NULL, &ms), -1);
    /* A NUL ends the text: what follows is not read. */
    assert_int_equal(sl_duration_parse("1s\0junk", &ms), 0);
    assert_int_equal(ms, 1000);
}

static void duration_from_seconds(void **state)
{
    (void)state;
    static const struct {
        double s;
        int64_t ms;
    } ok[] = {
        {0.0, 0},
        {-0.0, 0},
        {1.0, 1000},
        {1.5, 1500},
        {30.0, 30000},
        {0.25, 250},
        {0.0001, 1},
        {1e-300, 1},
        {0.0006, 1},
        {2.0004, 2000},
        {2.0006, 2001},
        {5400.0, 5400000},
        {3153600000.0, MAX_MS},
    };
    for (size_t i = 0; i < COUNT(ok); i++) {
        int64_t ms = -42;
        if (sl_duration_from_seconds(ok[i].s, &ms) != 0 || ms != ok[i].ms)
            fail_msg("%.17g s gave %lld ms; want %lld", ok[i].s, (long long)ms,
                     (long long)ok[i].ms);
    }
    const double bad[] = {-1.0, -0.0001, -1e-300, 3153600001.0, 1e300, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < COUNT(bad); i++) {
        int64_t ms = -42;
        if (sl_duration_from_seconds(bad[i], &ms) == 0)
            fail_msg("%.17g s was accepted as %lld ms", bad[i], (long long)ms);
        assert_int_equal(ms, -42);
    }
}

/* ---- durations: format ----------------------------------------------------- */

static void duration_format_values(void **state)
{
    (void)state;
    static const row rows[] = {
        {"0", 0},
        {"1ms", 1},
        {"250ms", 250},
        {"999ms", 999},
        {"1s", 1000},
        {"1.001s", 1001},
        {"1.01s", 1010},
        {"1.1s", 1100},
        {"1.5s", 1500},
        {"59.999s", 59999},
        {"1m", 60000},
        {"1m0.001s", 60001},
        {"1m30.5s", 90500},
        {"1h", 3600000},
        {"1h0.001s", 3600001},
        {"1h1m1.001s", 3661001},
        {"1h30m", 5400000},
        {"1h30s", 3630000},
        {"24h", 86400000},
        {"25h1m", 90060000},
        {"876000h", MAX_MS},
        {"875999h59m59.999s", MAX_MS - 1},
        {"-1.5s", -1500}, /* never a duration; shown rather than hidden */
    };
    char buf[32];
    for (size_t i = 0; i < COUNT(rows); i++) {
        memset(buf, 'x', sizeof(buf));
        sl_duration_format(rows[i].ms, buf, sizeof(buf));
        if (strcmp(buf, rows[i].text) != 0)
            fail_msg("%lld ms formatted as \"%s\"; want \"%s\"", (long long)rows[i].ms, buf,
                     rows[i].text);
    }
    /* Even the most negative value fits in 32 bytes. */
    sl_duration_format(INT64_MIN, buf, sizeof(buf));
    assert_string_equal(buf, "-2562047788015h12m55.808s");
}

static void duration_format_truncates(void **state)
{
    (void)state;
    char buf[8];
    memset(buf, 'x', sizeof(buf));
    sl_duration_format(5400000, buf, 4); /* "1h30m" cut to 3 characters */
    assert_memory_equal(buf, "1h3\0xxxx", 8);
    memset(buf, 'x', sizeof(buf));
    sl_duration_format(5400000, buf, 1);
    assert_memory_equal(buf, "\0xxxxxxx", 8);
    memset(buf, 'x', sizeof(buf));
    sl_duration_format(5400000, buf, 0); /* nothing written at all */
    assert_memory_equal(buf, "xxxxxxxx", 8);
    sl_duration_format(1500, buf, 5); /* "1.5s" needs exactly 5 */
    assert_string_equal(buf, "1.5s");
}

static void round_trip(int64_t ms)
{
    char buf[32];
    int64_t back = -42;
    sl_duration_format(ms, buf, sizeof(buf));
    if (sl_duration_parse(buf, &back) != 0 || back != ms)
        fail_msg("%lld ms -> \"%s\" -> %lld", (long long)ms, buf, (long long)back);
}

static void duration_round_trips(void **state)
{
    (void)state;
    static const int64_t chosen[] = {0,       1,       999,     1000,     1500,
                                     60000,   90500,   5400000, 86400000, 3599999,
                                     3600000, 3600001, 59999,   61000,    MAX_MS};
    for (size_t i = 0; i < COUNT(chosen); i++) {
        round_trip(chosen[i]);
        if (chosen[i] > 0)
            round_trip(chosen[i] - 1);
        if (chosen[i] < MAX_MS)
            round_trip(chosen[i] + 1);
    }
    for (int64_t ms = 0; ms <= 200000; ms++)
        round_trip(ms);
    uint64_t seed = 7;
    for (int i = 0; i < 200000; i++) {
        round_trip((int64_t)(lcg(&seed) % (uint64_t)(MAX_MS + 1)));
        round_trip((int64_t)(lcg(&seed) % 100000000)); /* under about a day */
    }
}

/* ---- timestamps ----------------------------------------------------------- */

static void time_parse_valid(void **state)
{
    (void)state;
    static const row rows[] = {
        {"1970-01-01T00:00:00Z", 0},
        {"1970-01-01T00:00:00.000Z", 0},
        {"1970-01-01T00:00:00.001Z", 1},
        {"1970-01-01T00:00:01Z", 1000},
        {"1970-01-02T00:00:00Z", 86400000},
        {"2026-11-22T10:00:00.000Z", 1795341600000},
        {"2026-11-22T10:00:00Z", 1795341600000},
        {"2026-11-22t10:00:00z", 1795341600000},
        {"2026-11-22T11:00:00+01:00", 1795341600000},
        {"2026-11-22T05:30:00-04:30", 1795341600000},
        {"2026-11-22T10:00:00+00:00", 1795341600000},
        {"2026-11-22T10:00:00-00:00", 1795341600000},
        {"2026-11-23T09:59:00+23:59", 1795341600000},
        {"2026-11-21T10:01:00-23:59", 1795341600000},
        {"1970-01-01T01:00:00+01:00", 0},
        /* Fractions: 1 to 9 digits, rounded half up to the millisecond. */
        {"2026-11-22T10:00:00.5Z", 1795341600500},
        {"2026-11-22T10:00:00.05Z", 1795341600050},
        {"2026-11-22T10:00:00.123456789Z", 1795341600123},
        {"2026-11-22T10:00:00.1235Z", 1795341600124},
        {"2026-11-22T10:00:00.0005Z", 1795341600001},
        {"2026-11-22T10:00:00.0004999Z", 1795341600000},
        {"2026-11-22T09:59:59.9995Z", 1795341600000}, /* carried into the next second */
        {"2026-11-22T10:00:00.000000000Z", 1795341600000},
        /* Leap years: by 4, not by 100, but by 400. */
        {"2000-02-29T12:00:00Z", 951825600000},
        {"2024-02-29T00:00:00Z", 1709164800000},
        {"2100-02-28T00:00:00Z", 4107456000000},
        {"2100-03-01T00:00:00Z", 4107542400000},
        {"2038-01-19T03:14:08Z", 2147483648000},
        /* Leap seconds: the last millisecond of their minute. */
        {"2016-12-31T23:59:60Z", 1483228799999},
        {"2016-12-31T23:59:60.5Z", 1483228799999},
        {"1972-06-30T23:59:60Z", 78796799999},
        {"2017-01-01T00:59:60+01:00", 1483228799999},
        /* The last time there is. */
        {"9999-12-31T23:59:59.999Z", TIME_MAX},
        {"9999-12-31T23:59:59.9994Z", TIME_MAX},
    };
    for (size_t i = 0; i < COUNT(rows); i++) {
        int64_t ms = -42;
        if (sl_time_parse(rows[i].text, &ms) != 0)
            fail_msg("\"%s\" was refused; want %lld", rows[i].text, (long long)rows[i].ms);
        if (ms != rows[i].ms)
            fail_msg("\"%s\" parsed to %lld; want %lld", rows[i].text, (long long)ms,
                     (long long)rows[i].ms);
    }
}

static void time_parse_invalid(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "2026-11-22",
        "2026-11-22T10:00:00",  /* no offset */
        "2026-11-22T10:00Z",    /* no seconds */
        "2026-11-22 10:00:00Z", /* a space for T */
        "2026-11-22X10:00:00Z",
        "2026/11/22T10:00:00Z",
        "2026-11-22T10.00.00Z",
        "2026-1-22T10:00:00Z",
        "26-11-22T10:00:00Z",
        "+2026-11-22T10:00:00Z",
        "02026-11-22T10:00:00Z",
        "2026-11-22T1:00:00Z",
        /* ranges */
        "2026-00-01T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-01-00T00:00:00Z",
        "2026-01-32T00:00:00Z",
        "2026-04-31T00:00:00Z",
        "2026-06-31T00:00:00Z",
        "2026-09-31T00:00:00Z",
        "2026-11-31T00:00:00Z",
        "2026-02-29T00:00:00Z", /* not a leap year */
        "2100-02-29T00:00:00Z", /* by 100, not by 400 */
        "1900-02-29T00:00:00Z",
        "2024-02-30T00:00:00Z",
        "2026-11-22T24:00:00Z",
        "2026-11-22T10:60:00Z",
        "2026-11-22T10:00:61Z",
        "2026-11-22T99:00:00Z",
        /* years */
        "1969-12-31T23:59:59Z",
        "0000-01-01T00:00:00Z",
        "1970-01-01T00:59:59+01:00", /* before 1970 in UTC */
        "1970-01-01T00:00:00.000+00:01",
        "10000-01-01T00:00:00Z",
        "9999-12-31T23:59:59-00:01", /* after 9999 in UTC */
        "9999-12-31T23:59:59.9995Z", /* rounds past the last millisecond */
        /* fractions */
        "2026-11-22T10:00:00.Z",
        "2026-11-22T10:00:00.1234567891Z",
        "2026-11-22T10:00:00,5Z",
        "2026-11-22T10:00:00.5.5Z",
        /* offsets */
        "2026-11-22T10:00:00+24:00",
        "2026-11-22T10:00:00+01:60",
        "2026-11-22T10:00:00+0100",
        "2026-11-22T10:00:00+1:00",
        "2026-11-22T10:00:00+01",
        "2026-11-22T10:00:00 +01:00",
        "2026-11-22T10:00:00UTC",
        "2026-11-22T10:00:00GMT",
        /* trailing junk */
        "2026-11-22T10:00:00Z ",
        "2026-11-22T10:00:00ZZ",
        "2026-11-22T10:00:00Z\n",
        "2026-11-22T10:00:00+01:00Z",
    };
    for (size_t i = 0; i < COUNT(bad); i++) {
        int64_t ms = -42;
        if (sl_time_parse(bad[i], &ms) == 0)
            fail_msg("\"%s\" was accepted as %lld; want it refused", bad[i], (long long)ms);
        assert_int_equal(ms, -42);
    }
    int64_t ms = -42;
    assert_int_equal(sl_time_parse(NULL, &ms), -1);
}

static void time_format_values(void **state)
{
    (void)state;
    static const row rows[] = {
        {"1970-01-01T00:00:00.000Z", 0},
        {"1970-01-01T00:00:00.001Z", 1},
        {"1970-01-01T00:00:01.000Z", 1000},
        {"2026-11-22T10:00:00.000Z", 1795341600000},
        {"2026-11-22T10:00:00.500Z", 1795341600500},
        {"2000-02-29T12:00:00.000Z", 951825600000},
        {"2024-02-29T00:00:00.000Z", 1709164800000},
        {"2016-12-31T23:59:59.999Z", 1483228799999},
        {"2100-03-01T00:00:00.000Z", 4107542400000},
        {"9999-12-31T23:59:59.999Z", TIME_MAX},
        /* Outside the parsed range the calendar still holds. */
        {"1969-12-31T23:59:59.999Z", -1},
        {"10000-01-01T00:00:00.000Z", TIME_MAX + 1},
    };
    char buf[32];
    for (size_t i = 0; i < COUNT(rows); i++) {
        memset(buf, 'x', sizeof(buf));
        sl_time_format(rows[i].ms, buf, sizeof(buf));
        if (strcmp(buf, rows[i].text) != 0)
            fail_msg("%lld formatted as \"%s\"; want \"%s\"", (long long)rows[i].ms, buf,
                     rows[i].text);
    }
    /* Any int64_t fits in 32 bytes. */
    sl_time_format(INT64_MIN, buf, sizeof(buf));
    assert_true(strlen(buf) < sizeof(buf) - 1);
    sl_time_format(INT64_MAX, buf, sizeof(buf));
    assert_true(strlen(buf) < sizeof(buf) - 1);
    /* Truncated like snprintf. */
    memset(buf, 'x', sizeof(buf));
    sl_time_format(0, buf, 5);
    assert_memory_equal(buf, "1970\0xxx", 8);
}

static int days_in(int y, int m)
{
    static const int d[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 && leap ? 29 : d[m - 1];
}

/* Every day from 1970 to 9999, counted by hand: its midnight (and a time
 * of day that moves with the day) formats and parses as the calendar says. */
static void time_every_day(void **state)
{
    (void)state;
    int y = 1970, m = 1, d = 1;
    char want[96], got[32];
    for (int64_t day = 0;; day++) {
        int64_t tod = (day * 7919 * 1000 + day % 1000) % 86400000; /* varies the clock */
        int64_t ms = day * 86400000 + tod;
        snprintf(want, sizeof(want), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", y, m, d,
                 (int)(tod / 3600000), (int)(tod / 60000 % 60), (int)(tod / 1000 % 60),
                 (int)(tod % 1000));
        sl_time_format(ms, got, sizeof(got));
        if (strcmp(got, want) != 0)
            fail_msg("day %lld: formatted \"%s\"; want \"%s\"", (long long)day, got, want);
        int64_t back = -42;
        if (sl_time_parse(want, &back) != 0 || back != ms)
            fail_msg("\"%s\" parsed to %lld; want %lld", want, (long long)back, (long long)ms);
        if (++d > days_in(y, m)) {
            d = 1;
            if (++m > 12) {
                m = 1;
                if (++y > 9999)
                    break;
            }
        }
    }
    assert_int_equal(y, 10000);
}

static void time_round_trips(void **state)
{
    (void)state;
    uint64_t seed = 11;
    char buf[32];
    for (int i = 0; i < 300000; i++) {
        int64_t ms = (int64_t)(lcg(&seed) % (uint64_t)(TIME_MAX + 1));
        int64_t back = -42;
        sl_time_format(ms, buf, sizeof(buf));
        if (sl_time_parse(buf, &back) != 0 || back != ms)
            fail_msg("%lld -> \"%s\" -> %lld", (long long)ms, buf, (long long)back);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(duration_parse_valid),      cmocka_unit_test(duration_parse_invalid),
        cmocka_unit_test(duration_from_seconds),     cmocka_unit_test(duration_format_values),
        cmocka_unit_test(duration_format_truncates), cmocka_unit_test(duration_round_trips),
        cmocka_unit_test(time_parse_valid),          cmocka_unit_test(time_parse_invalid),
        cmocka_unit_test(time_format_values),        cmocka_unit_test(time_every_day),
        cmocka_unit_test(time_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
