/* claim_id.h - new claim ids: unguessable, and in creation order.
 *
 * An id is 22 characters of a base64 alphabet whose ASCII order is its
 * numeric order: 8 characters of the creation time in ms since the epoch
 * (the first a letter: see claim_id.c), then 14 characters (84 bits) from
 * the kernel's CSPRNG. 84 random bits keep ids unguessable (docs/api.md: knowing
 * an id is what lets a client act on its claim; UUIDv7 keeps 74). The time
 * prefix is for the store: the indexes on claim ids (claims.id,
 * events.claim) then grow at their right edge, as the rowid tables do, so a
 * commit dirties a few pages instead of one random page per claim. */
#ifndef SL_SERVER_CLAIM_ID_H
#define SL_SERVER_CLAIM_ID_H

#include <stdint.h>

#define SL_CLAIM_ID_LEN 22

/* out gets SL_CLAIM_ID_LEN characters and a NUL. Aborts if the kernel
 * refuses randomness (it only can before boot-time seeding, and a
 * guessable id is worse than no server). */
void sl_claim_id_new(int64_t now_ms, char out[SL_CLAIM_ID_LEN + 1]);

#endif
