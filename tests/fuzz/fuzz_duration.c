/* fuzz_duration.c - durations and RFC 3339 times (src/server/duration.c).
 *
 * The input, as a string, goes through sl_duration_parse and sl_time_parse;
 * what parses must be in range and survive its formatting round trip
 * (format, parse again: the same milliseconds). The first 8 bytes, as a
 * double, go through sl_duration_from_seconds, the JSON-number path. */
#include <string.h>

#include "duration.h"
#include "fuzz.h"

/* Longer texts are refused by the parsers' digit limits anyway. */
#define TEXT_MAX 256

static void duration_round_trip(const char *s)
{
    int64_t ms = -1;
    if (sl_duration_parse(s, &ms) != 0)
        return;
    fuzz_check(ms >= 0 && ms <= SL_DURATION_MAX_MS);
    char out[32];
    sl_duration_format(ms, out, sizeof(out));
    fuzz_check(strlen(out) < sizeof(out) - 1);
    int64_t again = -1;
    fuzz_check(sl_duration_parse(out, &again) == 0);
    fuzz_check(again == ms);
}

static void time_round_trip(const char *s)
{
    int64_t ms = 0;
    if (sl_time_parse(s, &ms) != 0)
        return;
    char out[32];
    sl_time_format(ms, out, sizeof(out));
    fuzz_check(strlen(out) == 24);
    int64_t again = 0;
    fuzz_check(sl_time_parse(out, &again) == 0);
    fuzz_check(again == ms);
}

static void seconds(const uint8_t *data, size_t size)
{
    double d;
    if (size < sizeof(d))
        return;
    memcpy(&d, data, sizeof(d));
    int64_t ms = -1;
    if (sl_duration_from_seconds(d, &ms) != 0)
        return;
    fuzz_check(ms >= 0 && ms <= SL_DURATION_MAX_MS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char buf[TEXT_MAX];
    const char *s = fuzz_cstr(data, size, buf, sizeof(buf));
    duration_round_trip(s);
    time_round_trip(s);
    seconds(data, size);
    return 0;
}
