/* mem.h - the engine's one place of allocation.
 *
 * Every byte the engine holds comes through sl__malloc/sl__realloc/sl__free,
 * which call the allocator the embedder passed to sl_engine_new (Lua's
 * lua_Alloc shape: one function, size 0 means free). The allocator must not
 * return NULL: the daemon's aborts through xmalloc, the default one here
 * aborts too, so engine code never checks for NULL. */
#ifndef SL_ENGINE_MEM_H
#define SL_ENGINE_MEM_H

#include <stddef.h>

#include "engine.h"

typedef struct sl_mem {
    sl_alloc_fn fn; /* never NULL */
    void *ud;
    size_t live;    /* blocks allocated and not yet freed, for tests and stats */
} sl_mem;

void sl__mem_init(sl_mem *m, sl_alloc_fn fn, void *ud);
/* A request for 0 bytes still gets a distinct block: these never return NULL,
 * and a size of 0 never reaches the allocator, where it would mean free. */
void *sl__malloc(sl_mem *m, size_t n);
void *sl__calloc(sl_mem *m, size_t count, size_t size);
void *sl__realloc(sl_mem *m, void *p, size_t n); /* p may be NULL */
void sl__free(sl_mem *m, void *p);               /* p may be NULL */
/* A NUL-terminated copy of the first len bytes of s. */
char *sl__strndup(sl_mem *m, const char *s, size_t len);

/* An sl_alloc_fn over realloc/free that aborts when memory runs out. */
void *sl__default_alloc(void *ud, void *ptr, size_t size);

#endif
