/* engine.c - the engine object: creation, options, time, statistics, and
 * the small helpers every other file of the engine shares. */
#include <string.h>

#include "engine_int.h"

void sl_engine_opts_default(sl_engine_opts *opts)
{
    memset(opts, 0, sizeof(*opts));
    opts->hash_key[0] = 0x736c756963652d31ull; /* embedders should pass a secret */
    opts->hash_key[1] = 0x656e67696e652d6bull;
    opts->default_lease_ms = 0;
    opts->default_grace_ms = 30000;
    opts->ended_retention_ms = 3600000;
    opts->idle_locks_max = 100000;
    opts->claims_max = 10000000;
    opts->configs_max = 100000;
    opts->backdate_skew_ms = SL_BACKDATE_SKEW_DEFAULT_MS;
}

static const char *claim_key(const sl_hnode *n, size_t *len)
{
    const sl_claim *c = sl__container_of(n, sl_claim, hnode);
    *len = c->idlen;
    return c->id;
}

static const char *lock_key(const sl_hnode *n, size_t *len)
{
    const sl_lock *l = sl__container_of(n, sl_lock, hnode);
    *len = l->keylen;
    return l->key;
}

static const char *config_key(const sl_hnode *n, size_t *len)
{
    const sl_config *c = sl__container_of(n, sl_config, hnode);
    *len = c->len;
    return c->name;
}

int sl_engine_new(const sl_engine_opts *opts, sl_engine **out)
{
    sl_engine_opts o;
    if (opts)
        o = *opts;
    else
        sl_engine_opts_default(&o);
    sl_mem mem;
    sl__mem_init(&mem, o.alloc ? o.alloc : sl__default_alloc, o.alloc ? o.alloc_ud : NULL);
    sl_engine *eng = sl__calloc(&mem, 1, sizeof(*eng));
    eng->mem = mem;
    eng->opts = o;
    uint64_t k0 = o.hash_key[0], k1 = o.hash_key[1];
    sl__hash_init(&eng->claims, &eng->mem, claim_key, k0, k1);
    sl__hash_init(&eng->locks, &eng->mem, lock_key, k0, k1);
    sl__hash_init(&eng->configs, &eng->mem, config_key, k0, k1);
    sl__hash_init(&eng->idems, &eng->mem, sl__idem_key, k0, k1);
    sl__hash_init(&eng->actors, &eng->mem, sl__actor_key, k0, k1);
    sl__heap_init(&eng->timers, &eng->mem);
    sl__heap_init(&eng->rate_timers, &eng->mem);
    /* Allocated once: building a claim needs up to SL_CLAIM_LOCKS_MAX locks
     * of scratch (37 KB), too much for the stack and the hot path. */
    eng->xlocks = sl__malloc(&eng->mem, SL_CLAIM_LOCKS_MAX * sizeof(*eng->xlocks));
    eng->next_seq = 1;
    eng->next_arrival = 1;
    eng->next_grant = 1;
    *out = eng;
    return 0;
}

void sl_engine_free(sl_engine *eng)
{
    if (!eng)
        return;
    sl__changes_free(eng);
    sl__heap_free(&eng->timers); /* first: it resets the timers inside claims */
    sl__heap_free(&eng->rate_timers);
    sl_claim *c = eng->chead;
    while (c) {
        sl_claim *next = c->next;
        sl__claim_free(eng, c);
        c = next;
    }
    sl__lock_free_all(eng);
    sl__config_free_all(eng);
    sl__hash_free(&eng->claims);
    sl__hash_free(&eng->locks);
    sl__hash_free(&eng->configs);
    sl__hash_free(&eng->idems);
    sl__hash_free(&eng->actors);
    sl__pvec_free(&eng->mem, &eng->patterns);
    sl__pvec_free(&eng->mem, &eng->dirty);
    sl__pvec_free(&eng->mem, &eng->cand);
    sl__pvec_free(&eng->mem, &eng->arrivals);
    sl__pvec_free(&eng->mem, &eng->preempt);
    sl__pvec_free(&eng->mem, &eng->preempt_retry);
    sl__pvec_free(&eng->mem, &eng->victims);
    sl__free(&eng->mem, eng->sim);
    sl__free(&eng->mem, eng->xlocks);
    sl__free(&eng->mem, eng->psnap);
    sl_mem mem = eng->mem;
    sl__free(&mem, eng);
}

void sl_engine_advance(sl_engine *eng, int64_t now)
{
    sl__timers_fire(eng, now);
}

int64_t sl_engine_next_deadline(const sl_engine *eng)
{
    const sl_timer *t = sl__heap_peek(&eng->timers), *r = sl__heap_peek(&eng->rate_timers);
    int64_t at = t ? t->at : INT64_MAX;
    return r && r->at < at ? r->at : at;
}

void sl_engine_stats_get(const sl_engine *eng, sl_engine_stats *out)
{
    memset(out, 0, sizeof(*out));
    out->claims = sl__hash_count(&eng->claims);
    out->pending = eng->npending;
    out->held = eng->nheld;
    out->ended = eng->nended;
    out->locks = eng->nactive + eng->nidle;
    out->idle_locks = eng->nidle;
    out->configs = sl__hash_count(&eng->configs);
    out->timers = sl__heap_count(&eng->timers);
    out->next_seq = eng->next_seq;
    out->grants = eng->grants;
    out->preemptions = eng->preemptions;
    out->mem_blocks = eng->mem.live;
}

void sl__pvec_push(sl_mem *m, sl_pvec *v, void *p)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 16;
        v->v = sl__realloc(m, v->v, v->cap * sizeof(*v->v));
    }
    v->v[v->n++] = p;
}

void sl__pvec_free(sl_mem *m, sl_pvec *v)
{
    sl__free(m, v->v);
    v->v = NULL;
    v->n = v->cap = 0;
}

static void copy_bounded(char *dst, size_t cap, const char *src)
{
    size_t n = src ? strlen(src) : 0;
    if (n >= cap)
        n = cap - 1;
    if (n)
        memcpy(dst, src, n);
    dst[n] = '\0';
}

void sl__error_set(sl_error *err, int code, const char *what, const char *field,
                   const char *name, int64_t value)
{
    if (!err)
        return;
    err->code = code;
    err->what = what;
    copy_bounded(err->field, sizeof(err->field), field);
    copy_bounded(err->name, sizeof(err->name), name);
    err->value = value;
    err->asked = 0;
}
