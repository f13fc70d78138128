/* ui.c - the web dashboard: every path that is not the API (/v1/...),
 * /healthz or /metrics.
 *
 * The dashboard is a single page (ui/index.html) that routes on the client:
 * "/", "/queue", "/claims", "/claims/{id}", "/locks/sem/NAME",
 * "/locks/mtx/NAME" and "/runs/RUN" all answer index.html, and the page then
 * reads the API with the browser's token. Its scripts and styles are under
 * "/ui/". The files are compiled into sluiced (ui_assets.c, generated from
 * ui/ by cmake/embed_ui.cmake), so the server needs no install directory.
 * The pages themselves carry no data, so they need no token; the API calls
 * they make do. */
#include <stdlib.h>
#include <string.h>


#include "server.h"
#include "ui_assets.h"

/* No external assets: the page may load only what sluiced serves. */
#define UI_CSP                                                                                   \
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "           \
    "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"

static const sl_ui_asset *find_asset(const char *path)
{
    for (const sl_ui_asset *a = sl_ui_assets; a->path; a++)
        if (strcmp(a->path, path) == 0)
            return a;
    return NULL;
}

/* The client-side routes (ui/app.js): "/", "/queue", "/claims" and
 * "/claims/{id}" (one segment); "/locks/sem/NAME" and "/locks/mtx/NAME" and
 * "/runs/RUN", whose names may hold '/' (any non-empty rest). */
static bool under(const char *path, const char *prefix, bool one_segment)
{
    size_t n = strlen(prefix);
    if (strncmp(path, prefix, n) != 0 || path[n] == '\0')
        return false;
    return !one_segment || !strchr(path + n, '/');
}

static bool is_page(const char *path)
{
    if (strcmp(path, "/") == 0 || strcmp(path, "/queue") == 0 || strcmp(path, "/claims") == 0)
        return true;
    return under(path, "/claims/", true) || under(path, "/locks/sem/", false) ||
           under(path, "/locks/mtx/", false) || under(path, "/runs/", false);
}

void sl_route_ui(sl_ctx *c)
{
    const sl_ui_asset *a = NULL;
    if (is_page(c->path))
        a = find_asset("/ui/index.html");
    else if (strncmp(c->path, "/ui/", 4) == 0)
        a = find_asset(c->path);
    if (!a) {
        sl_reply_error(c, 404, "not_found",
                       "no such page: %s. The dashboard is at /, /queue, /claims, /claims/ID, "
                       "/locks/sem/NAME, /locks/mtx/NAME and /runs/RUN; the HTTP API is under "
                       "/v1/; /healthz and /metrics report on the server",
                       c->path);
        return;
    }
    if (c->method != SL_HTTP_GET && c->method != SL_HTTP_HEAD) {
        sl_http_add_header(c->req, "Allow", "GET, HEAD");
        sl_reply_error(c, 405, "method_not_allowed", "%s takes GET", c->path);
        return;
    }
    /* The files change with the binary: let the browser revalidate each
     * time rather than keep an old app.js next to a new server. */
    sl_http_add_header(c->req, "Cache-Control", "no-cache");
    sl_http_add_header(c->req, "X-Content-Type-Options", "nosniff");
    sl_http_add_header(c->req, "Content-Security-Policy", UI_CSP);
    sl_reply_text(c, 200, a->ctype, a->data, a->len); /* HEAD: the layer sends no body */
}
