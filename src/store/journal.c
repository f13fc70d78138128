/* journal.c - records appended to plain segment files (journal.h has the
 * format and the guarantees). */
#define _GNU_SOURCE /* pwritev, O_DIRECTORY */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

#include "journal.h"
#include "store_int.h"

static const char MAGIC[8] = {'s', 'l', 'u', 'i', 'c', 'e', 'j', '1'};

/* Where a segment's records start: off[k] is the offset of record first +
 * k * SL_JOURNAL_INDEX_EVERY, so that a read seeks to the record it wants
 * (or a few before it) instead of reading the segment from its start. Kept
 * for the segments this process opened or wrote, as frames are appended or
 * scanned; a cut takes its entries back. */
typedef struct seg_index {
    uint64_t *off;
    size_t n, cap;
} seg_index;

struct sl_journal {
    char *dir;
    int dir_fd;
    uint64_t seg_bytes;
    uint64_t fill;  /* zeros written ahead of the appends, at a time (fill_ahead) */
    uint64_t *segs; /* first ids of the segments kept, ascending; the last is written */
    seg_index *idx; /* theirs, one each (capsegs of them) */
    size_t nsegs, capsegs;
    /* segs and idx change on the appender's thread and are read under mu by
     * sl_journal_read_indexed on any thread. */
    pthread_mutex_t mu;
    int fd;              /* the last segment */
    uint64_t end;        /* where its good part ends: the next frame goes there */
    uint64_t filled;     /* its bytes written so far, zeros ahead of end included */
    uint64_t next_id;
    uint64_t synced_end, synced_next; /* as of the last successful sync */
    bool need_cut;       /* a failed append left bytes after end: cut them first */
    uint64_t cut_bytes;
    char err[SL_STORE_ERR_MAX];
};

static int jfail(char *err, size_t cap, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int jfail(char *err, size_t cap, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl__store_vfail(err, cap, fmt, ap);
    va_end(ap);
    return code;
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
    uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The crc of a frame: its length and id (bytes 0-3 and 8-15 of the frame's
 * head), then the payload. */
static uint32_t frame_crc(const unsigned char *head, const void *p, size_t n)
{
    uLong c = crc32(0L, head, 4);
    c = crc32(c, head + 8, 8);
    return (uint32_t)crc32_z(c, p, n);
}

static void seg_path(const char *dir, uint64_t id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%020" PRIu64 ".seg", dir, id);
}

/* ---- reading a segment ---------------------------------------------------- */

typedef struct cursor {
    FILE *f;
    uint64_t off;     /* where the next frame starts */
    uint64_t next_id; /* the id it must have */
    unsigned char *buf;
    size_t cap;
    const char *why; /* why the last frame was refused */
} cursor;

enum { CUR_RECORD = 1, CUR_END = 0, CUR_BAD = -1, CUR_IO = -2 };

/* CUR_END: a file shorter than a header (a segment created just before a
 * crash); CUR_BAD: not a segment, or not the one its name says. */
static int cur_open(cursor *c, const char *path, uint64_t first_id)
{
    memset(c, 0, sizeof(*c));
    c->f = fopen(path, "rbe");
    if (!c->f)
        return CUR_IO;
    setvbuf(c->f, NULL, _IOFBF, 1 << 16);
    unsigned char h[SL_JOURNAL_HEADER];
    size_t got = fread(h, 1, sizeof(h), c->f);
    c->next_id = first_id;
    if (got < sizeof(h))
        return ferror(c->f) ? CUR_IO : CUR_END;
    if (memcmp(h, MAGIC, sizeof(MAGIC)) != 0 || get_le(h + 8, 8) != first_id) {
        c->why = "it does not start as a sluice log segment named so does";
        return CUR_BAD;
    }
    c->off = SL_JOURNAL_HEADER;
    return CUR_RECORD;
}

static void cur_close(cursor *c)
{
    if (c->f)
        fclose(c->f);
    free(c->buf);
    memset(c, 0, sizeof(*c));
}

static int cur_short(cursor *c)
{
    if (ferror(c->f))
        return CUR_IO;
    c->why = "the frame is cut short";
    return CUR_BAD;
}

/* The next frame into c->buf (*n bytes). CUR_END at the end of the file on a
 * frame boundary; CUR_BAD with c->why, c->off still at the frame. */
static int cur_next(cursor *c, size_t *n)
{
    unsigned char h[SL_JOURNAL_FRAME];
    size_t got = fread(h, 1, sizeof(h), c->f);
    if (got == 0 && feof(c->f))
        return CUR_END;
    if (got < sizeof(h))
        return cur_short(c);
    uint32_t len = (uint32_t)get_le(h, 4);
    if (len == 0 || len > SL_JOURNAL_MAX_RECORD) {
        c->why = len ? "the frame's length is impossible" : "the frame is empty (zeros)";
        return CUR_BAD;
    }
    if (len > c->cap) {
        unsigned char *p = realloc(c->buf, len);
        if (!p)
            abort();
        c->buf = p;
        c->cap = len;
    }
    if (fread(c->buf, 1, len, c->f) < len)
        return cur_short(c);
    if (frame_crc(h, c->buf, len) != (uint32_t)get_le(h + 4, 4)) {
        c->why = "the frame's CRC does not match its bytes";
        return CUR_BAD;
    }
    if (get_le(h + 8, 8) != c->next_id) {
        c->why = "the frame's id is not the next one";
        return CUR_BAD;
    }
    *n = len;
    c->off += SL_JOURNAL_FRAME + len;
    c->next_id++;
    return CUR_RECORD;
}

/* ---- the directory ---------------------------------------------------------- */

static int cmp_id(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A segment's name: 20 digits and ".seg"; anything else is not ours. */
static bool seg_name(const char *name, uint64_t *id)
{
    if (strlen(name) != 24 || strcmp(name + 20, ".seg") != 0)
        return false;
    uint64_t v = 0;
    for (int i = 0; i < 20; i++) {
        if (name[i] < '0' || name[i] > '9')
            return false;
        v = v * 10 + (uint64_t)(name[i] - '0');
    }
    *id = v;
    return true;
}

static void push_id(uint64_t **ids, size_t *n, size_t *cap, uint64_t id)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 8;
        uint64_t *p = realloc(*ids, *cap * sizeof(*p));
        if (!p)
            abort();
        *ids = p;
    }
    (*ids)[(*n)++] = id;
}

/* The first ids of dir's segments, ascending (*ids freed by the caller). */
static int list_segments(const char *dir, uint64_t **ids, size_t *n, size_t *cap, char *err,
                         size_t errcap)
{
    *ids = NULL;
    *n = *cap = 0;
    DIR *d = opendir(dir);
    if (!d)
        return jfail(err, errcap, SL_STORE_EIO, "cannot read the log directory %s: %s", dir,
                     strerror(errno));
    struct dirent *e;
    uint64_t id;
    while ((e = readdir(d)))
        if (seg_name(e->d_name, &id))
            push_id(ids, n, cap, id);
    closedir(d);
    if (*n)
        qsort(*ids, *n, sizeof(**ids), cmp_id);
    return 0;
}

/* ---- the index (seg_index) -------------------------------------------------- */

/* Room for one more segment in segs and idx; the caller holds mu. */
static void grow_segs(sl_journal *j)
{
    if (j->nsegs < j->capsegs)
        return;
    size_t cap = j->capsegs ? j->capsegs * 2 : 8;
    uint64_t *ids = realloc(j->segs, cap * sizeof(*ids));
    if (!ids)
        abort();
    j->segs = ids;
    seg_index *x = realloc(j->idx, cap * sizeof(*x));
    if (!x)
        abort();
    memset(x + j->capsegs, 0, (cap - j->capsegs) * sizeof(*x));
    j->idx = x;
    j->capsegs = cap;
}

static void push_seg(sl_journal *j, uint64_t id)
{
    pthread_mutex_lock(&j->mu);
    grow_segs(j);
    j->segs[j->nsegs] = id;
    j->idx[j->nsegs++] = (seg_index){0};
    pthread_mutex_unlock(&j->mu);
}

/* Record id starts at off in segment i: an entry when it is the next one
 * the index takes. */
static void index_note(sl_journal *j, size_t i, uint64_t id, uint64_t off)
{
    uint64_t k = id - j->segs[i];
    seg_index *x = &j->idx[i];
    if (k % SL_JOURNAL_INDEX_EVERY != 0 || k / SL_JOURNAL_INDEX_EVERY != x->n)
        return;
    pthread_mutex_lock(&j->mu);
    if (x->n == x->cap) {
        size_t cap = x->cap ? x->cap * 2 : 64;
        uint64_t *p = realloc(x->off, cap * sizeof(*p));
        if (!p)
            abort();
        x->off = p;
        x->cap = cap;
    }
    x->off[x->n++] = off;
    pthread_mutex_unlock(&j->mu);
}

/* The last segment's entries for records cut off (next_id went back). */
static void index_cut(sl_journal *j)
{
    size_t i = j->nsegs - 1;
    uint64_t keep = (j->next_id - j->segs[i] + SL_JOURNAL_INDEX_EVERY - 1) / SL_JOURNAL_INDEX_EVERY;
    pthread_mutex_lock(&j->mu);
    if (j->idx[i].n > keep)
        j->idx[i].n = (size_t)keep;
    pthread_mutex_unlock(&j->mu);
}

/* Where a read of records from `from` on starts: the segment holding it,
 * and the indexed record at or before it there (its first when none). */
typedef struct seek {
    uint64_t seg, off, id;
} seek;

static seek index_seek(const sl_journal *j, uint64_t from)
{
    seek s = {0, SL_JOURNAL_HEADER, 0};
    size_t i = j->nsegs;
    while (i > 0 && j->segs[i - 1] > from)
        i--;
    if (i == 0)
        return s;
    const seg_index *x = &j->idx[i - 1];
    s.seg = s.id = j->segs[i - 1];
    uint64_t k = (from - s.seg) / SL_JOURNAL_INDEX_EVERY;
    if (x->n && k >= x->n)
        k = x->n - 1;
    if (x->n) {
        s.off = x->off[k];
        s.id += k * SL_JOURNAL_INDEX_EVERY;
    }
    return s;
}

/* ---- reading records -------------------------------------------------------- */

/* Records [from, to) of one segment, from the frame at sk when sk is
 * this segment's. *next: the id after the last frame read; *stopped: fn's
 * non-zero answer (0: it took every record). */
static int read_segment(const char *path, uint64_t first, const seek *sk, uint64_t from,
                        uint64_t to, sl_journal_fn fn, void *ud, uint64_t *next, int *stopped,
                        char *err, size_t cap)
{
    cursor c;
    int rc = cur_open(&c, path, first);
    if (rc == CUR_RECORD && sk->seg == first && sk->off > SL_JOURNAL_HEADER) {
        if (fseeko(c.f, (off_t)sk->off, SEEK_SET) != 0)
            rc = CUR_IO;
        c.off = sk->off;
        c.next_id = sk->id;
    }
    size_t n = 0;
    while (rc == CUR_RECORD && c.next_id < to && !*stopped) {
        rc = cur_next(&c, &n);
        if (rc == CUR_RECORD && c.next_id - 1 >= from)
            *stopped = fn(ud, c.next_id - 1, c.buf, n);
    }
    *next = c.next_id;
    if (rc == CUR_IO)
        rc = jfail(err, cap, SL_STORE_EIO, "cannot read the log segment %s: %s", path,
                   strerror(errno));
    else if (rc == CUR_BAD)
        rc = jfail(err, cap, SL_STORE_EDATA,
                   "the log segment %s is damaged at byte %" PRIu64 " (%s), before record %" PRIu64
                   " that was asked for",
                   path, c.off, c.why, to - 1);
    else
        rc = 0; /* the end of the segment, `to`, or fn stopped */
    cur_close(&c);
    return rc;
}

/* Records [from, to) of the segments ids (n of them, ascending). */
static int read_ids(const char *dir, const uint64_t *ids, size_t n, const seek *sk, uint64_t from,
                    uint64_t to, sl_journal_fn fn, void *ud, char *err, size_t cap)
{
    int rc = 0;
    size_t i = n;
    while (i > 0 && ids[i - 1] > from)
        i--;
    if (i == 0)
        rc = jfail(err, cap, SL_STORE_EDATA,
                   "the log %s has no record %" PRIu64 " (its segments start later or are gone)",
                   dir, from);
    uint64_t next = from;
    int stopped = 0;
    size_t start = i ? i - 1 : 0;
    for (i = start; rc == 0 && !stopped && next < to && i < n; i++) {
        if (i > start ? ids[i] != next : ids[i] > next) {
            rc = jfail(err, cap, SL_STORE_EDATA,
                       "the log %s lacks records %" PRIu64 " to %" PRIu64 " (a segment is gone)",
                       dir, next, ids[i] - 1);
            break;
        }
        char path[4096];
        seg_path(dir, ids[i], path, sizeof(path));
        rc = read_segment(path, ids[i], sk, from, to, fn, ud, &next, &stopped, err, cap);
    }
    if (rc == 0 && !stopped && next < to)
        rc = jfail(err, cap, SL_STORE_EDATA,
                   "the log %s ends at record %" PRIu64 ", before record %" PRIu64
                   " that was asked for",
                   dir, next, to - 1);
    return rc ? rc : stopped;
}

int sl_journal_read(const char *dir, uint64_t from, uint64_t to, sl_journal_fn fn, void *ud,
                    char *err, size_t cap)
{
    if (from >= to)
        return 0;
    uint64_t *ids;
    size_t n, capids;
    int rc = list_segments(dir, &ids, &n, &capids, err, cap);
    seek none = {0, SL_JOURNAL_HEADER, 0};
    if (rc == 0)
        rc = read_ids(dir, ids, n, &none, from, to, fn, ud, err, cap);
    free(ids);
    return rc;
}

int sl_journal_read_indexed(sl_journal *j, uint64_t from, uint64_t to, sl_journal_fn fn,
                            void *ud, char *err, size_t cap)
{
    if (from >= to)
        return 0;
    pthread_mutex_lock(&j->mu);
    size_t n = j->nsegs;
    uint64_t *ids = malloc((n ? n : 1) * sizeof(*ids));
    if (!ids)
        abort();
    memcpy(ids, j->segs, n * sizeof(*ids));
    seek sk = index_seek(j, from);
    pthread_mutex_unlock(&j->mu);
    int rc = read_ids(j->dir, ids, n, &sk, from, to, fn, ud, err, cap);
    free(ids);
    return rc;
}

/* ---- writing --------------------------------------------------------------- */

/* Writes every byte of the iovecs at off, however many calls it takes. */
static int write_all(int fd, uint64_t off, struct iovec *iov, int niov)
{
    while (niov > 0) {
        ssize_t k = pwritev(fd, iov, niov, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            if (k == 0)
                errno = EIO;
            return -1;
        }
        off += (uint64_t)k;
        while (niov > 0 && (size_t)k >= iov->iov_len) {
            k -= (ssize_t)iov->iov_len;
            iov++;
            niov--;
        }
        if (niov > 0) {
            iov->iov_base = (char *)iov->iov_base + k;
            iov->iov_len -= (size_t)k;
        }
    }
    return 0;
}

/* A new segment whose first record is id, its header synced and its name
 * in the directory synced: records synced later in it are found after
 * power loss. A file left by an earlier attempt is overwritten. */
static int create_segment(sl_journal *j, uint64_t id)
{
    char path[4096];
    seg_path(j->dir, id, path, sizeof(path));
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    unsigned char h[SL_JOURNAL_HEADER];
    memcpy(h, MAGIC, sizeof(MAGIC));
    put_u64(h + 8, id);
    struct iovec iov = {h, sizeof(h)};
    if (fd < 0 || write_all(fd, 0, &iov, 1) != 0 || fdatasync(fd) != 0 || fsync(j->dir_fd) != 0) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(path);
        }
        return jfail(j->err, sizeof(j->err), SL_STORE_EIO, "cannot start the log segment %s: %s",
                     path, strerror(e));
    }
    if (j->fd >= 0)
        close(j->fd);
    j->fd = fd;
    j->end = j->synced_end = j->filled = SL_JOURNAL_HEADER;
    j->next_id = j->synced_next = id;
    j->need_cut = false;
    if (!j->nsegs || j->segs[j->nsegs - 1] != id)
        push_seg(j, id);
    else
        index_cut(j); /* the same segment started again: no record left */
    return 0;
}

/* The full segment is synced before the next is started, so that only the
 * last segment can ever be torn. Nothing is cut when that sync fails:
 * under --durability normal its records were answered already. */
static int rotate(sl_journal *j)
{
    if (j->filled > j->end && ftruncate(j->fd, (off_t)j->end) != 0)
        return jfail(j->err, sizeof(j->err), SL_STORE_EIO,
                     "cannot cut the zeros off the full log segment in %s: %s", j->dir,
                     strerror(errno));
    j->filled = j->end;
    if (j->end != j->synced_end && fdatasync(j->fd) != 0)
        return jfail(j->err, sizeof(j->err), SL_STORE_EIO,
                     "cannot sync the full log segment in %s before starting the next: %s", j->dir,
                     strerror(errno));
    return create_segment(j, j->next_id);
}

/* Zeros written ahead of the appends, j->fill bytes at a time (not past
 * the segment's size): an append then overwrites allocated blocks, and its
 * fdatasync has no metadata to write (the file's size, its extents), which
 * on ext4 halves its cost (measured on the test VM, a 300-byte frame:
 * 820-938 us for append + fdatasync growing the file, 468-513 us over
 * zeros). Zeros are no frame: a scan stops there, and a restart cuts them
 * with the tail. A fill that fails is cut off again; the append is tried
 * anyway and fails by itself if the disk is full. */
static void fill_ahead(sl_journal *j, uint64_t need)
{
    static const unsigned char zeros[65536];
    if (need <= j->filled || !j->fill)
        return;
    uint64_t to = (need + j->fill - 1) / j->fill * j->fill;
    if (to > j->seg_bytes)
        to = need > j->seg_bytes ? need : j->seg_bytes;
    for (uint64_t at = j->filled; at < to;) {
        struct iovec iov = {(void *)zeros, to - at < sizeof(zeros) ? to - at : sizeof(zeros)};
        if (write_all(j->fd, at, &iov, 1) != 0) {
            (void)!ftruncate(j->fd, (off_t)j->filled);
            return;
        }
        at += iov.iov_len;
    }
    j->filled = to;
}

int sl_journal_append(sl_journal *j, const void *p, size_t n, uint64_t *id)
{
    if (n == 0 || n > SL_JOURNAL_MAX_RECORD)
        return jfail(j->err, sizeof(j->err), SL_STORE_EIO,
                     "a record of %zu bytes cannot go in the log (1 byte to 1 GiB)", n);
    if (j->need_cut) {
        if (ftruncate(j->fd, (off_t)j->end) != 0)
            return jfail(j->err, sizeof(j->err), SL_STORE_EIO,
                         "cannot cut a failed append off the log in %s: %s", j->dir,
                         strerror(errno));
        j->need_cut = false;
        j->filled = j->end;
    }
    if (j->end >= j->seg_bytes && j->end > SL_JOURNAL_HEADER) {
        int rc = rotate(j);
        if (rc)
            return rc;
    }
    fill_ahead(j, j->end + SL_JOURNAL_FRAME + n);
    unsigned char h[SL_JOURNAL_FRAME];
    put_u32(h, (uint32_t)n);
    put_u64(h + 8, j->next_id);
    put_u32(h + 4, frame_crc(h, p, n));
    struct iovec iov[2] = {{h, sizeof(h)}, {(void *)p, n}};
    if (write_all(j->fd, j->end, iov, 2) != 0) {
        int e = errno;
        /* Bytes of a frame left after end would be misread as the start of the
         * next record's place: cut them now, or before the next append. */
        j->need_cut = ftruncate(j->fd, (off_t)j->end) != 0;
        j->filled = j->end;
        return jfail(j->err, sizeof(j->err), SL_STORE_EIO, "cannot append to the log in %s: %s",
                     j->dir, strerror(e));
    }
    index_note(j, j->nsegs - 1, j->next_id, j->end);
    j->end += SL_JOURNAL_FRAME + n;
    *id = j->next_id++;
    return 0;
}

int sl_journal_sync(sl_journal *j)
{
    if (j->end == j->synced_end)
        return 0;
    if (fdatasync(j->fd) == 0) {
        j->synced_end = j->end;
        j->synced_next = j->next_id;
        return 0;
    }
    /* After a failed fdatasync the kernel may have dropped the dirty pages
     * while reporting them clean: a second sync would succeed on lost data.
     * So what was not known synced goes, to be appended again. */
    int e = errno;
    j->need_cut = ftruncate(j->fd, (off_t)j->synced_end) != 0;
    j->end = j->filled = j->synced_end;
    j->next_id = j->synced_next;
    index_cut(j);
    return jfail(j->err, sizeof(j->err), SL_STORE_EIO, "cannot sync the log in %s: %s", j->dir,
                 strerror(e));
}

int sl_journal_drop_through(sl_journal *j, uint64_t applied)
{
    int rc = 0;
    size_t gone = 0;
    while (gone + 1 < j->nsegs && j->segs[gone + 1] <= applied + 1) {
        char path[4096];
        seg_path(j->dir, j->segs[gone], path, sizeof(path));
        if (unlink(path) != 0 && errno != ENOENT) {
            rc = jfail(j->err, sizeof(j->err), SL_STORE_EIO,
                       "cannot delete the applied log segment %s: %s", path, strerror(errno));
            break;
        }
        gone++;
    }
    if (gone) {
        pthread_mutex_lock(&j->mu);
        for (size_t i = 0; i < gone; i++)
            free(j->idx[i].off);
        memmove(j->segs, j->segs + gone, (j->nsegs - gone) * sizeof(*j->segs));
        memmove(j->idx, j->idx + gone, (j->nsegs - gone) * sizeof(*j->idx));
        j->nsegs -= gone;
        pthread_mutex_unlock(&j->mu);
    }
    return rc;
}

/* ---- opening ---------------------------------------------------------------- */

/* Reads segment i's frames up to the first that is not good (cur_next's
 * answer), indexing them: the index is rebuilt at every open. */
static int scan_indexing(sl_journal *j, size_t i, cursor *c)
{
    for (;;) {
        uint64_t off = c->off, id = c->next_id;
        size_t n;
        int rc = cur_next(c, &n);
        if (rc != CUR_RECORD)
            return rc;
        index_note(j, i, id, off);
    }
}

/* Checks a segment before the last: every frame good, and the next segment
 * starting where it ends. */
static int check_full_segment(sl_journal *j, size_t i, char *err, size_t cap)
{
    char path[4096];
    seg_path(j->dir, j->segs[i], path, sizeof(path));
    cursor c;
    int rc = cur_open(&c, path, j->segs[i]);
    if (rc == CUR_RECORD)
        rc = scan_indexing(j, i, &c);
    if (rc == CUR_IO)
        rc = jfail(err, cap, SL_STORE_EIO, "cannot read the log segment %s: %s", path,
                   strerror(errno));
    else if (rc == CUR_BAD)
        rc = jfail(err, cap, SL_STORE_EDATA,
                   "the log segment %s is damaged at byte %" PRIu64 " (%s); it is not the last "
                   "segment, so this is no crash's torn write: restore the store from a backup",
                   path, c.off, c.why);
    else if (c.next_id != j->segs[i + 1])
        rc = jfail(err, cap, SL_STORE_EDATA,
                   "the log in %s lacks records %" PRIu64 " to %" PRIu64
                   " (segment %s ends before the next begins): restore the store from a backup",
                   j->dir, c.next_id, j->segs[i + 1] - 1, path);
    cur_close(&c);
    return rc;
}

/* Where the bytes in [from, to) of fd end once their trailing zeros are
 * left off (from when they are all zeros). */
static int end_of_data(int fd, uint64_t from, uint64_t to, uint64_t *end)
{
    unsigned char buf[65536];
    while (to > from) {
        size_t n = to - from < sizeof(buf) ? (size_t)(to - from) : sizeof(buf);
        ssize_t k = pread(fd, buf, n, (off_t)(to - n));
        if (k < 0 && errno == EINTR)
            continue;
        if (k != (ssize_t)n) {
            if (k >= 0)
                errno = EIO;
            return -1;
        }
        size_t keep = n;
        while (keep > 0 && buf[keep - 1] == 0)
            keep--;
        if (keep > 0) {
            *end = to - n + keep;
            return 0;
        }
        to -= n;
    }
    *end = from;
    return 0;
}

/* What opening reports as cut: the torn tail after the last good frame.
 * With fill_bytes the segment ends in zeros written ahead of the appends:
 * those are no torn write, and only the bytes before them count (a torn
 * frame's own trailing zeros cannot be told from them and go uncounted
 * too). Without, zeros there are a write whose data never reached the disk,
 * and count. */
static int torn_bytes(const sl_journal *j, uint64_t good, uint64_t size, uint64_t *torn)
{
    uint64_t end = size;
    if (j->fill && end_of_data(j->fd, good, size, &end) != 0)
        return -1;
    *torn = end - good;
    return 0;
}

/* Scans the last segment and cuts what follows its last good frame. */
static int open_last(sl_journal *j, char *err, size_t cap)
{
    uint64_t first = j->segs[j->nsegs - 1];
    char path[4096];
    seg_path(j->dir, first, path, sizeof(path));
    cursor c;
    int rc = cur_open(&c, path, first);
    if (rc == CUR_RECORD)
        rc = scan_indexing(j, j->nsegs - 1, &c);
    uint64_t good = c.off, next = c.next_id;
    cur_close(&c);
    if (rc == CUR_IO)
        return jfail(err, cap, SL_STORE_EIO, "cannot read the log segment %s: %s", path,
                     strerror(errno));
    if (good < SL_JOURNAL_HEADER && rc != CUR_BAD) /* shorter than a header: start it again */
        return create_segment(j, first) ? jfail(err, cap, SL_STORE_EIO, "%s", j->err) : 0;
    if (good < SL_JOURNAL_HEADER)
        return jfail(err, cap, SL_STORE_EDATA,
                     "%s is not a sluice log segment: move it out of %s", path, j->dir);
    j->fd = open(path, O_RDWR | O_CLOEXEC);
    struct stat sb;
    if (j->fd < 0 || fstat(j->fd, &sb) != 0)
        return jfail(err, cap, SL_STORE_EIO, "cannot open the log segment %s: %s", path,
                     strerror(errno));
    if ((uint64_t)sb.st_size > good) {
        if (torn_bytes(j, good, (uint64_t)sb.st_size, &j->cut_bytes) != 0 ||
            ftruncate(j->fd, (off_t)good) != 0 || fdatasync(j->fd) != 0)
            return jfail(err, cap, SL_STORE_EIO, "cannot cut the torn tail of %s: %s", path,
                         strerror(errno));
    }
    j->end = j->synced_end = j->filled = good;
    j->next_id = j->synced_next = next;
    return 0;
}

/* The segments found, less those holding only records below first_id. */
static int find_segments(sl_journal *j, const sl_journal_opts *o, char *err, size_t cap)
{
    int rc = list_segments(j->dir, &j->segs, &j->nsegs, &j->capsegs, err, cap);
    if (rc)
        return rc;
    if (j->capsegs && !(j->idx = calloc(j->capsegs, sizeof(*j->idx))))
        abort();
    rc = sl_journal_drop_through(j, o->first_id - 1);
    if (rc)
        return jfail(err, cap, rc, "%s", j->err);
    if (j->nsegs && j->segs[0] > o->first_id)
        return jfail(err, cap, SL_STORE_EDATA,
                     "the log in %s starts at record %" PRIu64 " but the store has applied only "
                     "up to record %" PRIu64 ": records are missing (a store file older than its "
                     "log?); restore the store and its log from one backup",
                     j->dir, j->segs[0], o->first_id - 1);
    return 0;
}

static int open_segments(sl_journal *j, const sl_journal_opts *o, char *err, size_t cap)
{
    int rc = find_segments(j, o, err, cap);
    for (size_t i = 0; rc == 0 && i + 1 < j->nsegs; i++)
        rc = check_full_segment(j, i, err, cap);
    if (rc == 0 && j->nsegs)
        rc = open_last(j, err, cap);
    if (rc)
        return rc;
    if (j->nsegs && j->next_id >= o->first_id)
        return 0;
    /* Empty, or every record applied already (a log older than its store):
     * start again where the store is. */
    if (j->nsegs && (rc = sl_journal_drop_through(j, UINT64_MAX - 1)) == 0) {
        char path[4096];
        seg_path(j->dir, j->segs[0], path, sizeof(path));
        if (unlink(path) != 0 && errno != ENOENT)
            rc = jfail(j->err, sizeof(j->err), SL_STORE_EIO,
                       "cannot delete the applied log segment %s: %s", path, strerror(errno));
        free(j->idx[0].off);
        j->nsegs = 0;
    }
    if (rc == 0)
        rc = create_segment(j, o->first_id);
    return rc ? jfail(err, cap, rc, "%s", j->err) : 0;
}

int sl_journal_open(const sl_journal_opts *o, sl_journal **out, char *err, size_t cap)
{
    *out = NULL;
    if (o->first_id == 0)
        return jfail(err, cap, SL_STORE_EIO, "a log's first id is at least 1");
    if (mkdir(o->dir, 0755) != 0 && errno != EEXIST)
        return jfail(err, cap, SL_STORE_EIO, "cannot create the log directory %s: %s", o->dir,
                     strerror(errno));
    sl_journal *j = calloc(1, sizeof(*j));
    if (!j || !(j->dir = strdup(o->dir)))
        abort();
    j->fd = -1;
    pthread_mutex_init(&j->mu, NULL);
    j->seg_bytes = o->segment_bytes ? o->segment_bytes : SL_JOURNAL_SEGMENT_BYTES;
    j->fill = o->fill_bytes;
    j->dir_fd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = j->dir_fd < 0 ? jfail(err, cap, SL_STORE_EIO, "cannot open the log directory %s: %s",
                                   o->dir, strerror(errno))
                           : open_segments(j, o, err, cap);
    if (rc) {
        sl_journal_close(j);
        return rc;
    }
    *out = j;
    return 0;
}

void sl_journal_close(sl_journal *j)
{
    if (!j)
        return;
    /* A clean stop leaves no zeros after the last frame. */
    if (j->fd >= 0 && j->filled > j->end)
        (void)!ftruncate(j->fd, (off_t)j->end);
    if (j->fd >= 0)
        close(j->fd);
    if (j->dir_fd >= 0)
        close(j->dir_fd);
    for (size_t i = 0; i < j->nsegs; i++)
        free(j->idx[i].off);
    free(j->idx);
    pthread_mutex_destroy(&j->mu);
    free(j->segs);
    free(j->dir);
    free(j);
}

const char *sl_journal_error(const sl_journal *j)
{
    return j->err;
}

uint64_t sl_journal_next_id(const sl_journal *j)
{
    return j->next_id;
}

uint64_t sl_journal_first_id(const sl_journal *j)
{
    return j->nsegs ? j->segs[0] : j->next_id;
}

uint64_t sl_journal_cut_bytes(const sl_journal *j)
{
    return j->cut_bytes;
}
