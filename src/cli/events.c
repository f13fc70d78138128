/* events.c - `sluice events`: the event log, a page or live.
 *
 *   sluice events [--since N] [--claim ID] [--limit N] [--follow]
 *
 * Without --since it shows the latest --limit events (100), or with
 * --follow only what happens from now on. With --follow, events are
 * printed as they arrive, one per line (JSON Lines with --json), until
 * interrupted; the library reconnects with Last-Event-ID when the stream
 * breaks, so none is missed or repeated. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define EVENTS_DEFAULT_LIMIT 100
#define EVENTS_MAX_LIMIT 10000 /* docs/api.md's maximum page */

/* --follow's column widths: a stream cannot be aligned by its longest cell,
 * so every column but the last has a width of its own. SEQ and TIME fit
 * any value, TYPE the longest type, CLAIM an id. HOLDER and LOCKS start at
 * a width that fits the usual (user@host:pid, one or two lock keys); a
 * longer value is printed whole, never cut (it is a log), and the column
 * widens to it for the lines after, never narrowing again: a long holder
 * shifts the columns once, not back and forth. */
#define W_SEQ 7
#define W_TIME 24
#define W_TYPE 17
#define W_CLAIM 22
#define W_HOLDER 24
#define W_LOCKS 24
#define W_ACTOR 10

enum { EF_SINCE = 1, EF_CLAIM, EF_LIMIT, EF_FOLLOW };

static const cli_flag event_flags[] = {
    {"since", true, EF_SINCE},
    {"claim", true, EF_CLAIM},
    {"limit", true, EF_LIMIT},
    {"follow", false, EF_FOLLOW},
    {0},
};

typedef struct follow {
    cli *c;
    const char *claim;
    int w_holder, w_locks, w_actor; /* the widths so far */
} follow;

static int widen(int w, const char *s)
{
    size_t n = strlen(s);
    return n > (size_t)w && n < 4096 ? (int)n : w;
}

static void event_locks(const sl_client_event *ev, cli_buf *b)
{
    if (ev->nlocks == 0)
        cli_buf_add(b, "-");
    for (size_t i = 0; i < ev->nlocks; i++)
        cli_buf_addf(b, "%s%s", i ? "," : "", ev->locks[i]);
}

/* The colour of an event type: that of the state it leads to. */
static const char *event_color(const cli *c, const char *type)
{
    static const struct {
        const char *type, *state;
    } map[] = {{"claim.acquired", "held"},       {"claim.waiting", "pending"},
               {"claim.revoking", "revoking"},   {"claim.expired", "expired"},
               {"claim.timed_out", "timed_out"}, {"claim.superseded", "superseded"},
               {"claim.canceled", "canceled"},   {"claim.withdrawn", "withdrawn"}};
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (type && strcmp(type, map[i].type) == 0)
            return cli_color_state(c, map[i].state);
    return NULL;
}

static int on_event(void *ud, const sl_client_event *ev)
{
    follow *f = ud;
    if (f->claim && (!ev->claim || strcmp(ev->claim, f->claim) != 0))
        return 0;
    if (f->c->json) {
        printf("%s\n", ev->json);
    } else {
        /* A stream cannot be aligned by its longest cell: fixed widths for
         * the short columns, and an absolute time, as in a log. */
        char t[40];
        cli_buf locks = {0};
        const char *col = event_color(f->c, ev->type);
        cli_time_rfc3339(ev->time_ms, t, sizeof(t));
        event_locks(ev, &locks);
        const char *holder = ev->holder ? ev->holder : "-";
        const char *actor = ev->actor ? ev->actor : "-";
        f->w_holder = widen(f->w_holder, holder);
        f->w_locks = widen(f->w_locks, locks.s);
        f->w_actor = widen(f->w_actor, actor);
        cli_buf line = {0};
        cli_buf_addf(&line, "%-*llu %-*s  %s%-*s%s %-*s  %-*s  %-*s  %-*s  %s", W_SEQ,
                     (unsigned long long)ev->seq, W_TIME, t, col ? col : "", W_TYPE, ev->type,
                     col ? cli_color_off(f->c) : "", W_CLAIM, ev->claim ? ev->claim : "-",
                     f->w_holder, holder, f->w_locks, locks.s, f->w_actor, actor,
                     ev->reason ? ev->reason : "");
        while (line.len && line.s[line.len - 1] == ' ')
            line.s[--line.len] = '\0';
        printf("%s\n", line.s);
        cli_buf_free(&line);
        cli_buf_free(&locks);
    }
    fflush(stdout);
    return ferror(stdout) ? 1 : 0; /* a reader gone (EPIPE): stop */
}

static void print_page(cli *c, const sl_client_event_page *page);

/* The first page from since with an event in it (or the end of the log):
 * a read that stopped at the server's scan budget with nothing this token
 * may see is read on from its next rather than printed empty. */
static int one_page(cli *c, sl_client *cl, uint64_t since, const char *claim, size_t limit)
{
    sl_client_error err = {0};
    sl_client_event_page page = {0};
    int st = 0;
    for (;;) {
        if (sl_client_events(cl, since, claim, limit, 0, &page, &err) != SL_CLIENT_OK) {
            st = cli_fail(c, "cannot read events", &err);
            break;
        }
        if (page.n > 0 || !page.partial || page.next <= since) {
            print_page(c, &page);
            break;
        }
        since = page.next;
        sl_client_event_page_free(&page);
    }
    sl_client_event_page_free(&page);
    return st;
}

static void print_page(cli *c, const sl_client_event_page *page)
{
    if (c->json) {
        printf("{\"events\": [");
        for (size_t i = 0; i < page->n; i++)
            printf("%s%s", i ? ",\n  " : "\n  ", page->items[i].json);
        printf("%s], \"next\": %llu}\n", page->n ? "\n" : "", (unsigned long long)page->next);
        return;
    }
    static const char *const h[] = {"SEQ",    "TIME",  "TYPE",  "CLAIM",
                                    "HOLDER", "LOCKS", "ACTOR", "REASON"};
    cli_table *t = cli_table_new(c, 8, h);
    for (size_t i = 0; i < page->n; i++) {
        const sl_client_event *ev = &page->items[i];
        char tm[64];
        cli_buf locks = {0};
        cli_time(c, ev->time_ms, tm, sizeof(tm));
        event_locks(ev, &locks);
        cli_table_cellf(t, NULL, "%llu", (unsigned long long)ev->seq);
        cli_table_cell(t, tm, NULL);
        cli_table_cell(t, ev->type, event_color(c, ev->type));
        cli_table_cell(t, ev->claim ? ev->claim : "-", NULL);
        cli_table_cell(t, ev->holder ? ev->holder : "-", NULL);
        cli_table_cell(t, locks.s, NULL);
        cli_table_cell(t, ev->actor ? ev->actor : "-", NULL);
        cli_table_cell(t, ev->reason ? ev->reason : "", NULL);
        cli_buf_free(&locks);
    }
    cli_table_print(t, stdout, "No events.");
}

int cli_events(cli *c, int argc, char **argv)
{
    long long since = -1, limit = EVENTS_DEFAULT_LIMIT;
    const char *claim = NULL, *val = NULL;
    bool do_follow = false;
    int i = 0;
    for (;;) {
        int r = cli_flag_next(c, event_flags, argc, argv, &i, &val);
        if (r == CLI_HELP)
            return 0;
        if (r == CLI_BAD)
            return CLI_EXIT_USAGE;
        if (r == CLI_END)
            break;
        switch (r) {
        case CLI_ARG:
            return cli_usage(c, "events takes flags only, not '%s'", val);
        case EF_SINCE:
            if (!cli_parse_int(c, "--since", val, 0, INT64_MAX, &since))
                return CLI_EXIT_USAGE;
            break;
        case EF_CLAIM:
            claim = val;
            break;
        case EF_LIMIT:
            if (!cli_parse_int(c, "--limit", val, 1, EVENTS_MAX_LIMIT, &limit))
                return CLI_EXIT_USAGE;
            break;
        case EF_FOLLOW:
            do_follow = true;
            break;
        }
    }
    if (i < argc)
        return cli_usage(c, "events takes flags only");
    int64_t interval, jit;
    if (!cli_duration_env(c, "SLUICE_CLAIM_POLL_INTERVAL", 1000, &interval) ||
        !cli_duration_env(c, "SLUICE_CLAIM_POLL_JITTER", 500, &jit))
        return CLI_EXIT_USAGE;

    sl_client *cl = NULL;
    int st = cli_connect(c, &cl);
    if (st != 0)
        return st;
    sl_client_error err = {0};
    if (since < 0 && !(claim && !do_follow)) {
        /* Where the log ends now: the latest page, or the start of a follow. */
        sl_client_status *s = NULL;
        if (sl_client_status_get(cl, &s, &err) != SL_CLIENT_OK) {
            st = cli_fail(c, "cannot read the server's status", &err);
            sl_client_free(cl);
            return st;
        }
        uint64_t last = s->next_seq > 0 ? s->next_seq - 1 : 0;
        since = do_follow ? (long long)last
                          : (last > (uint64_t)limit ? (long long)(last - (uint64_t)limit) : 0);
        sl_client_status_free(s);
    }
    if (since < 0)
        since = 0;
    if (do_follow) {
        follow f = {c, claim, W_HOLDER, W_LOCKS, W_ACTOR};
        sl_client_retry retry = {interval > 0 ? interval : 1, jit > 0 ? jit : 1};
        if (!c->json && c->style)
            printf("\033[1m%-*s %-*s  %-*s %-*s  %-*s  %-*s  %-*s  %s\033[0m\n", W_SEQ, "SEQ",
                   W_TIME, "TIME", W_TYPE, "TYPE", W_CLAIM, "CLAIM", W_HOLDER, "HOLDER", W_LOCKS,
                   "LOCKS", W_ACTOR, "ACTOR", "REASON");
        fflush(stdout);
        if (sl_client_events_follow(cl, (uint64_t)since, &retry, on_event, &f, &err) !=
            SL_CLIENT_OK)
            st = cli_fail(c, "the event stream failed", &err);
    } else {
        st = one_page(c, cl, (uint64_t)since, claim, (size_t)limit);
    }
    sl_client_free(cl);
    return st;
}
