/* test_rows_json.c - the JSON of claims' locks and tags and of a
 * configuration's rules (rows_json.c): what the writers write for real
 * claims and rules, that the readers give it back, and that the readers
 * refuse anything else (bad shapes, bad escapes, numbers out of range, too
 * many entries, names too long) without reading past the text. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sqlite_int.h"
#include "support.h"

static char scratch[SL_ROWS_JSON_MAX + 1];

static int locks(const char *text, sl_claim_lock_rec *out, size_t max, size_t *n)
{
    return sl__rows_parse_locks(text, strlen(text), scratch, out, max, n);
}

static int tags(const char *text, sl_tag *out, size_t max, size_t *n)
{
    return sl__rows_parse_tags(text, strlen(text), scratch, out, max, n);
}

static void written_by_the_claim(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 1, "db", 3, SL_STRICT);
    t_sem(eng, 1, "tag/env=*", 1, SL_STRICT);
    t_claim(eng, 1, "id=h m:other");
    t_claim(eng, 2, "id=a m:deploy s:db*2 tag=env=prod tag=team=x group=g");
    sl_rows_buf b = {0};
    sl__rows_locks_json(t_find(eng, "a"), 4, &b);
    assert_string_equal(b.p, "[[0,\"deploy\",1,0,1],[1,\"db\",2,0,1],"
                             "[1,\"tag/env=prod\",1,1,1],[0,\"group/g\",1,2,1]]");
    sl_claim_lock_rec l[8];
    size_t n = 0;
    assert_int_equal(sl__rows_parse_locks(b.p, b.n, scratch, l, 8, &n), 0);
    assert_int_equal(n, 4);
    assert_int_equal(l[1].kind, SL_KIND_SEMAPHORE);
    assert_string_equal(l[1].name, "db");
    assert_int_equal(l[1].slots, 2);
    assert_int_equal(l[2].via, SL_VIA_TAG);
    assert_int_equal(l[3].via, SL_VIA_GROUP);
    assert_int_equal(l[3].token, 1);

    sl__rows_tags_json(t_find(eng, "a"), 2, &b);
    assert_string_equal(b.p, "[[\"env\",\"prod\"],[\"team\",\"x\"]]");
    sl_tag t[4];
    assert_int_equal(sl__rows_parse_tags(b.p, b.n, scratch, t, 4, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(t[1].key, "team");
    assert_string_equal(t[1].value, "x");

    sl__rows_tags_json(t_find(eng, "h"), 0, &b);
    assert_string_equal(b.p, "[]");
    assert_int_equal(tags(b.p, t, 4, &n), 0);
    assert_int_equal(n, 0);

    sl_changes ch;
    sl_engine_changes(eng, &ch);
    sl__rows_event_locks_json(&ch.events[0], 0, &b); /* semaphore.updated db */
    assert_string_equal(b.p, "[\"sem/db\"]");
    sl__rows_event_locks_json(&ch.events[ch.nevents - 1], 4, &b);
    assert_string_equal(b.p, "[\"mtx/deploy\",\"sem/db\",\"sem/tag/env=prod\",\"mtx/group/g\"]");
    sl__rows_buf_free(&b);
    t_free(eng);
}

static void readers_accept_json(void **state)
{
    (void)state;
    sl_claim_lock_rec l[4];
    sl_tag t[4];
    size_t n = 0;
    /* Whitespace, escapes, the extremes of a token. */
    assert_int_equal(locks(" [ [ 1 , \"a\\u002fb\" , 7 , 2 , -9223372036854775808 ] ,"
                           "[0,\"\\\"q\\\\\",1,0,9223372036854775807]]\n",
                           l, 4, &n),
                     0);
    assert_int_equal(n, 2);
    assert_string_equal(l[0].name, "a/b");
    assert_int_equal(l[0].token, (uint64_t)INT64_MIN);
    assert_string_equal(l[1].name, "\"q\\");
    assert_int_equal(l[1].token, (uint64_t)INT64_MAX);
    assert_int_equal(tags("[[\"k\\tx\",\"\\n\"]]", t, 4, &n), 0);
    assert_string_equal(t[0].key, "k\tx");
    assert_string_equal(t[0].value, "\n");
    /* The writer's escape of a control character reads back. */
    assert_int_equal(locks("[[0,\"a\\u0001b\",1,0,0]]", l, 4, &n), 0);
    assert_int_equal(l[0].name[1], 1);
}

static void readers_refuse_the_rest(void **state)
{
    (void)state;
    sl_claim_lock_rec l[2];
    sl_tag t[2];
    size_t n = 0;
    const char *not_arrays[] = {
        "",     "{}",   "[", "[[0,\"a\",1,0,0]", "[[0,\"a\",1,0,0]] x", "[[0,\"a\",1,0,0],]",
        "null", "[] []"};
    for (size_t i = 0; i < sizeof(not_arrays) / sizeof(not_arrays[0]); i++)
        if (locks(not_arrays[i], l, 2, &n) == 0)
            fail_msg("accepted %s", not_arrays[i]);
    const char *bad_entries[] = {
        "[[2,\"a\",1,0,0]]",                    /* no such kind */
        "[[0,\"a\",0,0,0]]",                    /* no slots */
        "[[0,\"a\",1000000001,0,0]]",           /* past SL_LIMIT_MAX */
        "[[0,\"a\",1,3,0]]",                    /* no such via */
        "[[0,\"a\",1,0,9223372036854775808]]",  /* past int64 */
        "[[0,\"a\",1,0,-9223372036854775809]]", /* below int64 */
        "[[0,\"a\",1,0,1.5]]",                  /* not an integer */
        "[[0,\"a\",1,0]]",                      /* too short */
        "[[0,\"a\",1,0,0,0]]",                  /* too long */
        "[[0,a,1,0,0]]",                        /* not a string */
        "[[0,\"a\\x\",1,0,0]]",                 /* no such escape */
        "[[0,\"a\\u00e9\",1,0,0]]",             /* not ASCII */
        "[[0,\"a\\u0000\",1,0,0]]",             /* a NUL */
        "[[0,\"a\\u12\",1,0,0]]",               /* short \u */
        "[[0,\"a\tb\",1,0,0]]",                 /* a raw control character */
        "[[0,\"a",                              /* unterminated */
    };
    for (size_t i = 0; i < sizeof(bad_entries) / sizeof(bad_entries[0]); i++)
        if (locks(bad_entries[i], l, 2, &n) != -3)
            fail_msg("did not refuse entry %s", bad_entries[i]);
    assert_int_equal(locks("[[0,\"a\",1,0,0],[0,\"b\",1,0,0],[0,\"c\",1,0,0]]", l, 2, &n), -2);
    assert_int_equal(tags("[[\"k\"]]", t, 2, &n), -3);
    assert_int_equal(tags("[[\"k\",\"v\",\"w\"]]", t, 2, &n), -3);
    assert_int_equal(tags("[[\"k\",1]]", t, 2, &n), -3);

    /* Names: SL_NAME_MAX bytes, not one more. */
    char text[600];
    char name[SL_NAME_MAX + 2];
    memset(name, 'n', sizeof(name) - 1);
    name[SL_NAME_MAX] = '\0';
    snprintf(text, sizeof(text), "[[0,\"%s\",1,0,0]]", name);
    assert_int_equal(locks(text, l, 2, &n), 0);
    assert_int_equal(strlen(l[0].name), SL_NAME_MAX);
    name[SL_NAME_MAX] = 'n';
    name[SL_NAME_MAX + 1] = '\0';
    snprintf(text, sizeof(text), "[[0,\"%s\",1,0,0]]", name);
    assert_int_equal(locks(text, l, 2, &n), -3);

    /* The length given is the end: nothing past it is read. */
    const char *whole = "[[0,\"a\",1,0,0]]";
    size_t len = strlen(whole) - 1;
    assert_int_equal(sl__rows_parse_locks(whole, len, scratch, l, 2, &n), -1);
}

/* Only the rules that are set are written, in a fixed order, and read
 * back as they were; none set writes nothing (a NULL column). */
static void rules_both_ways(void **state)
{
    (void)state;
    sl_rows_buf b = {0};
    sl_sem_rules none = {0};
    assert_false(sl__rows_rules_json(&none, &b));
    sl_weight w[2] = {{"gold", 5}, {"tab\tkey", 1}};
    sl_sem_rules r = {.max_pending = 3, .weights = w, .nweights = 2, .backdate_ms = 1};
    assert_true(sl__rows_rules_json(&r, &b));
    assert_string_equal(b.p, "{\"max_pending\":3,\"weights\":{\"gold\":5,"
                             "\"tab\\u0009key\":1},\"backdate_ms\":1}");
    sl_rows_rules back;
    char why[160];
    assert_int_equal(sl__rows_parse_rules(b.p, b.n, &back, why, sizeof(why)), 0);
    assert_int_equal(back.rules.max_pending, 3);
    assert_int_equal(back.rules.nweights, 2);
    assert_string_equal(back.rules.weights[1].key, "tab\tkey");
    assert_int_equal(back.rules.weights[0].weight, 5);
    assert_int_equal(back.rules.backdate_ms, 1);
    assert_false(back.rules.preempt);
    sl__rows_rules_free(&back);

    /* NULL is no rule; whitespace and false are read too. */
    assert_int_equal(sl__rows_parse_rules(NULL, 0, &back, why, sizeof(why)), 0);
    assert_int_equal(back.rules.nweights, 0);
    sl__rows_rules_free(&back);
    const char *spaced = " { \"preempt\" : false , \"on_full\" : 1 } ";
    assert_int_equal(sl__rows_parse_rules(spaced, strlen(spaced), &back, why, sizeof(why)), 0);
    assert_false(back.rules.preempt);
    assert_int_equal(back.rules.on_full, SL_ON_FULL_DROP_OLDEST);
    sl__rows_rules_free(&back);
    /* The length is what is read, not the terminator. */
    assert_int_equal(sl__rows_parse_rules("{}{", 2, &back, why, sizeof(why)), 0);
    sl__rows_rules_free(&back);
    sl__rows_buf_free(&b);
}

/* The most a configuration can have (SL_WEIGHTS_MAX keys of SL_NAME_MAX
 * characters that all need escapes) fits, and reads back; the buffer then
 * serves a claim's locks under their own bound again. */
static void rules_worst_case(void **state)
{
    (void)state;
    static char keys[SL_WEIGHTS_MAX][SL_NAME_MAX + 1];
    static sl_weight w[SL_WEIGHTS_MAX];
    for (int i = 0; i < SL_WEIGHTS_MAX; i++) {
        memset(keys[i], '"', SL_NAME_MAX);
        snprintf(keys[i], 4, "%03d", i); /* distinct */
        keys[i][3] = '"';
        w[i] = (sl_weight){keys[i], SL_WEIGHT_MAX};
    }
    sl_sem_rules r = {.preempt = true,
                      .preempt_grace_ms = INT64_MAX,
                      .max_pending = SL_LIMIT_MAX,
                      .on_full = SL_ON_FULL_DROP_OLDEST,
                      .default_weight = SL_WEIGHT_MAX,
                      .weights = w,
                      .nweights = SL_WEIGHTS_MAX,
                      .rate_count = SL_LIMIT_MAX,
                      .rate_period_ms = INT64_MAX,
                      .rate_burst = SL_LIMIT_MAX,
                      .backdate_ms = INT64_MAX};
    sl_rows_buf b = {0};
    assert_true(sl__rows_rules_json(&r, &b));
    assert_false(b.over);
    assert_true(b.n > SL_ROWS_JSON_MAX);
    assert_true(b.n <= SL_RULES_JSON_MAX);
    sl_rows_rules back;
    char why[160];
    assert_int_equal(sl__rows_parse_rules(b.p, b.n, &back, why, sizeof(why)), 0);
    assert_int_equal(back.rules.nweights, SL_WEIGHTS_MAX);
    assert_string_equal(back.rules.weights[255].key, keys[255]);
    assert_int_equal(back.rules.rate_period_ms, INT64_MAX);
    sl__rows_rules_free(&back);

    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a m:x");
    sl__rows_locks_json(t_find(eng, "a"), 1, &b);
    assert_int_equal(b.max, SL_ROWS_JSON_MAX);
    assert_string_equal(b.p, "[[0,\"x\",1,0,1]]");
    t_free(eng);
    sl__rows_buf_free(&b);
}

/* The reader's refusals name what is wrong. */
static void rules_refused(void **state)
{
    (void)state;
    static const struct {
        const char *text, *why;
    } bad[] = {
        {"", "not a JSON object"},
        {"null", "not a JSON object"},
        {"{\"preempt\":tru}", "rule preempt is malformed"},
        {"{\"preempt\":true", "not a JSON object"},
        {"{\"preempt\":true}}", "not a JSON object"},
        {"{\"max_pending\":\"5\"}", "rule max_pending is malformed"},
        {"{\"default_weight\":1000001}", "rule default_weight is malformed"},
        {"{\"weights\":{\"k\":1,}}", "rule weights is malformed"},
        {"{\"weights\":{\"\\u0000\":1}}", "rule weights is malformed"},
        {"{\"Preempt\":true}", "\"Preempt\", which is no rule"},
        {"{\"on_full\":0,\"on_full\":0}", "on_full twice"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        sl_rows_rules r;
        char why[160] = "";
        assert_int_equal(
            sl__rows_parse_rules(bad[i].text, strlen(bad[i].text), &r, why, sizeof(why)), -1);
        if (!strstr(why, bad[i].why))
            fail_msg("%s: \"%s\" lacks \"%s\"", bad[i].text, why, bad[i].why);
        sl__rows_rules_free(&r);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(written_by_the_claim),
        cmocka_unit_test(readers_accept_json),
        cmocka_unit_test(readers_refuse_the_rest),
        cmocka_unit_test(rules_both_ways),
        cmocka_unit_test(rules_worst_case),
        cmocka_unit_test(rules_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
