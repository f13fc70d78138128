/* idempotency.c - the Idempotency-Key of POST /v1/claims.
 *
 * A client that lost the answer to a creation (the server crashed between
 * its commit and its answer, or the connection broke) sends the same
 * request again with the same key, and gets the claim the first attempt
 * made instead of a second one. The key is kept with the claim, in the
 * engine and the store, for as long as the claim is; it is scoped by the
 * token (two tokens' keys never meet), and a fingerprint of the request
 * tells a retry from a different request reusing a key (409). The
 * fingerprint leaves out `wait`, which a retry may shorten. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#include "server.h"

#define KEY_MAX 128

/* FNV-1a, 64 bits: the fingerprint only has to tell a client's own
 * requests apart, and the key they go with is the client's secret. */
static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t fingerprint(json_t *body)
{
    json_t *copy = json_deep_copy(body);
    json_object_del(copy, "wait");
    char *text = json_dumps(copy, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(copy);
    if (!text)
        abort();
    uint64_t h = fnv1a(text, strlen(text));
    free(text);
    return h;
}

int sl_idem_from_request(sl_ctx *c, json_t *body, sl_idem_req *out)
{
    out->key[0] = '\0';
    out->fp = 0;
    const char *k =
        sl_http_req_header(c->req, "Idempotency-Key");
    if (!k)
        return 0;
    size_t n = strlen(k);
    bool printable = n > 0 && n <= KEY_MAX;
    for (size_t i = 0; printable && i < n; i++)
        printable = k[i] >= 0x20 && k[i] < 0x7f;
    if (!printable) {
        sl_reply_error(c, 400, "bad_request",
                       "the Idempotency-Key header must be 1 to %d printable ASCII characters "
                       "(a random UUID is a good one); it has %zu bytes",
                       KEY_MAX, n);
        return -1;
    }
    /* The token's name scopes the key: names are unique, secrets are not
     * to be kept around. */
    const char *scope = c->auth.token ? c->auth.token->name : "";
    snprintf(out->key, sizeof(out->key), "%s\n%s", scope, k);
    out->fp = fingerprint(body);
    return 1;
}

sl_claim *sl_idem_replay(sl_ctx *c, const sl_idem_req *idem, bool *conflict)
{
    *conflict = false;
    sl_claim *claim = idem->key[0] ? sl_claim_find_idem(c->srv->eng, idem->key) : NULL;
    if (!claim)
        return NULL;
    sl_claim_view v;
    sl_claim_get(claim, &v);
    /* Its creator hung up before the answer, so it was withdrawn (or
     * released) and holds nothing: replaying that end would tell a retry,
     * whose connection merely broke, that its claim is gone. The retry
     * makes a new claim with the key instead; no claim is doubled. */
    if (v.reason == SL_REASON_CLIENT_GONE && sl_claim_drop_idem(c->srv->eng, claim) == 0) {
        sl_server_touch(c->srv);
        return NULL;
    }
    /* The token is checked again as it is now: a reload may have narrowed
     * its prefixes since the claim was made (F9), and a replay shows the
     * claim as a read would. */
    if (!sl_auth_owns(c, claim)) {
        *conflict = true;
        sl_reply_error(c, 403, "forbidden",
                       "this Idempotency-Key made a claim that this token may no longer touch: "
                       "its locks or holder are outside the token's claim prefixes now; send a "
                       "new key for a claim within them");
        return NULL;
    }
    if (v.idem_fp != idem->fp) {
        *conflict = true;
        sl_reply_error(c, 409, "conflict",
                       "this Idempotency-Key was used for another request, which made claim %s; "
                       "send a new key for a new claim",
                       v.id);
        return NULL;
    }
    sl_http_add_header(c->req, "Idempotent-Replayed", "true");
    return claim;
}
