/* hash.h - an intrusive hash table keyed by strings.
 *
 * Claims by id, locks by key, semaphore configurations by name and
 * rebalance keys by name are found through one of these. Nodes are embedded
 * in the structures they index; the table allocates only its slot array
 * (through the engine's sl_mem), open-addressed, and doubles it when the load
 * passes 7/10, so lookups stay O(1) on average. Keys come from clients, so the hash is
 * SipHash-2-4 keyed with a secret the embedder chooses: a client cannot
 * aim many names at one run of slots. */
#ifndef SL_ENGINE_HASH_H
#define SL_ENGINE_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"

typedef struct sl_hnode {
    uint64_t hash;
} sl_hnode;

typedef struct sl_hslot {
    uint64_t hash;
    sl_hnode *node; /* NULL: free */
} sl_hslot;

/* Returns the node's key and its length; the key must not change while the
 * node is in a table. */
typedef const char *(*sl_hash_key_fn)(const sl_hnode *n, size_t *len);

typedef struct sl_hash {
    sl_hslot *slots; /* NULL until the first insert */
    size_t cap;      /* 0 or a power of two */
    size_t count;
    sl_hash_key_fn key;
    sl_mem *mem;
    uint64_t k0, k1; /* SipHash key */
} sl_hash;

void sl__hash_init(sl_hash *h, sl_mem *mem, sl_hash_key_fn key, uint64_t k0, uint64_t k1);
/* Frees the slot array; the nodes belong to their owners. */
void sl__hash_free(sl_hash *h);
sl_hnode *sl__hash_find(const sl_hash *h, const char *key, size_t len);
/* Inserts n, whose key must not be in h yet. */
void sl__hash_insert(sl_hash *h, sl_hnode *n);
/* The same with the key's hash computed once (sl__hash_of) for a lookup
 * and the insert that follows it. */
uint64_t sl__hash_of(const sl_hash *h, const char *key, size_t len);
sl_hnode *sl__hash_find_hashed(const sl_hash *h, const char *key, size_t len, uint64_t hash);
void sl__hash_insert_hashed(sl_hash *h, sl_hnode *n, uint64_t hash);
/* Removes n, which must be in h. */
void sl__hash_remove(sl_hash *h, sl_hnode *n);
/* Iteration in no particular order. The table must not change during an
 * iteration: collect what to remove first, then remove it. */
sl_hnode *sl__hash_first(const sl_hash *h);
sl_hnode *sl__hash_next(const sl_hash *h, const sl_hnode *n);
size_t sl__hash_count(const sl_hash *h);

uint64_t sl__siphash(uint64_t k0, uint64_t k1, const void *data, size_t len);

#endif
