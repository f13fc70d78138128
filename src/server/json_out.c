/* json_out.c - the engine's state as docs/api.md's JSON: claims, locks, why.
 *
 * Times are RFC 3339 strings (null when unset), durations strings like
 * "30s" ("0" for none), tokens and positions exact integers or null. Reason
 * words are built here from the engine's codes, so every answer and the
 * dashboard word things the same way. */
#include <stdio.h>
#include <string.h>

#include "duration.h"
#include "sem_rules.h"
#include "server.h"

json_t *sl_json_time(int64_t ms)
{
    if (ms < 0)
        return json_null();
    char buf[40];
    sl_time_format(ms, buf, sizeof(buf));
    return json_string(buf);
}

json_t *sl_json_duration(int64_t ms)
{
    char buf[40];
    sl_duration_format(ms, buf, sizeof(buf));
    return json_string(buf);
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

void sl_rule_words(const sl_why *w, char *buf, size_t cap)
{
    switch (w->rule) {
    case SL_RULE_AT_LIMIT:
        if (w->limit == 0)
            snprintf(buf, cap, "at_limit: %s is paused (limit 0)", w->key);
        else
            snprintf(buf, cap, "at_limit: %s has %llu of %u slots in use", w->key,
                     (unsigned long long)w->used, w->limit);
        break;
    case SL_RULE_BEHIND:
        if (w->kept && w->kept_preempting)
            snprintf(buf, cap,
                     "behind: on %s, the free slots are kept for the first claim in the queue, "
                     "which preempted holders to get them",
                     w->key);
        else if (w->kept)
            snprintf(buf, cap,
                     "behind: on %s, the free slots are kept for the first claim in the queue, "
                     "which has waited longer than the overtake limit",
                     w->key);
        else
            snprintf(buf, cap, "behind: on %s, %zu claim%s ahead take%s the free slots", w->key,
                     w->nahead, w->nahead == 1 ? "" : "s", w->nahead == 1 ? "s" : "");
        break;
    case SL_RULE_QUOTA:
        snprintf(buf, cap,
                 "quota: on %s its rebalance key holds %llu slots, its share is %llu (weight "
                 "%u of %llu), and a key below its share waits",
                 w->key, (unsigned long long)w->key_used, (unsigned long long)w->quota,
                 (unsigned)w->weight, (unsigned long long)w->weights);
        break;
    case SL_RULE_OTHER_LOCK:
        snprintf(buf, cap, "other_lock: %s would admit it; it waits for another of its locks",
                 w->key);
        break;
    case SL_RULE_RATE: {
        char at[32];
        sl_time_format(w->admit_ms, at, sizeof(at));
        if (w->preempt == SL_PREEMPT_WILL) /* it preempts only with a token */
            snprintf(buf, cap,
                     "rate: %s is full, and it preempts holders of lower priority only when "
                     "the rate can let it in at once, at %s",
                     w->key, at);
        else
            snprintf(buf, cap, "rate: %s would admit it but for its rate, which lets it in at %s",
                     w->key, at);
        break;
    }
    default:
        snprintf(buf, cap, "%s", "");
        return;
    }
    size_t len = strlen(buf);
    if (w->preempt == SL_PREEMPT_NONE || len >= cap ||
        (w->rule == SL_RULE_RATE && w->preempt == SL_PREEMPT_WILL))
        return;
    if (w->preempt == SL_PREEMPT_WAITING && w->npreempted < w->npreempt)
        /* revoked by a newer claim of their group, not preempted (S10) */
        snprintf(buf + len, cap - len, "; it waits for the holders %s to leave",
                 w->npreempted == 0 ? "revoked by a newer claim of their group"
                                    : "being revoked (preempted, or by a newer claim of their "
                                      "group)");
    else
        snprintf(buf + len, cap - len, "; it %s", sl_preempt_text(w->preempt));
}

/* A why entry's share: its rebalance key's quota, where one was worked out
 * (a rebalanced lock that does not let the claim in); else null. */
static json_t *share_json(const sl_why *w)
{
    if (w->weights == 0)
        return json_null();
    return json_pack("{s:I,s:I,s:I,s:I}", "quota", (json_int_t)w->quota, "held",
                     (json_int_t)w->key_used, "weight", (json_int_t)w->weight, "weights",
                     (json_int_t)w->weights);
}

/* A why entry's preempt field: null where preemption plays no part. */
static json_t *preempt_json(const sl_why *w)
{
    if (w->preempt == SL_PREEMPT_NONE)
        return json_null();
    json_t *p = json_pack("{s:s,s:I}", "status", sl_preempt_name(w->preempt), "holders",
                          (json_int_t)w->npreempt);
    if (w->preempt == SL_PREEMPT_WAITING) /* of those, how many were preempted */
        json_object_set_new(p, "preempted", json_integer((json_int_t)w->npreempted));
    return p;
}

void sl_claim_reason_words(sl_server *srv, const sl_claim *claim, char *buf, size_t cap)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    if (v.state == SL_PENDING) {
        /* The main reason: the first lock whose rule is not other_lock (as
         * sl_claim_main_rule says), read off one why instead of two walks. */
        sl_why whys[SL_CLAIM_LOCKS_MAX];
        size_t n = sl_claim_why(srv->eng, claim, whys, SL_CLAIM_LOCKS_MAX), lock = 0;
        while (lock < n && whys[lock].rule == SL_RULE_OTHER_LOCK)
            lock++;
        if (n == 0) {
            snprintf(buf, cap, "waiting");
            return;
        }
        sl_rule_words(&whys[lock < n ? lock : 0], buf, cap);
        return;
    }
    if (v.state == SL_HELD) {
        snprintf(buf, cap, "held");
        return;
    }
    /* The claim that superseded or revoked it, where that is how it ended:
     * a revoking claim canceled by an operator keeps `by`, but the words
     * must not blame the revoker for the cancel. */
    bool by_ended_it = v.reason == SL_REASON_SUPERSEDED || v.reason == SL_REASON_REVOKED ||
                       v.reason == SL_REASON_GRACE || v.reason == SL_REASON_REVOKED_FREED;
    if (v.by && by_ended_it)
        snprintf(buf, cap, "%s (%s)", sl_reason_text(v.reason), v.by);
    else
        snprintf(buf, cap, "%s", sl_reason_text(v.reason));
}

static json_t *claim_locks(sl_server *srv, const sl_claim *claim, const sl_claim_view *v)
{
    json_t *arr = json_array();
    bool holds = v->state == SL_HELD || v->state == SL_REVOKING || v->granted_ms >= 0;
    for (size_t i = 0; i < v->nlocks; i++) {
        sl_claim_lock_view lv;
        sl_claim_lock_get(srv->eng, claim, i, &lv);
        json_array_append_new(
            arr, json_pack("{s:s,s:s,s:I,s:o,s:o}", "kind",
                           lv.kind == SL_KIND_MUTEX ? "mutex" : "semaphore", "name", lv.name,
                           "slots", (json_int_t)lv.slots, "token",
                           holds ? json_integer((json_int_t)lv.token) : json_null(), "position",
                           lv.position ? json_integer((json_int_t)lv.position) : json_null()));
    }
    return arr;
}

static json_t *claim_tags(const sl_claim *claim, size_t ntags)
{
    json_t *obj = json_object();
    for (size_t i = 0; i < ntags; i++) {
        sl_tag t;
        sl_claim_tag_get(claim, i, &t);
        json_object_set_new(obj, t.key, json_string(t.value));
    }
    return obj;
}

json_t *sl_json_claim(sl_server *srv, const sl_claim *claim)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    char reason[512];
    sl_claim_reason_words(srv, claim, reason, sizeof(reason));
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(v.id));
    json_object_set_new(o, "state", json_string(sl_state_name(v.state)));
    json_object_set_new(o, "holder", json_string(v.holder));
    json_object_set_new(o, "locks", claim_locks(srv, claim, &v));
    json_object_set_new(o, "priority", json_integer(v.priority));
    json_object_set_new(o, "created", sl_json_time(v.created_ms));
    json_object_set_new(o, "rebalance_key", str_or_null(v.rebalance_key));
    json_object_set_new(o, "tags", claim_tags(claim, v.ntags));
    json_object_set_new(o, "group", str_or_null(v.group));
    json_object_set_new(o, "lease", sl_json_duration(v.lease_ms));
    json_object_set_new(o, "expires", sl_json_time(v.expires_ms));
    json_object_set_new(o, "timeout", sl_json_duration(v.timeout_ms));
    json_object_set_new(o, "arrived", sl_json_time(v.arrived_ms));
    json_object_set_new(o, "granted", sl_json_time(v.granted_ms));
    json_object_set_new(o, "ended", sl_json_time(v.ended_ms));
    if (v.state == SL_REVOKING)
        json_object_set_new(o, "revoke_at", sl_json_time(v.revoke_at_ms));
    json_object_set_new(o, "reason", json_string(reason));
    json_object_set_new(o, "by", str_or_null(v.by));
    json_object_set_new(o, "actor", str_or_null(v.actor));
    return o;
}

static json_t *lock_holders(const sl_lock *lock, size_t max)
{
    json_t *arr = json_array();
    sl_holder_view hv[64];
    size_t offset = 0, n;
    while (offset < max && (n = sl_lock_holders(lock, offset, hv, max - offset < 64 ? max - offset : 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            sl_claim_view v;
            sl_claim_get(hv[i].claim, &v);
            json_array_append_new(
                arr, json_pack("{s:s,s:s,s:I,s:I,s:o,s:o,s:o}", "claim", v.id, "holder",
                               v.holder, "slots", (json_int_t)hv[i].slots, "token",
                               (json_int_t)hv[i].token, "since", sl_json_time(hv[i].since_ms),
                               "expires", sl_json_time(v.expires_ms), "rebalance_key",
                               str_or_null(v.rebalance_key)));
        }
        offset += n;
    }
    return arr;
}

/* The reason a waiter waits on this particular lock. */
static void waiter_reason(sl_server *srv, const sl_claim *claim, const char *key, char *buf,
                          size_t cap)
{
    sl_why whys[SL_CLAIM_LOCKS_MAX];
    size_t n = sl_claim_why(srv->eng, claim, whys, SL_CLAIM_LOCKS_MAX);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++)
        if (strcmp(whys[i].key, key) == 0)
            sl_rule_words(&whys[i], buf, cap);
}

static json_t *lock_waiters(sl_server *srv, const sl_lock *lock, const char *key, size_t max)
{
    json_t *arr = json_array();
    sl_waiter_view wv[64];
    size_t offset = 0, n;
    while (offset < max &&
           (n = sl_lock_waiters(srv->eng, lock, offset, wv, max - offset < 64 ? max - offset : 64)) > 0) {
        for (size_t i = 0; i < n; i++) {
            sl_claim_view v;
            sl_claim_get(wv[i].claim, &v);
            char reason[512];
            waiter_reason(srv, wv[i].claim, key, reason, sizeof(reason));
            json_array_append_new(
                arr, json_pack("{s:s,s:s,s:I,s:I,s:i,s:o,s:s}", "claim", v.id, "holder",
                               v.holder, "slots", (json_int_t)wv[i].slots, "position",
                               (json_int_t)wv[i].position, "priority", v.priority, "created",
                               sl_json_time(v.created_ms), "reason", reason));
        }
        offset += n;
    }
    return arr;
}

json_t *sl_json_lock(sl_server *srv, const sl_lock_view *v, const sl_lock *lock,
                     size_t list_max)
{
    json_t *o = json_pack(
        "{s:s,s:s,s:I,s:s,s:o,s:o,s:I,s:I}", "kind",
        v->kind == SL_KIND_MUTEX ? "mutex" : "semaphore", "name", v->name, "limit",
        (json_int_t)v->limit, "strategy", sl_strategy_name(v->strategy), "lease",
        sl_json_duration(v->lease_ms), "from_pattern", str_or_null(v->from_pattern), "used",
        (json_int_t)v->used, "token", (json_int_t)v->token);
    /* Only skip semaphores have the field: on the others it means nothing. */
    if (v->kind == SL_KIND_SEMAPHORE && v->strategy == SL_SKIP)
        json_object_set_new(o, "overtake_limit", sl_json_duration(v->overtake_ms));
    if (v->kind == SL_KIND_SEMAPHORE) {
        json_object_set_new(o, "inline", json_boolean(v->inline_limit > 0));
        sl_sem_rules_json(o, v->strategy, &v->rules);
    }
    json_object_set_new(o, "holders_count", json_integer((json_int_t)v->nholders));
    json_object_set_new(o, "pending_count", json_integer((json_int_t)v->npending));
    if (list_max > 0) {
        json_object_set_new(o, "holders", lock ? lock_holders(lock, list_max) : json_array());
        json_object_set_new(o, "pending",
                            lock ? lock_waiters(srv, lock, v->key, list_max) : json_array());
    }
    return o;
}

json_t *sl_json_config_entry(sl_server *srv, const sl_config *cfg)
{
    (void)srv;
    sl_config_view cv;
    sl_config_get(cfg, &cv);
    json_t *o = json_pack("{s:s,s:s,s:I,s:s,s:o,s:n,s:I,s:I,s:I,s:I}", "kind", "semaphore",
                          "name", cv.name, "limit", (json_int_t)cv.limit, "strategy",
                          sl_strategy_name(cv.strategy), "lease", sl_json_duration(cv.lease_ms),
                          "from_pattern", "used", (json_int_t)0, "token", (json_int_t)0,
                          "holders_count", (json_int_t)0, "pending_count", (json_int_t)0);
    if (cv.strategy == SL_SKIP)
        json_object_set_new(o, "overtake_limit", sl_json_duration(cv.overtake_ms));
    json_object_set_new(o, "inline", json_false());
    sl_sem_rules_json(o, cv.strategy, &cv.rules);
    return o;
}

json_t *sl_json_why(sl_server *srv, const sl_claim *claim)
{
    sl_claim_view v;
    sl_claim_get(claim, &v);
    json_t *reasons = json_array();
    sl_why whys[SL_CLAIM_LOCKS_MAX];
    size_t n = sl_claim_why(srv->eng, claim, whys, SL_CLAIM_LOCKS_MAX);
    for (size_t i = 0; i < n; i++) {
        json_t *ahead = json_array();
        for (size_t k = 0; k < whys[i].nshown; k++) {
            sl_claim_view av;
            sl_claim_get(whys[i].ahead[k], &av);
            json_array_append_new(ahead, json_string(av.id));
        }
        char words[512];
        sl_rule_words(&whys[i], words, sizeof(words));
        json_t *r = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:o,s:s}", "lock", whys[i].key, "rule",
                              sl_rule_name(whys[i].rule), "used", (json_int_t)whys[i].used,
                              "limit", (json_int_t)whys[i].limit, "position",
                              (json_int_t)whys[i].position, "ahead_count",
                              (json_int_t)whys[i].nahead, "ahead", ahead, "message", words);
        json_object_set_new(r, "preempt", preempt_json(&whys[i]));
        json_object_set_new(r, "share", share_json(&whys[i]));
        if (whys[i].rule == SL_RULE_RATE)
            json_object_set_new(r, "admit_at", sl_json_time(whys[i].admit_ms));
        json_array_append_new(reasons, r);
    }
    return json_pack("{s:s,s:o}", "state", sl_state_name(v.state), "reasons", reasons);
}

json_t *sl_json_event(const sl_store_event *ev)
{
    json_t *locks = json_loads(ev->locks ? ev->locks : "[]", 0, NULL);
    return json_pack("{s:I,s:o,s:s,s:o,s:o,s:o,s:s,s:o}", "seq", (json_int_t)ev->seq, "time",
                     sl_json_time(ev->time_ms), "type", ev->type, "claim", str_or_null(ev->claim),
                     "holder", str_or_null(ev->holder), "locks", locks ? locks : json_array(),
                     "reason", ev->reason ? ev->reason : "", "actor", str_or_null(ev->actor));
}
