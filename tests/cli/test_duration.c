/* test_duration.c - src/cli/duration.c against src/server/duration.c.
 *
 * The command line and the server must read durations alike: a string the
 * CLI accepts is one the API accepts, with the same milliseconds, and one
 * the CLI refuses the API refuses too (there is one grammar, with no day
 * unit). Both parsers run over a table of tricky texts and over thousands
 * of random strings drawn from the characters durations are made of; any
 * disagreement is printed with both verdicts. Also: the CLI's usage
 * message for a day unit says what to write instead. */
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "duration.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))
#define RANDOM_STRINGS 20000

/* cli_duration_arg reports through cli_usage (main.c, not linked here):
 * keep the last message instead. */
static char last_usage[512];

int cli_usage(const cli *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_usage, sizeof(last_usage), fmt, ap);
    va_end(ap);
    return c->usage_status;
}

/* Both verdicts for one text; false (after printing) when they differ. */
static bool agree(const char *s)
{
    int64_t a = -7, b = -7;
    int ra = cli_duration_parse(s, &a), rb = sl_duration_parse(s, &b);
    if (ra != rb || (ra == 0 && a != b)) {
        print_error("\"%s\": cli %d (%lld ms), server %d (%lld ms)\n", s, ra, (long long)a, rb,
                    (long long)b);
        return false;
    }
    return true;
}

static void tricky_texts_agree(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "",
        "0",
        "00",
        "0s",
        "0ms",
        "0.0",
        "0.",
        ".5",
        "5.",
        "1.5",
        "1.5s",
        "1.50s",
        "250ms",
        "30s",
        "5m",
        "1h",
        "1h30m",
        "1h30m15s250ms",
        "1m30",
        "30s1m",
        "1s1s",
        "1ms1s",
        "1h1h",
        "1m1h",
        "1.5h",
        "90m",
        "1m30.5s",
        "1.0005s",
        "1.0004s",
        "0.0005s",
        "0.0004s",
        "0.0001s",
        "0.000000001s",
        "0.0000000001s",
        "0.0000000000s",
        "1.123456789s",
        "1.1234567891s",
        "1.5ms",
        "1.4ms",
        "0.5ms",
        "0.4ms",
        "0.49999ms",
        "2.5ms",
        "999999999999999ms",
        "9999999999999999ms",
        "123456789012345",
        "1234567890123456",
        "876000h",
        "876000h1ms",
        "876000.000000001h",
        "875999h59m59s999ms",
        "875999h59m59.9995s",
        "3153600000",
        "3153600000.0004",
        "3153600000.0005",
        "3153600001",
        "52560000m",
        "52560001m",
        "1d",
        "2d",
        "1d12h",
        "0d",
        "1.5d",
        "1D",
        "1H",
        "1S",
        "1MS",
        "1Ms",
        "1mS",
        "1us",
        "1µs",
        "1ns",
        "1y",
        "1w",
        "s",
        "ms",
        "h",
        "1 s",
        " 1s",
        "1s ",
        "1s\n",
        "-1s",
        "+1s",
        "-0",
        "1e3",
        "1e3s",
        "0x10",
        "0x10s",
        "1_000ms",
        "1,5s",
        "1..5s",
        "1.5.5s",
        "1.s",
        "01s",
        "007",
        "00.5s",
        "1h0m0s0ms",
        "0h0m0s0ms",
        "1m0",
        "1sms",
        "1smm",
        "1mss",
        "1msms",
        "1hm",
        "1h2",
        "10",
        "1.5m30s",
        "4294967296ms",
        "18446744073709551616",
        "9223372036854775807ms",
        "9223372036854775808",
        "inf",
        "nan",
        "1s\0ignored",
    };
    bool ok = true;
    for (size_t i = 0; i < COUNT(texts); i++)
        ok = agree(texts[i]) && ok;
    assert_true(ok);
}

/* A deterministic generator: a failure can be replayed. */
static uint64_t next(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

static void random_strings_agree(void **state)
{
    (void)state;
    /* Mostly what durations are made of, so that many parse; a few others. */
    static const char alphabet[] = "0123456789000111..hmsmsdhms . -+eEdHMS";
    uint64_t seed = 0x5eed5eedULL;
    size_t bad = 0, parsed = 0;
    for (int n = 0; n < RANDOM_STRINGS; n++) {
        char s[24];
        size_t len = 1 + next(&seed) % 14;
        for (size_t i = 0; i < len; i++)
            s[i] = alphabet[next(&seed) % (sizeof(alphabet) - 1)];
        s[len] = '\0';
        int64_t ms;
        if (sl_duration_parse(s, &ms) == 0)
            parsed++;
        if (!agree(s) && ++bad >= 20)
            break;
    }
    assert_int_equal(bad, 0);
    /* The generator must reach the accepting paths, not only refusals. */
    assert_true(parsed > RANDOM_STRINGS / 50);
}

/* Well-formed durations built part by part: valid texts with many values. */
static void random_valid_durations_agree(void **state)
{
    (void)state;
    static const char *const units[] = {"h", "m", "s", "ms"};
    uint64_t seed = 42;
    size_t bad = 0;
    for (int n = 0; n < RANDOM_STRINGS / 4; n++) {
        char s[96];
        size_t len = 0;
        for (size_t u = 0; u < COUNT(units); u++) {
            if (next(&seed) % 2)
                continue;
            unsigned long long ip = next(&seed) % (next(&seed) % 2 ? 100 : 10000000);
            len += (size_t)snprintf(s + len, sizeof(s) - len, "%llu", ip);
            if (next(&seed) % 3 == 0) {
                int k = 1 + (int)(next(&seed) % 10); /* 10 digits: refused by both */
                s[len++] = '.';
                for (int j = 0; j < k; j++)
                    s[len++] = (char)('0' + next(&seed) % 10);
            }
            len += (size_t)snprintf(s + len, sizeof(s) - len, "%s", units[u]);
        }
        s[len] = '\0';
        if (len > 0 && !agree(s) && ++bad >= 20)
            break;
    }
    assert_int_equal(bad, 0);
}

static void day_unit_is_refused_with_what_to_write(void **state)
{
    (void)state;
    cli c = {.usage_status = 2};
    int64_t ms = -1;
    assert_false(cli_duration_arg(&c, "--timeout", "2d", &ms));
    assert_non_null(strstr(last_usage, "--timeout 2d is not a duration"));
    assert_non_null(strstr(last_usage, "write 48h"));
    assert_false(cli_duration_arg(&c, "SLUICE_CLAIM_TIMEOUT", "1d12h30m", &ms));
    assert_non_null(strstr(last_usage, "SLUICE_CLAIM_TIMEOUT=1d12h30m"));
    assert_non_null(strstr(last_usage, "write 36h30m"));
    assert_false(cli_duration_arg(&c, "--lease", "5 minutes", &ms));
    assert_non_null(strstr(last_usage, "use one such as"));
    assert_true(cli_duration_arg(&c, "--lease", "48h", &ms));
    assert_int_equal(ms, 48LL * 3600 * 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tricky_texts_agree),
        cmocka_unit_test(random_strings_agree),
        cmocka_unit_test(random_valid_durations_agree),
        cmocka_unit_test(day_unit_is_refused_with_what_to_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
