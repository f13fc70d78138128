/* test_inline.c - inline limits and several groups per claim (claim.c,
 * group.c), per docs/engine.md. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

/* A claim on one semaphore with an inline limit. */
static int inline_claim(sl_engine *eng, int64_t now, const char *id, const char *sem,
                        uint32_t limit, sl_error *err)
{
    sl_lock_req lr = {SL_KIND_SEMAPHORE, sem, 1, limit};
    sl_claim_req req = {.id = id, .holder = id, .locks = &lr, .nlocks = 1, .grace_ms = -1,
                        .lease_ms = -1};
    sl_claim *c;
    return sl_claim_create(eng, &req, now, &c, err);
}

static void per_run_limit_of_four_leaves_nothing(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    char id[16];
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "s%02d", i);
        assert_int_equal(inline_claim(eng, i, id, "run-42/steps", 4, NULL), 0);
    }
    sl_lock_view v;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, "run-42/steps", &v, NULL), 0);
    assert_int_equal(v.limit, 4);
    assert_int_equal(v.inline_limit, 4);
    assert_false(v.configured);
    assert_int_equal(v.nholders, 4);
    assert_int_equal(v.npending, 16);
    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, t_find(eng, "s00"), 0, &lv);
    assert_int_equal(lv.inline_limit, 4);
    /* Each step ends in turn; never more than 4 at once. */
    for (int i = 0; i < 20; i++) {
        snprintf(id, sizeof(id), "s%02d", i);
        assert_int_equal(t_state(eng, id), SL_HELD);
        assert_true(t_used(eng, SL_KIND_SEMAPHORE, "run-42/steps") <= 4);
        t_release(eng, 100 + i, id);
    }
    /* Nothing left behind. */
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, "run-42/steps", &v, NULL),
                     SL_ENOTFOUND);
    /* And a new run may make it again with another limit. */
    assert_int_equal(inline_claim(eng, 200, "n", "run-42/steps", 2, NULL), 0);
    t_free(eng);
}

static void conflicting_inline_limits_are_refused(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_error err;
    assert_int_equal(inline_claim(eng, 0, "a", "r/s", 4, NULL), 0);
    assert_int_equal(inline_claim(eng, 1, "b", "r/s", 5, &err), SL_EINLINE);
    assert_int_equal(err.value, 4);
    assert_int_equal(err.asked, 5);
    assert_string_equal(err.name, "r/s");
    /* Without a limit it is unknown even while it lives (S8): a claim that
     * forgot its limit must not work only while others run. The error
     * carries the live limit for the mend. */
    assert_int_equal(t_claim_rc(eng, 2, "id=c s:r/s", &err), SL_EUNKNOWN);
    assert_int_equal(err.value, 4);
    assert_string_equal(err.name, "r/s");
    /* A configured semaphore's limit must match. */
    t_sem(eng, 3, "conf", 3, SL_STRICT);
    assert_int_equal(inline_claim(eng, 4, "d", "conf", 4, &err), SL_EINLINE);
    assert_int_equal(err.value, 3);
    assert_int_equal(inline_claim(eng, 5, "e", "conf", 3, NULL), 0);
    /* On a mutex there is no limit to give. */
    sl_lock_req lr = {SL_KIND_MUTEX, "m", 1, 2};
    sl_claim_req req = {.id = "f", .holder = "f", .locks = &lr, .nlocks = 1, .grace_ms = -1,
                        .lease_ms = -1};
    sl_claim *c;
    assert_int_equal(sl_claim_create(eng, &req, 6, &c, &err), SL_EINVAL);
    t_free(eng);
}

static void inline_limit_survives_a_restore(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_claim_lock_rec lock = {SL_KIND_SEMAPHORE, "r/s", 1, SL_VIA_LOCK, 1, 2, SL_CANCEL_NONE};
    sl_claim_rec rec;
    memset(&rec, 0, sizeof(rec));
    rec.v.id = "h";
    rec.v.holder = "h";
    rec.v.state = SL_HELD;
    rec.v.nlocks = 1;
    rec.v.granted_ms = 0;
    rec.v.grant_seq = 1;
    rec.v.revoke_at_ms = rec.v.ended_ms = -1;
    rec.locks = &lock;
    sl_error err;
    assert_int_equal(sl_engine_restore_claim(eng, &rec, &err), 0);
    sl_engine_restore_done(eng, 10);
    sl_lock_view v;
    assert_int_equal(sl_lock_lookup(eng, SL_KIND_SEMAPHORE, "r/s", &v, NULL), 0);
    assert_int_equal(v.limit, 2);
    assert_int_equal(inline_claim(eng, 11, "x", "r/s", 3, NULL), SL_EINLINE);
    t_free(eng);
}

/* TEP-0120: cancel all but the last run per pull request, and only allow
 * 5 CI runs per repository. */
static void two_groups_each_with_its_rule(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "group/repo-*", 5, SL_STRICT);
    sl_group_req g1[] = {{"pr-12", SL_CANCEL_IN_PROGRESS}, {"repo-x", SL_CANCEL_NONE}};
    sl_claim_req req = {.id = "run1", .holder = "run1", .groups = g1, .ngroups = 2,
                        .grace_ms = 0, .lease_ms = -1};
    sl_claim *c;
    sl_error err;
    assert_int_equal(sl_claim_create(eng, &req, 1, &c, &err), 0);
    assert_int_equal(t_state(eng, "run1"), SL_HELD);
    sl_claim_view v = t_view(eng, "run1");
    assert_string_equal(v.group, "pr-12");
    assert_int_equal(v.cancel, SL_CANCEL_IN_PROGRESS);
    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, c, 1, &lv);
    assert_string_equal(lv.key, "sem/group/repo-x");
    assert_int_equal(lv.cancel, SL_CANCEL_NONE);
    /* Other pull requests of the repository: 4 more fit, the 6th waits. */
    char id[16], pr[16];
    for (int i = 0; i < 5; i++) {
        snprintf(id, sizeof(id), "o%d", i);
        snprintf(pr, sizeof(pr), "pr-%d", 100 + i);
        sl_group_req g[] = {{pr, SL_CANCEL_IN_PROGRESS}, {"repo-x", SL_CANCEL_NONE}};
        req.id = req.holder = id;
        req.groups = g;
        assert_int_equal(sl_claim_create(eng, &req, 2 + i, &c, &err), 0);
    }
    assert_string_equal(t_with_state(eng, SL_HELD), "run1 o0 o1 o2 o3");
    assert_int_equal(t_state(eng, "o4"), SL_PENDING);
    /* A new run of PR 12 revokes the old one (grace 0), whose slot in the
     * repository goes to the waiting run; the new run waits its turn. */
    req.id = req.holder = "run2";
    req.groups = g1;
    assert_int_equal(sl_claim_create(eng, &req, 10, &c, &err), 0);
    assert_int_equal(t_state(eng, "run1"), SL_CANCELED);
    assert_string_equal(t_view(eng, "run1").by, "run2");
    assert_int_equal(t_state(eng, "o4"), SL_HELD);
    assert_int_equal(t_state(eng, "run2"), SL_PENDING);
    t_free(eng);
}

/* The request with its second group renamed. */
static int with_second(sl_engine *eng, const sl_claim_req *req, sl_group_req *g,
                       const char *name, sl_error *err)
{
    g[1].name = name;
    sl_claim *c;
    return sl_claim_create(eng, req, 1, &c, err);
}

static void groups_are_bounded_and_checked(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_group_req g[9];
    char names[9][8];
    for (int i = 0; i < 9; i++) {
        snprintf(names[i], sizeof(names[i]), "g%d", i);
        g[i] = (sl_group_req){names[i], SL_CANCEL_NONE};
    }
    sl_claim_req req = {.id = "a", .holder = "a", .groups = g, .ngroups = 9, .grace_ms = -1,
                        .lease_ms = -1};
    sl_claim *c;
    sl_error err;
    assert_int_equal(sl_claim_create(eng, &req, 1, &c, &err), SL_EINVAL);
    assert_string_equal(err.field, "groups");
    req.ngroups = 2;
    assert_int_equal(with_second(eng, &req, g, "g0", &err), SL_EINVAL); /* twice */
    assert_int_equal(with_second(eng, &req, g, "bad//name", &err), SL_EINVAL);
    assert_string_equal(err.field, "groups[1]");
    /* group plus groups: 8 in all. */
    req.group = "first";
    req.ngroups = 8;
    assert_int_equal(with_second(eng, &req, g, names[1], &err), SL_EINVAL);
    req.ngroups = 7;
    assert_int_equal(sl_claim_create(eng, &req, 1, &c, &err), 0);
    assert_string_equal(t_view(eng, "a").group, "first");
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(per_run_limit_of_four_leaves_nothing),
        cmocka_unit_test(conflicting_inline_limits_are_refused),
        cmocka_unit_test(inline_limit_survives_a_restore),
        cmocka_unit_test(two_groups_each_with_its_rule),
        cmocka_unit_test(groups_are_bounded_and_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
