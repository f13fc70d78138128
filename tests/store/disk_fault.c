/* disk_fault.c - linked into every store test: fdatasync(2) as the store's
 * log file calls it (the test binary's definition wins over libc's), which
 * fails with EIO while ts_syncs_fail is set, as a disk failing under
 * --durability full would; and the count of a log directory's segments. */
#define _GNU_SOURCE /* syscall(2) */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>

#include "disk_fault.h"

bool ts_syncs_fail;

int fdatasync(int fd)
{
    if (ts_syncs_fail) {
        errno = EIO;
        return -1;
    }
    return (int)syscall(SYS_fdatasync, fd);
}

size_t ts_count_segments(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return SIZE_MAX;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strstr(e->d_name, ".seg") != NULL;
    closedir(d);
    return n;
}
