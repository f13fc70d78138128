/* client.c - the client handle: options and environment, errors, and the
 * small helpers (clock, jitter, sleep) the other files share.
 *
 * The library keeps no global state except libcurl's own, initialised once
 * (pthread_once) by the first sl_client_new and never torn down: a library
 * cannot know when its host is done with curl. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client_int.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;

static void curl_init(void)
{
    curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

const char *sl_client_strerror(int rc)
{
    switch (rc) {
    case SL_CLIENT_OK:
        return "success";
    case SL_CLIENT_ENOMEM:
        return "out of memory";
    case SL_CLIENT_EINVAL:
        return "invalid argument";
    case SL_CLIENT_ECONNECT:
        return "the server could not be reached";
    case SL_CLIENT_EHTTP:
        return "the server answered with an error";
    case SL_CLIENT_EPROTO:
        return "the server's answer is not what the API says";
    case SL_CLIENT_ETIMEOUT:
        return "timed out";
    default:
        return "unknown error";
    }
}

void sl__err_clear(sl_client_error *err)
{
    if (!err)
        return;
    err->rc = SL_CLIENT_OK;
    err->status = 0;
    err->code[0] = '\0';
    err->message[0] = '\0';
}

int sl__err_set(sl_client_error *err, int rc, const char *fmt, ...)
{
    if (!err)
        return rc;
    err->rc = rc;
    err->status = 0;
    err->code[0] = '\0';
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    return rc;
}

int sl__err_oom(sl_client_error *err)
{
    return sl__err_set(err, SL_CLIENT_ENOMEM, "out of memory");
}

/* ---- the handle ------------------------------------------------------------ */

/* The TLS files: an option, else its variable; each copied. A key needs
 * its certificate. */
static int tls_files(sl_client *c, const sl_client_options *opts, sl_client_error *err)
{
    const char *v[3] = {opts && opts->cacert ? opts->cacert : getenv("SLUICE_CACERT"),
                        opts && opts->cert ? opts->cert : getenv("SLUICE_CERT"),
                        opts && opts->key ? opts->key : getenv("SLUICE_KEY")};
    char **dst[3] = {&c->cacert, &c->cert, &c->key};
    if (v[2] && *v[2] && !(v[1] && *v[1]))
        return sl__err_set(err, SL_CLIENT_EINVAL,
                           "a client key needs its certificate: give --cert (SLUICE_CERT) too");
    for (int i = 0; i < 3; i++) {
        if (!v[i] || !*v[i])
            continue;
        *dst[i] = strdup(v[i]);
        if (!*dst[i])
            return sl__err_oom(err);
    }
    return SL_CLIENT_OK;
}

int sl_client_new(const sl_client_options *opts, sl_client **out, sl_client_error *err)
{
    sl__err_clear(err);
    if (!out)
        return sl__err_set(err, SL_CLIENT_EINVAL, "sl_client_new: out is NULL");
    *out = NULL;
    if (pthread_once(&curl_once, curl_init) != 0 || curl_init_rc != CURLE_OK)
        return curl_init_rc == CURLE_OUT_OF_MEMORY
                   ? sl__err_oom(err)
                   : sl__err_set(err, SL_CLIENT_ENOMEM, "libcurl could not be initialised: %s",
                                 curl_easy_strerror(curl_init_rc));

    bool from_opts = opts && opts->server;
    const char *server = from_opts ? opts->server : getenv("SLUICE_SERVER");
    if (!server || !*server)
        server = SL_CLIENT_DEFAULT_SERVER;
    const char *token = opts && opts->token ? opts->token : getenv("SLUICE_TOKEN");
    long connect_ms = opts && opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 5000;
    long request_ms = opts && opts->request_timeout_ms > 0 ? opts->request_timeout_ms : 30000;

    sl_client *c = calloc(1, sizeof(*c));
    if (!c)
        return sl__err_oom(err);
    c->connect_timeout_ms = connect_ms;
    c->request_timeout_ms = request_ms;
    c->retry_after_ms = -1;
    int rc = sl__servers_parse(server, from_opts ? "--server" : "SLUICE_SERVER", &c->servers,
                               &c->nservers, err);
    if (rc != SL_CLIENT_OK) {
        sl_client_free(c);
        return rc;
    }
    c->server = c->servers[0];
    if (token && *token) {
        if (strpbrk(token, "\r\n")) {
            sl_client_free(c);
            return sl__err_set(err, SL_CLIENT_EINVAL,
                               "the token holds a line break; check --token or SLUICE_TOKEN");
        }
        size_t n = strlen("Authorization: Bearer ") + strlen(token) + 1;
        c->auth_header = malloc(n);
        if (!c->auth_header)
            goto oom;
        snprintf(c->auth_header, n, "Authorization: Bearer %s", token);
    }
    rc = tls_files(c, opts, err);
    if (rc != SL_CLIENT_OK) {
        sl_client_free(c);
        return rc;
    }
    c->easy = curl_easy_init();
    c->multi = curl_multi_init();
    if (!c->easy || !c->multi)
        goto oom;
    *out = c;
    return SL_CLIENT_OK;
oom:
    sl_client_free(c);
    return sl__err_oom(err);
}

void sl_client_free(sl_client *c)
{
    if (!c)
        return;
    if (c->easy)
        curl_easy_cleanup(c->easy);
    if (c->multi)
        curl_multi_cleanup(c->multi);
    sl__servers_free(c->servers, c->nservers);
    if (c->auth_header) {
        /* It holds a secret: do not leave it in freed memory. */
        volatile char *p = c->auth_header;
        while (*p)
            *p++ = '\0';
    }
    free(c->auth_header);
    free(c->cacert);
    free(c->cert);
    free(c->key);
    free(c);
}

const char *sl_client_server(const sl_client *c)
{
    return c ? c->server : NULL;
}

bool sl_client_state_ended(const char *state)
{
    static const char *const ended[] = {"released",  "withdrawn",  "expired",
                                        "timed_out", "superseded", "canceled"};
    if (!state)
        return false;
    for (size_t i = 0; i < sizeof(ended) / sizeof(ended[0]); i++)
        if (strcmp(state, ended[i]) == 0)
            return true;
    return false;
}

bool sl__utf8_valid(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        unsigned char b = *p;
        size_t n;
        uint32_t cp;
        if (b < 0x80) {
            p++;
            continue;
        } else if ((b & 0xE0) == 0xC0) {
            n = 1;
            cp = b & 0x1F;
        } else if ((b & 0xF0) == 0xE0) {
            n = 2;
            cp = b & 0x0F;
        } else if ((b & 0xF8) == 0xF0) {
            n = 3;
            cp = b & 0x07;
        } else {
            return false;
        }
        for (size_t i = 1; i <= n; i++) {
            if ((p[i] & 0xC0) != 0x80)
                return false;
            cp = cp << 6 | (p[i] & 0x3F);
        }
        /* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
        if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
            (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
            return false;
        p += n + 1;
    }
    return true;
}

/* ---- clock, jitter, sleep ---------------------------------------------------- */

int64_t sl__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

uint64_t sl__seed(const void *salt)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t s = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)(uintptr_t)salt;
    return s ? s : 0x9e3779b97f4a7c15u;
}

int64_t sl__jitter(uint64_t *state, int64_t bound)
{
    if (bound <= 0)
        return 0;
    /* xorshift64*: plenty to spread retries apart. */
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return (int64_t)((x * 0x2545F4914F6CDD1Du) % (uint64_t)(bound + 1));
}

void sl__sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

void sl__retry_defaults(const sl_client_retry *in, sl_client_retry *out)
{
    out->interval_ms = in && in->interval_ms > 0 ? in->interval_ms : 1000;
    out->jitter_ms = in && in->jitter_ms > 0 ? in->jitter_ms : 500;
}

bool sl__transient(int rc, const sl_client_error *err)
{
    if (rc == SL_CLIENT_ECONNECT || rc == SL_CLIENT_ETIMEOUT || rc == SL_CLIENT_EPROTO)
        return true;
    return rc == SL_CLIENT_EHTTP && err &&
           (err->status == 503 || err->status == 502 || err->status == 504);
}
