/* status.c - `sluice status`: the server, its store and its counts.
 *
 * Also the quickest check that sluice can reach the server (exit 3 when it
 * cannot) and that the store commits (exit 1 while /healthz says 503). */
#include <string.h>

#include "cli.h"

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
    sl_client_status *s = NULL;
    sl_client_error err = {0};
    if (sl_client_status_get(cl, &s, &err) != SL_CLIENT_OK) {
        st = cli_fail(c, "cannot read the server's status", &err);
    } else if (c->json) {
        printf("%s\n", s->json);
    } else {
        bool ok = s->status && strcmp(s->status, "ok") == 0;
        cli_fields *f = cli_fields_new(c);
        cli_fields_add(f, "Server", NULL, "%s", sl_client_server(cl));
        cli_fields_add(f, "Status", cli_color_state(c, ok ? "held" : "expired"), "%s",
                       s->status ? s->status : "-");
        cli_fields_add(f, "Version", NULL, "%s", s->version ? s->version : "-");
        cli_fields_add(f, "Store", NULL, "%s", s->store ? s->store : "-");
        cli_fields_add(f, "Pending", NULL, "%llu", (unsigned long long)s->pending);
        cli_fields_add(f, "Held", NULL, "%llu", (unsigned long long)s->held);
        cli_fields_add(f, "Ended", NULL, "%llu", (unsigned long long)s->ended);
        cli_fields_add(f, "Events", NULL, "%llu",
                       (unsigned long long)(s->next_seq ? s->next_seq - 1 : 0));
        cli_fields_print(f, stdout);
    }
    sl_client_status_free(s);
    sl_client_free(cl);
    return st;
}
