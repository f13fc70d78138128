/* client_int.h - libsluice's private half: the client's state, the HTTP
 * layer, JSON-to-struct parsing and the helpers the files share.
 *
 * Nothing here is exported to users (include/sluice/client.h is the only
 * public header); the names are sl__* so that a static build can never
 * clash with a user's symbols. */
#ifndef SLUICE_CLIENT_INT_H
#define SLUICE_CLIENT_INT_H

#include <stdarg.h>
#include <stdatomic.h>

#include <curl/curl.h>
#include <jansson.h>

#include "sluice/client.h"

/* The largest answer accepted (curl's DYNBUF habit: every buffer has a
 * maximum). A listing of 100 000 claims fits; anything larger is refused
 * as SL_CLIENT_EPROTO rather than grown without end. */
#define SL__RESPONSE_MAX (16u * 1024 * 1024)
/* The longest line of an event stream (one event's JSON is far smaller). */
#define SL__SSE_LINE_MAX (1024u * 1024)
/* A long poll's request may take this much longer than its wait: the
 * server answers at the end of the wait, plus its commit and the network. */
#define SL__WAIT_SLACK_MS 10000
/* The wait asked for in one long poll by await and the keeper: below the
 * server's default cap (max_wait, 30 s), so that the answer is ours. */
#define SL__WAIT_STEP_MS 25000

/* Internal only: a request stopped because the client's stop flag was set
 * (the keeper being stopped). Never returned by a public function. */
#define SL__ESTOPPED (-100)

/* ---- several servers (servers.c) ------------------------------------------ */

/* The most servers one list may name: a cluster has a few; a longer list is
 * more likely a mistake (a pasted file) than a deployment. */
#define SL__SERVERS_MAX 16
/* With a list, how long one call keeps trying the servers before it
 * reports the failure: past a leader's takeover (about 5 s at worst) and
 * one follower holding the request while nobody leads (10 s). A long poll
 * keeps trying for its wait (at least SL__BACKOFF_MAX_MS), its own
 * deadline: its callers ask again after it. */
#define SL__FAILOVER_MS 15000
/* With a list, the longest an attempt without a wait may take: a server
 * that hangs (stopped, frozen) is left for the next in good time, while a
 * follower holding a request for its 10 s before answering no_leader is
 * still heard. */
#define SL__ATTEMPT_MAX_MS 12000
/* The pause between attempts doubles from the first to the last value. */
#define SL__BACKOFF_MIN_MS 50
#define SL__BACKOFF_MAX_MS 1000

struct sl_client {
    char **servers;     /* base URLs, no trailing '/': one, or a list */
    size_t nservers;    /* 1 to SL__SERVERS_MAX */
    size_t cur;         /* the server in use: the last that answered */
    const char *server; /* servers[cur] */
    char *auth_header;  /* "Authorization: Bearer ..." or NULL */
    char *cacert, *cert, *key; /* TLS files (sl_client_options), or NULL */
    long connect_timeout_ms;
    long request_timeout_ms;
    CURL *easy;   /* reused, so that its connection is kept alive */
    CURLM *multi; /* runs easy, so that a stop can wake a long poll */
    /* Set by the keeper: when it becomes non-zero, a request in progress is
     * abandoned at once (curl_multi_wakeup) with SL__ESTOPPED. */
    atomic_int *stop;
    char curl_err[CURL_ERROR_SIZE];
    /* Set by sl__http_do: the request surely never reached a server (the
     * connection was refused, or the name or the connection failed), and
     * the answer's Retry-After in ms (-1: none). The failover reads them. */
    bool unsent;
    int64_t retry_after_ms;
    /* Monotonic ms past which a call stops trying other servers; 0: none.
     * Set around their calls by the callers that have a deadline of their
     * own (await's timeout, the keeper's lease). */
    int64_t call_deadline;
};

/* ---- errors (client.c) ---------------------------------------------------- */

void sl__err_clear(sl_client_error *err);
/* Fills err (when not NULL) with rc, status 0 and the message; returns rc. */
int sl__err_set(sl_client_error *err, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int sl__err_oom(sl_client_error *err);
/* Whether s is UTF-8 (JSON strings must be): checked before a body is
 * built, so that jansson refusing a string can only mean out of memory. */
bool sl__utf8_valid(const char *s);

/* ---- HTTP (http.c) -------------------------------------------------------- */

/* Receives a streamed body; returns 0 to go on, non-zero to stop. */
typedef int (*sl__body_fn)(void *ud, const char *data, size_t n);

typedef struct sl__request {
    const char *method;        /* GET, POST, PUT, DELETE */
    const char *path;          /* from the server's root, query included and escaped */
    const char *body;          /* JSON text or NULL */
    long timeout_ms;           /* 0: the client's request timeout; -1: none (streams) */
    const char *last_event_id; /* a Last-Event-ID header, or NULL */
    const char *idem_key;      /* an Idempotency-Key header, or NULL */
    sl__body_fn on_body;       /* streams a 2xx body instead of keeping it */
    void *ud;
} sl__request;

typedef struct sl__response {
    long status;
    char *body; /* NUL-terminated, owned; NULL when empty */
    size_t len;
} sl__response;

/* Runs a request. SL_CLIENT_OK as soon as the server answered at all
 * (any status: res->status says which); else ECONNECT, ETIMEOUT, ENOMEM,
 * EPROTO (an answer over SL__RESPONSE_MAX), EINVAL or SL__ESTOPPED, with
 * err filled; res->status is then the status if one had come (a stream
 * that broke). res->body is freed with sl__response_free. */
int sl__http_do(sl_client *c, const sl__request *rq, sl__response *res, sl_client_error *err);
/* tls.c: a TLS failure that trying again cannot mend, said in *err
 * (SL_CLIENT_ECONNECT with err->code "tls_..."); SL_CLIENT_OK for any
 * other failure. */
int sl__tls_failure(const sl_client *c, CURLcode r, sl_client_error *err);
void sl__response_free(sl__response *res);

/* A JSON request: body (may be NULL) is sent, the answer parsed. On 2xx
 * *out is the parsed body (NULL when it was empty, as with 204). On an error
 * status SL_CLIENT_EHTTP with err->status, code and the server's message,
 * and *out the parsed error body when it was JSON (renew's 409 carries the
 * claim in it). The caller json_decref()s *out in both cases. */
/* Entries a listing asks for a page (claims.c); the server's most. */
extern unsigned sl__list_page_size;

/* One JSON call, as sl__call_json runs it. */
typedef struct sl__call {
    const char *method;
    const char *path;     /* query included and escaped, but not the wait */
    json_t *body;         /* NULL: none. Its "wait" is set for each attempt */
    long timeout_ms;      /* for a call without a wait: 0 the client's */
    int64_t wait_ms;      /* a long poll: ?wait= on a GET, "wait" in a body; 0: none */
    long slack_ms;        /* the time allowed beyond the wait; 0: SL__WAIT_SLACK_MS */
    const char *idem_key; /* an Idempotency-Key header, or NULL */
} sl__call;

/* Runs a call. With a list of servers, a failure that another server may
 * not have (see servers.c) moves to the next one and tries again, with a
 * long poll's remaining wait, for SL__FAILOVER_MS (a long poll: its wait);
 * with one server, one attempt, as ever. */
int sl__call_json(sl_client *c, const sl__call *call, json_t **out, sl_client_error *err);
/* sl__call_json without a wait, with an Idempotency-Key (NULL for none). */
int sl__http_json_idem(sl_client *c, const char *method, const char *path, json_t *body,
                       long timeout_ms, const char *idem_key, json_t **out, sl_client_error *err);
int sl__http_json(sl_client *c, const char *method, const char *path, json_t *body, long timeout_ms,
                  json_t **out, sl_client_error *err);

/* Fills err from an error answer (status >= 400): the server's code and
 * message when the body is docs/api.md's error object, else a sentence. */
int sl__err_from_response(sl_client_error *err, long status, const json_t *body, const char *raw);

/* ---- URLs (http.c) -------------------------------------------------------- */

/* A growable string with a maximum, for paths and queries. */
typedef struct sl__buf {
    char *p;
    size_t len, cap;
    bool oom;
} sl__buf;

void sl__buf_add(sl__buf *b, const char *s, size_t n);
void sl__buf_str(sl__buf *b, const char *s);
void sl__buf_fmt(sl__buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s percent-encoded; a lock name keeps '/', ':', '=' and '*'. */
void sl__buf_escape(sl__buf *b, const char *s, bool name);
/* Appends "?key=value" or "&key=value" (value escaped) unless value is NULL. */
void sl__buf_query(sl__buf *b, const char *key, const char *value);
void sl__buf_free(sl__buf *b);

/* ---- the server list (servers.c) ------------------------------------------- */

/* Parses a server spec: one URL as ever ("127.0.0.1:7700" gets http://,
 * trailing slashes go), or a comma-separated list of them, each checked
 * alike; an error names the entry, its position and `source` (the flag
 * or variable it came from). *out is a NULL-free array of *n URLs, freed
 * with sl__servers_free. */
int sl__servers_parse(const char *spec, const char *source, char ***out, size_t *n,
                      sl_client_error *err);
void sl__servers_free(char **servers, size_t n);

/* The state of one call's failover: its deadline and its next pause. */
typedef struct sl__failover {
    int64_t start, deadline;
    int64_t wait_end; /* a long poll's end (monotonic ms); 0: none */
    int64_t backoff;
    unsigned failed; /* attempts that failed */
    unsigned paused; /* failed attempts when the last pause was taken */
} sl__failover;

void sl__failover_start(const sl_client *c, sl__failover *f, int64_t wait_ms);
/* What is left of the long poll's wait (0 when it is over). */
int64_t sl__failover_wait_left(const sl__failover *f);
/* Whether a failure is one another server may not have: the connection
 * failed, or the answer says the cluster is between leaders (503
 * no_leader, leader_changed, not_leader, unavailable; 502). `resend`: the
 * request may be sent twice; when false, only a request that never reached
 * a server is tried elsewhere. */
bool sl__failover_worth(const sl_client *c, int rc, const sl_client_error *err, bool resend);
/* After a failed attempt worth it: moves to the next server, pauses (the
 * backoff, or Retry-After) and returns true to try again; false once the
 * deadline would pass (err then says how long it tried) or the client was
 * stopped meanwhile (*rc SL__ESTOPPED). */
bool sl__failover_next(sl_client *c, sl__failover *f, int *rc, sl_client_error *err);
/* Moves to the next server (a stream that broke reconnects there). */
void sl__failover_move(sl_client *c);

/* ---- parsing (parse.c) ---------------------------------------------------- */

/* "30s", "1h30m", "250ms", "1m30.5s", "1.5" (seconds), "0". */
int sl__duration_parse(const char *s, int64_t *ms);
/* RFC 3339: "2026-11-22T10:00:00.000Z", any offset. */
int sl__time_parse(const char *s, int64_t *ms);

/* Each fills a caller-provided struct (zeroed first) from a JSON object;
 * on failure what was allocated is freed, the struct is zero, and the
 * return is ENOMEM or EPROTO (err says which field). */
int sl__parse_claim(const json_t *o, sl_client_claim *out, sl_client_error *err);
int sl__parse_claims(const json_t *arr, sl_client_claim_list *out, sl_client_error *err);
int sl__parse_lock(const json_t *o, sl_client_lock *out, sl_client_error *err);
int sl__parse_why(const json_t *o, sl_client_why *out, sl_client_error *err);
int sl__parse_event(const json_t *o, sl_client_event *out, sl_client_error *err);
int sl__parse_status(const json_t *o, sl_client_status *out, sl_client_error *err);
int sl__parse_release_counts(const json_t *o, sl_client_release_counts *out, sl_client_error *err);
int sl__parse_queue_cleared(const json_t *o, sl_client_queue_cleared *out, sl_client_error *err);
void sl__claim_clear(sl_client_claim *claim);
void sl__lock_clear(sl_client_lock *lock);
void sl__event_clear(sl_client_event *ev);

/* Parses a heap claim from an object; *out NULL on failure. */
int sl__claim_new(const json_t *o, sl_client_claim **out, sl_client_error *err);

/* ---- claims (claims.c) ---------------------------------------------------- */

/* sl_client_claim_get with the request's time beyond the wait (slack_ms)
 * chosen by the caller: the keeper must hear of a hung server within its
 * lease. */
int sl__claim_get(sl_client *c, const char *id, int64_t wait_ms, const char *seen, long slack_ms,
                  sl_client_claim **out, sl_client_error *err);

/* ---- time (client.c) ------------------------------------------------------ */

/* CLOCK_MONOTONIC in milliseconds. */
int64_t sl__now_ms(void);
/* A pseudo-random number in [0, bound] (0 when bound <= 0), from a state
 * the caller keeps (no global state). */
int64_t sl__jitter(uint64_t *state, int64_t bound);
uint64_t sl__seed(const void *salt);
/* Sleeps ms milliseconds (restarting after signals). */
void sl__sleep_ms(int64_t ms);
/* The retry defaults applied. */
void sl__retry_defaults(const sl_client_retry *in, sl_client_retry *out);
/* Whether a failure is worth retrying: the server unreachable, a request
 * cut off, the store briefly unable to commit (503). */
bool sl__transient(int rc, const sl_client_error *err);

#endif
