/* mem.c - the engine's allocation wrappers and its default allocator.
 *
 * Everything the engine allocates goes through the embedder's sl_alloc_fn so
 * that the daemon can account for memory and tests can catch leaks; these
 * wrappers add the live-block count and turn the allocator's promise never to
 * return NULL into an abort, so no caller carries an error path for it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

void *sl__default_alloc(void *ud, void *ptr, size_t size)
{
    (void)ud;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    void *p = realloc(ptr, size);
    if (p == NULL) {
        /* Nothing in the engine can recover half-way through a change. */
        fputs("sluice: out of memory\n", stderr);
        abort();
    }
    return p;
}

void sl__mem_init(sl_mem *m, sl_alloc_fn fn, void *ud)
{
    m->fn = fn;
    m->ud = ud;
    m->live = 0;
}

/* Size 0 would ask the allocator to free, so it becomes the smallest block. */
static void *call(sl_mem *m, void *p, size_t n)
{
    void *r = m->fn(m->ud, p, n == 0 ? 1 : n);
    if (r == NULL)
        abort(); /* the allocator broke its contract; don't limp on */
    return r;
}

void *sl__malloc(sl_mem *m, size_t n)
{
    void *p = call(m, NULL, n);
    m->live++;
    return p;
}

void *sl__calloc(sl_mem *m, size_t count, size_t size)
{
    if (size != 0 && count > SIZE_MAX / size)
        abort(); /* a wrapped size would hand back a block too small */
    size_t n = count * size;
    void *p = sl__malloc(m, n);
    memset(p, 0, n);
    return p;
}

void *sl__realloc(sl_mem *m, void *p, size_t n)
{
    if (p == NULL)
        return sl__malloc(m, n);
    return call(m, p, n);
}

void sl__free(sl_mem *m, void *p)
{
    if (p == NULL)
        return;
    m->fn(m->ud, p, 0);
    m->live--;
}

char *sl__strndup(sl_mem *m, const char *s, size_t len)
{
    if (len == SIZE_MAX)
        abort(); /* no room for the terminator */
    char *d = sl__malloc(m, len + 1);
    if (len > 0)
        memcpy(d, s, len);
    d[len] = '\0';
    return d;
}
