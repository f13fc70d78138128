/* test_preempt.c - priority preemption (preempt.c), per docs/engine.md.
 *
 * The waiter at the head of a preempting lock's line that cannot fit
 * revokes holders of strictly lower priority (lowest first, then the most
 * recently granted, and no more than it needs); they keep preempt_grace,
 * then end canceled with reason preempted. Times are exact. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static const sl_why *why_on(sl_engine *eng, const char *id, size_t lock)
{
    static sl_why w[8];
    assert_true(sl_claim_why(eng, t_find(eng, id), w, 8) > lock);
    return &w[lock];
}

static void urgent_deploy_preempts_batch_job(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "runners", 2, SL_STRICT, 1000);
    t_claim(eng, 10, "id=batch1 s:runners prio=0");
    t_claim(eng, 20, "id=batch2 s:runners prio=0");
    t_events(eng);
    t_claim(eng, 100, "id=deploy s:runners prio=10");
    /* One slot is enough: the most recently granted of the lowest goes. */
    assert_int_equal(t_state(eng, "batch2"), SL_REVOKING);
    assert_int_equal(t_state(eng, "batch1"), SL_HELD);
    assert_int_equal(t_state(eng, "deploy"), SL_PENDING);
    sl_claim_view v = t_view(eng, "batch2");
    assert_int_equal(v.reason, SL_REASON_PREEMPTED);
    assert_string_equal(v.by, t_id(t_find(eng, "deploy")));
    assert_int_equal(v.revoke_at_ms, 1100);
    const sl_why *w = why_on(eng, "deploy", 0);
    assert_int_equal(w->preempt, SL_PREEMPT_WAITING);
    assert_int_equal(w->npreempt, 1);
    assert_string_equal(t_events(eng), "claim.queued:deploy claim.revoking:batch2 "
                                       "claim.waiting:deploy");
    /* Grace runs out at 1100 exactly. */
    sl_engine_advance(eng, 1099);
    assert_int_equal(t_state(eng, "batch2"), SL_REVOKING);
    sl_engine_advance(eng, 1100);
    assert_int_equal(t_state(eng, "batch2"), SL_CANCELED);
    assert_int_equal(t_view(eng, "batch2").reason, SL_REASON_PREEMPTED);
    assert_int_equal(t_state(eng, "deploy"), SL_HELD);
    assert_int_equal(t_view(eng, "deploy").granted_ms, 1100);
    /* Never a cascade: the preempted claim is not queued again. */
    assert_string_equal(t_with_state(eng, SL_PENDING), "");
    t_free(eng);
}

static void released_in_grace_frees_at_once(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "r", 1, SL_STRICT, 5000);
    t_claim(eng, 10, "id=low s:r prio=-1");
    t_claim(eng, 20, "id=high s:r prio=1");
    assert_int_equal(t_state(eng, "low"), SL_REVOKING);
    t_release(eng, 30, "low");
    assert_int_equal(t_state(eng, "low"), SL_CANCELED);
    assert_int_equal(t_view(eng, "low").reason, SL_REASON_PREEMPTED);
    assert_int_equal(t_state(eng, "high"), SL_HELD);
    assert_int_equal(t_view(eng, "high").granted_ms, 30);
    t_free(eng);
}

static void zero_grace_grants_in_the_same_call(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "r", 1, SL_STRICT, 0);
    t_claim(eng, 10, "id=low s:r");
    t_events(eng);
    t_claim(eng, 20, "id=high s:r prio=5");
    assert_int_equal(t_state(eng, "low"), SL_CANCELED);
    assert_int_equal(t_state(eng, "high"), SL_HELD);
    assert_string_equal(t_events(eng),
                        "claim.queued:high claim.canceled:low claim.acquired:high");
    t_free(eng);
}

static void only_strictly_lower_priority(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "r", 2, SL_STRICT, 1000);
    t_claim(eng, 10, "id=a s:r prio=5");
    t_claim(eng, 20, "id=b s:r prio=3");
    t_claim(eng, 30, "id=c s:r*2 prio=5");
    /* b alone is below 5, and one slot is not the two c needs. */
    assert_string_equal(t_with_state(eng, SL_HELD), "a b");
    const sl_why *w = why_on(eng, "c", 0);
    assert_int_equal(w->preempt, SL_PREEMPT_TOO_FEW);
    /* An equal priority never preempts. */
    t_claim(eng, 40, "id=d s:r prio=3");
    assert_string_equal(t_with_state(eng, SL_HELD), "a b");
    t_free(eng);
}

static void fewest_lowest_most_recent(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "r", 6, SL_STRICT, 1000);
    t_claim(eng, 10, "id=old1 s:r prio=1");
    t_claim(eng, 20, "id=big s:r*3 prio=2");
    t_claim(eng, 30, "id=new1 s:r prio=1");
    t_claim(eng, 40, "id=new0 s:r prio=0");
    t_claim(eng, 50, "id=urgent s:r*3 prio=3");
    /* Lowest priority first, the most recent among equals: new0, new1 and
     * old1 cover the 3 slots, and big (priority 2) is spared although it
     * alone would do: priority comes before the number revoked. */
    assert_string_equal(t_with_state(eng, SL_REVOKING), "old1 new1 new0");
    assert_int_equal(t_state(eng, "big"), SL_HELD);
    t_free(eng);
}

static void minimal_set_drops_unneeded(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "r", 4, SL_STRICT, 1000);
    t_claim(eng, 10, "id=wide s:r*3 prio=1");
    t_claim(eng, 20, "id=thin s:r prio=0");
    t_claim(eng, 30, "id=u s:r*3 prio=5");
    /* thin first (lowest) gives 1, wide then gives 3: with wide alone
     * enough, thin is left alone. */
    assert_string_equal(t_with_state(eng, SL_REVOKING), "wide");
    assert_int_equal(t_state(eng, "thin"), SL_HELD);
    t_free(eng);
}

static void only_the_head_preempts(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "r", 1, SL_STRICT, 1000);
    t_claim(eng, 10, "id=low s:r prio=0");
    t_claim(eng, 20, "id=mid s:r prio=5");
    t_claim(eng, 30, "id=also s:r prio=5");
    assert_int_equal(t_state(eng, "low"), SL_REVOKING);
    const sl_why *w = why_on(eng, "also", 0);
    assert_int_equal(w->preempt, SL_PREEMPT_NOT_HEAD);
    sl_engine_advance(eng, 1020);
    assert_int_equal(t_state(eng, "mid"), SL_HELD);
    /* also (prio 5) is now the head, but mid is not below it: with nobody
     * below it, preemption plays no part for it at all. */
    assert_int_equal(t_state(eng, "also"), SL_PENDING);
    assert_int_equal(why_on(eng, "also", 0)->preempt, SL_PREEMPT_NONE);
    t_free(eng);
}

static void no_waste_when_another_lock_blocks(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "r", 1, SL_STRICT, 1000);
    t_claim(eng, 10, "id=low s:r");
    t_claim(eng, 20, "id=m m:x");
    t_claim(eng, 30, "id=u s:r m:x prio=9");
    /* x is held by m: revoking low would gain nothing yet. */
    assert_int_equal(t_state(eng, "low"), SL_HELD);
    assert_int_equal(why_on(eng, "u", 0)->preempt, SL_PREEMPT_WILL);
    assert_int_equal(why_on(eng, "u", 0)->npreempt, 1);
    t_release(eng, 40, "m");
    assert_int_equal(t_state(eng, "low"), SL_REVOKING);
    sl_engine_advance(eng, 1040);
    assert_int_equal(t_state(eng, "u"), SL_HELD);
    t_free(eng);
}

static void skip_keeps_the_freed_slots_for_the_preemptor(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "r", 2, SL_SKIP, 1000);
    t_claim(eng, 10, "id=a s:r");
    t_claim(eng, 20, "id=b s:r");
    t_claim(eng, 30, "id=u s:r*2 prio=9");
    assert_string_equal(t_with_state(eng, SL_REVOKING), "a b");
    t_release(eng, 40, "b");
    /* One slot is free, but it is kept for u: a small claim waits. */
    t_claim(eng, 50, "id=small s:r");
    assert_int_equal(t_state(eng, "small"), SL_PENDING);
    t_release(eng, 60, "a");
    assert_int_equal(t_state(eng, "u"), SL_HELD);
    t_free(eng);
}

static void rebalanced_cannot_preempt(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_sem_opts o;
    sl_sem_opts_default(&o, 2);
    o.strategy = SL_REBALANCED;
    o.rules.preempt = true;
    sl_error err;
    assert_int_equal(sl_sem_configure(eng, "r", &o, 0, &err), SL_EINVAL);
    assert_string_equal(err.field, "preempt");
    t_free(eng);
}

static void mutex_claims_on_other_locks_are_not_victims(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "plain", 1, SL_STRICT);
    t_claim(eng, 10, "id=low s:plain");
    t_claim(eng, 20, "id=u s:plain prio=9");
    /* A lock without preempt: nobody is revoked, and why says nothing. */
    assert_int_equal(t_state(eng, "low"), SL_HELD);
    assert_int_equal(why_on(eng, "u", 0)->preempt, SL_PREEMPT_NONE);
    t_free(eng);
}

/* S4: a preempting lock with a rate. The holder is revoked only when the
 * urgent claim can then be granted: with the token, not an hour before it
 * (the slot idled that hour). Meanwhile its why says rate, and when. */
static void preempts_only_with_a_token(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    sl_sem_opts o;
    sl_sem_opts_default(&o, 1);
    o.rules.preempt = true;
    o.rules.preempt_grace_ms = 0;
    o.rules.rate_count = 1;
    o.rules.rate_period_ms = 3600000;
    o.rules.rate_burst = 1;
    sl_error err;
    assert_int_equal(sl_sem_configure(eng, "deployer", &o, 0, &err), 0);
    t_claim(eng, 10, "id=low s:deployer");
    t_claim(eng, 20, "id=urgent s:deployer prio=10");
    assert_int_equal(t_state(eng, "low"), SL_HELD);
    const sl_why *w = why_on(eng, "urgent", 0);
    assert_int_equal(w->rule, SL_RULE_RATE);
    assert_int_equal(w->admit_ms, 3600010);
    assert_int_equal(w->preempt, SL_PREEMPT_WILL);
    assert_int_equal(w->npreempt, 1);
    sl_engine_advance(eng, 3600009);
    assert_int_equal(t_state(eng, "low"), SL_HELD);
    sl_engine_advance(eng, 3600010);
    assert_int_equal(t_state(eng, "low"), SL_CANCELED);
    assert_int_equal(t_state(eng, "urgent"), SL_HELD);
    assert_int_equal(t_view(eng, "urgent").granted_ms, 3600010);
    t_free(eng);
}

/* S5: the run queue of docs/engine.md, `runs` preempting and a tenant tag
 * limit of 1. The urgent run's tenant slot is held by the very run it would
 * preempt: that revocation frees both, so it preempts. */
static void victim_frees_all_its_locks(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "runs", 1, SL_STRICT, 1000);
    t_sem(eng, 0, "tag/tenant=*", 1, SL_STRICT);
    t_claim(eng, 10, "id=nightly s:runs tag=tenant=acme");
    t_claim(eng, 20, "id=hotfix s:runs tag=tenant=acme prio=10");
    assert_int_equal(t_state(eng, "nightly"), SL_REVOKING);
    assert_int_equal(why_on(eng, "hotfix", 0)->preempt, SL_PREEMPT_WAITING);
    t_claim(eng, 30, "id=globex s:runs tag=tenant=globex prio=10");
    assert_int_equal(why_on(eng, "globex", 0)->preempt, SL_PREEMPT_NOT_HEAD);
    sl_engine_advance(eng, 1020);
    assert_int_equal(t_state(eng, "nightly"), SL_CANCELED);
    assert_int_equal(t_state(eng, "hotfix"), SL_HELD);
    assert_int_equal(t_view(eng, "hotfix").granted_ms, 1020);
    /* Still no waste: a victim that does not hold the other lock frees
     * nothing there. */
    t_claim(eng, 2000, "id=other m:x");
    t_claim(eng, 2010, "id=u2 s:runs m:x prio=20");
    assert_int_equal(t_state(eng, "hotfix"), SL_HELD);
    assert_int_equal(why_on(eng, "u2", 0)->preempt, SL_PREEMPT_WILL);
    t_free(eng);
}

/* S5 with more than one run at a time: of two runs of equal priority, the
 * one holding the urgent run's tenant slot goes, though the other was
 * granted later; one revocation, and the set is still minimal. */
static void victim_that_frees_the_other_lock_first(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "runs", 2, SL_STRICT, 0);
    t_sem(eng, 0, "tag/tenant=*", 1, SL_STRICT);
    t_claim(eng, 10, "id=acme s:runs tag=tenant=acme");
    t_claim(eng, 20, "id=globex s:runs tag=tenant=globex");
    t_claim(eng, 30, "id=hotfix s:runs tag=tenant=acme prio=10");
    assert_int_equal(t_state(eng, "acme"), SL_CANCELED);
    assert_int_equal(t_state(eng, "globex"), SL_HELD);
    assert_int_equal(t_state(eng, "hotfix"), SL_HELD);
    t_free(eng);
}

/* The victim of S5 granted after the urgent claim came: its grant is what
 * makes the preemption possible. */
static void victim_granted_later_is_seen(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "runs", 1, SL_STRICT, 0);
    t_sem(eng, 0, "tag/tenant=*", 1, SL_STRICT);
    t_claim(eng, 10, "id=first s:runs tag=tenant=globex");
    t_claim(eng, 20, "id=mid tag=tenant=acme");
    t_claim(eng, 30, "id=hotfix s:runs tag=tenant=acme prio=10");
    /* first is a victim on runs, but acme's slot is mid's (no victim). */
    assert_int_equal(t_state(eng, "first"), SL_HELD);
    t_release(eng, 40, "mid");
    assert_int_equal(t_state(eng, "first"), SL_CANCELED);
    assert_int_equal(t_state(eng, "hotfix"), SL_HELD);
    t_free(eng);
}

/* S9: preemption words only for a claim with a holder below it. */
static void no_words_without_a_holder_below(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "rc", 2, SL_STRICT, 60000);
    t_claim(eng, 10, "id=a s:rc");
    t_claim(eng, 20, "id=b s:rc");
    t_claim(eng, 30, "id=c s:rc");
    t_claim(eng, 40, "id=urg s:rc prio=5");
    assert_int_equal(t_state(eng, "b"), SL_REVOKING);
    /* c (priority 0) is above no holder: it can never preempt. */
    assert_int_equal(why_on(eng, "c", 0)->preempt, SL_PREEMPT_NONE);
    assert_int_equal(why_on(eng, "urg", 0)->preempt, SL_PREEMPT_WAITING);
    t_free(eng);
}

/* S10: holders revoking for their group's newer claim are not preempted:
 * the why counts them apart, so its words can say which. */
static void group_revoked_holders_are_not_preempted(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_preempt_sem(eng, "gpuc", 2, SL_STRICT, 60000);
    t_claim(eng, 10, "id=C s:gpuc group=g-c1");
    t_claim(eng, 20, "id=D s:gpuc");
    t_claim(eng, 30, "id=B s:gpuc prio=10 group=g-c1 cancel=in-progress grace=5000");
    assert_int_equal(t_state(eng, "C"), SL_REVOKING);
    assert_int_equal(t_view(eng, "C").reason, SL_REASON_REVOKED);
    assert_int_equal(t_state(eng, "D"), SL_HELD);
    const sl_why *w = why_on(eng, "B", 0);
    assert_int_equal(w->preempt, SL_PREEMPT_WAITING);
    assert_int_equal(w->npreempt, 1);
    assert_int_equal(w->npreempted, 0);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(urgent_deploy_preempts_batch_job),
        cmocka_unit_test(released_in_grace_frees_at_once),
        cmocka_unit_test(zero_grace_grants_in_the_same_call),
        cmocka_unit_test(only_strictly_lower_priority),
        cmocka_unit_test(fewest_lowest_most_recent),
        cmocka_unit_test(minimal_set_drops_unneeded),
        cmocka_unit_test(only_the_head_preempts),
        cmocka_unit_test(no_waste_when_another_lock_blocks),
        cmocka_unit_test(skip_keeps_the_freed_slots_for_the_preemptor),
        cmocka_unit_test(rebalanced_cannot_preempt),
        cmocka_unit_test(mutex_claims_on_other_locks_are_not_victims),
        cmocka_unit_test(preempts_only_with_a_token),
        cmocka_unit_test(victim_frees_all_its_locks),
        cmocka_unit_test(victim_granted_later_is_seen),
        cmocka_unit_test(victim_that_frees_the_other_lock_first),
        cmocka_unit_test(no_words_without_a_holder_below),
        cmocka_unit_test(group_revoked_holders_are_not_preempted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
