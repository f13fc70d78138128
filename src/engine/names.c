/* names.c - the words of the model: states, strategies, rules, reasons and
 * event types as docs/api.md spells them, and the rule for valid lock names. */
#include <string.h>

#include "engine_int.h"

static const char *const state_names[] = {
    "pending", "held", "revoking", "released", "withdrawn",
    "expired", "timed_out", "superseded", "canceled",
};

static const char *const strategy_names[] = {"strict", "skip", "rebalanced"};

static const char *const rule_names[] = {"none",  "at_limit",   "behind",
                                         "quota", "other_lock", "rate"};

static const char *const cancel_names[] = {"none", "pending", "in-progress"};

static const char *const reason_texts[] = {
    "",
    "released by its holder",
    "withdrawn by its client",
    "its client went away before learning its id",
    "its lease ran out: no renewal or wait from its client",
    "it waited longer than its timeout",
    "superseded by a newer claim of its group",
    "revoked by a newer claim of its group",
    "revoked by a newer claim of its group, and its grace ran out",
    "revoked by a newer claim of its group, and released by its holder",
    "canceled by an operator",
    "preempted by a waiting claim of higher priority",
    "superseded: its lock's queue was full and it was the oldest waiter",
};

static const char *const on_full_names[] = {"reject", "drop_oldest"};

static const char *const preempt_names[] = {"none", "waiting", "will", "not_head", "too_few"};

static const char *const preempt_texts[] = {
    "",
    "waits for the holders it preempted to leave",
    "will preempt holders of lower priority once its other locks are free",
    "would preempt, but a claim ahead of it comes first",
    "would preempt, but holders of lower priority hold too few slots",
};

static const char *const event_names[] = {
    "claim.queued",     "claim.waiting",    "claim.acquired",    "claim.renewed",
    "claim.released",   "claim.withdrawn",  "claim.expired",     "claim.timed_out",
    "claim.superseded", "claim.revoking",   "claim.canceled",    "semaphore.updated",
    "semaphore.deleted",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static const char *pick(const char *const *names, size_t n, unsigned i)
{
    return i < n ? names[i] : "unknown";
}

const char *sl_state_name(sl_state s)
{
    return pick(state_names, COUNT(state_names), (unsigned)s);
}

const char *sl_strategy_name(sl_strategy s)
{
    return pick(strategy_names, COUNT(strategy_names), (unsigned)s);
}

const char *sl_rule_name(sl_rule r)
{
    return pick(rule_names, COUNT(rule_names), (unsigned)r);
}

const char *sl_reason_text(sl_reason r)
{
    return pick(reason_texts, COUNT(reason_texts), (unsigned)r);
}

const char *sl_event_type_name(sl_event_type t)
{
    return pick(event_names, COUNT(event_names), (unsigned)t);
}

const char *sl_cancel_name(sl_cancel c)
{
    return pick(cancel_names, COUNT(cancel_names), (unsigned)c);
}

const char *sl_on_full_name(sl_on_full f)
{
    return pick(on_full_names, COUNT(on_full_names), (unsigned)f);
}

const char *sl_preempt_name(sl_preempt p)
{
    return pick(preempt_names, COUNT(preempt_names), (unsigned)p);
}

const char *sl_preempt_text(sl_preempt p)
{
    return pick(preempt_texts, COUNT(preempt_texts), (unsigned)p);
}

bool sl_state_ended(sl_state s)
{
    return s != SL_PENDING && s != SL_HELD && s != SL_REVOKING;
}

static int parse(const char *const *names, size_t n, const char *s, int *out)
{
    for (size_t i = 0; s && i < n; i++) {
        if (strcmp(names[i], s) == 0) {
            *out = (int)i;
            return 0;
        }
    }
    return SL_EINVAL;
}

int sl_state_parse(const char *s, sl_state *out)
{
    int v;
    int rc = parse(state_names, COUNT(state_names), s, &v);
    if (rc == 0)
        *out = (sl_state)v;
    return rc;
}

int sl_strategy_parse(const char *s, sl_strategy *out)
{
    int v;
    int rc = parse(strategy_names, COUNT(strategy_names), s, &v);
    if (rc == 0)
        *out = (sl_strategy)v;
    return rc;
}

int sl_cancel_parse(const char *s, sl_cancel *out)
{
    int v;
    int rc = parse(cancel_names, COUNT(cancel_names), s, &v);
    if (rc == 0)
        *out = (sl_cancel)v;
    return rc;
}

int sl_on_full_parse(const char *s, sl_on_full *out)
{
    int v;
    int rc = parse(on_full_names, COUNT(on_full_names), s, &v);
    if (rc == 0)
        *out = (sl_on_full)v;
    return rc;
}

static bool name_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           ch == '.' || ch == '_' || ch == '-' || ch == '/' || ch == ':' || ch == '=';
}

/* Whether a '/'-separated segment is "." or "..". Such names are not path
 * escapes (names are flat strings), but "team-a/../team-b/db" reads like
 * one, to people and to path-normalising proxies alike, so they are
 * refused. A pattern's last segment is cut by its '*' ("a/..*" may match
 * "a/..x"), so it counts only when whole. */
static bool dot_segment(const char *s, size_t n, bool last_whole)
{
    size_t start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '/')
            continue;
        size_t seg = i - start;
        bool whole = i < n || last_whole;
        if (whole &&
            ((seg == 1 && s[start] == '.') || (seg == 2 && s[start] == '.' && s[start + 1] == '.')))
            return true;
        start = i + 1;
    }
    return false;
}

static bool name_valid(const char *name, size_t len, bool allow_pattern, bool dots_ok)
{
    if (!name || len == 0 || len > SL_NAME_MAX)
        return false;
    size_t body = len;
    if (allow_pattern && name[len - 1] == '*')
        body = len - 1;
    for (size_t i = 0; i < body; i++) {
        if (!name_char(name[i]))
            return false;
        if (name[i] == '/' && i + 1 < body && name[i + 1] == '/')
            return false;
    }
    /* A pattern's prefix may end in a slash; a name may not. */
    if (body > 0 && name[0] == '/')
        return false;
    if (body == len && name[len - 1] == '/')
        return false;
    return dots_ok || !dot_segment(name, body, body == len);
}

bool sl_name_valid(const char *name, size_t len, bool allow_pattern)
{
    return name_valid(name, len, allow_pattern, false);
}

/* Stores written before "." and ".." segments were refused may hold such
 * names: they are restored, never made anew. */
bool sl__name_valid_saved(const char *name, size_t len, bool allow_pattern)
{
    return name_valid(name, len, allow_pattern, true);
}
