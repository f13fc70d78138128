/* backend_etcd.c - the load generator's back-ends for etcd 3.4, spoken over
 * its v3 JSON gateway (gRPC-gateway on the client port, HTTP/1.1) with the
 * generator's own HTTP client and JSON scanner: keys and values travel as
 * base64, 64-bit numbers as JSON strings.
 *
 * etcd: the recipe of most client libraries' "simple lock", a lease and a
 * transaction.
 *   session    a lease, granted at open with a TTL that outlives the session
 *              (no keep-alive traffic; see sl_load_etcd_configure), revoked
 *              at close;
 *   mutex      acquire = txn if create_revision(key) == 0 then put
 *              key=token with the lease, the token random and new for
 *              every grant. While the key exists, wait for its deletion: a
 *              watch on the key from the revision after the failed txn's
 *              (so no deletion can slip between the txn and the watch),
 *              filtered to DELETE events; at each one, try again on the same
 *              stream until the txn wins. No queue: every waiter wakes at a
 *              release and the first txn to land wins. With --etcd-poll-ms
 *              the wait is a sleep between attempts instead, as the Redis
 *              recipe does.
 *              release = txn if value(key) == token then delete, which must
 *              succeed: a failed compare means the grant was lost.
 *   semaphore  slot keys name/0 .. name/limit-1: the same put-if-absent on
 *              each slot from a random start; when all are taken, a watch on
 *              the prefix name/ from the revision after the first failed
 *              try, and at each deletion a try on the slot freed.
 *   token      the revision of the txn that took the key (its create
 *              revision): etcd's revisions are one global, strictly
 *              increasing counter, and a grant's put comes after every
 *              earlier release of the lock, so tokens grow per lock.
 *
 * etcd-lock: etcd's lock service (v3lock), which runs etcd's own
 * concurrency.Mutex inside the server: /v3/lock/lock {name, lease} puts a
 * key name/LEASE and blocks until every older key on name is gone (a queue
 * by create revision, each waiter watching its predecessor); it answers the
 * key, which /v3/lock/unlock deletes. The token is the lock answer's header
 * revision: for the first waiter it is read after its predecessor's delete,
 * so it exceeds every revision the predecessor saw. No semaphore (the
 * workloads mask leaves that row out).
 *
 * No history (etcd keeps revisions, not a queue to replay). */
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "address.h"
#include "backend.h"
#include "base64.h"
#include "http.h"
#include "json_scan.h"
#include "workload.h"

/* Above the 40 s the generator waits for clients after a run, so that only
 * a dead server times out. */
#define SOCKET_TIMEOUT_MS 45000
#define TOKEN_BYTES 16 /* 128 random bits: unique among every grant of a run */
#define TOKEN_B64 SL_BASE64_ENCODED_SIZE(TOKEN_BYTES * 2)
/* A lock name, "/" and a slot number; base64. */
#define KEY_MAX (SL_LOAD_NAME_MAX + 16)
#define KEY_B64 SL_BASE64_ENCODED_SIZE(KEY_MAX)
#define BODY_MAX 2048

/* Set by main before any session opens (sl_load_etcd_configure). */
static int poll_ms = 0; /* 0: wait with a watch */
static int lease_ttl_s = 600;

void sl_load_etcd_configure(int poll, int ttl_s)
{
    poll_ms = poll;
    lease_ttl_s = ttl_s;
}

typedef struct session {
    sl_http_conn *conn;      /* requests, one at a time, keep-alive */
    sl_http_conn *watch;     /* a watch stream while waiting, closed after each wait */
    atomic_bool interrupted; /* every later call fails */
    uint64_t rng;            /* splitmix64 state, seeded from getrandom */
    char lease[24];          /* the lease's ID as etcd writes it (decimal) */
    char key[KEY_B64];       /* the key held or tried, base64 */
    const char *wdata;       /* the watch stream's unconsumed bytes ... */
    size_t wlen, wpos;       /* ... their number, and how many are handled */
    char body[BODY_MAX];
    char error[600];
} session;

static int failf(session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int failf(session *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->error, sizeof s->error, fmt, ap);
    va_end(ap);
    return -1;
}

/* s->body from a format; a body over BODY_MAX is an error, not a cut. */
static int bodyf(session *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bodyf(session *s, const char *fmt, ...)
{
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(s->body, sizeof s->body, fmt, ap);
    va_end(ap);
    return n < 0 || (size_t)n >= sizeof s->body ? failf(s, "request body over %d bytes", BODY_MAX)
                                                : 0;
}

/* POST s->body to target; it must answer 200 (the gateway's errors come as
 * other statuses with {"error":...}). */
static int call(session *s, const char *target, const sl_http_response **out)
{
    int rc = sl_http_conn_request(s->conn, "POST", target, s->body, strlen(s->body), out);
    if (rc < 0)
        return failf(s, "POST %s: %s", target,
                     atomic_load(&s->interrupted) ? "interrupted" : sl_http_conn_error(s->conn));
    if ((*out)->status != 200)
        return failf(s, "POST %s answered %d: %.300s", target, (*out)->status, (*out)->body);
    return 0;
}

/* ---- JSON ---------------------------------------------------------------- */

/* An int64 written as a string (the gateway's way) or as a number. */
static int json_i64(sl_json_span v, int64_t *out)
{
    char buf[32], *end;
    long long x;
    if (sl_json_int64(v, out) == 0)
        return 0;
    if (sl_json_string(v, buf, sizeof buf) < 0 || !buf[0])
        return -1;
    errno = 0;
    x = strtoll(buf, &end, 10);
    if (errno || *end)
        return -1;
    *out = x;
    return 0;
}

/* Member key of obj as an int64; absent is 0, as proto3 leaves out zeros. */
static int member_i64(sl_json_span obj, const char *key, int64_t *out)
{
    sl_json_span v;
    int rc = sl_json_member(obj, key, &v);
    if (rc == SL_JSON_ENOTFOUND) {
        *out = 0;
        return 0;
    }
    return rc < 0 ? rc : json_i64(v, out);
}

/* A member that is the literal true (proto3 leaves out false). */
static bool member_true(sl_json_span obj, const char *key)
{
    sl_json_span v;
    return sl_json_member(obj, key, &v) == 0 && v.len == 4 && memcmp(v.p, "true", 4) == 0;
}

static int header_revision(sl_json_span obj, int64_t *rev)
{
    sl_json_span h;
    return sl_json_member(obj, "header", &h) < 0 || member_i64(h, "revision", rev) < 0 || *rev <= 0
               ? -1
               : 0;
}

/* ---- session ------------------------------------------------------------- */

static uint64_t next_random(session *s)
{
    uint64_t z = (s->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* A fresh token for every grant, base64 of 32 hex digits: a release can
 * then only ever delete its own grant. */
static void new_token(session *s, char *out)
{
    char hex[TOKEN_BYTES * 2 + 1];
    uint64_t a = next_random(s), b = next_random(s);
    snprintf(hex, sizeof hex, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
    sl_base64_encode(hex, TOKEN_BYTES * 2, out, TOKEN_B64);
}

/* text, base64, into out (KEY_B64 bytes). */
static int encode_key(session *s, const char *text, char *out)
{
    if (sl_base64_encode(text, strlen(text), out, KEY_B64) < 0)
        return failf(s, "key \"%s\" too long", text);
    return 0;
}

static int grant_lease(session *s)
{
    const sl_http_response *r;
    sl_json_span id;
    int64_t v;
    if (bodyf(s, "{\"TTL\":\"%d\"}", lease_ttl_s) < 0 || call(s, "/v3/lease/grant", &r) < 0)
        return -1;
    if (sl_json_member(sl_json_span_of(r->body, r->body_len), "ID", &id) < 0 ||
        json_i64(id, &v) < 0 || v <= 0)
        return failf(s, "POST /v3/lease/grant: no lease ID in %.300s", r->body);
    snprintf(s->lease, sizeof s->lease, "%lld", (long long)v);
    return 0;
}

static void session_close(void *vs)
{
    session *s = vs;
    const sl_http_response *r;
    if (!s)
        return;
    /* Revoking deletes whatever keys the lease still holds; after an
     * interrupt the lease is left to expire. */
    if (s->lease[0] && !atomic_load(&s->interrupted) && bodyf(s, "{\"ID\":\"%s\"}", s->lease) == 0)
        call(s, "/v3/lease/revoke", &r);
    sl_http_conn_free(s->conn);
    sl_http_conn_free(s->watch);
    free(s);
}

static int session_open(const char *address, const char *holder, void **out, char *err, size_t cap)
{
    char host[256], port[SL_LOAD_PORT_MAX];
    session *s;
    (void)holder; /* the token (etcd) or the lease (etcd-lock) says who holds */
    *out = NULL;
    if (sl_load_address(address, host, sizeof host, port) < 0) {
        snprintf(err, cap, "\"%s\" is not HOST:PORT", address);
        return -1;
    }
    s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    atomic_init(&s->interrupted, false);
    if (getrandom(&s->rng, sizeof s->rng, 0) != (ssize_t)sizeof s->rng) {
        snprintf(err, cap, "getrandom: %s", strerror(errno));
        free(s);
        return -1;
    }
    if (sl_http_conn_new(host, port, SOCKET_TIMEOUT_MS, &s->conn) < 0 ||
        sl_http_conn_new(host, port, SOCKET_TIMEOUT_MS, &s->watch) < 0) {
        snprintf(err, cap, "cannot use %s", address);
        session_close(s);
        return -1;
    }
    if (grant_lease(s) < 0) {
        snprintf(err, cap, "etcd at %s: %s", address, s->error);
        session_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

/* shutdown() wakes a thread blocked on either socket; the flag stops one
 * that is sleeping between attempts. */
static void interrupt(void *vs)
{
    session *s = vs;
    atomic_store(&s->interrupted, true);
    sl_http_conn_interrupt(s->conn);
    sl_http_conn_interrupt(s->watch);
}

static const char *last_error(void *vs)
{
    return ((session *)vs)->error;
}

/* ---- the watch ------------------------------------------------------------- */

/* Opens a watch on key (base64), or on [key, range_end) when range_end is
 * not NULL, from revision from, for DELETE events only. */
static int watch_open(session *s, const char *key, const char *range_end, int64_t from)
{
    int rc;
    if (bodyf(s,
              "{\"create_request\":{\"key\":\"%s\"%s%s%s,\"start_revision\":\"%lld\","
              "\"filters\":[\"NOPUT\"]}}",
              key, range_end ? ",\"range_end\":\"" : "", range_end ? range_end : "",
              range_end ? "\"" : "", (long long)from) < 0)
        return -1;
    s->wdata = NULL;
    s->wlen = s->wpos = 0;
    rc = sl_http_conn_send(s->watch, "POST", "/v3/watch", s->body, strlen(s->body));
    if (rc < 0)
        return failf(s, "POST /v3/watch: %s",
                     atomic_load(&s->interrupted) ? "interrupted" : sl_http_conn_error(s->watch));
    return 0;
}

/* The watch is no longer wanted: closing its connection cancels it. */
static void watch_close(session *s)
{
    sl_http_conn_close(s->watch);
    s->wdata = NULL;
    s->wlen = s->wpos = 0;
}

/* The next message of the stream (one JSON object per line); *msg stays
 * valid until the next call. */
static int watch_message(session *s, sl_json_span *msg)
{
    const char *nl;
    int rc, status = 0;
    for (;;) {
        nl = s->wlen > s->wpos ? memchr(s->wdata + s->wpos, '\n', s->wlen - s->wpos) : NULL;
        if (nl) {
            *msg = sl_json_span_of(s->wdata + s->wpos, (size_t)(nl - (s->wdata + s->wpos)));
            s->wpos = (size_t)(nl - s->wdata) + 1;
            return 0;
        }
        sl_http_conn_stream_consume(s->watch, s->wpos); /* the messages handled */
        s->wpos = 0;
        rc = sl_http_conn_stream_read(s->watch, &status, &s->wdata, &s->wlen);
        if (rc < 0)
            return failf(s, "watch: %s",
                         atomic_load(&s->interrupted) ? "interrupted"
                                                      : sl_http_conn_error(s->watch));
        if (status != 200)
            return failf(s, "POST /v3/watch answered %d: %.*s", status,
                         (int)(s->wlen > 300 ? 300 : s->wlen), s->wdata);
        if (rc == 1 && !memchr(s->wdata, '\n', s->wlen))
            return failf(s, "the watch stream ended: %.*s", (int)(s->wlen > 300 ? 300 : s->wlen),
                         s->wdata);
    }
}

/* The next message that carries events: their array. A cancelled watch (a
 * compacted start revision included) is an error. */
static int watch_events(session *s, sl_json_span *events)
{
    sl_json_span msg, result, first;
    sl_json_iter it;
    int64_t compact;
    for (;;) {
        if (watch_message(s, &msg) < 0)
            return -1;
        if (sl_json_member(msg, "result", &result) < 0)
            return failf(s, "watch: %.*s", (int)(msg.len > 300 ? 300 : msg.len), msg.p);
        if (member_true(result, "canceled") ||
            (member_i64(result, "compact_revision", &compact) == 0 && compact > 0))
            return failf(s, "watch cancelled: %.*s", (int)(msg.len > 300 ? 300 : msg.len), msg.p);
        if (sl_json_member(result, "events", events) < 0)
            continue; /* "created", or progress */
        if (sl_json_iter_init(&it, *events) == 0 && sl_json_iter_next(&it, &first) == 1)
            return 0;
    }
}

/* ---- etcd: lease and transaction ----------------------------------------- */

/* One attempt to take s->key with token: 1 held, 0 taken, -1 failed; *rev
 * is the txn's revision (when held, the put's: the key's create revision). */
static int try_put(session *s, const char *token, int64_t *rev)
{
    const sl_http_response *r;
    sl_json_span body;
    if (bodyf(s,
              "{\"compare\":[{\"target\":\"CREATE\",\"key\":\"%s\",\"result\":\"EQUAL\","
              "\"create_revision\":\"0\"}],\"success\":[{\"request_put\":{\"key\":\"%s\","
              "\"value\":\"%s\",\"lease\":\"%s\"}}]}",
              s->key, s->key, token, s->lease) < 0 ||
        call(s, "/v3/kv/txn", &r) < 0)
        return -1;
    body = sl_json_span_of(r->body, r->body_len);
    if (header_revision(body, rev) < 0)
        return failf(s, "POST /v3/kv/txn: no header revision in %.300s", r->body);
    return member_true(body, "succeeded") ? 1 : 0;
}

/* Sleeps poll_ms between attempts on a taken lock; fails once interrupted. */
static int poll_wait(session *s)
{
    struct timespec ts = {.tv_sec = poll_ms / 1000, .tv_nsec = (long)(poll_ms % 1000) * 1000000L};
    if (atomic_load(&s->interrupted))
        return failf(s, "interrupted while waiting for the lock");
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
    return atomic_load(&s->interrupted) ? failf(s, "interrupted while waiting for the lock") : 0;
}

/* The mutex s->key was taken at revision rev: tries again at each of its
 * deletions until the txn wins. */
static int wait_mutex(session *s, const char *token, int64_t rev, int64_t *held_rev)
{
    sl_json_span events;
    int rc;
    if (poll_ms > 0) {
        while ((rc = try_put(s, token, held_rev)) == 0)
            if (poll_wait(s) < 0)
                return -1;
        return rc < 0 ? -1 : 0;
    }
    if (watch_open(s, s->key, NULL, rev + 1) < 0)
        return -1;
    do
        rc = watch_events(s, &events) < 0 ? -1 : try_put(s, token, held_rev);
    while (rc == 0);
    watch_close(s);
    return rc < 0 ? -1 : 0;
}

/* s->key = slot of semaphore name, base64. */
static int slot_key(session *s, const char *name, int slot)
{
    char key[KEY_MAX];
    if (snprintf(key, sizeof key, "%s/%d", name, slot) >= (int)sizeof key)
        return failf(s, "lock name too long");
    return encode_key(s, key, s->key);
}

/* One pass over the slots from a random start: 1 held, 0 all taken (*first
 * is the revision of the first try), -1 failed. */
static int try_slots(session *s, const sl_load_lock *lock, const char *token, int64_t *first,
                     int64_t *held_rev)
{
    int start = (int)(next_random(s) % (uint64_t)lock->limit), i, rc;
    int64_t rev;
    for (i = 0; i < lock->limit; i++) {
        if (slot_key(s, lock->name, (start + i) % lock->limit) < 0)
            return -1;
        if ((rc = try_put(s, token, &rev)) != 0) {
            *held_rev = rev;
            return rc;
        }
        if (i == 0)
            *first = rev;
    }
    return 0;
}

/* The slot number of a deleted slot key (base64 kv.key of an event), or -1. */
static int deleted_slot(sl_json_span event, const sl_load_lock *lock)
{
    sl_json_span kv, k;
    char b64[KEY_B64], key[KEY_MAX + 1], *end;
    size_t n = strlen(lock->name);
    long slot;
    if (sl_json_member(event, "kv", &kv) < 0 || sl_json_member(kv, "key", &k) < 0 ||
        sl_json_string(k, b64, sizeof b64) < 0 ||
        sl_base64_decode(b64, strlen(b64), key, sizeof key) < 0 ||
        strncmp(key, lock->name, n) != 0 || key[n] != '/')
        return -1;
    errno = 0;
    slot = strtol(key + n + 1, &end, 10);
    return errno || end == key + n + 1 || *end || slot < 0 || slot >= lock->limit ? -1 : (int)slot;
}

/* Tries the slots that a message's deletions freed: 1 held, 0 none, -1. */
static int try_freed(session *s, const sl_load_lock *lock, sl_json_span events, const char *token,
                     int64_t *held_rev)
{
    sl_json_iter it;
    sl_json_span ev;
    int more, slot, rc;
    sl_json_iter_init(&it, events);
    while ((more = sl_json_iter_next(&it, &ev)) == 1) {
        if ((slot = deleted_slot(ev, lock)) < 0)
            return failf(s, "watch: an event on no slot of %s: %.*s", lock->name,
                         (int)(ev.len > 300 ? 300 : ev.len), ev.p);
        if (slot_key(s, lock->name, slot) < 0 || (rc = try_put(s, token, held_rev)) != 0)
            return rc;
    }
    return more < 0 ? failf(s, "watch: malformed events") : 0;
}

static int acquire_slot(session *s, const sl_load_lock *lock, const char *token, int64_t *held_rev)
{
    char prefix[KEY_MAX], b64[KEY_B64], end_b64[KEY_B64];
    sl_json_span events;
    int64_t first = 0;
    int rc;
    while ((rc = try_slots(s, lock, token, &first, held_rev)) == 0 && poll_ms > 0)
        if (poll_wait(s) < 0)
            return -1;
    if (rc != 0)
        return rc < 0 ? -1 : 0;
    /* Every slot was taken when tried: a slot freed since the first try is
     * a deletion at a later revision, which the watch replays. */
    snprintf(prefix, sizeof prefix, "%s/", lock->name);
    if (encode_key(s, prefix, b64) < 0)
        return -1;
    prefix[strlen(prefix) - 1] = '0'; /* the range end: '/' + 1 */
    if (encode_key(s, prefix, end_b64) < 0 || watch_open(s, b64, end_b64, first + 1) < 0)
        return -1;
    do
        rc = watch_events(s, &events) < 0 ? -1 : try_freed(s, lock, events, token, held_rev);
    while (rc == 0);
    watch_close(s);
    return rc < 0 ? -1 : 0;
}

static int acquire(void *vs, const sl_load_lock *lock, sl_load_grant *grant)
{
    session *s = vs;
    char token[TOKEN_B64];
    int64_t rev = 0;
    int rc;
    new_token(s, token);
    if (lock->kind == SL_LOAD_SEMAPHORE) {
        rc = acquire_slot(s, lock, token, &rev);
    } else {
        if (encode_key(s, lock->name, s->key) < 0 || (rc = try_put(s, token, &rev)) < 0)
            return -1;
        rc = rc == 1 ? 0 : wait_mutex(s, token, rev, &rev);
    }
    if (rc < 0)
        return -1;
    memset(grant, 0, sizeof *grant);
    grant->token = (uint64_t)rev;
    memcpy(grant->handle, token, sizeof token);
    return 0;
}

/* Deletes s->key if it still holds this grant's token: must succeed. */
static int release(void *vs, const sl_load_grant *grant)
{
    session *s = vs;
    const sl_http_response *r;
    sl_json_span body, resps, first, del;
    sl_json_iter it;
    int64_t deleted;
    if (atomic_load(&s->interrupted))
        return failf(s, "interrupted");
    if (bodyf(s,
              "{\"compare\":[{\"target\":\"VALUE\",\"key\":\"%s\",\"result\":\"EQUAL\","
              "\"value\":\"%s\"}],\"success\":[{\"request_delete_range\":{\"key\":\"%s\"}}]}",
              s->key, grant->handle, s->key) < 0 ||
        call(s, "/v3/kv/txn", &r) < 0)
        return -1;
    body = sl_json_span_of(r->body, r->body_len);
    if (!member_true(body, "succeeded"))
        return failf(s,
                     "the lock was lost: the key no longer held this grant's token (its "
                     "lease ran out, or another client took it): %.300s",
                     r->body);
    if (sl_json_member(body, "responses", &resps) < 0 || sl_json_iter_init(&it, resps) < 0 ||
        sl_json_iter_next(&it, &first) != 1 ||
        sl_json_member(first, "response_delete_range", &del) < 0 ||
        member_i64(del, "deleted", &deleted) < 0 || deleted != 1)
        return failf(s, "POST /v3/kv/txn: the delete did not delete one key: %.300s", r->body);
    return 0;
}

/* The slot keys name/... : the range [name/, name0). */
static int prefix_body(session *s, const char *name, const char *extra)
{
    char prefix[KEY_MAX], b64[KEY_B64], end_b64[KEY_B64];
    if (snprintf(prefix, sizeof prefix, "%s/", name) >= (int)sizeof prefix)
        return failf(s, "lock name too long");
    if (encode_key(s, prefix, b64) < 0)
        return -1;
    prefix[strlen(prefix) - 1] = '0';
    if (encode_key(s, prefix, end_b64) < 0)
        return -1;
    return bodyf(s, "{\"key\":\"%s\",\"range_end\":\"%s\"%s}", b64, end_b64, extra);
}

/* A semaphore is its slot keys, which acquires create: nothing to make,
 * but keys left over by another program would change the run. */
static int semaphore_create(void *vs, const char *name, int limit)
{
    session *s = vs;
    const sl_http_response *r;
    (void)limit; /* every acquire knows it */
    return prefix_body(s, name, "") < 0 || call(s, "/v3/kv/deleterange", &r) < 0 ? -1 : 0;
}

/* After a run every slot must have been given back. */
static int semaphore_delete(void *vs, const char *name)
{
    session *s = vs;
    const sl_http_response *r;
    int64_t count;
    if (prefix_body(s, name, ",\"count_only\":true") < 0 || call(s, "/v3/kv/range", &r) < 0)
        return -1;
    if (member_i64(sl_json_span_of(r->body, r->body_len), "count", &count) < 0)
        return failf(s, "POST /v3/kv/range: no count in %.300s", r->body);
    if (count != 0)
        return failf(s, "semaphore %s still has %lld slot(s) taken after the run", name,
                     (long long)count);
    return 0;
}

const sl_load_backend sl_load_backend_etcd = {
    .name = "etcd",
    .tokens = true,
    .workloads = 0, /* all */
    .session_open = session_open,
    .session_close = session_close,
    .semaphore_create = semaphore_create,
    .semaphore_delete = semaphore_delete,
    .acquire = acquire,
    .release = release,
    .interrupt = interrupt,
    .error = last_error,
    .history_mark = NULL,
    .history_check = NULL,
};

/* ---- etcd-lock: etcd's lock service ---------------------------------------- */

/* Blocks in the server until held; the key it answers is the handle. */
static int lock_acquire(void *vs, const sl_load_lock *lock, sl_load_grant *grant)
{
    session *s = vs;
    const sl_http_response *r;
    sl_json_span body, key;
    int64_t rev;
    if (encode_key(s, lock->name, s->key) < 0 ||
        bodyf(s, "{\"name\":\"%s\",\"lease\":\"%s\"}", s->key, s->lease) < 0 ||
        call(s, "/v3/lock/lock", &r) < 0)
        return -1;
    memset(grant, 0, sizeof *grant);
    body = sl_json_span_of(r->body, r->body_len);
    if (sl_json_member(body, "key", &key) < 0 ||
        sl_json_string(key, grant->handle, sizeof grant->handle) < 0 || !grant->handle[0] ||
        header_revision(body, &rev) < 0)
        return failf(s, "POST /v3/lock/lock: no key or revision in %.300s", r->body);
    grant->token = (uint64_t)rev;
    return 0;
}

/* Deletes the lock's key. etcd answers the same whether or not the key was
 * still there: the unlock is confirmed, not checked. */
static int lock_release(void *vs, const sl_load_grant *grant)
{
    session *s = vs;
    const sl_http_response *r;
    if (atomic_load(&s->interrupted))
        return failf(s, "interrupted");
    if (bodyf(s, "{\"key\":\"%s\"}", grant->handle) < 0 || call(s, "/v3/lock/unlock", &r) < 0)
        return -1;
    return 0;
}

static int no_semaphore(void *vs, const char *name, int limit)
{
    (void)limit;
    return failf(vs, "etcd's lock API has no semaphore (%s)", name);
}

static int no_semaphore_delete(void *vs, const char *name)
{
    return no_semaphore(vs, name, 0);
}

const sl_load_backend sl_load_backend_etcd_lock = {
    .name = "etcd-lock",
    .tokens = true,
    .workloads = 1u << SL_WORKLOAD_UNCONTENDED | 1u << SL_WORKLOAD_CONTENDED,
    .session_open = session_open,
    .session_close = session_close,
    .semaphore_create = no_semaphore,
    .semaphore_delete = no_semaphore_delete,
    .acquire = lock_acquire,
    .release = lock_release,
    .interrupt = interrupt,
    .error = last_error,
    .history_mark = NULL,
    .history_check = NULL,
};
