/* pg_spawn.h - a throwaway PostgreSQL server for one load-generator session.
 *
 * `sluice-load --backend postgres[-poll|-rows]` starts one itself unless
 * given --pg: initdb into a fresh temporary directory, then postgres on a
 * loopback port that was free a moment ago, its unix socket in that
 * directory, with the settings a Debian cluster has (fsync and
 * synchronous_commit on) except max_connections, raised for 64 clients and
 * more. It waits until the server accepts connections, and at the end asks
 * for a fast shutdown, requires exit status 0 and removes the directory.
 *
 * PostgreSQL refuses to run as root, so when this program is root, initdb
 * and postgres run as the `postgres` user (the Debian package's), or as
 * `nobody` when there is none, and the directory belongs to that user. */
#ifndef SL_BENCH_PG_SPAWN_H
#define SL_BENCH_PG_SPAWN_H

#include <stddef.h>

#include "sluiced_spawn.h"

/* bindir holds initdb and postgres; NULL to find them (`pg_config --bindir`,
 * else the newest /usr/lib/postgresql/N/bin). On success out->address is
 * "127.0.0.1:PORT" (the superuser is `postgres`, trusted from loopback) and
 * out->pid the postmaster. 0, or -1 with the reason in err (cap bytes) and
 * nothing left behind. */
int sl_pg_spawn_start(const char *bindir, sl_spawn *out /* OUT */, char *err, size_t cap);
/* 0 when postgres exited with status 0, else -1 with the reason. */
int sl_pg_spawn_stop(sl_spawn *s, char *err, size_t cap);

#endif
