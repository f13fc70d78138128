/* test_queue_rules.c - bounded queues (max_pending, on_full) and how far
 * back a claim may set `created` (backdate), per docs/engine.md. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static void bounded_sem(sl_engine *eng, const char *name, uint32_t limit, uint32_t max_pending,
                        sl_on_full on_full)
{
    sl_sem_opts o;
    sl_sem_opts_default(&o, limit);
    o.rules.max_pending = max_pending;
    o.rules.on_full = on_full;
    sl_error err;
    assert_int_equal(sl_sem_configure(eng, name, &o, 0, &err), 0);
}

static void reject_refuses_and_changes_nothing(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    bounded_sem(eng, "q", 1, 2, SL_ON_FULL_REJECT);
    t_claim(eng, 1, "id=h s:q");
    t_claim(eng, 2, "id=w1 s:q");
    t_claim(eng, 3, "id=w2 s:q");
    t_events(eng);
    sl_error err;
    assert_int_equal(t_claim_rc(eng, 4, "id=w3 s:q", &err), SL_EFULL);
    assert_string_equal(err.name, "sem/q");
    assert_int_equal(err.value, 2);
    assert_null(sl_claim_find(eng, "w3"));
    assert_string_equal(t_events(eng), "");
    /* Room again once one leaves. */
    t_release(eng, 5, "w1");
    t_claim(eng, 6, "id=w3 s:q");
    assert_string_equal(t_with_state(eng, SL_PENDING), "w2 w3");
    t_free(eng);
}

static void drop_oldest_supersedes_the_oldest(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    bounded_sem(eng, "q", 1, 2, SL_ON_FULL_DROP_OLDEST);
    t_claim(eng, 1, "id=h s:q");
    t_claim(eng, 2, "id=w1 s:q prio=5");
    t_claim(eng, 3, "id=w2 s:q");
    t_events(eng);
    t_claim(eng, 4, "id=w3 s:q");
    /* Oldest by created and arrival, whatever its priority. */
    assert_int_equal(t_state(eng, "w1"), SL_SUPERSEDED);
    sl_claim_view v = t_view(eng, "w1");
    assert_int_equal(v.reason, SL_REASON_QUEUE_FULL);
    assert_string_equal(v.by, "w3");
    assert_int_equal(v.ended_ms, 4);
    assert_string_equal(t_with_state(eng, SL_PENDING), "w2 w3");
    assert_string_equal(t_events(eng),
                        "claim.queued:w3 claim.superseded:w1 claim.waiting:w3");
    t_free(eng);
}

static void a_claim_granted_at_once_still_counts_the_queue(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    /* max_pending bounds the waiters a claim finds when it comes. */
    bounded_sem(eng, "q", 2, 1, SL_ON_FULL_REJECT);
    t_claim(eng, 1, "id=a s:q*2");
    t_claim(eng, 2, "id=b s:q");
    assert_int_equal(t_claim_rc(eng, 3, "id=c s:q", NULL), SL_EFULL);
    t_release(eng, 4, "a");
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    t_claim(eng, 5, "id=c s:q");
    assert_int_equal(t_state(eng, "c"), SL_HELD);
    t_free(eng);
}

static void cancel_pending_group_is_not_full(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    bounded_sem(eng, "group/*", 1, 1, SL_ON_FULL_REJECT);
    t_claim(eng, 1, "id=a group=pr");
    t_claim(eng, 2, "id=b group=pr");
    /* c supersedes b in its group, so the group's queue has room. */
    t_claim(eng, 3, "id=c group=pr cancel=pending");
    assert_int_equal(t_state(eng, "b"), SL_SUPERSEDED);
    assert_int_equal(t_state(eng, "c"), SL_PENDING);
    /* Without cancel it is full. */
    assert_int_equal(t_claim_rc(eng, 4, "id=d group=pr", NULL), SL_EFULL);
    t_free(eng);
}

static void bad_rules_are_refused(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_sem_opts o;
    sl_error err;
    sl_sem_opts_default(&o, 1);
    o.rules.on_full = (sl_on_full)7;
    assert_int_equal(sl_sem_configure(eng, "x", &o, 0, &err), SL_EINVAL);
    assert_string_equal(err.field, "on_full");
    sl_sem_opts_default(&o, 1);
    o.rules.default_weight = 2; /* strict */
    assert_int_equal(sl_sem_configure(eng, "x", &o, 0, &err), SL_EINVAL);
    assert_string_equal(err.field, "weights");
    sl_sem_opts_default(&o, 1);
    o.rules.rate_count = 5;
    assert_int_equal(sl_sem_configure(eng, "x", &o, 0, &err), SL_EINVAL);
    assert_string_equal(err.field, "rate");
    sl_sem_opts_default(&o, 1);
    o.rules.backdate_ms = -1;
    assert_int_equal(sl_sem_configure(eng, "x", &o, 0, &err), SL_EINVAL);
    assert_string_equal(err.field, "backdate");
    t_free(eng);
}

static void backdate_beyond_the_skew_is_refused(void **state)
{
    (void)state;
    sl_engine *eng = t_engine(); /* skew 5 s */
    int64_t now = 1000000;
    sl_error err;
    t_claim(eng, now, "id=skewed m:x created=995000");
    assert_int_equal(t_claim_rc(eng, now, "id=early m:x created=994999", &err), SL_EBACKDATE);
    assert_string_equal(err.field, "created");
    assert_int_equal(err.value, 5001);
    assert_int_equal(err.asked, 5000);
    /* The future is the back of the line: always allowed. */
    t_claim(eng, now, "id=later m:x created=2000000");
    t_free(eng);
}

static void backdate_allowed_by_every_lock(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_sem_opts o;
    sl_sem_opts_default(&o, 1);
    o.rules.backdate_ms = 3600000;
    sl_error err;
    assert_int_equal(sl_sem_configure(eng, "ordered", &o, 0, &err), 0);
    t_sem(eng, 0, "plain", 1, SL_STRICT);
    int64_t now = 10000000;
    t_claim(eng, now, "id=a s:ordered created=6400000");
    assert_int_equal(t_claim_rc(eng, now, "id=b s:ordered created=6399999", &err),
                     SL_EBACKDATE);
    assert_int_equal(err.asked, 3600000);
    /* A lock that allows none (a mutex, a plain semaphore) holds it to the skew. */
    assert_int_equal(t_claim_rc(eng, now, "id=c s:ordered m:x created=7000000", &err),
                     SL_EBACKDATE);
    assert_int_equal(err.asked, 5000);
    assert_int_equal(t_claim_rc(eng, now, "id=d s:ordered s:plain created=7000000", NULL),
                     SL_EBACKDATE);
    t_free(eng);
}

static void backdate_any_for_the_embedders_admin(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_lock_req lr = {SL_KIND_MUTEX, "x", 1, 0};
    sl_claim_req req = {.id = "adm", .holder = "adm", .locks = &lr, .nlocks = 1,
                        .grace_ms = -1, .lease_ms = -1, .has_created = true, .created_ms = 0,
                        .backdate_any = true};
    sl_claim *c;
    sl_error err;
    assert_int_equal(sl_claim_create(eng, &req, 100000000, &c, &err), 0);
    req.id = "plain";
    req.backdate_any = false;
    assert_int_equal(sl_claim_create(eng, &req, 100000000, &c, &err), SL_EBACKDATE);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(reject_refuses_and_changes_nothing),
        cmocka_unit_test(drop_oldest_supersedes_the_oldest),
        cmocka_unit_test(a_claim_granted_at_once_still_counts_the_queue),
        cmocka_unit_test(cancel_pending_group_is_not_full),
        cmocka_unit_test(bad_rules_are_refused),
        cmocka_unit_test(backdate_beyond_the_skew_is_refused),
        cmocka_unit_test(backdate_allowed_by_every_lock),
        cmocka_unit_test(backdate_any_for_the_embedders_admin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
