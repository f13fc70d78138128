/* claim_body.h - POST /v1/claims bodies into engine requests (claim_body.c). */
#ifndef SL_SERVER_CLAIM_BODY_H
#define SL_SERVER_CLAIM_BODY_H

#include <jansson.h>

#include "engine.h"

typedef struct sl_claim_body {
    sl_claim_req req;
    sl_lock_req locks[SL_LOCKS_MAX];
    sl_tag tags[SL_TAGS_MAX];
    sl_group_req groups[SL_GROUPS_MAX];
    int64_t wait_ms;
    bool has_timeout; /* else the server's default_timeout applies */
} sl_claim_body;

/* Fills b from body (strings borrowed from it). -1 and a sentence in err
 * saying what is wrong and how to mend it. */
int sl_claim_body_parse(json_t *body, sl_claim_body *b, char *err, size_t cap);

#endif
