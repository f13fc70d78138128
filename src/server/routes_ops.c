/* routes_ops.c - /healthz and /metrics. The dashboard (every other path
 * outside /v1/) is ui.c. */
#include <string.h>


#include "history.h"
#include "server.h"

/* /healthz and /metrics take GET (and HEAD); anything else is 405. */
static bool get_only(sl_ctx *c, const char *const *known)
{
    if (!sl_query_only(c, known))
        return false;
    if (c->method == SL_HTTP_GET || c->method == SL_HTTP_HEAD)
        return true;
    sl_allow(c, "GET");
    sl_reply_error(c, 405, "method_not_allowed", "%s takes GET", c->path);
    return false;
}

/* How much of the health answer a caller sees (F14 in docs/security.md):
 * anyone reaching the port learns only that the server serves and its
 * role; a valid token also the version, the epoch and the counts; the
 * store (a path, or a database host and user) and the servers' URLs are
 * for admins. A server without tokens admits everyone as admin: its whole
 * API is open anyway. */
typedef enum { HEALTH_ANYONE, HEALTH_TOKEN, HEALTH_ADMIN } health_level;

static health_level health_level_of(sl_ctx *c)
{
    if (!sl_auth_identify(c))
        return HEALTH_ANYONE;
    return c->auth.admin ? HEALTH_ADMIN : HEALTH_TOKEN;
}

static json_t *health_body(sl_server *srv, health_level level);

void sl_route_health(sl_ctx *c)
{
    if (!get_only(c, NULL))
        return;
    health_level level = health_level_of(c);
    if (c->srv->store_failed) {
        /* The reason may name the database's host: admins only. */
        sl_reply_error(c, 503, "unavailable",
                       "the store cannot commit (changes are refused and retried every "
                       "second)%s%s",
                       level == HEALTH_ADMIN ? ": " : "",
                       level == HEALTH_ADMIN ? c->srv->store_error : "");
        return;
    }
    sl_reply_json(c, 200, health_body(c->srv, level));
}

/* GET /v1/status: the leader's /healthz, wherever it is asked (a follower
 * relays it): the claim counts and next_seq, which a follower's own
 * /healthz does not have. Every caller here has a valid token. */
void sl_route_status(sl_ctx *c)
{
    c->route = SL_ROUTE_STATUS;
    if (!get_only(c, NULL))
        return;
    sl_reply_json(c, 200, health_body(c->srv, c->auth.admin ? HEALTH_ADMIN : HEALTH_TOKEN));
}

/* GET /v1/whoami: which token the request carries and what it may do, so
 * that a client (the dashboard) can leave out the actions it would be
 * refused. It tells a token only about itself. */
void sl_route_whoami(sl_ctx *c)
{
    c->route = SL_ROUTE_WHOAMI;
    if (!get_only(c, NULL))
        return;
    sl_reply_json(c, 200, sl_auth_whoami(c));
}

static json_t *health_body(sl_server *srv, health_level level)
{
    sl_role role = srv->role == SL_ROLE_SINGLE ? SL_ROLE_LEADER : srv->role;
    json_t *body = json_pack("{s:s,s:s}", "status", "ok", "role", sl_role_name(role));
    if (level == HEALTH_ANYONE)
        return body;
    json_object_set_new(body, "version", json_string(SL_VERSION));
    if (level == HEALTH_ADMIN)
        json_object_set_new(body, "store", json_string(srv->store_label));
    if (srv->role != SL_ROLE_SINGLE) {
        /* Shared mode: who leads, as this server knows it. */
        json_object_set_new(body, "epoch", json_integer((json_int_t)srv->view.epoch));
        if (level == HEALTH_ADMIN) {
            json_object_set_new(body, "leader", srv->view.leader[0]
                                                    ? json_string(srv->view.leader)
                                                    : json_null());
            json_object_set_new(body, "self", json_string(srv->advertise));
        }
    }
    if (sl_role_serves(srv)) { /* the counts are the leader's to give */
        sl_engine_stats st;
        sl_engine_stats_get(srv->eng, &st);
        json_object_set_new(body, "claims",
                            json_pack("{s:I,s:I,s:I}", "pending", (json_int_t)st.pending, "held",
                                      (json_int_t)st.held, "ended", (json_int_t)st.ended));
        json_object_set_new(body, "next_seq", json_integer((json_int_t)st.next_seq));
    }
    return body;
}

/* Whether a lock exists: held or waited for, or a semaphore of its own
 * configuration (not one a pattern made). Its wait histogram in /metrics
 * lasts as long as it does; the engine's idle locks, kept for their
 * tokens only, have none. */
static bool lock_live(void *ud, const char *key)
{
    const sl_engine *eng = ud;
    sl_kind kind = strncmp(key, "sem/", 4) == 0 ? SL_KIND_SEMAPHORE : SL_KIND_MUTEX;
    sl_lock_view v;
    if (sl_lock_lookup(eng, kind, key + 4, &v, NULL) != 0)
        return false;
    return v.nholders > 0 || v.npending > 0 || (v.configured && !v.from_pattern);
}

void sl_route_metrics(sl_ctx *c)
{
    c->route = SL_ROUTE_METRICS;
    static const char *const known[] = {"server", NULL};
    if (!get_only(c, known))
        return;
    const char *server = sl_query_get(c, "server");
    if (server && strcmp(server, "self") != 0) {
        sl_reply_error(c, 400, "bad_request",
                       "server=\"%.64s\" is not understood; server=self asks for this server's "
                       "own metrics (in shared mode /metrics is the leader's)",
                       server);
        return;
    }
    if (!c->auth.admin) {
        sl_reply_error(c, 403, "forbidden",
                       "the metrics span every lock: reading them needs an admin token");
        return;
    }
    sl_buf *b = sl_reply_scratch();
    sl_buf_addf(b, "# HELP sluice_build_info The running sluiced's version.\n"
                   "# TYPE sluice_build_info gauge\nsluice_build_info{version=\"%s\"} 1\n",
                SL_VERSION);
    sl_metrics_render(&c->srv->metrics, c->srv->eng, b);
    sl_history_render_metrics(c->srv->history, lock_live, c->srv->eng, b);
    sl_buf_addf(b,
                "# HELP sluice_store_log_unapplied Batches in the store's log not yet applied to "
                "its state tables.\n# TYPE sluice_store_log_unapplied gauge\n"
                "sluice_store_log_unapplied %llu\n",
                (unsigned long long)sl_store_log_unapplied(c->srv->store));
    sl_role_metrics(c->srv, b);
    sl_quota_metrics(c->srv, b);
    sl_reply_text(c, 200, "text/plain; version=0.0.4; charset=utf-8", sl_buf_data(b),
                  sl_buf_size(b));
}
