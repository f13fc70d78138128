/* hash.c - the intrusive string-keyed hash table and its SipHash-2-4.
 *
 * Open addressing with linear probing: the slot array holds each node's
 * hash beside its pointer, so a lookup reads one run of slots and touches a
 * node only when the hashes match. With a million claims, that is one cache
 * miss per lookup or removal instead of one per chain link. Names and ids
 * come from clients, so slots are chosen by SipHash-2-4 under a key the
 * embedder keeps secret: nobody outside can craft names that pile up. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hash.h"

#define FIRST_SLOTS 16

static uint64_t rotl(uint64_t x, int b)
{
    return (x << b) | (x >> (64 - b));
}

static void sipround(uint64_t v[4])
{
    v[0] += v[1];
    v[1] = rotl(v[1], 13) ^ v[0];
    v[0] = rotl(v[0], 32);
    v[2] += v[3];
    v[3] = rotl(v[3], 16) ^ v[2];
    v[0] += v[3];
    v[3] = rotl(v[3], 21) ^ v[0];
    v[2] += v[1];
    v[1] = rotl(v[1], 17) ^ v[2];
    v[2] = rotl(v[2], 32);
}

/* Little-endian whatever the host, so hashes match across machines. */
static uint64_t load_le(const unsigned char *p, size_t n)
{
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++)
        x |= (uint64_t)p[i] << (8 * i);
    return x;
}

static void absorb(uint64_t v[4], uint64_t m)
{
    v[3] ^= m;
    sipround(v);
    sipround(v);
    v[0] ^= m;
}

uint64_t sl__siphash(uint64_t k0, uint64_t k1, const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t v[4] = {
        k0 ^ UINT64_C(0x736f6d6570736575),
        k1 ^ UINT64_C(0x646f72616e646f6d),
        k0 ^ UINT64_C(0x6c7967656e657261),
        k1 ^ UINT64_C(0x7465646279746573),
    };
    size_t whole = len - len % 8;
    for (size_t i = 0; i < whole; i += 8)
        absorb(v, load_le(p + i, 8));
    /* The last block carries the length so that trailing zeros count. */
    uint64_t last = (uint64_t)(len & 0xff) << 56;
    if (len > whole)
        last |= load_le(p + whole, len - whole);
    absorb(v, last);
    v[2] ^= 0xff;
    for (int i = 0; i < 4; i++)
        sipround(v);
    return v[0] ^ v[1] ^ v[2] ^ v[3];
}

static uint64_t hash_key(const sl_hash *h, const char *key, size_t len)
{
    return sl__siphash(h->k0, h->k1, key, len);
}

static size_t home(const sl_hash *h, uint64_t hash)
{
    return (size_t)(hash & (h->cap - 1));
}

/* Puts n in the first free slot from its home on; the table has room. */
static void place(sl_hash *h, sl_hnode *n)
{
    size_t i = home(h, n->hash);
    while (h->slots[i].node)
        i = (i + 1) & (h->cap - 1);
    h->slots[i].hash = n->hash;
    h->slots[i].node = n;
}

/* Moves every node into a table twice the size; stored hashes spare us
 * from hashing the keys again. */
static void grow(sl_hash *h)
{
    sl_hslot *old = h->slots;
    size_t nold = h->cap;
    h->cap = nold ? nold * 2 : FIRST_SLOTS;
    h->slots = sl__calloc(h->mem, h->cap, sizeof *h->slots);
    for (size_t i = 0; i < nold; i++)
        if (old[i].node)
            place(h, old[i].node);
    sl__free(h->mem, old);
}

void sl__hash_init(sl_hash *h, sl_mem *mem, sl_hash_key_fn key, uint64_t k0, uint64_t k1)
{
    h->slots = NULL;
    h->cap = 0;
    h->count = 0;
    h->key = key;
    h->mem = mem;
    h->k0 = k0;
    h->k1 = k1;
}

void sl__hash_free(sl_hash *h)
{
    sl__free(h->mem, h->slots);
    h->slots = NULL;
    h->cap = 0;
    h->count = 0;
}

uint64_t sl__hash_of(const sl_hash *h, const char *key, size_t len)
{
    return hash_key(h, key, len);
}

sl_hnode *sl__hash_find(const sl_hash *h, const char *key, size_t len)
{
    if (h->count == 0)
        return NULL;
    return sl__hash_find_hashed(h, key, len, hash_key(h, key, len));
}

sl_hnode *sl__hash_find_hashed(const sl_hash *h, const char *key, size_t len, uint64_t hash)
{
    if (h->count == 0)
        return NULL;
    for (size_t i = home(h, hash); h->slots[i].node; i = (i + 1) & (h->cap - 1)) {
        if (h->slots[i].hash != hash)
            continue;
        size_t nlen;
        const char *nkey = h->key(h->slots[i].node, &nlen);
        if (nlen == len && (len == 0 || memcmp(nkey, key, len) == 0))
            return h->slots[i].node;
    }
    return NULL;
}

/* Grows past a load of 7/10: linear probing stays short below that. */
void sl__hash_insert(sl_hash *h, sl_hnode *n)
{
    size_t len;
    const char *key = h->key(n, &len);
    sl__hash_insert_hashed(h, n, hash_key(h, key, len));
}

void sl__hash_insert_hashed(sl_hash *h, sl_hnode *n, uint64_t hash)
{
    n->hash = hash;
    if ((h->count + 1) * 10 > h->cap * 7)
        grow(h);
    place(h, n);
    h->count++;
}

static size_t slot_of(const sl_hash *h, const sl_hnode *n)
{
    size_t i = home(h, n->hash);
    while (h->slots[i].node != n)
        i = (i + 1) & (h->cap - 1);
    return i;
}

/* Backward-shift deletion: the nodes after the hole that could live in it
 * move back, so that no probe sequence is cut and no tombstones pile up. */
void sl__hash_remove(sl_hash *h, sl_hnode *n)
{
    size_t mask = h->cap - 1;
    size_t hole = slot_of(h, n);
    for (size_t i = (hole + 1) & mask; h->slots[i].node; i = (i + 1) & mask) {
        size_t want = home(h, h->slots[i].hash);
        /* It may move back unless its home lies after the hole, cyclically. */
        if (((i - want) & mask) >= ((i - hole) & mask)) {
            h->slots[hole] = h->slots[i];
            hole = i;
        }
    }
    h->slots[hole].node = NULL;
    h->slots[hole].hash = 0;
    h->count--;
}

static sl_hnode *scan(const sl_hash *h, size_t i)
{
    for (; i < h->cap; i++)
        if (h->slots[i].node)
            return h->slots[i].node;
    return NULL;
}

sl_hnode *sl__hash_first(const sl_hash *h)
{
    return scan(h, 0);
}

sl_hnode *sl__hash_next(const sl_hash *h, const sl_hnode *n)
{
    return scan(h, slot_of(h, n) + 1);
}

size_t sl__hash_count(const sl_hash *h)
{
    return h->count;
}
