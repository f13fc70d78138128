/* http_request.c - a request as llhttp reads it: the parser's callbacks,
 * which copy the target, the headers and the body into the request's own
 * buffer and check every bound as the bytes come (431, 414, 413, the
 * smuggling rules of http.h), and the request's accessors for handlers.
 * The connection (http_conn.c) feeds the parser and answers. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "http_int.h"

int sl__http_refuse_with(sl_http_req *r, int status, const char *why)
{
    if (!r->refuse) {
        r->refuse = status;
        r->refuse_why = why;
    }
    return -1;
}

/* ---- llhttp's callbacks ------------------------------------------------------------- */

static sl_http_conn *conn_of(llhttp_t *p)
{
    return p->data;
}

static uint32_t data_add(sl_http_req *r, const char *at, size_t len)
{
    uint32_t off = (uint32_t)r->data.len;
    sl_buf_add(&r->data, at, len);
    return off;
}

static int head_grew(sl_http_conn *c, size_t len)
{
    sl_http_req *r = &c->req;
    r->head_bytes += len;
    if (r->head_bytes > c->http->opts.max_headers)
        return sl__http_refuse_with(r, 431, "the request line and headers are larger than this server "
                                   "accepts");
    return 0;
}

static int on_message_begin(llhttp_t *p)
{
    sl_http_conn *c = conn_of(p);
    sl_http_req *r = &c->req;
    sl_buf_clear(&r->data);
    sl_buf_add(&r->data, "", 1); /* offset 0: the empty string */
    r->target = 0;
    r->target_len = 0;
    r->nhdr = 0;
    r->trailers = false;
    r->in_value = false;
    r->head_bytes = 0;
    r->body = 0;
    r->body_len = 0;
    r->refuse = 0;
    r->refuse_why = NULL;
    r->out_hdr_len = 0;
    sl_buf_clear(&r->label);
    r->gone = NULL;
    r->method = SL_HTTP_OTHER;
    c->state = CS_READING;
    if (!c->started) {
        c->started = true;
        c->started_at = sl__http_now_ms();
        sl__http_update_timer(c);
    }
    return 0;
}

static int on_url(llhttp_t *p, const char *at, size_t len)
{
    sl_http_conn *c = conn_of(p);
    sl_http_req *r = &c->req;
    if (r->target_len + len > SL_HTTP_TARGET_MAX)
        return sl__http_refuse_with(r, 414, "the request target is longer than 8192 bytes");
    uint32_t off = data_add(r, at, len);
    if (r->target_len == 0)
        r->target = off;
    r->target_len += len;
    return head_grew(c, len);
}

static int on_url_complete(llhttp_t *p)
{
    sl_http_req *r = &conn_of(p)->req;
    if (r->target_len == 0)
        r->target = (uint32_t)r->data.len;
    data_add(r, "", 1);
    return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len)
{
    sl_http_conn *c = conn_of(p);
    sl_http_req *r = &c->req;
    /* A trailer after chunks is counted against the limit and dropped:
     * nothing in it may pass for a header (RFC 9110 6.5.1), and the
     * body's bytes must stay the last of the request's data. */
    if (r->trailers)
        return head_grew(c, len + 4);
    if (r->nhdr == 0 || r->in_value) {
        if (r->nhdr == SL_HTTP_HEADERS_MAX)
            return sl__http_refuse_with(r, 431, "the request has more than 100 header fields");
        http_hdr *h = &r->hdr[r->nhdr++];
        h->name = (uint32_t)r->data.len;
        h->name_len = 0;
        h->value = 0;
        h->value_len = 0;
        r->in_value = false;
    }
    http_hdr *h = &r->hdr[r->nhdr - 1];
    data_add(r, at, len);
    h->name_len += (uint32_t)len;
    return head_grew(c, len + 4); /* ": " and CRLF */
}

static int on_header_field_complete(llhttp_t *p)
{
    sl_http_req *r = &conn_of(p)->req;
    if (r->trailers)
        return 0;
    data_add(r, "", 1);
    r->in_value = true;
    if (r->nhdr > 0)
        r->hdr[r->nhdr - 1].value = 0; /* empty until a value comes */
    return 0;
}

static bool blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

static bool folded(const sl_http_conn *c, const char *at)
{
    const char *p = at;
    while (p > c->feed && blank(p[-1]))
        p--;
    char prev = p > c->feed ? p[-1] : c->feed_prev;
    return prev == '\n' && (p < at || blank(at[0]));
}

static int on_header_value(llhttp_t *p, const char *at, size_t len)
{
    sl_http_conn *c = conn_of(p);
    sl_http_req *r = &c->req;
    if (r->trailers)
        return head_grew(c, len);
    if (r->nhdr == 0 || len == 0) /* llhttp may call with an empty span */
        return 0;
    /* llhttp takes an obsolete line folding (a line that starts with a
     * space or a tab) as more of the value before: a span whose blanks
     * before it follow a line end. A proxy may read that line as a header
     * of its own: refused (RFC 9112 5.2). */
    if (folded(c, at))
        return sl__http_refuse_with(r, 400, "a header line starts with a space or a tab (an "
                                           "obsolete line folding); send each header on one line");
    http_hdr *h = &r->hdr[r->nhdr - 1];
    uint32_t off = data_add(r, at, len);
    if (h->value_len == 0)
        h->value = off;
    h->value_len += (uint32_t)len;
    return head_grew(c, len);
}

static int on_header_value_complete(llhttp_t *p)
{
    sl_http_req *r = &conn_of(p)->req;
    if (r->trailers)
        return 0;
    if (r->nhdr > 0 && r->hdr[r->nhdr - 1].value_len > 0)
        data_add(r, "", 1);
    /* The next field starts a new header. */
    r->in_value = true;
    return 0;
}

static sl_http_method method_of(uint8_t m)
{
    switch (m) {
    case HTTP_GET: return SL_HTTP_GET;
    case HTTP_HEAD: return SL_HTTP_HEAD;
    case HTTP_POST: return SL_HTTP_POST;
    case HTTP_PUT: return SL_HTTP_PUT;
    case HTTP_DELETE: return SL_HTTP_DELETE;
    case HTTP_PATCH: return SL_HTTP_PATCH;
    case HTTP_OPTIONS: return SL_HTTP_OPTIONS;
    default: return SL_HTTP_OTHER;
    }
}

/* The head is whole: refuse what the body would make unsafe or too large
 * (pausing the parser), and say "100 Continue" to a client that waits for
 * it before sending its body. */
static int on_headers_complete(llhttp_t *p)
{
    sl_http_conn *c = conn_of(p);
    sl_http_req *r = &c->req;
    r->trailers = true;
    sl__http_update_timer(c); /* past header_ms: the body has idle_ms */
    r->method = method_of(p->method);
    r->llmethod = p->method;
    r->http10 = p->http_major == 1 && p->http_minor == 0;
    /* "HTTP/2.0" or "HTTP/0.9" in a request line would be served as 1.1:
     * a client, or a proxy in front, that means another protocol must hear
     * it is not spoken here. */
    if (p->http_major != 1 || p->http_minor > 1) {
        sl__http_refuse_with(r, 505, "this server speaks HTTP/1.1 (and HTTP/1.0) only");
        return HPE_PAUSED;
    }
    if ((p->flags & F_TRANSFER_ENCODING) || sl_http_req_header(r, "Transfer-Encoding")) {
        /* Chunked bodies are read (RFC 9112 requires it), bounded as they
         * come (on_body). A length given twice over is how requests are
         * smuggled past a proxy: refused. */
        if ((p->flags & F_CONTENT_LENGTH) || sl_http_req_header(r, "Content-Length")) {
            sl__http_refuse_with(r, 400, "the request has both Transfer-Encoding and Content-Length; "
                                "send one");
            return HPE_PAUSED;
        }
        if (!(p->flags & F_CHUNKED)) {
            sl__http_refuse_with(r, 501, "the only Transfer-Encoding accepted is chunked");
            return HPE_PAUSED;
        }
    }
    if ((p->flags & F_CONTENT_LENGTH) && p->content_length > c->http->opts.max_body) {
        sl__http_refuse_with(r, 413, "the body is larger than this server accepts");
        c->drain_left = p->content_length;
        return HPE_PAUSED;
    }
    const char *expect = sl_http_req_header(r, "Expect");
    if (expect && strcasecmp(expect, "100-continue") == 0 && p->content_length > 0 &&
        !r->http10) {
        sl_buf_adds(&c->out, "HTTP/1.1 100 Continue\r\n\r\n");
        sl__http_output_added(c);
    }
    return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t len)
{
    sl_http_conn *c = conn_of(p);
    sl_http_req *r = &c->req;
    if (r->body_len + len > c->http->opts.max_body) /* chunked: no length was announced */
        return sl__http_refuse_with(r, 413, "the body is larger than this server accepts");
    uint32_t off = data_add(r, at, len);
    if (r->body_len == 0)
        r->body = off;
    r->body_len += len;
    return 0;
}

static int on_message_complete(llhttp_t *p)
{
    sl_http_req *r = &conn_of(p)->req;
    if (r->body_len > 0)
        data_add(r, "", 1);
    r->keep_alive = llhttp_should_keep_alive(p) != 0;
    return HPE_PAUSED;
}

void sl__http_settings(llhttp_settings_t *s)
{
    llhttp_settings_init(s);
    s->on_message_begin = on_message_begin;
    s->on_url = on_url;
    s->on_url_complete = on_url_complete;
    s->on_header_field = on_header_field;
    s->on_header_field_complete = on_header_field_complete;
    s->on_header_value = on_header_value;
    s->on_header_value_complete = on_header_value_complete;
    s->on_headers_complete = on_headers_complete;
    s->on_body = on_body;
    s->on_message_complete = on_message_complete;
}

/* ---- the request's accessors ---------------------------------------------------------- */

const char *sl_http_req_method_name(const sl_http_req *r)
{
    return llhttp_method_name((llhttp_method_t)r->llmethod);
}

sl_http_method sl_http_req_method(const sl_http_req *r)
{
    return r->method;
}

const char *sl_http_req_target(const sl_http_req *r)
{
    return r->data.p + r->target;
}

const char *sl_http_req_header(const sl_http_req *r, const char *name)
{
    for (size_t i = 0; i < r->nhdr; i++)
        if (strcasecmp(r->data.p + r->hdr[i].name, name) == 0)
            return r->data.p + r->hdr[i].value;
    return NULL;
}

const char *sl_http_req_body(const sl_http_req *r, size_t *len)
{
    *len = r->body_len;
    return r->data.p + r->body;
}

void sl_http_req_on_gone(sl_http_req *r, sl_http_gone_fn fn, void *arg)
{
    r->gone = fn;
    r->gone_arg = arg;
}

bool sl_http_req_gone(const sl_http_req *r)
{
    return r->conn->gone;
}

bool sl_http_req_hung_up(const sl_http_req *r)
{
    const sl_http_conn *c = r->conn;
    if (c->gone || c->peer_eof || c->fd < 0)
        return true;
    char byte;
    ssize_t n = recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}


void sl_http_req_set_label(sl_http_req *r, const char *label)
{
    sl_buf_clear(&r->label);
    if (label)
        sl_buf_add(&r->label, label, strlen(label) + 1);
}

const char *sl_http_req_label(const sl_http_req *r)
{
    return sl_buf_size(&r->label) ? sl_buf_data(&r->label) : NULL;
}

void sl_http_req_address(const sl_http_req *r, char *out, size_t cap)
{
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    const uint8_t *a = r->conn->addr;
    bool v4 = memcmp(a, v4_mapped, sizeof(v4_mapped)) == 0;
    if (!inet_ntop(v4 ? AF_INET : AF_INET6, v4 ? a + 12 : a, out, (socklen_t)cap) && cap)
        out[0] = '\0';
}
