/* idem.c - idempotency keys: a claim found again by the key its creator
 * gave, so that a creation retried after a lost answer finds the claim the
 * first attempt made instead of making a second one.
 *
 * The key is opaque to the engine (the server makes it of the caller's
 * token and the client's Idempotency-Key) and so is the fingerprint that
 * goes with it (the server's digest of the request, to tell a retry from
 * a different request reusing a key). Few claims have one, so it lives in
 * an allocation of its own that the claim points to, indexed in a hash
 * table of its own, and it goes when the claim is purged. */
#include <string.h>

#include "engine_int.h"

struct sl_idem {
    sl_hnode hnode; /* eng->idems, by key */
    sl_claim *claim;
    uint64_t fp;
    uint16_t len;
    char key[];
};

const char *sl__idem_key(const sl_hnode *n, size_t *len)
{
    const sl_idem *k = sl__container_of(n, sl_idem, hnode);
    *len = k->len;
    return k->key;
}

bool sl__idem_taken(const sl_engine *eng, const char *key)
{
    return key && sl__hash_find(&eng->idems, key, strlen(key)) != NULL;
}

void sl__idem_attach(sl_engine *eng, sl_claim *c, const char *key, uint64_t fp)
{
    if (!key || !*key)
        return;
    size_t len = strlen(key);
    sl_idem *k = sl__calloc(&eng->mem, 1, sizeof(*k) + len + 1);
    memcpy(k->key, key, len);
    k->len = (uint16_t)len;
    k->fp = fp;
    k->claim = c;
    sl__hash_insert(&eng->idems, &k->hnode);
    c->idem = k;
}

void sl__idem_detach(sl_engine *eng, sl_claim *c)
{
    if (c->idem && c->idem->claim) {
        sl__hash_remove(&eng->idems, &c->idem->hnode);
        c->idem->claim = NULL;
    }
}

void sl__idem_free(sl_engine *eng, sl_claim *c)
{
    sl__idem_detach(eng, c);
    sl__free(&eng->mem, c->idem);
    c->idem = NULL;
}

void sl__idem_view(const sl_claim *c, const char **key, uint64_t *fp)
{
    *key = c->idem ? c->idem->key : NULL;
    *fp = c->idem ? c->idem->fp : 0;
}

int sl_claim_drop_idem(sl_engine *eng, sl_claim *c)
{
    if (!sl_state_ended((sl_state)c->state))
        return SL_ECONFLICT;
    if (c->idem) {
        sl__idem_free(eng, c);
        sl__claim_touch(eng, c);
    }
    return 0;
}

sl_claim *sl_claim_find_idem(const sl_engine *eng, const char *key)
{
    sl_hnode *n = key ? sl__hash_find(&eng->idems, key, strlen(key)) : NULL;
    return n ? sl__container_of(n, sl_idem, hnode)->claim : NULL;
}
