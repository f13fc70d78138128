/* sem_rules.h - a semaphore's scheduling rules as JSON (sem_rules.c). */
#ifndef SL_SERVER_SEM_RULES_H
#define SL_SERVER_SEM_RULES_H

#include <stddef.h>

#include <jansson.h>

#include "engine.h"

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
