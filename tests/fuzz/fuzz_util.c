/* fuzz_util.c - helpers shared by the fuzz targets (fuzz.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void fuzz_failf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    /* libFuzzer's fork mode drops its jobs' stderr: the message is kept in
     * SLUICE_FUZZ_LOG too, when set. */
    const char *log = getenv("SLUICE_FUZZ_LOG");
    FILE *f = log ? fopen(log, "a") : NULL;
    if (f) {
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
        fclose(f);
    }
    abort();
}

void fuzz_fail(const char *file, int line, const char *what)
{
    fuzz_failf("%s:%d: fuzz_check failed: %s\n", file, line, what);
}

const char *fuzz_cstr(const uint8_t *data, size_t size, char *buf, size_t cap)
{
    size_t n = size < cap - 1 ? size : cap - 1;
    if (n)
        memcpy(buf, data, n);
    buf[n] = '\0';
    return buf;
}
