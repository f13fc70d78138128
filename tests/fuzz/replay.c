/* replay.c - the plain driver of a fuzz target: runs every file named on
 * the command line (a directory: every file in it, in name order) through
 * LLVMFuzzerTestOneInput once. CTest runs it over the target's corpus in
 * the normal and the sanitizer build, so any input that once crashed or
 * hung fails CI if it does again; no fuzzing engine is needed. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/* Inputs are small by design (seeds, minimised finds); a bigger file is a
 * mistake in the corpus, not something to load. */
#define REPLAY_INPUT_MAX (1u << 20)
#define REPLAY_PATH_MAX 4096

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    uint8_t *buf = malloc(REPLAY_INPUT_MAX + 1);
    if (!buf)
        abort();
    size_t n = fread(buf, 1, REPLAY_INPUT_MAX + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > REPLAY_INPUT_MAX) {
        fprintf(stderr, "replay: %s: %s\n", path,
                bad ? "read error" : "larger than 1 MiB, not a corpus input");
        free(buf);
        return -1;
    }
    /* An exact-size copy, so that a read past the input's end is caught by
     * AddressSanitizer as it is under libFuzzer. */
    uint8_t *input = malloc(n ? n : 1);
    if (!input)
        abort();
    if (n)
        memcpy(input, buf, n);
    free(buf);
    /* Named before it runs: a crash's report then follows its input's name. */
    fprintf(stderr, "replay: %s (%zu bytes)\n", path, n);
    LLVMFuzzerTestOneInput(input, n);
    free(input);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every regular file of dir, in name order; the number run, or -1. */
static long run_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s: %s\n", dir, strerror(errno));
        return -1;
    }
    size_t n = 0, cap = 0;
    char **names = NULL;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            names = realloc(names, cap * sizeof(*names));
            if (!names)
                abort();
        }
        names[n] = strdup(e->d_name);
        if (!names[n])
            abort();
        n++;
    }
    closedir(d);
    if (n > 0) /* qsort wants a valid pointer even for no elements */
        qsort(names, n, sizeof(*names), by_name);
    long ran = 0;
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        char path[REPLAY_PATH_MAX];
        int len = snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        struct stat st;
        if (len < 0 || (size_t)len >= sizeof(path)) {
            fprintf(stderr, "replay: path too long: %s/%s\n", dir, names[i]);
            rc = -1;
        } else if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) != 0)
                rc = -1;
            ran++;
        }
        free(names[i]);
    }
    free(names);
    return rc == 0 ? ran : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE-OR-DIRECTORY...\n", argv[0]);
        return 2;
    }
    long total = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        long ran = S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i]) == 0 ? 1 : -1;
        if (ran < 0)
            return 1;
        total += ran;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no input found: an empty corpus tests nothing\n");
        return 1;
    }
    printf("replay: %ld inputs ran without a failure\n", total);
    return 0;
}
