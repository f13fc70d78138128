/* server.h - sluiced's insides, shared by the files of src/server.
 *
 * One event loop (libevent) runs everything: HTTP requests call the engine,
 * each turn's engine changes are committed to the store in one transaction
 * (commit.c), and only then are the responses of that turn sent and the
 * long-poll waiters and event streams whose state changed woken. */
#ifndef SL_SERVER_H
#define SL_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>
#include <jansson.h>

#include "buf.h"
#include "conf.h"
#include "engine.h"
#include "http.h"
#include "metrics.h"
#include "query.h"
#include "store.h"

#define SL_VERSION "0.1.0"

/* Bounds on what one request may ask for; see also sl_conf. */
#define SL_JSON_DEPTH_MAX 32
#define SL_QUERY_LIMIT_MAX 10000 /* events per page */
#define SL_LIST_MAX 100000       /* entries in one listing */
#define SL_STREAM_BACKLOG_MAX (4u << 20) /* unsent bytes before a stream is cut */
#define SL_STREAM_HEARTBEAT_MS 15000
#define SL_EVENT_PRUNE_EVERY_MS 60000

typedef struct sl_wait sl_wait;
typedef struct sl_stream sl_stream;
typedef struct sl_reply sl_reply;
typedef struct sl_writer sl_writer;
typedef struct sl_relay sl_relay;
typedef struct sl_audit sl_audit;
typedef struct sl_quota_use sl_quota_use;

#include <sys/socket.h>

/* Shared mode (role.c): several servers on one store, one of them leads. */
typedef enum {
    SL_ROLE_SINGLE,      /* a store never shared (SQLite): this server always leads */
    SL_ROLE_CAMPAIGNING, /* no leader known, or this one is taking the lead */
    SL_ROLE_FOLLOWER,    /* another server leads: requests are relayed to it */
    SL_ROLE_LEADER,
} sl_role;

#define SL_RELAY_HOLD_MS 10000 /* a request waits this long for a leader, then 503 */
#define SL_RELAY_RETRY_MS 50   /* a relay that could not reach the leader tries again */
#define SL_RELAY_REFUSAL_LOG_MS 10000 /* a refused leader is logged at most this often */

/* A request's auth: who it is and what it may touch. */
typedef struct sl_auth {
    const sl_conf_token *token; /* NULL when the server has no tokens */
    bool admin;
} sl_auth;

typedef struct sl_server {
    sl_conf *conf;
    struct event_base *base;
    sl_http *http;
    sl_engine *eng;
    sl_store *store;
    char store_label[1024]; /* conf->store with any password cut out: what is shown */
    struct event *commit_ev;  /* after this turn: commit, then answer */
    struct event *timer_ev;   /* the engine's next deadline */
    struct event *prune_ev;   /* trims the event log now and then */
    struct event *retry_ev;   /* retries a failed commit */
    struct event *sigint_ev, *sigterm_ev, *sighup_ev;
    /* SIGHUP (reload.c): the file to read again, and how main applies its
     * command-line flags over it (flags win, as at start). */
    const char *config_path;
    int (*apply_flags)(sl_conf *conf, void *arg);
    void *apply_flags_arg;
    int64_t last_now;
    int64_t armed_at;         /* the deadline timer_ev is armed for */
    bool store_failed;        /* a commit failed: refuse changes until one succeeds */
    char store_error[512];    /* ... and why, for /healthz */
    bool stopping;
    sl_reply *replies_head, *replies_tail; /* answers held until the commit */
    /* The commit pipeline (commit.c): generations number the batches. */
    sl_writer *writer;
    sl_store_batch *batch;    /* captured: being written, or to be written again */
    uint64_t batch_gen;       /* its generation; 0 when there is none */
    uint64_t gen_next;        /* the generation of the engine's pending changes */
    uint64_t gen_done;        /* the newest committed generation */
    char *wake_ids;           /* the batch's changed claims, SL_ID_MAX + 1 bytes each */
    size_t nwake, capwake;
    char *wake_done;          /* a committed batch's, while the next one is captured */
    size_t nwake_done, capwake_done;
    size_t batch_events;      /* events in the batch */
    uint64_t batch_seq;       /* the engine's next_seq when it was captured */
    uint64_t seq_done;        /* ... of the newest committed batch: events below it are in
                               * the store */
    bool prune_due;           /* trim the event log in the next batch */
    int64_t prune_before;
    sl_wait *event_waits;     /* GET /v1/events?wait= parked */
    sl_stream *streams;       /* GET /v1/events/stream open */
    size_t nstreams;
    sl_metrics metrics;
    sl_audit *audit;          /* the audit log (audit.c); NULL: none */
    /* Shared mode (role.c, relay.c). */
    sl_role role;
    sl_elector *elector;
    sl_elector_view view;     /* the elector's, as of the last change */
    uint64_t lead_epoch;      /* the epoch this server leads under */
    uint64_t gave_up_epoch;   /* the epoch it last stepped down from */
    bool fenced;              /* a write found another epoch: step down */
    bool stepping_down;       /* answers failed now tell relays to try the next leader */
    int role_pipe[2];
    struct event *role_ev, *hold_ev;
    char advertise[256];      /* this server's URL for the others */
    struct sockaddr_storage leader_addr; /* where relays go */
    socklen_t leader_addrlen;
    char leader_host[256];    /* the leader's host:port (Host header) */
    char leader_name[256];    /* its host alone: what its certificate must name */
    bool leader_tls;          /* its URL is https:// */
    bool leader_resolved;
    struct sl_tls_client *peer_tls; /* relays over TLS (NULL: none; see reload.c) */
    int64_t refusal_logged_ms; /* a refused leader was last logged then (monotonic) */
    sl_relay *relays;
    /* The per-lock history (history_run.c). */
    struct sl_history *history;
    struct event *hist_ev;      /* samples every step */
    struct event *hist_page_ev; /* the rebuild's next page of the log */
    uint64_t hist_fed;          /* events up to this seq are in the history */
    uint64_t hist_since, hist_upto; /* the rebuild reads the log after since, up to upto */
    int64_t hist_started;       /* when the rebuild started (monotonic ms), for the log */
    /* Claims of an arrival below this were restored from the store: the
     * engine knows the seqs of their events from before only once the
     * rebuild has read the log back (0: it knows every claim's). */
    uint64_t seqs_arrival;
    /* Per-token quotas (quota.c): each limited token's streams, long polls
     * and request bucket, by name; refusals by quota for /metrics. */
    sl_quota_use **quota_uses;
    size_t nquota_uses;
    uint64_t quota_refused[SL_QUOTA_COUNT];
} sl_server;

/* ---- server.c ------------------------------------------------------------ */
int sl_server_init(sl_server *srv, sl_conf *conf);
int sl_server_run(sl_server *srv);
void sl_server_free(sl_server *srv);
/* Engine time: Unix milliseconds, never going backwards. */
int64_t sl_server_now(sl_server *srv);
/* The HTTP layer's options from the configuration (at start and reload). */
sl_http_opts sl_server_http_opts(sl_server *srv);
/* Something changed in the engine: commit at the end of this turn. */
void sl_server_touch(sl_server *srv);
void sl_log(sl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sl_log_set_level(sl_log_level level);

/* Rebuilds the engine from the store, applies the configuration file's
 * semaphores and commits what that changed (at start, and when this server
 * takes the lead). */
int sl_server_rebuild(sl_server *srv);
/* Answers everything still owed from the engine's state: held answers
 * (failed), waits and streams (ended); for a stop, or a leader stepping
 * down (stepping_down set: relays are told to try the next leader). */
void sl_server_end_answers(sl_server *srv);
/* A new, empty engine for the configuration (the last one is freed). */
void sl_server_new_engine(sl_server *srv);

/* ---- history_run.c: the per-lock history (history.h) --------------------- */
void sl_hist_start(sl_server *srv);
void sl_hist_free(sl_server *srv);
/* After the engine was rebuilt from the store: the history is read back
 * from the event log, a page per turn of the loop. */
void sl_hist_rebuild(sl_server *srv);
/* The engine is dropped (a new one comes): the history is forgotten. */
void sl_hist_stop(sl_server *srv);
/* A batch's events as it is captured (those not in yet). */
void sl_hist_feed(sl_server *srv, const sl_event *events, size_t n);
/* The engine's events not in yet, then a sampling at now (not while
 * rebuilding): the history is up to date. */
void sl_hist_catch_up(sl_server *srv, int64_t now);

/* ---- reload.c: SIGHUP ------------------------------------------------------ */
/* Reads the configuration file again and applies what can change live
 * (tokens, semaphores, limits, log level); a file that does not load keeps
 * the running configuration, with the error logged. */
void sl_reload(sl_server *srv);
/* F15: a warning when the file holds a clear token secret and users other
 * than its owner and group may read it (at start and at every reload). */
void sl_reload_warn_exposed(const sl_server *srv);
/* reload.c: TLS (re)read from the configuration's files into the HTTP layer; -1
 * and logged when a file is bad (on a reload the certificate in use stays). */
int sl_server_tls(sl_server *srv, bool reload);
/* server.c: the file's semaphores into the engine (start, takeover, reload). */
void sl_server_apply_file_semaphores(sl_server *srv, int64_t now);

/* ---- role.c: shared mode's roles ----------------------------------------- */
/* Starts campaigning when the store is shared; else the server leads. */
int sl_role_start(sl_server *srv);
void sl_role_stop(sl_server *srv);
/* Whether a /v1/ request is served here; when not, it was taken (relayed
 * to the leader, held, or refused). */
bool sl_role_route(sl_server *srv, sl_http_req *req, const char *path);
/* This server may answer from its engine: it leads and its last heartbeat
 * is younger than 0.6 of the leader timeout (always, for a single server). */
bool sl_role_serves(const sl_server *srv);
/* Relays have a leader to go to. */
bool sl_role_leader_known(const sl_server *srv);
/* A relay waits: retry soon. */
void sl_role_wait(sl_server *srv);
/* A commit found another epoch. */
void sl_role_fenced(sl_server *srv);
const char *sl_role_name(sl_role r);
/* The role's series for /metrics. */
void sl_role_metrics(const sl_server *srv, sl_buf *out);
/* Sluice-Leader and Sluice-Epoch on an answer (shared mode). */
void sl_role_headers(sl_server *srv, sl_http_req *req);

/* ---- relay.c: requests relayed to the leader ----------------------------- */
void sl_relay_start(sl_server *srv, sl_http_req *req, const char *path);
void sl_relay_kick(sl_server *srv);
void sl_relay_free_all(sl_server *srv);

/* ---- commit.c ------------------------------------------------------------ */
/* The end of a turn: hands the engine's batch to the writer unless one is
 * being written (then it goes when that one is done), see file comment. */
void sl_commit_run(sl_server *srv);
/* The writer's result for the batch: answer, wake, hand over the next. */
void sl_commit_done(sl_server *srv, int rc, double seconds);
/* The retry timer after a failed commit. */
void sl_commit_retry(sl_server *srv);
/* At the end: commits everything pending, waiting for the writer. */
void sl_commit_drain(sl_server *srv);
void sl_commit_rearm_timer(sl_server *srv);

/* ---- writer.c: commits on a thread of their own -------------------------- */
int sl_writer_start(sl_server *srv);
void sl_writer_stop(sl_server *srv);
/* Hands b to the writer; sl_commit_done follows on a later turn (or at
 * once, when a small batch is committed on the loop: writer.c). */
void sl_writer_submit(sl_server *srv, sl_store_batch *b);
/* A batch was submitted and its result not yet handled. */
bool sl_writer_busy(const sl_server *srv);
/* Blocks until the submitted batch is written, then handles the result. */
void sl_writer_wait(sl_server *srv);
/* Whether syncs run on a thread of their own (--durability full with a
 * log file): the next batch is then submitted before the answers of the
 * one just committed go out (commit.c). */
bool sl_writer_syncs_apart(const sl_server *srv);

/* ---- reply.c: answers, JSON errors, answers held until the commit ------- */
typedef struct sl_ctx sl_ctx;
/* Sends a JSON answer now, or holds it until the commit when the engine has
 * changes not yet in the store (no answer may show uncommitted state).
 * Takes the reference to body. */
void sl_reply_json(sl_ctx *c, int status, json_t *body);
/* The same with the claim's JSON as the body (sl_json_claim_write). */
void sl_reply_claim(sl_ctx *c, int status, const sl_claim *claim);
/* {"error": {"code": ..., "message": ...}}. */
void sl_reply_error(sl_ctx *c, int status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void sl_reply_engine_error(sl_ctx *c, const sl_error *err);
void sl_reply_empty(sl_ctx *c, int status);
/* A non-JSON answer (metrics, the dashboard); the body is copied. */
void sl_reply_text(sl_ctx *c, int status, const char *ctype, const void *body, size_t len);
/* A JSON answer given later (waits): no context any more. The body was
 * written into body (sl_reply_scratch, or the caller's buffer, left
 * unchanged). */
void sl_reply_send_buffer(sl_server *srv, sl_http_req *req, sl_route_id route, int status,
                          const sl_buf *body);
/* An empty buffer to write an answer into; valid until the next call (the
 * loop is single-threaded, and answers are copied when they are sent or
 * held). */
sl_buf *sl_reply_scratch(void);
void sl_reply_free_scratch(void);
/* Runs fn(arg, committed) once this turn's changes are committed (at once
 * when nothing is pending): for answers that start later, such as waits
 * whose headers must not go out before the claim they name is durable. */
typedef void (*sl_after_commit_fn)(void *arg, bool committed);
void sl_reply_after_commit(sl_server *srv, sl_after_commit_fn fn, void *arg);
/* After a commit: sends the held answers of generations up to upto, in
 * order. After a failure (committed false): fails them all with 503. */
void sl_reply_flush(sl_server *srv, uint64_t upto, bool committed);
/* The body of an answer already started (a wait's), and its end: now, or
 * once what it shows is committed. The body is copied. */
void sl_reply_chunk_end(sl_server *srv, sl_http_req *req, const sl_buf *body);
/* Serialises JSON into a buffer (compact, exact integers, a newline). */
void sl_json_to_buffer(json_t *body, sl_buf *out);

/* ---- routes.c ------------------------------------------------------------ */
/* The HTTP layer's handler (sl_http_opts.handler). */
void sl_routes_handle(void *ud, sl_http_req *req);

/* Everything a handler gets. */
struct sl_ctx {
    sl_server *srv;
    sl_http_req *req;
    sl_route_id route;
    sl_http_method method; /* HEAD reads as GET; the layer sends no body */
    bool head;             /* the request was a HEAD */
    const char *path;      /* decoded, without the query */
    const sl_query *query; /* decoded parameters */
    sl_auth auth;
    int64_t now;
};

/* Whether holder belongs to run: it is RUN, or RUN/... (the RUN/STEP
 * convention of holder names, docs/ui.md). */
bool sl_holder_of_run(const char *run, const char *holder);
/* run= of /v1/claims and /v1/events: NULL with nothing sent when absent
 * or good (*run set), false after a 400. */
bool sl_query_run(sl_ctx *c, const char **run);

/* Adds Allow: methods (and HEAD after GET, which every GET route takes). */
void sl_allow(sl_ctx *c, const char *methods);

const char *sl_query_get(const sl_ctx *c, const char *key);
/* Whether every query parameter is one of known (NULL-terminated; NULL:
 * none) and none is given twice; else a 400 naming it is sent. */
bool sl_query_only(sl_ctx *c, const char *const *known);
/* A duration query parameter; absent -> *ms unchanged, 0; bad -> 400 sent, -1. */
int sl_query_duration(sl_ctx *c, const char *key, int64_t *ms);
int sl_query_uint(sl_ctx *c, const char *key, uint64_t max, uint64_t *out);
/* The same, from min to max. */
int sl_query_uint_in(sl_ctx *c, const char *key, uint64_t min, uint64_t max, uint64_t *out);
/* The request body as JSON (object expected). NULL and an answer sent on error. */
json_t *sl_body_json(sl_ctx *c);

/* ---- routes_*.c ---------------------------------------------------------- */
void sl_route_semaphores(sl_ctx *c, const char *rest);
void sl_route_mutexes(sl_ctx *c, const char *rest);
void sl_route_claims(sl_ctx *c, const char *rest);
void sl_route_claims_list(sl_ctx *c); /* routes_lists.c, as sl_route_queue */
void sl_route_queue(sl_ctx *c);
void sl_route_events(sl_ctx *c, const char *rest);
void sl_route_health(sl_ctx *c);
void sl_route_status(sl_ctx *c); /* routes_ops.c: the leader's /healthz under /v1/ */
void sl_route_whoami(sl_ctx *c); /* routes_ops.c: the request's token and what it may do */
void sl_route_metrics(sl_ctx *c);
void sl_route_ui(sl_ctx *c);
/* routes_history.c: GET /v1/history?lock=KEY, a lock's samples and waits. */
void sl_route_history(sl_ctx *c);
/* Mutations are refused while the store cannot commit: 503 sent, true. */
bool sl_refuse_if_store_failed(sl_ctx *c);

/* ---- forward.c: who a relayed request's client is -------------------------- */

/* The names of the client's verified certificate (sl_http_req_peer_names). */
typedef struct sl_client_names {
    const char *names[SL_HTTP_PEER_NAMES_MAX];
    size_t n;
    char buf[4096];
} sl_client_names;

/* The follower's side: the headers that tell the leader the client's
 * address and certificate, onto the relayed request (none when the relay
 * proves nothing: without cluster.ca). */
void sl_forward_headers(const sl_server *srv, const sl_http_req *req, sl_buf *out);
/* The client's certificate names: those a proven peer forwarded, else the
 * connection's own. Returns f->n. */
size_t sl_forward_names(const sl_http_req *req, sl_client_names *f);
/* The client's IP address: the one a proven peer forwarded, else the
 * connection's. */
void sl_forward_address(const sl_http_req *req, char *out, size_t cap);
/* Answers 403 when the forwarding headers come from anyone but a proven
 * peer, 400 when a peer's are malformed; returns whether it answered. */
bool sl_forward_refuses(sl_ctx *c);

/* ---- auth.c -------------------------------------------------------------- */
/* Checks the Authorization header. On failure answers 401 and returns -1. */
/* browser.c: refuses what a web page could make a browser send (DNS
 * rebinding, cross-site requests): answers 403 and returns -1. */
int sl_browser_check(sl_ctx *c);
int sl_auth_check(sl_ctx *c);
/* Who the request is, for routes open to everyone (/healthz): sets c->auth
 * from a valid token and answers nothing. Returns true when the caller is
 * known (a valid token, or a server without tokens, admitted as admin). */
bool sl_auth_identify(sl_ctx *c);
/* The request's principal for events and the audit log: its token's name,
 * SL_ACTOR_ANONYMOUS on a server without tokens (docs/api.md's `actor`). */
#define SL_ACTOR_ANONYMOUS "anonymous"
const char *sl_auth_actor(const sl_ctx *c);
/* sl_http_opts.admit: whether a request on one of the connection slots
 * kept for clients with a token carries a valid one (ud: the server). */
bool sl_auth_admit(void *ud, sl_http_req *req);
/* Whether the request (a limited token: its prefixes and permissions, F7)
 * has permission p on a lock name; sl_auth_allows asks for read. */
bool sl_auth_may(const sl_ctx *c, sl_perm p, const char *name);
/* Whether the request has permission p on any name at all. */
bool sl_auth_has(const sl_ctx *c, sl_perm p);
bool sl_auth_token_may(const sl_conf_token *t, sl_perm p, const char *name);
bool sl_auth_allows(const sl_ctx *c, const char *name);
/* sl_auth_may, or a 403 that says what: outside the token's prefixes, or
 * in them but without permission p ("doing" names the act: "configuring a
 * semaphore"), with the prefixes it has p on. */
bool sl_auth_require(sl_ctx *c, sl_perm p, const char *name, const char *doing);
/* Read: every lock of the claim (explicit, tag and group locks); a claim
 * that takes no lock goes by its holder's name. */
bool sl_auth_allows_claim(sl_ctx *c, const sl_claim *claim);
/* Whether the request may end (renew, release, cancel) a claim it may
 * read: its own (holder and every lock under its claim permission), or
 * any with the operate permission on every lock. The _require form answers
 * 403 naming the permission needed ("doing": "releasing"). */
bool sl_auth_may_end(const sl_ctx *c, const sl_claim *claim);
/* Whether the claim is the request's own, as sl_auth_may_end says. */
bool sl_auth_owns(const sl_ctx *c, const sl_claim *claim);
bool sl_auth_require_end(sl_ctx *c, const sl_claim *claim, const char *doing);
/* GET /v1/whoami's body: the token's name, admin, and the prefixes each
 * permission covers ("" for every name). */
json_t *sl_auth_whoami(const sl_ctx *c);
/* A claim's priority against the token's max_priority; 403 if above. */
bool sl_auth_allows_priority(sl_ctx *c, int32_t priority);
/* Has the engine check a new claim's locks, tag and group locks included,
 * before it is made (sl_claim_req.allow); a no-op for admins. a must live
 * as long as req is used. */
typedef struct sl_auth_claim {
    const sl_ctx *c;
    const char *holder;
} sl_auth_claim;
void sl_auth_bind_claim(const sl_ctx *c, sl_claim_req *req, sl_auth_claim *a);
/* What a request may read of the event log: a limited token sees the
 * events whose every lock is under its prefixes (an event of a claim that
 * takes no lock goes by its holder), the rule of sl_auth_allows_claim.
 * A copy of the prefixes, because a parked reader outlives the
 * configuration a reload frees. NULL: everything (admins, no tokens). */
typedef struct sl_event_scope sl_event_scope;
sl_event_scope *sl_auth_event_scope(const sl_ctx *c);
bool sl_event_scope_allows(const sl_event_scope *s, const sl_store_event *ev);
void sl_event_scope_free(sl_event_scope *s);
/* The same for a token (NULL: no tokens, everything). */
sl_event_scope *sl_auth_token_scope(const sl_conf_token *t);
bool sl_auth_token_allows_claim(const sl_conf_token *t, const sl_claim *claim);
/* Whether a limited token may name this holder (under its claim
 * permission); if not, answers 403 with the prefixes it may use. */
bool sl_auth_allows_holder(sl_ctx *c, const char *holder);
/* After a reload (old not freed yet): *t becomes the token of the new
 * configuration a request admitted with *t holds now (NULL: no tokens);
 * -1 when it has none (the token was removed or its secret changed). */
int sl_auth_token_again(const sl_conf *old, const sl_conf *now, const sl_conf_token **t);
/* Whose a lock name is, for sharing bounded tables fairly (the history's
 * wait statistics): the longest prefix of a limited token it falls under
 * (its prefixes, claim or configure: those that make locks), or NULL
 * (admin-only names, or a server without limited tokens). */
const char *sl_auth_tenant(const sl_conf *conf, const char *name);
/* A reload reaches what is parked and open: the streams and waits of a
 * token gone end, the others see what the token's new prefixes allow. */
void sl_streams_reauth(sl_server *srv, const sl_conf *old);
void sl_waits_reauth(sl_server *srv, const sl_conf *old);

/* ---- audit.c: the audit log (F11) --------------------------------------- */
/* Opens conf->audit_path (at start), or reopens it (SIGHUP: a rotated log,
 * or a path the reload changed; none closes it). -1 when the file cannot
 * be opened (logged); the log is failing then. */
int sl_audit_open(sl_server *srv);
void sl_audit_close(sl_server *srv);
bool sl_audit_on(const sl_server *srv);
/* Before a change: with on_failure: refuse, while the log cannot be
 * written, answers 503 audit_unavailable and returns true. */
bool sl_audit_refuses(sl_ctx *c);
/* An answer goes out: its line, when the log keeps that request (claim:
 * the claim's id when the body does not start with it, else NULL). */
void sl_audit_answer(sl_server *srv, sl_http_req *req, int status, const void *body,
                     size_t len, const char *claim);

/* ---- quota.c: per-token quotas, the admins' share of the global limits --- */
/* Each answers (429 quota_exceeded with Retry-After, or 503 for the share
 * of a global limit) and returns false when the request may not go on;
 * admins and servers without tokens always pass. */
bool sl_quota_request(sl_ctx *c); /* requests per second, every authenticated request */
/* A new claim: live and waiting claims, max_claims' share; waits: it asks
 * to long-poll as well. */
bool sl_quota_claim(sl_ctx *c, bool waits);
/* A PUT of a semaphore configuration (passes when name exists already):
 * max_semaphores, its share, the token's configurations. */
bool sl_quota_semaphore(sl_ctx *c, const char *name);
bool sl_quota_stream(sl_ctx *c);    /* a new event stream: the token's, max_streams' share */
bool sl_quota_long_poll(sl_ctx *c); /* a request about to park */
/* The use record of a limited token (NULL: admin, no tokens): an open
 * stream or wait keeps it and counts itself in and out with it. */
sl_quota_use *sl_quota_use_of(sl_server *srv, const sl_conf_token *t);
void sl_quota_count(sl_quota_use *u, sl_quota q, int delta); /* STREAMS or LONG_POLLS */
void sl_quota_free_all(sl_server *srv);
void sl_quota_metrics(const sl_server *srv, sl_buf *out);

/* ---- idempotency.c: Idempotency-Key ------------------------------------- */
typedef struct sl_idem_req {
    char key[SL_IDEM_MAX + 1]; /* "TOKEN-NAME\nKEY"; "" when the request has none */
    uint64_t fp;               /* the request's fingerprint */
} sl_idem_req;
/* The request's key and fingerprint: 1, 0 when it has none, -1 when the
 * header is malformed (a 400 was sent). */
int sl_idem_from_request(sl_ctx *c, json_t *body, sl_idem_req *out);
/* The claim an earlier request with this key made, marking the answer as a
 * replay; NULL when there is none, or with *conflict (a 409 was sent) when
 * the key was used for a different request. */
sl_claim *sl_idem_replay(sl_ctx *c, const sl_idem_req *idem, bool *conflict);

/* ---- json_out.c: engine state as docs/api.md's JSON --------------------------- */
json_t *sl_json_claim(sl_server *srv, const sl_claim *claim);
/* json_claim.c: the same claim as compact JSON and a newline, written into
 * buf without building jansson values (the answers to claim requests). */
void sl_json_claim_write(sl_server *srv, const sl_claim *claim, sl_buf *buf);
/* A lock with holders_count and pending_count; with list_max > 0 also its
 * first list_max holders and pending claims (a lock's page), else not (a
 * listing's entry). */
json_t *sl_json_lock(sl_server *srv, const sl_lock_view *v, const sl_lock *lock,
                     size_t list_max);
json_t *sl_json_config_entry(sl_server *srv, const sl_config *cfg);
json_t *sl_json_why(sl_server *srv, const sl_claim *claim);
json_t *sl_json_event(const sl_store_event *ev); /* docs/api.md's event, from the log */
json_t *sl_json_time(int64_t ms);     /* null for -1 */
json_t *sl_json_duration(int64_t ms); /* "30s", "0" */
/* Words for why a claim waits or how it ended. */
void sl_claim_reason_words(sl_server *srv, const sl_claim *claim, char *buf, size_t cap);
void sl_rule_words(const sl_why *w, char *buf, size_t cap);

/* ---- waits.c: long polls ------------------------------------------------- */
typedef enum {
    SL_WAIT_CREATE, /* POST /v1/claims?wait: the creator never learnt the id */
    SL_WAIT_CLAIM,  /* GET /v1/claims/{id}?wait */
    SL_WAIT_EVENTS, /* GET /v1/events?wait */
} sl_wait_kind;

/* Parks a request until the claim leaves `seen` (for SL_WAIT_CREATE: is
 * held or ends) or the wait runs out; answers with status then. The status
 * and headers go out once the wait starts, the body when it ends. */
void sl_wait_claim(sl_ctx *c, sl_wait_kind kind, sl_claim *claim, sl_state seen,
                   int64_t wait_ms, int status);
void sl_wait_events(sl_ctx *c, uint64_t since, const char *claim_id, size_t limit,
                    int64_t wait_ms);
/* After a commit: wake the waits on these claims, and the event waits. */
void sl_waits_claim_changed(sl_server *srv, sl_claim *claim);
void sl_waits_events_changed(sl_server *srv);
/* A claim is about to be purged: its waits answer now. */
void sl_waits_claim_purged(sl_server *srv, const sl_claim *claim);
void sl_waits_free_all(sl_server *srv);
/* {"events": [...], "next": M} from the store, the events scope lets
 * through (NULL: all); *count events in it. NULL when the store failed. */
json_t *sl_events_page(sl_server *srv, uint64_t since, const char *claim_id, size_t limit,
                       const sl_event_scope *scope, size_t *count);

/* ---- stream.c: server-sent events ---------------------------------------- */
void sl_stream_open(sl_ctx *c, uint64_t since);
void sl_streams_push(sl_server *srv);
void sl_streams_free_all(sl_server *srv);

#endif
