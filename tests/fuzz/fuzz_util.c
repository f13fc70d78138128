/* fuzz_util.c - helpers shared by the fuzz targets (fuzz.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void fuzz_fail(const char *file, int line, const char *what)
{
    fprintf(stderr, "%s:%d: fuzz_check failed: %s\n", file, line, what);
    abort();
}

const char *fuzz_cstr(const uint8_t *data, size_t size, char *buf, size_t cap)
{
    size_t n = size < cap - 1 ? size : cap - 1;
    if (n)
        memcpy(buf, data, n);
    buf[n] = '\0';
    return buf;
}
