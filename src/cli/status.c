/* status.c - `sluice status`: the server, its store and its counts.
 *
 * Also the quickest check that sluice can reach the server (exit 3 when it
 * cannot) and that the store commits (exit 1 while /healthz says 503).
 *
 * In shared mode each server says its role (leader, follower,
 * campaigning), the leader epoch it knows and who leads. Given a list of
 * servers, status asks each of them in turn (/healthz is answered by the
 * server asked, never relayed) and prints one row per server, after the
 * fields of the leader's answer (it alone has the counts), or of the first
 * that answered when none leads. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* ---- one server ------------------------------------------------------------------ */

static void add_count(cli_fields *f, const sl_client_status *s, const char *key, uint64_t n)
{
    if (s->counted)
        cli_fields_add(f, key, NULL, "%llu", (unsigned long long)n);
    else
        cli_fields_add(f, key, NULL, "-"); /* a follower's: the leader has them */
}

static void print_fields(const cli *c, const char *url, const sl_client_status *s)
{
    bool ok = s->status && strcmp(s->status, "ok") == 0;
    cli_fields *f = cli_fields_new(c);
    cli_fields_add(f, "Server", NULL, "%s", url);
    cli_fields_add(f, "Status", cli_color_state(c, ok ? "held" : "expired"), "%s",
                   s->status ? s->status : "-");
    cli_fields_add(f, "Version", NULL, "%s", s->version ? s->version : "-");
    cli_fields_add(f, "Store", NULL, "%s", s->store ? s->store : "-");
    if (s->role)
        cli_fields_add(f, "Role", NULL, "%s", s->role);
    if (s->self) { /* shared mode */
        cli_fields_add(f, "Epoch", NULL, "%llu", (unsigned long long)s->epoch);
        cli_fields_add(f, "Leader", NULL, "%s", s->leader ? s->leader : "none");
    }
    add_count(f, s, "Pending", s->pending);
    add_count(f, s, "Held", s->held);
    add_count(f, s, "Ended", s->ended);
    add_count(f, s, "Events", s->next_seq ? s->next_seq - 1 : 0);
    cli_fields_print(f, stdout);
}

static int status_one(cli *c, sl_client *cl)
{
    sl_client_status *s = NULL;
    sl_client_error err = {0};
    int st = 0;
    if (sl_client_status_get(cl, &s, &err) != SL_CLIENT_OK)
        st = cli_fail(c, "cannot read the server's status", &err);
    else if (c->json)
        printf("%s\n", s->json);
    else
        print_fields(c, sl_client_server(cl), s);
    sl_client_status_free(s);
    return st;
}

/* ---- a list of servers ------------------------------------------------------------- */

typedef struct probe {
    const char *url;
    sl_client_status *st; /* NULL when it failed: err says why */
    sl_client_error err;
} probe;

/* Asks one server alone: a client of its own, so nothing fails over. */
static void probe_one(cli *c, probe *p)
{
    sl_client_options o = c->opts;
    o.server = p->url;
    sl_client *one = NULL;
    if (sl_client_new(&o, &one, &p->err) == SL_CLIENT_OK)
        sl_client_status_get(one, &p->st, &p->err);
    sl_client_free(one);
}

/* The answer whose fields are shown: the leader's, else the first. */
static const probe *summary(const probe *p, size_t n)
{
    const probe *first = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!p[i].st)
            continue;
        if (p[i].st->role && strcmp(p[i].st->role, "leader") == 0)
            return &p[i];
        if (!first)
            first = &p[i];
    }
    return first;
}

static void print_rows(const cli *c, const probe *p, size_t n)
{
    static const char *const h[] = {"SERVER", "ROLE", "EPOCH", "LEADER", "ERROR"};
    cli_table *t = cli_table_new(c, 5, h);
    for (size_t i = 0; i < n; i++) {
        const sl_client_status *s = p[i].st;
        bool leads = s && s->role && strcmp(s->role, "leader") == 0;
        cli_table_cell(t, p[i].url, NULL);
        cli_table_cell(t, s && s->role ? s->role : "-", leads ? cli_color_state(c, "held") : NULL);
        if (s && s->self)
            cli_table_cellf(t, NULL, "%llu", (unsigned long long)s->epoch);
        else
            cli_table_cell(t, "-", NULL);
        cli_table_cell(t, s && s->leader ? s->leader : "-", NULL);
        if (s)
            cli_table_cell(t, "-", NULL);
        else
            cli_table_cell(t,
                           p[i].err.message[0] ? p[i].err.message : sl_client_strerror(p[i].err.rc),
                           cli_color_state(c, "expired"));
    }
    cli_table_print(t, stdout, NULL);
}

/* s as a JSON string: our own words (an error message) may hold quotes. */
static void json_string(cli_buf *b, const char *s)
{
    cli_buf_add(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            cli_buf_addf(b, "\\%c", ch);
        else if (ch < 0x20)
            cli_buf_addf(b, "\\u%04x", ch);
        else
            cli_buf_addf(b, "%c", ch);
    }
    cli_buf_add(b, "\"");
}

/* {"servers": [{"server": URL, "health": {...}} or {"server": URL,
 * "error": {"status": N, "code": C, "message": M}}, ...]} */
static void print_json(const probe *p, size_t n)
{
    cli_buf b = {0};
    cli_buf_add(&b, "{\"servers\":[");
    for (size_t i = 0; i < n; i++) {
        cli_buf_add(&b, i ? ",{\"server\":" : "{\"server\":");
        json_string(&b, p[i].url);
        if (p[i].st) {
            cli_buf_addf(&b, ",\"health\":%s}", p[i].st->json);
            continue;
        }
        cli_buf_addf(&b, ",\"error\":{\"status\":%ld,\"code\":", p[i].err.status);
        json_string(&b, p[i].err.code);
        cli_buf_add(&b, ",\"message\":");
        json_string(&b, p[i].err.message);
        cli_buf_add(&b, "}}");
    }
    cli_buf_add(&b, "]}");
    printf("%s\n", b.s);
    cli_buf_free(&b);
}

/* None answered: the exit status and message of an answered error (1)
 * before those of an unreachable server (3). */
static int all_failed(const cli *c, const probe *p, size_t n)
{
    const probe *worst = &p[n - 1];
    for (size_t i = 0; i < n; i++)
        if (p[i].err.rc == SL_CLIENT_EHTTP)
            worst = &p[i];
    return cli_fail(c, "no server of the list answered", &worst->err);
}

static int status_list(cli *c, const sl_client *cl)
{
    size_t n = sl_client_server_count(cl);
    probe *p = cli_xmalloc(n * sizeof(*p));
    memset(p, 0, n * sizeof(*p));
    for (size_t i = 0; i < n; i++) {
        p[i].url = sl_client_server_at(cl, i);
        probe_one(c, &p[i]);
    }
    const probe *sum = summary(p, n);
    if (c->json) {
        print_json(p, n);
    } else {
        if (sum) {
            print_fields(c, sum->url, sum->st);
            fputc('\n', stdout);
        }
        print_rows(c, p, n);
    }
    int st = 0;
    if (!sum) {
        fflush(stdout);
        st = all_failed(c, p, n);
    } else if (!sum->st->status || strcmp(sum->st->status, "ok") != 0) {
        st = CLI_EXIT_SERVER;
    }
    for (size_t i = 0; i < n; i++)
        sl_client_status_free(p[i].st);
    free(p);
    return st;
}

int cli_status(cli *c, int argc, char **argv)
{
    const char *pos[1];
    int n, st = cli_args(c, argc, argv, pos, 1, &n);
    if (st != 0)
        return st < 0 ? 0 : st;
    if (n)
        return cli_usage(c, "status takes no arguments");
    sl_client *cl = NULL;
    if ((st = cli_connect(c, &cl)) != 0)
        return st;
    st = sl_client_server_count(cl) > 1 ? status_list(c, cl) : status_one(c, cl);
    sl_client_free(cl);
    return st;
}
