/* test_bounds.c - what sl_claim_create refuses, and that a refusal changes
 * nothing (claim.c's checks, names.c's sl_name_valid).
 *
 * docs/api.md's bounds: ids of 1 to 64 printable characters, a holder of 1 to 253,
 * lock names of 1 to 253 of A-Z a-z 0-9 . _ - / : = without a leading or
 * trailing '/' or "//", at most 64 locks and 32 tags, tag keys without '=',
 * a group short enough for "group/" + it to be a name, timeout >= 0, cancel
 * one of three values, and the engine's claims_max. Each refusal names the
 * offending field so the server can word a 400. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "support.h"

/* A request the tests bend one field at a time. */
typedef struct breq {
    sl_claim_req req;
    sl_lock_req locks[SL_LOCKS_MAX + 2];
    sl_tag tags[SL_TAGS_MAX + 2];
    char names[SL_LOCKS_MAX + 2][24];
    char keys[SL_TAGS_MAX + 2][24];
} breq;

static void breq_init(breq *b, const char *id)
{
    memset(b, 0, sizeof(*b));
    b->req.id = id;
    b->req.holder = "wf-1";
    b->req.locks = b->locks;
    b->req.nlocks = 1;
    b->req.tags = b->tags;
    b->req.lease_ms = -1;
    b->req.grace_ms = -1;
    b->locks[0].kind = SL_KIND_MUTEX;
    b->locks[0].name = "x";
}

static void breq_many_locks(breq *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(b->names[i], sizeof(b->names[i]), "l%zu", i);
        b->locks[i] = (sl_lock_req){SL_KIND_MUTEX, b->names[i], 0, 0};
    }
    b->req.nlocks = n;
}

static void breq_many_tags(breq *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        snprintf(b->keys[i], sizeof(b->keys[i]), "k%zu", i);
        b->tags[i].key = b->keys[i];
        b->tags[i].value = "v";
    }
    b->req.ntags = n;
}

/* What a refusal must leave untouched. */
typedef struct snap {
    sl_engine_stats st;
    uint64_t next_arrival, next_grant;
} snap;

static snap take(sl_engine *eng)
{
    snap s;
    sl_engine_stats_get(eng, &s.st);
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    s.next_arrival = ch.next_arrival;
    s.next_grant = ch.next_grant;
    return s;
}

/* Creates the request expecting `code` on `field`, and checks that nothing
 * changed: no event, no claim, no lock, no memory, no counter. */
static void refused(sl_engine *eng, const sl_claim_req *req, int code, const char *field)
{
    sl_engine_changes_clear(eng);
    snap before = take(eng);
    sl_error err;
    memset(&err, 0, sizeof(err));
    sl_claim *c = (sl_claim *)&err; /* must be left alone */
    int rc = sl_claim_create(eng, req, 0, &c, &err);
    assert_int_equal(rc, code);
    assert_int_equal(err.code, code);
    assert_non_null(err.what);
    assert_true(strlen(err.what) > 10);
    assert_string_equal(err.field, field);
    assert_ptr_equal(c, (sl_claim *)&err);
    assert_false(sl_engine_changes_pending(eng));
    snap after = take(eng);
    assert_int_equal(after.st.claims, before.st.claims);
    assert_int_equal(after.st.locks, before.st.locks);
    assert_int_equal(after.st.next_seq, before.st.next_seq);
    assert_int_equal(after.st.mem_blocks, before.st.mem_blocks);
    assert_int_equal(after.next_arrival, before.next_arrival);
    assert_int_equal(after.next_grant, before.next_grant);
    if (req->id && *req->id && code != SL_ECONFLICT)
        assert_null(sl_claim_find(eng, req->id));
}

static void accepted(sl_engine *eng, const sl_claim_req *req)
{
    sl_claim *c = NULL;
    sl_error err;
    int rc = sl_claim_create(eng, req, 0, &c, &err);
    if (rc != 0)
        fail_msg("refused: %d %s (%s)", rc, err.what, err.field);
    assert_non_null(c);
}

static char *fill(char *buf, size_t n, char ch)
{
    memset(buf, ch, n);
    buf[n] = '\0';
    return buf;
}

static void claim_ids(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    breq *b = test_malloc(sizeof(*b));
    char id[80];
    breq_init(b, "");
    refused(eng, &b->req, SL_EINVAL, "id");
    b->req.id = NULL;
    refused(eng, &b->req, SL_EINVAL, "id");
    b->req.id = fill(id, SL_ID_MAX + 1, 'i');
    refused(eng, &b->req, SL_EINVAL, "id");
    b->req.id = "a\nb";
    refused(eng, &b->req, SL_EINVAL, "id");
    b->req.id = fill(id, SL_ID_MAX, 'i');
    accepted(eng, &b->req);
    /* Taken: a conflict, not a malformed request. */
    refused(eng, &b->req, SL_ECONFLICT, "id");
    test_free(b);
    t_free(eng);
}

static void holders(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    breq *b = test_malloc(sizeof(*b));
    char holder[300];
    breq_init(b, "c1");
    b->req.holder = "";
    refused(eng, &b->req, SL_EINVAL, "holder");
    b->req.holder = NULL;
    refused(eng, &b->req, SL_EINVAL, "holder");
    b->req.holder = "wf\t1";
    refused(eng, &b->req, SL_EINVAL, "holder");
    b->req.holder = "wf\x7f";
    refused(eng, &b->req, SL_EINVAL, "holder");
    b->req.holder = fill(holder, SL_HOLDER_MAX + 1, 'h');
    refused(eng, &b->req, SL_EINVAL, "holder");
    b->req.holder = fill(holder, SL_HOLDER_MAX, 'h');
    accepted(eng, &b->req);
    /* Printable is enough: spaces and slashes are fine in a holder. */
    breq_init(b, "c2");
    b->req.holder = "team a/wf 1";
    accepted(eng, &b->req);
    test_free(b);
    t_free(eng);
}

static void lock_names(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    breq *b = test_malloc(sizeof(*b));
    char longname[300];
    const char *bad[] = {"a$b", "a b", "/a", "a/", "a//b", "", "a*", "é", "a\n", "a\\b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        breq_init(b, "c1");
        b->locks[0].name = bad[i];
        refused(eng, &b->req, SL_EINVAL, "locks[0]");
    }
    breq_init(b, "c1");
    b->locks[0].name = NULL;
    refused(eng, &b->req, SL_EINVAL, "locks[0]");
    b->locks[0].name = fill(longname, SL_NAME_MAX + 1, 'n');
    refused(eng, &b->req, SL_EINVAL, "locks[0]");
    /* The field names the offending lock, and err.name the name. */
    breq_many_locks(b, 3);
    b->locks[2].name = "bad//name";
    sl_error err;
    sl_claim *c;
    assert_int_equal(sl_claim_create(eng, &b->req, 1, &c, &err), SL_EINVAL);
    assert_string_equal(err.field, "locks[2]");
    assert_string_equal(err.name, "bad//name");
    refused(eng, &b->req, SL_EINVAL, "locks[2]");
    /* The longest name is fine, as are all the allowed characters. */
    breq_init(b, "c1");
    b->locks[0].name = fill(longname, SL_NAME_MAX, 'n');
    accepted(eng, &b->req);
    breq_init(b, "c2");
    b->locks[0].name = "AZaz09._-/:=x";
    accepted(eng, &b->req);
    test_free(b);
    t_free(eng);
}

static void lock_kinds_and_slots(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "pool", 2, SL_STRICT);
    sl_engine_changes_clear(eng);
    breq *b = test_malloc(sizeof(*b));
    breq_init(b, "c1");
    b->locks[0].kind = (sl_kind)7;
    refused(eng, &b->req, SL_EINVAL, "locks[0]");
    breq_init(b, "c1");
    b->locks[0].slots = 2; /* a mutex has one slot */
    refused(eng, &b->req, SL_EINVAL, "locks[0]");
    b->locks[0].kind = SL_KIND_SEMAPHORE;
    b->locks[0].name = "pool";
    b->locks[0].slots = 3; /* more than the limit: could never be granted */
    refused(eng, &b->req, SL_EINVAL, "locks[0]");
    b->locks[0].name = "nowhere";
    refused(eng, &b->req, SL_EUNKNOWN, "locks[0]");
    /* The same lock twice, the second named. */
    breq_many_locks(b, 2);
    b->locks[1].name = "l0";
    refused(eng, &b->req, SL_EINVAL, "locks[1]");
    test_free(b);
    t_free(eng);
}

static void lock_and_tag_counts(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    breq *b = test_malloc(sizeof(*b));
    breq_init(b, "c1");
    breq_many_locks(b, SL_LOCKS_MAX + 1);
    refused(eng, &b->req, SL_EINVAL, "locks");
    breq_init(b, "c1");
    breq_many_tags(b, SL_TAGS_MAX + 1);
    refused(eng, &b->req, SL_EINVAL, "tags");
    /* No lock, tag or group at all. */
    breq_init(b, "c1");
    b->req.nlocks = 0;
    refused(eng, &b->req, SL_EINVAL, "locks");

    breq_init(b, "c1");
    breq_many_locks(b, SL_LOCKS_MAX);
    accepted(eng, &b->req);
    sl_claim_view v;
    sl_claim_get(t_find(eng, "c1"), &v);
    assert_int_equal(v.nlocks, SL_LOCKS_MAX);
    assert_int_equal(v.state, SL_HELD);
    breq_init(b, "c2");
    breq_many_tags(b, SL_TAGS_MAX);
    accepted(eng, &b->req);
    sl_claim_get(t_find(eng, "c2"), &v);
    assert_int_equal(v.ntags, SL_TAGS_MAX);
    test_free(b);
    t_free(eng);
}

static void tags(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    breq *b = test_malloc(sizeof(*b));
    char longv[300];
    breq_init(b, "c1");
    b->req.ntags = 1;
    b->tags[0] = (sl_tag){"k=1", "v"};
    refused(eng, &b->req, SL_EINVAL, "tags[0]");
    b->tags[0] = (sl_tag){"", "v"};
    refused(eng, &b->req, SL_EINVAL, "tags[0]");
    b->tags[0] = (sl_tag){"k", ""};
    refused(eng, &b->req, SL_EINVAL, "tags[0]");
    b->tags[0] = (sl_tag){NULL, "v"};
    refused(eng, &b->req, SL_EINVAL, "tags[0]");
    b->tags[0] = (sl_tag){"k", "a b"};
    refused(eng, &b->req, SL_EINVAL, "tags[0]");
    b->tags[0] = (sl_tag){"k", "a//b"};
    refused(eng, &b->req, SL_EINVAL, "tags[0]");
    /* "tag/k=" + value must be a name: 253 at most. */
    b->tags[0] = (sl_tag){"k", fill(longv, SL_NAME_MAX - 6 + 1, 'v')};
    refused(eng, &b->req, SL_EINVAL, "tags[0]");
    b->req.ntags = 2;
    b->tags[0] = (sl_tag){"env", "prod"};
    b->tags[1] = (sl_tag){"env", "dev"};
    refused(eng, &b->req, SL_EINVAL, "tags[1]");
    b->tags[1] = (sl_tag){"team", "core"};
    b->tags[0] = (sl_tag){"k", fill(longv, SL_NAME_MAX - 6, 'v')};
    accepted(eng, &b->req);
    sl_tag t;
    sl_claim_tag_get(t_find(eng, "c1"), 1, &t);
    assert_string_equal(t.key, "team");
    assert_string_equal(t.value, "core");
    test_free(b);
    t_free(eng);
}

static void groups(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    breq *b = test_malloc(sizeof(*b));
    char group[300];
    breq_init(b, "c1");
    b->req.group = fill(group, SL_NAME_MAX - 6 + 1, 'g'); /* "group/" + 248 */
    refused(eng, &b->req, SL_EINVAL, "group");
    b->req.group = "";
    refused(eng, &b->req, SL_EINVAL, "group");
    b->req.group = "a//b";
    refused(eng, &b->req, SL_EINVAL, "group");
    b->req.group = "repo/pr-12";
    b->req.rebalance_key = "bad\x01key";
    refused(eng, &b->req, SL_EINVAL, "rebalance_key");
    b->req.rebalance_key = NULL;
    b->req.group = fill(group, SL_NAME_MAX - 6, 'g');
    accepted(eng, &b->req);
    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, t_find(eng, "c1"), 1, &lv);
    assert_int_equal(strlen(lv.name), SL_NAME_MAX);
    test_free(b);
    t_free(eng);
}

static void timeouts_and_cancel(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    breq *b = test_malloc(sizeof(*b));
    breq_init(b, "c1");
    b->req.timeout_ms = -1;
    sl_error err;
    sl_claim *c;
    assert_int_equal(sl_claim_create(eng, &b->req, 1, &c, &err), SL_EINVAL);
    assert_int_equal(err.value, -1);
    refused(eng, &b->req, SL_EINVAL, "timeout");
    b->req.timeout_ms = 0;
    b->req.group = "g";
    b->req.cancel = (sl_cancel)3;
    refused(eng, &b->req, SL_EINVAL, "cancel");
    b->req.cancel = (sl_cancel)-1;
    refused(eng, &b->req, SL_EINVAL, "cancel");
    b->req.group = NULL;
    b->req.cancel = SL_CANCEL_PENDING;
    refused(eng, &b->req, SL_EINVAL, "cancel");
    b->req.group = "g";
    accepted(eng, &b->req);
    test_free(b);
    t_free(eng);
}

/* claims_max counts live and retained claims; at the limit a new claim
 * takes the place of the oldest ended claim (purged early, in the batch),
 * and is refused only when the oldest claims are all live. */
static void claims_max_is_enforced(void **state)
{
    (void)state;
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    opts.claims_max = 3;
    opts.ended_retention_ms = 500;
    sl_engine *eng = t_engine_opts(&opts);
    t_claim(eng, 0, "id=a m:x");
    t_claim(eng, 0, "id=b m:x");
    t_claim(eng, 0, "id=c m:y");
    breq *b = test_malloc(sizeof(*b));
    breq_init(b, "d");
    b->locks[0].name = "z";
    sl_engine_changes_clear(eng);
    sl_error err;
    sl_claim *c;
    assert_int_equal(sl_claim_create(eng, &b->req, 0, &c, &err), SL_ELIMIT);
    assert_non_null(err.what);
    assert_int_equal(err.value, 3);
    /* Not any one field's fault. */
    refused(eng, &b->req, SL_ELIMIT, "");
    t_release(eng, 100, "a");
    assert_int_equal(t_state(eng, "b"), SL_HELD);
    sl_engine_changes_clear(eng);
    /* a ended at 100 and would be kept until 600: d takes its place. */
    assert_int_equal(sl_claim_create(eng, &b->req, 200, &c, &err), 0);
    assert_null(sl_claim_find(eng, "a"));
    assert_int_equal(t_state(eng, "d"), SL_HELD);
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_int_equal(ch.npurged, 1);
    assert_string_equal(ch.purged[0], "a");
    sl_engine_changes_clear(eng);
    /* b, c and d are live: refused again, nothing changed. */
    breq_init(b, "e");
    b->locks[0].name = "z2";
    assert_int_equal(sl_claim_create(eng, &b->req, 300, &c, &err), SL_ELIMIT);
    assert_false(sl_engine_changes_pending(eng));
    t_release(eng, 400, "c");
    assert_int_equal(sl_claim_create(eng, &b->req, 400, &c, &err), 0);
    assert_null(sl_claim_find(eng, "c"));
    assert_int_equal(t_state(eng, "e"), SL_HELD);
    test_free(b);
    t_free(eng);
}

/* A refusal after some locks were already looked at (the 3rd of 3 is
 * unknown, a tag lock is bad) still makes no lock and no claim. */
static void late_refusals_change_nothing(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "tag/env=*", 2, SL_STRICT);
    t_sem(eng, 0, "pool", 2, SL_STRICT);
    t_claim(eng, 0, "id=h m:held");
    breq *b = test_malloc(sizeof(*b));
    breq_init(b, "c1");
    breq_many_locks(b, 3);
    b->locks[1] = (sl_lock_req){SL_KIND_SEMAPHORE, "pool", 2, 0};
    b->locks[2] = (sl_lock_req){SL_KIND_SEMAPHORE, "unknown", 1, 0};
    refused(eng, &b->req, SL_EUNKNOWN, "locks[2]");
    b->locks[2] = (sl_lock_req){SL_KIND_MUTEX, "held", 1, 0};
    b->req.ntags = 1;
    b->tags[0] = (sl_tag){"env", "a b"};
    refused(eng, &b->req, SL_EINVAL, "tags[0]");
    b->tags[0] = (sl_tag){"env", "prod"};
    b->req.group = "g";
    b->req.cancel = SL_CANCEL_IN_PROGRESS;
    b->req.timeout_ms = -5;
    refused(eng, &b->req, SL_EINVAL, "timeout");
    /* Mended, the same request is accepted and waits for "held". */
    b->req.timeout_ms = 0;
    accepted(eng, &b->req);
    sl_claim_view v;
    sl_claim_get(t_find(eng, "c1"), &v);
    assert_int_equal(v.state, SL_PENDING);
    assert_int_equal(v.nlocks, 5); /* l0, pool, held, tag/env=prod, group/g */
    assert_int_equal(v.arrival, 2);
    test_free(b);
    t_free(eng);
}

static void name_valid_edges(void **state)
{
    (void)state;
    char buf[300];
    assert_true(sl_name_valid(fill(buf, 253, 'a'), 253, false));
    assert_false(sl_name_valid(fill(buf, 254, 'a'), 254, false));
    assert_false(sl_name_valid(fill(buf, 254, 'a'), 254, true));
    fill(buf, 253, 'a');
    buf[252] = '*';
    assert_true(sl_name_valid(buf, 253, true));
    assert_false(sl_name_valid(buf, 253, false));
    assert_false(sl_name_valid("", 0, false));
    assert_false(sl_name_valid(NULL, 0, true));
    assert_true(sl_name_valid("a", 1, false));
    /* '*' only as the last character of a pattern. */
    assert_true(sl_name_valid("*", 1, true));
    assert_false(sl_name_valid("*", 1, false));
    assert_true(sl_name_valid("tag/env=*", 9, true));
    assert_false(sl_name_valid("a*b", 3, true));
    assert_false(sl_name_valid("**", 2, true));
    /* A pattern's prefix may end in '/'; a name may not. */
    assert_true(sl_name_valid("a/*", 3, true));
    assert_false(sl_name_valid("a/", 2, true));
    assert_false(sl_name_valid("/*", 2, true));
    assert_false(sl_name_valid("a//*", 4, true));
    assert_false(sl_name_valid("/a", 2, false));
    assert_false(sl_name_valid("a//b", 4, false));
    assert_true(sl_name_valid("a/b/c", 5, false));
    assert_true(sl_name_valid("A.z_0-9:=", 9, false));
    assert_false(sl_name_valid("a b", 3, false));
    assert_false(sl_name_valid("a%2Fb", 5, false));
    /* The length is what counts, not the terminator. */
    assert_true(sl_name_valid("ab/", 2, false));
    /* "." and ".." segments read like path escapes: refused. Dots inside a
     * segment are fine, and a pattern's last segment is cut by its '*'. */
    static const char *const dotted[] = {".", "..", "./a", "../a", "a/.", "a/..", "a/./b",
                                         "team-a/../team-b/deploy", "a/../*", "./*"};
    for (size_t i = 0; i < sizeof(dotted) / sizeof(dotted[0]); i++) {
        assert_false(sl_name_valid(dotted[i], strlen(dotted[i]), false));
        assert_false(sl_name_valid(dotted[i], strlen(dotted[i]), true));
    }
    static const char *const fine[] = {"a.b", "...", "a/.b", "a/..b", "a/b.", ".a/b", "v1.2/x"};
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++)
        assert_true(sl_name_valid(fine[i], strlen(fine[i]), false));
    assert_true(sl_name_valid("a/.*", 4, true));
    assert_true(sl_name_valid("a/..*", 5, true));
}

/* The access rules of the embedder see every lock a claim would take, those
 * its tags and group add included, and a claim that would take none. */
typedef struct allow_log {
    char seen[8][64];
    size_t n;
    const char *refuse; /* key refused, or "" for a lockless claim */
} allow_log;

static bool allow_rec(void *ud, const char *key)
{
    allow_log *a = ud;
    if (a->n < 8)
        snprintf(a->seen[a->n++], 64, "%s", key ? key : "");
    return strcmp(key ? key : "", a->refuse) != 0;
}

static int claim_with(sl_engine *eng, const char *id, const sl_lock_req *locks, size_t nlocks,
                      const sl_tag *tags, size_t ntags, const char *group, allow_log *a,
                      sl_error *err)
{
    sl_claim_req r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.holder = "h";
    r.locks = locks;
    r.nlocks = nlocks;
    r.tags = tags;
    r.ntags = ntags;
    r.group = group;
    r.grace_ms = r.lease_ms = -1;
    r.allow = allow_rec;
    r.allow_ud = a;
    sl_claim *c = NULL;
    return sl_claim_create(eng, &r, 0, &c, err);
}

static void allow_sees_every_lock(void **state)
{
    (void)state;
    sl_engine *eng = t_engine();
    t_sem(eng, 0, "tag/tenant=*", 2, SL_STRICT);
    t_sem(eng, 0, "tag/tenant", 5, SL_STRICT);
    const sl_lock_req locks[] = {{SL_KIND_MUTEX, "a/m", 1, 0}};
    const sl_tag two[] = {{"tenant", "acme"}, {"env", "dev"}};
    allow_log a = {.refuse = "nothing"};
    sl_error err;
    assert_int_equal(claim_with(eng, "c1", locks, 1, two, 2, "g1", &a, &err), 0);
    assert_int_equal(a.n, 4);
    assert_string_equal(a.seen[0], "mtx/a/m");
    assert_string_equal(a.seen[1], "sem/tag/tenant=acme");
    assert_string_equal(a.seen[2], "sem/tag/tenant");
    assert_string_equal(a.seen[3], "mtx/group/g1");

    /* A refused tag lock refuses the claim and changes nothing. */
    allow_log b = {.refuse = "sem/tag/tenant=acme"};
    t_events(eng);
    assert_int_equal(claim_with(eng, "c2", NULL, 0, two, 1, NULL, &b, &err), SL_EFORBIDDEN);
    assert_string_equal(err.field, "tags[0]");
    assert_string_equal(err.name, "sem/tag/tenant=acme");
    assert_null(sl_claim_find(eng, "c2"));
    assert_string_equal(t_events(eng), "");

    /* A claim that takes no lock is asked about with NULL. */
    const sl_tag untracked[] = {{"env", "dev"}};
    allow_log c = {.refuse = ""};
    assert_int_equal(claim_with(eng, "c3", NULL, 0, untracked, 1, NULL, &c, &err), SL_EFORBIDDEN);
    assert_int_equal(c.n, 1);
    assert_string_equal(c.seen[0], "");
    assert_null(sl_claim_find(eng, "c3"));
    allow_log d = {.refuse = "nothing"};
    assert_int_equal(claim_with(eng, "c4", NULL, 0, untracked, 1, NULL, &d, &err), 0);
    assert_int_equal(t_state(eng, "c4"), SL_HELD);
    t_free(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(claim_ids),
        cmocka_unit_test(holders),
        cmocka_unit_test(lock_names),
        cmocka_unit_test(lock_kinds_and_slots),
        cmocka_unit_test(lock_and_tag_counts),
        cmocka_unit_test(tags),
        cmocka_unit_test(groups),
        cmocka_unit_test(timeouts_and_cancel),
        cmocka_unit_test(claims_max_is_enforced),
        cmocka_unit_test(late_refusals_change_nothing),
        cmocka_unit_test(name_valid_edges),
        cmocka_unit_test(allow_sees_every_lock),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
