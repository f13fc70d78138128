/* claim_id.c - time-ordered random claim ids (claim_id.h). */
#include <stdlib.h>
#include <sys/random.h>

#include "claim_id.h"

#define TIME_CHARS 8
#define POOL 4096

/* Base64 digits in ASCII order, so that ids sort as their values do. */
static const char digits[] = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz";

/* Random bytes are drawn from the kernel a pool at a time: one getrandom()
 * per ~370 ids instead of one per id. The server is single-threaded. */
static unsigned char pool[POOL];
static size_t pool_left;

static unsigned char random_byte(void)
{
    if (pool_left == 0) {
        size_t got = 0;
        while (got < POOL) {
            ssize_t n = getrandom(pool + got, POOL - got, 0);
            if (n <= 0)
                abort();
            got += (size_t)n;
        }
        pool_left = POOL;
    }
    unsigned char b = pool[POOL - pool_left];
    pool[POOL - pool_left] = 0; /* used randomness does not stay in memory */
    pool_left--;
    return b;
}

/* The first character's value is offset so that it is a letter ('A' now,
 * 'B' from the year 2109): an id never starts with '-', which a command
 * line would take for an option (`sluice release ID`). The order is kept
 * while the top six bits of the time stay below 64 - FIRST_OFFSET, that is
 * until the year 9300. */
#define FIRST_OFFSET 11

void sl_claim_id_new(int64_t now_ms, char out[SL_CLAIM_ID_LEN + 1])
{
    uint64_t t = now_ms > 0 ? (uint64_t)now_ms : 0;
    for (int i = TIME_CHARS - 1; i > 0; i--) {
        out[i] = digits[t & 63];
        t >>= 6;
    }
    out[0] = digits[t + FIRST_OFFSET < 64 ? t + FIRST_OFFSET : 63];
    for (int i = TIME_CHARS; i < SL_CLAIM_ID_LEN; i++)
        out[i] = digits[random_byte() & 63];
    out[SL_CLAIM_ID_LEN] = '\0';
}
