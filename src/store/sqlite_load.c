/* sqlite_load.c - rebuilding an empty engine from the SQLite store.
 *
 * One read transaction (a consistent snapshot): counters, configurations,
 * lock tokens, then claims in arrival order (the table's own order, in
 * which the engine restores claims without sorting anything), read on a
 * second thread while this one restores them (below), then
 * sl_engine_restore_done. Every value read back is checked for its type,
 * range and length before the engine sees it: a row that fails names
 * itself in SL_STORE_EDATA, and the engine, partly rebuilt, must then be
 * freed by the caller. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "claim_row.h"
#include "sqlite_int.h"

typedef sl_claim_row claim_row;

static const char claims_sql[] = "SELECT " SL_CLAIM_COLUMNS " FROM claims ORDER BY arrival";

/* Columns are read through their sqlite3_value: one sqlite3_column_*
 * call per column instead of two or three (each of those checks the
 * statement and its error state again), which counts a million rows over. */
static bool col_text(sqlite3_stmt *s, int i, size_t max, bool nullable, const char **out)
{
    sqlite3_value *val = sqlite3_column_value(s, i);
    int t = sqlite3_value_type(val);
    *out = NULL;
    if (t == SQLITE_NULL)
        return nullable;
    if (t != SQLITE_TEXT)
        return false;
    const char *p = (const char *)sqlite3_value_text(val);
    size_t n = (size_t)sqlite3_value_bytes(val);
    if (!p || n > max || strlen(p) != n)
        return false;
    *out = p;
    return true;
}

static bool col_int(sqlite3_stmt *s, int i, int64_t lo, int64_t hi, int64_t *out)
{
    sqlite3_value *val = sqlite3_column_value(s, i);
    if (sqlite3_value_type(val) != SQLITE_INTEGER)
        return false;
    int64_t v = sqlite3_value_int64(val);
    if (v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static int bad_row(sl_sqlite *sq, const char *what, const char *name, const char *why)
{
    return sl__store_fail(&sq->base, SL_STORE_EDATA,
                          "the store %s: saved %s %.260s could not be restored: %s", sq->path, what,
                          name, why);
}

static int bad_column(sl_sqlite *sq, sqlite3_stmt *s, int col, const char *what, const char *name)
{
    char why[96];
    snprintf(why, sizeof(why), "its column %s is missing, too long or out of range",
             sqlite3_column_name(s, col));
    return bad_row(sq, what, name, why);
}

static int step_fail(sl_sqlite *sq, sqlite3_stmt *s, const char *doing)
{
    int rc = sl__sqlite_fail(sq, doing);
    sqlite3_finalize(s);
    return rc;
}

static int prepare(sl_sqlite *sq, const char *sql, sqlite3_stmt **s)
{
    if (sqlite3_prepare_v2(sq->db, sql, -1, s, NULL) == SQLITE_OK)
        return 0;
    return sl__sqlite_fail(sq, "cannot read it");
}

static int load_counters(sl_sqlite *sq, sl_engine *eng)
{
    sqlite3_stmt *s;
    int rc = prepare(sq,
                     "SELECT next_seq, next_arrival, next_grant, token_floor FROM meta"
                     " WHERE id = 1",
                     &s);
    if (rc)
        return rc;
    rc = sqlite3_step(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return step_fail(sq, s, "cannot read the counters");
    int64_t v[4];
    for (int i = 0; i < 4; i++)
        if (rc != SQLITE_ROW || !col_int(s, i, INT64_MIN, INT64_MAX, &v[i])) {
            sqlite3_finalize(s);
            return bad_row(sq, "counters", "(meta)", "the row is missing or damaged");
        }
    sl_engine_restore_counters(eng, (uint64_t)v[0], (uint64_t)v[1], (uint64_t)v[2], (uint64_t)v[3]);
    sqlite3_finalize(s);
    return 0;
}

/* The engine takes a configuration with its rules (NULL: none). */
static int restore_config(sl_sqlite *sq, sqlite3_stmt *s, sl_engine *eng, const char *name,
                          sl_sem_opts *o)
{
    const char *text;
    if (!col_text(s, 5, SL_RULES_JSON_MAX, true, &text))
        return bad_column(sq, s, 5, "configuration", name);
    char why[160];
    if (sl__rows_restore_config(eng, name, o, text, text ? strlen(text) : 0, why, sizeof(why)) !=
        0)
        return bad_row(sq, "configuration", name, why);
    return 0;
}

static int load_configs(sl_sqlite *sq, sl_engine *eng, sl_store_load_stats *stats)
{
    sqlite3_stmt *s;
    int rc =
        prepare(sq, "SELECT name, lim, strategy, lease_ms, overtake_ms, rules FROM configs", &s);
    while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = 0;
        const char *name;
        int64_t lim, strategy, lease, overtake;
        if (!col_text(s, 0, SL_NAME_MAX, false, &name))
            rc = bad_column(sq, s, 0, "configuration", "(unreadable name)");
        else if (!col_int(s, 1, 0, SL_LIMIT_MAX, &lim))
            rc = bad_column(sq, s, 1, "configuration", name);
        else if (!col_int(s, 2, SL_STRICT, SL_REBALANCED, &strategy))
            rc = bad_column(sq, s, 2, "configuration", name);
        else if (!col_int(s, 3, 0, INT64_MAX, &lease))
            rc = bad_column(sq, s, 3, "configuration", name);
        else if (!col_int(s, 4, 0, INT64_MAX, &overtake))
            rc = bad_column(sq, s, 4, "configuration", name);
        else if ((rc = restore_config(sq, s, eng, name,
                                      &(sl_sem_opts){.limit = (uint32_t)lim,
                                                     .strategy = (sl_strategy)strategy,
                                                     .lease_ms = lease,
                                                     .overtake_ms = overtake})) == 0)
            stats->configs++;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        return step_fail(sq, s, "cannot read the configurations");
    sqlite3_finalize(s);
    return rc;
}

static int load_locks(sl_sqlite *sq, sl_engine *eng, sl_store_load_stats *stats)
{
    sqlite3_stmt *s;
    int rc = prepare(sq, "SELECT key, token FROM locks", &s);
    while (rc == 0 && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        rc = 0;
        const char *key;
        int64_t token;
        if (!col_text(s, 0, SL_LOCK_KEY_MAX, false, &key))
            rc = bad_column(sq, s, 0, "lock", "(unreadable key)");
        else if (!col_int(s, 1, INT64_MIN, INT64_MAX, &token))
            rc = bad_column(sq, s, 1, "lock", key);
        else if (sl_engine_restore_token(eng, key, (uint64_t)token) != 0)
            rc = bad_row(sq, "lock", key, "the key is not mtx/NAME or sem/NAME");
        else
            stats->locks++;
    }
    if (rc == SQLITE_DONE)
        rc = 0;
    else if (rc > 0)
        return step_fail(sq, s, "cannot read the lock tokens");
    sqlite3_finalize(s);
    return rc;
}

/* ---- claims -------------------------------------------------------------- */

/* The claim reader's accessors (claim_row.h) over a stepped statement. */
static bool cc_int(void *src, int col, int64_t lo, int64_t hi, int64_t *out)
{
    return col_int(src, col, lo, hi, out);
}

static bool cc_text(void *src, int col, size_t max, bool nullable, const char **out, size_t *len)
{
    *len = (size_t)sqlite3_column_bytes(src, col);
    return col_text(src, col, max, nullable, out);
}

static const char *cc_name(void *src, int col)
{
    return sqlite3_column_name(src, col);
}

/* ---- claims: read on a thread of their own -------------------------------
 *
 * A million claims take about as long to read and check (SQLite's steps and
 * columns, the JSON of their locks) as the engine takes to restore them, so
 * the two run side by side: a reader thread, the only user of the
 * connection until it is joined, turns rows into restore records in batches
 * (their strings copied into the batch), and this thread hands each batch's
 * records to the engine while the reader fills the next. A row that cannot
 * be read ends the reader's work; its reason travels with the batch, so
 * the error is the one a row-by-row load would give, after the rows before
 * it were restored. Without a thread (pthread_create failed) the same
 * batches are filled and restored in turn. */

#define BATCH_ROWS 512
#define BATCHES 3
/* The most text one row can need in a batch: its strings, the decoded
 * JSON of its locks and tags, and their arrays. */
#define ROW_TEXT_MAX                                                                            \
    (SL_ID_MAX + SL_HOLDER_MAX + 2 * SL_NAME_MAX + SL_ID_MAX + SL_IDEM_MAX + SL_ACTOR_MAX + 7 +                 \
     2 * (SL_ROWS_JSON_MAX + 1) +                                                                     \
     SL_CLAIM_LOCKS_MAX * sizeof(sl_claim_lock_rec) + SL_TAGS_MAX * sizeof(sl_tag) + 64)
#define BATCH_TEXT (1024 * 1024 + ROW_TEXT_MAX) /* a batch ends when a row might not fit */

typedef struct batch {
    sl_claim_rec rows[BATCH_ROWS];
    size_t nrows;
    char *text; /* BATCH_TEXT bytes: every string and array the rows point to */
    size_t used;
    bool last;       /* no batch follows */
    int step_rc;     /* with last: SQLITE_DONE, or the step's failure */
    bool bad;        /* with last: the row after these could not be read */
    char bad_name[SL_ID_MAX + 32];
    char bad_what[160];
} batch;

typedef struct reader {
    sl_sqlite *sq;
    sqlite3_stmt *s;
    claim_row *row; /* the reader's scratch */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    batch *b[BATCHES];
    size_t filled, next_fill, next_take; /* a ring: filled batches wait to be taken */
    bool stop;                          /* the taker gave up: fill no more */
} reader;

static void *text_put(batch *b, const void *p, size_t n, size_t align)
{
    b->used = (b->used + align - 1) / align * align;
    char *at = b->text + b->used;
    memcpy(at, p, n);
    b->used += n;
    return at;
}

static const char *text_str(batch *b, const char *str)
{
    return str ? text_put(b, str, strlen(str) + 1, 1) : NULL;
}

/* Copies the row's record, which points into SQLite's column memory and
 * the reader's scratch, into the batch. */
static void batch_add(batch *b, const claim_row *r)
{
    sl_claim_rec *rec = &b->rows[b->nrows++];
    const sl_claim_view *v = &r->rec.v;
    rec->v = *v;
    rec->v.id = text_str(b, v->id);
    rec->v.holder = text_str(b, v->holder);
    rec->v.rebalance_key = text_str(b, v->rebalance_key);
    rec->v.group = text_str(b, v->group);
    rec->v.by = text_str(b, v->by);
    rec->v.idem = text_str(b, v->idem);
    rec->v.actor = text_str(b, v->actor);
    /* Names point into the scratch, where the JSON was decoded: copy it
     * whole (its size is what the names used) and point into the copy. */
    sl_claim_lock_rec *locks = text_put(b, r->locks, v->nlocks * sizeof(*locks), 8);
    if (v->nlocks) {
        size_t n = 0;
        for (size_t i = 0; i < v->nlocks; i++) {
            size_t end = (size_t)(r->locks[i].name - r->scratch) + strlen(r->locks[i].name) + 1;
            n = end > n ? end : n;
        }
        const char *copy = text_put(b, r->scratch, n, 1);
        for (size_t i = 0; i < v->nlocks; i++)
            locks[i].name = copy + (r->locks[i].name - r->scratch);
    }
    sl_tag *tags = text_put(b, r->tags, v->ntags * sizeof(*tags), 8);
    for (size_t i = 0; i < v->ntags; i++) {
        tags[i].key = text_str(b, r->tags[i].key);
        tags[i].value = text_str(b, r->tags[i].value);
    }
    rec->locks = locks;
    rec->tags = tags;
}

/* One row into r: 0, or -1 with the row's name and what is wrong in b. */
static int read_row(sqlite3_stmt *s, claim_row *r, batch *b)
{
    sl_claim_cols cols = {cc_int, cc_text, cc_name, s};
    if (sl__claim_row_read(&cols, r))
        return 0;
    if (r->rec.v.id)
        snprintf(b->bad_name, sizeof(b->bad_name), "%s", r->rec.v.id);
    else
        snprintf(b->bad_name, sizeof(b->bad_name), "(arrival %lld)",
                 (long long)sqlite3_column_int64(s, SL_CC_ARRIVAL));
    snprintf(b->bad_what, sizeof(b->bad_what), "%s", r->what);
    return -1;
}

/* Steps rows into b until it is full, the rows end, or one is bad. */
static void fill_batch(reader *rd, batch *b)
{
    b->nrows = 0;
    b->used = 0;
    b->last = b->bad = false;
    while (b->nrows < BATCH_ROWS && b->used <= BATCH_TEXT - ROW_TEXT_MAX) {
        int rc = sqlite3_step(rd->s);
        if (rc != SQLITE_ROW) {
            b->step_rc = rc;
            b->last = true;
            return;
        }
        if (read_row(rd->s, rd->row, b) < 0) {
            b->bad = b->last = true;
            return;
        }
        batch_add(b, rd->row);
    }
}

static void *reader_main(void *arg)
{
    reader *rd = arg;
    bool last = false;
    while (!last) {
        pthread_mutex_lock(&rd->mu);
        while (rd->filled == BATCHES && !rd->stop)
            pthread_cond_wait(&rd->cv, &rd->mu);
        bool stop = rd->stop;
        batch *b = rd->b[rd->next_fill];
        pthread_mutex_unlock(&rd->mu);
        if (stop)
            break;
        fill_batch(rd, b);
        last = b->last;
        pthread_mutex_lock(&rd->mu);
        rd->next_fill = (rd->next_fill + 1) % BATCHES;
        rd->filled++;
        pthread_cond_broadcast(&rd->cv);
        pthread_mutex_unlock(&rd->mu);
    }
    return NULL;
}

static batch *take_batch(reader *rd)
{
    pthread_mutex_lock(&rd->mu);
    while (rd->filled == 0)
        pthread_cond_wait(&rd->cv, &rd->mu);
    batch *b = rd->b[rd->next_take];
    pthread_mutex_unlock(&rd->mu);
    return b;
}

static void give_back(reader *rd)
{
    pthread_mutex_lock(&rd->mu);
    rd->next_take = (rd->next_take + 1) % BATCHES;
    rd->filled--;
    pthread_cond_broadcast(&rd->cv);
    pthread_mutex_unlock(&rd->mu);
}

static void count(sl_store_load_stats *stats, sl_state state)
{
    stats->claims++;
    if (state == SL_PENDING)
        stats->pending++;
    else if (sl_state_ended(state))
        stats->ended++;
    else
        stats->held++;
}

/* Restores b's rows, then reports what ended the reading, if it ended:
 * 0 to go on (or at the end), or the error. */
static int restore_batch(sl_sqlite *sq, sl_engine *eng, const batch *b, sl_store_load_stats *stats)
{
    for (size_t i = 0; i < b->nrows; i++) {
        const sl_claim_rec *rec = &b->rows[i];
        sl_error err;
        memset(&err, 0, sizeof(err));
        if (sl_engine_restore_claim(eng, rec, &err) != 0) {
            char why[400];
            snprintf(why, sizeof(why), "the engine refused it: %.100s%s%.253s",
                     err.what ? err.what : "(no reason given)", err.name[0] ? ": " : "", err.name);
            return bad_row(sq, "claim", rec->v.id, why);
        }
        count(stats, rec->v.state);
    }
    if (b->bad)
        return bad_row(sq, "claim", b->bad_name, b->bad_what);
    if (b->last && b->step_rc != SQLITE_DONE)
        return sl__sqlite_fail(sq, "cannot read the claims"); /* the reader made no call since */
    return 0;
}

static void reader_init(reader *rd, sl_sqlite *sq, sqlite3_stmt *s)
{
    memset(rd, 0, sizeof(*rd));
    rd->sq = sq;
    rd->s = s;
    rd->row = calloc(1, sizeof(*rd->row));
    if (!rd->row)
        abort();
    rd->row->rec.locks = rd->row->locks;
    rd->row->rec.tags = rd->row->tags;
    for (size_t i = 0; i < BATCHES; i++) {
        rd->b[i] = calloc(1, sizeof(*rd->b[i]));
        if (!rd->b[i] || !(rd->b[i]->text = malloc(BATCH_TEXT)))
            abort();
    }
    if (pthread_mutex_init(&rd->mu, NULL) || pthread_cond_init(&rd->cv, NULL))
        abort();
}

static void reader_free(reader *rd)
{
    pthread_mutex_destroy(&rd->mu);
    pthread_cond_destroy(&rd->cv);
    for (size_t i = 0; i < BATCHES; i++) {
        free(rd->b[i]->text);
        free(rd->b[i]);
    }
    free(rd->row);
}

static int restore_threaded(reader *rd, sl_engine *eng, sl_store_load_stats *stats)
{
    int rc = 0;
    for (bool last = false; !last && rc == 0;) {
        batch *b = take_batch(rd);
        rc = restore_batch(rd->sq, eng, b, stats);
        last = b->last;
        give_back(rd);
    }
    return rc;
}

/* Without a second thread: fill one batch, restore it, and so on. */
static int restore_inline(reader *rd, sl_engine *eng, sl_store_load_stats *stats)
{
    int rc = 0;
    for (bool last = false; !last && rc == 0;) {
        fill_batch(rd, rd->b[0]);
        rc = restore_batch(rd->sq, eng, rd->b[0], stats);
        last = rd->b[0]->last;
    }
    return rc;
}

static int load_claims(sl_sqlite *sq, sl_engine *eng, sl_store_load_stats *stats)
{
    sqlite3_stmt *s;
    reader rd;
    pthread_t thread;
    int rc = prepare(sq, claims_sql, &s);
    if (rc)
        return rc;
    reader_init(&rd, sq, s);
    if (pthread_create(&thread, NULL, reader_main, &rd) == 0) {
        rc = restore_threaded(&rd, eng, stats);
        pthread_mutex_lock(&rd.mu);
        rd.stop = true; /* if the engine refused a claim, the reader may still be going */
        pthread_cond_broadcast(&rd.cv);
        pthread_mutex_unlock(&rd.mu);
        pthread_join(thread, NULL);
    } else {
        rc = restore_inline(&rd, eng, stats);
    }
    reader_free(&rd);
    sqlite3_finalize(s);
    return rc;
}

int sl__sqlite_load(sl_store *st, sl_engine *eng, int64_t now, sl_store_load_stats *stats)
{
    sl_sqlite *sq = (sl_sqlite *)st;
    sl_store_load_stats local;
    if (!stats)
        stats = &local;
    memset(stats, 0, sizeof(*stats));
    /* What the last run committed and did not apply (a crash, a failed
     * apply at its stop) goes into the tables first. */
    int rc = sl__sqlite_apply(sq, 0);
    if (rc)
        return sl__store_fail(st, rc, "%s", sq->apply_err);
    /* A read transaction: the four reads see one snapshot. */
    if (sqlite3_exec(sq->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
        return sl__sqlite_fail(sq, "cannot start reading");
    rc = load_counters(sq, eng);
    if (rc == 0)
        rc = load_configs(sq, eng, stats);
    if (rc == 0)
        rc = load_locks(sq, eng, stats);
    if (rc == 0)
        rc = load_claims(sq, eng, stats);
    if (!sqlite3_get_autocommit(sq->db))
        sqlite3_exec(sq->db, "COMMIT", NULL, NULL, NULL);
    if (rc == 0)
        sl_engine_restore_done(eng, now);
    if (sq->journal)
        stats->torn_bytes = sl_journal_cut_bytes(sq->journal);
    return rc;
}
