/* cpu_time.c - CPU time of this process (getrusage) and of another
 * (/proc/PID/stat). */
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

/* Fields 14 and 15 of /proc/PID/stat. The command name (field 2) is in
 * parentheses and may hold spaces and parentheses itself, so counting
 * starts after the last ')'. */
int sl_cpu_process_seconds(pid_t pid, double *out)
{
    char path[64], buf[1024], *p, *end;
    unsigned long long utime, stime;
    long ticks = sysconf(_SC_CLK_TCK);
    size_t n;
    int field;
    FILE *f;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    f = fopen(path, "r");
    if (!f)
        return -1;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    if (!p || ticks <= 0)
        return -1;
    /* p + 1 starts field 3 (state); utime is field 14. */
    for (field = 3, p++; field < 14; field++) {
        p = strchr(p + 1, ' ');
        if (!p)
            return -1;
    }
    utime = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    p = end;
    stime = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    *out = (double)(utime + stime) / (double)ticks;
    return 0;
}
