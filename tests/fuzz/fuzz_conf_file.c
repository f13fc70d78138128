/* fuzz_conf_file.c - sluiced's YAML configuration file (src/server/
 * conf_file.c, libcyaml by schema, then the conversions and the checks).
 *
 * sl_conf_load_file reads a path, so each input is written to one
 * temporary file first. A load must either succeed with a configuration
 * that sl_conf_check accepts, or fail with a message, leaving the
 * caller's configuration as it was (it is checked again afterwards). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conf.h"
#include "fuzz.h"

/* The default limits.max_body is not a bound here: configuration files are
 * small, and bigger inputs only slow the fuzzer down. */
#define FILE_MAX (64u * 1024)

static char path[256];

static void remove_file(void)
{
    unlink(path);
}

/* The temporary file, made once per process and removed at its exit. */
static const char *input_path(void)
{
    if (path[0])
        return path;
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof(path), "%s/sluice-fuzz-conf-XXXXXX", dir && *dir ? dir : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) {
        fprintf(stderr, "fuzz_conf_file: cannot make %s: %s\n", path, strerror(errno));
        abort();
    }
    close(fd);
    atexit(remove_file);
    return path;
}

static void write_input(const char *p, const uint8_t *data, size_t size)
{
    FILE *f = fopen(p, "wb");
    fuzz_check(f != NULL);
    fuzz_check(fwrite(data, 1, size, f) == size);
    fuzz_check(fclose(f) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > FILE_MAX)
        return 0;
    const char *p = input_path();
    write_input(p, data, size);
    sl_conf conf;
    sl_conf_defaults(&conf);
    char err[1024] = "";
    if (sl_conf_load_file(&conf, p, err, sizeof(err)) == 0)
        fuzz_check(sl_conf_check(&conf, err, sizeof(err)) == 0);
    else
        fuzz_check(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
    /* Loaded or not, what the caller holds is a whole configuration. */
    fuzz_check(sl_conf_check(&conf, err, sizeof(err)) == 0);
    sl_conf_free(&conf);
    return 0;
}
