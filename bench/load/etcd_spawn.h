/* etcd_spawn.h - a throwaway etcd for one load-generator session.
 *
 * `sluice-load --backend etcd|etcd-lock` starts etcd itself unless given
 * --etcd HOST:PORT: a single-member cluster whose client and peer URLs are
 * loopback ports that were free a moment ago, its data directory in a fresh
 * temporary directory, every other setting etcd's default (so it fsyncs its
 * write-ahead log on every commit, as etcd always does: it is durable). It
 * waits until GET /health says {"health":"true"}, and at the end sends
 * SIGTERM, requires a clean shutdown and removes the directory. */
#ifndef SL_BENCH_ETCD_SPAWN_H
#define SL_BENCH_ETCD_SPAWN_H

#include <stddef.h>

#include "sluiced_spawn.h"

/* 0, or -1 with the reason in err (cap bytes) and nothing left behind;
 * out->address is the client URL's "127.0.0.1:PORT". */
int sl_etcd_spawn_start(const char *binary, sl_spawn *out /* OUT */, char *err, size_t cap);
/* 0 when etcd shut down cleanly (see etcd_spawn.c), else -1 with the reason. */
int sl_etcd_spawn_stop(sl_spawn *s, char *err, size_t cap);

#endif
