/* json_claim.c - a claim's JSON written straight into an output buffer.
 *
 * Answering a claim is the hot path of every acquire and release: building
 * it as jansson values and dumping them cost ~7 us of the ~45 us a request
 * took on the loop (perf, claim+release cycles on 32 connections), mostly
 * allocations. This writes the same bytes as json_dumpb(sl_json_claim(...),
 * JSON_COMPACT) with no allocation; sl_json_claim stays the one used where
 * a claim is part of a larger document (listings, events, waits), and
 * tests/server compares the two. Only writing is done here: every JSON
 * input is still read by jansson. */
#include <stdint.h>
#include <string.h>

#include "duration.h"
#include "server.h"

/* The output: raw() appends to the buffer (its space is kept between
 * answers, so this allocates nothing in a steady state). */
typedef struct out {
    sl_buf *buf;
} out;

static void raw(out *o, const char *s, size_t len)
{
    sl_buf_add(o->buf, s, len);
}

#define LIT(o, s) raw((o), (s), sizeof(s) - 1)

/* A JSON string with jansson's escapes (no ASCII-only, no escaped '/'). */
static void str(out *o, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    raw(o, "\"", 1);
    const char *run = s;
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch >= 0x20 && ch != '"' && ch != '\\')
            continue;
        raw(o, run, (size_t)(s - run));
        run = s + 1;
        char esc[6] = {'\\', 0};
        switch (ch) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            memcpy(esc, "\\u00", 4);
            esc[4] = hex[ch >> 4];
            esc[5] = hex[ch & 15];
            raw(o, esc, 6);
            continue;
        }
        raw(o, esc, 2);
    }
    raw(o, run, (size_t)(s - run));
    raw(o, "\"", 1);
}

static void str_or_null(out *o, const char *s)
{
    if (s)
        str(o, s);
    else
        LIT(o, "null");
}

static void num(out *o, int64_t v)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    /* The magnitude without negating INT64_MIN. */
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[--i] = '-';
    raw(o, tmp + i, sizeof(tmp) - i);
}

static void time_or_null(out *o, int64_t ms)
{
    if (ms < 0) {
        LIT(o, "null");
        return;
    }
    char tmp[40];
    sl_time_format(ms, tmp, sizeof(tmp));
    str(o, tmp);
}

static void duration(out *o, int64_t ms)
{
    char tmp[40];
    sl_duration_format(ms, tmp, sizeof(tmp));
    str(o, tmp);
}

static void key(out *o, const char *k)
{
    raw(o, ",\"", 2);
    raw(o, k, strlen(k));
    raw(o, "\":", 2);
}

static void locks(out *o, sl_server *srv, const sl_claim *claim, const sl_claim_view *v)
{
    bool holds = v->state == SL_HELD || v->state == SL_REVOKING || v->granted_ms >= 0;
    raw(o, "[", 1);
    for (size_t i = 0; i < v->nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_get(srv->eng, claim, i, &lv);
        if (i)
            raw(o, ",", 1);
        LIT(o, "{\"kind\":");
        str(o, lv.kind == SL_KIND_MUTEX ? "mutex" : "semaphore");
        key(o, "name");
        str(o, lv.name);
        key(o, "slots");
        num(o, (int64_t)lv.slots);
        key(o, "token");
        if (holds)
            num(o, (int64_t)lv.token);
        else
            LIT(o, "null");
        key(o, "position");
        if (lv.position)
            num(o, (int64_t)lv.position);
        else
            LIT(o, "null");
        if (lv.inline_limit) {
            key(o, "limit");
            num(o, (int64_t)lv.inline_limit);
        }
        raw(o, "}", 1);
    }
    raw(o, "]", 1);
}

/* Only for a claim in several groups: each with its cancel (one group
 * reads as group and, in its events and why, needs nothing more). */
static void groups(out *o, const sl_claim *claim, size_t nlocks)
{
    size_t n = 0;
    for (size_t i = 0; i < nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(claim, i, &lv);
        n += lv.via == SL_VIA_GROUP;
    }
    if (n < 2)
        return;
    key(o, "groups");
    raw(o, "[", 1);
    for (size_t i = 0, k = 0; i < nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_peek(claim, i, &lv);
        if (lv.via != SL_VIA_GROUP)
            continue;
        if (k++)
            raw(o, ",", 1);
        LIT(o, "{\"name\":");
        str(o, lv.name + 6); /* after "group/" */
        key(o, "cancel");
        str(o, sl_cancel_name(lv.cancel));
        raw(o, "}", 1);
    }
    raw(o, "]", 1);
}

static void tags(out *o, const sl_claim *claim, size_t ntags)
{
    raw(o, "{", 1);
    for (size_t i = 0; i < ntags; i++) {
        sl_tag t;
        sl_claim_tag_get(claim, i, &t);
        if (i)
            raw(o, ",", 1);
        str(o, t.key);
        raw(o, ":", 1);
        str(o, t.value);
    }
    raw(o, "}", 1);
}

void sl_json_claim_write(sl_server *srv, const sl_claim *claim, sl_buf *buf)
{
    out o = {buf};
    sl_claim_view v;
    sl_claim_get(claim, &v);
    char reason[512];
    sl_claim_reason_words(srv, claim, reason, sizeof(reason));
    LIT(&o, "{\"id\":");
    str(&o, v.id);
    key(&o, "state");
    str(&o, sl_state_name(v.state));
    key(&o, "holder");
    str(&o, v.holder);
    key(&o, "locks");
    locks(&o, srv, claim, &v);
    key(&o, "priority");
    num(&o, v.priority);
    key(&o, "created");
    time_or_null(&o, v.created_ms);
    key(&o, "rebalance_key");
    str_or_null(&o, v.rebalance_key);
    key(&o, "tags");
    tags(&o, claim, v.ntags);
    key(&o, "group");
    str_or_null(&o, v.group);
    groups(&o, claim, v.nlocks);
    key(&o, "lease");
    duration(&o, v.lease_ms);
    key(&o, "expires");
    time_or_null(&o, v.expires_ms);
    key(&o, "timeout");
    duration(&o, v.timeout_ms);
    key(&o, "arrived");
    time_or_null(&o, v.arrived_ms);
    key(&o, "granted");
    time_or_null(&o, v.granted_ms);
    key(&o, "ended");
    time_or_null(&o, v.ended_ms);
    if (v.state == SL_REVOKING) {
        key(&o, "revoke_at");
        time_or_null(&o, v.revoke_at_ms);
    }
    key(&o, "reason");
    str(&o, reason);
    key(&o, "by");
    str_or_null(&o, v.by);
    key(&o, "actor");
    str_or_null(&o, v.actor);
    LIT(&o, "}\n");
}
