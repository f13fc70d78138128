/* table.c - how the command prints for people: aligned tables, key/value
 * blocks, colour and times.
 *
 * Columns are as wide as their longest cell (counted in characters, not
 * bytes, so UTF-8 holder names line up), separated by two spaces, the last
 * one never padded. Styling is only for terminals: the header row is bold
 * there, states are coloured unless NO_COLOR is set. Times read "12s ago"
 * or "in 25s" on a terminal and RFC 3339 elsewhere, where a script or a
 * log wants something it can parse. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define ESC_BOLD "\033[1m"
#define ESC_OFF "\033[0m"
#define ESC_RED "\033[31m"
#define ESC_GREEN "\033[32m"
#define ESC_YELLOW "\033[33m"
#define ESC_MAGENTA "\033[35m"
#define ESC_DIM "\033[2m"

/* ---- memory --------------------------------------------------------------- */

_Noreturn void cli_oom(void)
{
    fputs("sluice: out of memory\n", stderr);
    exit(CLI_EXIT_SERVER);
}

void *cli_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        cli_oom();
    return p;
}

char *cli_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = cli_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

/* ---- growable strings ---------------------------------------------------------- */

static void buf_reserve(cli_buf *b, size_t more)
{
    if (b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s)
        cli_oom();
    b->s = s;
    b->cap = cap;
}

void cli_buf_add(cli_buf *b, const char *s)
{
    size_t n = strlen(s);
    buf_reserve(b, n);
    memcpy(b->s + b->len, s, n + 1);
    b->len += n;
}

__attribute__((format(printf, 2, 0))) static void buf_vaddf(cli_buf *b, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0)
        return;
    buf_reserve(b, (size_t)n);
    vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

void cli_buf_addf(cli_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vaddf(b, fmt, ap);
    va_end(ap);
}

void cli_buf_free(cli_buf *b)
{
    free(b->s);
    b->s = NULL;
    b->len = b->cap = 0;
}

void cli_json_list(const char *key, const char *const *items, size_t n, FILE *out)
{
    fprintf(out, "{\"%s\": [", key);
    for (size_t i = 0; i < n; i++)
        fprintf(out, "%s%s", i ? ",\n  " : "\n  ", items[i] ? items[i] : "null");
    fprintf(out, "%s]}\n", n ? "\n" : "");
}

/* ---- colour --------------------------------------------------------------------- */

const char *cli_color_state(const cli *c, const char *state)
{
    if (!c->color || !state)
        return "";
    if (strcmp(state, "held") == 0)
        return ESC_GREEN;
    if (strcmp(state, "pending") == 0)
        return ESC_YELLOW;
    if (strcmp(state, "revoking") == 0)
        return ESC_MAGENTA;
    if (strcmp(state, "released") == 0)
        return ESC_DIM;
    if (sl_client_state_ended(state))
        return ESC_RED;
    return "";
}

const char *cli_color_off(const cli *c)
{
    return c->color ? ESC_OFF : "";
}

/* ---- times ------------------------------------------------------------------------ */

int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t cli_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cli_time_rfc3339(int64_t ms, char *buf, size_t cap)
{
    time_t secs = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    int frac = (int)(ms - (int64_t)secs * 1000);
    struct tm tm;
    if (!gmtime_r(&secs, &tm)) {
        snprintf(buf, cap, "-");
        return;
    }
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf, cap, "%s.%03dZ", base, frac);
}

void cli_time(const cli *c, int64_t ms, char *buf, size_t cap)
{
    if (ms < 0) {
        snprintf(buf, cap, "-");
        return;
    }
    if (!c->out_tty) {
        cli_time_rfc3339(ms, buf, cap);
        return;
    }
    int64_t d = ms - cli_now_ms();
    if (d > -1000 && d < 1000) {
        snprintf(buf, cap, "now");
        return;
    }
    char h[32];
    cli_duration_human(d, h, sizeof(h));
    if (d < 0)
        snprintf(buf, cap, "%s ago", h);
    else
        snprintf(buf, cap, "in %s", h);
}

/* ---- tables ------------------------------------------------------------------------ */

typedef struct cell {
    char *text;
    const char *color; /* static escape or NULL */
} cell;

struct cli_table {
    const cli *c;
    size_t ncols;
    cell *cells; /* header row first */
    size_t n, cap;
};

/* Characters, not bytes: UTF-8 continuation bytes do not count. */
static size_t text_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

static void table_push(cli_table *t, char *text, const char *color)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        cell *cells = realloc(t->cells, cap * sizeof(*cells));
        if (!cells)
            cli_oom();
        t->cells = cells;
        t->cap = cap;
    }
    t->cells[t->n].text = text;
    t->cells[t->n].color = color && *color ? color : NULL;
    t->n++;
}

cli_table *cli_table_new(const cli *c, size_t ncols, const char *const *headers)
{
    cli_table *t = cli_xmalloc(sizeof(*t));
    memset(t, 0, sizeof(*t));
    t->c = c;
    t->ncols = ncols;
    for (size_t i = 0; i < ncols; i++)
        table_push(t, cli_xstrdup(headers[i]), c->style ? ESC_BOLD : NULL);
    return t;
}

void cli_table_cell(cli_table *t, const char *text, const char *color)
{
    table_push(t, cli_xstrdup(text ? text : "-"), color);
}

void cli_table_cellf(cli_table *t, const char *color, const char *fmt, ...)
{
    cli_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    buf_vaddf(&b, fmt, ap);
    va_end(ap);
    table_push(t, b.s ? b.s : cli_xstrdup(""), color);
}

void cli_table_free(cli_table *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++)
        free(t->cells[i].text);
    free(t->cells);
    free(t);
}

void cli_table_print(cli_table *t, FILE *out, const char *empty_msg)
{
    if (t->n <= t->ncols && empty_msg) {
        fprintf(out, "%s\n", empty_msg);
        cli_table_free(t);
        return;
    }
    size_t *width = cli_xmalloc(t->ncols * sizeof(*width));
    memset(width, 0, t->ncols * sizeof(*width));
    for (size_t i = 0; i < t->n; i++) {
        size_t w = text_width(t->cells[i].text);
        if (w > width[i % t->ncols])
            width[i % t->ncols] = w;
    }
    size_t row_end = 0; /* one past the row's last non-empty cell: no trailing blanks */
    for (size_t i = 0; i < t->n; i++) {
        size_t col = i % t->ncols;
        const cell *ce = &t->cells[i];
        if (col == 0) {
            size_t end = i + t->ncols < t->n ? i + t->ncols : t->n;
            row_end = i + 1;
            for (size_t j = i; j < end; j++)
                if (t->cells[j].text[0])
                    row_end = j + 1;
        }
        if (i >= row_end) {
            if (col + 1 == t->ncols || i + 1 == t->n)
                fputc('\n', out);
            continue;
        }
        bool last = i + 1 == row_end;
        if (ce->color)
            fprintf(out, "%s%s%s", ce->color, ce->text, ESC_OFF);
        else
            fputs(ce->text, out);
        if (last) {
            if (col + 1 == t->ncols || i + 1 == t->n)
                fputc('\n', out);
        } else {
            for (size_t pad = text_width(ce->text); pad < width[col] + 2; pad++)
                fputc(' ', out);
        }
    }
    free(width);
    cli_table_free(t);
}

/* ---- key/value blocks ------------------------------------------------------------------ */

struct cli_fields {
    cli_table *t;
};

cli_fields *cli_fields_new(const cli *c)
{
    cli_fields *f = cli_xmalloc(sizeof(*f));
    f->t = cli_xmalloc(sizeof(*f->t));
    memset(f->t, 0, sizeof(*f->t));
    f->t->c = c;
    f->t->ncols = 2;
    return f;
}

void cli_fields_add(cli_fields *f, const char *key, const char *color, const char *fmt, ...)
{
    cli_buf k = {0};
    cli_buf_addf(&k, "%s:", key);
    table_push(f->t, k.s, f->t->c->style ? ESC_BOLD : NULL);
    cli_buf b = {0};
    va_list ap;
    va_start(ap, fmt);
    buf_vaddf(&b, fmt, ap);
    va_end(ap);
    table_push(f->t, b.s ? b.s : cli_xstrdup(""), color);
}

void cli_fields_print(cli_fields *f, FILE *out)
{
    cli_table_print(f->t, out, NULL);
    free(f);
}

/* ---- claims in cells ---------------------------------------------------------------------- */

bool cli_claim_operator_canceled(const sl_client_claim *cl)
{
    static const char words[] = "canceled by an operator";
    return cl && cl->state && strcmp(cl->state, "canceled") == 0 && cl->reason &&
           strncmp(cl->reason, words, sizeof(words) - 1) == 0;
}

void cli_lock_key(const sl_client_claim_lock *l, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s/%s", l->semaphore ? "sem" : "mtx", l->name ? l->name : "?");
}

void cli_claim_locks(const sl_client_claim *cl, cli_buf *out)
{
    if (cl->nlocks == 0)
        cli_buf_add(out, "-");
    for (size_t i = 0; i < cl->nlocks; i++) {
        const sl_client_claim_lock *l = &cl->locks[i];
        cli_buf_addf(out, "%s%s/%s", i ? "," : "", l->semaphore ? "sem" : "mtx",
                     l->name ? l->name : "?");
        if (l->slots > 1)
            cli_buf_addf(out, "*%u", l->slots);
    }
}
