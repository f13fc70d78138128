/* store_support.c - helpers shared by the store tests (see store_support.h). */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "store_support.h"
#include "support.h"

char *ts_tmpdir(void)
{
    char *dir = strdup("/tmp/sluice-store-XXXXXX");
    assert_non_null(dir);
    assert_non_null(mkdtemp(dir));
    return dir;
}

/* dir and what is in it, the store's log directory (sluice.db-log/) too. */
static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (unlink(path) != 0 && errno == EISDIR)
            rm_tree(path);
        else
            assert_int_equal(access(path, F_OK), -1);
    }
    closedir(d);
    assert_int_equal(rmdir(dir), 0);
}

void ts_rmdir(char *dir)
{
    rm_tree(dir);
    free(dir);
}

const char *ts_path(const char *dir)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "%s/sluice.db", dir);
    return buf;
}

const char *ts_url(const char *dir)
{
    static char buf[4096];
    snprintf(buf, sizeof(buf), "sqlite:%s/sluice.db", dir);
    return buf;
}

sl_store *ts_open(const char *dir, sl_durability d)
{
    sl_store_opts o = {ts_url(dir), d};
    sl_store *st = NULL;
    char err[1024];
    int rc = sl_store_open(&o, &st, err, sizeof(err));
    if (rc)
        fail_msg("sl_store_open: %d %s", rc, err);
    return st;
}

bool ts_apply_commits = true;

static void copy_file(const char *from, const char *to)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return; /* no WAL: nothing to copy */
    FILE *out = fopen(to, "wb");
    assert_non_null(out);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    assert_int_equal(fclose(out), 0);
}

/* The file size limit as it was before ts_log_full lowered it. */
static struct rlimit fsize_before;
static bool fsize_lowered;

static void fsize_restore(void)
{
    if (fsize_lowered)
        assert_int_equal(setrlimit(RLIMIT_FSIZE, &fsize_before), 0);
    fsize_lowered = false;
}

void ts_log_full(const char *dir, bool full)
{
    if (!full) {
        fsize_restore();
        return;
    }
    char log[4200], seg[4500];
    snprintf(log, sizeof(log), "%s-log", ts_path(dir));
    DIR *d = opendir(log);
    assert_non_null(d);
    off_t biggest = 0; /* the segment being written is the only one in these tests */
    for (struct dirent *e; (e = readdir(d));) {
        struct stat sb;
        snprintf(seg, sizeof(seg), "%s/%s", log, e->d_name);
        if (e->d_name[0] != '.' && stat(seg, &sb) == 0 && sb.st_size > biggest)
            biggest = sb.st_size;
    }
    closedir(d);
    signal(SIGXFSZ, SIG_IGN);
    fsize_restore();
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &fsize_before), 0);
    struct rlimit lim = fsize_before;
    lim.rlim_cur = (rlim_t)biggest + 20; /* room for part of a frame */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    fsize_lowered = true;
}

int ts_teardown(void **state)
{
    (void)state;
    ts_apply_commits = true;
    fsize_restore();
    return 0;
}

void ts_copy_store(const char *from_dir, const char *to_dir)
{
    char from[4200], to[4200];
    snprintf(from, sizeof(from), "%s", ts_path(from_dir));
    snprintf(to, sizeof(to), "%s", ts_path(to_dir));
    copy_file(from, to);
    strcat(from, "-wal");
    strcat(to, "-wal");
    copy_file(from, to);
    /* the log file's segments (docs/store.md, "The log file") */
    snprintf(from, sizeof(from), "%s-log", ts_path(from_dir));
    snprintf(to, sizeof(to), "%s-log", ts_path(to_dir));
    DIR *d = opendir(from);
    if (!d)
        return;
    assert_int_equal(mkdir(to, 0755), 0);
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char f[4500], t[4500];
        snprintf(f, sizeof(f), "%s/%s", from, e->d_name);
        snprintf(t, sizeof(t), "%s/%s", to, e->d_name);
        copy_file(f, t);
    }
    closedir(d);
}

/* Without the apply: capture and commit only. sl_store_write would run the
 * checkpoint when due, and a record that waited a second is due: on a
 * loaded machine that applied the records a test meant to keep in the log
 * (store/sqlite claim_events_at_in_unapplied_records failed so). */
static void commit_unapplied(sl_store *st, sl_engine *eng, const sl_changes *ch)
{
    sl_store_batch *b = sl_store_batch_new();
    assert_non_null(b);
    int rc = sl_store_capture(st, eng, ch, b);
    if (rc == 0)
        rc = sl_store_commit(st, b);
    if (rc)
        fail_msg("sl_store_commit: %d %s", rc, sl_store_batch_error(b));
    sl_store_batch_free(b);
}

void ts_commit(sl_store *st, sl_engine *eng)
{
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    if (!ts_apply_commits) {
        commit_unapplied(st, eng, &ch);
        sl_engine_changes_clear(eng);
        return;
    }
    int rc = sl_store_write(st, eng, &ch);
    if (rc)
        fail_msg("sl_store_write: %d %s", rc, sl_store_error(st));
    sl_engine_changes_clear(eng);
    /* The state tables as of this batch, for the tests that read them. */
    rc = sl_store_apply(st);
    if (rc)
        fail_msg("sl_store_apply: %d %s", rc, sl_store_error(st));
}

sl_engine *ts_load(sl_store *st, sl_engine_opts *opts, int64_t now, sl_store_load_stats *stats)
{
    sl_engine_opts def;
    if (!opts) {
        sl_engine_opts_default(&def);
        opts = &def;
    }
    sl_engine *eng = t_engine_opts(opts);
    sl_store_load_stats local;
    int rc = sl_store_load(st, eng, now, stats ? stats : &local);
    if (rc)
        fail_msg("sl_store_load: %d %s", rc, sl_store_error(st));
    return eng;
}

/* ---- comparing engines --------------------------------------------------- */

static void same_str(const char *a, const char *b, const char *what, const char *id)
{
    if (!a || !b) {
        if (a != b)
            fail_msg("claim %s: %s is %s / %s", id, what, a ? a : "NULL", b ? b : "NULL");
        return;
    }
    if (strcmp(a, b) != 0)
        fail_msg("claim %s: %s is %s / %s", id, what, a, b);
}

#define SAME(field)                                                                                \
    do {                                                                                           \
        if (va.field != vb.field)                                                                  \
            fail_msg("claim %s: " #field " is %lld / %lld", va.id, (long long)va.field,            \
                     (long long)vb.field);                                                         \
    } while (0)

static void same_claim(sl_engine *a, sl_engine *b, const sl_claim *ca, const sl_claim *cb)
{
    sl_claim_view va, vb;
    sl_claim_get(ca, &va);
    sl_claim_get(cb, &vb);
    same_str(va.id, vb.id, "id (arrival order)", va.id);
    same_str(va.holder, vb.holder, "holder", va.id);
    same_str(va.rebalance_key, vb.rebalance_key, "rebalance_key", va.id);
    same_str(va.group, vb.group, "group", va.id);
    same_str(va.by, vb.by, "by", va.id);
    same_str(va.idem, vb.idem, "idempotency key", va.id);
    same_str(va.actor, vb.actor, "actor", va.id);
    SAME(idem_fp);
    SAME(state);
    SAME(priority);
    SAME(created_ms);
    SAME(arrived_ms);
    SAME(arrival);
    SAME(cancel);
    SAME(grace_ms);
    SAME(lease_ms);
    SAME(timeout_ms);
    SAME(granted_ms);
    SAME(grant_seq);
    SAME(revoke_at_ms);
    SAME(ended_ms);
    SAME(reason);
    SAME(nlocks);
    SAME(ntags);
    for (size_t i = 0; i < va.nlocks; i++) {
        sl_claim_lock_view la, lb;
        sl_claim_lock_get(a, ca, i, &la);
        sl_claim_lock_get(b, cb, i, &lb);
        same_str(la.key, lb.key, "lock key", va.id);
        if (la.kind != lb.kind || la.slots != lb.slots || la.via != lb.via ||
            la.token != lb.token || la.position != lb.position)
            fail_msg("claim %s lock %s: kind %d/%d slots %u/%u via %d/%d token %llu/%llu "
                     "position %zu/%zu",
                     va.id, la.key, la.kind, lb.kind, la.slots, lb.slots, la.via, lb.via,
                     (unsigned long long)la.token, (unsigned long long)lb.token, la.position,
                     lb.position);
    }
    for (size_t i = 0; i < va.ntags; i++) {
        sl_tag ta, tb;
        sl_claim_tag_get(ca, i, &ta);
        sl_claim_tag_get(cb, i, &tb);
        same_str(ta.key, tb.key, "tag key", va.id);
        same_str(ta.value, tb.value, "tag value", va.id);
    }
}

static const char *claim_id(const sl_claim *c)
{
    sl_claim_view v;
    sl_claim_get(c, &v);
    return v.id;
}

#define PEEK_MAX 4096

static void same_lock(sl_engine *a, sl_engine *b, const sl_lock *la)
{
    sl_lock_view va, vb, floor;
    sl_lock_get(la, &va);
    assert_int_equal(sl_lock_lookup(a, SL_KIND_MUTEX, "never/used/floor", &floor, NULL), 0);
    const sl_lock *lb = NULL;
    if (sl_lock_lookup(b, va.kind, va.name, &vb, &lb) != 0 || !lb)
        fail_msg("lock %s is missing from the restored engine", va.key);
    /* A lock never granted has no saved token: made before the floor last
     * rose, it restarts from the floor (see tokens_across_the_floor). */
    bool token_ok = va.token == vb.token || (va.token < floor.token && vb.token == floor.token);
    if (va.limit != vb.limit || va.strategy != vb.strategy || va.lease_ms != vb.lease_ms ||
        va.configured != vb.configured || va.used != vb.used || !token_ok ||
        va.nholders != vb.nholders || va.npending != vb.npending)
        fail_msg("lock %s: limit %u/%u strategy %d/%d used %llu/%llu token %llu/%llu "
                 "holders %zu/%zu pending %zu/%zu",
                 va.key, va.limit, vb.limit, va.strategy, vb.strategy, (unsigned long long)va.used,
                 (unsigned long long)vb.used, (unsigned long long)va.token,
                 (unsigned long long)vb.token, va.nholders, vb.nholders, va.npending, vb.npending);
    if ((va.from_pattern == NULL) != (vb.from_pattern == NULL) ||
        (va.from_pattern && strcmp(va.from_pattern, vb.from_pattern) != 0))
        fail_msg("lock %s: from_pattern differs", va.key);

    static sl_holder_view ha[PEEK_MAX], hb[PEEK_MAX];
    size_t nh = sl_lock_holders(la, 0, ha, PEEK_MAX);
    assert_int_equal(sl_lock_holders(lb, 0, hb, PEEK_MAX), nh);
    for (size_t i = 0; i < nh; i++) {
        if (strcmp(claim_id(ha[i].claim), claim_id(hb[i].claim)) != 0 ||
            ha[i].slots != hb[i].slots || ha[i].token != hb[i].token ||
            ha[i].since_ms != hb[i].since_ms)
            fail_msg("lock %s: holder %zu is %s / %s", va.key, i, claim_id(ha[i].claim),
                     claim_id(hb[i].claim));
    }
    static sl_waiter_view wa[PEEK_MAX], wb[PEEK_MAX];
    size_t nw = sl_lock_waiters(a, la, 0, wa, PEEK_MAX);
    assert_int_equal(sl_lock_waiters(b, lb, 0, wb, PEEK_MAX), nw);
    for (size_t i = 0; i < nw; i++) {
        if (strcmp(claim_id(wa[i].claim), claim_id(wb[i].claim)) != 0 ||
            wa[i].slots != wb[i].slots || wa[i].position != wb[i].position)
            fail_msg("lock %s: waiter %zu is %s / %s", va.key, i, claim_id(wa[i].claim),
                     claim_id(wb[i].claim));
    }
}

void ts_same_rules(const char *name, const sl_sem_rules *x, const sl_sem_rules *y)
{
    if (x->preempt != y->preempt || x->preempt_grace_ms != y->preempt_grace_ms ||
        x->max_pending != y->max_pending || x->on_full != y->on_full ||
        x->default_weight != y->default_weight || x->nweights != y->nweights ||
        x->rate_count != y->rate_count || x->rate_period_ms != y->rate_period_ms ||
        x->rate_burst != y->rate_burst || x->backdate_ms != y->backdate_ms)
        fail_msg("configuration %s: its rules differ", name);
    for (size_t i = 0; i < x->nweights; i++)
        if (strcmp(x->weights[i].key, y->weights[i].key) != 0 ||
            x->weights[i].weight != y->weights[i].weight)
            fail_msg("configuration %s: weight %zu is %s=%u / %s=%u", name, i, x->weights[i].key,
                     x->weights[i].weight, y->weights[i].key, y->weights[i].weight);
}

void ts_same(sl_engine *a, sl_engine *b)
{
    sl_engine_stats sa, sb;
    sl_engine_stats_get(a, &sa);
    sl_engine_stats_get(b, &sb);
    assert_int_equal(sa.claims, sb.claims);
    assert_int_equal(sa.pending, sb.pending);
    assert_int_equal(sa.held, sb.held);
    assert_int_equal(sa.ended, sb.ended);
    assert_int_equal(sa.configs, sb.configs);
    assert_int_equal(sa.next_seq, sb.next_seq);

    const sl_claim *ca = sl_claim_next(a, NULL), *cb = sl_claim_next(b, NULL);
    for (; ca && cb; ca = sl_claim_next(a, ca), cb = sl_claim_next(b, cb))
        same_claim(a, b, ca, cb);
    assert_null(ca);
    assert_null(cb);
    ca = sl_pending_next(a, NULL);
    cb = sl_pending_next(b, NULL);
    for (; ca && cb; ca = sl_pending_next(a, ca), cb = sl_pending_next(b, cb))
        assert_string_equal(claim_id(ca), claim_id(cb));
    assert_null(ca);
    assert_null(cb);

    size_t na = 0, nb = 0;
    for (const sl_lock *l = sl_lock_next(a, NULL); l; l = sl_lock_next(a, l), na++)
        same_lock(a, b, l);
    for (const sl_lock *l = sl_lock_next(b, NULL); l; l = sl_lock_next(b, l))
        nb++;
    assert_int_equal(na, nb);

    for (const sl_config *c = sl_config_next(a, NULL); c; c = sl_config_next(a, c)) {
        sl_config_view x, y;
        sl_config_get(c, &x);
        const sl_config *d = sl_config_find(b, x.name);
        if (!d)
            fail_msg("configuration %s is missing from the restored engine", x.name);
        sl_config_get(d, &y);
        assert_int_equal(x.limit, y.limit);
        assert_int_equal(x.strategy, y.strategy);
        assert_int_equal(x.lease_ms, y.lease_ms);
        assert_int_equal(x.overtake_ms, y.overtake_ms);
        assert_int_equal(x.pattern, y.pattern);
        ts_same_rules(x.name, &x.rules, &y.rules);
    }
    /* The token floor: what a mutex never used reads. */
    sl_lock_view fa, fb;
    assert_int_equal(sl_lock_lookup(a, SL_KIND_MUTEX, "never/used/floor", &fa, NULL), 0);
    assert_int_equal(sl_lock_lookup(b, SL_KIND_MUTEX, "never/used/floor", &fb, NULL), 0);
    assert_int_equal(fa.token, fb.token);
}

/* ---- raw SQL ------------------------------------------------------------- */

sqlite3 *ts_db(const char *dir)
{
    sqlite3 *db = NULL;
    assert_int_equal(sqlite3_open_v2(ts_path(dir), &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

void ts_exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
        fail_msg("%s: %s", sql, msg ? msg : "?");
}

int64_t ts_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    int64_t v = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return v;
}

const char *ts_text(sqlite3 *db, const char *sql)
{
    static char buf[4096];
    sqlite3_stmt *s = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK)
        fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    const char *t = sqlite3_step(s) == SQLITE_ROW ? (const char *)sqlite3_column_text(s, 0) : NULL;
    snprintf(buf, sizeof(buf), "%s", t ? t : "");
    sqlite3_finalize(s);
    return buf;
}
