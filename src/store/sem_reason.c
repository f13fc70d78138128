/* sem_reason.c - the reason of a semaphore.updated event: a new
 * configuration's values, or what a change changed ("limit 10 → 12; rate
 * 6/1m added; preempt on"), so that the event log says which rules moved.
 * The engine emits the event only when something changed (config.c). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "store_int.h"

typedef struct text {
    char *buf;
    size_t cap, len;
} text;

static void vadd(text *t, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
static void vadd(text *t, const char *fmt, va_list ap)
{
    if (t->len + 1 >= t->cap)
        return;
    int n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    if (n > 0)
        t->len = t->len + (size_t)n < t->cap ? t->len + (size_t)n : t->cap - 1;
}

static void add(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vadd(t, fmt, ap);
    va_end(ap);
}

/* A change after the first is set off by "; ". */
static void item(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void item(text *t, const char *fmt, ...)
{
    if (t->len > 0)
        add(t, "; ");
    va_list ap;
    va_start(ap, fmt);
    vadd(t, fmt, ap);
    va_end(ap);
}

/* A duration as the API writes one: "1h30m", "30s", "1500ms". */
static void span(char *buf, size_t cap, int64_t ms)
{
    if (ms % 1000 != 0 || ms == 0) {
        snprintf(buf, cap, "%" PRId64 "ms", ms);
        return;
    }
    int64_t h = ms / 3600000, m = ms / 60000 % 60, s = ms / 1000 % 60;
    size_t n = 0;
    if (h && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%" PRId64 "h", h);
    if (m && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%" PRId64 "m", m);
    if (s && n < cap)
        snprintf(buf + n, cap - n, "%" PRId64 "s", s);
}

static void rate(char *buf, size_t cap, const sl_sem_rules *r)
{
    char period[40];
    span(period, sizeof(period), r->rate_period_ms);
    snprintf(buf, cap, "%" PRIu32 "/%s", r->rate_count, period);
}

static uint32_t burst(const sl_sem_rules *r)
{
    return r->rate_burst ? r->rate_burst : r->rate_count;
}

/* A duration that is off at 0: added, removed or changed. */
static void span_change(text *t, const char *field, int64_t a, int64_t b)
{
    char x[40], y[40];
    span(x, sizeof(x), a);
    span(y, sizeof(y), b);
    if (a == b)
        return;
    if (a == 0)
        item(t, "%s %s added", field, y);
    else if (b == 0)
        item(t, "%s removed", field);
    else
        item(t, "%s %s → %s", field, x, y);
}

static void rate_change(text *t, const sl_sem_rules *a, const sl_sem_rules *b)
{
    char x[64], y[64];
    rate(x, sizeof(x), a);
    rate(y, sizeof(y), b);
    if (a->rate_count == 0 && b->rate_count > 0)
        item(t, "rate %s added, burst %" PRIu32, y, burst(b));
    else if (a->rate_count > 0 && b->rate_count == 0)
        item(t, "rate removed");
    else if (b->rate_count > 0) {
        if (strcmp(x, y) != 0)
            item(t, "rate %s → %s", x, y);
        if (burst(a) != burst(b))
            item(t, "burst %" PRIu32 " → %" PRIu32, burst(a), burst(b));
    }
}

static void queue_change(text *t, const sl_sem_rules *a, const sl_sem_rules *b)
{
    if (a->preempt != b->preempt)
        item(t, b->preempt ? "preempt on" : "preempt off");
    if (a->preempt && b->preempt)
        span_change(t, "preempt_grace", a->preempt_grace_ms, b->preempt_grace_ms);
    if (a->max_pending == 0 && b->max_pending > 0)
        item(t, "max_pending %" PRIu32 " added, on_full %s", b->max_pending,
             sl_on_full_name(b->on_full));
    else if (a->max_pending > 0 && b->max_pending == 0)
        item(t, "max_pending removed");
    else if (b->max_pending > 0) {
        if (a->max_pending != b->max_pending)
            item(t, "max_pending %" PRIu32 " → %" PRIu32, a->max_pending, b->max_pending);
        if (a->on_full != b->on_full)
            item(t, "on_full %s → %s", sl_on_full_name(a->on_full), sl_on_full_name(b->on_full));
    }
}

static void changes(text *t, const sl_sem_change *c)
{
    const sl_sem_opts *a = &c->before, *b = &c->after;
    if (a->limit != b->limit)
        item(t, "limit %" PRIu32 " → %" PRIu32, a->limit, b->limit);
    if (a->strategy != b->strategy)
        item(t, "strategy %s → %s", sl_strategy_name(a->strategy),
             sl_strategy_name(b->strategy));
    span_change(t, "lease", a->lease_ms, b->lease_ms);
    span_change(t, "overtake_limit", a->overtake_ms, b->overtake_ms);
    queue_change(t, &a->rules, &b->rules);
    if (c->weights)
        item(t, "weights changed");
    if (a->rules.default_weight != b->rules.default_weight)
        item(t, "default_weight %" PRIu32 " → %" PRIu32,
             a->rules.default_weight ? a->rules.default_weight : 1,
             b->rules.default_weight ? b->rules.default_weight : 1);
    rate_change(t, &a->rules, &b->rules);
    span_change(t, "backdate", a->rules.backdate_ms, b->rules.backdate_ms);
}

/* A new configuration: its values, then the rules it turns on, as a change
 * from none. */
static void created(text *t, const sl_event *ev)
{
    char lease[48] = "no lease";
    if (ev->lease_ms > 0) {
        char d[40];
        span(d, sizeof(d), ev->lease_ms);
        snprintf(lease, sizeof(lease), "lease %s", d);
    }
    add(t, "limit %" PRIu32 ", strategy %s, %s", ev->limit, sl_strategy_name(ev->strategy),
        lease);
    if (!ev->change)
        return;
    sl_sem_change rules = *ev->change;
    /* only the rules: the values above were said */
    memset(&rules.before, 0, sizeof(rules.before));
    rules.before.limit = rules.after.limit;
    rules.before.strategy = rules.after.strategy;
    rules.before.lease_ms = rules.after.lease_ms;
    rules.before.overtake_ms = rules.after.overtake_ms;
    char more[512];
    text m = {more, sizeof(more), 0};
    more[0] = '\0';
    changes(&m, &rules);
    if (m.len > 0)
        add(t, "; %s", more);
}

void sl__sem_reason(const sl_event *ev, char *buf, size_t cap)
{
    if (cap == 0)
        return;
    buf[0] = '\0';
    text t = {buf, cap, 0};
    if (!ev->change || ev->change->created)
        created(&t, ev);
    else
        changes(&t, ev->change);
    if (t.len == 0)
        add(&t, "no value changed");
}
