/* hash.c - the intrusive string-keyed hash table and its SipHash-2-4.
 *
 * Names and ids come from clients, so buckets are chosen by SipHash-2-4 under
 * a key the embedder keeps secret; nobody outside can craft names that pile
 * into one chain. Each node remembers its hash, which lets a lookup skip
 * most key comparisons and lets the table double without hashing again. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hash.h"

#define FIRST_BUCKETS 16

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

static size_t bucket_of(const sl_hash *h, uint64_t hash)
{
    return (size_t)(hash & (h->nbuckets - 1));
}

static uint64_t hash_key(const sl_hash *h, const char *key, size_t len)
{
    return sl__siphash(h->k0, h->k1, key, len);
}

/* Relinks every node into a table twice the size; stored hashes spare us
 * from hashing the keys again. */
static void grow(sl_hash *h)
{
    sl_hnode **old = h->buckets;
    size_t nold = h->nbuckets;
    h->nbuckets = nold ? nold * 2 : FIRST_BUCKETS;
    h->buckets = sl__calloc(h->mem, h->nbuckets, sizeof *h->buckets);
    for (size_t i = 0; i < nold; i++) {
        sl_hnode *n = old[i];
        while (n != NULL) {
            sl_hnode *next = n->next;
            size_t b = bucket_of(h, n->hash);
            n->next = h->buckets[b];
            h->buckets[b] = n;
            n = next;
        }
    }
    sl__free(h->mem, old);
}

void sl__hash_init(sl_hash *h, sl_mem *mem, sl_hash_key_fn key, uint64_t k0, uint64_t k1)
{
    h->buckets = NULL;
    h->nbuckets = 0;
    h->count = 0;
    h->key = key;
    h->mem = mem;
    h->k0 = k0;
    h->k1 = k1;
}

void sl__hash_free(sl_hash *h)
{
    sl__free(h->mem, h->buckets);
    h->buckets = NULL;
    h->nbuckets = 0;
    h->count = 0;
}

sl_hnode *sl__hash_find(const sl_hash *h, const char *key, size_t len)
{
    if (h->count == 0)
        return NULL;
    uint64_t hash = hash_key(h, key, len);
    for (sl_hnode *n = h->buckets[bucket_of(h, hash)]; n; n = n->next) {
        if (n->hash != hash)
            continue;
        size_t nlen;
        const char *nkey = h->key(n, &nlen);
        if (nlen == len && (len == 0 || memcmp(nkey, key, len) == 0))
            return n;
    }
    return NULL;
}

void sl__hash_insert(sl_hash *h, sl_hnode *n)
{
    size_t len;
    const char *key = h->key(n, &len);
    n->hash = hash_key(h, key, len);
    if (h->buckets == NULL)
        grow(h);
    size_t b = bucket_of(h, n->hash);
    n->next = h->buckets[b];
    h->buckets[b] = n;
    if (++h->count > h->nbuckets)
        grow(h);
}

void sl__hash_remove(sl_hash *h, sl_hnode *n)
{
    sl_hnode **link = &h->buckets[bucket_of(h, n->hash)];
    while (*link != n)
        link = &(*link)->next;
    *link = n->next;
    n->next = NULL;
    h->count--;
}

/* The first node in bucket b or any later one. */
static sl_hnode *scan(const sl_hash *h, size_t b)
{
    for (; b < h->nbuckets; b++)
        if (h->buckets[b] != NULL)
            return h->buckets[b];
    return NULL;
}

sl_hnode *sl__hash_first(const sl_hash *h)
{
    return scan(h, 0);
}

sl_hnode *sl__hash_next(const sl_hash *h, const sl_hnode *n)
{
    if (n->next != NULL)
        return n->next;
    return scan(h, bucket_of(h, n->hash) + 1);
}

size_t sl__hash_count(const sl_hash *h)
{
    return h->count;
}
