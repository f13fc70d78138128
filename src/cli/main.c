/* main.c - the `sluice` command: global flags, dispatch, errors.
 *
 *   sluice [--server URL] [--token T] [--cacert F] [--cert F --key F] [--json] COMMAND [ARGS...]
 *
 * Global flags may come before the command or among its own flags (but not
 * after run's "--"). Every command reaches the server through libsluice
 * alone; this file turns the library's errors into a sentence on stderr
 * that says what to do, and an exit status (docs/cli.md). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const cli_flag no_flags[] = {{0}};

/* ---- errors ------------------------------------------------------------------- */

int cli_usage(const cli *c, const char *fmt, ...)
{
    va_list ap;
    fputs("sluice: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (c->command)
        fprintf(stderr, "\nTry 'sluice %s --help'.\n", c->command);
    else
        fputs("\nTry 'sluice --help'.\n", stderr);
    return c->usage_status;
}

static const char *server_url(const cli *c)
{
    if (c->server)
        return c->server;
    const char *env = getenv("SLUICE_SERVER");
    return env && *env ? env : SL_CLIENT_DEFAULT_SERVER;
}

bool cli_tls_failed(const sl_client_error *err)
{
    return err->rc == SL_CLIENT_ECONNECT && strncmp(err->code, "tls_", 4) == 0;
}

int cli_fail(const cli *c, const char *what, const sl_client_error *err)
{
    const char *msg = err->message[0] ? err->message : sl_client_strerror(err->rc);
    fprintf(stderr, "sluice: %s: %s\n", what, msg);
    switch (err->rc) {
    case SL_CLIENT_ECONNECT:
    case SL_CLIENT_ETIMEOUT:
        if (cli_tls_failed(err))
            return CLI_EXIT_UNREACHABLE; /* the message says what to give: the server is there */
        if (strchr(server_url(c), ','))
            fprintf(stderr,
                    "Is sluiced running at any of %s? Start them, or point sluice at them with "
                    "--server URL,URL... or SLUICE_SERVER.\n",
                    server_url(c));
        else
            fprintf(stderr,
                    "Is sluiced running at %s? Start it, or point sluice at it with --server "
                    "URL or SLUICE_SERVER.\n",
                    server_url(c));
        return CLI_EXIT_UNREACHABLE;
    case SL_CLIENT_EHTTP:
        if (err->status == 401)
            fputs("Give a token with --token or SLUICE_TOKEN.\n", stderr);
        else if (err->status == 403 && strstr(msg, "needs an admin token"))
            /* no token's prefixes can cover this: say so, not a prefix hint */
            fputs("Give an admin token (admin: true in the server's tokens) with --token or "
                  "SLUICE_TOKEN.\n",
                  stderr);
        else if (err->status == 403 && strstr(msg, "max_priority"))
            fputs("Ask a lower --priority, or use a token whose max_priority allows it.\n", stderr);
        else if (err->status == 403 && strstr(msg, "managed by the configuration file"))
            fputs("Change it in the server's configuration file and reload the server, or use "
                  "an admin token.\n",
                  stderr);
        else if (err->status == 403 && strstr(msg, " permission"))
            /* F7: in the token's prefixes, without the permission the act needs */
            fputs("This token lacks that permission there: use a token that has it (read, "
                  "claim, operate or configure in the server's tokens), or an admin token.\n",
                  stderr);
        else if (err->status == 403 && strstr(msg, "is outside this token's prefixes"))
            /* the holder (its default is USER@HOST:PID): the token is fine */
            fputs("Give a holder under one of those prefixes with --holder or "
                  "SLUICE_HOLDER.\n",
                  stderr);
        else if (err->status == 403)
            fputs("This token may not do that: use a token whose prefixes cover the name, or "
                  "an admin token.\n",
                  stderr);
        return CLI_EXIT_SERVER;
    case SL_CLIENT_EINVAL:
        return c->usage_status;
    case SL_CLIENT_EPROTO:
        fprintf(stderr, "Is %s a sluiced server of version %s?\n", server_url(c),
                SL_CLIENT_VERSION);
        return CLI_EXIT_SERVER;
    default:
        return CLI_EXIT_SERVER;
    }
}

int cli_connect(cli *c, sl_client **out)
{
    sl_client_error err = {0};
    c->opts.server = c->server;
    c->opts.token = c->token;
    c->opts.cacert = c->cacert;
    c->opts.cert = c->cert;
    c->opts.key = c->key;
    int rc = sl_client_new(&c->opts, out, &err);
    if (rc != SL_CLIENT_OK)
        return cli_fail(c, "cannot set up the client", &err);
    return 0;
}

void cli_servers_join(const sl_client *cl, const char *sep, cli_buf *out)
{
    for (size_t i = 0; i < sl_client_server_count(cl); i++) {
        if (i)
            cli_buf_add(out, sep);
        cli_buf_add(out, sl_client_server_at(cl, i));
    }
}

/* ---- flags ------------------------------------------------------------------------- */

enum { G_SERVER = 1000, G_TOKEN, G_JSON, G_HELP, G_CACERT, G_CERT, G_KEY };

static const cli_flag global_flags[] = {
    {"server", true, G_SERVER},
    {"token", true, G_TOKEN},
    {"cacert", true, G_CACERT},
    {"cert", true, G_CERT},
    {"key", true, G_KEY},
    {"json", false, G_JSON},
    {"help", false, G_HELP},
    {0},
};

/* Claim ids are 22 characters of base64url, so one in 64 starts with '-'
 * and one in 4096 with "--": `sluice release "$id"` must take them as ids,
 * not as flags. No flag is that long and shaped so. */
static bool looks_like_id(const char *a)
{
    size_t n = 0;
    for (; a[n]; n++) {
        char ch = a[n];
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              ch == '-' || ch == '_'))
            return false;
    }
    return n == 22;
}

/* "-1", "-250": a negative number is a value (a limit, a priority), never a
 * flag, so that `sluice sem set db -1` says what LIMIT may be rather than
 * calling -1 an unknown flag. No flag is spelt with a digit after '-'. */
static bool looks_like_number(const char *a)
{
    if (a[0] != '-' || a[1] == '\0')
        return false;
    for (a++; *a; a++)
        if ((*a < '0' || *a > '9') && *a != '.')
            return false;
    return true;
}

static const cli_flag *find_flag(const cli_flag *flags, const char *name, size_t n)
{
    for (; flags && flags->name; flags++)
        if (strlen(flags->name) == n && memcmp(flags->name, name, n) == 0)
            return flags;
    return NULL;
}

int cli_flag_next(cli *c, const cli_flag *flags, int argc, char **argv, int *i, const char **val)
{
    for (;;) {
        if (*i >= argc)
            return CLI_END;
        const char *a = argv[*i];
        if (strcmp(a, "--") == 0) {
            (*i)++;
            return CLI_END;
        }
        if (strcmp(a, "-h") == 0) {
            (*i)++;
            cli_help(c->command, stdout);
            return CLI_HELP;
        }
        if (a[0] != '-' || a[1] == '\0' || looks_like_id(a) || looks_like_number(a)) {
            (*i)++;
            *val = a;
            return CLI_ARG;
        }
        if (a[1] != '-')
            return cli_usage(c, "unknown flag '%s' (flags are spelt --name)", a), CLI_BAD;
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t n = eq ? (size_t)(eq - name) : strlen(name);
        const cli_flag *f = find_flag(flags, name, n);
        if (!f)
            f = find_flag(global_flags, name, n);
        if (!f)
            return cli_usage(c, "unknown flag '--%.*s'", (int)n, name), CLI_BAD;
        (*i)++;
        *val = NULL;
        if (f->value) {
            if (eq) {
                *val = eq + 1;
            } else if (*i < argc) {
                *val = argv[(*i)++];
            } else {
                return cli_usage(c, "--%s needs a value", f->name), CLI_BAD;
            }
        } else if (eq) {
            return cli_usage(c, "--%s takes no value", f->name), CLI_BAD;
        }
        switch (f->id) {
        case G_SERVER:
            c->server = *val;
            continue;
        case G_TOKEN:
            c->token = *val;
            continue;
        case G_CACERT:
            c->cacert = *val;
            continue;
        case G_CERT:
            c->cert = *val;
            continue;
        case G_KEY:
            c->key = *val;
            continue;
        case G_JSON:
            c->json = true;
            continue;
        case G_HELP:
            cli_help(c->command, stdout);
            return CLI_HELP;
        default:
            return f->id;
        }
    }
}

bool cli_parse_int(const cli *c, const char *what, const char *s, long long min, long long max,
                   long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno != 0 || v < min || v > max) {
        cli_usage(c, "%s must be a whole number from %lld to %lld, not '%s'", what, min, max, s);
        return false;
    }
    *out = v;
    return true;
}

int cli_args(cli *c, int argc, char **argv, const char **pos, int max, int *n)
{
    int i = 0;
    const char *val = NULL;
    *n = 0;
    for (;;) {
        int r = cli_flag_next(c, NULL, argc, argv, &i, &val);
        if (r == CLI_HELP)
            return -1;
        if (r == CLI_BAD)
            return c->usage_status;
        if (r == CLI_END)
            break;
        if (*n == max)
            return cli_usage(c, "too many arguments (at most %d)", max);
        pos[(*n)++] = val;
    }
    /* After "--", the rest are arguments too (an id may start with '-'). */
    for (; i < argc; i++) {
        if (*n == max)
            return cli_usage(c, "too many arguments (at most %d)", max);
        pos[(*n)++] = argv[i];
    }
    return 0;
}

/* ---- dispatch ------------------------------------------------------------------------ */

typedef struct command {
    const char *name;
    int (*fn)(cli *c, int argc, char **argv);
} command;

static const command commands[] = {
    {"run", cli_run},       {"acquire", cli_acquire}, {"release", cli_release},
    {"renew", cli_renew},   {"sem", cli_sem},         {"pools", cli_sem},
    {"mutex", cli_mutex},   {"queue", cli_queue},     {"claims", cli_claims},
    {"events", cli_events}, {"status", cli_status},   {"import", cli_import},
    {"argo", cli_argo},     {"token", cli_token},     {NULL, NULL},
};

static void setup_output(cli *c)
{
    c->out_tty = isatty(STDOUT_FILENO) == 1;
    c->err_tty = isatty(STDERR_FILENO) == 1;
    const char *term = getenv("TERM");
    c->style = c->out_tty && !(term && strcmp(term, "dumb") == 0);
    /* no-color.org says "set and not empty"; any NO_COLOR turns it off here. */
    c->color = c->style && getenv("NO_COLOR") == NULL;
}

int main(int argc, char **argv)
{
    cli c = {.usage_status = CLI_EXIT_USAGE};
    setup_output(&c);

    /* Global flags before the command. */
    int i = 1;
    const char *val = NULL;
    for (;;) {
        if (i < argc && (strcmp(argv[i], "--version") == 0)) {
            printf("sluice %s\n", SL_CLIENT_VERSION);
            return 0;
        }
        int r = cli_flag_next(&c, no_flags, argc, argv, &i, &val);
        if (r == CLI_HELP)
            return 0;
        if (r == CLI_BAD)
            return CLI_EXIT_USAGE;
        if (r == CLI_END) {
            cli_help(NULL, stderr);
            return CLI_EXIT_USAGE;
        }
        break; /* CLI_ARG: the command */
    }

    if (strcmp(val, "help") == 0) {
        const char *topic = i < argc ? argv[i] : NULL;
        if (!cli_help(topic, stdout)) {
            fprintf(stderr, "sluice: no command '%s'; try 'sluice --help'\n", topic);
            return CLI_EXIT_USAGE;
        }
        return 0;
    }
    if (strcmp(val, "version") == 0) {
        printf("sluice %s\n", SL_CLIENT_VERSION);
        return 0;
    }
    for (const command *cmd = commands; cmd->name; cmd++) {
        if (strcmp(cmd->name, val) == 0) {
            c.command = cmd->name;
            /* Each command sees its own arguments after its name. */
            return cmd->fn(&c, argc - i, argv + i);
        }
    }
    fprintf(stderr, "sluice: no command '%s'.\n", val);
    cli_help(NULL, stderr);
    return CLI_EXIT_USAGE;
}
