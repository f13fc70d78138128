/* test_idem.c - idempotency keys (idem.c): a claim found again by the key
 * its creator gave, while it is kept; a key in use refused; the key gone
 * with the claim's purge; kept across a restore. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static void found_by_key_while_kept(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.ended_retention_ms = 1000;
    sl_engine *eng = t_engine_opts(&opts);
    t_claim(eng, 0, "id=a m:x idem=tok\nk1 fp=7");
    t_claim(eng, 0, "id=b m:x");
    sl_claim *a = sl_claim_find_idem(eng, "tok\nk1");
    assert_ptr_equal(a, t_find(eng, "a"));
    sl_claim_view v = t_view(eng, "a");
    assert_string_equal(v.idem, "tok\nk1");
    assert_int_equal(v.idem_fp, 7);
    assert_null(t_view(eng, "b").idem);
    assert_null(sl_claim_find_idem(eng, "tok\nk2"));
    assert_null(sl_claim_find_idem(eng, NULL));

    /* The key is one claim's: another claim with it is refused, and
     * nothing changes. */
    t_events(eng);
    sl_error err;
    assert_int_equal(t_claim_rc(eng, 1, "id=c m:y idem=tok\nk1", &err), SL_ECONFLICT);
    assert_string_equal(err.field, "idem");
    assert_null(sl_claim_find(eng, "c"));
    assert_string_equal(t_events(eng), "");
    assert_int_equal(t_claim_rc(eng, 1, "id=c m:y idem=", &err), SL_EINVAL);

    /* Ended, it is still found for the retention; purged, it is gone and
     * the key is free again. */
    t_release(eng, 10, "a");
    assert_ptr_equal(sl_claim_find_idem(eng, "tok\nk1"), t_find(eng, "a"));
    sl_engine_advance(eng, 1010);
    assert_null(sl_claim_find(eng, "a"));
    assert_null(sl_claim_find_idem(eng, "tok\nk1"));
    t_claim(eng, 1020, "id=d m:x idem=tok\nk1");
    assert_ptr_equal(sl_claim_find_idem(eng, "tok\nk1"), t_find(eng, "d"));
    t_free(eng); /* every block back: keys included */
}

/* An ended claim's key may be taken off it for a new claim; a live one's
 * may not (a retry would then double it). */
static void dropped_from_an_ended_claim(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_claim(eng, 0, "id=a m:x idem=k");
    assert_int_equal(sl_claim_drop_idem(eng, t_find(eng, "a")), SL_ECONFLICT);
    assert_ptr_equal(sl_claim_find_idem(eng, "k"), t_find(eng, "a"));
    t_release(eng, 1, "a");
    t_events(eng);
    sl_engine_changes_clear(eng);
    assert_int_equal(sl_claim_drop_idem(eng, t_find(eng, "a")), 0);
    assert_null(sl_claim_find_idem(eng, "k"));
    assert_null(t_view(eng, "a").idem);
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.nclaims, 1); /* the store learns the claim lost its key */
    t_claim(eng, 2, "id=b m:x idem=k");
    assert_ptr_equal(sl_claim_find_idem(eng, "k"), t_find(eng, "b"));
    assert_int_equal(sl_claim_drop_idem(eng, t_find(eng, "a")), 0); /* again: nothing */
    t_free(eng);
}

static void kept_across_a_restore(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_engine_restore_counters(eng, 1, 2, 1, 0);
    sl_claim_lock_rec lock = {SL_KIND_MUTEX, "x", 1, SL_VIA_LOCK, 0, 0, 0};
    sl_claim_rec rec;
    memset(&rec, 0, sizeof(rec));
    rec.v.id = "a";
    rec.v.holder = "h";
    rec.v.state = SL_PENDING;
    rec.v.arrival = 1;
    rec.v.grace_ms = 30000;
    rec.v.granted_ms = rec.v.revoke_at_ms = rec.v.ended_ms = -1;
    rec.v.nlocks = 1;
    rec.v.idem = "k";
    rec.v.idem_fp = 99;
    rec.locks = &lock;
    sl_error err;
    assert_int_equal(sl_engine_restore_claim(eng, &rec, &err), 0);
    /* A second record with the same key is damage: refused. */
    rec.v.id = "b";
    rec.v.arrival = 2;
    assert_int_equal(sl_engine_restore_claim(eng, &rec, &err), SL_EINVAL);
    sl_engine_restore_done(eng, 100);
    sl_claim *a = sl_claim_find_idem(eng, "k");
    assert_ptr_equal(a, t_find(eng, "a"));
    assert_int_equal(t_view(eng, "a").idem_fp, 99);
    assert_int_equal(t_state(eng, "a"), SL_HELD);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(found_by_key_while_kept),
        cmocka_unit_test(dropped_from_an_ended_claim),
        cmocka_unit_test(kept_across_a_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
