/* test_query.c - request targets: the decoded path and query parameters
 * (src/http/query.c), and what is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "query.h"

static sl_query q;
static char path[256];

static int parse(const char *target, const char **why)
{
    *why = NULL;
    return sl_target_parse(target, path, sizeof(path), &q, why);
}

static void paths_decode_escapes_but_not_plus(void **state)
{
    (void)state;
    const char *why;
    assert_int_equal(parse("/v1/semaphores/ci%2Fdeploy+x", &why), 0);
    assert_string_equal(path, "/v1/semaphores/ci/deploy+x");
    assert_int_equal(q.n, 0);
    assert_int_equal(parse("/a%7e%7E#frag", &why), 0);
    assert_string_equal(path, "/a~~");
    /* A proxy's absolute form: the path is what counts. */
    assert_int_equal(parse("http://example.com:7700/healthz?x=1", &why), 0);
    assert_string_equal(path, "/healthz");
    assert_string_equal(sl_query_find(&q, "x"), "1");
    assert_int_equal(parse("https://example.com", &why), 0);
    assert_string_equal(path, "/");
}

static void queries_decode_escapes_and_plus(void **state)
{
    (void)state;
    const char *why;
    assert_int_equal(parse("/v1/claims?holder=a+b%2Fc&wait=20s&&flag&=v&", &why), 0);
    assert_int_equal(q.n, 4);
    assert_string_equal(sl_query_find(&q, "holder"), "a b/c");
    assert_string_equal(sl_query_find(&q, "wait"), "20s");
    assert_string_equal(sl_query_find(&q, "flag"), ""); /* no '=': empty */
    assert_string_equal(q.key[3], "");                  /* "=v": an empty key, kept */
    assert_string_equal(q.value[3], "v");
    assert_null(sl_query_find(&q, "missing"));
    /* Repeats are all kept, in order (the routes refuse them by name). */
    assert_int_equal(parse("/x?a=1&a=2", &why), 0);
    assert_int_equal(q.n, 2);
    assert_string_equal(sl_query_find(&q, "a"), "1");
    assert_string_equal(q.value[1], "2");
    /* '?' and '=' inside a value are data. */
    assert_int_equal(parse("/x?next=a=b?c#frag", &why), 0);
    assert_string_equal(sl_query_find(&q, "next"), "a=b?c");
}

static void malformed_targets_are_refused_with_a_reason(void **state)
{
    (void)state;
    const char *bad[] = {"/a%2", "/a%zz", "/a%00b", "/x?a=%", "/x?a=%0", "/x?%g1=1",
                         "/x?a=%00", "relative", "*", ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *why;
        if (parse(bad[i], &why) == 0)
            fail_msg("\"%s\" was accepted", bad[i]);
        assert_non_null(why);
    }
    char long_path[400];
    memset(long_path, 'p', sizeof(long_path) - 1);
    long_path[0] = '/';
    long_path[sizeof(long_path) - 1] = '\0';
    const char *why;
    assert_int_equal(parse(long_path, &why), -1);
    assert_non_null(strstr(why, "too long"));
}

static void at_most_32_parameters(void **state)
{
    (void)state;
    char t[1024] = "/x?";
    for (int i = 0; i < SL_QUERY_PARAMS_MAX; i++)
        snprintf(t + strlen(t), sizeof(t) - strlen(t), "k%d=%d&", i, i);
    const char *why;
    assert_int_equal(parse(t, &why), 0);
    assert_int_equal(q.n, SL_QUERY_PARAMS_MAX);
    assert_string_equal(sl_query_find(&q, "k31"), "31");
    strcat(t, "one=more");
    assert_int_equal(parse(t, &why), -1);
    assert_non_null(strstr(why, "32"));
}

/* The longest target the HTTP layer lets through, all of it parameters
 * without '=' (the most space per byte): it fits. */
static void the_largest_query_fits(void **state)
{
    (void)state;
    static char t[SL_HTTP_TARGET_MAX + 1];
    strcpy(t, "/x?");
    size_t len = 3, per = (SL_HTTP_TARGET_MAX - 3) / SL_QUERY_PARAMS_MAX;
    for (int i = 0; i < SL_QUERY_PARAMS_MAX; i++) {
        memset(t + len, 'a' + i % 26, per - 1);
        len += per - 1;
        t[len++] = '&';
    }
    t[len] = '\0';
    const char *why;
    assert_true(len <= SL_HTTP_TARGET_MAX);
    assert_int_equal(parse(t, &why), 0);
    assert_int_equal(q.n, SL_QUERY_PARAMS_MAX);
    assert_int_equal(strlen(q.key[31]), per - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(paths_decode_escapes_but_not_plus),
        cmocka_unit_test(queries_decode_escapes_and_plus),
        cmocka_unit_test(malformed_targets_are_refused_with_a_reason),
        cmocka_unit_test(at_most_32_parameters),
        cmocka_unit_test(the_largest_query_fits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
