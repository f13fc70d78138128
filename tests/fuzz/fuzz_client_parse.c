/* fuzz_client_parse.c - libsluice's reading of the server's answers
 * (src/client/parse.c, and the error answers of src/client/http.c).
 *
 * The first input byte picks what the rest is read as, the way the client
 * reads it: JSON (json_loadb, as sl__http_json does) into a claim, a list
 * of claims, a lock, a claim's why, an event, the health status or an error
 * answer; or, as a string, a duration and an RFC 3339 time. Whatever a
 * parser returns is freed the way the library's callers free it, so a leak
 * or a double free on a half-read answer shows. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "client_int.h"
#include "fuzz.h"

#define TEXT_MAX 4096

static void check_err(int rc, const sl_client_error *err)
{
    if (rc == SL_CLIENT_OK)
        return;
    fuzz_check(rc < 0 && err->rc == rc);
    fuzz_check(memchr(err->message, '\0', sizeof(err->message)) != NULL);
}

static void parse_json(unsigned what, const json_t *o, const char *raw)
{
    sl_client_error err;
    memset(&err, 0, sizeof(err));
    int rc;
    switch (what) {
    case 0: {
        sl_client_claim *c = NULL;
        rc = sl__claim_new(o, &c, &err);
        fuzz_check((rc == SL_CLIENT_OK) == (c != NULL));
        sl_client_claim_free(c);
        break;
    }
    case 1: {
        sl_client_claim_list list;
        rc = sl__parse_claims(o, &list, &err);
        if (rc == SL_CLIENT_OK)
            sl_client_claim_list_free(&list);
        else
            fuzz_check(list.items == NULL && list.n == 0);
        break;
    }
    case 2: {
        sl_client_lock *l = malloc(sizeof(*l));
        fuzz_check(l != NULL);
        rc = sl__parse_lock(o, l, &err);
        if (rc == SL_CLIENT_OK)
            sl_client_lock_free(l);
        else
            free(l);
        break;
    }
    case 3: {
        sl_client_why *w = malloc(sizeof(*w));
        fuzz_check(w != NULL);
        rc = sl__parse_why(o, w, &err);
        if (rc == SL_CLIENT_OK)
            sl_client_why_free(w);
        else
            free(w);
        break;
    }
    case 4: {
        sl_client_event ev;
        rc = sl__parse_event(o, &ev, &err);
        if (rc == SL_CLIENT_OK)
            sl__event_clear(&ev);
        break;
    }
    case 5: {
        sl_client_status *st = malloc(sizeof(*st));
        fuzz_check(st != NULL);
        rc = sl__parse_status(o, st, &err);
        if (rc == SL_CLIENT_OK)
            sl_client_status_free(st);
        else
            free(st);
        break;
    }
    default:
        rc = sl__err_from_response(&err, 400 + (long)what, o, raw);
        fuzz_check(rc == SL_CLIENT_EHTTP && err.message[0] != '\0');
        break;
    }
    check_err(rc, &err);
}

static void parse_text(const char *s)
{
    int64_t ms = -1;
    if (sl__duration_parse(s, &ms) == 0)
        fuzz_check(ms >= 0);
    sl__time_parse(s, &ms);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0 || size > TEXT_MAX)
        return 0;
    unsigned what = data[0] % 8;
    char raw[TEXT_MAX];
    fuzz_cstr(data + 1, size - 1, raw, sizeof(raw));
    if (what == 7) {
        parse_text(raw);
        return 0;
    }
    json_t *o = json_loadb((const char *)data + 1, size - 1, 0, NULL);
    /* Error answers are read whether or not they are JSON (a proxy's). */
    if (o || what == 6)
        parse_json(what, o, raw);
    json_decref(o);
    return 0;
}
