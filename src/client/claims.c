/* claims.c - /v1/claims and /v1/queue: create (with its long poll), read
 * and wait, renew, release, an operator's cancel, a release by holder
 * prefix, why, and the listings. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "client_int.h"

/* Checks the common arguments of a call on one claim. */
static int claim_args(sl_client *c, const char *id, void *out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    if (!id || !*id)
        return sl__err_set(err, SL_CLIENT_EINVAL, "a claim id is required");
    return SL_CLIENT_OK;
}

/* "/v1/claims/ID" plus suffix ("/renew", "?wait=...", ...). */
static void claim_path(sl__buf *b, const char *id, const char *suffix)
{
    sl__buf_str(b, "/v1/claims/");
    sl__buf_escape(b, id, false);
    sl__buf_str(b, suffix);
}

/* Runs a request whose answer is one claim (2xx) into *out. */
static int claim_request(sl_client *c, const char *method, sl__buf *path, json_t *body,
                         long timeout_ms, sl_client_claim **out, sl_client_error *err)
{
    if (path->oom) {
        sl__buf_free(path);
        return sl__err_oom(err);
    }
    json_t *root = NULL;
    int rc = sl__http_json(c, method, path->p, body, timeout_ms, &root, err);
    sl__buf_free(path);
    if (rc == SL_CLIENT_OK)
        rc = sl__claim_new(root, out, err);
    json_decref(root);
    return rc;
}

/* ---- create ------------------------------------------------------------------- */

static int set_str(json_t *o, const char *key, const char *value)
{
    if (!value)
        return 0;
    return json_object_set_new(o, key, json_string(value));
}

/* One lock of the request; NULL when out of memory. */
static json_t *lock_json(const sl_client_lock_req *l)
{
    json_t *lo = json_object();
    int bad = !lo || json_object_set_new(lo, l->semaphore ? "semaphore" : "mutex",
                                         json_string(l->name)) != 0;
    if (!bad && l->slots > 0)
        bad = json_object_set_new(lo, "slots", json_integer((json_int_t)l->slots)) != 0;
    /* A mutex's limit is sent too: the server says why it takes none. */
    if (!bad && l->limit > 0)
        bad = json_object_set_new(lo, "limit", json_integer((json_int_t)l->limit)) != 0;
    if (bad) {
        json_decref(lo);
        return NULL;
    }
    return lo;
}

/* req->groups into the body's "groups" (left out when there are none). */
static int groups_json(const sl_client_claim_req *req, json_t *o, sl_client_error *err)
{
    if (req->ngroups == 0)
        return SL_CLIENT_OK;
    if (!req->groups)
        return sl__err_set(err, SL_CLIENT_EINVAL, "ngroups is %zu but groups is NULL",
                           req->ngroups);
    json_t *arr = json_array();
    if (!arr || json_object_set_new(o, "groups", arr) != 0)
        return sl__err_oom(err);
    for (size_t i = 0; i < req->ngroups; i++) {
        const sl_client_group_req *g = &req->groups[i];
        if (!g->name || !*g->name)
            return sl__err_set(err, SL_CLIENT_EINVAL, "groups[%zu]: a group needs a name", i);
        json_t *go = json_object();
        if (json_array_append_new(arr, go) != 0 || !go ||
            json_object_set_new(go, "name", json_string(g->name)) != 0 ||
            set_str(go, "cancel", g->cancel) != 0)
            return sl__err_oom(err);
    }
    return SL_CLIENT_OK;
}

/* The request body into *out; EINVAL when a field is unusable. */
static int claim_body(const sl_client_claim_req *req, json_t **out, sl_client_error *err)
{
    *out = NULL;
    json_t *o = json_object();
    json_t *locks = json_array();
    json_t *tags = json_object();
    int bad = !o || !locks || !tags;
    for (size_t i = 0; !bad && i < req->nlocks; i++) {
        const sl_client_lock_req *l = &req->locks[i];
        if (!l->name) {
            json_decref(o);
            json_decref(locks);
            json_decref(tags);
            return sl__err_set(err, SL_CLIENT_EINVAL, "locks[%zu]: a lock needs a name", i);
        }
        bad = json_array_append_new(locks, lock_json(l)) != 0;
    }
    for (size_t i = 0; !bad && i < req->ntags; i++) {
        const sl_client_tag_req *t = &req->tags[i];
        if (!t->key || !t->value) {
            json_decref(o);
            json_decref(locks);
            json_decref(tags);
            return sl__err_set(err, SL_CLIENT_EINVAL, "tags[%zu]: a tag needs a key and a value",
                               i);
        }
        bad = json_object_set_new(tags, t->key, json_string(t->value)) != 0;
    }
    if (!bad)
        bad = set_str(o, "holder", req->holder) ||
              (req->nlocks && json_object_set(o, "locks", locks)) ||
              (req->ntags && json_object_set(o, "tags", tags)) ||
              json_object_set_new(o, "priority", json_integer(req->priority)) ||
              set_str(o, "group", req->group) || set_str(o, "cancel", req->cancel) ||
              set_str(o, "grace", req->grace) || set_str(o, "created", req->created) ||
              set_str(o, "rebalance_key", req->rebalance_key) || set_str(o, "lease", req->lease) ||
              set_str(o, "timeout", req->timeout);
    /* The wait is set by each attempt (sl__call_json): a retry waits the rest. */
    json_decref(locks);
    json_decref(tags);
    if (bad) {
        json_decref(o);
        return sl__err_oom(err);
    }
    int rc = groups_json(req, o, err);
    if (rc != SL_CLIENT_OK) {
        json_decref(o);
        return rc;
    }
    *out = o;
    return SL_CLIENT_OK;
}

/* Attempts of one creation when the connection breaks, and the pauses
 * between them: a server restarting or a connection reset mid-answer. */
#define CREATE_ATTEMPTS 3
static const long create_pause_ms[CREATE_ATTEMPTS - 1] = {200, 800};

void sl_client_idempotency_key(char buf[33])
{
    unsigned char r[16];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        /* No entropy: a key unique to this process and moment is enough,
         * since keys are scoped by token and only need to differ. */
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t a = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30);
        uint64_t b = (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ (uint64_t)(uintptr_t)buf;
        memcpy(r, &a, 8);
        memcpy(r + 8, &b, 8);
    }
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < sizeof(r); i++) {
        buf[2 * i] = hex[r[i] >> 4];
        buf[2 * i + 1] = hex[r[i] & 15];
    }
    buf[32] = '\0';
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* POST /v1/claims with the key, again with the same key while the
 * connection breaks: a claim the server made before the break is found,
 * never doubled. With a list of servers the failover does the same across
 * them (sl__call_json), so the attempts here are one server's. */
static int create_with_key(sl_client *c, json_t *body, int64_t wait_ms, const char *key,
                           sl_client_claim **out, sl_client_error *err)
{
    int rc = SL_CLIENT_ECONNECT;
    int attempts = c->nservers > 1 ? 1 : CREATE_ATTEMPTS;
    sl__call call = {.method = "POST", .path = "/v1/claims", .body = body, .wait_ms = wait_ms,
                     .idem_key = key};
    for (int attempt = 0; attempt < attempts; attempt++) {
        if (attempt > 0)
            pause_ms(create_pause_ms[attempt - 1]);
        json_t *root = NULL;
        sl__err_clear(err);
        rc = sl__call_json(c, &call, &root, err);
        if (rc == SL_CLIENT_OK)
            rc = sl__claim_new(root, out, err);
        json_decref(root);
        if (rc != SL_CLIENT_ECONNECT)
            break;
    }
    return rc;
}

int sl_client_claim_create(sl_client *c, const sl_client_claim_req *req, sl_client_claim **out,
                           sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !req || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL,
                           "the client, request and result must not be NULL");
    *out = NULL;
    if (!req->holder || !*req->holder)
        return sl__err_set(err, SL_CLIENT_EINVAL, "holder is required: who the claim is for");
    if ((req->nlocks && !req->locks) || (req->ntags && !req->tags) || req->wait_ms < 0)
        return sl__err_set(err, SL_CLIENT_EINVAL,
                           "locks and tags must be given with their counts; wait_ms >= 0");
    const char *texts[] = {req->holder,  req->group,         req->cancel, req->grace,
                           req->created, req->rebalance_key, req->lease,  req->timeout};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        if (texts[i] && !sl__utf8_valid(texts[i]))
            return sl__err_set(err, SL_CLIENT_EINVAL, "\"%s\" is not UTF-8", texts[i]);
    for (size_t i = 0; i < req->nlocks; i++)
        if (req->locks[i].name && !sl__utf8_valid(req->locks[i].name))
            return sl__err_set(err, SL_CLIENT_EINVAL, "locks[%zu]: the name is not UTF-8", i);
    for (size_t i = 0; i < req->ntags; i++)
        if ((req->tags[i].key && !sl__utf8_valid(req->tags[i].key)) ||
            (req->tags[i].value && !sl__utf8_valid(req->tags[i].value)))
            return sl__err_set(err, SL_CLIENT_EINVAL, "tags[%zu] is not UTF-8", i);
    size_t klen = req->idempotency_key ? strlen(req->idempotency_key) : 0;
    for (size_t i = 0; i < klen; i++)
        if (req->idempotency_key[i] < 0x20 || req->idempotency_key[i] >= 0x7f)
            klen = 0;
    if (req->idempotency_key && (klen == 0 || klen > 128))
        return sl__err_set(err, SL_CLIENT_EINVAL,
                           "an idempotency key is 1 to 128 printable ASCII characters");
    json_t *body = NULL;
    int rc = claim_body(req, &body, err);
    if (rc != SL_CLIENT_OK)
        return rc;
    char made[33];
    if (!req->idempotency_key)
        sl_client_idempotency_key(made);
    rc = create_with_key(c, body, req->wait_ms, req->idempotency_key ? req->idempotency_key : made,
                         out, err);
    json_decref(body);
    return rc;
}

/* ---- read, wait, renew, release ------------------------------------------------- */

int sl__claim_get(sl_client *c, const char *id, int64_t wait_ms, const char *seen, long slack_ms,
                  sl_client_claim **out, sl_client_error *err)
{
    int rc = claim_args(c, id, out, err);
    if (rc != SL_CLIENT_OK)
        return rc;
    *out = NULL;
    sl__buf path = {0};
    claim_path(&path, id, "");
    if (wait_ms > 0)
        sl__buf_query(&path, "seen", seen);
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    /* The wait goes on the call, not the path: a failover resumes it. */
    sl__call call = {.method = "GET", .path = path.p, .wait_ms = wait_ms > 0 ? wait_ms : 0,
                     .slack_ms = slack_ms};
    json_t *root = NULL;
    rc = sl__call_json(c, &call, &root, err);
    sl__buf_free(&path);
    if (rc == SL_CLIENT_OK)
        rc = sl__claim_new(root, out, err);
    json_decref(root);
    return rc;
}

int sl_client_claim_get(sl_client *c, const char *id, int64_t wait_ms, const char *seen,
                        sl_client_claim **out, sl_client_error *err)
{
    return sl__claim_get(c, id, wait_ms, seen, SL__WAIT_SLACK_MS, out, err);
}

int sl_client_claim_renew(sl_client *c, const char *id, sl_client_claim **out, sl_client_error *err)
{
    int rc = claim_args(c, id, out, err);
    if (rc != SL_CLIENT_OK)
        return rc;
    *out = NULL;
    sl__buf path = {0};
    claim_path(&path, id, "/renew");
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    json_t *root = NULL;
    rc = sl__http_json(c, "POST", path.p, NULL, 0, &root, err);
    sl__buf_free(&path);
    if (rc == SL_CLIENT_OK) {
        rc = sl__claim_new(root, out, err);
    } else if (rc == SL_CLIENT_EHTTP && json_is_object(json_object_get(root, "claim"))) {
        /* 409: revoking or ended. The claim tells the caller which; err keeps
         * the server's message unless the claim cannot be read. */
        sl_client_error perr;
        if (sl__claim_new(json_object_get(root, "claim"), out, &perr) == SL_CLIENT_ENOMEM)
            rc = sl__err_oom(err);
    }
    json_decref(root);
    return rc;
}

/* A call that ends a claim (release, cancel): the final claim into *out,
 * which may be NULL when the caller does not want it. */
static int end_claim(sl_client *c, const char *id, const char *method, const char *suffix,
                     sl_client_claim **out, sl_client_error *err)
{
    sl_client_claim *dummy = NULL;
    int rc = claim_args(c, id, out ? (void *)out : (void *)&dummy, err);
    if (rc != SL_CLIENT_OK)
        return rc;
    if (out)
        *out = NULL;
    sl__buf path = {0};
    claim_path(&path, id, suffix);
    rc = claim_request(c, method, &path, NULL, 0, out ? out : &dummy, err);
    sl_client_claim_free(dummy);
    return rc;
}

int sl_client_claim_release(sl_client *c, const char *id, sl_client_claim **out,
                            sl_client_error *err)
{
    return end_claim(c, id, "DELETE", "", out, err);
}

int sl_client_claim_cancel(sl_client *c, const char *id, sl_client_claim **out,
                           sl_client_error *err)
{
    return end_claim(c, id, "POST", "/cancel", out, err);
}

/* ---- release by holder prefix ----------------------------------------------------- */

int sl_client_claims_release(sl_client *c, const char *holder_prefix, sl_client_release_counts *out,
                             sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    memset(out, 0, sizeof(*out));
    /* An empty prefix would be every claim's: refused here as by the server. */
    if (!holder_prefix || !*holder_prefix)
        return sl__err_set(err, SL_CLIENT_EINVAL, "a holder prefix is required (e.g. \"RUN/\")");
    sl__buf path = {0};
    sl__buf_str(&path, "/v1/claims");
    sl__buf_query(&path, "holder_prefix", holder_prefix);
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    json_t *root = NULL;
    int rc = sl__http_json(c, "DELETE", path.p, NULL, 0, &root, err);
    sl__buf_free(&path);
    if (rc == SL_CLIENT_OK)
        rc = sl__parse_release_counts(root, out, err);
    json_decref(root);
    return rc;
}

/* ---- clearing a queue --------------------------------------------------------------- */

int sl_client_queue_clear(sl_client *c, const char *lock, const char *holder_prefix,
                          sl_client_queue_cleared *out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    memset(out, 0, sizeof(*out));
    /* Without either the call would be the whole queue's: the server
     * refuses it, and so does the library, before any request. */
    if (!lock && !holder_prefix)
        return sl__err_set(err, SL_CLIENT_EINVAL,
                           "a lock (\"sem/NAME\", \"mtx/NAME\"), a holder prefix or both "
                           "are required");
    if ((lock && !*lock) || (holder_prefix && !*holder_prefix))
        return sl__err_set(err, SL_CLIENT_EINVAL, "the %s must not be empty",
                           lock && !*lock ? "lock" : "holder prefix");
    sl__buf path = {0};
    sl__buf_str(&path, "/v1/queue");
    sl__buf_query(&path, "lock", lock); /* each left out when NULL */
    sl__buf_query(&path, "holder_prefix", holder_prefix);
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    json_t *root = NULL;
    int rc = sl__http_json(c, "DELETE", path.p, NULL, 0, &root, err);
    sl__buf_free(&path);
    if (rc == SL_CLIENT_OK)
        rc = sl__parse_queue_cleared(root, out, err);
    json_decref(root);
    return rc;
}

/* ---- why ---------------------------------------------------------------------- */

int sl_client_claim_why(sl_client *c, const char *id, sl_client_why **out, sl_client_error *err)
{
    int rc = claim_args(c, id, out, err);
    if (rc != SL_CLIENT_OK)
        return rc;
    *out = NULL;
    sl__buf path = {0};
    claim_path(&path, id, "/why");
    if (path.oom) {
        sl__buf_free(&path);
        return sl__err_oom(err);
    }
    json_t *root = NULL;
    rc = sl__http_json(c, "GET", path.p, NULL, 0, &root, err);
    sl__buf_free(&path);
    if (rc == SL_CLIENT_OK) {
        sl_client_why *w = malloc(sizeof(*w));
        if (!w)
            rc = sl__err_oom(err);
        else if ((rc = sl__parse_why(root, w, err)) != SL_CLIENT_OK)
            free(w);
        else
            *out = w;
    }
    json_decref(root);
    return rc;
}

/* ---- listings ------------------------------------------------------------------ */

/* Appends one page's claims to out. */
static int append_page(const json_t *arr, sl_client_claim_list *out, sl_client_error *err)
{
    sl_client_claim_list page;
    int rc = sl__parse_claims(arr, &page, err);
    if (rc != SL_CLIENT_OK || page.n == 0)
        return rc;
    sl_client_claim *grown = realloc(out->items, (out->n + page.n) * sizeof(*grown));
    if (!grown) {
        sl_client_claim_list_free(&page);
        return sl__err_oom(err);
    }
    memcpy(grown + out->n, page.items, page.n * sizeof(*grown));
    out->items = grown;
    out->n += page.n;
    free(page.items); /* the claims now belong to out */
    return SL_CLIENT_OK;
}

/* Entries asked for a page: the server's most (tests ask for fewer, to
 * see pages without making ten thousand claims). */
unsigned sl__list_page_size = 10000;

/* A listing of every page: the server answers at most 10 000 entries a
 * page and a "next" cursor while more remain (docs/api.md). */
static int claim_listing(sl_client *c, sl__buf *path, const char *field, sl_client_claim_list *out,
                         sl_client_error *err)
{
    char *next = NULL;
    int rc = SL_CLIENT_OK;
    while (rc == SL_CLIENT_OK) {
        sl__buf page = {0};
        sl__buf_str(&page, path->p ? path->p : "");
        char limit[16];
        snprintf(limit, sizeof(limit), "%u", sl__list_page_size);
        sl__buf_query(&page, "limit", limit);
        sl__buf_query(&page, "after", next);
        free(next);
        next = NULL;
        if (path->oom || page.oom) {
            sl__buf_free(&page);
            rc = sl__err_oom(err);
            break;
        }
        json_t *root = NULL;
        rc = sl__http_json(c, "GET", page.p, NULL, 0, &root, err);
        sl__buf_free(&page);
        if (rc == SL_CLIENT_OK) {
            const json_t *arr = json_object_get(root, field);
            const json_t *more = json_object_get(root, "next");
            if (!json_is_array(arr))
                rc = sl__err_set(err, SL_CLIENT_EPROTO, "the answer has no \"%s\" array", field);
            else
                rc = append_page(arr, out, err);
            if (rc == SL_CLIENT_OK && json_is_string(more) &&
                !(next = strdup(json_string_value(more))))
                rc = sl__err_oom(err);
        }
        json_decref(root);
        if (!next)
            break;
    }
    free(next);
    sl__buf_free(path);
    if (rc != SL_CLIENT_OK)
        sl_client_claim_list_free(out);
    return rc;
}

int sl_client_claims(sl_client *c, const char *state, const char *holder, const char *lock,
                     sl_client_claim_list *out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    out->items = NULL;
    out->n = 0;
    sl__buf path = {0};
    sl__buf_str(&path, "/v1/claims");
    sl__buf_query(&path, "state", state);
    sl__buf_query(&path, "holder", holder);
    sl__buf_query(&path, "lock", lock);
    return claim_listing(c, &path, "claims", out, err);
}

int sl_client_queue(sl_client *c, const char *lock, sl_client_claim_list *out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    out->items = NULL;
    out->n = 0;
    sl__buf path = {0};
    sl__buf_str(&path, "/v1/queue");
    sl__buf_query(&path, "lock", lock);
    return claim_listing(c, &path, "queue", out, err);
}
