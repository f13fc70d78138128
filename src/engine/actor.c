/* actor.c - who made a claim, and how many live and waiting claims each
 * maker has.
 *
 * The actor is plain data to the engine: the embedder's name for whoever
 * asked (the server's token name; none on a server without tokens). It is
 * kept with the claim and saved with it, so the counts below come back
 * with the claims after a restart or on a new leader, and the embedder
 * may bound them (the server's per-token quotas). Many claims share few
 * actors: each claim points at one node per actor, which holds the name
 * once and the counts, and goes when its last claim is freed. */
#include <string.h>

#include "engine_int.h"

struct sl_actor {
    sl_hnode hnode; /* eng->actors, by name */
    size_t claims;  /* claims pointing here, ended and retained ones included */
    size_t live, pending;
    uint16_t len;
    char name[];
};

const char *sl__actor_key(const sl_hnode *n, size_t *len)
{
    const sl_actor *a = sl__container_of(n, sl_actor, hnode);
    *len = a->len;
    return a->name;
}

void sl__actor_attach(sl_engine *eng, sl_claim *c, const char *name)
{
    if (!name || !*name)
        return;
    size_t len = strlen(name); /* at most SL_ACTOR_MAX: checked by the callers */
    uint64_t h = sl__hash_of(&eng->actors, name, len);
    sl_hnode *n = sl__hash_find_hashed(&eng->actors, name, len, h);
    sl_actor *a = n ? sl__container_of(n, sl_actor, hnode) : NULL;
    if (!a) {
        a = sl__calloc(&eng->mem, 1, sizeof(*a) + len + 1);
        memcpy(a->name, name, len);
        a->len = (uint16_t)len;
        sl__hash_insert_hashed(&eng->actors, &a->hnode, h);
    }
    a->claims++;
    if (!sl_state_ended((sl_state)c->state))
        a->live++;
    c->actor = a;
}

void sl__actor_ended(sl_claim *c)
{
    if (c->actor)
        c->actor->live--;
}

void sl__actor_pending(sl_claim *c, bool add)
{
    if (c->actor && add)
        c->actor->pending++;
    else if (c->actor)
        c->actor->pending--;
}

void sl__actor_free(sl_engine *eng, sl_claim *c)
{
    sl_actor *a = c->actor;
    c->actor = NULL;
    if (!a)
        return;
    if (!sl_state_ended((sl_state)c->state))
        a->live--; /* the engine is being freed with the claim live */
    if (--a->claims > 0)
        return;
    sl__hash_remove(&eng->actors, &a->hnode);
    sl__free(&eng->mem, a);
}

const char *sl__actor_name(const sl_claim *c)
{
    return c->actor ? c->actor->name : NULL;
}

void sl_engine_actor_get(const sl_engine *eng, const char *name, sl_actor_counts *out)
{
    memset(out, 0, sizeof(*out));
    sl_hnode *n = name ? sl__hash_find(&eng->actors, name, strlen(name)) : NULL;
    if (!n)
        return;
    const sl_actor *a = sl__container_of(n, sl_actor, hnode);
    out->live = a->live;
    out->pending = a->pending;
}
