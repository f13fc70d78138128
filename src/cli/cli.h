/* cli.h - what the files of the `sluice` command share.
 *
 * The command is a thin layer over libsluice (include/sluice/client.h): it
 * parses flags, calls the library and prints what comes back, as aligned
 * tables for people or as the server's own JSON for scripts. It holds no
 * protocol code. Each command lives in its own file (run.c, acquire.c,
 * sem.c, queue.c, events.c, status.c, argo.c); this header is their common ground:
 * exit statuses, the global context, flag parsing, durations, tables. */
#ifndef SLUICE_CLI_H
#define SLUICE_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sluice/client.h"

/* ---- exit statuses (docs/cli.md lists them all) ---------------------------- */

/* Every command but run. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_SERVER = 1,      /* the server answered an error (404, 409, ...) */
    CLI_EXIT_USAGE = 2,       /* bad flags or arguments */
    CLI_EXIT_UNREACHABLE = 3, /* the server could not be reached */
};

/* `sluice run` passes its command's status through, so its own statuses sit
 * high, like timeout(1)'s, where a command's own rarely are. acquire shares
 * 122-124. */
enum {
    RUN_EXIT_USAGE = 120,       /* bad flags */
    RUN_EXIT_REFUSED = 121,     /* the server refused the claim or answered an error */
    RUN_EXIT_UNREACHABLE = 122, /* no answer from the server within SLUICE_CLAIM_TIMEOUT */
    RUN_EXIT_TIMEOUT = 123,     /* --timeout (server side) or SLUICE_CLAIM_TIMEOUT ran out */
    RUN_EXIT_ENDED = 124,       /* the claim ended before it was held */
    RUN_EXIT_REVOKED = 125,     /* revoked or lease lost while the command ran */
    RUN_EXIT_NOEXEC = 126,      /* the command could not be executed */
    RUN_EXIT_NOTFOUND = 127,    /* the command was not found */
};

/* ---- the context of one invocation ----------------------------------------- */

typedef struct cli {
    const char *command;    /* "run", "sem", ... (for help and messages) */
    const char *server;     /* --server, else NULL ($SLUICE_SERVER or the default) */
    const char *token;      /* --token, else NULL ($SLUICE_TOKEN or none) */
    const char *cacert, *cert, *key; /* --cacert, --cert, --key, else NULL ($SLUICE_...) */
    bool json;              /* --json */
    bool out_tty, err_tty;  /* stdout, stderr are terminals */
    bool style;             /* bold and the like on stdout (a terminal, TERM not dumb) */
    bool color;             /* colour on stdout: style, and NO_COLOR not set */
    int usage_status;       /* CLI_EXIT_USAGE, or RUN_EXIT_USAGE inside run */
    sl_client_options opts; /* from server and token */
} cli;

/* Builds the client; on failure prints why and returns the exit status. */
int cli_connect(cli *c, sl_client **out);
/* Prints "sluice: WHAT: the library's message" and a hint on what to do to
 * stderr; returns the exit status for it (1, 2 or 3). */
int cli_fail(const cli *c, const char *what, const sl_client_error *err);
/* Whether err is a TLS failure that trying again cannot mend (err->code
 * "tls_...": a certificate refused either way, no TLS at the URL). */
bool cli_tls_failed(const sl_client_error *err);
/* Prints "sluice: MESSAGE" and "try 'sluice COMMAND --help'" to stderr;
 * returns c->usage_status. */
int cli_usage(const cli *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Out of memory in the command itself: says so and exits 1. */
_Noreturn void cli_oom(void);
void *cli_xmalloc(size_t n);
char *cli_xstrdup(const char *s);

/* ---- flags ------------------------------------------------------------------- */

typedef struct cli_flag {
    const char *name; /* without the leading "--" */
    bool value;       /* takes a value: --name V or --name=V */
    int id;           /* > 0 */
} cli_flag;

enum {
    CLI_ARG = 0,   /* a positional argument, in *val */
    CLI_END = -1,  /* no more arguments, or "--" (the rest start at *i) */
    CLI_BAD = -2,  /* a usage error, already printed: exit with c->usage_status */
    CLI_HELP = -3, /* --help, already printed: exit 0 */
};

/* Returns the next flag of `flags` (its id, *val its value), a positional
 * argument, or the end. The global flags (--server, --token, --json,
 * --help) are accepted anywhere and handled here. `flags` ends with a
 * zeroed entry and may be NULL. */
int cli_flag_next(cli *c, const cli_flag *flags, int argc, char **argv, int *i, const char **val);
/* For commands with no flags of their own: collects the positional
 * arguments (at most max) into pos, *n of them. Returns 0, -1 after --help
 * (exit 0), or an exit status after a usage message. */
int cli_args(cli *c, int argc, char **argv, const char **pos, int max, int *n);
/* Parses a whole number in [min, max]; false (after a usage message naming
 * what) when it is not one. */
bool cli_parse_int(const cli *c, const char *what, const char *s, long long min, long long max,
                   long long *out);

/* ---- durations (duration.c) ----------------------------------------------------- */

/* "250ms", "30s", "5m", "1h30m", "1.5s", or a number of seconds ("10"): the
 * server's grammar exactly (no day unit). 0 on success, -1 when s is not a
 * duration. */
int cli_duration_parse(const char *s, int64_t *ms);
/* The same for the value of a flag or variable `name` ("--lease",
 * "SLUICE_CLAIM_TIMEOUT"): false after a usage message naming it, which
 * says what to write instead of a day unit ("2d": "48h"). */
bool cli_duration_arg(const cli *c, const char *name, const char *val, int64_t *out);
/* ms as the shortest exact duration string ("1h30m", "250ms", "0"). */
void cli_duration_format(int64_t ms, char *buf, size_t cap);
/* The same, but "none" for 0 (a lease or timeout that is not set). */
void cli_duration_none(int64_t ms, char *buf, size_t cap);
/* ms rounded to at most two units, for people ("1h30m", "12s", "2d3h"):
 * output only, never read back. */
void cli_duration_human(int64_t ms, char *buf, size_t cap);
/* A duration from an environment variable, else def; false (after a
 * message naming the variable) when it is set but not a duration. */
bool cli_duration_env(const cli *c, const char *var, int64_t def, int64_t *out);

/* ---- output (table.c) --------------------------------------------------------- */

/* Colours by name; empty strings when colour is off. */
const char *cli_color_state(const cli *c, const char *state);
const char *cli_color_off(const cli *c);

/* A time for people: relative ("12s ago", "in 25s") on a terminal, RFC 3339
 * otherwise, "-" when ms is -1. */
void cli_time(const cli *c, int64_t ms, char *buf, size_t cap);
/* RFC 3339 UTC with milliseconds. */
void cli_time_rfc3339(int64_t ms, char *buf, size_t cap);
/* Unix milliseconds now. */
int64_t cli_now_ms(void);
/* Monotonic milliseconds, for deadlines. */
int64_t cli_mono_ms(void);

typedef struct cli_table cli_table;
/* A table whose columns are aligned by their longest cell. The header row
 * is bold when styles are on. */
cli_table *cli_table_new(const cli *c, size_t ncols, const char *const *headers);
/* Appends one cell to the current row (a new row starts after ncols cells);
 * color is an escape from cli_color_* or NULL. The text is copied. */
void cli_table_cell(cli_table *t, const char *text, const char *color);
void cli_table_cellf(cli_table *t, const char *color, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints the table to out (nothing but the header when it has no rows,
 * unless empty_msg is set: then that line instead) and frees it. */
void cli_table_print(cli_table *t, FILE *out, const char *empty_msg);
void cli_table_free(cli_table *t);

/* "Key:   value" lines for one object, keys aligned. */
typedef struct cli_fields cli_fields;
cli_fields *cli_fields_new(const cli *c);
void cli_fields_add(cli_fields *f, const char *key, const char *color, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void cli_fields_print(cli_fields *f, FILE *out);

/* A growable string for JSON lists built from the server's own JSON. */
typedef struct cli_buf {
    char *s;
    size_t len, cap;
} cli_buf;
void cli_buf_add(cli_buf *b, const char *s);
void cli_buf_addf(cli_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cli_buf_free(cli_buf *b);
/* The client's servers joined by sep (main.c): its one URL, or the whole
 * list (for a child's SLUICE_SERVER with ","; for people with ", "). */
void cli_servers_join(const sl_client *cl, const char *sep, cli_buf *out);
/* Prints {"KEY": [json, json, ...]} built from the items' JSON texts. */
void cli_json_list(const char *key, const char *const *items, size_t n, FILE *out);

/* Whether a claim ended by an operator's cancel (`sluice queue cancel`):
 * state canceled with the server's reason "canceled by an operator". */
bool cli_claim_operator_canceled(const sl_client_claim *cl);
/* "mtx/NAME" or "sem/NAME" for a claim's lock. */
void cli_lock_key(const sl_client_claim_lock *l, char *buf, size_t cap);
/* The claim's locks as "mtx/a, sem/db*2" for a table cell. */
void cli_claim_locks(const sl_client_claim *cl, cli_buf *out);

/* ---- signals as bytes (sigpipe.c) ------------------------------------------------- */

/* Signal handlers and other threads may only write to a pipe; the main
 * thread of run and acquire reads what happened from it, one record at a
 * time, in poll(). */
typedef struct cli_note {
    int what;       /* a signal number, or one of the CLI_NOTE_* below */
    bool from_user; /* a signal sent by a process (kill), not by the terminal */
} cli_note;

enum {
    CLI_NOTE_HOLD_DONE = 200, /* the waiting thread has an answer */
    CLI_NOTE_LOST = 201,      /* the keeper says the claim is no longer safe */
};

/* Opens the pipe (once); false after printing why. */
bool cli_sigpipe_open(void);
/* Catches sig: each delivery becomes a record. */
void cli_sigpipe_catch(int sig);
/* Back to the default action for every signal caught (in a child). */
void cli_sigpipe_reset(void);
/* Posts a record (async-signal-safe; from any thread). */
void cli_sigpipe_post(int what);
/* Waits at most timeout_ms (-1: no limit) for a record: 1 with *out, 0 on
 * timeout. */
int cli_sigpipe_wait(int64_t timeout_ms, cli_note *out);
/* Blocks (block true) or unblocks the signals caught, in this thread, so
 * that threads started meanwhile never run the handlers. */
void cli_sigpipe_block(bool block);

/* ---- the lock flags and getting a claim held (hold.c) ---------------------------- */

#define CLI_MAX_LOCKS 64 /* docs/api.md: at most 64 locks in one claim */
#define CLI_MAX_TAGS 64
#define CLI_MAX_GROUPS 8 /* docs/api.md: at most 8 groups in one claim */

/* Flag ids shared by run and acquire, and their table entries. */
enum {
    CF_MUTEX = 100,
    CF_SEMAPHORE,
    CF_TAG,
    CF_GROUP,
    CF_CANCEL,
    CF_GRACE,
    CF_PRIORITY,
    CF_REBALANCE_KEY,
    CF_LEASE,
    CF_TIMEOUT,
    CF_HOLDER,
    CF_LIMIT,
};
/* clang-format off */
#define CLI_CLAIM_FLAGS                                                                        \
    {"mutex", true, CF_MUTEX}, {"semaphore", true, CF_SEMAPHORE}, {"tag", true, CF_TAG},       \
    {"group", true, CF_GROUP}, {"cancel", true, CF_CANCEL}, {"grace", true, CF_GRACE},         \
    {"priority", true, CF_PRIORITY}, {"rebalance-key", true, CF_REBALANCE_KEY},                \
    {"lease", true, CF_LEASE}, {"timeout", true, CF_TIMEOUT}, {"holder", true, CF_HOLDER},     \
    {"limit", true, CF_LIMIT}
/* clang-format on */

typedef struct cli_claim_flags {
    sl_client_lock_req locks[CLI_MAX_LOCKS];
    size_t nlocks;
    sl_client_tag_req tags[CLI_MAX_TAGS];
    size_t ntags;
    /* Each --group with the --cancel given after it (NULL: none). */
    sl_client_group_req groups[CLI_MAX_GROUPS];
    size_t ngroups;
    /* A --cancel before any --group: the one group's, as it always was. */
    const char *cancel_first;
    const char *rebalance_key, *holder;
    int priority;
    int64_t grace_ms, lease_ms, timeout_ms; /* -1: not given */
    char *owned[CLI_MAX_LOCKS + 2 * CLI_MAX_TAGS];
    size_t nowned;
} cli_claim_flags;

void cli_claim_flags_init(cli_claim_flags *f);
void cli_claim_flags_free(cli_claim_flags *f);
/* The shortest lease run and acquire accept (0, none, aside): their keeper
 * renews every third of the lease, and a lease shorter than a few round
 * trips would run out between renewals, stopping the command for nothing. */
#define CLI_LEASE_MIN_MS 1000
/* false (after a usage message naming `name`, the flag or variable, and
 * saying why) when ms is a lease below CLI_LEASE_MIN_MS. */
bool cli_lease_check(const cli *c, const char *name, const char *val, int64_t ms);
/* Takes one of the CF_* flags; false after a usage message. --limit is
 * the inline limit of the --semaphore just before it; --cancel applies to
 * the --group just before it (before any, to the one --group). */
bool cli_claim_flag(const cli *c, cli_claim_flags *f, int id, const char *val);
/* After the last flag: false (after a usage message) when no lock was given,
 * --cancel came without --group, or before the first of several. */
bool cli_claim_flags_check(const cli *c, const cli_claim_flags *f);

/* Creates the claim and waits until it is held: a long poll on the create
 * itself, then sl_client_claim_await, retrying while the server cannot be
 * reached (SLUICE_CLAIM_POLL_INTERVAL, SLUICE_CLAIM_POLL_JITTER) for at most
 * SLUICE_CLAIM_TIMEOUT, or --timeout and a little more. On a terminal,
 * stderr shows why it waits, updated in place. SIGINT, SIGTERM, SIGHUP and
 * SIGQUIT while waiting withdraw the claim and end the process by that
 * signal. Returns 0 with *out the held claim (free it), or one of
 * RUN_EXIT_* after printing why. */
int cli_claim_hold(cli *c, const cli_claim_flags *f, sl_client_claim **out);
/* The default holder: $SLUICE_HOLDER, else user@host:pid. */
void cli_default_holder(pid_t pid, char *buf, size_t cap);
/* The pid in acquire's default holder and the process its keeper watches
 * (cli_caller_pid); set by acquire before cli_claim_hold, 0 for run. */
extern pid_t cli_acquire_caller;

/* The lease run and acquire send when --lease is not given: SLUICE_LEASE,
 * else 30s (at least CLI_LEASE_MIN_MS, or 0). false after a usage message. */
#define CLI_DEFAULT_LEASE_MS 30000
bool cli_default_lease(const cli *c, int64_t *ms);

/* ---- acquire's keeper (keep.c) ---------------------------------------------------- */

/* The process acquire works for: its parent, or, when that is a forked
 * copy of its own parent (a subshell running `$(sluice acquire ...)`), the
 * first ancestor that is not. */
pid_t cli_caller_pid(void);
/* Leaves a detached process that renews the held claim's lease while
 * caller_pid lives, releases the claim when it is gone, and stops when the
 * claim ends. Returns once that process runs (0), or -1 with why. */
int cli_keep_start(cli *c, const sl_client_claim *claim, pid_t caller_pid, char *why,
                   size_t why_cap);

/* ---- help (help.c) -------------------------------------------------------------- */

/* Prints the help of a command (NULL or unknown: the overview) to out;
 * false when the command is unknown. */
bool cli_help(const char *command, FILE *out);

/* ---- commands ------------------------------------------------------------------- */

int cli_run(cli *c, int argc, char **argv);
int cli_acquire(cli *c, int argc, char **argv);
int cli_release(cli *c, int argc, char **argv);
int cli_renew(cli *c, int argc, char **argv);
int cli_sem(cli *c, int argc, char **argv);
int cli_mutex(cli *c, int argc, char **argv);
int cli_queue(cli *c, int argc, char **argv);
int cli_claims(cli *c, int argc, char **argv);
int cli_events(cli *c, int argc, char **argv);
int cli_status(cli *c, int argc, char **argv);
int cli_import(cli *c, int argc, char **argv);
int cli_argo(cli *c, int argc, char **argv);
int cli_token(cli *c, int argc, char **argv);

#endif
