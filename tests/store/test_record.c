/* test_record.c - a batch as one log record and back (record.h): random
 * batches survive the round trip exactly, and no damaged or cut record is
 * misread: every prefix of a record, and every record with one byte
 * changed, either decodes to operations a reader can bound or is refused
 * with a reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "record.h"

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static int64_t some_int(uint64_t *s)
{
    static const int64_t edges[] = {0, 1, -1, 63, 64, -64, -65, 127, 128, INT64_MAX, INT64_MIN,
                                    INT64_MIN + 1, 1764000000000};
    uint64_t r = rnd(s);
    if (r % 3 == 0)
        return edges[(r / 3) % (sizeof(edges) / sizeof(edges[0]))];
    return (int64_t)rnd(s) >> (r % 64);
}

static void random_batch(sl_store_batch *b, uint64_t *s)
{
    sl__batch_clear(b);
    size_t nops = rnd(s) % 12;
    char text[300];
    for (size_t i = 0; i < nops; i++) {
        sl__batch_op(b, (uint32_t)(1 + rnd(s) % SL_REC_OP_MAX));
        size_t np = rnd(s) % 26;
        for (size_t k = 0; k < np; k++) {
            switch (rnd(s) % 3) {
            case 0:
                sl__batch_int(b, some_int(s));
                break;
            case 1: {
                size_t len = rnd(s) % sizeof(text);
                for (size_t j = 0; j < len; j++)
                    text[j] = (char)(rnd(s) & 0xff); /* any byte, NUL included */
                sl__batch_text(b, text, len);
                break;
            }
            default:
                sl__batch_text(b, NULL, 0);
            }
        }
    }
}

static void same_batch(const sl_store_batch *a, const sl_store_batch *b)
{
    assert_int_equal(a->nops, b->nops);
    for (size_t i = 0; i < a->nops; i++) {
        const sb_op *x = &a->ops[i], *y = &b->ops[i];
        assert_int_equal(x->stmt, y->stmt);
        assert_int_equal(x->nparams, y->nparams);
        for (uint32_t k = 0; k < x->nparams; k++) {
            const sb_param *p = &a->params[x->first + k], *q = &b->params[y->first + k];
            assert_int_equal(p->type, q->type);
            if (p->type == SB_INT)
                assert_true(p->i == q->i);
            if (p->type == SB_TEXT) {
                assert_int_equal(p->len, q->len);
                assert_memory_equal(a->text + p->off, b->text + q->off, p->len);
                assert_int_equal(b->text[q->off + q->len], '\0');
            }
        }
    }
}

static void round_trip(void **state)
{
    (void)state;
    sl_store_batch *a = sl_store_batch_new(), *b = sl_store_batch_new();
    sl_rec_buf rec = {0};
    uint64_t seed = 0x9e3779b97f4a7c15u;
    for (int i = 0; i < 5000; i++) {
        random_batch(a, &seed);
        sl_rec_encode(a, &rec);
        assert_true(rec.n >= 1);
        assert_int_equal(sl_rec_decode(rec.p, rec.n, b), 0);
        same_batch(a, b);
    }
    sl_rec_buf_free(&rec);
    sl_store_batch_free(a);
    sl_store_batch_free(b);
}

/* Cut anywhere or with a byte changed, a record decodes or is refused:
 * never read past its end (ASan watches), never an unknown operation. */
static void damaged_records(void **state)
{
    (void)state;
    sl_store_batch *a = sl_store_batch_new(), *b = sl_store_batch_new();
    sl_rec_buf rec = {0};
    uint64_t seed = 12345;
    size_t refused = 0;
    for (int i = 0; i < 300; i++) {
        random_batch(a, &seed);
        sl_rec_encode(a, &rec);
        unsigned char *copy = malloc(rec.n);
        assert_non_null(copy);
        for (size_t cut = 0; cut < rec.n; cut++) {
            /* A block of exactly cut bytes: a read past it is ASan's. */
            unsigned char *part = malloc(cut ? cut : 1);
            assert_non_null(part);
            memcpy(part, rec.p, cut);
            if (sl_rec_decode(part, cut, b) != 0) {
                refused++;
                assert_true(strlen(sl_store_batch_error(b)) > 0);
            }
            free(part);
        }
        for (int k = 0; k < 20 && rec.n > 0; k++) {
            memcpy(copy, rec.p, rec.n);
            copy[rnd(&seed) % rec.n] ^= (unsigned char)(1 + rnd(&seed) % 255);
            if (sl_rec_decode(copy, rec.n, b) == 0)
                for (size_t j = 0; j < b->nops; j++)
                    assert_true(b->ops[j].stmt >= 1 && b->ops[j].stmt <= SL_REC_OP_MAX);
        }
        free(copy);
    }
    assert_true(refused > 0);
    /* The empty record and a newer format are refused by name. */
    assert_int_equal(sl_rec_decode("", 0, b), -1);
    assert_non_null(strstr(sl_store_batch_error(b), "empty"));
    unsigned char newer[] = {SL_REC_VERSION + 1, 1, 0};
    assert_int_equal(sl_rec_decode(newer, sizeof(newer), b), -1);
    assert_non_null(strstr(sl_store_batch_error(b), "newer sluice"));
    sl_rec_buf_free(&rec);
    sl_store_batch_free(a);
    sl_store_batch_free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(round_trip),
        cmocka_unit_test(damaged_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
