/* routes_history.c - GET /v1/history?lock=KEY&window=1h|24h: a lock's
 * samples and waits (history.h; docs/api.md). A query rather than a path
 * under the lock: lock names may contain '/', so ".../NAME/history" would
 * shadow a semaphore named "x/history". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "history.h"
#include "server.h"

static void add_sample(void *ud, int64_t time_ms, const sl_hist_vals *v)
{
    json_t *o = json_pack("{s:o,s:I,s:I,s:I}", "time", sl_json_time(time_ms), "used",
                          (json_int_t)v->used, "holders", (json_int_t)v->holders, "pending",
                          (json_int_t)v->pending);
    if (!o || json_array_append_new(ud, o) != 0)
        abort();
}

static json_t *ms_or_null(int64_t ms)
{
    return ms < 0 ? json_null() : sl_json_duration(ms);
}

/* Buckets from 1 ms up: waits are whole milliseconds, so the sub-millisecond
 * buckets (kept for /metrics, to add up with sluice_claim_wait_seconds)
 * count in the 1 ms one here. */
static json_t *buckets(const sl_hist_waits *w)
{
    json_t *arr = json_array();
    uint64_t under = 0;
    for (size_t b = 0; b < SL_HIST_WAIT_BUCKETS; b++) {
        int64_t us = b < SL_HIST_WAIT_BOUNDS ? sl_hist_wait_bounds_us[b] : -1;
        under += w->counts[b];
        if (us >= 0 && us < 1000)
            continue;
        json_t *le = us < 0 ? json_null() : sl_json_duration(us / 1000);
        json_array_append_new(arr, json_pack("{s:o,s:I}", "le", le, "count", (json_int_t)under));
        under = 0;
    }
    return arr;
}

static json_t *waits(const sl_server *srv, const char *key, sl_hist_window w, int64_t now)
{
    sl_hist_waits hw;
    sl_history_waits(srv->history, key, w, now, &hw);
    return json_pack("{s:s,s:I,s:o,s:o,s:o,s:o,s:o}", "window", w == SL_HIST_24H ? "24h" : "1h",
                     "count", (json_int_t)hw.count, "p50",
                     ms_or_null(sl_hist_waits_quantile(&hw, 0.50)), "p90",
                     ms_or_null(sl_hist_waits_quantile(&hw, 0.90)), "p99",
                     ms_or_null(sl_hist_waits_quantile(&hw, 0.99)), "max", ms_or_null(hw.max_ms),
                     "buckets", buckets(&hw));
}

/* window=1h (10 s samples, the default) or 24h (1 min samples). */
static int window_of(sl_ctx *c, sl_hist_window *w)
{
    const char *v = sl_query_get(c, "window");
    *w = SL_HIST_1H;
    if (!v || strcmp(v, "1h") == 0)
        return 0;
    if (strcmp(v, "24h") == 0) {
        *w = SL_HIST_24H;
        return 0;
    }
    sl_reply_error(c, 400, "bad_request", "window=\"%.64s\" is not understood; window is 1h "
                                          "(10-second samples) or 24h (1-minute samples)", v);
    return -1;
}

/* lock=mtx/NAME or sem/NAME: *kind and the name. */
static const char *lock_of(sl_ctx *c, sl_kind *kind)
{
    const char *lock = sl_query_get(c, "lock");
    if (!lock) {
        sl_reply_error(c, 400, "bad_request",
                       "lock= is missing: give the lock's key, mtx/NAME or sem/NAME "
                       "(GET /v1/history?lock=sem/db)");
        return NULL;
    }
    if (strncmp(lock, "mtx/", 4) != 0 && strncmp(lock, "sem/", 4) != 0) {
        sl_reply_error(c, 400, "bad_request",
                       "lock=\"%.64s\" is not a lock key: use mtx/NAME or sem/NAME", lock);
        return NULL;
    }
    *kind = lock[0] == 'm' ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
    return lock + 4;
}

static bool name_checked(sl_ctx *c, sl_kind kind, const char *name)
{
    size_t len = strlen(name);
    if (kind == SL_KIND_SEMAPHORE && len > 0 && name[len - 1] == '*' &&
        sl_name_valid(name, len, true)) {
        sl_reply_error(c, 400, "bad_request",
                       "%s is a pattern: history is per semaphore; ask for one semaphore it "
                       "configures, GET /v1/history?lock=sem/NAME",
                       name);
        return false;
    }
    if (!sl_name_valid(name, len, false)) {
        sl_reply_error(c, 400, "bad_request",
                       "\"%s\" is not a lock name: 1 to 253 characters of A-Z a-z 0-9 . _ - / : "
                       "=, no leading or trailing '/', no '//', no '.' or '..' segment",
                       name);
        return false;
    }
    return sl_auth_require(c, SL_PERM_READ, name, "reading a lock's history");
}

void sl_route_history(sl_ctx *c)
{
    static const char *const known[] = {"lock", "window", NULL};
    c->route = SL_ROUTE_HISTORY;
    if (c->method != SL_HTTP_GET) {
        sl_allow(c, "GET");
        sl_reply_error(c, 405, "method_not_allowed", "%s takes GET", c->path);
        return;
    }
    sl_kind kind = SL_KIND_MUTEX;
    sl_hist_window w;
    const char *name;
    if (!sl_query_only(c, known) || !(name = lock_of(c, &kind)) ||
        !name_checked(c, kind, name) || window_of(c, &w) != 0)
        return;
    sl_lock_view v;
    const sl_lock *lock = NULL;
    if (sl_lock_lookup(c->srv->eng, kind, name, &v, &lock) != 0) {
        /* Only a semaphore can be missing: every valid mutex name exists, unused. */
        sl_reply_error(c, 404, "not_found",
                       "no semaphore %s: configure it with PUT /v1/semaphores/%s or a pattern",
                       name, name);
        return;
    }
    char key[SL_LOCK_KEY_MAX + 1];
    snprintf(key, sizeof(key), "%s/%s", kind == SL_KIND_SEMAPHORE ? "sem" : "mtx", name);
    sl_server *srv = c->srv;
    sl_hist_catch_up(srv, c->now);
    json_t *samples = json_array();
    bool tracked = sl_history_samples(srv->history, key, w, c->now, add_sample, samples);
    /* The current values last; a lock never seen, and idle, has no history. */
    if (tracked || v.used || v.nholders || v.npending) {
        sl_hist_vals cur = {(uint32_t)v.used, (uint32_t)v.nholders, (uint32_t)v.npending};
        add_sample(samples, c->now, &cur);
    }
    json_t *o = json_pack("{s:s,s:s,s:o,s:b,s:o,s:o}", "lock", key, "window",
                          w == SL_HIST_24H ? "24h" : "1h", "step",
                          sl_json_duration(sl_history_step(srv->history, w)), "rebuilding",
                          sl_history_rebuilding(srv->history), "samples", samples, "waits",
                          waits(srv, key, w, c->now));
    if (!o)
        abort();
    sl_reply_json(c, 200, o);
}
