/* engine_int.h - the engine's private structures, shared by its files only.
 *
 * Layout in one picture: the engine indexes claims by id, locks by key and
 * configurations by name (hash tables). Each claim carries one entry per lock
 * it asks for; while pending, the entry sits in that lock's queue (an
 * order-statistic tree, so positions and "slots asked for ahead of me" are
 * O(log n)); once granted, it moves to the lock's holder list. A rebalanced
 * lock queues its entries per rebalance key instead. Every pending claim is
 * also in one global tree in the total order, and every claim has one timer
 * armed at its earliest deadline. */
#ifndef SL_ENGINE_INT_H
#define SL_ENGINE_INT_H

#include "engine.h"
#include "hash.h"
#include "heap.h"
#include "mem.h"
#include "tree.h"

/* A growable array of pointers. */
typedef struct sl_pvec {
    void **v;
    size_t n, cap;
} sl_pvec;

void sl__pvec_push(sl_mem *m, sl_pvec *v, void *p);
void sl__pvec_free(sl_mem *m, sl_pvec *v);

/* One lock of a claim being built, from a request or a saved record. */
typedef struct sl_xlock {
    char key[SL_LOCK_KEY_MAX + 1];
    size_t keylen;
    uint32_t slots;
    sl_via via;
    uint32_t inline_limit;
    uint8_t cancel;    /* via group */
    int64_t cfg_lease; /* the configured lease of a semaphore, 0 if none */
    sl_lock *lock;     /* restore: the lock found by key, NULL when it is new */
} sl_xlock;

struct sl_config {
    sl_hnode hnode; /* eng->configs, by name */
    uint32_t limit;
    sl_strategy strategy;
    int64_t lease_ms;
    int64_t overtake_ms;
    sl_sem_rules rules; /* rules.weights is owned: one block with the keys */
    bool at_start; /* present at the start: its unused buckets fill from empty (rate.c) */
    bool pattern; /* name ends in '*'; the prefix is name[0..len-1) */
    uint16_t len;
    char name[];
};

typedef struct sl_rkey sl_rkey;
typedef struct sl_centry sl_centry;
typedef struct sl_idem sl_idem;
typedef struct sl_actor sl_actor;

struct sl_lock {
    sl_hnode hnode;             /* eng->locks, by key */
    struct sl_lock *prev, *next; /* eng's active or idle list */
    const sl_config *cfg;       /* semaphores: exact or pattern configuration, or NULL */
    sl_kind kind;
    sl_strategy strategy;
    uint32_t limit;
    int64_t lease_ms;
    int64_t overtake_ms; /* skip: the first waiter's wait before it is no longer overtaken */
    uint64_t used;  /* slots held, revoking holders included */
    uint64_t token; /* last fencing token granted */
    size_t nholders, npending;
    sl_centry *hhead, *htail; /* holders, oldest grant first */
    sl_tree queue;            /* strict and skip: pending entries in the total order */
    sl_hash *rkeys;           /* rebalanced: keys present (holding or pending) */
    sl_tree rkey_order;       /* rebalanced: keys with pending claims, by oldest pending */
    uint64_t wsum;            /* rebalanced: the weights of the keys present, summed */
    uint32_t inline_limit;    /* made by its claims' inline limit (no configuration) */
    bool rate_init;           /* rate: the bucket has been used (else full, or see origin) */
    uint64_t rate_level;      /* rate: the bucket at rate_at, in units (rate.c) */
    int64_t rate_unit;        /* rate: the period rate_level was counted with */
    int64_t rate_at;
    sl_timer rate_timer;      /* rate: when the next token is whole */
    bool idle;      /* on the idle list */
    bool dirty;     /* on eng->dirty: admission must be looked at again */
    bool tok_dirty; /* on eng->chg_locks */
    bool preempt_marked; /* on eng->preempt */
    bool preempt_retry;  /* on eng->preempt_retry */
    uint16_t keylen;
    char key[]; /* "mtx/NAME" or "sem/NAME"; the name is key + 4 */
};

/* One lock of one claim. */
struct sl_centry {
    union {
        sl_tnode node; /* pending: in the lock's queue or its rebalance key's */
        struct {
            sl_centry *prev, *next;
        } h; /* held: in the lock's holder list */
    } u;
    sl_claim *claim;
    sl_lock *lock; /* while the claim is live; NULL once it has ended */
    sl_rkey *rk;   /* rebalanced locks: the claim's key there */
    const char *key;
    uint64_t token;
    uint32_t slots;
    uint32_t inl; /* inline limit given, else 0 */
    uint8_t via;
    uint8_t cancel; /* via group: its cancel */
};

struct sl_rkey {
    sl_hnode hnode;  /* lock->rkeys */
    sl_tnode onode;  /* lock->rkey_order, while it has pending claims */
    sl_tree pending; /* its pending entries, oldest first */
    uint64_t held;   /* slots its claims hold */
    size_t nheld, npending;
    uint32_t weight; /* from the lock's rules (weights, default_weight) */
    uint16_t len;
    char name[];
};

struct sl_claim {
    sl_hnode hnode;               /* eng->claims, by id */
    struct sl_claim *prev, *next; /* eng's list of every claim, arrival order */
    sl_timer timer;
    struct sl_claim *grave_next; /* purged, waiting for the batch to be cleared */
    struct sl_claim *pprev, *pnext; /* eng's list of pending claims (any order) */
    size_t pidx;                    /* place in eng->psnap while that is valid */
    const char *id, *holder, *group, *rkey;
    char *by; /* owned */
    sl_idem *idem; /* owned; NULL for most claims (idem.c) */
    sl_actor *actor; /* shared with the actor's other claims; NULL: none (actor.c) */
    void *udata;
    sl_tag *tags;
    /* Its events' seqs (evseq.c): up to 3 in place (most claims have no
     * more), else in a block. */
    union {
        struct {
            uint64_t first;
            uint32_t off[2];
        } in;
        struct sl_evseqs *block;
    } seqs;
    uint64_t grant_seq;
    int64_t arrived, lease, grace, timeout, life, granted, revoke_at, ended;
    int watchers;
    uint8_t cancel, reason;
    bool dirty;     /* on eng->chg_claims */
    bool candidate; /* on eng->cand during an admission pass */
    bool preempting; /* it revoked holders to get in: a skip queue keeps its slots */
    bool acting;     /* the call under way is about it: its events carry the actor */
    uint16_t ntags, idlen;
    /* Last, next to the entries: what every queue comparison reads. With a
     * million waiters each tree level is a cache miss; keeping the ordering
     * fields beside the first entry's tree node makes it one miss, not two. */
    uint8_t state;
    uint8_t nseqs; /* seqs in place, or SL_SEQS_BLOCK */
    uint16_t nlocks;
    int32_t priority;
    int64_t created;
    uint64_t arrival;
    sl_centry e[]; /* then the tags and the strings: id, holder, keys, group, rkey */
};

struct sl_engine {
    sl_mem mem;
    sl_engine_opts opts;
    sl_hash claims, locks, configs, idems, actors;
    sl_pvec patterns; /* sl_config*, the ones ending in '*' */
    sl_claim *chead, *ctail;
    sl_claim *phead;  /* pending claims, unordered: the total order of all of
                       * them is only needed for listings, so it is sorted
                       * on demand (psnap) rather than kept in a tree that
                       * every claim would pay for */
    size_t npending;
    sl_claim **psnap; /* pending claims in the total order, while psnap_ok */
    size_t psnap_cap;
    bool psnap_ok;
    sl_lock *active_head, *active_tail, *idle_head, *idle_tail;
    size_t nactive, nidle, nheld, nended;
    sl_heap timers;
    sl_heap rate_timers; /* sl_lock.rate_timer */
    uint64_t lock_seq;   /* tie-break of rate timers: creation order */
    bool rate_origin_set; /* restored: unused buckets filled from empty since rate_origin */
    int64_t rate_origin;
    bool starting;        /* between restore_done and start_done */
    uint64_t next_seq, next_arrival, next_grant, token_floor;
    uint64_t grants, preemptions;
    int64_t now; /* the time of the admission pass under way, or of the last one */
    sl_pvec dirty; /* sl_lock* whose admission must be looked at */
    sl_pvec cand;  /* sl_claim*, scratch for the admission pass */
    sl_pvec arrivals; /* sl_claim* that joined strict or skip queues: candidates */
    sl_pvec preempt;  /* sl_lock* whose head may preempt (preempt.c) */
    sl_pvec preempt_retry; /* sl_lock* whose head was held back by another lock */
    sl_pvec victims;  /* sl_centry*, scratch for preemption plans */
    void *sim;     /* scratch for rebalanced walks (rebalance.c) */
    sl_xlock *xlocks; /* scratch: SL_CLAIM_LOCKS_MAX locks of a claim being built */
    size_t simcap;
    /* the batch (sl_changes) */
    sl_pvec chg_claims, chg_locks, chg_configs, purged, purged_claims, evicted, strings;
    sl_event *events;
    size_t nevents, capevents;
    char *actor;              /* sl_engine_act_as's, owned; NULL: SL_ACTOR_SERVER */
    const char *actor_batch;  /* its copy in the batch, made by the first event that needs it */
    sl_claim *grave;
    /* between the first sl_engine_restore_claim and restore_done: queues
     * are lists (sl__queue_restore), holders and claims possibly out of
     * order, all put right in one go at the end */
    bool restoring;
    bool restore_unsorted; /* a claim came in before one of a later arrival */
};

/* claim.c */
void sl__pending_add(sl_engine *eng, sl_claim *c);
void sl__pending_remove(sl_engine *eng, sl_claim *c);
sl_xlock *sl__xlocks(sl_engine *eng); /* the scratch of SL_CLAIM_LOCKS_MAX locks */
sl_claim *sl__claim_alloc(sl_engine *eng, const sl_claim_req *req, const sl_xlock *x, size_t n);
void sl__claim_link(sl_engine *eng, sl_claim *c, uint64_t idhash);
void sl__claim_end(sl_engine *eng, sl_claim *c, sl_state state, sl_reason reason,
                   const char *by, int64_t now);
void sl__claim_free(sl_engine *eng, sl_claim *c);

/* evseq.c */
typedef struct sl_evseqs sl_evseqs;
void sl__claim_seqs_free(sl_engine *eng, sl_claim *c);
void sl__claim_touch(sl_engine *eng, sl_claim *c); /* mark changed for the store */
int sl__claim_order(const sl_claim *a, const sl_claim *b);       /* the total order */
int sl__claim_age_order(const sl_claim *a, const sl_claim *b);   /* created, arrival */

/* config.c */
const sl_config *sl__config_resolve(const sl_engine *eng, const char *name, size_t len);
void sl__config_free_all(sl_engine *eng);

/* lock.c */
sl_lock *sl__lock_find(const sl_engine *eng, const char *key, size_t len);
sl_lock *sl__lock_get(sl_engine *eng, const char *key, size_t len); /* creates */
void sl__lock_apply_config(sl_engine *eng, sl_lock *l, const sl_config *cfg);
void sl__lock_check_idle(sl_engine *eng, sl_lock *l);
void sl__lock_holder_add(sl_engine *eng, sl_centry *e); /* a grant: the token moves */
void sl__lock_holder_append(sl_engine *eng, sl_centry *e); /* restore: any order */
void sl__lock_holders_sort(sl_engine *eng, sl_lock *l);   /* ... then into grant order */
void sl__lock_holder_remove(sl_engine *eng, sl_centry *e);
void sl__lock_evict_excess(sl_engine *eng);
void sl__lock_free_all(sl_engine *eng);
void sl__lock_mark_dirty(sl_engine *eng, sl_lock *l);
bool sl__lock_busy(const sl_lock *l);
const sl_sem_rules *sl__lock_rules(const sl_lock *l); /* its configuration's, or none */
void sl__lock_set_inline(sl_engine *eng, sl_lock *l, uint32_t limit);
void sl__lock_key(sl_kind kind, const char *name, size_t len, char *out, size_t *outlen);

/* queue.c */
void sl__queue_add(sl_engine *eng, sl_centry *e);
void sl__queue_restore(sl_engine *eng, sl_centry *e); /* listed, built later */
void sl__queue_build(sl_lock *l);                     /* builds what was listed */
void sl__queue_remove(sl_engine *eng, sl_centry *e);
void sl__queue_requeue(sl_engine *eng, sl_lock *l, sl_strategy strategy);
bool sl__queue_admissible(sl_engine *eng, const sl_centry *e);
bool sl__queue_admissible_freed(sl_engine *eng, const sl_centry *e, uint64_t freed);
void sl__queue_grant_now(sl_engine *eng, sl_claim *c, int64_t now);
void sl__settle(sl_engine *eng, int64_t now);
uint64_t sl__lock_free_slots(const sl_lock *l);
/* A skip lock's first waiter once it has waited the overtake limit (at
 * eng->now): its slots are kept for it. NULL when there is none. */
const sl_centry *sl__skip_barrier(const sl_engine *eng, const sl_lock *l);
size_t sl__queue_position(sl_engine *eng, const sl_centry *e); /* from 1 */
uint64_t sl__queue_ahead_slots(sl_engine *eng, const sl_centry *e);

/* rebalance.c */
void sl__rk_add_pending(sl_engine *eng, sl_centry *e);
void sl__rk_remove_pending(sl_engine *eng, sl_centry *e);
void sl__rk_add_held(sl_engine *eng, sl_centry *e);
void sl__rk_remove_held(sl_engine *eng, sl_centry *e);
void sl__rk_free_all(sl_engine *eng, sl_lock *l);
/* Walks a rebalanced lock's pending entries in the order slots would be
 * handed out; visit returns false to stop. */
typedef bool (*sl_rk_visit)(void *ud, sl_centry *e, size_t position, uint64_t slots_before);
void sl__rk_walk(sl_engine *eng, const sl_lock *l, sl_rk_visit visit, void *ud);
uint64_t sl__rk_quota(sl_engine *eng, const sl_lock *l, const sl_rkey *rk, bool *someone_below);
/* The lock's rules changed: every key takes its weight again. */
void sl__rk_reweigh(sl_lock *l);

/* restore.c: ends a restore early (a configuration set in the middle of
 * one walks queues, which must be trees by then) */
void sl__restore_finish(sl_engine *eng);

/* preempt.c */
bool sl__lock_preempts(const sl_lock *l);
void sl__preempt_mark(sl_engine *eng, sl_lock *l); /* its head may preempt now */
void sl__preempt_mark_claim(sl_engine *eng, const sl_claim *c); /* c started revoking */
void sl__preempt_retry_all(sl_engine *eng);
void sl__preempt_forget(sl_engine *eng, sl_lock *l);
bool sl__preempt_pass(sl_engine *eng, int64_t now); /* true: it revoked someone */
/* What preemption does for a waiter on its lock (sl_why), *count as there. */
sl_preempt sl__preempt_status(sl_engine *eng, const sl_centry *e, size_t *count);

/* rate.c */
bool sl__lock_rated(const sl_lock *l);
bool sl__rate_allows(const sl_engine *eng, const sl_lock *l); /* a whole token now */
int64_t sl__rate_next(const sl_engine *eng, const sl_lock *l); /* when one is */
int64_t sl__rate_kth(const sl_engine *eng, const sl_lock *l, uint64_t k);
void sl__rate_arm(sl_engine *eng, sl_lock *l);  /* its timer at that time */
void sl__rate_take(sl_engine *eng, sl_lock *l); /* a grant */
/* The bucket's level at `now` written down, before its rules change. */
void sl__rate_settle(sl_engine *eng, sl_lock *l, int64_t now);
void sl__rate_fire(sl_engine *eng, sl_timer *t);

/* group.c */
void sl__group_cancel(sl_engine *eng, sl_claim *c, int64_t now);

/* timers.c */
void sl__claim_rearm(sl_engine *eng, sl_claim *c);
void sl__timers_fire(sl_engine *eng, int64_t now);
/* Among the oldest claims, the first that has ended (NULL when none), and
 * its purge before its retention ends (claims_max: timers.c). */
sl_claim *sl__oldest_ended(const sl_engine *eng);
void sl__purge_early(sl_engine *eng, sl_claim *c);

/* events.c */
sl_event *sl__event_add(sl_engine *eng, sl_event_type type, sl_claim *c, int64_t now);
sl_event *sl__event_sem(sl_engine *eng, sl_event_type type, const sl_config *cfg,
                        const char *name, int64_t now);
/* Zeroed memory that lives until sl_engine_changes_clear. */
void *sl__batch_alloc(sl_engine *eng, size_t size);
void sl__changes_lock(sl_engine *eng, sl_lock *l);
void sl__changes_config(sl_engine *eng, const char *name);
char *sl__batch_strdup(sl_engine *eng, const char *s, size_t len);
void sl__changes_free(sl_engine *eng);
/* Marks (on) or unmarks the claims a call is about, after its timers fired:
 * their events carry the actor (sl_engine_act_as). */
void sl__acting(sl_claim *const *set, size_t n, bool on);

/* actor.c: the claim's maker and its counts (live from attach until
 * ended, pending between sl__pending_add and sl__pending_remove). */
const char *sl__actor_key(const sl_hnode *n, size_t *len); /* eng->actors' key */
void sl__actor_attach(sl_engine *eng, sl_claim *c, const char *name); /* state set first */
void sl__actor_ended(sl_claim *c);
void sl__actor_pending(sl_claim *c, bool add);
void sl__actor_free(sl_engine *eng, sl_claim *c);
const char *sl__actor_name(const sl_claim *c);

/* idem.c */
const char *sl__idem_key(const sl_hnode *n, size_t *len); /* eng->idems' key */
bool sl__idem_taken(const sl_engine *eng, const char *key);
void sl__idem_attach(sl_engine *eng, sl_claim *c, const char *key, uint64_t fp);
void sl__idem_detach(sl_engine *eng, sl_claim *c); /* purged: no longer found */
void sl__idem_free(sl_engine *eng, sl_claim *c);
void sl__idem_view(const sl_claim *c, const char **key, uint64_t *fp);

/* names.c: the name rule for saved state (restore), which predates some
 * of today's checks */
bool sl__name_valid_saved(const char *name, size_t len, bool allow_pattern);

/* engine.c */
void sl__error_set(sl_error *err, int code, const char *what, const char *field,
                   const char *name, int64_t value);

#endif
