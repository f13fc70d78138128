/* cpu_time.h - CPU time (user + system) of this process and of another.
 *
 * The load generator divides both by the cycles of a run, to say what one
 * cycle costs the client and the server. */
#ifndef SL_BENCH_CPU_TIME_H
#define SL_BENCH_CPU_TIME_H

#include <sys/types.h>

/* Every thread of this process, user + system, in seconds (getrusage:
 * microseconds); *user (may be NULL) gets the user part alone. */
double sl_cpu_self_seconds(double *user /* OUT */);
/* Every thread of process pid and of its child processes, in seconds, from
 * utime + stime (+ cutime + cstime) of /proc/PID/stat and of its children's
 * (clock ticks: 10 ms each on most systems). 0 or -1 when the process
 * cannot be read. */
int sl_cpu_process_seconds(pid_t pid, double *out /* OUT */);

#endif
