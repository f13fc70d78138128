/* test_mem.c - tests of the engine's allocation wrappers.
 *
 * The wrappers' whole job is bookkeeping and refusing to go on without
 * memory, so these tests watch what reaches the allocator (never a size of 0
 * except to free, never a free of NULL) and the live-block count, and run the
 * aborting paths in a forked child, since an abort cannot be caught in
 * process. */
#define _POSIX_C_SOURCE 200809L

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "mem.h"

#ifndef __has_feature
#define __has_feature(x) 0
#endif
#if defined(__SANITIZE_ADDRESS__) || __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#else
#define UNDER_ASAN 0
#endif

typedef struct counter {
    size_t allocs, resizes, frees;
    size_t last_size;
} counter;

static void *count_alloc(void *ud, void *ptr, size_t size)
{
    counter *c = ud;
    if (size == 0) {
        assert_non_null(ptr); /* the wrappers never free NULL */
        c->frees++;
        free(ptr);
        return NULL;
    }
    if (ptr == NULL)
        c->allocs++;
    else
        c->resizes++;
    c->last_size = size;
    void *p = realloc(ptr, size);
    assert_non_null(p);
    return p;
}

static void *null_alloc(void *ud, void *ptr, size_t size)
{
    (void)ud;
    (void)ptr;
    (void)size;
    return NULL;
}

static void test_malloc_free(void **state)
{
    (void)state;
    counter c = {0};
    sl_mem m;
    sl__mem_init(&m, count_alloc, &c);
    assert_int_equal(m.live, 0);
    char *a = sl__malloc(&m, 10);
    char *b = sl__malloc(&m, 20);
    memset(a, 1, 10);
    memset(b, 2, 20);
    assert_int_equal(m.live, 2);
    assert_int_equal(c.allocs, 2);
    assert_int_equal(c.last_size, 20);
    sl__free(&m, a);
    assert_int_equal(m.live, 1);
    sl__free(&m, NULL); /* neither counted nor passed on */
    assert_int_equal(m.live, 1);
    assert_int_equal(c.frees, 1);
    sl__free(&m, b);
    assert_int_equal(m.live, 0);
}

/* Size 0 means free to the allocator, so it must never be asked for. */
static void test_zero_sizes(void **state)
{
    (void)state;
    counter c = {0};
    sl_mem m;
    sl__mem_init(&m, count_alloc, &c);
    void *a = sl__malloc(&m, 0);
    void *b = sl__calloc(&m, 0, 8);
    void *d = sl__calloc(&m, 8, 0);
    assert_non_null(a);
    assert_non_null(b);
    assert_non_null(d);
    assert_true(a != b && b != d);
    assert_int_equal(m.live, 3);
    a = sl__realloc(&m, a, 0);
    assert_non_null(a);
    assert_int_equal(m.live, 3);
    assert_int_equal(c.frees, 0);
    sl__free(&m, a);
    sl__free(&m, b);
    sl__free(&m, d);
    assert_int_equal(m.live, 0);
    assert_int_equal(c.frees, 3);
}

static void test_calloc_zeroes(void **state)
{
    (void)state;
    counter c = {0};
    sl_mem m;
    sl__mem_init(&m, count_alloc, &c);
    /* Dirty memory first, so a zero is not luck. */
    unsigned char *dirty = sl__malloc(&m, 4096);
    memset(dirty, 0xff, 4096);
    sl__free(&m, dirty);
    unsigned char *p = sl__calloc(&m, 512, 8);
    assert_int_equal(c.last_size, 4096);
    for (size_t i = 0; i < 4096; i++)
        assert_int_equal(p[i], 0);
    assert_int_equal(m.live, 1);
    sl__free(&m, p);
    assert_int_equal(m.live, 0);
}

static void test_resize(void **state)
{
    (void)state;
    counter c = {0};
    sl_mem m;
    sl__mem_init(&m, count_alloc, &c);
    char *p = sl__realloc(&m, NULL, 4); /* counts as a new block */
    assert_int_equal(m.live, 1);
    assert_int_equal(c.allocs, 1);
    memcpy(p, "abcd", 4);
    p = sl__realloc(&m, p, 1 << 16); /* a resize is not a new block */
    assert_int_equal(m.live, 1);
    assert_int_equal(c.resizes, 1);
    assert_memory_equal(p, "abcd", 4);
    p = sl__realloc(&m, p, 2);
    assert_memory_equal(p, "ab", 2);
    sl__free(&m, p);
    assert_int_equal(m.live, 0);
}

static void test_strndup(void **state)
{
    (void)state;
    counter c = {0};
    sl_mem m;
    sl__mem_init(&m, count_alloc, &c);
    char *a = sl__strndup(&m, "semaphore", 4);
    assert_string_equal(a, "sema");
    assert_int_equal(c.last_size, 5);
    /* len counts bytes, NULs included: it is no strnlen. */
    char *b = sl__strndup(&m, "a\0b", 3);
    assert_memory_equal(b, "a\0b\0", 4);
    char *e = sl__strndup(&m, NULL, 0);
    assert_string_equal(e, "");
    assert_int_equal(m.live, 3);
    sl__free(&m, a);
    sl__free(&m, b);
    sl__free(&m, e);
    assert_int_equal(m.live, 0);
}

static void test_default_alloc(void **state)
{
    (void)state;
    sl_mem m;
    sl__mem_init(&m, sl__default_alloc, NULL);
    char *p = sl__malloc(&m, 3);
    memcpy(p, "xyz", 3);
    p = sl__realloc(&m, p, 100000);
    assert_memory_equal(p, "xyz", 3);
    char *s = sl__strndup(&m, p, 3);
    assert_string_equal(s, "xyz");
    sl__free(&m, p);
    sl__free(&m, s);
    assert_int_equal(m.live, 0);
    assert_null(sl__default_alloc(NULL, NULL, 0)); /* free(NULL) is fine */
}

typedef void (*doomed_fn)(void);

/* Runs fn in a child with stderr captured into err; returns the wait status. */
static int run_child(doomed_fn fn, char *err, size_t errlen)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn();
        _exit(0); /* it should not have come back */
    }
    close(fds[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < errlen && (r = read(fds[0], err + got, errlen - 1 - got)) > 0)
        got += (size_t)r;
    err[got] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return status;
}

static void assert_aborts(doomed_fn fn)
{
    char err[4096];
    int status = run_child(fn, err, sizeof err);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void calloc_overflow(void)
{
    sl_mem m;
    sl__mem_init(&m, sl__default_alloc, NULL);
    sl__calloc(&m, SIZE_MAX / 2 + 2, 2);
}

static void calloc_overflow_large(void)
{
    sl_mem m;
    sl__mem_init(&m, sl__default_alloc, NULL);
    sl__calloc(&m, (size_t)1 << (sizeof(size_t) * 4), (size_t)1 << (sizeof(size_t) * 4));
}

static void malloc_gets_null(void)
{
    sl_mem m;
    sl__mem_init(&m, null_alloc, NULL);
    sl__malloc(&m, 8);
}

static void realloc_gets_null(void)
{
    sl_mem m;
    sl__mem_init(&m, null_alloc, NULL);
    static char block[8];
    sl__realloc(&m, block, 16);
}

static void strndup_gets_null(void)
{
    sl_mem m;
    sl__mem_init(&m, null_alloc, NULL);
    sl__strndup(&m, "x", 1);
}

static void test_aborts(void **state)
{
    (void)state;
    assert_aborts(calloc_overflow);
    assert_aborts(calloc_overflow_large);
    assert_aborts(malloc_gets_null);
    assert_aborts(realloc_gets_null);
    assert_aborts(strndup_gets_null);
}

static void default_out_of_memory(void)
{
    /* More than any machine has, but not so much that realloc refuses the
     * size outright before trying. */
    sl__default_alloc(NULL, NULL, SIZE_MAX / 4);
}

/* Under ASan the sanitizer's allocator reports the failure itself and ends
 * the process its own way; only without it can the message be checked. */
static void test_default_out_of_memory(void **state)
{
    (void)state;
    char err[4096];
    int status = run_child(default_out_of_memory, err, sizeof err);
    if (UNDER_ASAN) {
        assert_false(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        return;
    }
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
    assert_string_equal(err, "sluice: out of memory\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_malloc_free),   cmocka_unit_test(test_zero_sizes),
        cmocka_unit_test(test_calloc_zeroes), cmocka_unit_test(test_resize),
        cmocka_unit_test(test_strndup),       cmocka_unit_test(test_default_alloc),
        cmocka_unit_test(test_aborts),        cmocka_unit_test(test_default_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
