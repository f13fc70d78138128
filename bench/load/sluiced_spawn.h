/* sluiced_spawn.h - a throwaway sluiced for one load-generator session.
 *
 * `sluice-load --sluiced PATH` starts the server itself: on a loopback port
 * that was free a moment ago, with an SQLite store in a fresh temporary
 * directory, and waits until GET /healthz answers 200 (over TLS, with a
 * throwaway self-signed certificate in that directory, when asked). At the end it sends
 * SIGTERM, requires exit status 0 (so a sanitizer's report at exit fails the
 * run) and removes the directory. */
#ifndef SL_BENCH_SLUICED_SPAWN_H
#define SL_BENCH_SLUICED_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

typedef struct sl_spawn {
    pid_t pid;
    char dir[256];    /* the temporary directory holding the store */
    char address[64]; /* "127.0.0.1:PORT" */
    char url[80];     /* the address for sessions: "https://127.0.0.1:PORT" over TLS */
    char ca[300];     /* over TLS, the certificate to trust (it is its own CA); else "" */
} sl_spawn;

/* How to run it. */
typedef struct sl_spawn_opts {
    const char *durability; /* "normal" or "full" */
    /* 0: the server's own limit on claims; else limits.max_claims in a
     * configuration file written into the temporary directory (a scale
     * run may need more than the default 10 million). */
    size_t max_claims;
    /* NULL: the server logs warnings to our stderr; else it logs at info
     * level to this file (the scale run reads "store ... loaded in N ms"). */
    const char *log_path;
    /* Serve HTTPS with a certificate made for the run (tls.h). */
    bool tls;
} sl_spawn_opts;

/* Starts binary with --durability durability ("normal" or "full"). 0, or
 * -1 with the reason in err (cap bytes) and nothing left behind. */
int sl_spawn_start(const char *binary, const char *durability, sl_spawn *out /* OUT */, char *err,
                   size_t cap);
int sl_spawn_start_opts(const char *binary, const sl_spawn_opts *opts, sl_spawn *out /* OUT */,
                        char *err, size_t cap);
/* For restart measurements. Stops s's server and keeps its directory:
 * SIGTERM (waiting up to 30 s, then SIGKILL), or SIGKILL at once when
 * crash; its exit status, or -1 when it had to be killed unasked. */
int sl_spawn_halt(sl_spawn *s, bool crash);
/* Starts binary again on s's store and address, and returns at once,
 * right after the fork (the caller times how long it takes to serve):
 * 0, or -1 with the reason in err. */
int sl_spawn_relaunch(const char *binary, const sl_spawn_opts *opts, sl_spawn *s, char *err,
                      size_t cap);
/* Stops the server and removes its directory: 0 when it exited with status
 * 0, else -1 with the reason in err. */
int sl_spawn_stop(sl_spawn *s, char *err, size_t cap);

/* Shared with redis_spawn.c. A loopback port that was free a moment ago
 * (or -1). */
int sl_spawn_free_port(void);
/* SIGTERM, then SIGKILL if pid will not go within 30 s; its exit status, or
 * -1 when it had to be killed. */
int sl_spawn_terminate(pid_t pid);
/* Stops s's process (named in err) and removes its directory: 0 when it
 * exited with status 0. */
int sl_spawn_stop_named(sl_spawn *s, const char *name, char *err, size_t cap);
/* A certificate and key for a throwaway server, in s->dir (cert.pem,
 * key.pem); s->ca names the certificate. 0, or -1 with the reason in err. */
int sl_spawn_make_cert(sl_spawn *s, char *key_path, size_t kcap, char *err, size_t cap);
void sl_spawn_remove_dir(const char *dir); /* and everything in it */
void sl_spawn_sleep_ms(int ms);

#endif
