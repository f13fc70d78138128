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

struct sl_client {
    char *server;      /* base URL, no trailing '/' */
    char *auth_header; /* "Authorization: Bearer ..." or NULL */
    long connect_timeout_ms;
    long request_timeout_ms;
    CURL *easy;   /* reused, so that its connection is kept alive */
    CURLM *multi; /* runs easy, so that a stop can wake a long poll */
    /* Set by the keeper: when it becomes non-zero, a request in progress is
     * abandoned at once (curl_multi_wakeup) with SL__ESTOPPED. */
    atomic_int *stop;
    char curl_err[CURL_ERROR_SIZE];
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
void sl__response_free(sl__response *res);

/* A JSON request: body (may be NULL) is sent, the answer parsed. On 2xx
 * *out is the parsed body (NULL when it was empty, as with 204). On an error
 * status SL_CLIENT_EHTTP with err->status, code and the server's message,
 * and *out the parsed error body when it was JSON (renew's 409 carries the
 * claim in it). The caller json_decref()s *out in both cases. */
/* Entries a listing asks for a page (claims.c); the server's most. */
extern unsigned sl__list_page_size;

/* sl__http_json with an Idempotency-Key header (idem_key, NULL for none). */
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
