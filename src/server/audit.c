/* audit.c - the audit log (F11; docs/security.md, "Audit log").
 *
 * One JSON line per request the log keeps: every state-changing one (POST,
 * PUT, PATCH, DELETE), whatever its answer, and every refused one (401,
 * 403, 429, and a 404 under /v1/, which is also what a claim outside the
 * token's prefixes answers). A line is written when the answer's status is
 * known, as it is sent: for a change, once its commit decided it. It holds
 * the time, the actor (the label sl_routes_handle put on the request: the
 * token's name, "anonymous" without tokens, null when it was not
 * authenticated), the client's address, the method, the path without its
 * query, the status, the outcome (the error code, or "ok") and the claim id
 * when the answer is a claim. Never a header, a query or a body.
 *
 * Each line is one write(2) to a file opened O_APPEND, on the loop: a few
 * microseconds into the page cache, and a line is never half in the file
 * or lost to a crash of the process. A line that cannot be written is kept
 * (up to PENDING_MAX bytes; past that, lines are dropped and counted) and
 * written before the next one, so a full disk or a file gone loses nothing
 * it can keep. While lines wait, the log is failing: the error is logged
 * once, /metrics counts each failed write, and with on_failure: refuse every
 * state-changing request is answered 503 audit_unavailable until a write
 * goes through again (each such request tries first). SIGHUP reopens the
 * file (log rotation: rename it, then send SIGHUP). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server.h"

#define PENDING_MAX (1u << 20)

struct sl_audit {
    int fd;         /* -1: not open */
    char *path;     /* what fd is, or failed to be */
    bool failing;   /* lines wait in pending */
    sl_buf pending; /* lines not written yet, whole */
    sl_buf line;    /* scratch */
};

static void open_file(sl_audit *a)
{
    a->fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

/* Writes what waits; false when the file did not take it all. A partial
 * write keeps the rest, so a line is never cut in the file. */
static bool flush(sl_server *srv, sl_audit *a)
{
    int err = 0;
    if (a->fd < 0)
        open_file(a);
    if (a->fd < 0)
        err = errno;
    size_t done = 0, n = sl_buf_size(&a->pending);
    while (a->fd >= 0 && done < n) {
        ssize_t w = write(a->fd, sl_buf_data(&a->pending) + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            err = w < 0 ? errno : ENOSPC;
            break;
        }
        done += (size_t)w;
    }
    if (a->fd >= 0 && done == n) {
        sl_buf_clear(&a->pending);
        if (a->failing)
            sl_log(SL_LOG_INFO, "audit log %s written again", a->path);
        a->failing = false;
        return true;
    }
    sl_buf_consume(&a->pending, done);
    srv->metrics.audit_failures++;
    if (!a->failing)
        sl_log(SL_LOG_ERROR,
               "audit log %s cannot be written (%s); lines are kept and written "
               "once it can be%s",
               a->path, strerror(err),
               srv->conf->audit_refuse ? ", and changes are refused until then" : "");
    a->failing = true;
    return false;
}

int sl_audit_open(sl_server *srv)
{
    sl_audit *a = srv->audit;
    const char *path = srv->conf->audit_path;
    if (!a && !path)
        return 0;
    if (!a) {
        if (!(a = calloc(1, sizeof(*a))))
            abort();
        a->fd = -1;
        srv->audit = a;
    }
    if (a->fd >= 0)
        close(a->fd);
    a->fd = -1;
    free(a->path);
    a->path = path ? strdup(path) : NULL;
    if (!a->path) {
        sl_audit_close(srv); /* a reload turned it off: what waits is dropped */
        return 0;
    }
    return flush(srv, a) ? 0 : -1; /* opens it, and writes what waited */
}

void sl_audit_close(sl_server *srv)
{
    sl_audit *a = srv->audit;
    if (!a)
        return;
    if (sl_buf_size(&a->pending))
        sl_log(SL_LOG_ERROR, "audit log %s: %zu bytes of lines were never written", a->path,
               sl_buf_size(&a->pending));
    if (a->fd >= 0)
        close(a->fd);
    free(a->path);
    sl_buf_free(&a->pending);
    sl_buf_free(&a->line);
    free(a);
    srv->audit = NULL;
}

bool sl_audit_on(const sl_server *srv)
{
    return srv->audit != NULL;
}

bool sl_audit_refuses(sl_ctx *c)
{
    sl_audit *a = c->srv->audit;
    if (!a || !a->failing || !c->srv->conf->audit_refuse || flush(c->srv, a))
        return false;
    sl_reply_error(c, 503, "audit_unavailable",
                   "the audit log cannot be written, and this server refuses changes it cannot "
                   "record (audit.on_failure: refuse); retry once the log's disk or file is "
                   "fixed");
    return true;
}

static bool changes(sl_http_method m)
{
    return m == SL_HTTP_POST || m == SL_HTTP_PUT || m == SL_HTTP_PATCH || m == SL_HTTP_DELETE;
}

static bool kept(sl_http_method m, int status, const char *target)
{
    return changes(m) || status == 401 || status == 403 || status == 429 ||
           (status == 404 && strncmp(target, "/v1/", 4) == 0);
}

/* s[0..n) as a JSON string, each byte that is not printable ASCII as '?':
 * what the client sent, which need not be UTF-8. */
static json_t *text(sl_buf *scratch, const char *s, size_t n)
{
    sl_buf_clear(scratch);
    for (size_t i = 0; i < n; i++) {
        char ch = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
        sl_buf_add(scratch, &ch, 1);
    }
    return json_stringn(sl_buf_data(scratch), n);
}

/* A quoted JSON string value after prefix at the start of body, or NULL;
 * the body is compact JSON whose first key the server wrote itself. */
static json_t *leading_string(const void *body, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    if (!body || len <= n || memcmp(body, prefix, n) != 0)
        return NULL;
    const char *s = (const char *)body + n, *end = memchr(s, '"', len - n);
    return end ? json_stringn(s, (size_t)(end - s)) : NULL;
}

void sl_audit_answer(sl_server *srv, sl_http_req *req, int status, const void *body, size_t len,
                     const char *claim)
{
    sl_audit *a = srv->audit;
    const char *target = sl_http_req_target(req);
    if (!a || !a->path || !kept(sl_http_req_method(req), status, target))
        return;
    char addr[SL_HTTP_ADDRESS_MAX];
    sl_forward_address(req, addr, sizeof(addr));
    const char *actor = sl_http_req_label(req);
    const char *q = strchr(target, '?');
    json_t *code =
        status >= 400 ? leading_string(body, len, "{\"error\":{\"code\":\"") : json_string("ok");
    json_t *o = json_pack("{s:o,s:o,s:s,s:s,s:o,s:i,s:o}", "time", sl_json_time(sl_server_now(srv)),
                          "actor", actor ? text(&a->line, actor, strlen(actor)) : json_null(),
                          "address", addr, "method", sl_http_req_method_name(req), "path",
                          text(&a->line, target, q ? (size_t)(q - target) : strlen(target)),
                          "status", status, "outcome", code ? code : json_null());
    json_t *id = claim ? json_string(claim) : leading_string(body, len, "{\"id\":\"");
    if (id)
        json_object_set_new(o, "claim", id);
    /* A follower proven by its certificate, or a header anyone could send. */
    const char *via = sl_http_req_header(req, "Sluice-Forwarded");
    if (via)
        json_object_set_new(o, sl_http_req_cluster_peer(req) ? "relayed_by" : "relayed_by_unproven",
                            text(&a->line, via, strlen(via)));
    sl_buf_clear(&a->line);
    sl_json_to_buffer(o, &a->line);
    json_decref(o);
    if (sl_buf_size(&a->pending) + sl_buf_size(&a->line) > PENDING_MAX) {
        srv->metrics.audit_dropped++; /* the disk has been failing for a long while */
        flush(srv, a);
        return;
    }
    sl_buf_add(&a->pending, sl_buf_data(&a->line), sl_buf_size(&a->line));
    flush(srv, a);
}
