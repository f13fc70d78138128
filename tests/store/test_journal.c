/* test_journal.c - the log as plain segment files (journal.h): records come
 * back as appended, across reopening and rotation; a torn tail (the last
 * record cut at any byte, any byte of it changed, zeros after it) is cut
 * at open and never read, and the next append takes its place; damage in a
 * segment before the last, or a missing segment, refuses to open; a failed
 * append leaves nothing behind. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "disk_fault.h"
#include "journal.h"

typedef struct tmp {
    char dir[64];  /* the test's own directory */
    char log[80];  /* the journal in it */
} tmp;

static void tmp_make(tmp *t)
{
    snprintf(t->dir, sizeof(t->dir), "/tmp/sl-journal-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->log, sizeof(t->log), "%s/s.db-log", t->dir);
}

static void rm_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[512];
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

static void tmp_free(tmp *t)
{
    rm_dir(t->log);
    rmdir(t->dir);
}

static sl_journal *jopen(const char *dir, uint64_t first, uint64_t seg_bytes)
{
    sl_journal_opts o = {.dir = dir, .first_id = first, .segment_bytes = seg_bytes};
    sl_journal *j;
    char err[1024];
    int rc = sl_journal_open(&o, &j, err, sizeof(err));
    if (rc)
        fail_msg("open: %s", err);
    return j;
}

static int jopen_fails(const char *dir, uint64_t first, char *err, size_t cap)
{
    sl_journal_opts o = {.dir = dir, .first_id = first};
    sl_journal *j;
    int rc = sl_journal_open(&o, &j, err, cap);
    assert_null(j);
    return rc;
}

/* Record i's payload: i + 1 bytes, so that each has its own length. */
static size_t payload(uint64_t i, char *buf, size_t cap)
{
    size_t n = (size_t)(i % 200) + 1;
    assert_true(n <= cap);
    for (size_t k = 0; k < n; k++)
        buf[k] = (char)('a' + (i + k) % 26);
    return n;
}

/* Records appended by append_other and kept (not cut): [other_from, other_to). */
static uint64_t other_from, other_to;

static size_t other_payload(uint64_t i, char *buf)
{
    size_t n = 250 - (size_t)(i % 40);
    memset(buf, 'Z', n);
    return n;
}

static void append(sl_journal *j, uint64_t want_id)
{
    char buf[256];
    size_t n = payload(want_id, buf, sizeof(buf));
    uint64_t id = 0;
    assert_int_equal(sl_journal_append(j, buf, n, &id), 0);
    assert_int_equal(id, want_id);
}

typedef struct seen {
    uint64_t next; /* the id expected next */
    uint64_t count;
    uint64_t stop_at; /* stop (return 7) at this id; 0: never */
} seen;

static int check_record(void *ud, uint64_t id, const void *p, size_t n)
{
    seen *s = ud;
    char buf[256];
    size_t want = id >= other_from && id < other_to ? other_payload(id, buf)
                                                    : payload(id, buf, sizeof(buf));
    assert_int_equal(id, s->next);
    assert_int_equal(n, want);
    assert_memory_equal(p, buf, n);
    s->next++;
    s->count++;
    return id == s->stop_at ? 7 : 0;
}

/* Reads [from, to) and checks every record. */
static void read_all(const char *dir, uint64_t from, uint64_t to)
{
    seen s = {.next = from};
    char err[1024];
    int rc = sl_journal_read(dir, from, to, check_record, &s, err, sizeof(err));
    if (rc)
        fail_msg("read %llu..%llu: %s", (unsigned long long)from, (unsigned long long)to, err);
    assert_int_equal(s.count, to - from);
}

static off_t file_size(const char *path)
{
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    return sb.st_size;
}

static void seg_file(const char *dir, uint64_t id, char *out, size_t cap)
{
    snprintf(out, cap, "%s/%020llu.seg", dir, (unsigned long long)id);
}

static void test_round_trip_and_reopen(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    sl_journal *j = jopen(t.log, 5, 0);
    assert_int_equal(sl_journal_next_id(j), 5);
    for (uint64_t id = 5; id < 105; id++)
        append(j, id);
    assert_int_equal(sl_journal_sync(j), 0);
    assert_int_equal(sl_journal_sync(j), 0); /* nothing new: no second fdatasync needed */
    read_all(t.log, 5, 105);
    read_all(t.log, 50, 60);
    sl_journal_close(j);

    j = jopen(t.log, 5, 0);
    assert_int_equal(sl_journal_next_id(j), 105);
    assert_int_equal(sl_journal_cut_bytes(j), 0);
    append(j, 105);
    sl_journal_close(j);
    read_all(t.log, 5, 106);

    /* fn stops the read: its answer comes back */
    seen s = {.next = 10, .stop_at = 12};
    char err[1024];
    assert_int_equal(sl_journal_read(t.log, 10, 106, check_record, &s, err, sizeof(err)), 7);
    assert_int_equal(s.count, 3);
    /* past the end */
    s = (seen){.next = 100};
    assert_int_equal(sl_journal_read(t.log, 100, 107, check_record, &s, err, sizeof(err)),
                     SL_STORE_EDATA);
    assert_non_null(strstr(err, "ends at record 106"));
    tmp_free(&t);
}

/* Three records; returns the offsets where the last one starts and ends. */
static void three_records(const tmp *t, char *seg, size_t cap, off_t *start, off_t *end)
{
    sl_journal *j = jopen(t->log, 1, 0);
    append(j, 1);
    append(j, 2);
    sl_journal_close(j);
    seg_file(t->log, 1, seg, cap);
    *start = file_size(seg);
    j = jopen(t->log, 1, 0);
    append(j, 3);
    sl_journal_close(j);
    *end = file_size(seg);
}

/* After damage to record 3: opening cuts it, record 3 is appended anew
 * and reads back whole. */
static void expect_cut(const tmp *t, const char *seg, off_t start, off_t cut)
{
    sl_journal *j = jopen(t->log, 1, 0);
    assert_int_equal(sl_journal_next_id(j), 3);
    assert_int_equal(sl_journal_cut_bytes(j), (uint64_t)cut);
    assert_int_equal(file_size(seg), start);
    append(j, 3);
    append(j, 4);
    sl_journal_close(j);
    read_all(t->log, 1, 5);
}

static void test_torn_tail_at_every_byte(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    char seg[256];
    off_t start, end;
    three_records(&t, seg, sizeof(seg), &start, &end);
    char *whole = malloc((size_t)end);
    int fd = open(seg, O_RDONLY);
    assert_int_equal(read(fd, whole, (size_t)end), end);
    close(fd);
    for (off_t at = start; at < end; at++) {
        fd = open(seg, O_WRONLY | O_TRUNC);
        assert_int_equal(write(fd, whole, (size_t)at), at);
        close(fd);
        expect_cut(&t, seg, start, at - start);
    }
    free(whole);
    tmp_free(&t);
}

static void test_changed_byte_or_zeros_cut(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    char seg[256];
    off_t start, end;
    three_records(&t, seg, sizeof(seg), &start, &end);
    char *whole = malloc((size_t)end);
    int fd = open(seg, O_RDONLY);
    assert_int_equal(read(fd, whole, (size_t)end), end);
    close(fd);
    /* every byte of the last frame changed: length, crc, id or payload */
    for (off_t at = start; at < end; at++) {
        whole[at] ^= 0x5a;
        fd = open(seg, O_WRONLY | O_TRUNC);
        assert_int_equal(write(fd, whole, (size_t)end), end);
        close(fd);
        whole[at] ^= 0x5a;
        expect_cut(&t, seg, start, end - start);
    }
    /* zeros after the last record (blocks allocated, never written) */
    char zeros[4096] = {0};
    fd = open(seg, O_WRONLY | O_TRUNC);
    assert_int_equal(write(fd, whole, (size_t)start), start);
    assert_int_equal(write(fd, zeros, sizeof(zeros)), (ssize_t)sizeof(zeros));
    close(fd);
    expect_cut(&t, seg, start, sizeof(zeros));
    free(whole);
    tmp_free(&t);
}

static void test_empty_segment(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    sl_journal *j = jopen(t.log, 1, 0);
    append(j, 1);
    sl_journal_close(j);
    /* A crash right after the next segment was created: empty, or half a
     * header. Either is started again; the records before stay. */
    char seg[256];
    seg_file(t.log, 2, seg, sizeof(seg));
    for (int len = 0; len < (int)SL_JOURNAL_HEADER; len += 7) {
        int fd = open(seg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        assert_int_equal(write(fd, "sluicej1", (size_t)(len < 8 ? len : 8)), len < 8 ? len : 8);
        close(fd);
        j = jopen(t.log, 1, 0);
        assert_int_equal(sl_journal_next_id(j), 2);
        assert_int_equal(file_size(seg), SL_JOURNAL_HEADER);
        append(j, 2);
        sl_journal_close(j);
        read_all(t.log, 1, 3);
        j = jopen(t.log, 1, 0);
        assert_int_equal(sl_journal_next_id(j), 3);
        sl_journal_close(j);
        unlink(seg);
    }
    /* a file named as a segment that is none is not overwritten */
    int fd = open(seg, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_int_equal(write(fd, "not a segment at all", 20), 20);
    close(fd);
    char err[1024];
    assert_int_equal(jopen_fails(t.log, 1, err, sizeof(err)), SL_STORE_EDATA);
    assert_non_null(strstr(err, "is not a sluice log segment"));
    assert_int_equal(file_size(seg), 20);
    tmp_free(&t);
}

static void test_rotation_and_drop(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    sl_journal *j = jopen(t.log, 1, 150);
    for (uint64_t id = 1; id <= 40; id++)
        append(j, id);
    size_t nseg = ts_count_segments(t.log);
    assert_true(nseg > 5);
    read_all(t.log, 1, 41);
    read_all(t.log, 17, 23); /* from the middle of some segment, across others */
    sl_journal_close(j);

    j = jopen(t.log, 1, 150);
    assert_int_equal(sl_journal_next_id(j), 41);
    /* drop: only segments wholly applied, never the last */
    assert_int_equal(sl_journal_drop_through(j, 0), 0);
    assert_int_equal(ts_count_segments(t.log), nseg);
    assert_int_equal(sl_journal_drop_through(j, 20), 0);
    uint64_t first = sl_journal_first_id(j);
    assert_true(first <= 21 && first > 1);
    assert_true(ts_count_segments(t.log) < nseg);
    read_all(t.log, first, 41);
    char err[1024];
    seen s = {.next = 1};
    assert_int_equal(sl_journal_read(t.log, 1, 41, check_record, &s, err, sizeof(err)),
                     SL_STORE_EDATA);
    assert_int_equal(sl_journal_drop_through(j, UINT64_MAX - 1), 0);
    assert_int_equal(ts_count_segments(t.log), 1);
    append(j, 41);
    sl_journal_close(j);
    tmp_free(&t);
}

/* Opens dir as a --durability full store does: zeros filled ahead. */
static sl_journal *jopen_fill(const char *dir, uint64_t seg_bytes)
{
    sl_journal_opts o = {.dir = dir, .first_id = 1, .segment_bytes = seg_bytes, .fill_bytes = 256};
    sl_journal *j;
    char err[1024];
    if (sl_journal_open(&o, &j, err, sizeof(err)))
        fail_msg("open: %s", err);
    return j;
}

static void copy_dir(const tmp *from, const tmp *to)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "cp -a %s %s", from->log, to->log);
    assert_int_equal(system(cmd), 0);
}

/* Zeros written ahead (fill_bytes): the segments are filled a block at a
 * time and rotate with their zeros cut, so an older segment holds only
 * frames; reads stop at the zeros; a clean close cuts them; a crash
 * (the files copied while open) leaves them, and the open cuts them
 * without counting them as a torn tail; a torn frame in the zeros counts
 * as the bytes it wrote. */
static void test_fill_ahead(void **state)
{
    (void)state;
    tmp t, c, d;
    tmp_make(&t);
    tmp_make(&c);
    tmp_make(&d);
    sl_journal *j = jopen_fill(t.log, 600);
    for (uint64_t id = 1; id <= 40; id++)
        append(j, id);
    assert_true(ts_count_segments(t.log) > 2);
    read_all(t.log, 1, 41);
    char seg[256], copy[256];
    uint64_t last = 1;
    for (uint64_t id = 1; id < 41; id++) { /* the last segment's first id */
        struct stat sb;
        seg_file(t.log, id, seg, sizeof(seg));
        if (stat(seg, &sb) == 0)
            last = id;
    }
    seg_file(t.log, last, seg, sizeof(seg));
    off_t filled = file_size(seg);
    assert_true(filled % 256 == 0 || filled == 600);
    seg_file(t.log, 1, copy, sizeof(copy));
    assert_true(file_size(copy) < 600 + 300); /* rotated: no zeros kept */
    /* the crash: copies of the files as they are, zeros included */
    copy_dir(&t, &c);
    copy_dir(&t, &d);
    sl_journal_close(j);
    off_t good = file_size(seg);
    assert_true(good < filled); /* a clean close cuts the zeros */
    j = jopen(t.log, 1, 600);
    assert_int_equal(sl_journal_next_id(j), 41);
    assert_int_equal(sl_journal_cut_bytes(j), 0);
    sl_journal_close(j);
    /* zeros only: cut, and no torn tail */
    j = jopen_fill(c.log, 600);
    assert_int_equal(sl_journal_next_id(j), 41);
    assert_int_equal(sl_journal_cut_bytes(j), 0);
    seg_file(c.log, last, copy, sizeof(copy));
    assert_int_equal(file_size(copy), good);
    read_all(c.log, 1, 41);
    append(j, 41);
    sl_journal_close(j);
    /* a frame torn after 7 of its bytes, in the zeros: those 7 count */
    seg_file(d.log, last, copy, sizeof(copy));
    int fd = open(copy, O_WRONLY);
    assert_int_equal(pwrite(fd, "\x2a\x01\x02\x03\x04\x05\x06", 7, good), 7);
    close(fd);
    j = jopen_fill(d.log, 600);
    assert_int_equal(sl_journal_next_id(j), 41);
    assert_int_equal(sl_journal_cut_bytes(j), 7);
    assert_int_equal(file_size(copy), good);
    read_all(d.log, 1, 41);
    sl_journal_close(j);
    tmp_free(&t);
    tmp_free(&c);
    tmp_free(&d);
}

/* Opening with the id the store applied through: segments of applied
 * records go; a log older than the store starts over; a log that starts
 * after it lacks records. */
static void test_first_id(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    sl_journal *j = jopen(t.log, 1, 150);
    for (uint64_t id = 1; id <= 30; id++)
        append(j, id);
    sl_journal_close(j);
    size_t nseg = ts_count_segments(t.log);
    j = jopen(t.log, 15, 150);
    assert_true(ts_count_segments(t.log) < nseg);
    assert_true(sl_journal_first_id(j) <= 15);
    assert_int_equal(sl_journal_next_id(j), 31);
    sl_journal_close(j);
    j = jopen(t.log, 31, 150); /* everything applied: kept until the next segment */
    assert_int_equal(sl_journal_next_id(j), 31);
    sl_journal_close(j);
    j = jopen(t.log, 50, 150); /* a store newer than its log */
    assert_int_equal(sl_journal_next_id(j), 50);
    assert_int_equal(ts_count_segments(t.log), 1);
    append(j, 50);
    sl_journal_close(j);
    char err[1024];
    assert_int_equal(jopen_fails(t.log, 40, err, sizeof(err)), SL_STORE_EDATA);
    assert_non_null(strstr(err, "records are missing"));
    tmp_free(&t);
}

static void test_damage_before_last_segment_refused(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    sl_journal *j = jopen(t.log, 1, 150);
    for (uint64_t id = 1; id <= 20; id++)
        append(j, id);
    sl_journal_close(j);
    char seg[256];
    seg_file(t.log, 1, seg, sizeof(seg));
    off_t size = file_size(seg);
    int fd = open(seg, O_RDWR);
    char c;
    assert_int_equal(pread(fd, &c, 1, size - 1), 1);
    c ^= 1;
    assert_int_equal(pwrite(fd, &c, 1, size - 1), 1);
    char err[1024];
    assert_int_equal(jopen_fails(t.log, 1, err, sizeof(err)), SL_STORE_EDATA);
    assert_non_null(strstr(err, "is damaged at byte"));
    assert_int_equal(file_size(seg), size); /* nothing cut */
    seen s = {.next = 1};
    assert_int_equal(sl_journal_read(t.log, 1, 21, check_record, &s, err, sizeof(err)),
                     SL_STORE_EDATA);
    c ^= 1;
    assert_int_equal(pwrite(fd, &c, 1, size - 1), 1);
    close(fd);
    /* a segment gone from the middle */
    j = jopen(t.log, 1, 150);
    sl_journal_close(j);
    char second[256];
    DIR *d = opendir(t.log);
    struct dirent *e;
    uint64_t ids[64];
    size_t n = 0;
    while ((e = readdir(d)) && n < 64)
        if (strstr(e->d_name, ".seg"))
            ids[n++] = strtoull(e->d_name, NULL, 10);
    closedir(d);
    assert_true(n >= 3);
    uint64_t mid = 0;
    for (size_t i = 0; i < n; i++)
        if (ids[i] != 1 && (mid == 0 || ids[i] < mid))
            mid = ids[i]; /* the second segment */
    seg_file(t.log, mid, second, sizeof(second));
    assert_int_equal(unlink(second), 0);
    assert_int_equal(jopen_fails(t.log, 1, err, sizeof(err)), SL_STORE_EDATA);
    assert_non_null(strstr(err, "lacks records"));
    s = (seen){.next = 1};
    assert_int_equal(sl_journal_read(t.log, 1, 21, check_record, &s, err, sizeof(err)),
                     SL_STORE_EDATA);
    tmp_free(&t);
}

/* A write that fails half way (the file size limit stands in for a full
 * disk) leaves nothing: the same record goes in once there is room. */
static void test_failed_append_leaves_nothing(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    sl_journal *j = jopen(t.log, 1, 0);
    append(j, 1);
    char seg[256];
    seg_file(t.log, 1, seg, sizeof(seg));
    off_t before = file_size(seg);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)before + 40; /* room for part of record 2's frame */
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
    char buf[100];
    memset(buf, 'x', sizeof(buf));
    uint64_t id = 0;
    assert_int_equal(sl_journal_append(j, buf, sizeof(buf), &id), SL_STORE_EIO);
    assert_non_null(strstr(sl_journal_error(j), "cannot append"));
    assert_int_equal(file_size(seg), before);
    assert_int_equal(sl_journal_next_id(j), 2);
    assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
    append(j, 2);
    assert_int_equal(sl_journal_sync(j), 0);
    /* an empty record is refused: a length of 0 is how zeros are told */
    assert_int_equal(sl_journal_append(j, buf, 0, &id), SL_STORE_EIO);
    sl_journal_close(j);
    read_all(t.log, 1, 3);
    tmp_free(&t);
}

/* Reads [from, to) of an open journal through its index. */
static void read_indexed(sl_journal *j, uint64_t from, uint64_t to)
{
    seen s = {.next = from};
    char err[1024];
    int rc = sl_journal_read_indexed(j, from, to, check_record, &s, err, sizeof(err));
    if (rc)
        fail_msg("indexed read %llu..%llu: %s", (unsigned long long)from,
                 (unsigned long long)to, err);
    assert_int_equal(s.count, to - from);
}

/* Record 1's first payload byte changed: a read that passes it fails. */
static void damage_record_1(const char *log)
{
    char seg[256];
    seg_file(log, 1, seg, sizeof(seg));
    int fd = open(seg, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, "#", 1, SL_JOURNAL_HEADER + SL_JOURNAL_FRAME), 1);
    close(fd);
}

/* The index: a read near the end of a long segment seeks there. Every
 * record read alone comes back whole; with the segment's first frame
 * damaged, a read by name (from the segment's start) fails, and the
 * indexed read of the last records, which never reads that frame,
 * succeeds. */
static void test_index_seeks(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    sl_journal *j = jopen(t.log, 1, 0);
    for (uint64_t id = 1; id <= 2000; id++)
        append(j, id);
    for (uint64_t id = 1; id <= 2000; id += 7)
        read_indexed(j, id, id + 1);
    read_indexed(j, 1, 2001);
    damage_record_1(t.log);
    seen s = {.next = 1990};
    char err[1024];
    assert_int_equal(sl_journal_read(t.log, 1990, 2001, check_record, &s, err, sizeof(err)),
                     SL_STORE_EDATA);
    read_indexed(j, 1990, 2001);
    read_indexed(j, 2000, 2001);
    sl_journal_close(j);
    tmp_free(&t);
}

/* The index is rebuilt when the journal opens (after a restart, and after
 * a torn tail is cut), and records appended after the cut join it. */
static void test_index_after_reopen_and_cut(void **state)
{
    (void)state;
    tmp t;
    tmp_make(&t);
    sl_journal *j = jopen(t.log, 1, 0);
    for (uint64_t id = 1; id <= 993; id++)
        append(j, id);
    sl_journal_close(j);
    char seg[256];
    seg_file(t.log, 1, seg, sizeof(seg));
    assert_int_equal(truncate(seg, file_size(seg) - 3), 0); /* record 993 torn */
    j = jopen(t.log, 1, 0);
    assert_int_equal(sl_journal_next_id(j), 993);
    assert_true(sl_journal_cut_bytes(j) > 0);
    for (uint64_t id = 993; id <= 1100; id++)
        append(j, id);
    damage_record_1(t.log);
    read_indexed(j, 970, 1101);
    for (uint64_t id = 17; id <= 1100; id += 13) /* not those before entry 1 */
        read_indexed(j, id, id + 1);
    sl_journal_close(j);
    tmp_free(&t);
}

/* Record id appended as other bytes than payload(id) (another length):
 * what a batch cut off by a failed sync held before it was appended anew. */
static void append_other(sl_journal *j, uint64_t want_id)
{
    char buf[256];
    size_t n = other_payload(want_id, buf);
    uint64_t id = 0;
    assert_int_equal(sl_journal_append(j, buf, n, &id), 0);
    assert_int_equal(id, want_id);
}

/* Every read of records 1..last through the index: from a record before,
 * inside and after the cut region [cut_from, cut_to], to the end and alone. */
static void read_around_cut(sl_journal *j, uint64_t cut_from, uint64_t cut_to, uint64_t last)
{
    const uint64_t from[] = {1, cut_from - 9, cut_from - 1, cut_from, cut_from + 1,
                             (cut_from + cut_to) / 2, cut_to, cut_to + 1, cut_to + 17, last};
    for (size_t i = 0; i < sizeof(from) / sizeof(*from); i++)
        read_indexed(j, from[i], last + 1);
    for (uint64_t id = 1; id <= last; id++)
        read_indexed(j, id, id + 1);
}

/* --durability full's failed sync (journal.h) cuts the records appended
 * since the last good one, index entries included: records 41..75 (with
 * the index's entries of 49 and 65), appended with other lengths, are cut
 * and appended again, and every read through the index, from before,
 * inside or after the cut region, finds exactly the new ones; so does the
 * index rebuilt by a reopen. Once within one segment, once with segments
 * of 3000 bytes, where the rotations' own syncs keep records 41..71 and
 * only those of the last segment are cut. Fails with the entries not
 * taken back (index_cut). */
static void test_index_after_failed_sync(void **state)
{
    (void)state;
    const uint64_t seg_bytes[] = {0, 3000};
    for (size_t v = 0; v < 2; v++) {
        tmp t;
        tmp_make(&t);
        sl_journal_opts o = {.dir = t.log, .first_id = 1, .segment_bytes = seg_bytes[v],
                             .fill_bytes = SL_JOURNAL_FILL_BYTES};
        sl_journal *j;
        char err[1024];
        assert_int_equal(sl_journal_open(&o, &j, err, sizeof(err)), 0);
        for (uint64_t id = 1; id <= 40; id++)
            append(j, id);
        assert_int_equal(sl_journal_sync(j), 0);
        for (uint64_t id = 41; id <= 75; id++)
            append_other(j, id);
        ts_syncs_fail = true;
        int rc = sl_journal_sync(j);
        ts_syncs_fail = false;
        assert_int_equal(rc, SL_STORE_EIO);
        assert_non_null(strstr(sl_journal_error(j), "cannot sync the log"));
        uint64_t cut_from = sl_journal_next_id(j);
        assert_true(cut_from >= 41 && cut_from < 75);
        assert_true(v == 1 || cut_from == 41);
        other_from = 41; /* those before cut_from were synced by a rotation */
        other_to = cut_from;
        for (uint64_t id = cut_from; id <= 120; id++)
            append(j, id);
        assert_int_equal(sl_journal_sync(j), 0);
        read_around_cut(j, cut_from, 75, 120);
        sl_journal_close(j);
        assert_true(v == 0 || ts_count_segments(t.log) > 2);
        read_all(t.log, 1, 121);
        assert_int_equal(sl_journal_open(&o, &j, err, sizeof(err)), 0);
        assert_int_equal(sl_journal_cut_bytes(j), 0);
        read_around_cut(j, cut_from, 75, 120);
        sl_journal_close(j);
        tmp_free(&t);
        other_from = other_to = 0;
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_and_reopen),
        cmocka_unit_test(test_torn_tail_at_every_byte),
        cmocka_unit_test(test_changed_byte_or_zeros_cut),
        cmocka_unit_test(test_empty_segment),
        cmocka_unit_test(test_rotation_and_drop),
        cmocka_unit_test(test_first_id),
        cmocka_unit_test(test_damage_before_last_segment_refused),
        cmocka_unit_test(test_failed_append_leaves_nothing),
        cmocka_unit_test(test_fill_ahead),
        cmocka_unit_test(test_index_seeks),
        cmocka_unit_test(test_index_after_reopen_and_cut),
        cmocka_unit_test(test_index_after_failed_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
