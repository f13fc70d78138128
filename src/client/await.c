/* await.c - sl_client_claim_await: wait until a claim is held or has ended.
 *
 * A first look (GET, answered at once), then one long poll after another
 * (GET ?wait=25s&seen=pending: it answers at
 * once when the claim is no longer pending, and otherwise at the end of the
 * wait or of the server's cap), each answer shown to the caller's progress
 * function. While the server cannot be reached the wait goes on: it retries
 * after the retry interval plus a random jitter, so that many clients
 * cut off together do not come back in step. */
#include <stdint.h>
#include <string.h>

#include "client_int.h"

int sl_client_claim_await(sl_client *c, const char *id, int64_t timeout_ms,
                          const sl_client_retry *retry, sl_client_progress_fn progress, void *ud,
                          sl_client_claim **out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!c || !out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "the client and the result must not be NULL");
    *out = NULL;
    if (!id || !*id)
        return sl__err_set(err, SL_CLIENT_EINVAL, "a claim id is required");
    sl_client_retry r;
    sl__retry_defaults(retry, &r);
    uint64_t seed = sl__seed(&r);
    int64_t start = sl__now_ms();
    int64_t deadline = timeout_ms > 0 ? start + timeout_ms : INT64_MAX;
    sl_client_claim *last = NULL;
    sl_client_error e;
    bool unreachable = false;
    for (;;) {
        int64_t remaining = deadline - sl__now_ms();
        if (remaining <= 0)
            break;
        /* The first look answers at once, so that progress can show at
         * once why the claim waits; then one long poll after another. */
        int64_t wait = !last ? 0 : remaining < SL__WAIT_STEP_MS ? remaining : SL__WAIT_STEP_MS;
        sl_client_claim *claim = NULL;
        /* With a list, the failover of one look stops at our deadline. */
        int64_t outer = c->call_deadline;
        c->call_deadline = timeout_ms > 0 ? deadline : outer;
        int rc = sl_client_claim_get(c, id, wait, "pending", &claim, &e);
        c->call_deadline = outer;
        if (rc == SL_CLIENT_OK) {
            unreachable = false;
            sl_client_claim_free(last);
            last = claim;
            if (progress)
                progress(ud, last, NULL);
            if (strcmp(last->state, "pending") != 0) {
                *out = last;
                return SL_CLIENT_OK;
            }
            continue;
        }
        if (!sl__transient(rc, &e)) {
            sl_client_claim_free(last);
            if (err)
                *err = e;
            return rc;
        }
        unreachable = true;
        if (progress)
            progress(ud, last, &e);
        int64_t pause = r.interval_ms + sl__jitter(&seed, r.jitter_ms);
        remaining = deadline - sl__now_ms();
        sl__sleep_ms(pause < remaining ? pause : remaining);
    }
    *out = last;
    if (unreachable)
        return sl__err_set(err, SL_CLIENT_ETIMEOUT,
                           "claim %s: still waiting after %lld ms, and the last try failed: %s", id,
                           (long long)(sl__now_ms() - start), e.message);
    return sl__err_set(err, SL_CLIENT_ETIMEOUT, "claim %s is still %s after %lld ms%s%s", id,
                       last ? last->state : "unknown", (long long)(sl__now_ms() - start),
                       last && last->reason && *last->reason ? ": " : "",
                       last && last->reason ? last->reason : "");
}
