/* fuzz_claim_body.c - POST /v1/claims bodies (src/server/claim_body.c).
 *
 * The bytes go the way the server takes them (routes.c, sl_body_json): the
 * body limit, the depth check, json_loadb with JSON_REJECT_DUPLICATES, an
 * object expected; then sl_claim_body_parse. A body it accepts is handed to
 * a fresh engine, which must either create the claim or refuse it with an
 * error: the parser and the engine must agree on what is well formed. */
#include <string.h>

#include <jansson.h>

#include "claim_body.h"
#include "fuzz.h"
#include "json_depth.h"
#include "server.h"

/* The default limits.max_body (conf.c). */
#define BODY_MAX (64u * 1024)

static void to_engine(sl_claim_body *b)
{
    b->req.id = "c1"; /* the server's claim_id.c gives each claim its id */
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    sl_engine *eng = NULL;
    fuzz_check(sl_engine_new(&opts, &eng) == 0);
    sl_error err;
    memset(&err, 0, sizeof(err));
    /* Its semaphores configured, so that the claim gets past "unknown". */
    for (size_t i = 0; i < b->req.nlocks; i++)
        if (b->locks[i].kind == SL_KIND_SEMAPHORE)
            sl_sem_set(eng, b->locks[i].name, 1000, SL_STRICT, 0, 1000, &err);
    sl_claim *claim = NULL;
    memset(&err, 0, sizeof(err));
    int rc = sl_claim_create(eng, &b->req, 1000, &claim, &err);
    fuzz_check(rc == 0 ? claim != NULL : (rc < 0 && err.what && err.what[0] != '\0'));
    sl_engine_free(eng);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    if (size == 0 || size > BODY_MAX || sl_json_depth(p, size) > SL_JSON_DEPTH_MAX)
        return 0;
    json_error_t jerr;
    json_t *body = json_loadb(p, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!body)
        return 0;
    if (json_is_object(body)) {
        sl_claim_body b;
        char err[512] = "";
        if (sl_claim_body_parse(body, &b, err, sizeof(err)) == 0) {
            fuzz_check(b.req.nlocks <= SL_LOCKS_MAX && b.req.ntags <= SL_TAGS_MAX);
            fuzz_check(b.req.holder != NULL);
            for (size_t i = 0; i < b.req.nlocks; i++)
                fuzz_check(b.locks[i].name && b.locks[i].slots >= 1);
            to_engine(&b);
        } else {
            fuzz_check(err[0] != '\0' && strlen(err) < sizeof(err));
        }
    }
    json_decref(body);
    return 0;
}
