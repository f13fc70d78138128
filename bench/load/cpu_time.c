/* cpu_time.c - CPU time of this process (getrusage) and of another
 * (/proc/PID/stat). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cpu_time.h"

double sl_cpu_self_seconds(double *user)
{
    struct rusage ru;
    double u, s;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        ru.ru_utime.tv_sec = ru.ru_utime.tv_usec = ru.ru_stime.tv_sec = ru.ru_stime.tv_usec = 0;
    u = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
    s = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    if (user)
        *user = u;
    return u + s;
}

/* Reads /proc/PID/stat: field 4 (ppid) and fields 14 to 17 (utime, stime,
 * cutime, cstime), in clock ticks. The command name (field 2) is in
 * parentheses and may hold spaces and parentheses itself, so counting
 * starts after the last ')'. */
static int read_stat(pid_t pid, long *ppid, unsigned long long t[4] /* OUT */)
{
    char path[64], buf[1024], *p, *end;
    size_t n;
    int field, i;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p)
        return -1;
    /* p + 1 starts field 3 (state); ppid is field 4, utime field 14. */
    for (field = 3, p++; field < 14; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return -1;
        if (field == 3)
            *ppid = strtol(p, NULL, 10);
    }
    for (i = 0; i < 4; i++, p = end) {
        t[i] = strtoull(p, &end, 10);
        if (end == p)
            return -1;
    }
    return 0;
}

/* The CPU time of pid's live children, in ticks: a PostgreSQL server does
 * its work in a process per connection (and its background writers). */
static unsigned long long children_ticks(pid_t pid)
{
    unsigned long long sum = 0, t[4];
    struct dirent *e;
    DIR *d = opendir("/proc");
    long ppid;
    if (!d)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long child = strtol(e->d_name, &end, 10);
        if (end != e->d_name && *end == '\0' && child != pid &&
            read_stat((pid_t)child, &ppid, t) == 0 && ppid == (long)pid)
            sum += t[0] + t[1];
    }
    closedir(d);
    return sum;
}

/* Its own utime + stime, that of its children reaped (cutime + cstime) and
 * that of those still running: for a server with worker processes, a child
 * that exits between two samples moves from the third sum to the second. */
int sl_cpu_process_seconds(pid_t pid, double *out)
{
    unsigned long long t[4];
    long ticks = sysconf(_SC_CLK_TCK), ppid;
    if (ticks <= 0 || read_stat(pid, &ppid, t) < 0)
        return -1;
    *out = (double)(t[0] + t[1] + t[2] + t[3] + children_ticks(pid)) / (double)ticks;
    return 0;
}
