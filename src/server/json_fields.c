/* json_fields.c - the words for what is wrong with a JSON body: unknown
 * fields (with the field that was probably meant), a value's type, and a
 * value as the client wrote it, so that every message can say the field,
 * the value and the fix. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "json_fields.h"

/* Edit distance of two short names (insertions, deletions, substitutions,
 * and transpositions of neighbours: "priorty", "slot", "laese"); names
 * longer than the buffer are simply far. */
static size_t distance(const char *a, const char *b)
{
    enum { MAX = 32 };
    size_t la = strlen(a), lb = strlen(b);
    if (la >= MAX || lb >= MAX)
        return MAX;
    size_t d[MAX + 1][MAX + 1];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* The known name closest to an unknown one, if it is close enough to be a
 * likely slip (at most 2 edits, and fewer than half the name's letters). */
static const char *closest(const char *key, const char *const *names)
{
    const char *best = NULL;
    size_t bd = 3;
    for (size_t i = 0; names[i]; i++) {
        size_t d = distance(key, names[i]);
        if (d < bd && 2 * d < strlen(names[i])) {
            bd = d;
            best = names[i];
        }
    }
    return best;
}

int sl_json_known_fields(json_t *obj, const char *const *names, const char *where,
                         const char *shape, char *err, size_t cap)
{
    const char *key;
    json_t *val;
    json_object_foreach(obj, key, val)
    {
        bool known = false;
        for (size_t i = 0; names[i] && !known; i++)
            known = strcmp(key, names[i]) == 0;
        if (known)
            continue;
        const char *guess = closest(key, names);
        snprintf(err, cap, "%sunknown field \"%.64s\"%s%s%s; %s", where, key,
                 guess ? " (did you mean \"" : "", guess ? guess : "", guess ? "\"?)" : "", shape);
        return -1;
    }
    return 0;
}

const char *sl_json_type_words(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
    case JSON_REAL:
        return "a number";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    default:
        return "null";
    }
}

void sl_json_value_text(const json_t *v, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    if (!text) {
        snprintf(buf, cap, "%s", sl_json_type_words(v));
        return;
    }
    /* Long values are cut with an ellipsis: the message names the field. */
    if (strlen(text) >= cap && cap > 4)
        snprintf(buf, cap, "%.*s...", (int)(cap - 4), text);
    else
        snprintf(buf, cap, "%s", text);
    free(text);
}

int sl_body_duration(json_t *v, const char *field, int64_t *ms, char *err, size_t cap)
{
    static const char *const forms =
        "a duration is like \"250ms\", \"30s\", \"5m\", \"1h30m\", or a number of seconds";
    if (!v)
        return 0;
    char text[80];
    sl_json_value_text(v, text, sizeof(text));
    if (json_is_string(v)) {
        const char *problem = sl_duration_problem(json_string_value(v));
        if (!problem)
            return sl_duration_parse(json_string_value(v), ms);
        snprintf(err, cap, "%s: %s %s; %s", field, text, problem, forms);
        return -1;
    }
    if (json_is_number(v)) {
        if (sl_duration_from_seconds(json_number_value(v), ms) == 0)
            return 0;
        snprintf(err, cap, "%s: %s seconds %s; %s", field, text,
                 json_number_value(v) < 0 ? "is negative: a duration is 0 (none) or positive"
                                          : "is longer than 100 years, the longest duration",
                 forms);
        return -1;
    }
    snprintf(err, cap, "%s must be a duration (\"30s\") or a number of seconds, not %s", field,
             text);
    return -1;
}

int sl_body_lease(json_t *v, int64_t *ms, char *err, size_t cap)
{
    int64_t lease = *ms;
    if (sl_body_duration(v, "lease", &lease, err, cap) != 0)
        return -1;
    if (v && lease > 0 && lease < SL_LEASE_MIN_MS) {
        snprintf(err, cap,
                 "lease: %lldms is shorter than %dms, the shortest lease: no client could renew "
                 "it in time; ask for a longer one, or 0 for none",
                 (long long)lease, SL_LEASE_MIN_MS);
        return -1;
    }
    *ms = lease;
    return 0;
}
