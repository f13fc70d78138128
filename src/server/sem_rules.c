/* sem_rules.c - a semaphore's scheduling rules in the API's words: read
 * from a PUT body, written into a semaphore's JSON (docs/api.md, "The
 * semaphore's rules").
 *
 * Every rule is off unless its field is given; reading a semaphore shows
 * them all, so that a client sees what applies without knowing defaults. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "json_fields.h"
#include "sem_rules.h"
#include "server.h"

#define PREEMPT_GRACE_DEFAULT_MS 30000

static int whole(json_t *v, const char *field, uint32_t lo, uint32_t hi, uint32_t *out,
                 char *err, size_t cap)
{
    if (!v)
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        char text[80];
        sl_json_value_text(v, text, sizeof(text));
        snprintf(err, cap, "%s must be a whole number from %" PRIu32 " to %" PRIu32 ", not %s",
                 field, lo, hi, text);
        return -1;
    }
    *out = (uint32_t)json_integer_value(v);
    return 0;
}

static int preempt_rules(json_t *body, sl_sem_rules *r, char *err, size_t cap)
{
    json_t *p = json_object_get(body, "preempt"), *g = json_object_get(body, "preempt_grace");
    if (p && !json_is_boolean(p)) {
        snprintf(err, cap, "preempt must be true or false, not %s", sl_json_type_words(p));
        return -1;
    }
    r->preempt = p && json_is_true(p);
    if (g && !r->preempt) {
        snprintf(err, cap, "preempt_grace applies only with \"preempt\": true; leave it out");
        return -1;
    }
    r->preempt_grace_ms = r->preempt ? PREEMPT_GRACE_DEFAULT_MS : 0;
    return sl_body_duration(g, "preempt_grace", &r->preempt_grace_ms, err, cap);
}

static int queue_rules(json_t *body, sl_sem_rules *r, char *err, size_t cap)
{
    if (whole(json_object_get(body, "max_pending"), "max_pending", 0, SL_LIMIT_MAX,
              &r->max_pending, err, cap) != 0)
        return -1;
    json_t *f = json_object_get(body, "on_full");
    if (!f)
        return 0;
    if (!json_is_string(f) || sl_on_full_parse(json_string_value(f), &r->on_full) != 0) {
        char text[80];
        sl_json_value_text(f, text, sizeof(text));
        snprintf(err, cap, "on_full must be \"reject\" or \"drop_oldest\", not %s", text);
        return -1;
    }
    if (r->max_pending == 0) {
        snprintf(err, cap, "on_full applies only with a max_pending above 0; set max_pending");
        return -1;
    }
    return 0;
}

static int weight_rules(json_t *body, sl_strategy strategy, sl_sem_rules *r,
                        sl_weight *space, char *err, size_t cap)
{
    json_t *w = json_object_get(body, "weights"), *d = json_object_get(body, "default_weight");
    if ((w || d) && strategy != SL_REBALANCED) {
        snprintf(err, cap, "weights and default_weight apply to the rebalanced strategy only "
                           "(this semaphore is %s); leave them out",
                 sl_strategy_name(strategy));
        return -1;
    }
    if (whole(d, "default_weight", 1, SL_WEIGHT_MAX, &r->default_weight, err, cap) != 0)
        return -1;
    if (!w)
        return 0;
    if (!json_is_object(w) || json_object_size(w) > SL_WEIGHTS_MAX) {
        snprintf(err, cap, "weights must be an object of at most %d rebalance keys and their "
                           "weights, such as {\"paying\": 3, \"free\": 1}",
                 SL_WEIGHTS_MAX);
        return -1;
    }
    const char *key;
    json_t *v;
    json_object_foreach(w, key, v)
    {
        char field[300];
        snprintf(field, sizeof(field), "weights.%.253s", key);
        if (!*key || strlen(key) > SL_NAME_MAX) {
            snprintf(err, cap, "weights: a rebalance key is 1 to %d characters", SL_NAME_MAX);
            return -1;
        }
        size_t at = strcspn(key, SL_CONTROL_BYTES);
        if (key[at]) { /* no claim could give it: rebalance_key refuses them too */
            snprintf(err, cap,
                     "weights: a rebalance key has a control character (byte 0x%02x) at "
                     "position %zu; use printable characters only, as rebalance_key does",
                     (unsigned char)key[at], at + 1);
            return -1;
        }
        sl_weight *out = &space[r->nweights++];
        out->key = key;
        if (whole(v, field, 1, SL_WEIGHT_MAX, &out->weight, err, cap) != 0)
            return -1;
    }
    r->weights = space;
    return 0;
}

static int rate_rules(json_t *body, sl_sem_rules *r, char *err, size_t cap)
{
    json_t *rate = json_object_get(body, "rate"), *burst = json_object_get(body, "burst");
    if (burst && !rate) {
        snprintf(err, cap, "burst applies only with a rate; set rate, such as \"100/1m\"");
        return -1;
    }
    if (!rate)
        return 0;
    const char *problem = json_is_string(rate)
                              ? sl_rate_problem(json_string_value(rate))
                              : "is not a string";
    if (problem) {
        char text[80];
        sl_json_value_text(rate, text, sizeof(text));
        snprintf(err, cap, "rate: %s %s; a rate is N/PERIOD, such as \"100/1m\" or \"5/1s\"",
                 text, problem);
        return -1;
    }
    sl_rate_parse(json_string_value(rate), &r->rate_count, &r->rate_period_ms);
    return whole(burst, "burst", 1, SL_LIMIT_MAX, &r->rate_burst, err, cap);
}

int sl_sem_rules_parse(json_t *body, sl_sem_opts *o, sl_weight *space, char *err, size_t cap)
{
    sl_sem_rules *r = &o->rules;
    memset(r, 0, sizeof(*r));
    if (preempt_rules(body, r, err, cap) != 0 || queue_rules(body, r, err, cap) != 0 ||
        weight_rules(body, o->strategy, r, space, err, cap) != 0 ||
        rate_rules(body, r, err, cap) != 0)
        return -1;
    return sl_body_duration(json_object_get(body, "backdate"), "backdate", &r->backdate_ms, err,
                            cap);
}

static json_t *weights_json(const sl_sem_rules *r)
{
    json_t *w = json_object();
    for (size_t i = 0; i < r->nweights; i++)
        json_object_set_new(w, r->weights[i].key, json_integer(r->weights[i].weight));
    return w;
}

void sl_sem_rules_json(json_t *o, sl_strategy strategy, const sl_sem_rules *r)
{
    json_object_set_new(o, "preempt", json_boolean(r->preempt));
    if (r->preempt)
        json_object_set_new(o, "preempt_grace", sl_json_duration(r->preempt_grace_ms));
    json_object_set_new(o, "max_pending",
                        r->max_pending ? json_integer(r->max_pending) : json_null());
    if (r->max_pending)
        json_object_set_new(o, "on_full", json_string(sl_on_full_name(r->on_full)));
    if (strategy == SL_REBALANCED) {
        json_object_set_new(o, "weights", weights_json(r));
        json_object_set_new(o, "default_weight",
                            json_integer(r->default_weight ? r->default_weight : 1));
    }
    char rate[64];
    sl_rate_format(r->rate_count, r->rate_period_ms, rate, sizeof(rate));
    json_object_set_new(o, "rate", r->rate_count ? json_string(rate) : json_null());
    if (r->rate_count)
        json_object_set_new(o, "burst",
                            json_integer(r->rate_burst ? r->rate_burst : r->rate_count));
    json_object_set_new(o, "backdate", sl_json_duration(r->backdate_ms));
}
