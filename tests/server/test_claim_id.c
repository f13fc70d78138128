/* Claim ids (claim_id.c): their shape, their order and their randomness. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "claim_id.h"

static const char alphabet[] = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

static void test_shape(void **state)
{
    (void)state;
    char id[SL_CLAIM_ID_LEN + 1];
    sl_claim_id_new(1795000000000, id);
    assert_int_equal(strlen(id), 22);
    for (size_t i = 0; i < 22; i++)
        assert_non_null(strchr(alphabet, id[i]));
}

/* The alphabet sorts as it counts, so ids sort by creation time, to the ms. */
static void test_order_follows_time(void **state)
{
    (void)state;
    for (size_t i = 1; i < 64; i++)
        assert_true(alphabet[i - 1] < alphabet[i]);
    char a[SL_CLAIM_ID_LEN + 1], b[SL_CLAIM_ID_LEN + 1];
    int64_t t = 1795000000000;
    for (int step = 1; step < 100000000; step *= 7) {
        sl_claim_id_new(t, a);
        sl_claim_id_new(t + step, b);
        assert_true(strcmp(a, b) < 0);
        assert_true(memcmp(a, b, 8) < 0);
    }
    sl_claim_id_new(0, a);
    assert_memory_equal(a, "A-------", 8);
    /* Never a leading '-' (an option to a command line), now or later. */
    for (int64_t y = 0; y < 7300; y += 7) { /* to the year 9270 */
        sl_claim_id_new(y * 31556952000LL, b);
        assert_true(b[0] >= 'A' && b[0] <= 'z');
        if (y)
            assert_true(strcmp(a, b) < 0);
        memcpy(a, b, sizeof(a));
    }
}

static int cmp(const void *x, const void *y)
{
    return strcmp(x, y);
}

/* Within one millisecond the 84 random bits tell ids apart, and every
 * random character takes every value. */
static void test_random_part(void **state)
{
    (void)state;
    enum { N = 20000 };
    char(*ids)[SL_CLAIM_ID_LEN + 1] = malloc(sizeof(*ids) * N);
    assert_non_null(ids);
    int seen[14][64];
    memset(seen, 0, sizeof(seen));
    for (int i = 0; i < N; i++) {
        sl_claim_id_new(1795000000000, ids[i]);
        for (int k = 0; k < 14; k++)
            seen[k][strchr(alphabet, ids[i][8 + k]) - alphabet]++;
    }
    qsort(ids, N, sizeof(*ids), cmp);
    for (int i = 1; i < N; i++)
        assert_true(strcmp(ids[i - 1], ids[i]) != 0);
    for (int k = 0; k < 14; k++)
        for (int v = 0; v < 64; v++)
            assert_true(seen[k][v] > N / 64 / 2); /* ~312 expected each */
    free(ids);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shape),
        cmocka_unit_test(test_order_follows_time),
        cmocka_unit_test(test_random_part),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
