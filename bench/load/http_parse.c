/* http_parse.c - the HTTP/1.1 response parser of the load generator (no I/O).
 *
 * A push parser: bytes go in as they arrive, in pieces of any size, and it
 * says when the response is complete. It follows RFC 9112 for what a client
 * must accept, and refuses what it cannot frame safely:
 *  - lines end in CRLF; a bare LF is accepted too (RFC 9112 section 2.2
 *    allows it), a bare CR anywhere is refused;
 *  - obsolete line folding is refused rather than unfolded: no server we
 *    talk to folds, and a refused response is better than a misread one;
 *  - Content-Length together with Transfer-Encoding is refused (RFC 9112
 *    section 6.3: a sign of response splitting), as are two different
 *    Content-Lengths;
 *  - the only transfer coding is chunked; chunk extensions are skipped, and
 *    trailer fields are checked for syntax and dropped;
 *  - interim 1xx responses are skipped; 101 (a protocol switch) is refused.
 * Field values are NUL-terminated in place in the header buffer, so the
 * response's strings need no copies. */
#include <stdlib.h>
#include <string.h>

#include "http.h"

#define BODY_FIRST_CAP 4096

static int fail(sl_http_parser *p, int code, const char *why)
{
    p->state = SL_HTTP_P_ERROR;
    p->error = code;
    p->why = why;
    return code;
}

static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field values and reason phrases: visible ASCII, obs-text, SP and HTAB. */
static bool is_field_char(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

static char lower(char c)
{
    return (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
}

/* s (n bytes) equals the lower-case word, ignoring ASCII case. */
static bool equals_word(const char *s, size_t n, const char *word)
{
    size_t i;
    if (strlen(word) != n)
        return false;
    for (i = 0; i < n; i++)
        if (lower(s[i]) != word[i])
            return false;
    return true;
}

static void reset_fields(sl_http_parser *p)
{
    p->seen_status = false;
    p->have_length = false;
    p->close = false;
    p->keep_alive_token = false;
    p->length = 0;
    p->head_len = 0;
    p->line_start = 0;
    memset(&p->resp, 0, sizeof p->resp);
}

void sl_http_parser_init(sl_http_parser *p, bool head_request)
{
    p->body = NULL;
    p->body_cap = 0;
    sl_http_parser_reset(p, head_request);
}

void sl_http_parser_reset(sl_http_parser *p, bool head_request)
{
    reset_fields(p);
    p->state = SL_HTTP_P_HEAD;
    p->head_request = head_request;
    p->error = 0;
    p->why = NULL;
    p->left = 0;
    p->line_len = 0;
}

void sl_http_parser_free(sl_http_parser *p)
{
    free(p->body);
    p->body = NULL;
    p->body_cap = 0;
}

/* Room for need bytes of body plus the terminating NUL. */
static int body_reserve(sl_http_parser *p, size_t need)
{
    size_t cap;
    char *nb;
    if (need > SL_HTTP_MAX_BODY)
        return fail(p, SL_HTTP_ETOOBIG, "body over 1 MiB");
    if (need + 1 <= p->body_cap)
        return 0;
    cap = p->body_cap ? p->body_cap : BODY_FIRST_CAP;
    while (cap < need + 1)
        cap *= 2;
    if (cap > SL_HTTP_MAX_BODY + 1)
        cap = SL_HTTP_MAX_BODY + 1;
    nb = realloc(p->body, cap);
    if (!nb)
        return fail(p, SL_HTTP_ENOMEM, "out of memory for the body");
    p->body = nb;
    p->body_cap = cap;
    return 0;
}

static int body_append(sl_http_parser *p, const char *data, size_t n)
{
    int rc = body_reserve(p, p->resp.body_len + n);
    if (rc < 0)
        return rc;
    memcpy(p->body + p->resp.body_len, data, n);
    p->resp.body_len += n;
    return 0;
}

static void finish(sl_http_parser *p)
{
    if (p->body) {
        p->body[p->resp.body_len] = '\0';
        p->resp.body = p->body;
    } else {
        p->resp.body = "";
    }
    p->resp.keep_alive = p->resp.keep_alive && p->state != SL_HTTP_P_BODY_EOF;
    p->state = SL_HTTP_P_DONE;
}

/* "HTTP/1.1 201 Created": version, three-digit status, optional reason. */
static int parse_status_line(sl_http_parser *p, char *s, size_t n)
{
    size_t i;
    if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0)
        return fail(p, SL_HTTP_EPROTO, "the status line does not start with HTTP/1.x");
    if (s[7] < '0' || s[7] > '9' || s[8] != ' ')
        return fail(p, SL_HTTP_EPROTO, "bad HTTP version in the status line");
    if (s[9] < '1' || s[9] > '5' || s[10] < '0' || s[10] > '9' || s[11] < '0' || s[11] > '9')
        return fail(p, SL_HTTP_EPROTO, "the status code is not three digits from 100 to 599");
    if (n > 12 && s[12] != ' ')
        return fail(p, SL_HTTP_EPROTO, "no space after the status code");
    for (i = 13; i < n; i++)
        if (!is_field_char((unsigned char)s[i]))
            return fail(p, SL_HTTP_EPROTO, "control character in the reason phrase");
    p->resp.minor_version = s[7] - '0';
    p->resp.status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
    p->resp.reason = n > 12 ? s + 13 : s + 12; /* s[n] is the NUL */
    p->seen_status = true;
    return 0;
}

static int on_content_length(sl_http_parser *p, const char *v, size_t n)
{
    uint64_t len = 0;
    size_t i;
    if (n == 0)
        return fail(p, SL_HTTP_EPROTO, "empty Content-Length");
    for (i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return fail(p, SL_HTTP_EPROTO, "Content-Length is not a decimal number");
        /* Anything past the body bound is refused later; saturate instead
         * of overflowing. */
        len = len > UINT64_MAX / 20 ? UINT64_MAX / 2 : len * 10 + (uint64_t)(v[i] - '0');
    }
    if (p->have_length && p->length != len)
        return fail(p, SL_HTTP_EPROTO, "two different Content-Length fields");
    p->have_length = true;
    p->length = len;
    return 0;
}

static int on_transfer_encoding(sl_http_parser *p, const char *v, size_t n)
{
    if (p->resp.chunked)
        return fail(p, SL_HTTP_EPROTO, "chunked applied twice");
    if (!equals_word(v, n, "chunked"))
        return fail(p, SL_HTTP_EUNSUPPORTED, "a transfer coding other than chunked");
    p->resp.chunked = true;
    return 0;
}

/* Connection is a comma-separated list of options. */
static void on_connection(sl_http_parser *p, const char *v, size_t n)
{
    size_t i = 0;
    while (i < n) {
        size_t start, end;
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        start = i;
        while (i < n && v[i] != ',')
            i++;
        end = i;
        while (end > start && (v[end - 1] == ' ' || v[end - 1] == '\t'))
            end--;
        if (equals_word(v + start, end - start, "close"))
            p->close = true;
        else if (equals_word(v + start, end - start, "keep-alive"))
            p->keep_alive_token = true;
    }
}

/* "Name: value" (s is NUL-terminated at n). In a trailer the field is only
 * checked. */
static int parse_field(sl_http_parser *p, char *s, size_t n, bool trailer)
{
    char *colon, *v, *end;
    size_t i, name_len;
    if (s[0] == ' ' || s[0] == '\t')
        return fail(p, SL_HTTP_EPROTO, "obsolete line folding");
    colon = memchr(s, ':', n);
    if (!colon || colon == s)
        return fail(p, SL_HTTP_EPROTO, "a header line without a field name and colon");
    name_len = (size_t)(colon - s);
    for (i = 0; i < name_len; i++)
        if (!is_tchar((unsigned char)s[i]))
            return fail(p, SL_HTTP_EPROTO, "bad character in a field name");
    v = colon + 1;
    end = s + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    for (i = 0; v + i < end; i++)
        if (!is_field_char((unsigned char)v[i]))
            return fail(p, SL_HTTP_EPROTO, "control character in a field value");
    *end = '\0';
    if (trailer)
        return 0;
    if (equals_word(s, name_len, "content-length"))
        return on_content_length(p, v, (size_t)(end - v));
    if (equals_word(s, name_len, "transfer-encoding"))
        return on_transfer_encoding(p, v, (size_t)(end - v));
    if (equals_word(s, name_len, "connection"))
        on_connection(p, v, (size_t)(end - v));
    else if (equals_word(s, name_len, "location"))
        p->resp.location = v;
    return 0;
}

/* The blank line ended the header block: decide how the body is framed. */
static int end_of_head(sl_http_parser *p)
{
    int status = p->resp.status;
    if (status >= 100 && status < 200) {
        if (status == 101)
            return fail(p, SL_HTTP_EUNSUPPORTED, "101 Switching Protocols");
        reset_fields(p); /* an interim response: the real one follows */
        return 0;
    }
    if (p->resp.chunked && p->have_length)
        return fail(p, SL_HTTP_EPROTO, "both Content-Length and Transfer-Encoding");
    p->resp.head_len = p->head_len;
    p->resp.keep_alive =
        p->resp.minor_version >= 1 ? !p->close : (p->keep_alive_token && !p->close);
    if (p->head_request || status == 204 || status == 304) {
        finish(p);
    } else if (p->resp.chunked) {
        p->state = SL_HTTP_P_CHUNK_LINE;
        p->line_len = 0;
    } else if (p->have_length) {
        if (p->length > SL_HTTP_MAX_BODY)
            return fail(p, SL_HTTP_ETOOBIG, "Content-Length over 1 MiB");
        if (body_reserve(p, (size_t)p->length) < 0)
            return p->error;
        p->left = p->length;
        p->state = SL_HTTP_P_BODY_LEN;
        if (p->left == 0)
            finish(p);
    } else {
        p->state = SL_HTTP_P_BODY_EOF; /* delimited by the close */
    }
    return 0;
}

/* One complete line of the header block or of the trailers, from
 * head[line_start] up to and including its LF. */
static int head_line(sl_http_parser *p)
{
    char *s = p->head + p->line_start;
    size_t n = p->head_len - p->line_start - 1;
    bool trailer = p->state == SL_HTTP_P_TRAILER;
    if (n > 0 && s[n - 1] == '\r')
        n--;
    s[n] = '\0';
    p->line_start = p->head_len;
    if (memchr(s, '\r', n))
        return fail(p, SL_HTTP_EPROTO, "a bare CR inside a line");
    if (!trailer && !p->seen_status)
        return parse_status_line(p, s, n);
    if (n == 0) {
        if (!trailer)
            return end_of_head(p);
        finish(p);
        return 0;
    }
    return parse_field(p, s, n, trailer);
}

/* Header or trailer lines: copied into head[] (whose size bounds both) and
 * handled one complete line at a time. */
static int feed_lines(sl_http_parser *p, const char *data, size_t len, size_t *i)
{
    sl_http_parse_state state = p->state;
    while (*i < len && p->state == state) {
        const char *nl = memchr(data + *i, '\n', len - *i);
        size_t n = nl ? (size_t)(nl - (data + *i)) + 1 : len - *i;
        int rc;
        if (n > SL_HTTP_MAX_HEAD - p->head_len)
            return fail(p, SL_HTTP_ETOOBIG, "header block over 16 KiB");
        memcpy(p->head + p->head_len, data + *i, n);
        p->head_len += n;
        *i += n;
        if (!nl)
            return 0;
        rc = head_line(p);
        if (rc < 0)
            return rc;
    }
    return 0;
}

/* "1a2b ; name=value" : hex size, optional whitespace, optional extensions
 * (skipped, but no control characters). */
static int parse_chunk_line(sl_http_parser *p, const char *s, size_t n)
{
    uint64_t size = 0;
    size_t i = 0;
    for (; i < n; i++) {
        char c = lower(s[i]);
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        if (d < 0)
            break;
        size = size * 16 + (uint64_t)d;
        if (size > SL_HTTP_MAX_BODY)
            return fail(p, SL_HTTP_ETOOBIG, "a chunk over 1 MiB");
    }
    if (i == 0)
        return fail(p, SL_HTTP_EPROTO, "a chunk size that is not hexadecimal");
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    if (i < n && s[i] != ';')
        return fail(p, SL_HTTP_EPROTO, "garbage after a chunk size");
    for (; i < n; i++)
        if (!is_field_char((unsigned char)s[i]))
            return fail(p, SL_HTTP_EPROTO, "control character in a chunk extension");
    if (size == 0) {
        p->state = SL_HTTP_P_TRAILER;
        p->line_start = p->head_len;
        return 0;
    }
    if (body_reserve(p, p->resp.body_len + (size_t)size) < 0)
        return p->error;
    p->left = size;
    p->state = SL_HTTP_P_CHUNK_DATA;
    return 0;
}

static int feed_chunk_line(sl_http_parser *p, const char *data, size_t len, size_t *i)
{
    const char *nl = memchr(data + *i, '\n', len - *i);
    size_t n = nl ? (size_t)(nl - (data + *i)) + 1 : len - *i;
    size_t line_n;
    if (n > SL_HTTP_MAX_CHUNK_LINE - p->line_len)
        return fail(p, SL_HTTP_ETOOBIG, "a chunk-size line over 1 KiB");
    memcpy(p->line + p->line_len, data + *i, n);
    p->line_len += n;
    *i += n;
    if (!nl)
        return 0;
    line_n = p->line_len - 1;
    if (line_n > 0 && p->line[line_n - 1] == '\r')
        line_n--;
    p->line_len = 0;
    return parse_chunk_line(p, p->line, line_n);
}

/* Body bytes of a Content-Length body or of one chunk. */
static int feed_counted(sl_http_parser *p, const char *data, size_t len, size_t *i)
{
    size_t n = len - *i;
    int rc;
    if (n > p->left)
        n = (size_t)p->left;
    rc = body_append(p, data + *i, n);
    if (rc < 0)
        return rc;
    *i += n;
    p->left -= n;
    if (p->left == 0) {
        if (p->state == SL_HTTP_P_BODY_LEN)
            finish(p);
        else
            p->state = SL_HTTP_P_CHUNK_CR;
    }
    return 0;
}

/* The CRLF (or LF) that ends a chunk's data. */
static int feed_chunk_end(sl_http_parser *p, char c)
{
    if (p->state == SL_HTTP_P_CHUNK_CR && c == '\r') {
        p->state = SL_HTTP_P_CHUNK_LF;
        return 0;
    }
    if (c == '\n') {
        p->state = SL_HTTP_P_CHUNK_LINE;
        return 0;
    }
    return fail(p, SL_HTTP_EPROTO, "chunk data longer than its size");
}

int sl_http_parser_feed(sl_http_parser *p, const char *data, size_t len, size_t *used)
{
    size_t i = 0;
    int rc = 0;
    while (rc == 0 && i < len && p->state != SL_HTTP_P_DONE && p->state != SL_HTTP_P_ERROR) {
        switch (p->state) {
        case SL_HTTP_P_HEAD:
        case SL_HTTP_P_TRAILER:
            rc = feed_lines(p, data, len, &i);
            break;
        case SL_HTTP_P_BODY_LEN:
        case SL_HTTP_P_CHUNK_DATA:
            rc = feed_counted(p, data, len, &i);
            break;
        case SL_HTTP_P_BODY_EOF:
            rc = body_append(p, data + i, len - i);
            i = len;
            break;
        case SL_HTTP_P_CHUNK_LINE:
            rc = feed_chunk_line(p, data, len, &i);
            break;
        case SL_HTTP_P_CHUNK_CR:
        case SL_HTTP_P_CHUNK_LF:
            rc = feed_chunk_end(p, data[i++]);
            break;
        default:
            rc = fail(p, SL_HTTP_EPROTO, "parser in an impossible state");
            break;
        }
    }
    *used = i;
    if (p->state == SL_HTTP_P_ERROR)
        return p->error;
    return p->state == SL_HTTP_P_DONE ? 1 : 0;
}

int sl_http_parser_eof(sl_http_parser *p)
{
    switch (p->state) {
    case SL_HTTP_P_DONE:
        return 1;
    case SL_HTTP_P_ERROR:
        return p->error;
    case SL_HTTP_P_BODY_EOF:
        finish(p);
        return 1;
    case SL_HTTP_P_HEAD:
        if (p->head_len == 0 && !p->seen_status)
            return fail(p, SL_HTTP_ECLOSED, "the server closed without responding");
        return fail(p, SL_HTTP_ECLOSED, "the server closed in the middle of the header block");
    default:
        return fail(p, SL_HTTP_ECLOSED, "the server closed in the middle of the body");
    }
}

size_t sl_http_parser_body_so_far(const sl_http_parser *p, const char **body)
{
    *body = p->body;
    return p->body ? p->resp.body_len : 0;
}

void sl_http_parser_body_consume(sl_http_parser *p, size_t n)
{
    if (!p->body || n == 0)
        return;
    if (n > p->resp.body_len)
        n = p->resp.body_len;
    memmove(p->body, p->body + n, p->resp.body_len - n);
    p->resp.body_len -= n;
    if (p->state == SL_HTTP_P_DONE)
        p->body[p->resp.body_len] = '\0';
}

const sl_http_response *sl_http_parser_response(const sl_http_parser *p)
{
    return p->state == SL_HTTP_P_DONE ? &p->resp : NULL;
}

const char *sl_http_strerror(int code)
{
    switch (code) {
    case 0:
        return "success";
    case SL_HTTP_EIO:
        return "socket error";
    case SL_HTTP_ECLOSED:
        return "connection closed early";
    case SL_HTTP_EPROTO:
        return "malformed response";
    case SL_HTTP_ETOOBIG:
        return "response over a size bound";
    case SL_HTTP_EUNSUPPORTED:
        return "unsupported response";
    case SL_HTTP_ETIMEDOUT:
        return "timed out";
    case SL_HTTP_ENOMEM:
        return "out of memory";
    case SL_HTTP_EINVAL:
        return "invalid request";
    case SL_HTTP_EINTERRUPTED:
        return "interrupted";
    case SL_HTTP_ETLS:
        return "TLS failed";
    default:
        return "unknown error";
    }
}
