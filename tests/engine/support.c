/* support.c - helpers shared by the engine tests (see support.h). */
#include <stdarg.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "support.h"

/* Each engine counts its own live blocks (the allocator's ud). One count
 * for the whole run made one failed test fail every later one: the failed
 * test never reached t_free, its engine's blocks stayed counted, and every
 * t_free after it saw them. A failed test's engine is simply left behind. */
typedef struct counted {
    const sl_engine *eng;
    size_t live;
    struct counted *next;
} counted;

static counted *engines; /* the engines not freed yet */

static void *count_alloc(void *ud, void *ptr, size_t size)
{
    counted *c = ud;
    if (size == 0) {
        if (ptr)
            c->live--;
        free(ptr);
        return NULL;
    }
    if (!ptr)
        c->live++;
    void *p = realloc(ptr, size);
    if (!p)
        abort();
    return p;
}

sl_engine *t_engine_opts(sl_engine_opts *opts)
{
    counted *c = calloc(1, sizeof(*c));
    assert_non_null(c);
    opts->alloc = count_alloc;
    opts->alloc_ud = c;
    sl_engine *eng = NULL;
    assert_int_equal(sl_engine_new(opts, &eng), 0);
    c->eng = eng;
    c->next = engines;
    engines = c;
    return eng;
}

sl_engine *t_engine(void)
{
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    return t_engine_opts(&opts);
}

void t_free(sl_engine *eng)
{
    counted **at = &engines;
    while (*at && (*at)->eng != eng)
        at = &(*at)->next;
    assert_non_null(*at);
    counted *c = *at;
    *at = c->next;
    sl_engine_free(eng);
    size_t live = c->live;
    free(c);
    assert_int_equal(live, 0);
}

#define SPEC_MAX 80

typedef struct spec {
    sl_claim_req req;
    sl_lock_req locks[SPEC_MAX];
    sl_tag tags[SPEC_MAX];
    char buf[4096];
} spec;

static int64_t num(const char *s)
{
    return strtoll(s, NULL, 10);
}

static void spec_word(spec *sp, char *w)
{
    sl_claim_req *r = &sp->req;
    if (strncmp(w, "m:", 2) == 0 || strncmp(w, "s:", 2) == 0) {
        sl_lock_req *l = &sp->locks[r->nlocks++];
        l->kind = w[0] == 'm' ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
        char *star = strchr(w + 2, '*');
        if (star) {
            *star = '\0';
            l->slots = (uint32_t)num(star + 1);
        }
        l->name = w + 2;
        return;
    }
    char *eq = strchr(w, '=');
    assert_non_null(eq);
    *eq = '\0';
    const char *v = eq + 1;
    if (strcmp(w, "id") == 0) {
        r->id = v;
    } else if (strcmp(w, "holder") == 0) {
        r->holder = v;
    } else if (strcmp(w, "prio") == 0) {
        r->priority = (int32_t)num(v);
    } else if (strcmp(w, "created") == 0) {
        r->has_created = true;
        r->created_ms = num(v);
    } else if (strcmp(w, "key") == 0) {
        r->rebalance_key = v;
    } else if (strcmp(w, "group") == 0) {
        r->group = v;
    } else if (strcmp(w, "cancel") == 0) {
        assert_int_equal(sl_cancel_parse(v, &r->cancel), 0);
    } else if (strcmp(w, "grace") == 0) {
        r->grace_ms = num(v);
    } else if (strcmp(w, "lease") == 0) {
        r->lease_ms = num(v);
    } else if (strcmp(w, "timeout") == 0) {
        r->timeout_ms = num(v);
    } else if (strcmp(w, "idem") == 0) {
        r->idem = v;
    } else if (strcmp(w, "actor") == 0) {
        r->actor = v;
    } else if (strcmp(w, "fp") == 0) {
        r->idem_fp = (uint64_t)num(v);
    } else if (strcmp(w, "tag") == 0) {
        char *eq2 = strchr(eq + 1, '=');
        assert_non_null(eq2);
        *eq2 = '\0';
        sp->tags[r->ntags].key = eq + 1;
        sp->tags[r->ntags].value = eq2 + 1;
        r->ntags++;
    } else {
        fail_msg("unknown spec word %s", w);
    }
}

static void spec_parse(spec *sp, const char *text)
{
    memset(sp, 0, sizeof(*sp));
    sp->req.lease_ms = -1;
    sp->req.grace_ms = -1;
    sp->req.locks = sp->locks;
    sp->req.tags = sp->tags;
    assert_true(strlen(text) < sizeof(sp->buf));
    memcpy(sp->buf, text, strlen(text) + 1);
    char *save = NULL;
    for (char *w = strtok_r(sp->buf, " ", &save); w; w = strtok_r(NULL, " ", &save))
        spec_word(sp, w);
    if (!sp->req.holder)
        sp->req.holder = sp->req.id;
}

int t_claim_rc(sl_engine *eng, int64_t now, const char *text, sl_error *err)
{
    spec *sp = malloc(sizeof(*sp));
    spec_parse(sp, text);
    sl_claim *c = NULL;
    sl_error e2;
    int rc = sl_claim_create(eng, &sp->req, now, &c, err ? err : &e2);
    free(sp);
    return rc;
}

sl_claim *t_claim(sl_engine *eng, int64_t now, const char *text)
{
    spec *sp = malloc(sizeof(*sp));
    spec_parse(sp, text);
    sl_claim *c = NULL;
    sl_error err;
    int rc = sl_claim_create(eng, &sp->req, now, &c, &err);
    if (rc != 0)
        fail_msg("claim \"%s\": rc %d: %s (%s)", text, rc, err.what, err.field);
    free(sp);
    return c;
}

void t_sem(sl_engine *eng, int64_t now, const char *name, uint32_t limit, sl_strategy s)
{
    sl_error err;
    int rc = sl_sem_set(eng, name, limit, s, 0, now, &err);
    if (rc != 0)
        fail_msg("sem %s: rc %d: %s", name, rc, err.what);
}

void t_preempt_sem(sl_engine *eng, const char *name, uint32_t limit, sl_strategy s,
                   int64_t grace)
{
    sl_sem_opts o;
    sl_sem_opts_default(&o, limit);
    o.strategy = s;
    o.rules.preempt = true;
    o.rules.preempt_grace_ms = grace;
    sl_error err;
    int rc = sl_sem_configure(eng, name, &o, 0, &err);
    if (rc != 0)
        fail_msg("preempting sem %s: rc %d: %s", name, rc, err.what);
}

sl_claim *t_find(sl_engine *eng, const char *id)
{
    sl_claim *c = sl_claim_find(eng, id);
    if (!c)
        fail_msg("no claim %s", id);
    return c;
}

sl_claim_view t_view(sl_engine *eng, const char *id)
{
    sl_claim_view v;
    sl_claim_get(t_find(eng, id), &v);
    return v;
}

const char *t_id(const sl_claim *c)
{
    if (!c)
        return NULL;
    sl_claim_view v;
    sl_claim_get(c, &v);
    return v.id;
}

sl_event t_event_at(sl_engine *eng, size_t i)
{
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    assert_true(i < ch.nevents);
    return ch.events[i];
}

size_t t_nevents(sl_engine *eng)
{
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    return ch.nevents;
}

sl_state t_state(sl_engine *eng, const char *id)
{
    sl_claim_view v;
    sl_claim_get(t_find(eng, id), &v);
    return v.state;
}

uint64_t t_token(sl_engine *eng, const char *id, size_t lock)
{
    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, t_find(eng, id), lock, &lv);
    return lv.token;
}

size_t t_position(sl_engine *eng, const char *id, size_t lock)
{
    sl_claim_lock_view lv;
    sl_claim_lock_get(eng, t_find(eng, id), lock, &lv);
    return lv.position;
}

void t_release(sl_engine *eng, int64_t now, const char *id)
{
    assert_int_equal(sl_claim_release(eng, t_find(eng, id), SL_REASON_RELEASED, now), 0);
}

uint64_t t_used(sl_engine *eng, sl_kind kind, const char *name)
{
    sl_lock_view v;
    assert_int_equal(sl_lock_lookup(eng, kind, name, &v, NULL), 0);
    return v.used;
}

static char text[1 << 16];

static void append(size_t *n, const char *a, const char *b)
{
    int w = snprintf(text + *n, sizeof(text) - *n, "%s%s:%s", *n ? " " : "", a, b);
    assert_true(w > 0 && (size_t)w < sizeof(text) - *n);
    *n += (size_t)w;
}

const char *t_events(sl_engine *eng)
{
    sl_changes ch;
    sl_engine_changes(eng, &ch);
    size_t n = 0;
    text[0] = '\0';
    for (size_t i = 0; i < ch.nevents; i++) {
        const sl_event *ev = &ch.events[i];
        sl_claim_view v;
        const char *who = ev->name;
        if (ev->claim) {
            sl_claim_get(ev->claim, &v);
            who = v.id;
        }
        append(&n, sl_event_type_name(ev->type), who);
    }
    sl_engine_changes_clear(eng);
    return text;
}

const char *t_with_state(sl_engine *eng, sl_state s)
{
    size_t n = 0;
    text[0] = '\0';
    for (const sl_claim *c = sl_claim_next(eng, NULL); c; c = sl_claim_next(eng, c)) {
        sl_claim_view v;
        sl_claim_get(c, &v);
        if (v.state != s)
            continue;
        int w = snprintf(text + n, sizeof(text) - n, "%s%s", n ? " " : "", v.id);
        assert_true(w > 0 && (size_t)w < sizeof(text) - n);
        n += (size_t)w;
    }
    return text;
}
