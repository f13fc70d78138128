/* claim_body.c - POST /v1/claims bodies into engine requests.
 *
 * Checks every field's type and shape and refuses unknown fields (a
 * misspelt "lokcs" should not become a claim on nothing); the engine then
 * checks what the claim asks for. Strings point into the parsed JSON, which
 * the caller keeps alive while the request is used. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "claim_body.h"
#include "duration.h"

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t cap, const char *fmt,
                                                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

static int parse_lock(json_t *item, size_t i, sl_lock_req *out, char *err, size_t cap)
{
    char field[32];
    snprintf(field, sizeof(field), "locks[%zu]", i);
    const char *mutex = NULL, *sem = NULL;
    json_int_t slots = 1;
    json_error_t jerr;
    if (!json_is_object(item) ||
        json_unpack_ex(item, &jerr, JSON_STRICT, "{s?s,s?s,s?I}", "mutex", &mutex, "semaphore",
                       &sem, "slots", &slots) != 0 ||
        (!mutex == !sem))
        return bad(err, cap,
                   "%s must be {\"mutex\": NAME} or {\"semaphore\": NAME, \"slots\": N}", field);
    if (slots < 1 || slots > SL_LIMIT_MAX)
        return bad(err, cap, "%s.slots must be a whole number from 1 to 1000000000", field);
    out->kind = mutex ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
    out->name = mutex ? mutex : sem;
    out->slots = (uint32_t)slots;
    return 0;
}

static int parse_locks(json_t *locks, sl_claim_body *b, char *err, size_t cap)
{
    if (!locks)
        return 0;
    if (!json_is_array(locks))
        return bad(err, cap, "%s must be an array of locks", "locks");
    if (json_array_size(locks) > SL_LOCKS_MAX)
        return bad(err, cap, "%s: a claim has at most 64 locks", "locks");
    size_t i;
    json_t *item;
    json_array_foreach(locks, i, item)
    {
        if (parse_lock(item, i, &b->locks[i], err, cap) != 0)
            return -1;
    }
    b->req.nlocks = json_array_size(locks);
    return 0;
}

static int parse_tags(json_t *tags, sl_claim_body *b, char *err, size_t cap)
{
    if (!tags)
        return 0;
    if (!json_is_object(tags))
        return bad(err, cap, "%s must be an object of string values", "tags");
    if (json_object_size(tags) > SL_TAGS_MAX)
        return bad(err, cap, "%s: a claim has at most 32 tags", "tags");
    const char *key;
    json_t *val;
    size_t n = 0;
    json_object_foreach(tags, key, val)
    {
        if (!json_is_string(val))
            return bad(err, cap, "tags.%s must be a string", key);
        b->tags[n].key = key;
        b->tags[n].value = json_string_value(val);
        n++;
    }
    b->req.ntags = n;
    return 0;
}

static int duration_field(json_t *v, const char *name, int64_t *ms, char *err, size_t cap)
{
    if (!v)
        return 0;
    if (json_is_string(v) && sl_duration_parse(json_string_value(v), ms) == 0)
        return 0;
    if (json_is_number(v) && sl_duration_from_seconds(json_number_value(v), ms) == 0)
        return 0;
    return bad(err, cap,
               "%s must be a duration such as \"250ms\", \"30s\", \"5m\", \"1h30m\" or a "
               "number of seconds",
               name);
}

static int parse_scalars(json_t *body, sl_claim_body *b, json_t **locks, json_t **tags,
                         char *err, size_t cap)
{
    json_t *holder = NULL, *prio = NULL, *created = NULL, *rkey = NULL, *group = NULL;
    json_t *cancel = NULL, *grace = NULL, *lease = NULL, *timeout = NULL, *wait = NULL;
    json_error_t jerr;
    if (json_unpack_ex(body, &jerr, JSON_STRICT,
                       "{s?o,s?o,s?o,s?o,s?o,s?o,s?o,s?o,s?o,s?o,s?o,s?o}", "holder", &holder,
                       "locks", locks, "priority", &prio, "created", &created, "rebalance_key",
                       &rkey, "tags", tags, "group", &group, "cancel", &cancel, "grace", &grace,
                       "lease", &lease, "timeout", &timeout, "wait", &wait) != 0)
        return bad(err, cap,
                   "%s; a claim has holder, locks, priority, created, rebalance_key, tags, "
                   "group, cancel, grace, lease, timeout and wait",
                   jerr.text);
    sl_claim_req *r = &b->req;
    if (!json_is_string(holder))
        return bad(err, cap, "%s is required: a string naming who claims (a run, a job)",
                   "holder");
    r->holder = json_string_value(holder);
    if (prio && (!json_is_integer(prio) || json_integer_value(prio) < INT32_MIN ||
                 json_integer_value(prio) > INT32_MAX))
        return bad(err, cap, "%s must be a whole number (higher goes first)", "priority");
    r->priority = prio ? (int32_t)json_integer_value(prio) : 0;
    if (created) {
        if (!json_is_string(created) ||
            sl_time_parse(json_string_value(created), &r->created_ms) != 0)
            return bad(err, cap, "%s must be an RFC 3339 time such as 2026-11-22T10:00:00.000Z",
                       "created");
        r->has_created = true;
    }
    if ((rkey && !json_is_string(rkey)) || (group && !json_is_string(group)))
        return bad(err, cap, "%s must be strings", "rebalance_key and group");
    r->rebalance_key = rkey ? json_string_value(rkey) : NULL;
    r->group = group ? json_string_value(group) : NULL;
    if (cancel && (!json_is_string(cancel) ||
                   sl_cancel_parse(json_string_value(cancel), &r->cancel) != 0))
        return bad(err, cap, "%s must be \"none\", \"pending\" or \"in-progress\"", "cancel");
    if (duration_field(grace, "grace", &r->grace_ms, err, cap) ||
        duration_field(lease, "lease", &r->lease_ms, err, cap) ||
        duration_field(timeout, "timeout", &r->timeout_ms, err, cap) ||
        duration_field(wait, "wait", &b->wait_ms, err, cap))
        return -1;
    b->has_timeout = timeout != NULL;
    return 0;
}

int sl_claim_body_parse(json_t *body, sl_claim_body *b, char *err, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->req.locks = b->locks;
    b->req.tags = b->tags;
    b->req.grace_ms = -1;
    b->req.lease_ms = -1;
    json_t *locks = NULL, *tags = NULL;
    if (parse_scalars(body, b, &locks, &tags, err, cap) != 0 ||
        parse_locks(locks, b, err, cap) != 0 || parse_tags(tags, b, err, cap) != 0)
        return -1;
    if (b->req.nlocks == 0 && b->req.ntags == 0 && !b->req.group)
        return bad(err, cap, "%s", "a claim needs at least one of locks, tags or group");
    return 0;
}
