/* disk_fault.h - a failing disk for the store tests (disk_fault.c). */
#ifndef SLUICE_TESTS_DISK_FAULT_H
#define SLUICE_TESTS_DISK_FAULT_H

#include <stdbool.h>
#include <stddef.h>

/* While true, every fdatasync(2) of the test binary fails with EIO. */
extern bool ts_syncs_fail;

/* The *.seg files in dir (a store's PATH-log/), SIZE_MAX when dir cannot be
 * read. */
size_t ts_count_segments(const char *dir);

#endif
