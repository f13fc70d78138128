/* sluice/client.h - libsluice, the C client of sluiced's HTTP API.
 *
 * Everything docs/api.md offers, as C calls over libcurl: configure semaphores,
 * claim (with a long-poll wait), wait on a claim, renew, release, why, the
 * queue, claims, events (pages and the live stream), and a keeper that keeps
 * a held claim's lease renewed on a thread of its own and says when the
 * claim is revoked or lost. The `sluice` command is built on this alone.
 *
 * Conventions: functions return SL_CLIENT_OK (0) or a negative
 * SL_CLIENT_E* code and fill *err (which may be NULL) with a sentence.
 * Results come through out-parameters, owned by the caller, each freed with
 * its own sl_client_*_free. An sl_client is one connection's worth of state:
 * use it from one thread at a time. Durations are milliseconds; times are
 * Unix milliseconds (-1 when the server said null). Out of memory is
 * reported as SL_CLIENT_ENOMEM, never an abort. */
#ifndef SLUICE_CLIENT_H
#define SLUICE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SL_CLIENT_VERSION "0.1.0"
#define SL_CLIENT_DEFAULT_SERVER "http://127.0.0.1:7700"

enum {
    SL_CLIENT_OK = 0,
    SL_CLIENT_ENOMEM = -1,   /* out of memory */
    SL_CLIENT_EINVAL = -2,   /* a bad argument: err says which */
    SL_CLIENT_ECONNECT = -3, /* the server could not be reached (refused, DNS, reset) */
    SL_CLIENT_EHTTP = -4,    /* the server answered an error: err->status and err->code */
    SL_CLIENT_EPROTO = -5,   /* the answer is not what the API says it is */
    SL_CLIENT_ETIMEOUT = -6, /* the request, or the wait, ran out of time */
};

/* An SL_CLIENT_ECONNECT from a TLS failure that trying again cannot mend
 * has err->code "tls_verify" (the server's certificate was not accepted),
 * "tls_refused" (the server refused this client's certificate, or its lack
 * of one), "tls_protocol" (the server does not answer in TLS) or "tls_files"
 * (a CA file, a certificate or a key that cannot be used); the message says
 * which file and how to mend it. Other connection failures have code "". */
typedef struct sl_client_error {
    int rc;             /* the SL_CLIENT_E* code */
    long status;        /* HTTP status when the server answered, else 0 */
    char code[32];      /* docs/api.md's error code ("conflict", ...) when it gave one */
    char message[1024]; /* what went wrong and, from the server, how to mend it */
} sl_client_error;

/* A short, static sentence for a code ("the server could not be reached"). */
const char *sl_client_strerror(int rc);

/* ---- the client ----------------------------------------------------------- */

typedef struct sl_client sl_client;

/* The server may be a comma-separated list of the servers of one cluster
 * (shared mode: several sluiced on one database, one leading):
 * "http://a:7700,http://b:7700,http://c:7700", at most 16. The client
 * keeps using the one that last answered; when a connection to it fails,
 * or it answers that the cluster is between leaders (503 no_leader,
 * leader_changed, unavailable; 502), a call moves to the next and tries
 * again, with a pause growing from 50 ms to 1 s (or the answer's
 * Retry-After), for 15 s (a long poll: for its wait) before it reports
 * the last failure. Every call may be sent twice except
 * sl_client_semaphore_delete, sl_client_claims_release and
 * sl_client_queue_clear, which move on only when the connection was
 * refused (sent twice, a release by prefix would count only what the
 * second found left); a creation is sent again
 * with the same Idempotency-Key, and a long poll waits only the rest of its
 * wait. With a list, one attempt takes at most 12 s beyond its wait,
 * so that a server that hangs is left for the next. With one URL, a
 * failure is reported at once, as it always was. */
typedef struct sl_client_options {
    const char *server;      /* base URL or list; NULL: $SLUICE_SERVER, else the default */
    const char *token;       /* bearer token; NULL: $SLUICE_TOKEN, else none */
    long connect_timeout_ms; /* 0: 5000 */
    long request_timeout_ms; /* for requests that do not wait; 0: 30000 */
    /* HTTPS (a server with tls.cert): PEM files, each NULL: its variable,
     * else none. cacert: the CAs the server's certificate is checked
     * against ($SLUICE_CACERT; none: the system's). cert and key: this
     * client's certificate and key for a server that asks for one, mTLS
     * ($SLUICE_CERT, $SLUICE_KEY; key NULL: in the cert file). */
    const char *cacert;
    const char *cert;
    const char *key;
} sl_client_options;

/* opts may be NULL. The strings are copied. */
int sl_client_new(const sl_client_options *opts, sl_client **out, sl_client_error *err);
void sl_client_free(sl_client *c);
/* The server URL in use (owned by the client): with a list, the one that
 * last answered (the first before any did). */
const char *sl_client_server(const sl_client *c);
/* The servers the client was given: 1 for one URL, else the list's length;
 * and the i-th of them (from 0; NULL past the end), normalised as
 * sl_client_server shows it. */
size_t sl_client_server_count(const sl_client *c);
const char *sl_client_server_at(const sl_client *c, size_t i);

/* ---- claims --------------------------------------------------------------- */

typedef struct sl_client_claim_lock {
    bool semaphore;   /* else a mutex */
    char *name;
    unsigned slots;
    bool has_token;   /* once granted */
    uint64_t token;   /* the fencing token */
    size_t position;  /* place in the lock's queue while pending, from 1; else 0 */
    unsigned limit;   /* the inline limit the claim gave this semaphore, else 0 */
} sl_client_claim_lock;

typedef struct sl_client_tag {
    char *key, *value;
} sl_client_tag;

/* One of the groups of a claim in several. */
typedef struct sl_client_group {
    char *name;
    char *cancel; /* "none", "pending" or "in-progress" */
} sl_client_group;

/* A claim as the server reported it. */
typedef struct sl_client_claim {
    char *id, *state, *holder;
    char *group, *rebalance_key; /* NULL when none */
    char *reason, *by;           /* by: NULL when none */
    int priority;
    int64_t created_ms, expires_ms; /* expires: -1 when none */
    int64_t lease_ms, timeout_ms;
    sl_client_claim_lock *locks;
    size_t nlocks;
    sl_client_tag *tags;
    size_t ntags;
    size_t queue_position; /* in GET /v1/queue answers, else 0 */
    char *rule;            /* in GET /v1/queue answers: the main block rule, else NULL */
    char *json;            /* the claim's JSON as the server sent it */
    /* While revoking: when the server ends it and hands its slots on (its
     * clock's Unix ms); else -1. */
    int64_t revoke_at_ms;
    /* A claim in more than one group: each with its cancel, as the server
     * lists them (group is the first); a claim in one group or none has
     * none here (group names its one). */
    sl_client_group *groups;
    size_t ngroups;
} sl_client_claim;

void sl_client_claim_free(sl_client_claim *claim);
/* Whether a state names an ended claim (released, withdrawn, expired, ...). */
bool sl_client_state_ended(const char *state);

typedef struct sl_client_lock_req {
    bool semaphore; /* else a mutex */
    const char *name;
    unsigned slots; /* 0 means 1 */
    /* Semaphores: an inline limit (1 to 1000000000; 0: none). When no
     * configuration or pattern covers the name, the semaphore is made with
     * it and goes once nobody holds or waits for it; a claim giving another
     * limit meanwhile is refused (409), and a configured semaphore takes
     * only its own limit. */
    unsigned limit;
} sl_client_lock_req;

typedef struct sl_client_tag_req {
    const char *key, *value;
} sl_client_tag_req;

/* A concurrency group of a claim: the lock group/NAME (a mutex, or the
 * semaphore configured for it), with its own cancel. */
typedef struct sl_client_group_req {
    const char *name;
    const char *cancel; /* "none", "pending", "in-progress"; NULL: none */
} sl_client_group_req;

/* POST /v1/claims. Unset strings are left out of the request (the server's
 * defaults apply); durations are strings such as "30s". */
typedef struct sl_client_claim_req {
    const char *holder; /* required */
    const sl_client_lock_req *locks;
    size_t nlocks;
    const sl_client_tag_req *tags;
    size_t ntags;
    const char *group;
    const char *cancel; /* "none", "pending", "in-progress" */
    const char *grace;
    int priority;
    const char *created; /* RFC 3339 */
    const char *rebalance_key;
    const char *lease;
    const char *timeout;
    int64_t wait_ms; /* long-poll on the POST itself; 0: answer at once */
    /* Sent as the Idempotency-Key header (1 to 128 printable ASCII
     * characters): a retry with the same key answers the claim the first
     * attempt made instead of making another. NULL: the call makes a random
     * one. Either way the call itself tries again with it, a few times,
     * when the connection breaks; a caller that retries on its own should
     * pass one key to all its attempts (sl_client_idempotency_key). */
    const char *idempotency_key;
    /* More groups, each with its cancel, besides group and cancel (which
     * are the shorthand for one): at most 8 groups in all. */
    const sl_client_group_req *groups;
    size_t ngroups;
} sl_client_claim_req;

/* A random idempotency key (32 hex digits and a NUL) into buf. */
void sl_client_idempotency_key(char buf[33]);

int sl_client_claim_create(sl_client *c, const sl_client_claim_req *req, sl_client_claim **out,
                           sl_client_error *err);
/* GET /v1/claims/{id}; with wait_ms > 0 answers when the state is not
 * `seen` (NULL: the state when the request arrives) or the wait runs out. */
int sl_client_claim_get(sl_client *c, const char *id, int64_t wait_ms, const char *seen,
                        sl_client_claim **out, sl_client_error *err);

/* Called with every answer while sl_client_claim_await waits (to show why
 * a claim waits), and with err set while the server cannot be reached. */
typedef void (*sl_client_progress_fn)(void *ud, const sl_client_claim *claim,
                                      const sl_client_error *err);

typedef struct sl_client_retry {
    int64_t interval_ms; /* between attempts while unreachable; 0: 1000 */
    int64_t jitter_ms;   /* plus a random 0..jitter; 0: 500 */
} sl_client_retry;

/* Waits until the claim is held or has ended, or timeout_ms passes (then
 * SL_CLIENT_ETIMEOUT, with *out the last answer, NULL if none came;
 * timeout_ms <= 0: no limit). The first look answers at once, so progress
 * can say at once why the claim waits; then it long-polls again through the
 * server's wait cap, and retries (retry may be NULL: defaults) while the
 * server is unreachable or answers 503. *out is the claim as it was when
 * the wait ended; on other errors (404, 401...) *out is NULL. */
int sl_client_claim_await(sl_client *c, const char *id, int64_t timeout_ms,
                          const sl_client_retry *retry, sl_client_progress_fn progress, void *ud,
                          sl_client_claim **out, sl_client_error *err);
/* POST /v1/claims/{id}/renew. When the claim is revoking or ended the server
 * answers 409: SL_CLIENT_EHTTP with err->status 409 and *out the claim. */
int sl_client_claim_renew(sl_client *c, const char *id, sl_client_claim **out,
                          sl_client_error *err);
/* DELETE /v1/claims/{id}: releases or withdraws; *out (may be NULL) the final claim. */
int sl_client_claim_release(sl_client *c, const char *id, sl_client_claim **out,
                            sl_client_error *err);
/* POST /v1/claims/{id}/cancel: an operator's cancel. A pending, held or
 * revoking claim ends "canceled" ("canceled by an operator"), which its own
 * client can tell from a release; an ended claim is answered as it is.
 * *out (may be NULL) the final claim. */
int sl_client_claim_cancel(sl_client *c, const char *id, sl_client_claim **out,
                           sl_client_error *err);

/* What a release by holder prefix ended (DELETE /v1/claims?holder_prefix=). */
typedef struct sl_client_release_counts {
    uint64_t released;  /* held claims released */
    uint64_t withdrawn; /* pending claims withdrawn */
    uint64_t skipped;   /* live claims of the prefix the token may not end, left as they are */
    char *json;         /* the answer's JSON as the server sent it */
    uint64_t canceled;  /* revoking claims ended canceled (0 from a server that predates it,
                         * which counted them under released) */
} sl_client_release_counts;

/* Frees what sl_client_claims_release put in *counts (not counts itself). */
void sl_client_release_counts_free(sl_client_release_counts *counts);
/* DELETE /v1/claims?holder_prefix=P: ends every live claim whose holder
 * starts with holder_prefix (a plain prefix: end it with '/' for a run's
 * RUN/STEP holders), all in one step before anyone else is let in, so that
 * none is granted on the way out: pending ones withdrawn, held ones
 * released, revoking ones canceled. No such claim is not an error: all
 * counts are 0. An empty or NULL prefix is
 * EINVAL; the server refuses one over 253 characters (400). */
int sl_client_claims_release(sl_client *c, const char *holder_prefix, sl_client_release_counts *out,
                             sl_client_error *err);

typedef struct sl_client_claim_list {
    sl_client_claim *items;
    size_t n;
} sl_client_claim_list;

void sl_client_claim_list_free(sl_client_claim_list *list);
/* GET /v1/claims with optional filters (NULL: none). */
int sl_client_claims(sl_client *c, const char *state, const char *holder, const char *lock,
                     sl_client_claim_list *out, sl_client_error *err);
/* GET /v1/queue (lock: NULL or a key "mtx/NAME" / "sem/NAME"); each item has
 * queue_position and rule set. */
int sl_client_queue(sl_client *c, const char *lock, sl_client_claim_list *out,
                    sl_client_error *err);

/* What clearing a queue canceled (DELETE /v1/queue). */
typedef struct sl_client_queue_cleared {
    uint64_t canceled; /* pending claims canceled */
    char *json;        /* the answer's JSON as the server sent it */
} sl_client_queue_cleared;

/* Frees what sl_client_queue_clear put in *cleared (not cleared itself). */
void sl_client_queue_cleared_free(sl_client_queue_cleared *cleared);
/* DELETE /v1/queue?lock=KEY&holder_prefix=P: an operator's cancel of every
 * pending claim waiting for lock (a key "mtx/NAME" / "sem/NAME"), or whose
 * holder starts with holder_prefix, or both when both are given (NULL: not
 * given; at least one is required, and neither may be empty: EINVAL). Each
 * ends canceled "by an operator"; held claims are left alone. It needs an
 * admin token (403 otherwise). No such claim is not an error: 0. */
int sl_client_queue_clear(sl_client *c, const char *lock, const char *holder_prefix,
                          sl_client_queue_cleared *out, sl_client_error *err);

/* ---- why ------------------------------------------------------------------ */

typedef struct sl_client_why_reason {
    char *lock, *rule, *message;
    uint64_t used, limit;
    size_t position, ahead_count;
    char **ahead; /* the first claims ahead, ids */
    size_t nahead;
    /* On a preempting semaphore where the claim does not fit ("preempt"):
     * "waiting", "will", "not_head" or "too_few", and its holders count;
     * NULL and 0 when the server said null. */
    char *preempt_status;
    uint64_t preempt_holders;
    /* On a rebalanced semaphore whose free slots do not let it in
     * ("share"): its key's quota, the slots its key holds, its key's weight
     * and the weights of the keys present summed. has_share false: null. */
    bool has_share;
    uint64_t share_quota, share_held, share_weight, share_weights;
    /* Rule "rate": when the lock's bucket will have a token for it (the
     * server's clock, Unix ms); -1 when not given. */
    int64_t admit_at_ms;
} sl_client_why_reason;

typedef struct sl_client_why {
    char *state;
    sl_client_why_reason *reasons;
    size_t nreasons;
    char *json;
} sl_client_why;

void sl_client_why_free(sl_client_why *why);
int sl_client_claim_why(sl_client *c, const char *id, sl_client_why **out, sl_client_error *err);

/* ---- locks ---------------------------------------------------------------- */

typedef struct sl_client_holder {
    char *claim, *holder;
    unsigned slots;
    uint64_t token;
    int64_t since_ms, expires_ms;
} sl_client_holder;

typedef struct sl_client_waiter {
    char *claim, *holder, *reason;
    unsigned slots;
    size_t position;
    int priority;
    int64_t created_ms;
} sl_client_waiter;

/* A rebalance key's weight on a rebalanced semaphore. */
typedef struct sl_client_weight {
    char *key;
    uint64_t weight;
} sl_client_weight;

/* A semaphore, pattern or mutex as GET /v1/semaphores/{name} shows it; in
 * listings holders and pending are empty and the counts set. */
typedef struct sl_client_lock {
    bool semaphore;
    char *name, *strategy;
    char *from_pattern; /* NULL when none */
    uint64_t limit, used, token;
    int64_t lease_ms;
    size_t holders_count, pending_count;
    sl_client_holder *holders;
    size_t nholders;
    sl_client_waiter *pending;
    size_t npending;
    char *json;
    /* The semaphore's rules as the server shows them (docs/api.md, "The
     * semaphore's rules"); a mutex, and a server too old to show them, has
     * them all off (0, false, NULL). */
    bool inline_limit;         /* "inline": made by its claims' inline limit */
    int64_t overtake_limit_ms; /* skip semaphores only; else -1 */
    bool preempt;
    int64_t preempt_grace_ms;  /* with preempt; else 0 */
    uint64_t max_pending;      /* 0: no bound */
    char *on_full;             /* "reject" or "drop_oldest" with a max_pending; else NULL */
    sl_client_weight *weights; /* rebalanced only: each listed key's weight */
    size_t nweights;
    uint64_t default_weight; /* rebalanced only (1 unless set); else 0 */
    char *rate;              /* "N/PERIOD"; NULL: none */
    uint64_t burst;          /* with a rate: the bucket's size; else 0 */
    int64_t backdate_ms;     /* how far back a claim on it may set created; 0: none */
} sl_client_lock;

typedef struct sl_client_lock_list {
    sl_client_lock *items;
    size_t n;
} sl_client_lock_list;

void sl_client_lock_free(sl_client_lock *lock);
void sl_client_lock_list_free(sl_client_lock_list *list);

/* PUT /v1/semaphores/{name}: strategy and lease may be NULL (defaults).
 * The same as sl_client_semaphore_put with no rules. */
int sl_client_semaphore_set(sl_client *c, const char *name, uint64_t limit, const char *strategy,
                            const char *lease, sl_client_lock **out, sl_client_error *err);

typedef struct sl_client_weight_req {
    const char *key;
    uint64_t weight; /* 1 to 1000000 (the server checks) */
} sl_client_weight_req;

/* A semaphore's whole configuration, for sl_client_semaphore_put. Zero it
 * first: every field left zero (NULL, false, 0) is left out of the request,
 * and so goes back to the server's default, since a PUT replaces the whole
 * configuration (every rule not given is off). Durations are strings such
 * as "30s". The server checks the values and their combinations (a
 * companion field without its rule is 400, and says so). Fields may be
 * added at the end. */
typedef struct sl_client_semaphore_config {
    uint64_t limit;             /* 0 pauses the semaphore */
    const char *strategy;       /* "strict", "skip", "rebalanced"; NULL: strict */
    const char *lease;          /* NULL: none */
    const char *overtake_limit; /* skip only; NULL: the server's 1m */
    bool preempt;               /* preemption by priority (strict and skip) */
    const char *preempt_grace;  /* with preempt; NULL: 30s */
    uint64_t max_pending;       /* at most this many waiters; 0: no bound */
    const char *on_full;        /* "reject", "drop_oldest"; with max_pending; NULL: reject */
    const sl_client_weight_req *weights; /* rebalanced only */
    size_t nweights;
    uint64_t default_weight; /* rebalanced only; 0: not sent (1) */
    const char *rate;        /* "N/PERIOD" ("30/1m"); NULL: none */
    uint64_t burst;          /* with rate; 0: not sent (the rate's N) */
    const char *backdate;    /* NULL: none */
} sl_client_semaphore_config;

/* PUT /v1/semaphores/{name} with cfg's fields (cfg must not be NULL). */
int sl_client_semaphore_put(sl_client *c, const char *name, const sl_client_semaphore_config *cfg,
                            sl_client_lock **out, sl_client_error *err);
int sl_client_semaphore_get(sl_client *c, const char *name, sl_client_lock **out,
                            sl_client_error *err);
int sl_client_semaphore_delete(sl_client *c, const char *name, sl_client_error *err);
int sl_client_semaphores(sl_client *c, sl_client_lock_list *out, sl_client_error *err);
int sl_client_mutex_get(sl_client *c, const char *name, sl_client_lock **out,
                        sl_client_error *err);
int sl_client_mutexes(sl_client *c, sl_client_lock_list *out, sl_client_error *err);

/* ---- events --------------------------------------------------------------- */

typedef struct sl_client_event {
    uint64_t seq;
    int64_t time_ms;
    char *type;
    char *claim, *holder; /* NULL for semaphore events */
    char **locks;
    size_t nlocks;
    char *reason;
    char *json;
    /* Who asked for it: a token's name, "anonymous" (a server without
     * tokens) or "sluice" (the server's own rules); NULL for events
     * recorded before servers recorded it. */
    char *actor;
} sl_client_event;

typedef struct sl_client_event_page {
    sl_client_event *items;
    size_t n;
    uint64_t next; /* pass as the next `since` */
    /* The server's read stopped at its scan budget (limits.max_event_scan):
     * fewer than limit events, maybe none, and more may follow next. Read
     * on while a page is partial or full. */
    bool partial;
} sl_client_event_page;

void sl_client_event_page_free(sl_client_event_page *page);
/* GET /v1/events: since, claim (NULL: all), limit (0: server default),
 * wait_ms (0: answer at once). */
int sl_client_events(sl_client *c, uint64_t since, const char *claim, size_t limit,
                     int64_t wait_ms, sl_client_event_page *out, sl_client_error *err);

/* Return non-zero to stop following. The event is valid during the call. */
typedef int (*sl_client_event_fn)(void *ud, const sl_client_event *ev);
/* GET /v1/events/stream from `since`: calls fn for each event as it
 * arrives, reconnecting with Last-Event-ID (after retry's pause) when the
 * stream breaks, until fn returns non-zero (then SL_CLIENT_OK). A stream
 * that was never established is not retried: the first connection's
 * failure (ECONNECT, or an error answer such as 403) is returned. */
int sl_client_events_follow(sl_client *c, uint64_t since, const sl_client_retry *retry,
                            sl_client_event_fn fn, void *ud, sl_client_error *err);

/* ---- the server ------------------------------------------------------------ */

typedef struct sl_client_status {
    char *status, *version, *store;
    uint64_t pending, held, ended, next_seq;
    char *json;
    /* "leader" (a single server is its own), "follower" or "campaigning";
     * NULL from a server too old to say. */
    char *role;
    /* Shared mode only (else 0 and NULL): the newest leader epoch the
     * server knows, the leader's URL (NULL while none leads) and the
     * server's own URL as its peers reach it. */
    uint64_t epoch;
    char *leader, *self;
    /* Whether the answer had the claims' counts and next_seq: a leader's
     * (or a single server's) does, a follower's does not. */
    bool counted;
} sl_client_status;

void sl_client_status_free(sl_client_status *st);
/* GET /healthz. It is answered by the server asked, never relayed: with a
 * list, by the first that answers (sl_client_server says which). */
int sl_client_status_get(sl_client *c, sl_client_status **out, sl_client_error *err);

/* ---- keeping a claim ------------------------------------------------------- */

typedef struct sl_client_keeper sl_client_keeper;

/* Why a kept claim is no longer safely held. */
typedef enum {
    SL_CLIENT_LOST_REVOKED, /* revoking: a newer claim of its group wants it; stop within grace */
    SL_CLIENT_LOST_ENDED,   /* it ended (expired, canceled...): stop now */
    SL_CLIENT_LOST_UNREACHABLE, /* no renewal got through for a whole lease: presume it lost */
} sl_client_lost;

/* Called once, on the keeper's thread. claim is the last answer (NULL when
 * unreachable); it and err are valid during the call. It is never called
 * after sl_client_keeper_stop returns, and must not call it itself. */
typedef void (*sl_client_lost_fn)(void *ud, sl_client_lost why, const sl_client_claim *claim,
                                  const sl_client_error *err);

/* Starts a thread with its own connection that keeps claim `id` alive:
 * it waits on the claim (a sign of life that also hears a revocation at
 * once) and renews it every lease/3 (lease_ms 0: it only watches), retrying
 * while the server is unreachable. Calls lost once when the claim is
 * revoked, ends, or cannot be renewed for a whole lease. */
int sl_client_keeper_start(const sl_client_options *opts, const char *id, int64_t lease_ms,
                           const sl_client_retry *retry, sl_client_lost_fn lost, void *ud,
                           sl_client_keeper **out, sl_client_error *err);
/* Stops and joins the thread (at most one request's time); frees it. */
void sl_client_keeper_stop(sl_client_keeper *k);

#ifdef __cplusplus
}
#endif

#endif
