/* sluice-load's HOST:PORT (bench/load/address.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "address.h"

static void accepted(void **state)
{
    (void)state;
    char host[64], port[SL_LOAD_PORT_MAX];
    assert_int_equal(sl_load_address("127.0.0.1:7700", host, sizeof host, port), 0);
    assert_string_equal(host, "127.0.0.1");
    assert_string_equal(port, "7700");
    assert_int_equal(sl_load_address("[::1]:1", host, sizeof host, port), 0);
    assert_string_equal(host, "::1");
    assert_string_equal(port, "1");
    assert_int_equal(sl_load_address("::1:65535", host, sizeof host, port), 0);
    assert_string_equal(host, "::1");
    assert_string_equal(port, "65535");
    assert_int_equal(sl_load_address("localhost:080", host, sizeof host, port), 0);
    assert_string_equal(port, "80");
}

static void refused(void **state)
{
    (void)state;
    char host[8], port[SL_LOAD_PORT_MAX];
    const char *bad[] = {"",     "7700", ":7700", "[]:7700",       "h:", "h:0", "h:65536",
                         "h:7x", "h:-1", "h: 1",  "longhostname:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(sl_load_address(bad[i], host, sizeof host, port), -1);
}

static void urls(void **state)
{
    (void)state;
    char host[64], port[SL_LOAD_PORT_MAX];
    bool tls = true;
    assert_int_equal(sl_load_url("127.0.0.1:7700", "http", "https", &tls, host, sizeof host, port),
                     0);
    assert_false(tls);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(sl_load_url("http://h:1/", "http", "https", &tls, host, sizeof host, port), 0);
    assert_false(tls);
    assert_string_equal(host, "h");
    assert_string_equal(port, "1");
    assert_int_equal(
        sl_load_url("https://[::1]:7443", "http", "https", &tls, host, sizeof host, port), 0);
    assert_true(tls);
    assert_string_equal(host, "::1");
    assert_string_equal(port, "7443");
    assert_int_equal(
        sl_load_url("rediss://h:6380", "redis", "rediss", &tls, host, sizeof host, port), 0);
    assert_true(tls);
    assert_true(sl_load_url_is_tls("https://h:1"));
    assert_true(sl_load_url_is_tls("rediss://h:1"));
    assert_false(sl_load_url_is_tls("http://h:1"));
    assert_false(sl_load_url_is_tls("h:1"));
    /* Another service's scheme, a path, no port. */
    const char *bad[] = {"rediss://h:1", "ftp://h:1", "https://h:1/v1", "https://h", "https://"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(sl_load_url(bad[i], "http", "https", &tls, host, sizeof host, port), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepted),
        cmocka_unit_test(refused),
        cmocka_unit_test(urls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
