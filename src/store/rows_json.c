/* rows_json.c - the JSON text of a claim's locks and tags, of an event's
 * lock keys and of a configuration's rules (rows_json.h): written by
 * capture.c, read back by the backends' loads (sqlite_load.c,
 * postgres_load.c).
 *
 * The shapes are fixed and small ([[kind, name, slots, via, token], ...]
 * and [[key, value], ...]), so both directions are written out here rather
 * than going through a general JSON library: loading a million claims
 * parses two million of these, and a general parser's allocations per
 * value cost more than the rest of the load together (measured: jansson
 * 2.5 us a row, this 0.1 us). The reader is strict and bounded: it accepts
 * what the writer writes plus JSON whitespace and the standard escapes of
 * ASCII characters, and nothing else. A configuration's rules are an
 * object of optional members, read here too: configurations are few, but
 * its keys are this reader's strings, and one reader of the store's JSON
 * is one set of rules about what it accepts. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rows_json.h"

/* ---- writing ------------------------------------------------------------- */

void sl__rows_buf_reset(sl_rows_buf *b)
{
    b->n = 0;
    b->max = SL_ROWS_JSON_MAX;
    b->over = false;
}

void sl__rows_buf_free(sl_rows_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof(*b));
}

static void buf_add(sl_rows_buf *b, const char *s, size_t len)
{
    if (b->over || b->n + len + 1 > b->max) {
        b->over = true;
        return;
    }
    if (b->n + len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + len + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p)
            abort();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, len);
    b->n += len;
    b->p[b->n] = '\0';
}

/* Appends s with JSON's escapes (names use a safe alphabet, but the store
 * does not rely on it). */
static void buf_esc(sl_rows_buf *b, const char *s)
{
    const char *run = s;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        buf_add(b, run, (size_t)(s - run));
        char esc[8];
        snprintf(esc, sizeof(esc), "\\u%04x", ch);
        buf_add(b, esc, 6);
        run = s + 1;
    }
    buf_add(b, run, (size_t)(s - run));
}

static void buf_str(sl_rows_buf *b, const char *s)
{
    buf_add(b, "\"", 1);
    buf_esc(b, s);
    buf_add(b, "\"", 1);
}

static void buf_i64(sl_rows_buf *b, int64_t v)
{
    char digits[24];
    int n = snprintf(digits, sizeof(digits), "%" PRId64, v);
    buf_add(b, digits, (size_t)n);
}

void sl__rows_locks_json(const sl_claim *c, size_t n, sl_rows_buf *b)
{
    sl__rows_buf_reset(b);
    buf_add(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(c, i, &lv);
        buf_add(b, i ? ",[" : "[", i ? 2 : 1);
        buf_i64(b, (int64_t)lv.kind);
        buf_add(b, ",", 1);
        buf_str(b, lv.name);
        buf_add(b, ",", 1);
        buf_i64(b, (int64_t)lv.slots);
        buf_add(b, ",", 1);
        buf_i64(b, (int64_t)lv.via);
        buf_add(b, ",", 1);
        buf_i64(b, (int64_t)lv.token); /* the same bits as the unsigned token */
        if (lv.inline_limit || lv.cancel) { /* later additions, only where set */
            buf_add(b, ",", 1);
            buf_i64(b, (int64_t)lv.inline_limit);
            buf_add(b, ",", 1);
            buf_i64(b, (int64_t)lv.cancel);
        }
        buf_add(b, "]", 1);
    }
    buf_add(b, "]", 1);
}

void sl__rows_tags_json(const sl_claim *c, size_t n, sl_rows_buf *b)
{
    sl__rows_buf_reset(b);
    buf_add(b, "[", 1);
    for (size_t i = 0; i < n; i++) {
        sl_tag t;
        sl_claim_tag_get(c, i, &t);
        buf_add(b, i ? ",[" : "[", i ? 2 : 1);
        buf_str(b, t.key);
        buf_add(b, ",", 1);
        buf_str(b, t.value);
        buf_add(b, "]", 1);
    }
    buf_add(b, "]", 1);
}

void sl__rows_event_locks_json(const sl_event *ev, size_t nlocks, sl_rows_buf *b)
{
    sl__rows_buf_reset(b);
    buf_add(b, "[", 1);
    if (ev->claim) {
        for (size_t i = 0; i < nlocks; i++) {
            sl_claim_lock_view lv;
            sl_claim_lock_peek(ev->claim, i, &lv);
            if (i)
                buf_add(b, ",", 1);
            buf_str(b, lv.key);
        }
    } else if (ev->name) {
        buf_add(b, "\"sem/", 5);
        buf_esc(b, ev->name);
        buf_add(b, "\"", 1);
    }
    buf_add(b, "]", 1);
}

/* ---- writing rules ------------------------------------------------------- */

/* The members of a rules object: one list of names for writer and reader. */
typedef enum {
    R_PREEMPT,
    R_PREEMPT_GRACE,
    R_MAX_PENDING,
    R_ON_FULL,
    R_DEFAULT_WEIGHT,
    R_WEIGHTS,
    R_RATE_COUNT,
    R_RATE_PERIOD,
    R_RATE_BURST,
    R_BACKDATE,
    R_COUNT,
} rule_id;

static const char *const rule_names[R_COUNT] = {
    [R_PREEMPT] = "preempt",
    [R_PREEMPT_GRACE] = "preempt_grace_ms",
    [R_MAX_PENDING] = "max_pending",
    [R_ON_FULL] = "on_full",
    [R_DEFAULT_WEIGHT] = "default_weight",
    [R_WEIGHTS] = "weights",
    [R_RATE_COUNT] = "rate_count",
    [R_RATE_PERIOD] = "rate_period_ms",
    [R_RATE_BURST] = "rate_burst",
    [R_BACKDATE] = "backdate_ms",
};

/* "key": after the object's opening brace or a comma. */
static void rule_key(sl_rows_buf *b, const char *key)
{
    if (b->n > 1)
        buf_add(b, ",", 1);
    buf_str(b, key);
    buf_add(b, ":", 1);
}

static void rule_int(sl_rows_buf *b, const char *key, int64_t v)
{
    if (v == 0)
        return; /* 0 is the rule off: not written */
    rule_key(b, key);
    buf_i64(b, v);
}

/* The weights as an object, in the configuration's order (keys are
 * distinct, so an object loses nothing). */
static void rule_weights(sl_rows_buf *b, const sl_weight *w, size_t n)
{
    if (n == 0)
        return;
    rule_key(b, rule_names[R_WEIGHTS]);
    for (size_t i = 0; i < n; i++) {
        buf_add(b, i ? "," : "{", 1);
        buf_str(b, w[i].key);
        buf_add(b, ":", 1);
        buf_i64(b, w[i].weight);
    }
    buf_add(b, "}", 1);
}

bool sl__rows_rules_json(const sl_sem_rules *r, sl_rows_buf *b)
{
    sl__rows_buf_reset(b);
    b->max = SL_RULES_JSON_MAX;
    buf_add(b, "{", 1);
    if (r->preempt) {
        rule_key(b, rule_names[R_PREEMPT]);
        buf_add(b, "true", 4);
    }
    rule_int(b, rule_names[R_PREEMPT_GRACE], r->preempt_grace_ms);
    rule_int(b, rule_names[R_MAX_PENDING], r->max_pending);
    rule_int(b, rule_names[R_ON_FULL], r->on_full);
    rule_int(b, rule_names[R_DEFAULT_WEIGHT], r->default_weight);
    rule_weights(b, r->weights, r->nweights);
    rule_int(b, rule_names[R_RATE_COUNT], r->rate_count);
    rule_int(b, rule_names[R_RATE_PERIOD], r->rate_period_ms);
    rule_int(b, rule_names[R_RATE_BURST], r->rate_burst);
    rule_int(b, rule_names[R_BACKDATE], r->backdate_ms);
    bool any = b->n > 1;
    buf_add(b, "}", 1);
    return any;
}

/* ---- reading ------------------------------------------------------------- */

typedef struct jp {
    char *p, *end; /* a mutable copy: strings are decoded in place */
} jp;

static void ws(jp *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
        j->p++;
}

static bool lit(jp *j, char c)
{
    ws(j);
    if (j->p < j->end && *j->p == c) {
        j->p++;
        return true;
    }
    return false;
}

static bool num(jp *j, int64_t lo, int64_t hi, int64_t *out)
{
    ws(j);
    bool neg = j->p < j->end && *j->p == '-';
    if (neg)
        j->p++;
    if (j->p >= j->end || *j->p < '0' || *j->p > '9')
        return false;
    /* Magnitudes up to 2^63 (INT64_MIN's), in an unsigned accumulator. */
    uint64_t v = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; j->p < j->end && *j->p >= '0' && *j->p <= '9'; j->p++) {
        unsigned d = (unsigned)(*j->p - '0');
        if (v > (limit - d) / 10)
            return false;
        v = v * 10 + d;
    }
    int64_t x = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    if (x < lo || x > hi)
        return false;
    *out = x;
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The character a one-letter escape stands for, 0 for none. */
static char unescape(char e)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *p = e ? strchr(from, e) : NULL;
    return p ? to[p - from] : 0;
}

/* A string of at most max bytes, decoded in place and NUL-terminated. */
static bool str(jp *j, size_t max, const char **out)
{
    if (!lit(j, '"'))
        return false;
    char *w = j->p, *start = j->p;
    for (;;) {
        if (j->p >= j->end)
            return false;
        char c = *j->p++;
        if (c == '"')
            break;
        if ((unsigned char)c < 0x20)
            return false;
        if (c == '\\') {
            if (j->p >= j->end)
                return false;
            char e = *j->p++;
            if (e == 'u') {
                int v = 0;
                for (int k = 0; k < 4; k++) {
                    int h = j->p < j->end ? hexval(*j->p++) : -1;
                    if (h < 0)
                        return false;
                    v = v * 16 + h;
                }
                if (v == 0 || v >= 0x80) /* the writer escapes ASCII only */
                    return false;
                c = (char)v;
            } else if (!(c = unescape(e))) {
                return false;
            }
        }
        *w++ = c;
        if ((size_t)(w - start) > max)
            return false;
    }
    *w = '\0'; /* w < the closing quote's position, already read */
    *out = start;
    return true;
}

/* Opens the outer array; true with *empty set when it is []. */
static bool open_array(jp *j, char *scratch, const char *text, size_t len, bool *empty)
{
    memcpy(scratch, text, len);
    scratch[len] = '\0';
    j->p = scratch;
    j->end = scratch + len;
    if (!lit(j, '['))
        return false;
    *empty = lit(j, ']');
    return true;
}

static bool close_array(jp *j)
{
    ws(j);
    return j->p == j->end;
}

int sl__rows_parse_locks(const char *text, size_t len, char *scratch, sl_claim_lock_rec *out,
                       size_t max, size_t *n)
{
    jp j;
    bool empty = false;
    *n = 0;
    if (!open_array(&j, scratch, text, len, &empty))
        return -1;
    if (empty)
        return close_array(&j) ? 0 : -1;
    do {
        size_t i = *n;
        if (i >= max)
            return -2;
        int64_t kind, slots, via, token, inl = 0, cancel = 0;
        const char *name;
        if (!lit(&j, '[') || !num(&j, SL_KIND_MUTEX, SL_KIND_SEMAPHORE, &kind) || !lit(&j, ',') ||
            !str(&j, SL_NAME_MAX, &name) || !lit(&j, ',') || !num(&j, 1, SL_LIMIT_MAX, &slots) ||
            !lit(&j, ',') || !num(&j, SL_VIA_LOCK, SL_VIA_GROUP, &via) || !lit(&j, ',') ||
            !num(&j, INT64_MIN, INT64_MAX, &token))
            return -3;
        /* Rows written since inline limits and several groups came have
         * two more numbers where either is set. */
        if (lit(&j, ',') && (!num(&j, 0, SL_LIMIT_MAX, &inl) || !lit(&j, ',') ||
                             !num(&j, SL_CANCEL_NONE, SL_CANCEL_IN_PROGRESS, &cancel)))
            return -3;
        if (!lit(&j, ']'))
            return -3;
        out[i] = (sl_claim_lock_rec){(sl_kind)kind, name,         (uint32_t)slots,
                                     (sl_via)via,   (uint64_t)token, (uint32_t)inl,
                                     (sl_cancel)cancel};
        (*n)++;
    } while (lit(&j, ','));
    return lit(&j, ']') && close_array(&j) ? 0 : -1;
}

int sl__rows_parse_tags(const char *text, size_t len, char *scratch, sl_tag *out, size_t max,
                      size_t *n)
{
    jp j;
    bool empty = false;
    *n = 0;
    if (!open_array(&j, scratch, text, len, &empty))
        return -1;
    if (empty)
        return close_array(&j) ? 0 : -1;
    do {
        size_t i = *n;
        if (i >= max)
            return -2;
        if (!lit(&j, '[') || !str(&j, SL_NAME_MAX, &out[i].key) || !lit(&j, ',') ||
            !str(&j, SL_NAME_MAX, &out[i].value) || !lit(&j, ']'))
            return -3;
        (*n)++;
    } while (lit(&j, ','));
    return lit(&j, ']') && close_array(&j) ? 0 : -1;
}

/* ---- reading rules ------------------------------------------------------- */

static bool word(jp *j, const char *w)
{
    size_t n = strlen(w);
    ws(j);
    if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
        return false;
    j->p += n;
    return true;
}

static bool boolean(jp *j, bool *out)
{
    *out = word(j, "true");
    return *out || word(j, "false");
}

static bool u32(jp *j, int64_t hi, uint32_t *out)
{
    int64_t v;
    if (!num(j, 0, hi, &v))
        return false;
    *out = (uint32_t)v;
    return true;
}

/* {"key": weight, ...}: 0, -2 past SL_WEIGHTS_MAX keys, -3 malformed. */
static int weights(jp *j, sl_rows_rules *out)
{
    size_t n = 0;
    if (!lit(j, '{'))
        return -3;
    if (!lit(j, '}')) {
        do {
            const char *key;
            uint32_t w;
            if (n >= SL_WEIGHTS_MAX)
                return -2;
            if (!str(j, SL_NAME_MAX, &key) || !lit(j, ':') || !u32(j, SL_WEIGHT_MAX, &w) || w == 0)
                return -3;
            out->weights[n++] = (sl_weight){key, w};
        } while (lit(j, ','));
        if (!lit(j, '}'))
            return -3;
    }
    out->rules.weights = n ? out->weights : NULL;
    out->rules.nweights = n;
    return 0;
}

/* One member's value: 0, -2 too many weights, -3 malformed or out of
 * range. Bounds are the engine's where it has one, so that a damaged
 * value is named here rather than as the engine's refusal. */
static int rule_value(jp *j, rule_id id, sl_rows_rules *out)
{
    sl_sem_rules *r = &out->rules;
    uint32_t on_full = 0;
    bool ok = false;
    switch (id) {
    case R_PREEMPT: ok = boolean(j, &r->preempt); break;
    case R_PREEMPT_GRACE: ok = num(j, 0, INT64_MAX, &r->preempt_grace_ms); break;
    case R_MAX_PENDING: ok = u32(j, SL_LIMIT_MAX, &r->max_pending); break;
    case R_ON_FULL:
        ok = u32(j, SL_ON_FULL_DROP_OLDEST, &on_full);
        r->on_full = (sl_on_full)on_full;
        break;
    case R_DEFAULT_WEIGHT: ok = u32(j, SL_WEIGHT_MAX, &r->default_weight); break;
    case R_WEIGHTS: return weights(j, out);
    case R_RATE_COUNT: ok = u32(j, SL_LIMIT_MAX, &r->rate_count); break;
    case R_RATE_PERIOD: ok = num(j, 0, INT64_MAX, &r->rate_period_ms); break;
    case R_RATE_BURST: ok = u32(j, SL_LIMIT_MAX, &r->rate_burst); break;
    case R_BACKDATE: ok = num(j, 0, INT64_MAX, &r->backdate_ms); break;
    case R_COUNT: break;
    }
    return ok ? 0 : -3;
}

static rule_id rule_of(const char *key)
{
    rule_id id = 0;
    while (id < R_COUNT && strcmp(rule_names[id], key) != 0)
        id++;
    return id;
}

static int not_rules(char *why, size_t cap)
{
    snprintf(why, cap, "its rules are not a JSON object of rules");
    return -1;
}

/* The members of the object, its brace already read. */
static int rule_members(jp *j, sl_rows_rules *out, char *why, size_t cap)
{
    unsigned seen = 0;
    if (lit(j, '}'))
        return 0;
    do {
        const char *key;
        if (!str(j, SL_NAME_MAX, &key) || !lit(j, ':'))
            return not_rules(why, cap);
        rule_id id = rule_of(key);
        if (id == R_COUNT) {
            snprintf(why, cap, "its rules hold \"%.64s\", which is no rule", key);
            return -1;
        }
        if (seen & (1u << id)) {
            snprintf(why, cap, "its rules give %s twice", rule_names[id]);
            return -1;
        }
        seen |= 1u << id;
        int rc = rule_value(j, id, out);
        if (rc == -2) {
            snprintf(why, cap, "its rules weigh more than %d keys", SL_WEIGHTS_MAX);
            return -1;
        }
        if (rc) {
            snprintf(why, cap, "its rule %s is malformed or out of range", rule_names[id]);
            return -1;
        }
    } while (lit(j, ','));
    return lit(j, '}') ? 0 : not_rules(why, cap);
}

int sl__rows_parse_rules(const char *text, size_t len, sl_rows_rules *out, char *why, size_t cap)
{
    memset(out, 0, sizeof(*out));
    if (!text)
        return 0;
    out->keys = malloc(len + 1);
    if (!out->keys) {
        snprintf(why, cap, "out of memory for its rules");
        return -1;
    }
    memcpy(out->keys, text, len);
    out->keys[len] = '\0';
    jp j = {out->keys, out->keys + len};
    if (!lit(&j, '{'))
        return not_rules(why, cap);
    if (rule_members(&j, out, why, cap) != 0)
        return -1;
    return close_array(&j) ? 0 : not_rules(why, cap); /* nothing after it */
}

void sl__rows_rules_free(sl_rows_rules *r)
{
    free(r->keys);
    r->keys = NULL;
}

int sl__rows_restore_config(sl_engine *eng, const char *name, sl_sem_opts *o, const char *text,
                            size_t len, char *why, size_t cap)
{
    sl_rows_rules rules;
    int rc = sl__rows_parse_rules(text, len, &rules, why, cap);
    if (rc == 0) {
        o->rules = rules.rules;
        if (sl_engine_restore_config(eng, name, o) != 0) {
            snprintf(why, cap, "the engine refused it (a bad or repeated name, rules that do "
                               "not go together, or too many)");
            rc = -1;
        }
    }
    sl__rows_rules_free(&rules);
    return rc;
}
