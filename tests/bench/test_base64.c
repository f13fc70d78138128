/* test_base64.c - base64 for etcd's JSON gateway (bench/load/base64.h): the
 * RFC 4648 test vectors both ways, every byte value through a round trip,
 * buffers exactly large enough and one byte short, and texts that are not
 * base64 refused (bad characters, padding in the middle, stray bits). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "base64.h"

/* RFC 4648 section 10. */
static const char *const vectors[][2] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

static void rfc_vectors(void **state)
{
    char buf[64];
    size_t i;
    (void)state;
    for (i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        const char *plain = vectors[i][0], *text = vectors[i][1];
        assert_int_equal(sl_base64_encode(plain, strlen(plain), buf, sizeof buf),
                         (long)strlen(text));
        assert_string_equal(buf, text);
        assert_int_equal(sl_base64_decode(text, strlen(text), buf, sizeof buf),
                         (long)strlen(plain));
        assert_string_equal(buf, plain);
    }
}

/* A lock name as sluice-load makes them, and one as etcd's lock API answers. */
static void etcd_keys(void **state)
{
    char buf[128];
    (void)state;
    assert_int_equal(sl_base64_decode("bGsvMzkwZGEyMDg4YzgwZDQwZQ==", 28, buf, sizeof buf), 19);
    assert_string_equal(buf, "lk/390da2088c80d40e");
    assert_int_equal(sl_base64_encode("mykey", 5, buf, sizeof buf), 8);
    assert_string_equal(buf, "bXlrZXk=");
}

static void every_byte_round_trips(void **state)
{
    unsigned char in[256];
    char text[SL_BASE64_ENCODED_SIZE(256)], back[257];
    size_t len, i;
    (void)state;
    for (i = 0; i < 256; i++)
        in[i] = (unsigned char)i;
    for (len = 0; len <= 256; len++) {
        long n = sl_base64_encode(in, len, text, sizeof text);
        assert_int_equal(n, (long)((len + 2) / 3 * 4));
        assert_int_equal(sl_base64_decode(text, (size_t)n, back, sizeof back), (long)len);
        assert_memory_equal(back, in, len);
    }
}

static void buffer_bounds(void **state)
{
    char buf[16];
    (void)state;
    /* "foobar" needs 8 characters and the NUL. */
    assert_int_equal(sl_base64_encode("foobar", 6, buf, SL_BASE64_ENCODED_SIZE(6)), 8);
    assert_int_equal(sl_base64_encode("foobar", 6, buf, SL_BASE64_ENCODED_SIZE(6) - 1), -1);
    assert_string_equal(buf, "");
    assert_int_equal(sl_base64_encode("", 0, buf, 1), 0);
    assert_int_equal(sl_base64_encode("f", 1, buf, 0), -1);
    /* Six bytes and the NUL. */
    assert_int_equal(sl_base64_decode("Zm9vYmFy", 8, buf, 7), 6);
    assert_int_equal(sl_base64_decode("Zm9vYmFy", 8, buf, 6), -1);
    assert_string_equal(buf, "");
}

static void not_base64(void **state)
{
    static const char *const bad[] = {
        "Zg=",      /* not a multiple of four */
        "Zg==Zg==", /* padding before the end */
        "Z===",     /* three pad characters */
        "Zm=v",     /* a pad character followed by data */
        "Zm9v\n",   /* whitespace */
        "Zm9*",     /* not in the alphabet */
        "Zh==",     /* bits set below the last byte */
        "Zm9=",     /* the same with one pad character */
        "Zm-v",     /* the URL-safe alphabet */
    };
    char buf[16];
    size_t i;
    (void)state;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(sl_base64_decode(bad[i], strlen(bad[i]), buf, sizeof buf), -1);
        assert_string_equal(buf, "");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rfc_vectors),
        cmocka_unit_test(etcd_keys),
        cmocka_unit_test(every_byte_round_trips),
        cmocka_unit_test(buffer_bounds),
        cmocka_unit_test(not_base64),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
