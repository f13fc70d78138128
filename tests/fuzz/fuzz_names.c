/* fuzz_names.c - lock names: sl_name_valid (src/engine/names.c) against a
 * second, literal reading of the rule, and the places that apply it: the
 * engine's semaphore configurations and mutex claims, and the server's
 * configuration check (semaphore names, token prefixes).
 *
 * The rule (docs/api.md): 1 to 253 characters of A-Z a-z 0-9 . _ - / : =,
 * no leading or trailing '/', no "//", no "." or ".." segment; a pattern may
 * end in '*', and its prefix may end in '/' (and its last segment, cut by
 * the '*', is not a whole segment: "a/..*" may match "a/..x"). The first input byte picks the pattern flag; the
 * rest is the name, NUL bytes included (they make it invalid). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "conf.h"
#include "engine.h"
#include "fuzz.h"

static bool allowed_char(unsigned char ch)
{
    return strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-/:=", ch) &&
           ch != '\0';
}

/* The rule as written, for the oracle. */
static bool oracle(const char *s, size_t len, bool pattern)
{
    if (len == 0 || len > SL_NAME_MAX)
        return false;
    size_t body = pattern && s[len - 1] == '*' ? len - 1 : len;
    for (size_t i = 0; i < body; i++)
        if (!allowed_char((unsigned char)s[i]))
            return false;
    for (size_t i = 0; i + 1 < body; i++)
        if (s[i] == '/' && s[i + 1] == '/')
            return false;
    if (body > 0 && s[0] == '/')
        return false;
    if (body == len && s[len - 1] == '/')
        return false;
    /* Segments, read one by one between the slashes. */
    size_t start = 0;
    for (size_t i = 0; i <= body; i++) {
        if (i < body && s[i] != '/')
            continue;
        bool whole = i < body || body == len;
        if (whole && i - start == 1 && s[start] == '.')
            return false;
        if (whole && i - start == 2 && s[start] == '.' && s[start + 1] == '.')
            return false;
        start = i + 1;
    }
    return true;
}

/* The engine takes exactly the valid names: as a semaphore configuration
 * a pattern too, as a mutex only a name. */
static void engine_agrees(const char *name)
{
    size_t len = strlen(name);
    sl_engine_opts opts;
    sl_engine_opts_default(&opts);
    sl_engine *eng = NULL;
    fuzz_check(sl_engine_new(&opts, &eng) == 0);
    sl_error err;
    int rc = sl_sem_set(eng, name, 2, SL_STRICT, 0, 1000, &err);
    fuzz_check((rc == 0) == oracle(name, len, true));
    sl_lock_req lock = {.kind = SL_KIND_MUTEX, .name = name, .slots = 1};
    sl_claim_req req;
    memset(&req, 0, sizeof(req));
    req.id = "c1";
    req.holder = "fuzz";
    req.locks = &lock;
    req.nlocks = 1;
    req.grace_ms = -1;
    req.lease_ms = -1;
    sl_claim *claim = NULL;
    rc = sl_claim_create(eng, &req, 1000, &claim, &err);
    if ((rc == 0) != oracle(name, len, false))
        fprintf(stderr, "fuzz_names: mutex \"%s\": %d %s\n", name, rc, rc ? err.what : "");
    fuzz_check((rc == 0) == oracle(name, len, false));
    sl_engine_free(eng);
}

/* The configuration check takes a semaphore name (or pattern) exactly when
 * it is valid, and a token prefix when it is "" or the pattern made of it
 * and a '*' is (conf.c, prefix_valid). */
static void conf_agrees(char *name)
{
    size_t len = strlen(name);
    char err[512];
    sl_conf conf;
    sl_conf_defaults(&conf);
    sl_conf_sem sem = {.name = name, .limit = 1, .strategy = SL_STRICT};
    conf.semaphores = &sem;
    conf.nsemaphores = 1;
    fuzz_check((sl_conf_check(&conf, err, sizeof(err)) == 0) == oracle(name, len, true));
    conf.semaphores = NULL;
    conf.nsemaphores = 0;

    char pat[SL_NAME_MAX + 2];
    memcpy(pat, name, len);
    pat[len] = '*';
    /* "" is every name (a read-only dashboard's read: [""]). */
    bool prefix_ok = len == 0 || (len < SL_NAME_MAX && oracle(pat, len + 1, true));
    sl_conf_token tok = {
        .name = "fuzz", .token = "fuzz-secret-0123456789", .prefixes = &name, .nprefixes = 1};
    conf.tokens = &tok;
    conf.ntokens = 1;
    fuzz_check((sl_conf_check(&conf, err, sizeof(err)) == 0) == prefix_ok);
    conf.tokens = NULL;
    conf.ntokens = 0;
    sl_conf_free(&conf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    bool pattern = data[0] & 1;
    const char *name = (const char *)data + 1;
    size_t len = size - 1;
    bool valid = sl_name_valid(name, len, pattern);
    fuzz_check(valid == oracle(name, len, pattern));
    char buf[SL_NAME_MAX + 2];
    if (len > SL_NAME_MAX + 1 || memchr(name, '\0', len))
        return 0;
    memcpy(buf, name, len);
    buf[len] = '\0';
    engine_agrees(buf);
    conf_agrees(buf);
    return 0;
}
