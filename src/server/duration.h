/* duration.h - durations and timestamps as docs/api.md writes them.
 *
 * Durations: a sequence of number+unit, largest unit first, units h, m, s,
 * ms, numbers possibly fractional ("250ms", "30s", "5m", "1h30m", "1.5s",
 * "1m30.5s"); or a plain number of seconds ("30", "1.5"); "0" means none.
 * Output uses the same units: under a second "250ms", else hours, minutes
 * and seconds with the zero parts left out and up to three decimals on the
 * seconds ("1h30m", "30s", "1m30.5s").
 * Timestamps: RFC 3339 in UTC with milliseconds, "2026-11-22T10:00:00.000Z";
 * on input any RFC 3339 offset and 0 to 9 fraction digits are accepted. */
#ifndef SL_SERVER_DURATION_H
#define SL_SERVER_DURATION_H

#include <stddef.h>
#include <stdint.h>

#define SL_DURATION_MAX_MS (100LL * 365 * 24 * 3600 * 1000) /* 100 years */
/* The shortest lease a claim, a semaphore or the configuration may set (0
 * is none): below it no client could renew in time over a network, and a
 * claim would only flap between held and expired. */
#define SL_LEASE_MIN_MS 100

/* Parses a duration string into milliseconds. 0 on success, -1 when the
 * text is not a duration, is negative, or exceeds SL_DURATION_MAX_MS. */
int sl_duration_parse(const char *s, int64_t *ms);
/* Why s is not a duration, in words that follow the text ("is negative: a
 * duration is 0 (none) or positive"); NULL when it is one. Static. */
const char *sl_duration_problem(const char *s);
/* Seconds as a JSON number (may be fractional) into milliseconds. */
int sl_duration_from_seconds(double seconds, int64_t *ms);
/* Formats milliseconds as described above ("0" for 0). Writes at most cap
 * bytes; 32 is always enough. */
void sl_duration_format(int64_t ms, char *buf, size_t cap);

/* Parses an RFC 3339 timestamp into Unix milliseconds; 0 or -1. */
int sl_time_parse(const char *s, int64_t *ms);
/* Formats Unix milliseconds as "2026-11-22T10:00:00.000Z" (24 chars + NUL;
 * cap >= 32 is always enough). */
void sl_time_format(int64_t ms, char *buf, size_t cap);

/* Rates, "N/PERIOD": 1 to 10^9 grants per a positive duration ("100/1m",
 * "5/1s"; a bare unit means one of it: "100/m"). Why s is not one (words
 * following the text, naming what is wrong with the period too; valid until
 * the next call on the thread), or NULL; its parts; and the text again
 * ("100/1m"). */
const char *sl_rate_problem(const char *s);
int sl_rate_parse(const char *s, uint32_t *count, int64_t *period_ms);
void sl_rate_format(uint32_t count, int64_t period_ms, char *buf, size_t cap);

#endif
