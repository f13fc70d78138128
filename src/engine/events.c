/* events.c - the event log and the batch of changes for the store.
 *
 * Every transition appends an event with the next sequence number, and
 * every claim, token and configuration it touches is noted once. The store
 * takes the whole batch (sl_engine_changes) and writes it in one
 * transaction; sl_engine_changes_clear then starts the next batch. Strings
 * the batch needs beyond the life of their owners (ids of purged claims,
 * names of deleted configurations) are copied into it. */
#include <string.h>

#include "engine_int.h"

void sl_engine_act_as(sl_engine *eng, const char *actor)
{
    if (actor == eng->actor || (actor && eng->actor && strcmp(actor, eng->actor) == 0))
        return;
    sl__free(&eng->mem, eng->actor);
    eng->actor = actor ? sl__strndup(&eng->mem, actor, strlen(actor)) : NULL;
    eng->actor_batch = NULL;
}

/* The actor for an event the call under way was asked for. Copied into the
 * batch once, since a later act_as frees the engine's copy while the batch
 * still holds events that point to it. */
static const char *asked_by(sl_engine *eng)
{
    if (!eng->actor)
        return SL_ACTOR_SERVER;
    if (!eng->actor_batch)
        eng->actor_batch = sl__batch_strdup(eng, eng->actor, strlen(eng->actor));
    return eng->actor_batch;
}

void sl__acting(sl_claim *const *set, size_t n, bool on)
{
    for (size_t i = 0; i < n; i++)
        set[i]->acting = on;
}

sl_event *sl__event_add(sl_engine *eng, sl_event_type type, sl_claim *c, int64_t now)
{
    if (eng->nevents == eng->capevents) {
        eng->capevents = eng->capevents ? eng->capevents * 2 : 64;
        eng->events = sl__realloc(&eng->mem, eng->events, eng->capevents * sizeof(sl_event));
    }
    sl_event *ev = &eng->events[eng->nevents++];
    memset(ev, 0, sizeof(*ev));
    ev->seq = eng->next_seq++;
    ev->time_ms = now;
    ev->type = type;
    ev->claim = c;
    ev->actor = c && c->acting ? asked_by(eng) : SL_ACTOR_SERVER;
    if (c)
        sl_claim_note_event(eng, c, ev->seq);
    return ev;
}

sl_event *sl__event_sem(sl_engine *eng, sl_event_type type, const sl_config *cfg,
                        const char *name, int64_t now)
{
    sl_event *ev = sl__event_add(eng, type, NULL, now);
    ev->name = sl__batch_strdup(eng, name, strlen(name));
    ev->actor = asked_by(eng); /* only a call setting or deleting it makes one */
    if (cfg) {
        ev->limit = cfg->limit;
        ev->strategy = cfg->strategy;
        ev->lease_ms = cfg->lease_ms;
    }
    return ev;
}

void *sl__batch_alloc(sl_engine *eng, size_t size)
{
    void *p = sl__calloc(&eng->mem, 1, size);
    sl__pvec_push(&eng->mem, &eng->strings, p);
    return p;
}

char *sl__batch_strdup(sl_engine *eng, const char *s, size_t len)
{
    char *copy = sl__strndup(&eng->mem, s, len);
    sl__pvec_push(&eng->mem, &eng->strings, copy);
    return copy;
}

void sl__changes_lock(sl_engine *eng, sl_lock *l)
{
    if (l->tok_dirty)
        return;
    l->tok_dirty = true;
    sl__pvec_push(&eng->mem, &eng->chg_locks, l);
}

void sl__changes_config(sl_engine *eng, const char *name)
{
    sl__pvec_push(&eng->mem, &eng->chg_configs, sl__batch_strdup(eng, name, strlen(name)));
}

void sl_engine_changes(const sl_engine *eng, sl_changes *out)
{
    out->claims = (sl_claim *const *)eng->chg_claims.v;
    out->nclaims = eng->chg_claims.n;
    out->purged = (const char *const *)eng->purged.v;
    out->purged_claims = (const sl_claim *const *)eng->purged_claims.v;
    out->npurged = eng->purged.n;
    out->locks = (const sl_lock *const *)eng->chg_locks.v;
    out->nlocks = eng->chg_locks.n;
    out->evicted = (const char *const *)eng->evicted.v;
    out->nevicted = eng->evicted.n;
    out->configs = (const char *const *)eng->chg_configs.v;
    out->nconfigs = eng->chg_configs.n;
    out->events = eng->events;
    out->nevents = eng->nevents;
    out->next_seq = eng->next_seq;
    out->next_arrival = eng->next_arrival;
    out->next_grant = eng->next_grant;
    out->token_floor = eng->token_floor;
}

bool sl_engine_changes_pending(const sl_engine *eng)
{
    return eng->chg_claims.n || eng->purged.n || eng->chg_locks.n || eng->evicted.n ||
           eng->chg_configs.n || eng->nevents;
}

static void batch_reset(sl_engine *eng)
{
    for (size_t i = 0; i < eng->chg_claims.n; i++)
        ((sl_claim *)eng->chg_claims.v[i])->dirty = false;
    for (size_t i = 0; i < eng->chg_locks.n; i++)
        ((sl_lock *)eng->chg_locks.v[i])->tok_dirty = false;
    for (size_t i = 0; i < eng->strings.n; i++)
        sl__free(&eng->mem, eng->strings.v[i]);
    while (eng->grave) {
        sl_claim *c = eng->grave;
        eng->grave = c->grave_next;
        sl__claim_free(eng, c);
    }
    eng->chg_claims.n = eng->chg_locks.n = eng->chg_configs.n = 0;
    eng->purged.n = eng->purged_claims.n = eng->evicted.n = eng->strings.n = 0;
    eng->nevents = 0;
    eng->actor_batch = NULL;
}

void sl_engine_changes_clear(sl_engine *eng)
{
    batch_reset(eng);
    sl__lock_evict_excess(eng);
}

void sl__changes_free(sl_engine *eng)
{
    batch_reset(eng);
    sl__pvec_free(&eng->mem, &eng->chg_claims);
    sl__pvec_free(&eng->mem, &eng->chg_locks);
    sl__pvec_free(&eng->mem, &eng->chg_configs);
    sl__pvec_free(&eng->mem, &eng->purged);
    sl__pvec_free(&eng->mem, &eng->purged_claims);
    sl__pvec_free(&eng->mem, &eng->evicted);
    sl__pvec_free(&eng->mem, &eng->strings);
    sl__free(&eng->mem, eng->events);
    sl__free(&eng->mem, eng->actor);
    eng->actor = NULL;
    eng->events = NULL;
    eng->capevents = 0;
}
