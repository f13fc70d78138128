/* claim.c - claims: checked, expanded into locks, queued, and ended.
 *
 * A claim is one allocation: the struct, one entry per lock, its tags and
 * every string it carries, so that memory per claim is small, bounded by the
 * request's bounds, and freed in one call. Tags and the group become locks
 * here (docs/engine.md: both are sugar for locks), so the rest of the engine only
 * ever sees locks. */
#include <string.h>

#include "engine_int.h"

int sl__claim_age_order(const sl_claim *a, const sl_claim *b)
{
    if (a->created != b->created)
        return a->created < b->created ? -1 : 1;
    if (a->arrival != b->arrival)
        return a->arrival < b->arrival ? -1 : 1;
    return 0;
}

int sl__claim_order(const sl_claim *a, const sl_claim *b)
{
    if (a->priority != b->priority)
        return a->priority > b->priority ? -1 : 1;
    return sl__claim_age_order(a, b);
}

typedef struct xclaim {
    sl_xlock *locks; /* SL_CLAIM_LOCKS_MAX of them: the engine's scratch */
    size_t n;
    const sl_claim_req *req;
} xclaim;

static bool text_valid(const char *s, size_t max, bool required)
{
    if (!s)
        return !required;
    size_t n = strlen(s);
    if (n == 0)
        return !required;
    if (n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

static int fail(sl_error *err, int code, const char *what, const char *field, const char *name,
                int64_t value)
{
    sl__error_set(err, code, what, field, name, value);
    return code;
}

static void field_name(char *buf, size_t cap, const char *a, size_t i, const char *b)
{
    /* "locks[12].slots" without stdio: the engine does no formatting I/O. */
    size_t n = 0;
    for (const char *p = a; *p && n + 1 < cap; p++)
        buf[n++] = *p;
    char digits[24];
    size_t d = 0;
    do {
        digits[d++] = (char)('0' + i % 10);
        i /= 10;
    } while (i > 0);
    if (n + 1 < cap)
        buf[n++] = '[';
    while (d > 0 && n + 1 < cap)
        buf[n++] = digits[--d];
    if (n + 1 < cap)
        buf[n++] = ']';
    for (const char *p = b; *p && n + 1 < cap; p++)
        buf[n++] = *p;
    buf[n] = '\0';
}

static int inline_conflict(sl_error *err, const char *what, const char *field,
                           const char *name, uint32_t has, uint32_t asked)
{
    fail(err, SL_EINLINE, what, field, name, has);
    if (err)
        err->asked = asked;
    return SL_EINLINE;
}

/* The limit of semaphore `name` for a claim giving inline limit `inl` (0:
 * none): its configuration's, which an inline limit must match; else the
 * inline limit, which must match the one its live claims made it with. */
static int sem_limit(const sl_engine *eng, sl_xlock *xl, const char *name, size_t len,
                     uint32_t inl, const char *field, uint32_t *limit, sl_error *err)
{
    const sl_config *cfg = sl__config_resolve(eng, name, len);
    if (cfg && inl > 0 && inl != cfg->limit)
        return inline_conflict(err, "the semaphore is configured, so an inline limit must equal "
                                    "its limit or be left out",
                               field, name, cfg->limit, inl);
    if (cfg) {
        *limit = cfg->limit;
        xl->cfg_lease = cfg->lease_ms;
        return 0;
    }
    const sl_lock *live = sl__lock_find(eng, xl->key, xl->keylen);
    /* Never joined without a limit (S8): a step that forgot its limit
     * would work while other steps run and fail when they do not. value:
     * the live inline limit, for the message's mend. */
    if (inl == 0 && live && live->inline_limit > 0)
        return fail(err, SL_EUNKNOWN,
                    "no semaphore or pattern is configured by this name, so every claim on it "
                    "gives its inline limit, even while other claims keep it alive",
                    field, name, live->inline_limit);
    if (inl == 0)
        return fail(err, SL_EUNKNOWN,
                    "no semaphore or pattern is configured by this name; configure it with "
                    "PUT /v1/semaphores/{name} first, or give the claim an inline limit: "
                    "{\"semaphore\": NAME, \"limit\": N}",
                    field, name, 0);
    if (inl > SL_LIMIT_MAX)
        return fail(err, SL_EINVAL, "an inline limit is 1 to 1000000000", field, name, inl);
    if (live && live->inline_limit > 0 && live->inline_limit != inl)
        return inline_conflict(err, "the semaphore's live claims made it with another inline "
                                    "limit; give the same limit, or wait until it has no holders "
                                    "and no waiters",
                               field, name, live->inline_limit, inl);
    *limit = inl;
    xl->inline_limit = inl;
    return 0;
}

/* Adds one lock to the claim being built, after checking it could ever be
 * granted: a semaphore must be configured or given an inline limit, a mutex
 * is one slot, slots fit a non-zero limit, and no lock appears twice. */
static int xadd(const sl_engine *eng, xclaim *x, const sl_lock_req *lr, size_t len, sl_via via,
                const char *field, sl_error *err)
{
    sl_xlock *xl = &x->locks[x->n];
    sl_kind kind = lr->kind;
    const char *name = lr->name;
    uint32_t slots = lr->slots ? lr->slots : 1;
    sl__lock_key(kind, name, len, xl->key, &xl->keylen);
    xl->slots = slots;
    xl->via = via;
    xl->cfg_lease = 0;
    xl->inline_limit = 0;
    xl->cancel = SL_CANCEL_NONE;
    uint32_t limit = 1;
    if (kind == SL_KIND_SEMAPHORE) {
        int rc = sem_limit(eng, xl, name, len, lr->limit, field, &limit, err);
        if (rc)
            return rc;
    } else if (lr->limit > 0) {
        return fail(err, SL_EINVAL, "an inline limit applies to semaphores; a mutex has one slot",
                    field, name, lr->limit);
    } else if (slots > 1) {
        return fail(err, SL_EINVAL, "a mutex has one slot; ask for slots 1 or use a semaphore",
                    field, name, slots);
    }
    if (limit > 0 && slots > limit) {
        /* The mend differs: a configured limit can be raised; a live inline
         * one cannot change while claims use it. */
        fail(err, SL_EINVAL,
             xl->inline_limit > 0
                 ? "give a larger inline limit when no claim holds or waits on the semaphore "
                   "(while claims use it, its inline limit cannot change: configure it with "
                   "PUT /v1/semaphores/{name} to raise it)"
                 : "raise the semaphore's limit first",
             field, name, limit);
        if (err)
            err->asked = slots;
        return SL_EINVAL;
    }
    for (size_t i = 0; i < x->n; i++)
        if (x->locks[i].keylen == xl->keylen && memcmp(x->locks[i].key, xl->key, xl->keylen) == 0)
            return fail(err, SL_EINVAL, "the same lock appears twice in one claim", field, name, 0);
    if (x->req->allow && !x->req->allow(x->req->allow_ud, xl->key))
        return fail(err, SL_EFORBIDDEN, "the access rules refuse this lock", field, xl->key, 0);
    x->n++;
    return 0;
}

static int expand_locks(const sl_engine *eng, const sl_claim_req *req, xclaim *x, sl_error *err)
{
    char field[32];
    for (size_t i = 0; i < req->nlocks; i++) {
        const sl_lock_req *lr = &req->locks[i];
        size_t len = lr->name ? strlen(lr->name) : 0;
        field_name(field, sizeof(field), "locks", i, "");
        if ((unsigned)lr->kind > SL_KIND_SEMAPHORE)
            return fail(err, SL_EINVAL, "a lock is a mutex or a semaphore", field, NULL, 0);
        if (!sl_name_valid(lr->name, len, false))
            return fail(err, SL_EINVAL,
                        "a lock name is 1 to 253 characters of A-Z a-z 0-9 . _ - / : =, with "
                        "no leading or trailing '/', no '//' and no '.' or '..' segment",
                        field, lr->name, 0);
        int rc = xadd(eng, x, lr, len, SL_VIA_LOCK, field, err);
        if (rc)
            return rc;
    }
    return 0;
}

/* Tag k=v adds semaphore tag/k=v when that name or tag/k=* is configured,
 * and semaphore tag/k when that is configured. */
static int expand_tags(const sl_engine *eng, const sl_claim_req *req, xclaim *x, sl_error *err)
{
    char field[32], name[SL_NAME_MAX + 1];
    for (size_t i = 0; i < req->ntags; i++) {
        const sl_tag *t = &req->tags[i];
        size_t kl = t->key ? strlen(t->key) : 0, vl = t->value ? strlen(t->value) : 0;
        field_name(field, sizeof(field), "tags", i, "");
        if (kl == 0 || vl == 0 || memchr(t->key, '=', kl) || 4 + kl + 1 + vl > SL_NAME_MAX)
            return fail(err, SL_EINVAL,
                        "a tag is a non-empty key without '=' and a non-empty value",
                        field, t->key, 0);
        for (size_t j = 0; j < i; j++)
            if (strcmp(req->tags[j].key, t->key) == 0)
                return fail(err, SL_EINVAL, "the same tag key appears twice", field, t->key, 0);
        memcpy(name, "tag/", 4);
        memcpy(name + 4, t->key, kl);
        name[4 + kl] = '=';
        memcpy(name + 5 + kl, t->value, vl);
        size_t full = 5 + kl + vl;
        name[full] = '\0';
        if (!sl_name_valid(name, full, false))
            return fail(err, SL_EINVAL,
                        "tag keys and values use the characters of lock names "
                        "(A-Z a-z 0-9 . _ - / : =)",
                        field, t->key, 0);
        sl_lock_req lr = {SL_KIND_SEMAPHORE, name, 1, 0};
        if (sl__config_resolve(eng, name, full)) {
            int rc = xadd(eng, x, &lr, full, SL_VIA_TAG, field, err);
            if (rc)
                return rc;
        }
        if (sl__config_resolve(eng, name, 4 + kl)) {
            char key[SL_NAME_MAX + 1];
            memcpy(key, name, 4 + kl);
            key[4 + kl] = '\0';
            lr.name = key;
            int rc = xadd(eng, x, &lr, 4 + kl, SL_VIA_TAG, field, err);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Group i of the request: `group` (with `cancel`) first, then `groups`. */
static sl_group_req group_at(const sl_claim_req *req, size_t i)
{
    if (req->group) {
        if (i == 0)
            return (sl_group_req){req->group, req->cancel};
        i--;
    }
    return req->groups[i];
}

static size_t group_count(const sl_claim_req *req)
{
    return (req->group ? 1 : 0) + req->ngroups;
}

static int expand_groups(const sl_engine *eng, const sl_claim_req *req, xclaim *x,
                         sl_error *err)
{
    char name[SL_NAME_MAX + 1], field[32];
    for (size_t i = 0; i < group_count(req); i++) {
        sl_group_req g = group_at(req, i);
        size_t gl = g.name ? strlen(g.name) : 0;
        const char *f = "group";
        if (!req->group || i > 0) {
            field_name(field, sizeof(field), "groups", req->group ? i - 1 : i, "");
            f = field;
        }
        if (gl == 0 || 6 + gl > SL_NAME_MAX || !sl_name_valid(g.name, gl, false))
            return fail(err, SL_EINVAL,
                        "a group is a lock name (A-Z a-z 0-9 . _ - / : =) of at most 247 "
                        "characters",
                        f, g.name, 0);
        if ((unsigned)g.cancel > SL_CANCEL_IN_PROGRESS)
            return fail(err, SL_EINVAL, "cancel is none, pending or in-progress", f, g.name, 0);
        memcpy(name, "group/", 6);
        memcpy(name + 6, g.name, gl + 1);
        sl_lock_req lr = {SL_KIND_MUTEX, name, 1, 0};
        if (sl__config_resolve(eng, name, 6 + gl))
            lr.kind = SL_KIND_SEMAPHORE;
        int rc = xadd(eng, x, &lr, 6 + gl, SL_VIA_GROUP, f, err);
        if (rc)
            return rc;
        x->locks[x->n - 1].cancel = (uint8_t)g.cancel;
    }
    return 0;
}

static int check_req(const sl_engine *eng, const sl_claim_req *req, uint64_t *idhash,
                     sl_error *err)
{
    if (!text_valid(req->id, SL_ID_MAX, true))
        return fail(err, SL_EINVAL, "a claim id is 1 to 64 printable characters", "id", NULL, 0);
    size_t idlen = strlen(req->id);
    *idhash = sl__hash_of(&eng->claims, req->id, idlen);
    if (sl__hash_find_hashed(&eng->claims, req->id, idlen, *idhash))
        return fail(err, SL_ECONFLICT, "a claim with this id exists", "id", req->id, 0);
    if (req->actor && strlen(req->actor) > SL_ACTOR_MAX)
        return fail(err, SL_EINVAL, "an actor is at most 1024 bytes", "actor", NULL, 0);
    if (req->idem && (!*req->idem || strlen(req->idem) > SL_IDEM_MAX))
        return fail(err, SL_EINVAL, "an idempotency key is 1 to 512 bytes", "idem", NULL, 0);
    if (sl__idem_taken(eng, req->idem))
        return fail(err, SL_ECONFLICT, "a claim with this idempotency key exists", "idem", NULL,
                    0);
    if (!text_valid(req->holder, SL_HOLDER_MAX, true))
        return fail(err, SL_EINVAL,
                    "holder is required: 1 to 253 printable characters naming who claims",
                    "holder", NULL, 0);
    if (req->nlocks > SL_LOCKS_MAX)
        return fail(err, SL_EINVAL, "a claim has at most 64 locks", "locks", NULL,
                    (int64_t)req->nlocks);
    if (req->ntags > SL_TAGS_MAX)
        return fail(err, SL_EINVAL, "a claim has at most 32 tags", "tags", NULL,
                    (int64_t)req->ntags);
    if (group_count(req) > SL_GROUPS_MAX)
        return fail(err, SL_EINVAL, "a claim has at most 8 groups", "groups", NULL,
                    (int64_t)group_count(req));
    if (req->nlocks == 0 && req->ntags == 0 && group_count(req) == 0)
        return fail(err, SL_EINVAL, "a claim needs at least one lock, tag or group", "locks",
                    NULL, 0);
    if ((unsigned)req->cancel > SL_CANCEL_IN_PROGRESS)
        return fail(err, SL_EINVAL, "cancel is none, pending or in-progress", "cancel", NULL, 0);
    if (req->cancel != SL_CANCEL_NONE && !req->group)
        return fail(err, SL_EINVAL, "cancel needs a group: say which claims it may cancel",
                    "cancel", NULL, 0);
    if (!text_valid(req->rebalance_key, SL_NAME_MAX, false))
        return fail(err, SL_EINVAL, "a rebalance key is at most 253 printable characters",
                    "rebalance_key", NULL, 0);
    if (req->timeout_ms < 0)
        return fail(err, SL_EINVAL, "timeout is 0 (none) or a positive duration", "timeout",
                    NULL, req->timeout_ms);
    if (sl__hash_count(&eng->claims) >= eng->opts.claims_max && !sl__oldest_ended(eng))
        return fail(err, SL_ELIMIT,
                    "the server holds as many live claims as it may; retry later",
                    NULL, NULL, (int64_t)eng->opts.claims_max);
    return 0;
}

/* `created` further back than the skew jumps the queue: only an admin, or
 * locks that all allow that much (a mutex allows none), may do it. */
static int check_backdate(const sl_engine *eng, const sl_claim_req *req, const xclaim *x,
                          int64_t now, sl_error *err)
{
    if (!req->has_created || req->backdate_any || req->created_ms >= now)
        return 0;
    int64_t back = now - req->created_ms, allowed = INT64_MAX;
    for (size_t i = 0; i < x->n; i++) {
        const sl_xlock *xl = &x->locks[i];
        const sl_config *cfg =
            xl->key[0] == 's' ? sl__config_resolve(eng, xl->key + 4, xl->keylen - 4) : NULL;
        int64_t b = cfg ? cfg->rules.backdate_ms : 0;
        if (b < allowed)
            allowed = b;
    }
    if (x->n == 0 || allowed < eng->opts.backdate_skew_ms)
        allowed = eng->opts.backdate_skew_ms;
    if (back <= allowed)
        return 0;
    fail(err, SL_EBACKDATE,
         "created lies further in the past than a claim may set it, which would put it ahead "
         "of claims that came before it; leave created out, or use an admin token, or allow it "
         "on the semaphore (backdate)",
         "created", NULL, back);
    if (err)
        err->asked = allowed;
    return SL_EBACKDATE;
}

/* A lock whose queue is full by its max_pending: the first in x, with
 * *idx its index. A claim cancelling pending claims of its group is not
 * counted against its group lock: it supersedes the waiters there. */
static const sl_lock *full_lock(const sl_engine *eng, const xclaim *x, size_t from,
                                size_t *idx)
{
    for (size_t i = from; i < x->n; i++) {
        const sl_lock *l = sl__lock_find(eng, x->locks[i].key, x->locks[i].keylen);
        if (!l || (x->locks[i].via == SL_VIA_GROUP && x->locks[i].cancel != SL_CANCEL_NONE))
            continue;
        const sl_sem_rules *r = sl__lock_rules(l);
        if (r->max_pending > 0 && l->npending >= r->max_pending) {
            *idx = i;
            return l;
        }
    }
    return NULL;
}

static int check_full(const sl_engine *eng, const xclaim *x, sl_error *err)
{
    size_t i = 0;
    for (const sl_lock *l; (l = full_lock(eng, x, i, &i)) != NULL; i++)
        if (sl__lock_rules(l)->on_full == SL_ON_FULL_REJECT) {
            fail(err, SL_EFULL,
                 "the lock's queue is full: as many claims wait as its max_pending allows, or "
                 "more (max_pending was lowered); retry later, or raise max_pending",
                 "locks", l->key, (int64_t)sl__lock_rules(l)->max_pending);
            if (err)
                err->asked = (int64_t)l->npending;
            return SL_EFULL;
        }
    return 0;
}

/* The waiter of l that came first (created, then arrival): the one a full
 * queue drops. A rebalanced lock orders its keys by their oldest waiter; a
 * strict or skip queue is in priority order first, so it is scanned (a full
 * queue is max_pending long, unless max_pending was lowered since). */
static sl_claim *oldest_waiter(const sl_lock *l)
{
    if (l->strategy == SL_REBALANCED) {
        const sl_rkey *rk = sl__container_of(sl__tree_first(&l->rkey_order), sl_rkey, onode);
        return sl__container_of(sl__tree_first(&rk->pending), sl_centry, u.node)->claim;
    }
    sl_claim *best = NULL;
    for (sl_tnode *t = sl__tree_first(&l->queue); t; t = sl__tree_next(t)) {
        sl_claim *c = sl__container_of(t, sl_centry, u.node)->claim;
        if (!best || sl__claim_age_order(c, best) < 0)
            best = c;
    }
    return best;
}

/* drop_oldest: supersedes the oldest waiters of c's full queues, so that
 * with c they hold max_pending. */
static void make_room(sl_engine *eng, const xclaim *x, const sl_claim *c, int64_t now)
{
    size_t i = 0;
    for (const sl_lock *l; (l = full_lock(eng, x, i, &i)) != NULL;) {
        sl_claim *v = oldest_waiter(l);
        sl__claim_end(eng, v, SL_SUPERSEDED, SL_REASON_QUEUE_FULL, c->id, now);
    }
}

static size_t opt_len(const char *s)
{
    return s && *s ? strlen(s) + 1 : 0;
}

static char *put(char **p, const char *s, size_t len)
{
    char *at = *p;
    memcpy(at, s, len);
    at[len] = '\0';
    *p += len + 1;
    return at;
}

sl_claim *sl__claim_alloc(sl_engine *eng, const sl_claim_req *req, const sl_xlock *x, size_t n)
{
    const char *group = group_count(req) > 0 ? group_at(req, 0).name : NULL;
    size_t strings = strlen(req->id) + 1 + strlen(req->holder) + 1 + opt_len(group) +
                     opt_len(req->rebalance_key);
    for (size_t i = 0; i < n; i++)
        strings += x[i].keylen + 1;
    for (size_t i = 0; i < req->ntags; i++)
        strings += strlen(req->tags[i].key) + strlen(req->tags[i].value) + 2;
    size_t head = sizeof(sl_claim) + n * sizeof(sl_centry);
    sl_claim *c = sl__calloc(&eng->mem, 1, head + req->ntags * sizeof(sl_tag) + strings);
    c->tags = (sl_tag *)(void *)((char *)c + head);
    char *p = (char *)(c->tags + req->ntags);
    c->idlen = (uint16_t)strlen(req->id);
    c->id = put(&p, req->id, c->idlen);
    c->holder = put(&p, req->holder, strlen(req->holder));
    if (opt_len(group))
        c->group = put(&p, group, strlen(group));
    if (opt_len(req->rebalance_key))
        c->rkey = put(&p, req->rebalance_key, strlen(req->rebalance_key));
    c->nlocks = (uint16_t)n;
    for (size_t i = 0; i < n; i++) {
        c->e[i].claim = c;
        c->e[i].key = put(&p, x[i].key, x[i].keylen);
        c->e[i].slots = x[i].slots;
        c->e[i].via = (uint8_t)x[i].via;
        c->e[i].inl = x[i].inline_limit;
        c->e[i].cancel = x[i].cancel;
    }
    c->ntags = (uint16_t)req->ntags;
    for (size_t i = 0; i < req->ntags; i++) {
        c->tags[i].key = put(&p, req->tags[i].key, strlen(req->tags[i].key));
        c->tags[i].value = put(&p, req->tags[i].value, strlen(req->tags[i].value));
    }
    return c;
}

/* Indexes the claim and puts it in the list of every claim, which stays in
 * arrival order (restore.c links restored claims itself). */
void sl__claim_link(sl_engine *eng, sl_claim *c, uint64_t idhash)
{
    sl__hash_insert_hashed(&eng->claims, &c->hnode, idhash);
    sl_claim *after = eng->ctail;
    while (after && after->arrival > c->arrival)
        after = after->prev;
    c->prev = after;
    c->next = after ? after->next : eng->chead;
    if (c->next)
        c->next->prev = c;
    else
        eng->ctail = c;
    if (after)
        after->next = c;
    else
        eng->chead = c;
    sl__timer_init(&c->timer, c->arrival);
}

/* The lease a claim gets when it names none: the shortest lease configured
 * on its semaphores, else the engine's default. */
static int64_t default_lease(const sl_engine *eng, const xclaim *x)
{
    int64_t best = 0;
    for (size_t i = 0; i < x->n; i++)
        if (x->locks[i].cfg_lease > 0 && (best == 0 || x->locks[i].cfg_lease < best))
            best = x->locks[i].cfg_lease;
    return best > 0 ? best : eng->opts.default_lease_ms;
}

/* Puts a claim into the queues of its locks and the global order. */
static void claim_enqueue(sl_engine *eng, sl_claim *c)
{
    for (size_t i = 0; i < c->nlocks; i++) {
        sl_centry *e = &c->e[i];
        e->lock = sl__lock_get(eng, e->key, strlen(e->key));
        sl__lock_set_inline(eng, e->lock, e->inl);
        sl__queue_add(eng, e);
    }
    sl__pending_add(eng, c);
}

int sl_claim_create(sl_engine *eng, const sl_claim_req *req, int64_t now, sl_claim **out,
                    sl_error *err)
{
    sl_engine_advance(eng, now);
    uint64_t idhash;
    int rc = check_req(eng, req, &idhash, err);
    if (rc)
        return rc;
    xclaim xc = {sl__xlocks(eng), 0, req}, *x = &xc;
    rc = expand_locks(eng, req, x, err);
    if (!rc)
        rc = expand_tags(eng, req, x, err);
    if (!rc)
        rc = expand_groups(eng, req, x, err);
    if (!rc && x->n == 0 && req->allow && !req->allow(req->allow_ud, NULL))
        rc = fail(err, SL_EFORBIDDEN, "the access rules refuse a claim that takes no lock",
                  "holder", NULL, 0);
    if (!rc)
        rc = check_backdate(eng, req, x, now, err);
    if (!rc)
        rc = check_full(eng, x, err);
    if (rc)
        return rc;
    if (sl__hash_count(&eng->claims) >= eng->opts.claims_max)
        sl__purge_early(eng, sl__oldest_ended(eng)); /* found by check_req */
    sl_claim *c = sl__claim_alloc(eng, req, x->locks, x->n);
    c->acting = true;
    c->state = SL_PENDING;
    c->priority = req->priority;
    c->arrived = c->life = now;
    c->created = req->has_created ? req->created_ms : now;
    c->arrival = eng->next_arrival++;
    c->cancel = group_count(req) > 0 ? (uint8_t)group_at(req, 0).cancel : SL_CANCEL_NONE;
    c->grace = req->grace_ms >= 0 ? req->grace_ms : eng->opts.default_grace_ms;
    c->lease = req->lease_ms >= 0 ? req->lease_ms : default_lease(eng, x);
    c->timeout = req->timeout_ms;
    c->granted = c->revoke_at = c->ended = -1;
    sl__claim_link(eng, c, idhash);
    sl__idem_attach(eng, c, req->idem, req->idem_fp);
    sl__actor_attach(eng, c, req->actor);
    sl__event_add(eng, SL_EV_CLAIM_QUEUED, c, now);
    sl__group_cancel(eng, c, now);
    make_room(eng, x, c, now);
    claim_enqueue(eng, c);
    sl__claim_touch(eng, c);
    sl__claim_rearm(eng, c);
    if (c->nlocks == 0)
        sl__queue_grant_now(eng, c, now);
    else
        sl__settle(eng, now);
    if (c->state == SL_PENDING) {
        sl_event *ev = sl__event_add(eng, SL_EV_CLAIM_WAITING, c, now);
        ev->rule = sl_claim_main_rule(eng, c, &ev->rule_lock);
    }
    c->acting = false;
    *out = c;
    return 0;
}

sl_xlock *sl__xlocks(sl_engine *eng)
{
    return eng->xlocks;
}

void sl__claim_touch(sl_engine *eng, sl_claim *c)
{
    if (c->dirty)
        return;
    c->dirty = true;
    sl__pvec_push(&eng->mem, &eng->chg_claims, c);
}

static sl_event_type end_event(sl_state s)
{
    switch (s) {
    case SL_RELEASED:
        return SL_EV_CLAIM_RELEASED;
    case SL_WITHDRAWN:
        return SL_EV_CLAIM_WITHDRAWN;
    case SL_EXPIRED:
        return SL_EV_CLAIM_EXPIRED;
    case SL_TIMED_OUT:
        return SL_EV_CLAIM_TIMED_OUT;
    case SL_SUPERSEDED:
        return SL_EV_CLAIM_SUPERSEDED;
    default:
        return SL_EV_CLAIM_CANCELED;
    }
}

/* Ends a live claim: takes it out of its queues or frees its slots, and
 * records how it ended. The caller settles afterwards, so that one call can
 * end several claims before anyone is let in. */
void sl__claim_end(sl_engine *eng, sl_claim *c, sl_state state, sl_reason reason,
                   const char *by, int64_t now)
{
    if (c->state == SL_PENDING) {
        for (size_t i = 0; i < c->nlocks; i++)
            sl__queue_remove(eng, &c->e[i]);
        sl__pending_remove(eng, c);
    } else {
        for (size_t i = 0; i < c->nlocks; i++)
            sl__lock_holder_remove(eng, &c->e[i]);
        eng->nheld--;
    }
    for (size_t i = 0; i < c->nlocks; i++) {
        sl__lock_check_idle(eng, c->e[i].lock);
        c->e[i].lock = NULL;
    }
    c->state = (uint8_t)state;
    c->reason = (uint8_t)reason;
    if (by && !c->by)
        c->by = sl__strndup(&eng->mem, by, strlen(by));
    c->ended = now;
    c->revoke_at = -1;
    eng->nended++;
    sl__actor_ended(c);
    sl_event *ev = sl__event_add(eng, end_event(state), c, now);
    ev->reason = reason;
    sl__claim_touch(eng, c);
    sl__claim_rearm(eng, c);
}

static void release(sl_engine *eng, sl_claim *c, sl_reason reason, int64_t now)
{
    switch ((sl_state)c->state) {
    case SL_PENDING:
        sl__claim_end(eng, c, SL_WITHDRAWN,
                      reason == SL_REASON_CLIENT_GONE ? reason : SL_REASON_WITHDRAWN, NULL, now);
        break;
    case SL_HELD:
        sl__claim_end(eng, c, SL_RELEASED,
                      reason == SL_REASON_CLIENT_GONE ? reason : SL_REASON_RELEASED, NULL, now);
        break;
    case SL_REVOKING:
        sl__claim_end(eng, c, SL_CANCELED,
                      c->reason == SL_REASON_PREEMPTED ? SL_REASON_PREEMPTED
                                                       : SL_REASON_REVOKED_FREED,
                      NULL, now);
        break;
    default:
        return;
    }
    sl__settle(eng, now);
}

int sl_claim_release(sl_engine *eng, sl_claim *c, sl_reason reason, int64_t now)
{
    sl_engine_advance(eng, now);
    c->acting = true;
    release(eng, c, reason, now);
    c->acting = false;
    return 0;
}

int sl_claim_cancel(sl_engine *eng, sl_claim *c, int64_t now)
{
    sl_engine_advance(eng, now);
    if (sl_state_ended((sl_state)c->state))
        return SL_ECONFLICT;
    c->acting = true;
    sl__claim_end(eng, c, SL_CANCELED, SL_REASON_OPERATOR, NULL, now);
    c->acting = false;
    sl__settle(eng, now);
    return 0;
}

int sl_claim_renew(sl_engine *eng, sl_claim *c, int64_t now)
{
    sl_engine_advance(eng, now);
    if (c->state != SL_PENDING && c->state != SL_HELD)
        return SL_ECONFLICT;
    c->life = now;
    c->acting = true;
    sl__event_add(eng, SL_EV_CLAIM_RENEWED, c, now);
    c->acting = false;
    sl__claim_touch(eng, c);
    sl__claim_rearm(eng, c);
    return 0;
}

/* Fires no timers and records no change, so the server may call it while
 * it answers a committed batch. An ended claim's purge does not wait. */
void sl_claim_watch(sl_engine *eng, sl_claim *c, int delta, int64_t now)
{
    c->watchers += delta;
    if (c->watchers < 0)
        c->watchers = 0;
    if (sl_state_ended((sl_state)c->state))
        return;
    if (now > c->life)
        c->life = now;
    sl__claim_rearm(eng, c);
}

void sl__claim_free(sl_engine *eng, sl_claim *c)
{
    sl__idem_free(eng, c);
    sl__actor_free(eng, c);
    sl__claim_seqs_free(eng, c);
    sl__free(&eng->mem, c->by);
    sl__free(&eng->mem, c);
}

/* ---- lookups and views --------------------------------------------------- */

sl_claim *sl_claim_find(const sl_engine *eng, const char *id)
{
    sl_hnode *n = id ? sl__hash_find(&eng->claims, id, strlen(id)) : NULL;
    return n ? sl__container_of(n, sl_claim, hnode) : NULL;
}

void sl_claim_get(const sl_claim *c, sl_claim_view *out)
{
    memset(out, 0, sizeof(*out));
    out->id = c->id;
    out->holder = c->holder;
    out->state = (sl_state)c->state;
    out->priority = c->priority;
    out->created_ms = c->created;
    out->arrived_ms = c->arrived;
    out->arrival = c->arrival;
    out->rebalance_key = c->rkey;
    out->group = c->group;
    out->cancel = (sl_cancel)c->cancel;
    out->grace_ms = c->grace;
    out->lease_ms = c->lease;
    out->timeout_ms = c->timeout;
    out->life_ms = c->life;
    bool live = !sl_state_ended((sl_state)c->state);
    out->expires_ms = live && c->lease > 0 ? c->life + c->lease : -1;
    out->granted_ms = c->granted;
    out->grant_seq = c->grant_seq;
    out->revoke_at_ms = c->revoke_at;
    out->ended_ms = c->ended;
    out->reason = (sl_reason)c->reason;
    out->by = c->by;
    out->watchers = c->watchers;
    out->nlocks = c->nlocks;
    sl__idem_view(c, &out->idem, &out->idem_fp);
    out->actor = sl__actor_name(c);
    out->ntags = c->ntags;
}

void sl_claim_lock_peek(const sl_claim *c, size_t i, sl_claim_lock_view *out)
{
    const sl_centry *e = &c->e[i];
    out->kind = e->key[0] == 'm' ? SL_KIND_MUTEX : SL_KIND_SEMAPHORE;
    out->key = e->key;
    out->name = e->key + 4;
    out->slots = e->slots;
    out->via = (sl_via)e->via;
    out->token = e->token;
    out->position = 0;
    out->inline_limit = e->inl;
    out->cancel = (sl_cancel)e->cancel;
}

void sl_claim_lock_get(sl_engine *eng, const sl_claim *c, size_t i, sl_claim_lock_view *out)
{
    sl_claim_lock_peek(c, i, out);
    if (c->state == SL_PENDING)
        out->position = sl__queue_position(eng, &c->e[i]);
}

void sl_claim_set_udata(sl_claim *c, void *udata)
{
    c->udata = udata;
}

void *sl_claim_udata(const sl_claim *c)
{
    return c->udata;
}

void sl_claim_tag_get(const sl_claim *c, size_t i, sl_tag *out)
{
    *out = c->tags[i];
}
