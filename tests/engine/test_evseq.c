/* test_evseq.c - the seqs of each claim's events (evseq.c), which a read of
 * one claim's events goes to instead of walking the log in between. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "support.h"

static uint64_t seqs[SL_CLAIM_SEQS_MAX + 8];

/* The seqs of the batch's events of claim id. */
static size_t batch_seqs(sl_engine *eng, const char *id, uint64_t *out)
{
    size_t n = 0;
    for (size_t i = 0; i < t_nevents(eng); i++) {
        sl_event ev = t_event_at(eng, i);
        if (ev.claim && strcmp(t_id(ev.claim), id) == 0)
            out[n++] = ev.seq;
    }
    return n;
}

static void a_claim_lists_its_events_and_no_other(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    bool more = true;
    t_claim(eng, 1, "id=a m:x");
    t_claim(eng, 2, "id=b m:x");
    t_claim(eng, 3, "id=c m:y");
    assert_int_equal(sl_claim_renew(eng, t_find(eng, "a"), 4), 0);
    t_release(eng, 5, "a");
    uint64_t want[8];
    size_t n = batch_seqs(eng, "b", want);
    assert_int_equal(n, 3); /* queued, waiting, acquired */
    assert_int_equal(sl_claim_event_seqs(t_find(eng, "b"), seqs, 8, &more), n);
    assert_memory_equal(seqs, want, n * sizeof(uint64_t));
    assert_false(more);
    n = batch_seqs(eng, "a", want);
    assert_int_equal(n, 4); /* queued, acquired, renewed, released */
    assert_int_equal(sl_claim_event_seqs(t_find(eng, "a"), seqs, 8, &more), n);
    assert_memory_equal(seqs, want, n * sizeof(uint64_t));
    /* Across batches: the list lives with the claim. */
    sl_engine_changes_clear(eng);
    t_release(eng, 6, "b");
    assert_int_equal(sl_claim_event_seqs(t_find(eng, "b"), seqs, 8, &more), 4);
    assert_int_equal(seqs[3], t_event_at(eng, 0).seq);
    /* Asked for fewer than it has: more follow. */
    assert_int_equal(sl_claim_event_seqs(t_find(eng, "b"), seqs, 2, &more), 2);
    assert_true(more);
    t_free(eng);
}

static void past_the_cap_nothing_more_is_noted(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    bool more = false;
    sl_claim *c = t_claim(eng, 1, "id=a m:x");
    for (int i = 0; i < SL_CLAIM_SEQS_MAX + 5; i++)
        assert_int_equal(sl_claim_renew(eng, c, 2 + i), 0);
    assert_int_equal(sl_claim_event_seqs(c, seqs, SL_CLAIM_SEQS_MAX + 8, &more),
                     SL_CLAIM_SEQS_MAX);
    assert_true(more);
    for (size_t i = 0; i < SL_CLAIM_SEQS_MAX; i++)
        assert_int_equal(seqs[i], t_event_at(eng, i).seq);
    t_free(eng);
}

/* A restored claim gets its older seqs from the embedder after its new
 * ones: they go in order. */
static void older_seqs_noted_later_go_in_order(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    bool more = true;
    sl_claim *c = t_claim(eng, 1, "id=a m:x");
    uint64_t first = t_event_at(eng, 0).seq;
    sl_claim_note_event(eng, c, first);          /* known already */
    sl_claim_note_event(eng, c, first + 1000);   /* in between later ones: none */
    assert_int_equal(sl_claim_event_seqs(c, seqs, 8, &more), 3);
    assert_false(more);
    assert_int_equal(seqs[2], first + 1000);

    sl_claim *d = t_claim(eng, 2, "id=d m:y");
    uint64_t base = 5000000000ull; /* offsets are 32-bit: */
    sl_claim_note_event(eng, d, base); /* 2^32 past its first: not noted */
    sl_claim_note_event(eng, d, 1);
    assert_int_equal(sl_claim_event_seqs(d, seqs, 8, &more), 3);
    assert_true(more);
    assert_int_equal(seqs[0], 1);
    assert_int_equal(seqs[2], t_event_at(eng, 3).seq);
    t_free(eng);
}

static void a_full_list_keeps_the_oldest(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    bool more = false;
    sl_claim *c = t_claim(eng, 1, "id=a m:x");
    uint64_t first = t_event_at(eng, 0).seq + 10; /* as if restored */
    sl_claim_note_event(eng, c, first);
    for (uint64_t i = 1; i < SL_CLAIM_SEQS_MAX; i++)
        sl_claim_note_event(eng, c, first + 2 * i);
    /* Full: an older seq goes in and the newest goes out. */
    sl_claim_note_event(eng, c, first + 1);
    assert_int_equal(sl_claim_event_seqs(c, seqs, SL_CLAIM_SEQS_MAX, &more), SL_CLAIM_SEQS_MAX);
    assert_true(more);
    assert_int_equal(seqs[0], first - 10);
    assert_int_equal(seqs[1], first - 9);
    assert_int_equal(seqs[2], first);
    assert_int_equal(seqs[3], first + 1);
    assert_int_equal(seqs[4], first + 2);
    assert_int_equal(seqs[SL_CLAIM_SEQS_MAX - 1], first + 2 * (SL_CLAIM_SEQS_MAX - 4));
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_claim_lists_its_events_and_no_other),
        cmocka_unit_test(past_the_cap_nothing_more_is_noted),
        cmocka_unit_test(older_seqs_noted_later_go_in_order),
        cmocka_unit_test(a_full_list_keeps_the_oldest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
