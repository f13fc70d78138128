/* support.h - helpers shared by the engine tests: claims from a one-line
 * spec, state and token lookups by id, and the batch's events as text.
 *
 * A spec is space-separated words:
 *   id=ID holder=H m:NAME s:NAME s:NAME*SLOTS prio=N created=MS key=K
 *   group=G cancel=none|pending|in-progress grace=MS lease=MS timeout=MS tag=K=V
 *   idem=KEY fp=N (an idempotency key and its fingerprint)
 * holder defaults to the id; unset lease and grace take the engine defaults. */
#ifndef SL_TEST_SUPPORT_H
#define SL_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* An engine with default options; an allocator that counts live blocks
 * backs it, and t_free checks that every block came back. */
sl_engine *t_engine(void);
sl_engine *t_engine_opts(sl_engine_opts *opts); /* alloc fields are overwritten */
void t_free(sl_engine *eng);

/* Creates a claim from a spec; fails the test on error. */
sl_claim *t_claim(sl_engine *eng, int64_t now, const char *spec);
/* Creates a claim from a spec and returns the engine's code (0 or SL_E*);
 * err may be NULL. */
int t_claim_rc(sl_engine *eng, int64_t now, const char *spec, sl_error *err);
void t_sem(sl_engine *eng, int64_t now, const char *name, uint32_t limit, sl_strategy s);
/* A semaphore that preempts, with that grace, configured at time 0. */
void t_preempt_sem(sl_engine *eng, const char *name, uint32_t limit, sl_strategy s,
                   int64_t grace);

sl_claim *t_find(sl_engine *eng, const char *id);
sl_claim_view t_view(sl_engine *eng, const char *id);
const char *t_id(const sl_claim *c); /* NULL for NULL */
/* Event i of the current batch, and how many there are (not cleared). */
sl_event t_event_at(sl_engine *eng, size_t i);
size_t t_nevents(sl_engine *eng);
sl_state t_state(sl_engine *eng, const char *id);
uint64_t t_token(sl_engine *eng, const char *id, size_t lock);
size_t t_position(sl_engine *eng, const char *id, size_t lock);
void t_release(sl_engine *eng, int64_t now, const char *id);
uint64_t t_used(sl_engine *eng, sl_kind kind, const char *name);

/* The batch's events as "type:claim type:claim ..." (semaphore events as
 * "type:NAME"); the batch is cleared. Returns a static buffer. */
const char *t_events(sl_engine *eng);
/* Ids of the claims with this state, in arrival order, space-separated. */
const char *t_with_state(sl_engine *eng, sl_state s);

#endif
