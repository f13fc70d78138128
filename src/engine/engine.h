/* engine.h - the sluice engine: who holds what, and who waits for what.
 *
 * The one header other layers may include. The engine is pure: it reads no
 * clock (every call takes `now`, milliseconds on any monotonic-enough scale
 * the embedder picks, usually Unix time), does no I/O, knows no JSON, and
 * allocates through the one allocator it is given. State goes in through
 * calls; decisions come out as claim states and as a log of events and
 * changes that the store writes and the server turns into responses.
 *
 * Semantics are docs/engine.md's; the comments here say what each call does, what
 * it returns and who owns what. Every mutating call first fires the timers
 * due at or before `now` (leases, timeouts, grace), in deadline order and at
 * their deadlines, so the outcome does not depend on how often the embedder
 * calls sl_engine_advance.
 *
 * Pointers returned by the engine (claims, locks, strings in views) stay
 * valid until the next mutating call, except that claims stay valid until
 * they are purged and purged claims stay valid until sl_engine_changes_clear.
 * Return convention: 0 or a negative SL_E* code; a call that fails changes
 * nothing. */
#ifndef SL_ENGINE_H
#define SL_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The allocator: fn(ud, NULL, n) allocates n bytes, fn(ud, p, n) resizes p,
 * fn(ud, p, 0) frees p and returns NULL. It must never return NULL for n > 0:
 * abort instead. */
typedef void *(*sl_alloc_fn)(void *ud, void *ptr, size_t size);

enum {
    SL_OK = 0,
    SL_EINVAL = -1,    /* the request is malformed or could never be granted */
    SL_ENOTFOUND = -2, /* no such claim, lock or configuration */
    SL_ECONFLICT = -3, /* the state forbids it (in use, ended, revoking, id taken) */
    SL_EUNKNOWN = -4,  /* a semaphore with no configuration and no pattern */
    SL_ELIMIT = -5,    /* an engine bound (claims, patterns) is reached */
    SL_EFORBIDDEN = -6, /* the request's `allow` refused one of the claim's locks */
    SL_EFULL = -7,      /* a lock's queue holds max_pending waiters (on_full: reject) */
    SL_EBACKDATE = -8,  /* `created` lies further back than the claim may set it */
    SL_EINLINE = -9,    /* an inline limit differs from the semaphore's (err->value), asked */
};

/* Bounds the engine enforces itself (docs/api.md's). */
#define SL_NAME_MAX 253           /* lock names, group, tag keys and values */
#define SL_ID_MAX 64              /* claim ids */
#define SL_HOLDER_MAX 253         /* holder strings */
#define SL_LOCKS_MAX 64           /* explicit locks in one claim */
#define SL_TAGS_MAX 32            /* tags in one claim */
#define SL_LIMIT_MAX 1000000000u  /* a semaphore's limit */
#define SL_WHY_AHEAD_MAX 8        /* claim ids listed as "ahead" in why */
#define SL_GROUPS_MAX 8           /* concurrency groups in one claim */
#define SL_CLAIM_LOCKS_MAX (SL_LOCKS_MAX + 2 * SL_TAGS_MAX + SL_GROUPS_MAX)
/* Who made a claim or asked for an event, as the embedder names it (a
 * token's name, a certificate's identity). */
#define SL_ACTOR_MAX 1024
#define SL_IDEM_MAX 512           /* an idempotency key, as the embedder makes it */
#define SL_WEIGHTS_MAX 256        /* weighted rebalance keys in one configuration */
#define SL_WEIGHT_MAX 1000000u    /* one key's weight */
#define SL_BACKDATE_SKEW_DEFAULT_MS 5000 /* how far back any claim may set `created` */

typedef enum { SL_KIND_MUTEX, SL_KIND_SEMAPHORE } sl_kind;

typedef enum { SL_STRICT, SL_SKIP, SL_REBALANCED } sl_strategy;

typedef enum {
    SL_PENDING,
    SL_HELD,
    SL_REVOKING,
    SL_RELEASED,
    SL_WITHDRAWN,
    SL_EXPIRED,
    SL_TIMED_OUT,
    SL_SUPERSEDED,
    SL_CANCELED,
} sl_state;

typedef enum { SL_CANCEL_NONE, SL_CANCEL_PENDING, SL_CANCEL_IN_PROGRESS } sl_cancel;

/* Why a pending claim waits on one lock (docs/api.md's `rule`). */
typedef enum {
    SL_RULE_NONE,       /* not pending */
    SL_RULE_AT_LIMIT,   /* fewer free slots than the claim asks for */
    SL_RULE_BEHIND,     /* enough free slots, but claims ahead take them */
    SL_RULE_QUOTA,      /* rebalanced: its key is at its share while another waits below */
    SL_RULE_OTHER_LOCK, /* admissible here, blocked on another lock */
    SL_RULE_RATE,       /* admissible here but for the rate: no whole token yet */
} sl_rule;

/* What preemption does for a pending claim on one lock (sl_why.preempt). */
typedef enum {
    SL_PREEMPT_NONE,     /* the lock does not preempt, or the claim needs no preemption */
    SL_PREEMPT_WAITING,  /* holders are revoking; the claim waits for them to leave */
    SL_PREEMPT_WILL,     /* it will revoke holders once its other locks allow it */
    SL_PREEMPT_NOT_HEAD, /* would preempt, but a claim ahead of it comes first */
    SL_PREEMPT_TOO_FEW,  /* would preempt, but holders of lower priority hold too few slots */
} sl_preempt;

/* What a claim arriving at a full queue does (sl_sem_opts.on_full). */
typedef enum { SL_ON_FULL_REJECT, SL_ON_FULL_DROP_OLDEST } sl_on_full;

/* How a claim ended, or why it is revoking. */
typedef enum {
    SL_REASON_NONE,
    SL_REASON_RELEASED,      /* its client released it (held) */
    SL_REASON_WITHDRAWN,     /* its client withdrew it (pending) */
    SL_REASON_CLIENT_GONE,   /* the client that created it went away before learning its id */
    SL_REASON_LEASE,         /* no sign of life for a whole lease */
    SL_REASON_TIMEOUT,       /* pending for longer than its timeout */
    SL_REASON_SUPERSEDED,    /* a newer claim of its group with cancel: pending */
    SL_REASON_REVOKED,       /* a newer claim of its group with cancel: in-progress */
    SL_REASON_GRACE,         /* revoked, and its grace ran out */
    SL_REASON_REVOKED_FREED, /* revoked, and its holder released it */
    SL_REASON_OPERATOR,      /* canceled by an operator */
    SL_REASON_PREEMPTED,     /* revoked for a waiter of higher priority (preempt) */
    SL_REASON_QUEUE_FULL,    /* the oldest waiter of a full queue (on_full: drop_oldest) */
} sl_reason;

/* How a lock came into a claim. */
typedef enum { SL_VIA_LOCK, SL_VIA_TAG, SL_VIA_GROUP } sl_via;

typedef enum {
    SL_EV_CLAIM_QUEUED,
    SL_EV_CLAIM_WAITING,
    SL_EV_CLAIM_ACQUIRED,
    SL_EV_CLAIM_RENEWED,
    SL_EV_CLAIM_RELEASED,
    SL_EV_CLAIM_WITHDRAWN,
    SL_EV_CLAIM_EXPIRED,
    SL_EV_CLAIM_TIMED_OUT,
    SL_EV_CLAIM_SUPERSEDED,
    SL_EV_CLAIM_REVOKING,
    SL_EV_CLAIM_CANCELED,
    SL_EV_SEMAPHORE_UPDATED,
    SL_EV_SEMAPHORE_DELETED,
} sl_event_type;

typedef struct sl_engine sl_engine;
typedef struct sl_claim sl_claim;
typedef struct sl_lock sl_lock;
typedef struct sl_config sl_config;

/* Static names: "pending", "strict", "at_limit", "claim.queued", ... */
const char *sl_state_name(sl_state s);
const char *sl_strategy_name(sl_strategy s);
const char *sl_rule_name(sl_rule r);
const char *sl_reason_text(sl_reason r); /* words, e.g. "released by its holder" */
const char *sl_event_type_name(sl_event_type t);
const char *sl_cancel_name(sl_cancel c);
const char *sl_on_full_name(sl_on_full f);
const char *sl_preempt_name(sl_preempt p); /* "none", "waiting", "will", "not_head", "too_few" */
const char *sl_preempt_text(sl_preempt p); /* words, e.g. "will preempt ..." */
bool sl_state_ended(sl_state s);
/* Parses the names above back; 0 or SL_EINVAL. */
int sl_state_parse(const char *s, sl_state *out);
int sl_strategy_parse(const char *s, sl_strategy *out);
int sl_cancel_parse(const char *s, sl_cancel *out);
int sl_on_full_parse(const char *s, sl_on_full *out);

/* Lock names: 1 to 253 of A-Z a-z 0-9 . _ - / : =, no leading or trailing
 * '/', no "//", no "." or ".." segment; with allow_pattern a final '*' is
 * allowed too. */
bool sl_name_valid(const char *name, size_t len, bool allow_pattern);

/* ---- the engine ---------------------------------------------------------- */

typedef struct sl_engine_opts {
    sl_alloc_fn alloc;          /* NULL: malloc/realloc/free, aborting on exhaustion */
    void *alloc_ud;
    uint64_t hash_key[2];       /* secret for the hash tables (clients choose names) */
    int64_t default_lease_ms;   /* lease of claims that set none; 0 = none */
    int64_t default_grace_ms;   /* grace of a revoking claim that set none (30 s) */
    int64_t ended_retention_ms; /* how long ended claims stay readable (1 h) */
    size_t idle_locks_max;      /* idle locks remembered with their tokens (100k) */
    size_t claims_max;          /* live and retained claims at most (SL_ELIMIT past it) */
    size_t configs_max;         /* semaphore configurations and patterns at most */
    int64_t backdate_skew_ms;   /* how far back any claim may set `created` (5 s) */
} sl_engine_opts;

void sl_engine_opts_default(sl_engine_opts *opts);
/* Creates an empty engine. *out is freed with sl_engine_free. */
int sl_engine_new(const sl_engine_opts *opts, sl_engine **out);
void sl_engine_free(sl_engine *eng);

/* Fires every timer due at or before now. */
void sl_engine_advance(sl_engine *eng, int64_t now);
/* The earliest armed deadline, INT64_MAX when none: call advance then. */
int64_t sl_engine_next_deadline(const sl_engine *eng);

typedef struct sl_engine_stats {
    size_t claims, pending, held, ended, locks, idle_locks, configs, timers;
    uint64_t next_seq, grants;
    uint64_t preemptions; /* holders revoked for a waiter of higher priority */
    size_t mem_blocks; /* live allocations */
} sl_engine_stats;
void sl_engine_stats_get(const sl_engine *eng, sl_engine_stats *out);

/* One actor's claims (sl_claim_req.actor): live (pending, held or
 * revoking) and, of those, pending; restored claims count too. All zero
 * for an actor with none. */
typedef struct sl_actor_counts {
    size_t live, pending;
} sl_actor_counts;
void sl_engine_actor_get(const sl_engine *eng, const char *actor, sl_actor_counts *out);

/* ---- errors with details ------------------------------------------------- */

/* What went wrong with a request, for the caller to word: `what` is a static
 * sentence ("the same lock appears twice in one claim"); `field` names the
 * offending field ("locks[2]"), `name` the lock or semaphore involved (a
 * copy, empty when none), `value` a number if any (a limit, a count);
 * `asked` the slots a claim asked for where more than a limit (then `what`
 * is the mend), the claims waiting for SL_EFULL (else 0). */
typedef struct sl_error {
    int code;
    const char *what;
    char field[32];
    char name[SL_NAME_MAX + 1];
    int64_t value;
    int64_t asked;
} sl_error;

/* ---- semaphores ---------------------------------------------------------- */

/* One rebalance key's weight (sl_sem_opts.weights). */
typedef struct sl_weight {
    const char *key;
    uint32_t weight; /* 1 to SL_WEIGHT_MAX */
} sl_weight;

/* The scheduling rules a configuration may add, all off when zeroed. */
typedef struct sl_sem_rules {
    /* A waiter at the head of the line that cannot fit revokes holders of
     * strictly lower priority, which keep preempt_grace_ms to leave. */
    bool preempt;
    int64_t preempt_grace_ms;
    /* At most this many waiters (0: no bound); a claim arriving when as
     * many wait is refused, or the oldest waiter is superseded. */
    uint32_t max_pending;
    sl_on_full on_full;
    /* rebalanced: each key's share is proportional to its weight (keys
     * not listed weigh default_weight; 0 means 1). */
    uint32_t default_weight;
    const sl_weight *weights; /* nweights, keys distinct */
    size_t nweights;
    /* At most rate_count grants per rate_period_ms (0: no rate), refilled
     * smoothly, rate_burst at once (0: rate_count). */
    uint32_t rate_count;
    int64_t rate_period_ms;
    uint32_t rate_burst;
    /* A claim on it may set `created` this far in the past (beyond the
     * engine's backdate_skew_ms) when every lock of the claim allows it. */
    int64_t backdate_ms;
} sl_sem_rules;

typedef struct sl_config_view {
    const char *name; /* a pattern ends in '*' */
    bool pattern;
    uint32_t limit;
    sl_strategy strategy;
    int64_t lease_ms;    /* 0 = none set: claims use the server default */
    int64_t overtake_ms; /* skip: see sl_sem_opts */
    sl_sem_rules rules;  /* weights point into the engine */
} sl_config_view;

/* A skip semaphore's first waiter (in the total order) that has waited at
 * least this long is no longer overtaken: the slots it asks for are kept
 * for it, and later waiters get in only beside it. 0: no bound (a big claim
 * may wait for ever behind a stream of small ones). */
#define SL_OVERTAKE_DEFAULT_MS 60000

/* What a semaphore configuration sets. */
typedef struct sl_sem_opts {
    uint32_t limit;
    sl_strategy strategy;
    int64_t lease_ms;    /* default lease of claims on it; 0 = none */
    int64_t overtake_ms; /* skip only; 0 = no bound */
    sl_sem_rules rules;
} sl_sem_opts;

/* strict, no lease, SL_OVERTAKE_DEFAULT_MS, the given limit. */
void sl_sem_opts_default(sl_sem_opts *o, uint32_t limit);
/* Creates or changes the configuration of semaphore `name` (or of every
 * semaphore matching a pattern ending in '*'). Raising a limit grants at once;
 * lowering revokes nobody; 0 pauses. Emits semaphore.updated, with what
 * changed; setting the values it already has changes nothing and emits
 * nothing. A change keeps each rate bucket's level (in whole tokens when the
 * period changes), capped at the new burst. */
int sl_sem_configure(sl_engine *eng, const char *name, const sl_sem_opts *o, int64_t now,
                     sl_error *err);
/* The same with the default overtake limit. */
int sl_sem_set(sl_engine *eng, const char *name, uint32_t limit, sl_strategy strategy,
               int64_t lease_ms, int64_t now, sl_error *err);
/* Removes a configuration: SL_ENOTFOUND if none, SL_ECONFLICT while a
 * semaphore it configures has holders or waiters. Emits semaphore.deleted. */
int sl_sem_delete(sl_engine *eng, const char *name, int64_t now, sl_error *err);
/* The configuration named exactly `name`, NULL if none. */
const sl_config *sl_config_find(const sl_engine *eng, const char *name);
/* Every configuration, in no particular order: first with prev NULL. */
const sl_config *sl_config_next(const sl_engine *eng, const sl_config *prev);
void sl_config_get(const sl_config *cfg, sl_config_view *out);

/* ---- locks --------------------------------------------------------------- */

#define SL_LOCK_KEY_MAX (4 + SL_NAME_MAX) /* "mtx/" or "sem/" + name */

typedef struct sl_lock_view {
    sl_kind kind;
    const char *name;                /* points into key */
    char key[SL_LOCK_KEY_MAX + 1];   /* "mtx/NAME" or "sem/NAME" */
    uint32_t limit;
    sl_strategy strategy;
    int64_t lease_ms;
    int64_t overtake_ms;
    const char *from_pattern; /* the pattern it was made from, or NULL */
    uint32_t inline_limit;    /* a semaphore made by its claims' inline limit, else 0 */
    bool configured;          /* a semaphore with an exact or pattern configuration */
    sl_sem_rules rules;       /* its configuration's rules (weights point into it) */
    uint64_t used;            /* slots held (may exceed limit after a lowering) */
    uint64_t token;           /* the last fencing token granted on it */
    size_t nholders, npending;
} sl_lock_view;

/* Looks a lock up by kind and name. Every mutex name answers (an unused
 * one reads as free); a semaphore answers when configured, directly or by a
 * pattern, else SL_ENOTFOUND. *lock is the live lock or NULL when the name
 * has no state yet. */
int sl_lock_lookup(const sl_engine *eng, sl_kind kind, const char *name, sl_lock_view *out,
                   const sl_lock **lock);
/* Every live lock (with state or a configuration), first with prev NULL. */
const sl_lock *sl_lock_next(const sl_engine *eng, const sl_lock *prev);
void sl_lock_get(const sl_lock *lock, sl_lock_view *out);

typedef struct sl_holder_view {
    const sl_claim *claim;
    uint32_t slots;
    uint64_t token;
    int64_t since_ms;
} sl_holder_view;

/* Holders from `offset`, oldest grant first; returns how many were written. */
size_t sl_lock_holders(const sl_lock *lock, size_t offset, sl_holder_view *out, size_t max);

typedef struct sl_waiter_view {
    const sl_claim *claim;
    uint32_t slots;
    size_t position; /* from 1 */
} sl_waiter_view;

/* Waiters from `offset`, in the lock's queue order (for a rebalanced lock,
 * the order in which slots would be handed out); returns how many. */
size_t sl_lock_waiters(sl_engine *eng, const sl_lock *lock, size_t offset, sl_waiter_view *out,
                       size_t max);

/* ---- claims -------------------------------------------------------------- */

typedef struct sl_lock_req {
    sl_kind kind;
    const char *name;
    uint32_t slots; /* 0 means 1 */
    /* Semaphores: the limit to make it with when no configuration or
     * pattern covers it (an inline limit); it lives while it has holders or
     * waiters. 0: it must be configured. */
    uint32_t limit;
} sl_lock_req;

/* One concurrency group of a claim, each its own lock (group/NAME). */
typedef struct sl_group_req {
    const char *name;
    sl_cancel cancel;
} sl_group_req;

typedef struct sl_tag {
    const char *key, *value;
} sl_tag;

typedef struct sl_claim_req {
    const char *id;     /* unique, chosen by the caller (random, unguessable) */
    const char *holder; /* who: 1 to SL_HOLDER_MAX printable characters */
    const sl_lock_req *locks;
    size_t nlocks;
    const sl_tag *tags;
    size_t ntags;
    const char *group; /* NULL for none: shorthand for one group with `cancel` */
    sl_cancel cancel;
    const sl_group_req *groups; /* more groups (after `group`), each with its cancel */
    size_t ngroups;
    int64_t grace_ms;   /* < 0: the engine default */
    int32_t priority;
    bool has_created;
    int64_t created_ms; /* ordering time; arrival time when !has_created */
    /* `created` may lie any distance in the past (the embedder's admin);
     * else at most backdate_skew_ms, or what every lock's rules allow. */
    bool backdate_any;
    const char *rebalance_key; /* NULL for none */
    int64_t lease_ms;   /* < 0: shortest configured lease, else the default */
    int64_t timeout_ms; /* 0 = none; counts from arrival */
    /* Optional, for the embedder's access rules: asked about every lock the
     * claim would take once its tags and group are expanded (key "mtx/NAME"
     * or "sem/NAME"), and with NULL when it would take none, before anything
     * changes. false refuses the claim with SL_EFORBIDDEN; err->field and
     * err->name say which lock. Only the embedder knows who asks, and only
     * the engine knows which locks tags add. */
    bool (*allow)(void *ud, const char *key);
    void *allow_ud;
    /* Optional: a key (1 to SL_IDEM_MAX bytes, opaque to the engine) by which
     * sl_claim_find_idem finds the claim again while it is kept, and a
     * fingerprint of the request kept with it. A key in use by another
     * claim is SL_ECONFLICT. */
    const char *idem;
    uint64_t idem_fp;
    /* Optional: who asks, opaque to the engine (the server's token name),
     * at most SL_ACTOR_MAX bytes; kept and saved with the claim, and
     * counted per actor (sl_engine_actor_get). NULL or "": none. */
    const char *actor;
} sl_claim_req;

/* Adds a claim: checks it, supersedes and revokes in its group as its
 * `cancel` says, makes room in full queues (drop_oldest), queues it and
 * grants whatever can be granted. On success *out is the claim (owned by
 * the engine). Errors: SL_EINVAL (malformed, or could never be granted),
 * SL_EUNKNOWN (a semaphore with no configuration; err->name says which),
 * SL_ECONFLICT (the id is taken), SL_ELIMIT, SL_EFULL (err->name's queue
 * holds err->value waiters, its max_pending), SL_EBACKDATE (err->value:
 * how far back `created` is, err->asked: how far it may be), SL_EINLINE
 * (err->value: the semaphore's limit, err->asked: the inline limit given). */
int sl_claim_create(sl_engine *eng, const sl_claim_req *req, int64_t now, sl_claim **out,
                    sl_error *err);
sl_claim *sl_claim_find(const sl_engine *eng, const char *id);
/* The claim made with this idempotency key (sl_claim_req.idem), while it is
 * kept; NULL when none. */
sl_claim *sl_claim_find_idem(const sl_engine *eng, const char *key);
/* Frees an ended claim's idempotency key, so that a new claim may take it
 * (recorded in the batch). SL_ECONFLICT while the claim is live. */
int sl_claim_drop_idem(sl_engine *eng, sl_claim *c);
/* Every claim, live or retained, in arrival order: first with prev NULL. */
const sl_claim *sl_claim_next(const sl_engine *eng, const sl_claim *prev);
/* The same newest first: the newest with next NULL. */
const sl_claim *sl_claim_prev(const sl_engine *eng, const sl_claim *next);
/* Every pending claim in the one total order (priority, created, arrival):
 * first with prev NULL. The order is sorted when first asked for after a
 * change (O(n log n)); iterating it then is O(1) a step. */
const sl_claim *sl_pending_next(sl_engine *eng, const sl_claim *prev);
/* Resuming those listings where an earlier page ended, even if the claim
 * it ended on has gone since: the first pending claim after the key
 * (priority, created, arrival) in the total order (O(log n) once sorted),
 * and the first claim, live or retained, that arrived after `arrival`.
 * NULL when there is none. */
const sl_claim *sl_pending_after(sl_engine *eng, int32_t priority, int64_t created,
                                 uint64_t arrival);
const sl_claim *sl_claim_after(const sl_engine *eng, uint64_t arrival);
/* The newest claim, live or retained, that arrived before `arrival`, or NULL. */
const sl_claim *sl_claim_before(const sl_engine *eng, uint64_t arrival);
/* The claim's place in that order, from 1; 0 when not pending. */
size_t sl_pending_position(sl_engine *eng, const sl_claim *c);

/* Releases a held claim, withdraws a pending one (`reason` is
 * SL_REASON_RELEASED/WITHDRAWN for a client's request, CLIENT_GONE when its
 * creator vanished), ends a revoking one as canceled. An ended claim is left
 * as it is and 0 returned. */
int sl_claim_release(sl_engine *eng, sl_claim *c, sl_reason reason, int64_t now);
/* Operator cancel of a live claim: it ends `canceled`. SL_ECONFLICT if ended. */
int sl_claim_cancel(sl_engine *eng, sl_claim *c, int64_t now);

/* How sl_claims_end ends the members of its set. */
typedef enum {
    /* A run's cleanup, as its client's release of each: pending members are
     * withdrawn (reason withdrawn), held ones released (released), revoking
     * ones end canceled with the reason they were revoked for (preempted,
     * or revoked and freed). */
    SL_BULK_RELEASE,
    /* An operator clearing queues: pending members end canceled (reason
     * operator); members no longer pending are left as they are. */
    SL_BULK_CLEAR,
} sl_bulk;

/* What sl_claims_end did: members withdrawn, released, canceled (revoking
 * ones with SL_BULK_RELEASE, pending ones with SL_BULK_CLEAR), and left as
 * they were (ended already, listed twice, or not pending for a clear). */
typedef struct sl_bulk_counts {
    size_t withdrawn, released, canceled, left;
} sl_bulk_counts;

/* Ends a set of claims in one step (docs/engine.md, "Bulk operations").
 * After firing the timers due at `now`, every member leaves before anyone
 * is let in: the pending members first, then the held and revoking ones,
 * each in the order of `set`, one event each, in that order. Then admission
 * and preemption run once, for the claims outside the set only: no member
 * is granted on the way out, and no member, having left, can revoke a
 * holder (revocations a member caused earlier stand). The grants and
 * revocations that follow are those of the claims the set leaves behind,
 * as if the whole set had ended at once; their events come after the
 * members'. Costs O(n) plus admission on the locks the members held or
 * waited for. *out may be NULL. SL_EINVAL for an unknown `how` (nothing
 * changes). */
int sl_claims_end(sl_engine *eng, sl_claim *const *set, size_t n, sl_bulk how, int64_t now,
                  sl_bulk_counts *out);
/* Extends the lease (a sign of life) and emits claim.renewed; SL_ECONFLICT
 * when revoking or ended: the client must stop. */
int sl_claim_renew(sl_engine *eng, sl_claim *c, int64_t now);
/* A request starts (+1) or stops (-1) waiting on the claim: a sign of life,
 * and the lease cannot run out while any request waits. Unlike the other
 * calls it fires no timers and adds nothing to the batch. */
void sl_claim_watch(sl_engine *eng, sl_claim *c, int delta, int64_t now);

typedef struct sl_claim_view {
    const char *id, *holder;
    sl_state state;
    int32_t priority;
    int64_t created_ms, arrived_ms;
    uint64_t arrival;          /* arrival sequence, the last tie-break */
    const char *rebalance_key; /* NULL */
    const char *group;         /* its first group, or NULL */
    sl_cancel cancel;          /* that group's cancel */
    int64_t grace_ms, lease_ms, timeout_ms;
    int64_t life_ms;      /* last sign of life */
    int64_t expires_ms;   /* when the lease runs out; -1 when none or ended */
    int64_t granted_ms;   /* -1 until held */
    uint64_t grant_seq;   /* grant order across the engine, 0 until held */
    int64_t revoke_at_ms; /* revoking: when grace runs out; else -1 */
    int64_t ended_ms;     /* -1 while live */
    sl_reason reason;     /* how it ended or why it is revoking */
    const char *by;       /* the claim that superseded or revoked it, or NULL */
    int watchers;
    size_t nlocks, ntags;
    const char *idem; /* its idempotency key, or NULL */
    uint64_t idem_fp;
    const char *actor; /* who made it (sl_claim_req.actor), or NULL */
} sl_claim_view;

void sl_claim_get(const sl_claim *c, sl_claim_view *out);

/* One pointer the embedder may hang on a claim (the server's waiters on it);
 * the engine never reads it. NULL until set; gone with the claim. */
void sl_claim_set_udata(sl_claim *c, void *udata);
void *sl_claim_udata(const sl_claim *c);

/* The seqs of a claim's events, noted as the engine gives them out, so that
 * a read of one claim's events goes to them rather than through every
 * event in between (evseq.c). Up to 3 in the claim, then 4 bytes each, at
 * most SL_CLAIM_SEQS_MAX per claim: past that, or past 2^32 seqs after its
 * first, no more are noted.
 * Writes the first max of them, ascending, and returns how many it wrote;
 * *more is true when the claim may have events after the last written
 * that are not (the cap, or max). A restored claim has none of the seqs
 * before the restore until the embedder notes them (note_event). */
#define SL_CLAIM_SEQS_MAX 1024
size_t sl_claim_event_seqs(const sl_claim *c, uint64_t *out, size_t max, bool *more);
/* Notes that the event seq is the claim's, in order among those noted (an
 * embedder reading the log back after a restore). */
void sl_claim_note_event(sl_engine *eng, sl_claim *c, uint64_t seq);

typedef struct sl_claim_lock_view {
    sl_kind kind;
    const char *name;
    const char *key;
    uint32_t slots;
    sl_via via;
    uint64_t token;  /* fencing token once granted; 0 before */
    size_t position; /* place in the lock's queue while pending, from 1; else 0 */
    uint32_t inline_limit; /* the inline limit the claim gave, else 0 */
    sl_cancel cancel;      /* via group: that group's cancel */
} sl_claim_lock_view;

/* Lock i of the claim, in the claim's order (explicit locks, then tags, then
 * the group). Computes the position, hence the engine. */
void sl_claim_lock_get(sl_engine *eng, const sl_claim *c, size_t i, sl_claim_lock_view *out);
/* The same without the position (left 0), in O(1): for callers that do not
 * show positions, such as the store, since a position on a rebalanced lock
 * costs a walk of its queue. */
void sl_claim_lock_peek(const sl_claim *c, size_t i, sl_claim_lock_view *out);
void sl_claim_tag_get(const sl_claim *c, size_t i, sl_tag *out);

/* ---- why ----------------------------------------------------------------- */

typedef struct sl_why {
    size_t lock;      /* index into the claim's locks */
    const char *key;
    sl_rule rule;
    uint64_t used;
    uint32_t limit;
    size_t position;  /* from 1 */
    size_t nahead;    /* claims ahead of it in this lock's queue */
    const sl_claim *ahead[SL_WHY_AHEAD_MAX]; /* the first of them, queue order */
    size_t nshown;    /* how many of ahead[] are set */
    uint64_t quota;   /* rebalanced: its key's share */
    uint64_t key_used; /* rebalanced: slots its key holds */
    bool kept;        /* skip, behind: the slots are kept for the first waiter (ahead[0]),
                       * which has waited the overtake limit, or preempted holders: */
    bool kept_preempting; /* ... the slots it revoked holders for are its own */
    uint32_t weight;  /* rebalanced: its key's weight */
    uint64_t weights; /* rebalanced: the weights of every key present, summed */
    int64_t admit_ms;    /* rate: when the rate lets it in (its own token, in queue order) */
    sl_preempt preempt;  /* a preempting lock: what preemption does for it */
    size_t npreempt;     /* WILL: holders it would revoke; WAITING: revoking holders */
    size_t npreempted;   /* WAITING: of those, the preempted ones (the rest were
                          * revoked by a newer claim of their group) */
} sl_why;

/* Explains a pending claim, one entry per lock (at most max written;
 * returns the number of locks). 0 when the claim is not pending. */
size_t sl_claim_why(sl_engine *eng, const sl_claim *c, sl_why *out, size_t max);
/* The claim's main block reason: the first lock whose rule is not
 * other_lock (quota first on a rebalanced lock). SL_RULE_NONE if not
 * pending. *lock gets that lock's index. */
sl_rule sl_claim_main_rule(sl_engine *eng, const sl_claim *c, size_t *lock);

/* ---- events and changes -------------------------------------------------- */

typedef struct sl_event {
    uint64_t seq;
    int64_t time_ms;
    sl_event_type type;
    const sl_claim *claim; /* claim events; valid until sl_engine_changes_clear */
    sl_reason reason;      /* ended/revoking events */
    sl_rule rule;          /* claim.waiting: the main block reason then */
    size_t rule_lock;      /* ... on this lock of the claim */
    const char *name;      /* semaphore events: the configuration's name */
    uint32_t limit;        /* semaphore.updated: the new values */
    sl_strategy strategy;
    int64_t lease_ms;
    const struct sl_sem_change *change; /* semaphore.updated: before and after */
    /* Who asked for it: the actor of sl_engine_act_as for the transitions
     * of the claims a call is about and for semaphore events, else
     * SL_ACTOR_SERVER. Valid until sl_engine_changes_clear. */
    const char *actor;
} sl_event;

/* The actor of the events no request asked for: what the engine's rules do
 * by themselves (timers, and what a call does to claims other than the ones
 * it is about: grants to waiters, supersession, preemption, drop_oldest). */
#define SL_ACTOR_SERVER "sluice"

/* Names who makes the calls that follow (the embedder's principal, copied),
 * until the next act_as; NULL: nobody, SL_ACTOR_SERVER. The events of a
 * mutating call carry it when they are about a claim the call names (the
 * one it creates, releases, cancels or renews, the members of
 * sl_claims_end) or a configuration it sets or deletes; every other event,
 * the timers' included, carries SL_ACTOR_SERVER. */
void sl_engine_act_as(sl_engine *eng, const char *actor);

/* What a semaphore.updated changed. The opts carry no weights (NULL, 0):
 * `weights` says whether they changed. Valid until sl_engine_changes_clear. */
typedef struct sl_sem_change {
    bool created; /* no configuration before: `before` is zeroed */
    bool weights;
    sl_sem_opts before, after;
} sl_sem_change;

/* Everything that changed since the last sl_engine_changes_clear, for the
 * store to write in one transaction. Valid until that clear. A store applies
 * deletions first: evicted locks, then purged claims; then the upserts:
 * tokens (a key evicted at the start of the batch may have been made again
 * and granted since), claims (skipping a changed claim that sl_claim_find
 * no longer returns: it ended and was forgotten in this batch, and its id
 * may even be in use again), configurations, events, counters. */
typedef struct sl_changes {
    sl_claim *const *claims; /* created or changed, each once */
    size_t nclaims;
    const char *const *purged; /* ids of claims forgotten */
    const sl_claim *const *purged_claims; /* the same claims, still readable */
    size_t npurged;
    const sl_lock *const *locks; /* locks whose token moved */
    size_t nlocks;
    const char *const *evicted; /* keys of idle locks forgotten */
    size_t nevicted;
    const char *const *configs; /* names of configurations set or deleted */
    size_t nconfigs;            /* look each up: NULL means deleted */
    const sl_event *events;
    size_t nevents;
    uint64_t next_seq, next_arrival, next_grant, token_floor;
} sl_changes;

void sl_engine_changes(const sl_engine *eng, sl_changes *out);
/* Forgets the batch: frees purged claims and evicts idle locks past the
 * bound (those evictions appear in the next batch). */
void sl_engine_changes_clear(sl_engine *eng);
/* Whether the batch has anything in it. */
bool sl_engine_changes_pending(const sl_engine *eng);

/* ---- rebuilding from saved state ---------------------------------------- */

typedef struct sl_claim_lock_rec {
    sl_kind kind;
    const char *name;
    uint32_t slots;
    sl_via via;
    uint64_t token;
    uint32_t inline_limit;
    sl_cancel cancel; /* via group */
} sl_claim_lock_rec;

/* A claim as the store saved it: the view's fields (nlocks and ntags count
 * the arrays below; watchers is ignored) and its expanded locks and tags. */
typedef struct sl_claim_rec {
    sl_claim_view v;
    const sl_claim_lock_rec *locks;
    const sl_tag *tags;
} sl_claim_rec;

/* Call on an empty engine, in this order: counters, configurations and
 * lock tokens, claims (any order), then restore_done. No events are
 * emitted and the batch stays empty. Until restore_done, make no other
 * call: restored queues are put in order only then. */
void sl_engine_restore_counters(sl_engine *eng, uint64_t next_seq, uint64_t next_arrival,
                                uint64_t next_grant, uint64_t token_floor);
int sl_engine_restore_config(sl_engine *eng, const char *name, const sl_sem_opts *o);
int sl_engine_restore_token(sl_engine *eng, const char *key, uint64_t token);
int sl_engine_restore_claim(sl_engine *eng, const sl_claim_rec *rec, sl_error *err);
/* Gives every live claim at least one full lease from now, then fires due
 * timers and grants what can be granted (both recorded in the batch). */
void sl_engine_restore_done(sl_engine *eng, int64_t now);
/* Ends the start that restore_done began. Until then every configuration
 * set (a server's file at start) is present at the start: the rate buckets
 * of its semaphores start empty, as restored ones do. From then on, a
 * configuration made anew starts its buckets full. */
void sl_engine_start_done(sl_engine *eng);

#endif
