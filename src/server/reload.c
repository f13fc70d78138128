/* reload.c - SIGHUP: the configuration file read again and applied live,
 * as a controller re-reads its ConfigMap (systemctl reload sluiced).
 *
 * The new file is loaded and checked whole before anything changes: a file
 * that does not load (its error has the line and column) or does not check
 * keeps the running configuration. Then, live: tokens (the next request is
 * checked against the new ones, and so are the open event streams and
 * parked long polls: those of a token gone end, the others are filtered by
 * its new prefixes), the HTTP limits (for what arrives from
 * now on), the long-poll cap, retentions of the event log, the stream cap,
 * the default timeout, the log level, and the semaphores of the file with
 * their scheduling rules (the same rule as at start: the file manages those
 * it created and never undoes the API's). What cannot change under a
 * running server is kept, with a warning that it needs a restart: where it
 * listens, its store and durability, shared mode's settings, and the
 * engine's own settings (default lease, backdate skew, claim retention, max
 * claims; a server taking the lead in shared mode builds its engine with
 * the new ones). */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "history.h"
#include "server.h"
#include "tls_client.h"

void sl_reload_warn_exposed(const sl_server *srv)
{
    const sl_conf *c = srv->conf;
    const char *name = NULL;
    for (size_t i = 0; i < c->ntokens && !name; i++)
        if (c->tokens[i].token)
            name = c->tokens[i].name;
    struct stat st;
    if (!name || !srv->config_path || stat(srv->config_path, &st) != 0 || !(st.st_mode & S_IROTH))
        return;
    sl_log(SL_LOG_WARN,
           "%s holds token secrets in clear (token \"%s\"...) and every user may read it "
           "(mode %03o): chmod 600 it (or 640 and the server's group), or give the tokens as "
           "token_sha256 (sluice token new)",
           srv->config_path, name, (unsigned)(st.st_mode & 0777));
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void keep_str(char **dst, const char *running, const char *what)
{
    if (same_str(*dst, running))
        return;
    sl_log(SL_LOG_WARN, "reload: %s changed (\"%s\"); it takes effect at the next restart",
           what, *dst ? *dst : "");
    free(*dst);
    *dst = running ? strdup(running) : NULL;
    if (running && !*dst)
        abort();
}

static void keep_int(int64_t *dst, int64_t running, const char *what)
{
    if (*dst == running)
        return;
    sl_log(SL_LOG_WARN, "reload: %s changed; it takes effect at the next restart", what);
    *dst = running;
}

/* The settings a running server cannot take: the running values win. */
static void keep_fixed(sl_conf *next, const sl_conf *run)
{
    keep_str(&next->listen, run->listen, "listen");
    keep_str(&next->plain_listen, run->plain_listen, "plain_listen");
    keep_str(&next->store, run->store, "store");
    keep_str(&next->advertise, run->advertise, "advertise");
    keep_int(&next->leader_timeout_ms, run->leader_timeout_ms, "leader_timeout");
    int64_t d = next->durability;
    keep_int(&d, run->durability, "durability");
    next->durability = (sl_durability)d;
    int64_t claims = (int64_t)next->max_claims;
    keep_int(&claims, (int64_t)run->max_claims, "limits.max_claims");
    next->max_claims = (size_t)claims;
    /* The engine has these from when it was built. */
    if (next->default_lease_ms != run->default_lease_ms ||
        next->backdate_skew_ms != run->backdate_skew_ms ||
        next->claim_retention_ms != run->claim_retention_ms)
        sl_log(SL_LOG_WARN, "reload: default_lease, backdate_skew and limits.claim_retention take "
                            "effect when the engine is next built (a restart, or a takeover in "
                            "shared mode)");
}

/* Shared mode: what relays prove the leader with (cluster.ca) and the
 * certificate they show it (cluster.cert, else tls.cert). None without
 * cluster.ca unless cluster.insecure: then a relay to an https:// leader
 * is encrypted but proves nothing, as the operator said. */
static int peer_tls(sl_server *srv, bool reload)
{
    const sl_conf *c = srv->conf;
    if (!sl_conf_store_shared(c->store) || (!c->cluster_ca && !c->cluster_insecure)) {
        sl_tls_client_free(srv->peer_tls);
        srv->peer_tls = NULL;
        return 0;
    }
    sl_tls_client_conf t = {.ca = c->cluster_ca,
                            .cert = c->cluster_cert ? c->cluster_cert : c->tls_cert,
                            .key = c->cluster_cert ? c->cluster_key : c->tls_key};
    char err[512] = "";
    sl_tls_client *next = sl_tls_client_new(&t, err, sizeof(err));
    if (!next) {
        sl_log(SL_LOG_ERROR, reload ? "reload: cluster TLS: %s; the files in use are kept"
                                    : "cluster TLS: %s",
               err);
        return -1;
    }
    sl_tls_client_free(srv->peer_tls); /* relays under way keep their reference */
    srv->peer_tls = next;
    return 0;
}

/* TLS's certificate, key and client CAs, read (again) from their files:
 * new connections get them, open ones keep theirs; a bad file keeps the
 * ones in use (on a reload) and says why. In shared mode cluster.ca's
 * certificates are the other servers' (relays that tell who their client
 * is: forward.c). */
int sl_server_tls(sl_server *srv, bool reload)
{
    const sl_conf *c = srv->conf;
    sl_http_tls_conf t = {.cert = c->tls_cert, .key = c->tls_key,
                          .client_ca = c->tls_client_ca,
                          .cluster_ca = sl_conf_store_shared(c->store) ? c->cluster_ca : NULL,
                          .min_version = c->tls_min_version};
    char err[512] = "";
    if (sl_http_set_tls(srv->http, &t, err, sizeof(err)) != 0) {
        sl_log(SL_LOG_ERROR, reload ? "reload: TLS: %s; the certificate in use is kept"
                                    : "TLS: %s",
               err);
        return -1;
    }
    if (reload && c->tls_cert)
        sl_log(SL_LOG_INFO, "reload: TLS certificate %s read again", c->tls_cert);
    return peer_tls(srv, reload);
}

/* HTTP or HTTPS is where the server listens: fixed, like listen. */
static void keep_tls_on(sl_conf *next, const sl_conf *run)
{
    if (!next->tls_cert == !run->tls_cert)
        return;
    sl_log(SL_LOG_WARN, "reload: TLS turned %s; it takes effect at the next restart",
           next->tls_cert ? "on" : "off");
    free(next->tls_cert);
    free(next->tls_key);
    free(next->tls_client_ca);
    next->tls_cert = run->tls_cert ? strdup(run->tls_cert) : NULL;
    next->tls_key = run->tls_key ? strdup(run->tls_key) : NULL;
    next->tls_client_ca = run->tls_client_ca ? strdup(run->tls_client_ca) : NULL;
    next->tls_min_version = run->tls_min_version;
}

static int load(sl_server *srv, sl_conf *next)
{
    char err[1024];
    sl_conf_defaults(next);
    if (sl_conf_load_file(next, srv->config_path, err, sizeof(err)) != 0 ||
        (srv->apply_flags && srv->apply_flags(next, srv->apply_flags_arg) != 0) ||
        sl_conf_check(next, err, sizeof(err)) != 0) {
        sl_log(SL_LOG_ERROR, "reload: %s; the running configuration is kept",
               err[0] ? err : "the command line's flags do not apply");
        sl_conf_free(next);
        return -1;
    }
    return 0;
}

static void reload_file(sl_server *srv)
{
    if (!srv->config_path) {
        sl_server_tls(srv, true);
        sl_log(SL_LOG_WARN, "SIGHUP: no configuration file to read again (sluiced was started "
                            "without --config)");
        return;
    }
    sl_conf next;
    if (load(srv, &next) != 0)
        return;
    keep_fixed(&next, srv->conf);
    keep_tls_on(&next, srv->conf);
    const char *open = sl_conf_open_problem(&next);
    if (open) {
        /* Removing the last token must not open a server off loopback. */
        sl_log(SL_LOG_ERROR, "reload: %s %s; the running configuration is kept", next.listen, open);
        sl_conf_free(&next);
        return;
    }
    const char *cluster = sl_conf_cluster_problem(&next);
    if (cluster) {
        /* Nor may a first token go out to a leader nobody proved. */
        sl_log(SL_LOG_ERROR, "reload: this server %s; the running configuration is kept", cluster);
        sl_conf_free(&next);
        return;
    }
    /* The swap: requests are handled between loop turns, and no request
     * keeps a pointer into the configuration across turns. */
    sl_conf old = *srv->conf;
    *srv->conf = next;
    /* Before the old tokens go: what is parked or streaming holds the
     * token it was admitted with, and is checked against the new list. */
    sl_waits_reauth(srv, &old);
    sl_streams_reauth(srv, &old);
    sl_conf_free(&old);
    if (srv->history)
        sl_history_retenant(srv->history);
    sl_log_set_level(srv->conf->log_level);
    sl_store_set_scan_budget(srv->store, srv->conf->max_event_scan);
    sl_http_opts limits = sl_server_http_opts(srv);
    sl_http_set_limits(srv->http, &limits);
    sl_server_tls(srv, true);
    if (sl_role_serves(srv) && !srv->store_failed) {
        /* A configuration is saved with the source of the batch it is
         * captured in: what the API changed before goes out first, then
         * the file's changes, each in batches of their own. */
        sl_commit_drain(srv);
        /* The file's rule reads each semaphore's saved source from the
         * state tables: bring them up to date first, with the writer
         * (which applies them too) stopped meanwhile. */
        sl_writer_stop(srv);
        if (sl_store_apply(srv->store) != 0)
            sl_log(SL_LOG_WARN, "reload: %s", sl_store_error(srv->store));
        if (sl_writer_start(srv) != 0)
            abort();
        sl_server_apply_file_semaphores(srv, sl_server_now(srv));
        sl_commit_drain(srv);
        sl_store_set_source(srv->store, SL_SOURCE_API);
    }
    sl_log(SL_LOG_INFO, "reload: %s read again: %zu semaphores, %zu tokens",
           srv->config_path, srv->conf->nsemaphores, srv->conf->ntokens);
    sl_reload_warn_exposed(srv);
}

void sl_reload(sl_server *srv)
{
    reload_file(srv);
    /* Whether the file loaded or not: a rotated audit log is let go. */
    if (sl_audit_on(srv) || srv->conf->audit_path)
        sl_audit_open(srv);
}
