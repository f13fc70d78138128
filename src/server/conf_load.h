/* conf_load.h - what the files that read sluiced's configuration file share
 * (conf_file.c: the schema, the scalars and the load; conf_walk.c: where in
 * the file a key is, and what libcyaml refused; conf_sems.c: a semaphore's
 * rules and weights; conf_tokens.c: the tokens). conf_file.c's head comment
 * tells how a load goes. */
#ifndef SL_SERVER_CONF_LOAD_H
#define SL_SERVER_CONF_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include <cyaml/cyaml.h>
#include <yaml.h>

#include "conf_int.h"

/* ---- the file: raw strings by schema (every scalar a string) ---------------- */

/* Per-token quotas, in sl_quota's order (limits.token_quotas, tokens[].quotas). */
typedef struct raw_quotas {
    char *v[SL_QUOTA_COUNT];
} raw_quotas;

typedef struct raw_limits {
    char *max_body, *max_headers, *max_connections, *max_connections_per_client;
    char *max_claims, *max_streams, *max_event_scan, *max_semaphores;
    char *max_wait, *idle_timeout, *header_timeout, *event_retention, *claim_retention;
    raw_quotas *token_quotas;
} raw_limits;

/* Its weights are not here: libcyaml reads only keys its schema names, and
 * a weight's key is the file's own, so the schema skips `weights` and
 * conf_sems.c reads them from libyaml's document. */
typedef struct raw_sem {
    char *name, *limit, *strategy, *lease, *overtake_limit;
    char *preempt, *preempt_grace, *max_pending, *on_full, *default_weight;
    char *rate, *burst, *backdate;
} raw_sem;

/* A token's client certificate: one of its names (conf_tokens.c). */
typedef struct raw_cert {
    char *cn, *dns, *uri, *email;
} raw_cert;

typedef struct raw_token {
    char *name, *token, *admin;
    char *token_sha256;
    raw_cert *certificate;
    char **prefixes;
    unsigned prefixes_count;
    /* F7: prefixes per permission (sl_perm) */
    char **read, **claim, **operate, **configure;
    unsigned read_count, claim_count, operate_count, configure_count;
    char *max_priority;
    raw_quotas *quotas;
} raw_token;

typedef struct raw_tls {
    char *cert, *key, *client_ca, *min_version;
} raw_tls;

typedef struct raw_cluster {
    char *ca, *cert, *key, *insecure;
} raw_cluster;

typedef struct raw_audit {
    char *path, *on_failure;
} raw_audit;

typedef struct raw_conf {
    char *listen, *store, *durability, *log_level, *default_lease, *default_timeout;
    char *backdate_skew;
    char *advertise, *leader_timeout, *plain_listen;
    raw_limits *limits;
    raw_tls *tls;
    raw_cluster *cluster;
    raw_audit *audit;
    raw_sem *semaphores;
    unsigned semaphores_count;
    raw_token *tokens;
    unsigned tokens_count;
    char **allowed_hosts;
    unsigned allowed_hosts_count;
    char *insecure_open;
} raw_conf;

/* The schema of the whole file (conf_file.c); the walk follows it too. */
extern const cyaml_schema_value_t sl__conf_top_schema;

/* One load: the file's text, libcyaml's log, where the error goes. */
typedef struct loader {
    const char *file; /* the path, as the messages name it */
    unsigned char *text;
    size_t len;
    char log[LOG_CAP];
    size_t loglen;
    char *err;
    size_t errlen;
    const yaml_mark_t *here; /* where fail() points, if set: a node of the weights */
} loader;

/* ---- errors (conf_walk.c) ----------------------------------------------------- */

/* "FILE:LINE:COL: PATH: MSG" into ld->err, the place found by walking the
 * file (or ld->here, a node of the weights); returns -1. */
__attribute__((format(printf, 3, 4))) int sl__conf_fail(loader *ld, const char *path,
                                                        const char *fmt, ...);
/* Where a key path's value (or key) is in the file. */
bool sl__conf_locate(const loader *ld, const char *path, bool key, yaml_mark_t *mark);
/* libcyaml refused the file: says what and where in ld->err. */
void sl__conf_cyaml_failed(loader *ld, cyaml_err_t e);

/* ---- scalars (conf_file.c): each returns 0, or -1 after sl__conf_fail ------- */

int sl__conf_duration(loader *ld, const char *path, const char *s, int64_t *out);
/* A whole number of digits only, at most max; `like` is an example. */
int sl__conf_count(loader *ld, const char *path, const char *s, uint64_t max, const char *like,
                   uint64_t *out);
int sl__conf_bool(loader *ld, const char *path, const char *s, bool *out);
/* A whole number from lo to max, like sl__conf_count. */
int sl__conf_range(loader *ld, const char *path, const char *s, uint64_t lo, uint64_t max,
                   const char *like, uint64_t *out);

/* ---- lists: each replaces n's list with the file's -------------------------- */

int sl__conf_semaphores(loader *ld, const raw_conf *r, sl_conf *n); /* conf_sems.c */
int sl__conf_tokens(loader *ld, const raw_conf *r, sl_conf *n);     /* conf_tokens.c */
/* The quotas given (a whole number each) into out, a 0 ("none") as zero;
 * the others unchanged (conf_tokens.c). at is the path of the mapping
 * ("limits.token_quotas"). */
int sl__conf_quotas(loader *ld, const char *at, const raw_quotas *q, uint64_t zero,
                    uint64_t *out);
/* The schema of a quotas mapping (conf_file.c). */
extern const cyaml_schema_field_t sl__conf_quota_fields[];

#endif
