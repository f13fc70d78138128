/* evseq.c - the seqs of each claim's events (sl_claim_event_seqs).
 *
 * A claim's events lie far apart in the event log when it waits or holds
 * long: between its arrival and its end, every other claim's events. A
 * read of its events that walks the log from one to the next passes over
 * all of those (docs/store.md). The engine gives every event its seq, so
 * it notes them per claim, and a read goes straight to the records that
 * hold them.
 *
 * The seqs are kept as 32-bit offsets from the claim's first one. Up to 3
 * fit in the claim itself (a waiter has 2, a claim granted at once and
 * released 3): 16 bytes a claim, no allocation. Past that, in one block
 * that doubles from 4 up to SL_CLAIM_SEQS_MAX entries: 4 bytes an event.
 * Past that (or past an offset of 2^32), nothing more is noted and `more`
 * says that later events may follow unlisted: a read finds those by
 * walking the log from the last listed one. */
#include <string.h>

#include "engine_int.h"

#define SL_SEQS_BLOCK 255 /* c->nseqs: the seqs are in c->seqs.block */
#define SEQS_IN_PLACE 3

struct sl_evseqs {
    uint64_t first;
    uint32_t n, cap;
    bool more;
    uint32_t off[];
};

static sl_evseqs *grow(sl_engine *eng, sl_evseqs *s)
{
    uint32_t cap = s ? s->cap * 2 : 4;
    if (cap > SL_CLAIM_SEQS_MAX)
        cap = SL_CLAIM_SEQS_MAX;
    sl_evseqs *g = sl__realloc(&eng->mem, s, sizeof(*g) + cap * sizeof(uint32_t));
    if (!s)
        memset(g, 0, sizeof(*g));
    g->cap = cap;
    return g;
}

/* The seqs in place moved to a block, for one that does not go after them. */
static sl_evseqs *to_block(sl_engine *eng, sl_claim *c)
{
    sl_evseqs *s = grow(eng, NULL);
    s->first = c->seqs.in.first;
    s->n = c->nseqs;
    s->off[0] = 0;
    for (uint32_t i = 1; i < s->n; i++)
        s->off[i] = c->seqs.in.off[i - 1];
    c->seqs.block = s;
    c->nseqs = SL_SEQS_BLOCK;
    return s;
}

/* Whether seq went in place: the first, or after the last within reach. */
static bool in_place(sl_claim *c, uint64_t seq)
{
    if (c->nseqs == 0) {
        c->seqs.in.first = seq;
        c->nseqs = 1;
        return true;
    }
    if (c->nseqs == SL_SEQS_BLOCK || seq < c->seqs.in.first)
        return false;
    uint64_t d = seq - c->seqs.in.first;
    uint64_t last = c->nseqs > 1 ? c->seqs.in.off[c->nseqs - 2] : 0;
    if (d == last)
        return true; /* noted already */
    if (d < last || c->nseqs == SEQS_IN_PLACE || d > UINT32_MAX)
        return false;
    c->seqs.in.off[c->nseqs++ - 1] = (uint32_t)d;
    return true;
}

/* Inserts seq in order (a rebuild notes older seqs after newer ones). A
 * full list drops its newest seq for an older one, and says `more`. */
static void insert(sl_evseqs *s, uint64_t seq)
{
    uint32_t i = s->n;
    while (i > 0 && s->first + s->off[i - 1] > seq)
        i--;
    if (i > 0 && s->first + s->off[i - 1] == seq)
        return; /* noted already */
    if (s->n == s->cap) {
        s->more = true;
        if (i == s->n)
            return;
        s->n--;
    }
    memmove(&s->off[i + 1], &s->off[i], (s->n - i) * sizeof(uint32_t));
    s->off[i] = (uint32_t)(seq - s->first);
    s->n++;
}

/* Makes seq the new first: the offsets grow by the difference, which must
 * fit, else the newest seqs go (`more`). */
static void rebase(sl_evseqs *s, uint64_t seq)
{
    uint64_t d = s->first - seq;
    while (s->n > 0 && (uint64_t)s->off[s->n - 1] + d > UINT32_MAX) {
        s->n--;
        s->more = true;
    }
    for (uint32_t i = 0; i < s->n; i++)
        s->off[i] += (uint32_t)d;
    s->first = seq;
}

void sl_claim_note_event(sl_engine *eng, sl_claim *c, uint64_t seq)
{
    if (in_place(c, seq))
        return;
    sl_evseqs *s = c->nseqs == SL_SEQS_BLOCK ? c->seqs.block : to_block(eng, c);
    if (seq < s->first)
        rebase(s, seq);
    if (seq - s->first > UINT32_MAX) {
        s->more = true;
        return;
    }
    if (s->n == s->cap && s->cap < SL_CLAIM_SEQS_MAX)
        s = c->seqs.block = grow(eng, s);
    insert(s, seq);
}

size_t sl_claim_event_seqs(const sl_claim *c, uint64_t *out, size_t max, bool *more)
{
    if (c->nseqs != SL_SEQS_BLOCK) {
        size_t n = c->nseqs < max ? c->nseqs : max;
        for (size_t i = 0; i < n; i++)
            out[i] = c->seqs.in.first + (i ? c->seqs.in.off[i - 1] : 0);
        *more = n < c->nseqs;
        return n;
    }
    const sl_evseqs *s = c->seqs.block;
    size_t n = s->n < max ? s->n : max;
    for (size_t i = 0; i < n; i++)
        out[i] = s->first + s->off[i];
    *more = s->more || n < s->n;
    return n;
}

void sl__claim_seqs_free(sl_engine *eng, sl_claim *c)
{
    if (c->nseqs == SL_SEQS_BLOCK)
        sl__free(&eng->mem, c->seqs.block);
    c->nseqs = 0;
}
