/* test_basics.c - the first rules: a mutex, its queue, priorities, tokens. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static void mutex_queue_and_priority(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 1, "id=a m:deploy");
    t_claim(eng, 2, "id=b m:deploy");
    t_claim(eng, 3, "id=c m:deploy prio=5");
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    assert_int_equal(t_position(eng, "c", 0), 1);
    assert_int_equal(t_position(eng, "b", 0), 2);
    assert_string_equal(t_events(eng), "claim.queued:a claim.acquired:a claim.queued:b "
                                       "claim.waiting:b claim.queued:c claim.waiting:c");
    t_release(eng, 4, "a");
    assert_int_equal(t_state(eng, "c"), SL_HELD);
    assert_int_equal(t_token(eng, "a", 0), 1);
    assert_int_equal(t_token(eng, "c", 0), 2);
    assert_string_equal(t_events(eng), "claim.released:a claim.acquired:c");
    t_free(eng);
}

static const char *id_of(const sl_claim *c)
{
    static sl_claim_view v;
    if (!c)
        return "-";
    sl_claim_get(c, &v);
    return v.id;
}

/* Every claim newest first, and where a listing resumes by arrival number
 * (the claim it ended on may be gone: only its number is left). */
static void claims_both_ways(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    assert_string_equal(id_of(sl_claim_prev(eng, NULL)), "-");
    assert_string_equal(id_of(sl_claim_before(eng, 5)), "-");
    t_claim(eng, 1, "id=a m:x");
    t_claim(eng, 2, "id=b m:x");
    t_claim(eng, 3, "id=c m:x");
    const sl_claim *c = sl_claim_prev(eng, NULL);
    assert_string_equal(id_of(c), "c");
    assert_string_equal(id_of(c = sl_claim_prev(eng, c)), "b");
    assert_string_equal(id_of(c = sl_claim_prev(eng, c)), "a");
    assert_string_equal(id_of(sl_claim_prev(eng, c)), "-");
    sl_claim_view va, vc;
    sl_claim_get(sl_claim_find(eng, "a"), &va);
    sl_claim_get(sl_claim_find(eng, "c"), &vc);
    assert_string_equal(id_of(sl_claim_before(eng, va.arrival)), "-");
    assert_string_equal(id_of(sl_claim_before(eng, va.arrival + 1)), "a");
    assert_string_equal(id_of(sl_claim_before(eng, vc.arrival)), "b");
    assert_string_equal(id_of(sl_claim_before(eng, vc.arrival + 100)), "c");
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mutex_queue_and_priority),
        cmocka_unit_test(claims_both_ways),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
