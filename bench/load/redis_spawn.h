/* redis_spawn.h - a throwaway redis-server for one load-generator session.
 *
 * `sluice-load --backend redis` starts redis-server itself unless given
 * --redis HOST:PORT: on a loopback port that was free a moment ago, in a
 * fresh temporary directory, with no snapshots (--save ""), and either no
 * append-only file (the default: Redis as a lock service usually runs) or
 * one fsynced on every write (--appendonly yes --appendfsync always: the
 * durable comparison for sluiced, which commits every change). It waits
 * until PING answers, and at the end sends SIGTERM, requires exit status 0
 * and removes the directory. With tls, it serves TLS only (--tls-port; the
 * plain port off) with a throwaway self-signed certificate in that
 * directory (out->ca), and out->url is rediss://127.0.0.1:PORT. */
#ifndef SL_BENCH_REDIS_SPAWN_H
#define SL_BENCH_REDIS_SPAWN_H

#include <stdbool.h>
#include <stddef.h>

#include "sluiced_spawn.h"

/* 0, or -1 with the reason in err (cap bytes) and nothing left behind. */
int sl_redis_spawn_start(const char *binary, bool durable, bool tls, sl_spawn *out /* OUT */,
                         char *err, size_t cap);
/* 0 when redis-server exited with status 0, else -1 with the reason. */
int sl_redis_spawn_stop(sl_spawn *s, char *err, size_t cap);

#endif
