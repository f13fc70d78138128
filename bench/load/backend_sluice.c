/* backend_sluice.c - the load generator's backend for sluiced's HTTP API.
 *
 * acquire: POST /v1/claims with "wait":"30s", a long poll answered when the
 * claim is held; if the server's wait cap ends it first (the answer says
 * "pending"), GET /v1/claims/{id}?wait=30s&seen=pending until it is held.
 * release: DELETE /v1/claims/{id}, which must answer "released".
 * history: the event log (GET /v1/events) from the run's start, replayed
 * per lock: every grant must go to the claim at the head of the lock's
 * queue, and never leave more holders than the limit. Events are the
 * server's own record, so this checks what clients cannot see (a grant to
 * two claims that the clients happened not to notice at the same moment).
 * connect_once: GET /healthz on a new connection, closed after the answer
 * (over TLS, a full or resumed handshake each time).
 * An https:// address speaks TLS, verified as sl_load_tls says. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "address.h"
#include "backend.h"
#include "http.h"
#include "json_scan.h"
#include "tls.h"

sl_tls_client *sl_load_tls;

#define LONG_POLL "30s"
/* Above the server's 30 s cap on a wait, so that a slow answer is late,
 * not lost. */
#define SOCKET_TIMEOUT_MS 45000
#define EVENTS_PAGE 1000 /* about 250 KiB of events, well under the 1 MiB body bound */
#define CLAIM_PATH "/v1/claims/"

typedef struct session {
    sl_http_conn *conn;
    char holder[SL_LOAD_NAME_MAX];
    char error[600];
    char body[512];
    char target[SL_LOAD_HANDLE_MAX + 64];
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

/* A request that must answer want; anything else is an error naming the
 * request, the status and the start of the body. */
static int call(session *s, const char *method, const char *target, const char *body, int want,
                const sl_http_response **out)
{
    int rc = sl_http_conn_request(s->conn, method, target, body, body ? strlen(body) : 0, out);
    if (rc < 0) {
        snprintf(s->error, sizeof s->error, "%s %s: %s", method, target,
                 sl_http_conn_error(s->conn));
        return rc;
    }
    if ((*out)->status != want) {
        snprintf(s->error, sizeof s->error, "%s %s answered %d instead of %d: %.300s", method,
                 target, (*out)->status, want, (*out)->body);
        return -1;
    }
    return 0;
}

static int session_open(const char *address, const char *holder, void **out, char *err, size_t cap)
{
    char host[256], port[SL_LOAD_PORT_MAX];
    session *s;
    bool tls;
    int rc;
    *out = NULL;
    if (sl_load_url(address, "http", "https", &tls, host, sizeof host, port) < 0) {
        snprintf(err, cap, "\"%s\" is not HOST:PORT, http://HOST:PORT or https://HOST:PORT",
                 address);
        return -1;
    }
    if (tls && !sl_load_tls) {
        snprintf(err, cap, "%s: https needs --tls-ca FILE (or --tls-insecure)", address);
        return -1;
    }
    if (strlen(holder) >= SL_LOAD_NAME_MAX) {
        snprintf(err, cap, "holder name \"%s\" too long", holder);
        return -1;
    }
    s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, cap, "out of memory");
        return -1;
    }
    rc = sl_http_conn_new_tls(host, port, SOCKET_TIMEOUT_MS, tls ? sl_load_tls : NULL, &s->conn);
    if (rc < 0) {
        snprintf(err, cap, "cannot use %s: %s", address, sl_http_strerror(rc));
        free(s);
        return rc;
    }
    memcpy(s->holder, holder, strlen(holder) + 1);
    *out = s;
    return 0;
}

static void session_close(void *vs)
{
    session *s = vs;
    if (!s)
        return;
    sl_http_conn_free(s->conn);
    free(s);
}

static int semaphore_create(void *vs, const char *name, int limit)
{
    session *s = vs;
    const sl_http_response *r;
    snprintf(s->target, sizeof s->target, "/v1/semaphores/%s", name);
    snprintf(s->body, sizeof s->body, "{\"limit\":%d}", limit);
    return call(s, "PUT", s->target, s->body, 200, &r);
}

static int semaphore_delete(void *vs, const char *name)
{
    session *s = vs;
    const sl_http_response *r;
    snprintf(s->target, sizeof s->target, "/v1/semaphores/%s", name);
    return call(s, "DELETE", s->target, NULL, 204, &r);
}

/* The claim in r: its state, and when held the first lock's token. */
static int read_claim(session *s, const sl_http_response *r, bool *held, bool *pending,
                      uint64_t *token)
{
    sl_json_span claim = sl_json_span_of(r->body, r->body_len), v, locks, lock0, tok;
    sl_json_iter it;
    int64_t t;
    if (sl_json_member(claim, "state", &v) < 0)
        return failf(s, "a claim without a state (%d): %.300s", r->status, r->body);
    *held = sl_json_is_string(v, "held");
    *pending = sl_json_is_string(v, "pending");
    if (!*held)
        return 0;
    if (sl_json_member(claim, "locks", &locks) < 0 || sl_json_iter_init(&it, locks) < 0 ||
        sl_json_iter_next(&it, &lock0) != 1 || sl_json_member(lock0, "token", &tok) < 0 ||
        sl_json_int64(tok, &t) < 0 || t <= 0)
        return failf(s, "a held claim without a token (%d): %.300s", r->status, r->body);
    *token = (uint64_t)t;
    return 0;
}

static int acquire(void *vs, const sl_load_lock *lock, sl_load_grant *grant)
{
    session *s = vs;
    const sl_http_response *r;
    bool held, pending;
    int rc;
    /* Holder and lock names come from workload.c, made of characters that
     * need no JSON escape. */
    snprintf(s->body, sizeof s->body,
             "{\"holder\":\"%s\",\"locks\":[{\"%s\":\"%s\"}],\"wait\":\"" LONG_POLL "\"}",
             s->holder, lock->kind == SL_LOAD_MUTEX ? "mutex" : "semaphore", lock->name);
    if ((rc = call(s, "POST", "/v1/claims", s->body, 201, &r)) < 0)
        return rc;
    if (!r->location || strncmp(r->location, CLAIM_PATH, strlen(CLAIM_PATH)) != 0 ||
        strlen(r->location) >= sizeof grant->handle)
        return failf(s, "POST /v1/claims: 201 without a usable Location: %.300s", r->body);
    memcpy(grant->handle, r->location, strlen(r->location) + 1);
    if ((rc = read_claim(s, r, &held, &pending, &grant->token)) < 0)
        return rc;
    while (pending) { /* the server's wait cap ran out first: wait again */
        snprintf(s->target, sizeof s->target, "%s?wait=" LONG_POLL "&seen=pending", grant->handle);
        if ((rc = call(s, "GET", s->target, NULL, 200, &r)) < 0)
            return rc;
        if ((rc = read_claim(s, r, &held, &pending, &grant->token)) < 0)
            return rc;
    }
    if (!held)
        return failf(s, "%s: the claim ended instead of being held: %.300s", grant->handle,
                     r->body);
    return 0;
}

static int release(void *vs, const sl_load_grant *grant)
{
    session *s = vs;
    const sl_http_response *r;
    sl_json_span v;
    int rc = call(s, "DELETE", grant->handle, NULL, 200, &r);
    if (rc < 0)
        return rc;
    if (sl_json_member(sl_json_span_of(r->body, r->body_len), "state", &v) < 0 ||
        !sl_json_is_string(v, "released"))
        return failf(s, "DELETE %s: the answer is not a released claim: %.300s", grant->handle,
                     r->body);
    return 0;
}

static void interrupt(void *vs)
{
    sl_http_conn_interrupt(((session *)vs)->conn);
}

static int connect_once(void *vs, bool resume)
{
    session *s = vs;
    const sl_http_response *r;
    uint64_t before, after, hs;
    int rc;
    sl_http_conn_tls_counts(s->conn, &hs, &before);
    sl_http_conn_set_resume(s->conn, resume);
    rc = call(s, "GET", "/healthz", NULL, 200, &r);
    sl_http_conn_close(s->conn);
    if (rc < 0)
        return rc;
    sl_http_conn_tls_counts(s->conn, &hs, &after);
    return after > before;
}

static const char *last_error(void *vs)
{
    return ((session *)vs)->error;
}

static int history_mark(void *vs, uint64_t *mark)
{
    session *s = vs;
    const sl_http_response *r;
    sl_json_span v;
    int64_t next;
    /* /v1/status: the leader's figures from any server of a cluster. */
    int rc = call(s, "GET", "/v1/status", NULL, 200, &r);
    if (rc < 0)
        return rc;
    if (sl_json_member(sl_json_span_of(r->body, r->body_len), "next_seq", &v) < 0 ||
        sl_json_int64(v, &next) < 0 || next < 1)
        return failf(s, "GET /v1/status: no next_seq in %.300s", r->body);
    *mark = (uint64_t)next - 1;
    return 0;
}

/* ---- the FIFO replay of the event log ---------------------------------- */

typedef struct claim_id {
    char s[48];
} claim_id;

/* A list of claim ids, oldest first: a lock's queue, or its holders. */
typedef struct fifo {
    claim_id *ids;
    size_t head, len, cap;
} fifo;

/* One lock as the replay sees it. */
typedef struct replay_lock {
    char key[SL_LOAD_NAME_MAX + 8]; /* "mtx/NAME" or "sem/NAME", as events name locks */
    int limit;
    fifo queue;   /* pending claims */
    fifo holders; /* claims granted and not yet ended */
} replay_lock;

static int fifo_push(fifo *q, const char *id)
{
    if (q->head > 0 && q->head + q->len == q->cap) {
        memmove(q->ids, q->ids + q->head, q->len * sizeof *q->ids);
        q->head = 0;
    }
    if (q->head + q->len == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 64;
        claim_id *n = realloc(q->ids, cap * sizeof *n);
        if (!n)
            return -1;
        q->ids = n;
        q->cap = cap;
    }
    snprintf(q->ids[q->head + q->len].s, sizeof q->ids[0].s, "%s", id);
    q->len++;
    return 0;
}

/* Removes id; returns where it was (0 = the head), or -1. */
static long fifo_remove(fifo *q, const char *id)
{
    size_t i;
    for (i = 0; i < q->len; i++) {
        if (strcmp(q->ids[q->head + i].s, id) != 0)
            continue;
        if (i == 0) {
            q->head++;
        } else {
            memmove(q->ids + q->head + i, q->ids + q->head + i + 1,
                    (q->len - i - 1) * sizeof *q->ids);
        }
        q->len--;
        return (long)i;
    }
    return -1;
}

/* An event that ends a claim, pending or held. */
static bool ends_claim(sl_json_span type)
{
    static const char *const types[] = {"claim.released",
                                        "claim.withdrawn",
                                        "claim.expired",
                                        "claim.timed_out",
                                        "claim.canceled",
                                        "claim.superseded",
                                        NULL};
    int i;
    for (i = 0; types[i]; i++)
        if (sl_json_is_string(type, types[i]))
            return true;
    return false;
}

/* A grant must go to the head of the queue and leave the lock within its
 * limit. */
static int replay_grant(replay_lock *l, const char *id, sl_load_history *out)
{
    out->grants++;
    if (fifo_remove(&l->queue, id) != 0)
        out->out_of_order++;
    if (fifo_push(&l->holders, id) < 0)
        return -1;
    if (l->holders.len > (size_t)l->limit)
        out->over_limit++;
    return 0;
}

static int replay_event(sl_json_span ev, replay_lock *ls, int nl, sl_load_history *out)
{
    sl_json_span type, claim, locks, key;
    sl_json_iter it;
    char id[48];
    int i, more;
    if (sl_json_member(ev, "type", &type) < 0 || type.len < 8)
        return -1;
    out->events++;
    if (memcmp(type.p, "\"claim.", 7) != 0)
        return 0; /* semaphore.updated and .deleted: no claim, no queue */
    if (sl_json_member(ev, "claim", &claim) < 0 || sl_json_string(claim, id, sizeof id) < 0 ||
        sl_json_member(ev, "locks", &locks) < 0 || sl_json_iter_init(&it, locks) < 0)
        return -1;
    while ((more = sl_json_iter_next(&it, &key)) == 1) {
        for (i = 0; i < nl && !sl_json_is_string(key, ls[i].key); i++)
            ;
        if (i == nl)
            continue;
        if (sl_json_is_string(type, "claim.queued")) {
            if (fifo_push(&ls[i].queue, id) < 0)
                return -1;
        } else if (sl_json_is_string(type, "claim.acquired")) {
            if (replay_grant(&ls[i], id, out) < 0)
                return -1;
        } else if (ends_claim(type)) {
            fifo_remove(&ls[i].queue, id);
            fifo_remove(&ls[i].holders, id);
        }
    }
    return more < 0 ? -1 : 0;
}

/* One page of events after *since; *since moves to its "next". Returns the
 * number of events on the page, or a negative code. */
static int replay_page(session *s, uint64_t *since, replay_lock *ls, int nl, sl_load_history *out)
{
    const sl_http_response *r;
    sl_json_span page, events, next, ev;
    sl_json_iter it;
    int64_t n;
    int count = 0, more, rc;
    snprintf(s->target, sizeof s->target, "/v1/events?since=%llu&limit=%d",
             (unsigned long long)*since, EVENTS_PAGE);
    if ((rc = call(s, "GET", s->target, NULL, 200, &r)) < 0)
        return rc;
    page = sl_json_span_of(r->body, r->body_len);
    if (sl_json_member(page, "events", &events) < 0 || sl_json_iter_init(&it, events) < 0 ||
        sl_json_member(page, "next", &next) < 0 || sl_json_int64(next, &n) < 0 || n < 0)
        return failf(s, "GET %s: not a page of events: %.300s", s->target, r->body);
    while ((more = sl_json_iter_next(&it, &ev)) == 1) {
        if (replay_event(ev, ls, nl, out) < 0)
            return failf(s, "GET %s: an event the replay cannot read: %.300s", s->target, r->body);
        count++;
    }
    if (more < 0)
        return failf(s, "GET %s: malformed events: %.300s", s->target, r->body);
    *since = (uint64_t)n;
    return count;
}

static int history_check(void *vs, uint64_t mark, const sl_load_lock *locks, int nlocks,
                         sl_load_history *out)
{
    session *s = vs;
    replay_lock *ls = calloc((size_t)(nlocks > 0 ? nlocks : 1), sizeof *ls);
    uint64_t since = mark;
    int i, rc;
    memset(out, 0, sizeof *out);
    if (!ls) {
        snprintf(s->error, sizeof s->error, "out of memory");
        return -1;
    }
    for (i = 0; i < nlocks; i++) {
        snprintf(ls[i].key, sizeof ls[i].key, "%s/%s",
                 locks[i].kind == SL_LOAD_MUTEX ? "mtx" : "sem", locks[i].name);
        ls[i].limit = locks[i].limit;
    }
    while ((rc = replay_page(s, &since, ls, nlocks, out)) > 0)
        ;
    for (i = 0; i < nlocks; i++) {
        free(ls[i].queue.ids);
        free(ls[i].holders.ids);
    }
    free(ls);
    return rc < 0 ? rc : 0;
}

const sl_load_backend sl_load_backend_sluice = {
    .name = "sluice",
    .tokens = true,
    .session_open = session_open,
    .session_close = session_close,
    .semaphore_create = semaphore_create,
    .semaphore_delete = semaphore_delete,
    .acquire = acquire,
    .release = release,
    .interrupt = interrupt,
    .error = last_error,
    .history_mark = history_mark,
    .history_check = history_check,
    .connect_once = connect_once,
};
