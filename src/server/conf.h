/* conf.h - sluiced's configuration: defaults, the YAML file, the command line.
 *
 * The YAML file (libcyaml, loaded by schema, so a misspelt key is refused
 * with its line and column) holds the listen address, the store, semaphores
 * and patterns with limits, strategies, leases and scheduling rules, default
 * lease, bearer tokens, limits and log level. Command-line flags override the file. */
#ifndef SL_SERVER_CONF_H
#define SL_SERVER_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine.h"
#include "store.h"

typedef enum { SL_LOG_ERROR, SL_LOG_WARN, SL_LOG_INFO, SL_LOG_DEBUG } sl_log_level;

typedef struct sl_conf_sem {
    char *name; /* a pattern ends in '*' */
    uint32_t limit;
    sl_strategy strategy;
    int64_t lease_ms;    /* 0 = none */
    int64_t overtake_ms; /* skip only: SL_OVERTAKE_DEFAULT_MS unless set; 0 = none */
    /* The scheduling rules, as the engine takes them (all off when zero).
     * rules.weights is owned: one allocation holding the nweights entries
     * and their keys (sl__conf_weights_copy), freed with the entry. */
    sl_sem_rules rules;
} sl_conf_sem;

/* F7: what a limited token may do under a prefix (docs/security.md). */
typedef enum {
    SL_PERM_READ,      /* see claims, locks, queues, history, events */
    SL_PERM_CLAIM,     /* create claims; renew, release and cancel its own */
    SL_PERM_OPERATE,   /* end other holders' claims, clear queues */
    SL_PERM_CONFIGURE, /* PUT and DELETE semaphores */
    SL_NPERMS
} sl_perm;

/* "read", "claim", "operate", "configure": the keys of a token entry. */
const char *sl_perm_name(sl_perm p);

typedef struct sl_prefix_list {
    char **v;
    size_t n;
} sl_prefix_list;

/* Per-token quotas (quota.c; docs/security.md, "Quotas"): what one
 * limited token may hold at once, and how fast it may ask. 0 is none. */
typedef enum {
    SL_QUOTA_CLAIMS,     /* live claims it made (pending, held, revoking) */
    SL_QUOTA_WAITING,    /* of those, pending */
    SL_QUOTA_SEMAPHORES, /* semaphore configurations where it may configure */
    SL_QUOTA_STREAMS,    /* event streams open */
    SL_QUOTA_LONG_POLLS, /* requests parked in a long poll (?wait) */
    SL_QUOTA_RATE,       /* requests per second, on average */
    SL_QUOTA_BURST,      /* ... and at once: the bucket's size (0: as the rate) */
    SL_QUOTA_COUNT
} sl_quota;
/* A token's own quota: 0 is limits.token_quotas' value, this is none. */
#define SL_QUOTA_NONE UINT64_MAX
/* The keys of the file, in sl_quota's order ("claims", ...). */
extern const char *const sl_quota_names[SL_QUOTA_COUNT];

typedef struct sl_conf_token {
    char *name;      /* for logs; never the secret */
    char *token;     /* the bearer secret in clear (`token:`); NULL for the others */
    /* The secret's SHA-256, 64 lowercase hex digits: of `token`, or
     * `token_sha256` as the file gives it; NULL for a certificate. */
    char *sha256;
    /* A client certificate's name instead of a secret: "CN:name",
     * "DNS:name", "URI:name" or "email:name"; NULL for a secret. */
    char *certificate;
    bool admin;      /* all names and configuration */
    char **prefixes; /* else: every permission on names under these prefixes */
    size_t nprefixes;
    sl_prefix_list perms[SL_NPERMS]; /* and each permission on its own list's (F7) */
    bool priority_capped;            /* claims may ask a priority of at most: */
    int32_t max_priority;
    uint64_t quotas[SL_QUOTA_COUNT]; /* its own; 0: limits.token_quotas' */
} sl_conf_token;

typedef struct sl_conf {
    char *listen; /* "127.0.0.1:7700" */
    char *plain_listen; /* a second, plain HTTP listener on loopback (beside TLS); NULL: none */
    char *store;  /* "sqlite:./sluice.db" */
    char *advertise;            /* shared mode: this server's URL for the others; NULL: from listen */
    int64_t leader_timeout_ms;  /* shared mode: T, the lock session's idle timeout (5 s) */
    sl_durability durability;
    sl_log_level log_level;
    int64_t default_lease_ms;   /* claims that set none and whose semaphores set none; 0 */
    int64_t default_timeout_ms; /* pending time of claims that set no timeout; 0 = none */
    int64_t backdate_skew_ms;   /* how far back a claim's `created` may be without leave (5 s) */
    int64_t max_wait_ms;        /* longest long-poll before answering pending (30 s) */
    int64_t idle_timeout_ms;    /* an idle keep-alive connection is closed (60 s) */
    int64_t header_timeout_ms;  /* a request's line and headers arrive within (10 s) */
    int64_t event_retention_ms; /* events kept at least this long (24 h) */
    int64_t claim_retention_ms; /* ended claims readable this long (1 h) */
    size_t max_body;            /* request body bytes (64 KiB) */
    size_t max_headers;         /* request header bytes (16 KiB) */
    size_t max_connections;     /* open connections (4096) */
    size_t max_connections_per_client; /* open connections from one address (200; 0: none) */
    size_t max_claims;          /* live and retained claims (10 000 000) */
    size_t max_streams;         /* event streams open at once (256) */
    size_t max_event_scan;      /* events one read of the log examines (500) */
    size_t max_semaphores;      /* semaphore configurations set through the API (100 000) */
    uint64_t token_quotas[SL_QUOTA_COUNT]; /* every limited token's, unless it sets its own */
    sl_conf_sem *semaphores;
    size_t nsemaphores;
    sl_conf_token *tokens;
    size_t ntokens;
    char *tls_cert;      /* TLS: PEM certificate (and chain); NULL: plain HTTP */
    char *tls_key;       /* its PEM private key */
    char *tls_client_ca; /* mTLS: PEM CAs of the client certificates; NULL: none */
    int tls_min_version; /* 12 (TLS 1.2, the default) or 13 */
    char *audit_path;    /* the audit log (audit.c): JSON lines appended; NULL: none */
    bool audit_refuse;   /* refuse changes while it cannot be written (else go on) */
    /* Host names the server answers for besides its listen and advertise
     * hosts, localhost and IP addresses (browser.c); "*": any. */
    char **allowed_hosts;
    size_t nallowed_hosts;
    bool insecure_open; /* off loopback without tokens, said on purpose */
    /* Shared mode: how a follower proves the leader it relays to (relay.c). */
    char *cluster_ca;      /* PEM CAs that signed the servers' certificates; NULL: none */
    char *cluster_cert;    /* the certificate a relay shows the leader; NULL: tls.cert */
    char *cluster_key;     /* its key; NULL: tls.key */
    bool cluster_insecure; /* relay to a leader not proven (a trusted network), said on purpose */
} sl_conf;

/* Fills every field with its default (strings allocated). */
void sl_conf_defaults(sl_conf *c);
/* Loads a YAML file over the defaults already in c. On error returns -1
 * and err says what is wrong, where (line and column) and how to mend it. */
int sl_conf_load_file(sl_conf *c, const char *path, char *err, size_t errlen);
/* Checks the whole configuration (names, limits, tokens unique...). */
int sl_conf_check(const sl_conf *c, char *err, size_t errlen);
void sl_conf_free(sl_conf *c);
/* Protected mode: a server that listens off loopback must have tokens
 * or a client CA (mTLS), unless insecure_open says so on purpose. NULL when it may start, else
 * what is wrong and how to mend it. */
const char *sl_conf_open_problem(const sl_conf *c);
/* Shared mode (a PostgreSQL store) with tokens or TLS: a follower relays
 * every client's token to the leader the database names, so the servers
 * must authenticate each other (cluster.ca), unless cluster.insecure says
 * the network and the database are trusted. NULL when it may start, else
 * what is wrong and how to mend it. */
const char *sl_conf_cluster_problem(const sl_conf *c);
/* Whether the store is PostgreSQL's (shared mode). */
bool sl_conf_store_shared(const char *store);
/* Whether the listen address is loopback only (127.0.0.0/8, [::1],
 * localhost). */
bool sl_conf_listen_loopback(const char *listen);

/* A token's quota in effect: 0 (none) for admin tokens and no token. */
uint64_t sl_conf_quota(const sl_conf *c, const sl_conf_token *t, sl_quota q);
/* Token secrets (secret.c): the SHA-256 of n bytes of s as 64 lowercase
 * hex digits; whether s is 64 hex digits; whether two such hashes are the
 * same, compared in a time that does not depend on where they differ. */
#define SL_SHA256_HEX 65
void sl_secret_sha256(const char *s, size_t n, char out[SL_SHA256_HEX]);
bool sl_secret_sha256_valid(const char *s);
bool sl_secret_same_hash(const char *a, const char *b);

int sl_log_level_parse(const char *s, sl_log_level *out);
/* "1.2" or "1.3" (also "TLSv1.2", "TLSv1.3") into 12 or 13; -1 otherwise. */
int sl_tls_version_parse(const char *s, int *out);

#endif
