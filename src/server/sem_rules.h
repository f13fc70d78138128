/* sem_rules.h - a semaphore's scheduling rules as JSON (sem_rules.c). */
#ifndef SL_SERVER_SEM_RULES_H
#define SL_SERVER_SEM_RULES_H

#include <stddef.h>

#include <jansson.h>

#include "engine.h"

/* The control bytes a rebalance key may not have, for strcspn: 0x01-0x1f
 * and 0x7f (a 0x00 ends the key). A claim's rebalance_key refuses them, so
 * a weight for such a key could never apply: the API and the file refuse it. */
#define SL_CONTROL_BYTES                                                                          \
    "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16" \
    "\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f"

/* The fields a PUT body may add to limit, strategy, lease, overtake_limit. */
#define SL_SEM_RULE_FIELDS                                                                  \
    "preempt", "preempt_grace", "max_pending", "on_full", "weights", "default_weight", "rate", \
        "burst", "backdate"

/* Reads the rules of a PUT body into o->rules (o->strategy already read);
 * weights point into space (SL_WEIGHTS_MAX entries) and body's keys. -1 and
 * a message naming the field and the fix. */
int sl_sem_rules_parse(json_t *body, sl_sem_opts *o, sl_weight *space, char *err, size_t cap);
/* Adds the rules to a semaphore's JSON object. */
void sl_sem_rules_json(json_t *o, sl_strategy strategy, const sl_sem_rules *r);

#endif
