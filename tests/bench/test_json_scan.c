/* test_json_scan.c - the load generator's JSON scanner (bench/load/json_scan.h):
 * members found only in the object asked (never a nested key, never text
 * inside a string), arrays walked element by element, integers exact to
 * int64 and refused beyond, strings unescaped (UTF-8 from \u, surrogate
 * pairs), and malformed text refused without reading outside the span. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_scan.h"

static sl_json_span span(const char *s)
{
    return sl_json_span_of(s, strlen(s));
}

/* The text of member key of json, or "<code>" when not found. */
static const char *member_text(const char *json, const char *key)
{
    static char buf[256];
    sl_json_span v;
    int rc = sl_json_member(span(json), key, &v);
    if (rc < 0) {
        snprintf(buf, sizeof buf, "<%d>", rc);
        return buf;
    }
    snprintf(buf, sizeof buf, "%.*s", (int)v.len, v.p);
    return buf;
}

/* A claim as sluiced answers it. */
static const char claim[] =
    "{\"id\":\"PXO2bxavaObz6GkV4WBqnA\",\"state\":\"held\",\"holder\":\"a\","
    "\"locks\":[{\"kind\":\"mutex\",\"name\":\"m\",\"slots\":1,\"token\":17,\"position\":null}],"
    "\"priority\":0,\"created\":\"2026-11-23T11:48:38.383Z\",\"rebalance_key\":null,\"tags\":{},"
    "\"group\":null,\"lease\":\"0\",\"expires\":null,\"reason\":\"held\",\"by\":null}\n";

static void members_of_a_claim(void **state)
{
    sl_json_span c = span(claim), locks, lock0, tok;
    sl_json_iter it;
    int64_t t;
    (void)state;
    assert_string_equal(member_text(claim, "state"), "\"held\"");
    assert_string_equal(member_text(claim, "id"), "\"PXO2bxavaObz6GkV4WBqnA\"");
    assert_string_equal(member_text(claim, "tags"), "{}");
    assert_string_equal(member_text(claim, "by"), "null");
    /* "token" is only inside locks[0], not a member of the claim. */
    assert_string_equal(member_text(claim, "token"), "<-1>");
    assert_int_equal(sl_json_member(c, "locks", &locks), 0);
    assert_int_equal(sl_json_iter_init(&it, locks), 0);
    assert_int_equal(sl_json_iter_next(&it, &lock0), 1);
    assert_int_equal(sl_json_member(lock0, "token", &tok), 0);
    assert_int_equal(sl_json_int64(tok, &t), 0);
    assert_int_equal(t, 17);
    assert_int_equal(sl_json_iter_next(&it, &lock0), 0);
    assert_true(sl_json_is_string((sl_json_span){"\"held\"", 6}, "held"));
    assert_false(sl_json_is_string((sl_json_span){"\"held\"", 6}, "hel"));
    assert_false(sl_json_is_string((sl_json_span){"held", 4}, "held"));
    assert_true(sl_json_is_null((sl_json_span){"null", 4}));
    assert_false(sl_json_is_null((sl_json_span){"nul", 3}));
}

static void members_never_match_nested_or_quoted_text(void **state)
{
    (void)state;
    /* The same key deeper, and the key's text inside a string value. */
    assert_string_equal(
        member_text("{\"a\":{\"state\":1},\"b\":\"\\\"state\\\":2\",\"state\":3}", "state"), "3");
    assert_string_equal(member_text("{\"a\":[{\"state\":1}],\"b\":\"}\"}", "state"), "<-1>");
    /* Brackets inside strings do not count. */
    assert_string_equal(member_text("{\"a\":\"{[\",\"b\":[\"]\",{\"c\":\"}\"}],\"d\":true}", "d"),
                        "true");
    assert_string_equal(member_text(" \t\n{ \"k\" \n: \r -1.5e3 , \"z\":0 } \n", "k"), "-1.5e3");
    assert_string_equal(member_text("{}", "k"), "<-1>");
    assert_string_equal(member_text("{\"kk\":1,\"k\":2}", "k"), "2");
}

static void malformed_objects(void **state)
{
    (void)state;
    assert_string_equal(member_text("[1]", "k"), "<-3>");
    assert_string_equal(member_text("", "k"), "<-3>");
    assert_string_equal(member_text("\"s\"", "k"), "<-3>");
    assert_string_equal(member_text("{\"k\" 1}", "k"), "<-2>");
    assert_string_equal(member_text("{\"a\":1 \"k\":2}", "k"), "<-2>");
    assert_string_equal(member_text("{\"a\":1,", "k"), "<-2>");
    assert_string_equal(member_text("{\"a", "k"), "<-2>");
    assert_string_equal(member_text("{\"a\":\"unterminated}", "k"), "<-2>");
    assert_string_equal(member_text("{\"a\":[1,2}", "k"), "<-2>");
    assert_string_equal(member_text("{\"a\":", "k"), "<-2>");
    assert_string_equal(member_text("{\"a\":x,\"k\":1}", "k"), "<-2>");
    assert_string_equal(member_text("{a:1}", "k"), "<-2>");
    assert_string_equal(member_text("{\"a\":\"ctl\x01\",\"k\":1}", "k"), "<-2>");
}

static void nesting_is_bounded(void **state)
{
    char deep[300], *p = deep;
    int i;
    (void)state;
    p += snprintf(p, 16, "{\"a\":");
    for (i = 0; i < SL_JSON_MAX_DEPTH; i++)
        *p++ = '[';
    for (i = 0; i < SL_JSON_MAX_DEPTH; i++)
        *p++ = ']';
    snprintf(p, 16, ",\"k\":1}");
    assert_string_equal(member_text(deep, "k"), "1");
    p = deep;
    p += snprintf(p, 16, "{\"a\":");
    for (i = 0; i < SL_JSON_MAX_DEPTH + 1; i++)
        *p++ = '[';
    for (i = 0; i < SL_JSON_MAX_DEPTH + 1; i++)
        *p++ = ']';
    snprintf(p, 16, ",\"k\":1}");
    assert_string_equal(member_text(deep, "k"), "<-2>");
}

/* Every member lookup of a text cut short stays inside the span. */
static void truncated_text_stays_inside_the_span(void **state)
{
    size_t n, len = strlen(claim);
    sl_json_span v;
    (void)state;
    for (n = 0; n < len; n++) {
        char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees any overread */
        int rc;
        assert_non_null(copy);
        memcpy(copy, claim, n);
        rc = sl_json_member(sl_json_span_of(copy, n), "by", &v);
        /* "by" is the last member; before its value is complete it is not
         * found whole. */
        if (n < len - 6)
            assert_true(rc < 0);
        free(copy);
    }
}

static void arrays(void **state)
{
    sl_json_iter it;
    sl_json_span e;
    const char *text = "[ 1 , \"a,b\" , {\"x\":[2,3]} , [] , null ]";
    const char *want[] = {"1", "\"a,b\"", "{\"x\":[2,3]}", "[]", "null"};
    int i;
    (void)state;
    assert_int_equal(sl_json_iter_init(&it, span(text)), 0);
    for (i = 0; i < 5; i++) {
        assert_int_equal(sl_json_iter_next(&it, &e), 1);
        assert_int_equal(e.len, strlen(want[i]));
        assert_memory_equal(e.p, want[i], e.len);
    }
    assert_int_equal(sl_json_iter_next(&it, &e), 0);
    assert_int_equal(sl_json_iter_next(&it, &e), 0); /* stays at the end */
    assert_int_equal(sl_json_iter_init(&it, span("[]")), 0);
    assert_int_equal(sl_json_iter_next(&it, &e), 0);
    assert_int_equal(sl_json_iter_init(&it, span("{}")), SL_JSON_ETYPE);
    assert_int_equal(sl_json_iter_init(&it, span("[1 2]")), 0);
    assert_int_equal(sl_json_iter_next(&it, &e), 1);
    assert_int_equal(sl_json_iter_next(&it, &e), SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_iter_init(&it, span("[1,")), 0);
    assert_int_equal(sl_json_iter_next(&it, &e), 1);
    assert_int_equal(sl_json_iter_next(&it, &e), SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_iter_init(&it, span("[,1]")), 0);
    assert_int_equal(sl_json_iter_next(&it, &e), SL_JSON_EMALFORMED);
}

static void integers(void **state)
{
    int64_t v = 42;
    (void)state;
    assert_int_equal(sl_json_int64(span("0"), &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(sl_json_int64(span("9223372036854775807"), &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(sl_json_int64(span("-9223372036854775808"), &v), 0);
    assert_true(v == INT64_MIN);
    v = 42;
    assert_int_equal(sl_json_int64(span("9223372036854775808"), &v), SL_JSON_ERANGE);
    assert_int_equal(sl_json_int64(span("-9223372036854775809"), &v), SL_JSON_ERANGE);
    assert_int_equal(sl_json_int64(span("99999999999999999999"), &v), SL_JSON_ERANGE);
    assert_int_equal(sl_json_int64(span("1.5"), &v), SL_JSON_ETYPE);
    assert_int_equal(sl_json_int64(span("1e3"), &v), SL_JSON_ETYPE);
    assert_int_equal(sl_json_int64(span("null"), &v), SL_JSON_ETYPE);
    assert_int_equal(sl_json_int64(span("\"7\""), &v), SL_JSON_ETYPE);
    assert_int_equal(sl_json_int64(span("-"), &v), SL_JSON_ETYPE);
    assert_int_equal(sl_json_int64(span(""), &v), SL_JSON_ETYPE);
    assert_int_equal(v, 42); /* failures change nothing */
}

static void strings(void **state)
{
    char buf[32];
    (void)state;
    assert_int_equal(sl_json_string(span("\"plain\""), buf, sizeof buf), 0);
    assert_string_equal(buf, "plain");
    assert_int_equal(sl_json_string(span("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\""), buf, sizeof buf), 0);
    assert_string_equal(buf, "\"\\/\b\f\n\r\t");
    assert_int_equal(
        sl_json_string(span("\"\\u0041\\u00e9\\u20AC\\ud83d\\ude00\""), buf, sizeof buf), 0);
    assert_string_equal(buf, "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
    assert_int_equal(sl_json_string(span("\"\""), buf, sizeof buf), 0);
    assert_string_equal(buf, "");
    /* Exactly fitting, and one byte too long. */
    assert_int_equal(sl_json_string(span("\"abc\""), buf, 4), 0);
    assert_string_equal(buf, "abc");
    assert_int_equal(sl_json_string(span("\"abcd\""), buf, 4), SL_JSON_ERANGE);
    assert_int_equal(sl_json_string(span("\"\""), buf, 0), SL_JSON_ERANGE);
    /* Bad escapes: unknown letter, short \u, a lone or reversed surrogate. */
    assert_int_equal(sl_json_string(span("\"\\x\""), buf, sizeof buf), SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_string(span("\"\\u12\""), buf, sizeof buf), SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_string(span("\"\\u12g4\""), buf, sizeof buf), SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_string(span("\"\\ud83d\""), buf, sizeof buf), SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_string(span("\"\\ude00\\ud83d\""), buf, sizeof buf),
                     SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_string(span("\"\\ud83d\\ue000\""), buf, sizeof buf),
                     SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_string(span("\"\\ud83d\\u0041\""), buf, sizeof buf),
                     SL_JSON_EMALFORMED);
    assert_int_equal(sl_json_string(span("7"), buf, sizeof buf), SL_JSON_ETYPE);
    assert_int_equal(sl_json_string(span("\"open"), buf, sizeof buf), SL_JSON_ETYPE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(members_of_a_claim),
        cmocka_unit_test(members_never_match_nested_or_quoted_text),
        cmocka_unit_test(malformed_objects),
        cmocka_unit_test(nesting_is_bounded),
        cmocka_unit_test(truncated_text_stays_inside_the_span),
        cmocka_unit_test(arrays),
        cmocka_unit_test(integers),
        cmocka_unit_test(strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
