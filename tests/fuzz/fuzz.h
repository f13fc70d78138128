/* fuzz.h - what every fuzz target in tests/fuzz defines: libFuzzer's entry
 * point, called once per input. The same function is driven by libFuzzer
 * (SLUICE_FUZZ=ON), by afl++ (through libFuzzer's interface) and by the
 * plain replay driver (replay.c) that CTest runs over the corpus. */
#ifndef SL_FUZZ_H
#define SL_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* Runs one input; returns 0 (libFuzzer's convention). Any bug it finds is a
 * crash: an abort (fuzz_check), or a sanitizer's report. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* An invariant of the code under test: aborts with where and what when it
 * does not hold, in every build type (never compiled out like assert). */
#define fuzz_check(cond) ((cond) ? (void)0 : fuzz_fail(__FILE__, __LINE__, #cond))
_Noreturn void fuzz_fail(const char *file, int line, const char *what);
/* The same with a message of one's own (a newline at its end). */
_Noreturn void fuzz_failf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The input as a NUL-terminated string in a buffer of the caller's (cap
 * bytes), cut at cap - 1 bytes: for code that takes C strings. */
const char *fuzz_cstr(const uint8_t *data, size_t size, char *buf, size_t cap);

#endif
