/* claim_body.c - POST /v1/claims bodies into engine requests.
 *
 * Checks every field's type and shape and refuses unknown fields (a
 * misspelt "lokcs" should not become a claim on nothing); the engine then
 * checks what the claim asks for. Every message names the field, the value
 * as it was sent and what would be accepted. Strings point into the parsed
 * JSON, which the caller keeps alive while the request is used. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "claim_body.h"
#include "duration.h"
#include "json_fields.h"

static const char *const claim_fields[] = {
    "holder", "locks", "priority", "created", "rebalance_key", "tags", "group",
    "cancel", "groups", "grace", "lease", "timeout", "wait", NULL,
};
static const char *const lock_fields[] = {"mutex", "semaphore", "slots", "limit", NULL};
static const char *const group_fields[] = {"name", "cancel", NULL};

#define LOCK_SHAPE                                                                           \
    "a lock is {\"mutex\": NAME} or {\"semaphore\": NAME, \"slots\": N, \"limit\": L} (limit: " \
    "an inline limit, for a semaphore no configuration covers)"
#define GROUP_SHAPE "a group is {\"name\": NAME, \"cancel\": \"none\"|\"pending\"|\"in-progress\"}"

__attribute__((format(printf, 3, 4))) static int bad(char *err, size_t cap, const char *fmt,
                                                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
    return -1;
}

/* "FIELD must be WANT, not VALUE": the value as the client wrote it. */
static int not_a(char *err, size_t cap, const char *field, const char *want, const json_t *v)
{
    char text[80];
    sl_json_value_text(v, text, sizeof(text));
    return bad(err, cap, "%s must be %s, not %s", field, want, text);
}

/* A whole number in [lo, hi], or a message saying which and why not. */
static int whole_in(const json_t *v, const char *field, json_int_t lo, json_int_t hi,
                    const char *why, json_int_t *out, char *err, size_t cap)
{
    char want[128];
    snprintf(want, sizeof(want), "a whole number from %lld to %lld%s", (long long)lo,
             (long long)hi, why);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return not_a(err, cap, field, want, v);
    *out = json_integer_value(v);
    return 0;
}

static int parse_lock(json_t *item, size_t i, sl_lock_req *out, char *err, size_t cap)
{
    char field[32], where[48];
    snprintf(field, sizeof(field), "locks[%zu]", i % 1000);
    snprintf(where, sizeof(where), "%s: ", field);
    if (!json_is_object(item))
        return not_a(err, cap, field, "an object: " LOCK_SHAPE, item);
    if (sl_json_known_fields(item, lock_fields, where, LOCK_SHAPE, err, cap) != 0)
        return -1;
    json_t *mutex = json_object_get(item, "mutex"), *sem = json_object_get(item, "semaphore");
    json_t *slots = json_object_get(item, "slots"), *limit = json_object_get(item, "limit");
    if (!mutex == !sem)
        return bad(err, cap, "%s must name exactly one of \"mutex\" and \"semaphore\"; %s", field,
                   LOCK_SHAPE);
    json_t *name = mutex ? mutex : sem;
    if (!json_is_string(name)) {
        snprintf(where, sizeof(where), "%s.%s", field, mutex ? "mutex" : "semaphore");
        return not_a(err, cap, where, "a string (the lock's name)", name);
    }
    json_int_t n = 1, lim = 0;
    snprintf(where, sizeof(where), "%s.slots", field);
    if (slots && whole_in(slots, where, 1, SL_LIMIT_MAX, "", &n, err, cap) != 0)
        return -1;
    snprintf(where, sizeof(where), "%s.limit", field);
    if (limit && mutex)
        return bad(err, cap, "%s applies to semaphores: a mutex has one slot", where);
    if (limit && whole_in(limit, where, 1, SL_LIMIT_MAX, " (the semaphore's inline limit)", &lim,
                          err, cap) != 0)
        return -1;
    out->kind = mutex ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
    out->name = json_string_value(name);
    out->slots = (uint32_t)n;
    out->limit = (uint32_t)lim;
    return 0;
}

static int parse_locks(json_t *locks, sl_claim_body *b, char *err, size_t cap)
{
    if (!locks)
        return 0;
    if (!json_is_array(locks))
        return not_a(err, cap, "locks", "an array of locks", locks);
    if (json_array_size(locks) > SL_LOCKS_MAX)
        return bad(err, cap, "locks has %zu locks; a claim has at most %d",
                   json_array_size(locks), SL_LOCKS_MAX);
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

static int parse_group(json_t *item, size_t i, sl_group_req *out, char *err, size_t cap)
{
    char field[32], where[48];
    snprintf(field, sizeof(field), "groups[%zu]", i % 1000);
    snprintf(where, sizeof(where), "%s: ", field);
    if (!json_is_object(item))
        return not_a(err, cap, field, "an object: " GROUP_SHAPE, item);
    if (sl_json_known_fields(item, group_fields, where, GROUP_SHAPE, err, cap) != 0)
        return -1;
    json_t *name = json_object_get(item, "name"), *cancel = json_object_get(item, "cancel");
    snprintf(where, sizeof(where), "%s.name", field);
    if (!name)
        return bad(err, cap, "%s is required; %s", where, GROUP_SHAPE);
    if (!json_is_string(name))
        return not_a(err, cap, where, "a string (the group's name, e.g. \"repo/pr-12\")", name);
    out->name = json_string_value(name);
    out->cancel = SL_CANCEL_NONE;
    snprintf(where, sizeof(where), "%s.cancel", field);
    if (cancel && (!json_is_string(cancel) ||
                   sl_cancel_parse(json_string_value(cancel), &out->cancel) != 0))
        return not_a(err, cap, where, "\"none\", \"pending\" or \"in-progress\"", cancel);
    return 0;
}

/* groups: more concurrency groups, each its own lock with its own cancel
 * (`group` and `cancel` are the shorthand for one). */
static int parse_groups(json_t *groups, sl_claim_body *b, char *err, size_t cap)
{
    if (!groups)
        return 0;
    size_t room = SL_GROUPS_MAX - (b->req.group ? 1 : 0);
    if (!json_is_array(groups))
        return not_a(err, cap, "groups", "an array of groups: " GROUP_SHAPE, groups);
    if (json_array_size(groups) > room)
        return bad(err, cap,
                   b->req.group ? "group and groups name %zu groups in all; a claim has at most %d"
                                : "groups has %zu groups; a claim has at most %d",
                   json_array_size(groups) + (b->req.group ? 1 : 0), SL_GROUPS_MAX);
    size_t i;
    json_t *item;
    json_array_foreach(groups, i, item)
    {
        if (parse_group(item, i, &b->groups[i], err, cap) != 0)
            return -1;
    }
    b->req.groups = b->groups;
    b->req.ngroups = json_array_size(groups);
    return 0;
}

static int parse_tags(json_t *tags, sl_claim_body *b, char *err, size_t cap)
{
    if (!tags)
        return 0;
    if (!json_is_object(tags))
        return not_a(err, cap, "tags", "an object of string values ({\"env\": \"prod\"})", tags);
    if (json_object_size(tags) > SL_TAGS_MAX)
        return bad(err, cap, "tags has %zu tags; a claim has at most %d",
                   json_object_size(tags), SL_TAGS_MAX);
    const char *key;
    json_t *val;
    size_t n = 0;
    json_object_foreach(tags, key, val)
    {
        if (!json_is_string(val)) {
            char field[80];
            snprintf(field, sizeof(field), "tags.%.64s", key);
            return not_a(err, cap, field, "a string", val);
        }
        b->tags[n].key = key;
        b->tags[n].value = json_string_value(val);
        n++;
    }
    b->req.ntags = n;
    return 0;
}

/* The code point of a bidirectional control character at s[i] (U+061C,
 * U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069), else 0. They make
 * a name display reordered (a holder "team-a/\u202ekcatta" reads
 * "team-a/attack"), so a name could pass for another's on a dashboard. */
static unsigned bidi_control_at(const unsigned char *s, size_t n, size_t i)
{
    if (i + 1 < n && s[i] == 0xd8 && s[i + 1] == 0x9c)
        return 0x061c;
    if (i + 2 >= n || s[i] != 0xe2)
        return 0;
    unsigned cp = 0x2000u + ((s[i + 1] & 0x3fu) << 6) + (s[i + 2] & 0x3fu);
    bool bidi = cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
                (cp >= 0x2066 && cp <= 0x2069);
    return bidi && (s[i + 1] & 0xc0) == 0x80 ? cp : 0;
}

/* A printable string of 1 to max characters (holder, rebalance_key): the
 * engine refuses others too, but cannot say where the fault is. */
static int text_field(json_t *v, const char *name, size_t max, const char *what,
                      const char **out, char *err, size_t cap)
{
    if (!json_is_string(v))
        return not_a(err, cap, name, what, v);
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n == 0)
        return bad(err, cap, "%s is empty; it must be %s", name, what);
    if (n > max)
        return bad(err, cap, "%s is %zu bytes long; at most %zu are allowed", name, n, max);
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch < 0x20 || ch == 0x7f)
            return bad(err, cap,
                       "%s has a control character (byte 0x%02x) at position %zu; use printable "
                       "characters only",
                       name, ch, i + 1);
        unsigned cp = bidi_control_at((const unsigned char *)s, n, i);
        if (cp)
            return bad(err, cap,
                       "%s has a bidirectional control character (U+%04X) at byte %zu: it "
                       "makes a name display reordered; leave it out",
                       name, cp, i + 1);
    }
    *out = s;
    return 0;
}

/* A well-formed RFC 3339 time whose year is before 1970: a time the
 * server does not keep (milliseconds since 1970), not a typo in the form. */
static bool before_1970(const char *s)
{
    char copy[64];
    size_t n = strlen(s);
    if (n >= sizeof(copy) || n < 5 || strspn(s, "0123456789") != 4 || s[4] != '-' ||
        memcmp(s, "1970", 4) >= 0)
        return false;
    memcpy(copy, s, n + 1);
    memcpy(copy, "1970", 4);
    int64_t ms;
    return sl_time_parse(copy, &ms) == 0;
}

static int parse_created(json_t *created, sl_claim_req *r, char *err, size_t cap)
{
    if (!created)
        return 0;
    if (json_is_string(created) && before_1970(json_string_value(created)))
        return bad(err, cap,
                   "created \"%.40s\" is before 1970-01-01T00:00:00Z, the earliest time a claim "
                   "may give; give a later time, or leave created out",
                   json_string_value(created));
    if (!json_is_string(created) || sl_time_parse(json_string_value(created), &r->created_ms) != 0)
        return not_a(err, cap, "created",
                     "an RFC 3339 time such as \"2026-11-22T10:00:00.000Z\"", created);
    r->has_created = true;
    return 0;
}

static int parse_scalars(json_t *body, sl_claim_body *b, char *err, size_t cap)
{
    sl_claim_req *r = &b->req;
    json_t *holder = json_object_get(body, "holder"), *prio = json_object_get(body, "priority");
    json_t *rkey = json_object_get(body, "rebalance_key"), *group = json_object_get(body, "group");
    json_t *cancel = json_object_get(body, "cancel");
    if (!holder)
        return bad(err, cap, "holder is required: a string naming who claims (a run, a job)");
    if (text_field(holder, "holder", SL_HOLDER_MAX, "a string naming who claims (a run, a job)",
                   &r->holder, err, cap) != 0)
        return -1;
    json_int_t p = 0;
    if (prio && whole_in(prio, "priority", INT32_MIN, INT32_MAX, " (higher goes first)", &p, err,
                         cap) != 0)
        return -1;
    r->priority = (int32_t)p;
    if (parse_created(json_object_get(body, "created"), r, err, cap) != 0)
        return -1;
    if (rkey && text_field(rkey, "rebalance_key", SL_NAME_MAX,
                           "a string (claims with the same key share a quota)", &r->rebalance_key,
                           err, cap) != 0)
        return -1;
    if (group && !json_is_string(group))
        return not_a(err, cap, "group", "a string (the group's name, e.g. \"repo/pr-12\")", group);
    r->group = group ? json_string_value(group) : NULL;
    if (cancel && (!json_is_string(cancel) ||
                   sl_cancel_parse(json_string_value(cancel), &r->cancel) != 0))
        return not_a(err, cap, "cancel", "\"none\", \"pending\" or \"in-progress\"", cancel);
    if (sl_body_duration(json_object_get(body, "grace"), "grace", &r->grace_ms, err, cap) ||
        sl_body_lease(json_object_get(body, "lease"), &r->lease_ms, err, cap) ||
        sl_body_duration(json_object_get(body, "timeout"), "timeout", &r->timeout_ms, err, cap) ||
        sl_body_duration(json_object_get(body, "wait"), "wait", &b->wait_ms, err, cap))
        return -1;
    b->has_timeout = json_object_get(body, "timeout") != NULL;
    return 0;
}

int sl_claim_body_parse(json_t *body, sl_claim_body *b, char *err, size_t cap)
{
    memset(b, 0, sizeof(*b));
    b->req.locks = b->locks;
    b->req.tags = b->tags;
    b->req.grace_ms = -1;
    b->req.lease_ms = -1;
    if (sl_json_known_fields(body, claim_fields, "",
                             "a claim has holder, locks, priority, created, rebalance_key, tags, "
                             "group, cancel, groups, grace, lease, timeout and wait",
                             err, cap) != 0 ||
        parse_scalars(body, b, err, cap) != 0 ||
        parse_locks(json_object_get(body, "locks"), b, err, cap) != 0 ||
        parse_tags(json_object_get(body, "tags"), b, err, cap) != 0 ||
        parse_groups(json_object_get(body, "groups"), b, err, cap) != 0)
        return -1;
    if (b->req.nlocks == 0 && b->req.ntags == 0 && !b->req.group && b->req.ngroups == 0)
        return bad(err, cap, "%s",
                   "a claim needs at least one lock, tag or group (in locks, tags, group or "
                   "groups; an empty list names none): say what it claims, as in "
                   "{\"holder\": \"run-1\", \"locks\": [{\"mutex\": \"deploy\"}]}");
    return 0;
}
