/* keeper.c - keeps a held claim's lease alive on a thread of its own.
 *
 * The thread has its own sl_client (a client is used from one thread at a
 * time) and spends its life in a long poll on the claim: GET
 * ?wait=...&seen=held. A wait is a sign of life to the server (the lease
 * cannot run out while it waits) and it answers at once when the claim
 * changes state, so a revocation is heard the moment it happens. Every
 * lease/3 it renews, which is what docs/api.md promises to honour even where a
 * wait would do.
 *
 * When nothing gets through (refused, reset, a hung server, 503, or any
 * error answer but 404 and renew's 409, which say the claim is gone) it retries
 * after the retry pause, and once a whole lease has passed since the last
 * request that got through, from when that request was sent, the claim must
 * be presumed lost: the server may have expired it and granted its slots to
 * someone else. Times are taken at the start of a request, so the keeper
 * errs early, never late.
 *
 * Stopping sets a flag, signals the condition the pauses sleep on, and
 * wakes the client's multi handle (curl_multi_wakeup), which abandons a
 * long poll at once. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"

/* The time a keeper's request may take beyond its wait: a third of the
 * lease (so that a hung server is noticed within it), within these bounds. */
#define SLACK_MIN_MS 1000
#define SLACK_MAX_MS SL__WAIT_SLACK_MS

struct sl_client_keeper {
    pthread_t thread;
    sl_client *c;
    char *id;
    int64_t lease_ms;
    long slack_ms;
    sl_client_retry retry;
    sl_client_lost_fn lost;
    void *ud;
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* on CLOCK_MONOTONIC */
};

static bool stopping(sl_client_keeper *k)
{
    return atomic_load(&k->stop) != 0;
}

/* Sleeps ms, or less when the keeper is stopped meanwhile. */
static void pause_ms(sl_client_keeper *k, int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(ms / 1000);
    until.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&k->mu);
    while (!stopping(k) && pthread_cond_timedwait(&k->cv, &k->mu, &until) == 0) {
    }
    pthread_mutex_unlock(&k->mu);
}

/* Tells the owner, once. */
static void report(sl_client_keeper *k, sl_client_lost why, const sl_client_claim *claim,
                   const sl_client_error *err)
{
    if (k->lost && !stopping(k))
        k->lost(k->ud, why, claim, err);
}

/* Reads an answer's state: true when the claim is lost (reported). */
static bool judge(sl_client_keeper *k, const sl_client_claim *claim, const sl_client_error *err)
{
    if (strcmp(claim->state, "revoking") == 0) {
        report(k, SL_CLIENT_LOST_REVOKED, claim, err);
        return true;
    }
    if (sl_client_state_ended(claim->state)) {
        report(k, SL_CLIENT_LOST_ENDED, claim, err);
        return true;
    }
    return false;
}

static void *keeper_main(void *arg)
{
    sl_client_keeper *k = arg;
    uint64_t seed = sl__seed(k);
    int64_t third = k->lease_ms / 3 > 0 ? k->lease_ms / 3 : 1;
    int64_t last_ok = sl__now_ms();
    int64_t next_renew = k->lease_ms > 0 ? last_ok + third : INT64_MAX;
    char seen[16] = "held";
    sl_client_error e;
    sl__err_clear(&e);
    while (!stopping(k)) {
        int64_t now = sl__now_ms();
        if (k->lease_ms > 0 && now - last_ok >= k->lease_ms) {
            sl_client_error u;
            sl__err_set(&u, e.rc ? e.rc : SL_CLIENT_ECONNECT,
                        "claim %s: nothing got through to the server for its whole lease "
                        "(%lld ms), so it may have expired; last failure: %s",
                        k->id, (long long)k->lease_ms, e.message[0] ? e.message : "none");
            u.status = e.status;
            memcpy(u.code, e.code, sizeof(u.code));
            report(k, SL_CLIENT_LOST_UNREACHABLE, NULL, &u);
            break;
        }
        sl_client_claim *claim = NULL;
        int rc;
        /* With a list, a request tries the other servers (a leader that
         * died, a follower between leaders) until the lease would be
         * presumed lost, not beyond: the check above must come in time. */
        k->c->call_deadline = k->lease_ms > 0 ? last_ok + k->lease_ms : 0;
        if (now >= next_renew) {
            rc = sl_client_claim_renew(k->c, k->id, &claim, &e);
            if (rc == SL_CLIENT_OK)
                next_renew = now + third;
        } else {
            int64_t wait = next_renew - now;
            if (wait > SL__WAIT_STEP_MS)
                wait = SL__WAIT_STEP_MS;
            rc = sl__claim_get(k->c, k->id, wait, seen, k->slack_ms, &claim, &e);
        }
        if (rc == SL__ESTOPPED) {
            sl_client_claim_free(claim);
            break;
        }
        if (claim) {
            /* An answer, or renew's 409 with the claim: either way the
             * server is there and has told us the state. */
            if (rc == SL_CLIENT_OK)
                last_ok = now;
            bool lost = judge(k, claim, rc == SL_CLIENT_OK ? NULL : &e);
            if (!lost && rc == SL_CLIENT_OK)
                snprintf(seen, sizeof(seen), "%s", claim->state);
            sl_client_claim_free(claim);
            if (lost)
                break;
            if (rc == SL_CLIENT_OK)
                continue;
        }
        if (rc == SL_CLIENT_EHTTP && e.status == 404) {
            report(k, SL_CLIENT_LOST_ENDED, NULL, &e); /* purged, or never was */
            break;
        }
        /* Nothing got through: try again after the pause, but not past
         * the moment the lease would be presumed lost. */
        int64_t pause = k->retry.interval_ms + sl__jitter(&seed, k->retry.jitter_ms);
        if (k->lease_ms > 0) {
            int64_t left = last_ok + k->lease_ms - sl__now_ms();
            if (pause > left)
                pause = left;
        }
        pause_ms(k, pause);
    }
    return NULL;
}

int sl_client_keeper_start(const sl_client_options *opts, const char *id, int64_t lease_ms,
                           const sl_client_retry *retry, sl_client_lost_fn lost, void *ud,
                           sl_client_keeper **out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "sl_client_keeper_start: out is NULL");
    *out = NULL;
    if (!id || !*id)
        return sl__err_set(err, SL_CLIENT_EINVAL, "a claim id is required");
    if (lease_ms < 0)
        return sl__err_set(err, SL_CLIENT_EINVAL, "lease_ms must be 0 (watch only) or more");

    long slack = SLACK_MAX_MS;
    if (lease_ms > 0 && lease_ms / 3 < slack)
        slack = lease_ms / 3 < SLACK_MIN_MS ? SLACK_MIN_MS : (long)(lease_ms / 3);
    sl_client_options o = {0};
    if (opts)
        o = *opts;
    if (o.connect_timeout_ms <= 0 || o.connect_timeout_ms > slack)
        o.connect_timeout_ms = slack;
    if (o.request_timeout_ms <= 0 || o.request_timeout_ms > slack)
        o.request_timeout_ms = slack;

    sl_client_keeper *k = calloc(1, sizeof(*k));
    if (!k)
        return sl__err_oom(err);
    int rc = sl_client_new(&o, &k->c, err);
    if (rc != SL_CLIENT_OK) {
        free(k);
        return rc;
    }
    k->id = strdup(id);
    if (!k->id) {
        sl_client_free(k->c);
        free(k);
        return sl__err_oom(err);
    }
    k->lease_ms = lease_ms;
    k->slack_ms = slack;
    sl__retry_defaults(retry, &k->retry);
    k->lost = lost;
    k->ud = ud;
    atomic_init(&k->stop, 0);
    k->c->stop = &k->stop;

    pthread_condattr_t ca;
    bool cv_ok = false, mu_ok = pthread_mutex_init(&k->mu, NULL) == 0;
    if (mu_ok && pthread_condattr_init(&ca) == 0) {
        cv_ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
                pthread_cond_init(&k->cv, &ca) == 0;
        pthread_condattr_destroy(&ca);
    }
    if (cv_ok && pthread_create(&k->thread, NULL, keeper_main, k) == 0) {
        *out = k;
        return SL_CLIENT_OK;
    }
    if (cv_ok)
        pthread_cond_destroy(&k->cv);
    if (mu_ok)
        pthread_mutex_destroy(&k->mu);
    sl_client_free(k->c);
    free(k->id);
    free(k);
    return sl__err_set(err, SL_CLIENT_ENOMEM, "cannot start the keeper's thread");
}

void sl_client_keeper_stop(sl_client_keeper *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    atomic_store(&k->stop, 1);
    pthread_cond_signal(&k->cv);
    pthread_mutex_unlock(&k->mu);
    curl_multi_wakeup(k->c->multi);
    pthread_join(k->thread, NULL);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    sl_client_free(k->c);
    free(k->id);
    free(k);
}
