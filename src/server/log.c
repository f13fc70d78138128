/* log.c - one line per start, stop and error, to stderr, with a level.
 *
 * Format: "2026-11-22T10:00:00.000Z info message". Lines are short and
 * never contain a token's secret. */
#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "duration.h"
#include "server.h"

static sl_log_level current = SL_LOG_INFO;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void sl_log_set_level(sl_log_level level)
{
    current = level;
}

__attribute__((format(printf, 2, 0))) static void vlog(sl_log_level level, const char *fmt,
                                                       va_list ap)
{
    if (level > current)
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    char when[32];
    sl_time_format((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, when, sizeof(when));
    char line[2048];
    vsnprintf(line, sizeof(line), fmt, ap);
    fprintf(stderr, "%s %s %s\n", when, level_names[level], line);
    fflush(stderr);
}

void sl_log(sl_log_level level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog(level, fmt, ap);
    va_end(ap);
}
