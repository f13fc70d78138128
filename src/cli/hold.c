/* hold.c - the lock flags of run and acquire, and getting a claim held.
 *
 * Both commands take the same flags (--mutex, --semaphore NAME[:SLOTS],
 * --tag, --group, ...), create one claim and wait until it is held. The
 * wait runs on a thread of its own while the main thread listens to
 * signals: a ^C during a wait of minutes must withdraw the claim at once
 * (else it would keep its place in the queue until its lease ran out, and
 * might even be granted to nobody), and a blocking libcurl call cannot be
 * interrupted safely from a handler. On a terminal, stderr shows why the
 * claim waits, one line updated in place; elsewhere the wait is quiet. */
#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"

/* The long poll on the create itself; the server caps waits near 30 s.
 * On a terminal the create waits only briefly: a claim held within that
 * shows nothing, one that waits longer shows why at once. */
#define CREATE_WAIT_MS 20000
#define CREATE_WAIT_TTY_MS 500
/* With --timeout D the server decides at D; the client gives it this much
 * longer to say so before it gives up on its own. */
#define TIMEOUT_MARGIN_MS 5000
/* "No limit" for sl_client_claim_await: a century. */
#define NO_LIMIT_MS ((int64_t)100 * 365 * 24 * 3600 * 1000)
#define DEFAULT_CLAIM_TIMEOUT_MS (10 * 60 * 1000)
#define DEFAULT_POLL_INTERVAL_MS 1000
#define DEFAULT_POLL_JITTER_MS 500

/* ---- flags ---------------------------------------------------------------------- */

void cli_claim_flags_init(cli_claim_flags *f)
{
    memset(f, 0, sizeof(*f));
    f->grace_ms = f->lease_ms = f->timeout_ms = -1;
}

void cli_claim_flags_free(cli_claim_flags *f)
{
    for (size_t i = 0; i < f->nowned; i++)
        free(f->owned[i]);
    f->nowned = 0;
}

static char *own(cli_claim_flags *f, const char *s, size_t n)
{
    char *p = cli_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    f->owned[f->nowned++] = p;
    return p;
}

static bool all_digits(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* --limit N: the inline limit of the --semaphore just before it, which
 * makes a semaphore of its own for as long as it is used (a run's steps). */
static bool limit_flag(const cli *c, cli_claim_flags *f, const char *val)
{
    sl_client_lock_req *l = f->nlocks ? &f->locks[f->nlocks - 1] : NULL;
    if (!l || !l->semaphore) {
        cli_usage(c, "--limit %s follows the --semaphore it is for (--semaphore NAME[:SLOTS] "
                     "--limit N)%s%s",
                  val, l ? "; the lock before it is --mutex " : "", l ? l->name : "");
        return false;
    }
    if (l->limit) {
        cli_usage(c, "--semaphore %s has two --limit flags: give it one", l->name);
        return false;
    }
    long long n;
    if (!cli_parse_int(c, "--limit", val, 1, 1000000000, &n))
        return false;
    l->limit = (unsigned)n;
    return true;
}

/* --group G, and the --cancel given after it. */
static bool group_flag(const cli *c, cli_claim_flags *f, int id, const char *val)
{
    if (id == CF_GROUP) {
        if (f->ngroups == CLI_MAX_GROUPS) {
            cli_usage(c, "at most %d groups in one claim", CLI_MAX_GROUPS);
            return false;
        }
        f->groups[f->ngroups++] = (sl_client_group_req){.name = val};
        return true;
    }
    if (strcmp(val, "pending") != 0 && strcmp(val, "in-progress") != 0 &&
        strcmp(val, "none") != 0) {
        cli_usage(c, "--cancel takes pending, in-progress or none, not '%s'", val);
        return false;
    }
    /* A later one replaces an earlier one, as when there was one group. */
    if (f->ngroups)
        f->groups[f->ngroups - 1].cancel = val;
    else
        f->cancel_first = val;
    return true;
}

bool cli_claim_flag(const cli *c, cli_claim_flags *f, int id, const char *val)
{
    long long n;
    switch (id) {
    case CF_MUTEX:
    case CF_SEMAPHORE: {
        if (f->nlocks == CLI_MAX_LOCKS) {
            cli_usage(c, "at most %d locks in one claim", CLI_MAX_LOCKS);
            return false;
        }
        sl_client_lock_req *l = &f->locks[f->nlocks];
        l->semaphore = id == CF_SEMAPHORE;
        l->name = val;
        l->slots = 1;
        /* NAME:SLOTS. Names may hold ':' too, so only an all-digit part
         * after the last ':' counts as slots. */
        const char *colon = strrchr(val, ':');
        if (l->semaphore && colon && all_digits(colon + 1)) {
            if (!cli_parse_int(c, "the slots of --semaphore", colon + 1, 1, 1000000000, &n))
                return false;
            l->slots = (unsigned)n;
            l->name = own(f, val, (size_t)(colon - val));
        }
        if (!*l->name) {
            cli_usage(c, "--%s needs a name", l->semaphore ? "semaphore" : "mutex");
            return false;
        }
        f->nlocks++;
        return true;
    }
    case CF_TAG: {
        const char *eq = strchr(val, '=');
        if (!eq || eq == val) {
            cli_usage(c, "--tag takes KEY=VALUE, not '%s'", val);
            return false;
        }
        if (f->ntags == CLI_MAX_TAGS) {
            cli_usage(c, "at most %d tags in one claim", CLI_MAX_TAGS);
            return false;
        }
        f->tags[f->ntags].key = own(f, val, (size_t)(eq - val));
        f->tags[f->ntags].value = eq + 1;
        f->ntags++;
        return true;
    }
    case CF_GROUP:
    case CF_CANCEL:
        return group_flag(c, f, id, val);
    case CF_LIMIT:
        return limit_flag(c, f, val);
    case CF_GRACE:
        return cli_duration_arg(c, "--grace", val, &f->grace_ms);
    case CF_PRIORITY:
        if (!cli_parse_int(c, "--priority", val, INT32_MIN, INT32_MAX, &n))
            return false;
        f->priority = (int)n;
        return true;
    case CF_REBALANCE_KEY:
        f->rebalance_key = val;
        return true;
    case CF_LEASE:
        return cli_duration_arg(c, "--lease", val, &f->lease_ms) &&
               cli_lease_check(c, "--lease", val, f->lease_ms);
    case CF_TIMEOUT:
        return cli_duration_arg(c, "--timeout", val, &f->timeout_ms);
    case CF_HOLDER:
        if (!*val) {
            cli_usage(c, "--holder needs a name");
            return false;
        }
        f->holder = val;
        return true;
    }
    return false;
}

pid_t cli_acquire_caller;

bool cli_default_lease(const cli *c, int64_t *ms)
{
    const char *v = getenv("SLUICE_LEASE");
    return cli_duration_env(c, "SLUICE_LEASE", CLI_DEFAULT_LEASE_MS, ms) &&
           (!v || !*v || cli_lease_check(c, "SLUICE_LEASE", v, *ms));
}

bool cli_lease_check(const cli *c, const char *name, const char *val, int64_t ms)
{
    if (ms == 0 || ms >= CLI_LEASE_MIN_MS)
        return true;
    cli_usage(c,
              "%s%c%s is too short: a lease is 0 (none) or at least 1s, because the keeper "
              "renews it every third of the lease and a shorter one would run out between "
              "renewals",
              name, name[0] == '-' ? ' ' : '=', val);
    return false;
}

bool cli_claim_flags_check(const cli *c, const cli_claim_flags *f)
{
    if (f->nlocks == 0 && f->ntags == 0 && f->ngroups == 0) {
        cli_usage(c, "say what to claim: --mutex NAME, --semaphore NAME[:SLOTS], --tag K=V "
                     "or --group G");
        return false;
    }
    if ((f->cancel_first || f->grace_ms >= 0) && f->ngroups == 0) {
        cli_usage(c, "--cancel and --grace apply to a --group");
        return false;
    }
    /* With one group a --cancel anywhere is its own; with several, which
     * one it meant cannot be told. */
    if (f->cancel_first && f->ngroups > 1) {
        cli_usage(c, "--cancel %s comes before any --group: with several groups, give each "
                     "its --cancel after it (--group G --cancel MODE)",
                  f->cancel_first);
        return false;
    }
    return true;
}

void cli_default_holder(pid_t pid, char *buf, size_t cap)
{
    const char *env = getenv("SLUICE_HOLDER");
    if (env && *env) {
        snprintf(buf, cap, "%s", env);
        return;
    }
    /* USER, else the account of the effective uid: CI containers often
     * leave USER unset, and the holder should still say who it is. */
    char user[256];
    const char *env_user = getenv("USER");
    if (env_user && *env_user) {
        snprintf(user, sizeof(user), "%s", env_user);
    } else {
        struct passwd *pw = getpwuid(geteuid());
        if (pw && pw->pw_name && *pw->pw_name)
            snprintf(user, sizeof(user), "%s", pw->pw_name);
        else
            snprintf(user, sizeof(user), "uid%lu", (unsigned long)geteuid());
    }
    char host[256];
    if (gethostname(host, sizeof(host)) != 0)
        snprintf(host, sizeof(host), "localhost");
    host[sizeof(host) - 1] = '\0';
    snprintf(buf, cap, "%s@%s:%ld", user, host, (long)pid);
}

/* ---- waiting ---------------------------------------------------------------------- */

typedef struct hold {
    cli *c;
    sl_client_claim_req req;
    char grace[32], lease[32], timeout[32], holder[512];
    char idem[33]; /* one Idempotency-Key for every attempt of this claim */
    int64_t deadline; /* monotonic ms */
    int64_t limit_ms; /* what the deadline came from, for messages; 0: none */
    int64_t timeout_ms; /* --timeout, else -1 */
    const char *limit_from;
    sl_client_retry retry;
    uint64_t rng;

    pthread_mutex_t mu; /* guards id and the progress line */
    char *id;           /* once created */
    bool line_shown;    /* a progress line is on stderr */
    char line[1024];    /* the line shown */
    char last_reason[512]; /* the last block reason an answer gave (hold thread only) */
    bool unreachable;   /* the last attempt could not reach the server */
    const char *url;    /* the server's, or the list's (urls) */
    cli_buf urls;       /* a list's servers, for the messages */

    int status; /* the thread's result */
    sl_client_claim *claim;
} hold;

/* Terminal width for the progress line, so it never wraps (a wrapped
 * line cannot be rewritten in place). */
static size_t term_width(void)
{
    struct winsize ws;
    if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
        return ws.ws_col;
    return 80;
}

/* Caller holds h->mu. */
static void line_clear(hold *h)
{
    if (h->line_shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        h->line_shown = false;
    }
}

static void line_show(hold *h, const char *text)
{
    if (!h->c->err_tty)
        return;
    size_t max = term_width() - 1, n = 0, chars = 0;
    for (; text[n] && chars < max; n++)
        if (((unsigned char)text[n] & 0xC0) != 0x80)
            chars++;
    while (text[n] && ((unsigned char)text[n] & 0xC0) == 0x80)
        n++;
    pthread_mutex_lock(&h->mu);
    /* Rewrite only what changed: the same answer again draws nothing. */
    if (!h->line_shown || strlen(h->line) != n || memcmp(h->line, text, n) != 0) {
        fprintf(stderr, "\r\033[K%.*s", (int)n, text);
        fflush(stderr);
        snprintf(h->line, sizeof(h->line), "%.*s", (int)n, text);
    }
    h->line_shown = true;
    pthread_mutex_unlock(&h->mu);
}

/* The place in the queue to show: that of the lock the reason names
 * ("at_limit: mtx/deploy has ..."), else the largest. */
static size_t shown_position(const sl_client_claim *cl)
{
    size_t best = 0;
    for (size_t i = 0; i < cl->nlocks; i++) {
        char key[300];
        cli_lock_key(&cl->locks[i], key, sizeof(key));
        size_t kl = strlen(key);
        const char *at = cl->reason ? strstr(cl->reason, key) : NULL;
        if (at && (at[kl] == ' ' || at[kl] == '\0' || at[kl] == ','))
            return cl->locks[i].position;
        if (cl->locks[i].position > best)
            best = cl->locks[i].position;
    }
    return best;
}

static void progress(void *ud, const sl_client_claim *claim, const sl_client_error *err)
{
    hold *h = ud;
    cli_buf b = {0};
    if (err) {
        h->unreachable = true;
        cli_buf_addf(&b, "waiting: cannot reach %s (%s); retrying", h->url ? h->url : "the server",
                     err->message[0] ? err->message : sl_client_strerror(err->rc));
    } else if (claim) {
        h->unreachable = false;
        if (claim->state && strcmp(claim->state, "pending") != 0) {
            cli_buf_free(&b);
            return; /* held or ended: the caller says what happens next */
        }
        if (claim->reason && *claim->reason)
            snprintf(h->last_reason, sizeof(h->last_reason), "%s", claim->reason);
        cli_buf_addf(&b, "waiting: %s",
                     claim->reason && *claim->reason ? claim->reason : "pending");
        size_t pos = shown_position(claim);
        if (pos)
            cli_buf_addf(&b, " (position %zu)", pos);
    }
    if (b.s)
        line_show(h, b.s);
    cli_buf_free(&b);
}

static bool retryable(int rc, const sl_client_error *err)
{
    if (cli_tls_failed(err))
        return false; /* a certificate refused is refused again */
    if (rc == SL_CLIENT_ECONNECT || rc == SL_CLIENT_ETIMEOUT)
        return true;
    /* unavailable (the store cannot commit), or a proxy in front saying so. */
    return rc == SL_CLIENT_EHTTP &&
           (err->status == 502 || err->status == 503 || err->status == 504);
}

/* xorshift64: jitter needs no quality, and rand() is not thread-safe. */
static int64_t jitter(hold *h)
{
    h->rng ^= h->rng << 13;
    h->rng ^= h->rng >> 7;
    h->rng ^= h->rng << 17;
    return h->retry.jitter_ms > 0 ? (int64_t)(h->rng % (uint64_t)(h->retry.jitter_ms + 1)) : 0;
}

static void sleep_ms(int64_t ms)
{
    if (ms <= 0)
        return;
    struct timespec ts = {.tv_sec = (time_t)(ms / 1000), .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void say(hold *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(hold *h, const char *fmt, ...)
{
    pthread_mutex_lock(&h->mu);
    line_clear(h);
    va_list ap;
    va_start(ap, fmt);
    fputs("sluice: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    pthread_mutex_unlock(&h->mu);
}

static void say_limit(hold *h, char *buf, size_t cap)
{
    if (h->limit_ms > 0) {
        char d[32];
        cli_duration_format(h->limit_ms, d, sizeof(d));
        snprintf(buf, cap, "%s (%s)", h->limit_from, d);
    } else {
        snprintf(buf, cap, "%s", h->limit_from);
    }
}

/* Why the claim was still waiting when time ran out, for the messages:
 * ": it was still waiting because REASON (who holds mtx/m: sluice mutex
 * info m)", from the last answer that said. The pointer names the lock the
 * reason is about, whose holders and queue are what blocked it; `queue
 * why` says nothing once the claim has ended. */
static void why_waiting(const hold *h, const char *id, const sl_client_claim *cl, char *buf,
                        size_t cap)
{
    if (!h->last_reason[0]) {
        snprintf(buf, cap, " (while a claim waits, 'sluice queue why %s' says what blocks it)",
                 id);
        return;
    }
    const sl_client_claim_lock *named = NULL;
    for (size_t i = 0; cl && i < cl->nlocks && !named; i++) {
        char key[300];
        cli_lock_key(&cl->locks[i], key, sizeof(key));
        size_t kl = strlen(key);
        const char *at = strstr(h->last_reason, key);
        if (at && (at[kl] == ' ' || at[kl] == '\0' || at[kl] == ','))
            named = &cl->locks[i];
    }
    if (named)
        snprintf(buf, cap, ": it was still waiting because %s (who holds %s/%s: sluice %s info %s)",
                 h->last_reason, named->semaphore ? "sem" : "mtx", named->name,
                 named->semaphore ? "sem" : "mutex", named->name);
    else
        snprintf(buf, cap, ": it was still waiting because %s", h->last_reason);
}

/* What an answer that is not pending means. */
static int settle(hold *h, sl_client_claim *cl)
{
    if (strcmp(cl->state, "held") == 0)
        return 0;
    if (strcmp(cl->state, "timed_out") == 0) {
        /* The claim's own timeout: --timeout, or the server's default. */
        char d[32], why[1024];
        cli_duration_format(cl->timeout_ms > 0 ? cl->timeout_ms : h->limit_ms, d, sizeof(d));
        why_waiting(h, cl->id, cl, why, sizeof(why));
        say(h, "claim %s timed out after %s%s", cl->id, d, why);
        return RUN_EXIT_TIMEOUT;
    }
    if (strcmp(cl->state, "revoking") == 0) {
        say(h, "claim %s was revoked%s%s before the command could start", cl->id,
            cl->by ? " by " : "", cl->by ? cl->by : "");
        return RUN_EXIT_ENDED;
    }
    if (cli_claim_operator_canceled(cl)) {
        say(h, "claim %s was canceled by an operator (sluice queue cancel) before it was held",
            cl->id);
        return RUN_EXIT_ENDED;
    }
    say(h, "claim %s ended %s before it was held%s%s%s", cl->id, cl->state, cl->reason ? " (" : "",
        cl->reason ? cl->reason : "", cl->reason ? ")" : "");
    return RUN_EXIT_ENDED;
}

static void give_up(hold *h, sl_client *cl);

/* Whether the claim holds the semaphore `name`. */
static bool has_semaphore(const sl_client_claim *cl, const char *name)
{
    for (size_t i = 0; i < cl->nlocks; i++)
        if (cl->locks[i].semaphore && strcmp(cl->locks[i].name, name) == 0)
            return true;
    return false;
}

/* A tag adds a lock only where one is configured for it; a misspelt key
 * ("tennant") adds none, and the claim would guard nothing, silently. The
 * answer lists the locks the tags added: say so for each tag that added
 * none. The claim goes on all the same (other tags or locks may guard it,
 * and a tag may be meant for a limit configured later). */
static void warn_idle_tags(hold *h, const sl_client_claim *cl)
{
    for (size_t i = 0; i < h->req.ntags; i++) {
        const char *k = h->req.tags[i].key, *v = h->req.tags[i].value;
        char one[600], all[600];
        snprintf(one, sizeof(one), "tag/%s=%s", k, v);
        snprintf(all, sizeof(all), "tag/%s", k);
        if (has_semaphore(cl, one) || has_semaphore(cl, all))
            continue;
        say(h,
            "warning: --tag %s=%s adds no lock: none of the semaphores tag/%s=%s, tag/%s=* "
            "or tag/%s is configured (a misspelt key?); the claim goes on without it",
            k, v, k, v, k, k);
    }
}

/* settle, and release a claim revoked before its command could start: it
 * would keep its slots until the revoking claim's grace ran out. */
static int settle_or_release(hold *h, sl_client *cl, sl_client_claim *claim)
{
    int st = settle(h, claim);
    if (st != 0 && strcmp(claim->state, "revoking") == 0)
        give_up(h, cl);
    return st;
}

static void give_up(hold *h, sl_client *cl)
{
    /* Withdraw, so the claim does not keep its place until its lease ends. */
    sl_client_error err = {0};
    sl_client_claim *final = NULL;
    if (sl_client_claim_release(cl, h->id, &final, &err) != SL_CLIENT_OK)
        say(h, "could not withdraw claim %s (%s); its lease will end it", h->id, err.message);
    sl_client_claim_free(final);
}

static int hold_run(hold *h, sl_client *cl)
{
    sl_client_error err = {0};
    sl_client_claim *claim = NULL;
    char lim[96];
    h->url = sl_client_server(cl);
    if (sl_client_server_count(cl) > 1) {
        cli_servers_join(cl, ", ", &h->urls);
        h->url = h->urls.s;
    }
    for (;;) {
        int64_t left = h->deadline - cli_mono_ms();
        if (left <= 0) {
            say_limit(h, lim, sizeof(lim));
            say(h, "could not reach the server within %s: %s", lim,
                err.message[0] ? err.message : sl_client_strerror(err.rc));
            say(h,
                "is sluiced running at %s? Point sluice at it with --server or "
                "SLUICE_SERVER.",
                h->url);
            return RUN_EXIT_UNREACHABLE;
        }
        int64_t wait = h->c->err_tty ? CREATE_WAIT_TTY_MS : CREATE_WAIT_MS;
        /* The create's long poll ends halfway to --timeout, so that an
         * answer has said why the claim waits before the server times it
         * out (the timeout message repeats it). */
        if (h->timeout_ms > 0 && wait > h->timeout_ms / 2)
            wait = h->timeout_ms / 2;
        h->req.wait_ms = left < wait ? left : wait;
        memset(&err, 0, sizeof(err));
        int rc = sl_client_claim_create(cl, &h->req, &claim, &err);
        if (rc == SL_CLIENT_OK)
            break;
        if (!retryable(rc, &err)) {
            pthread_mutex_lock(&h->mu);
            line_clear(h);
            pthread_mutex_unlock(&h->mu);
            if (cli_tls_failed(&err)) {
                cli_fail(h->c, "cannot reach the server", &err);
                return RUN_EXIT_UNREACHABLE;
            }
            int st = cli_fail(h->c, "the claim was refused", &err);
            return st == h->c->usage_status ? h->c->usage_status : RUN_EXIT_REFUSED;
        }
        progress(h, NULL, &err);
        int64_t pause = h->retry.interval_ms + jitter(h);
        left = h->deadline - cli_mono_ms();
        sleep_ms(pause < left ? pause : left);
    }
    pthread_mutex_lock(&h->mu);
    h->id = cli_xstrdup(claim->id);
    pthread_mutex_unlock(&h->mu);
    h->unreachable = false;
    warn_idle_tags(h, claim);

    if (strcmp(claim->state, "pending") != 0) {
        int st = settle_or_release(h, cl, claim);
        if (st == 0)
            h->claim = claim;
        else
            sl_client_claim_free(claim);
        return st;
    }
    progress(h, claim, NULL);
    sl_client_claim_free(claim);
    claim = NULL;

    int64_t left = h->deadline - cli_mono_ms();
    memset(&err, 0, sizeof(err));
    int rc =
        sl_client_claim_await(cl, h->id, left > 0 ? left : 1, &h->retry, progress, h, &claim, &err);
    int st;
    if (rc == SL_CLIENT_OK && claim && strcmp(claim->state, "pending") != 0) {
        st = settle_or_release(h, cl, claim);
    } else if (rc == SL_CLIENT_OK || rc == SL_CLIENT_ETIMEOUT || rc == SL_CLIENT_ECONNECT) {
        /* Out of time: still pending, or the server gone meanwhile. */
        say_limit(h, lim, sizeof(lim));
        if (h->unreachable || rc == SL_CLIENT_ECONNECT) {
            say(h, "could not reach the server within %s; giving up on claim %s", lim, h->id);
            st = RUN_EXIT_UNREACHABLE;
        } else {
            char why[1024];
            why_waiting(h, h->id, claim, why, sizeof(why));
            say(h, "claim %s was not held within %s%s; withdrawing it", h->id, lim, why);
            st = RUN_EXIT_TIMEOUT;
        }
        give_up(h, cl);
    } else {
        pthread_mutex_lock(&h->mu);
        line_clear(h);
        pthread_mutex_unlock(&h->mu);
        cli_fail(h->c, "waiting for the claim failed", &err);
        st = RUN_EXIT_REFUSED;
    }
    if (st == 0)
        h->claim = claim;
    else
        sl_client_claim_free(claim);
    return st;
}

static void *hold_thread(void *arg)
{
    hold *h = arg;
    sl_client *cl = NULL;
    sl_client_error err = {0};
    if (sl_client_new(&h->c->opts, &cl, &err) != SL_CLIENT_OK) {
        cli_fail(h->c, "cannot set up the client", &err);
        h->status = RUN_EXIT_REFUSED;
    } else {
        h->status = hold_run(h, cl);
    }
    pthread_mutex_lock(&h->mu);
    line_clear(h);
    pthread_mutex_unlock(&h->mu);
    sl_client_free(cl);
    h->url = NULL;
    cli_buf_free(&h->urls);
    cli_sigpipe_post(CLI_NOTE_HOLD_DONE);
    return NULL;
}

/* A signal while waiting: withdraw the claim, then die of that signal as
 * the shell expects (a loop stops on a child killed by SIGINT). */
_Noreturn static void interrupted(hold *h, int sig)
{
    pthread_mutex_lock(&h->mu);
    line_clear(h);
    char *id = h->id ? cli_xstrdup(h->id) : NULL;
    pthread_mutex_unlock(&h->mu);
    if (id) {
        sl_client *cl = NULL;
        sl_client_error err = {0};
        sl_client_claim *final = NULL;
        if (sl_client_new(&h->c->opts, &cl, &err) == SL_CLIENT_OK &&
            sl_client_claim_release(cl, id, &final, &err) == SL_CLIENT_OK)
            fprintf(stderr, "sluice: interrupted; claim %s %s\n", id,
                    final && final->state ? final->state : "withdrawn");
        else
            fprintf(stderr, "sluice: interrupted; could not withdraw claim %s (%s)\n", id,
                    err.message);
        sl_client_claim_free(final);
        sl_client_free(cl);
    }
    free(id);
    fflush(stdout);
    signal(sig, SIG_DFL);
    raise(sig);
    /* raise returns when sig cannot end the process at once (blocked while
     * its handler runs): cppcheck takes raise for noreturn, it is not. */
    // cppcheck-suppress unreachableCode
    _exit(128 + sig);
}

static const int hold_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

int cli_claim_hold(cli *c, const cli_claim_flags *f, sl_client_claim **out)
{
    *out = NULL;
    int64_t claim_timeout, interval, jit;
    if (!cli_duration_env(c, "SLUICE_CLAIM_TIMEOUT", DEFAULT_CLAIM_TIMEOUT_MS, &claim_timeout) ||
        !cli_duration_env(c, "SLUICE_CLAIM_POLL_INTERVAL", DEFAULT_POLL_INTERVAL_MS, &interval) ||
        !cli_duration_env(c, "SLUICE_CLAIM_POLL_JITTER", DEFAULT_POLL_JITTER_MS, &jit))
        return c->usage_status;

    hold *h = cli_xmalloc(sizeof(*h));
    memset(h, 0, sizeof(*h));
    h->c = c;
    pthread_mutex_init(&h->mu, NULL);
    /* The library reads 0 as "its default": ask for 1 ms instead. */
    h->retry.interval_ms = interval > 0 ? interval : 1;
    h->retry.jitter_ms = jit > 0 ? jit : 1;
    h->rng = (uint64_t)cli_now_ms() * 2654435761u ^ (uint64_t)getpid() << 32 ^ 0x9E3779B97F4A7C15u;

    sl_client_claim_req *r = &h->req;
    if (f->holder) {
        snprintf(h->holder, sizeof(h->holder), "%s", f->holder);
    } else {
        /* acquire's claim belongs to the script that called it. */
        cli_default_holder(cli_acquire_caller > 0 ? cli_acquire_caller : getpid(), h->holder,
                           sizeof(h->holder));
    }
    r->holder = h->holder;
    /* Every attempt below (the server unreachable, a connection broken
     * mid-answer) sends the same key: an attempt whose answer was lost left
     * a claim, which the next one finds instead of making a second. */
    sl_client_idempotency_key(h->idem);
    r->idempotency_key = h->idem;
    r->locks = f->locks;
    r->nlocks = f->nlocks;
    r->tags = f->tags;
    r->ntags = f->ntags;
    /* One group goes as group and cancel, as it always did; several as
     * groups, each with its own cancel. */
    if (f->ngroups == 1) {
        r->group = f->groups[0].name;
        r->cancel = f->groups[0].cancel ? f->groups[0].cancel : f->cancel_first;
    } else {
        r->groups = f->groups;
        r->ngroups = f->ngroups;
    }
    r->priority = f->priority;
    r->rebalance_key = f->rebalance_key;
    /* Whole milliseconds: what the user typed, checked, in one unit. */
    if (f->grace_ms >= 0) {
        snprintf(h->grace, sizeof(h->grace), "%lldms", (long long)f->grace_ms);
        r->grace = h->grace;
    }
    if (f->lease_ms >= 0) {
        snprintf(h->lease, sizeof(h->lease), "%lldms", (long long)f->lease_ms);
        r->lease = h->lease;
    }
    if (f->timeout_ms >= 0) {
        snprintf(h->timeout, sizeof(h->timeout), "%lldms", (long long)f->timeout_ms);
        r->timeout = h->timeout;
    }
    /* How long to keep at it: --timeout (and a margin for the server's own
     * verdict) when given, else SLUICE_CLAIM_TIMEOUT; 0 is no limit. */
    int64_t limit = f->timeout_ms >= 0 ? f->timeout_ms : claim_timeout;
    h->limit_ms = limit;
    h->timeout_ms = f->timeout_ms;
    h->limit_from = f->timeout_ms >= 0 ? "--timeout" : "SLUICE_CLAIM_TIMEOUT";
    if (limit > 0 && f->timeout_ms >= 0)
        limit += TIMEOUT_MARGIN_MS;
    h->deadline = cli_mono_ms() + (limit > 0 ? limit : NO_LIMIT_MS);

    if (!cli_sigpipe_open()) {
        pthread_mutex_destroy(&h->mu);
        free(h);
        return RUN_EXIT_REFUSED;
    }
    for (size_t i = 0; i < sizeof(hold_signals) / sizeof(hold_signals[0]); i++)
        cli_sigpipe_catch(hold_signals[i]);

    pthread_t t;
    cli_sigpipe_block(true);
    int prc = pthread_create(&t, NULL, hold_thread, h);
    cli_sigpipe_block(false);
    if (prc != 0) {
        fprintf(stderr, "sluice: cannot start a thread: %s\n", strerror(prc));
        cli_sigpipe_reset();
        pthread_mutex_destroy(&h->mu);
        free(h);
        return RUN_EXIT_REFUSED;
    }
    for (;;) {
        cli_note n;
        if (cli_sigpipe_wait(-1, &n) != 1)
            continue;
        if (n.what == CLI_NOTE_HOLD_DONE)
            break;
        for (size_t i = 0; i < sizeof(hold_signals) / sizeof(hold_signals[0]); i++)
            if (n.what == hold_signals[i])
                interrupted(h, n.what);
    }
    pthread_join(t, NULL);
    cli_sigpipe_reset();

    int st = h->status;
    *out = h->claim;
    free(h->id);
    pthread_mutex_destroy(&h->mu);
    free(h);
    return st;
}
