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
    const char *bad[] = {"", "7700", ":7700", "[]:7700", "h:", "h:0", "h:65536", "h:7x",
                         "h:-1", "h: 1", "longhostname:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        assert_int_equal(sl_load_address(bad[i], host, sizeof host, port), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepted),
        cmocka_unit_test(refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
