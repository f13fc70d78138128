/* journal.h - an append-only log of records in plain files: the commit
 * path of a store whose applied state lives elsewhere (docs/store.md, "The
 * log file").
 *
 * A journal is a directory of segments, each named by the id of its first
 * record ("00000000000000000042.seg", 20 decimal digits). Records get
 * consecutive ids. A segment is
 *
 *   segment := magic:8 ("sluicej1") first_id:u64 frame*
 *   frame   := length:u32 crc:u32 id:u64 payload[length]
 *
 * little-endian, crc the CRC-32 (zlib's) of the length, the id and the
 * payload, so that a damaged length is caught as well as damaged bytes.
 * Appending is one pwritev(2) at the end of the good part of the last
 * segment: once it returns, the record survives the process being killed
 * (it is in the page cache); sl_journal_sync makes what was appended
 * survive power loss too (fdatasync), once for however many records.
 *
 * A crash can leave the last segment's last frame cut short, or bytes after
 * it that are no frame. Opening scans the last segment, stops at the first
 * frame that is short, whose crc does not match or whose id is not the next
 * one, and truncates the file there: a torn tail is cut, never read. A
 * segment is synced before the next one is started, so only the last can be
 * torn; a bad frame in an earlier one is damage, and the journal refuses to
 * open (SL_STORE_EDATA, naming the file and offset).
 *
 * Segments whose records have all been applied elsewhere are deleted
 * (sl_journal_drop_through); the last one never is, so the next id is never
 * lost. Nothing here is thread-safe except sl_journal_read and
 * sl_journal_read_indexed, which read the files by name and may run on
 * another thread while records are appended, for ids below what the
 * appender has reported written. */
#ifndef SL_STORE_JOURNAL_H
#define SL_STORE_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

#define SL_JOURNAL_HEADER 16u                  /* a segment's magic and first id */
#define SL_JOURNAL_FRAME 16u                   /* a frame's length, crc and id */
#define SL_JOURNAL_MAX_RECORD (1u << 30)       /* a longer length is damage */
#define SL_JOURNAL_SEGMENT_BYTES (64u << 20)   /* the default rotation size */
#define SL_JOURNAL_FILL_BYTES (1u << 20)       /* a good fill_bytes */
#define SL_JOURNAL_INDEX_EVERY 16u             /* records per offset kept (the index) */

typedef struct sl_journal sl_journal;

typedef struct sl_journal_opts {
    const char *dir; /* created (one level) when missing */
    /* The id the records of this journal must reach to: every record below
     * it is applied elsewhere already. Segments holding only such records
     * are deleted; a journal whose records all lie below it (an older copy)
     * starts over at it; one whose first record lies above it lacks
     * records, and the open fails (SL_STORE_EDATA). At least 1. */
    uint64_t first_id;
    /* A segment that reached this many bytes is closed (synced) and the
     * next record starts a new one. 0: SL_JOURNAL_SEGMENT_BYTES. */
    uint64_t segment_bytes;
    /* Zeros written ahead of the appends, this many bytes at a time, so
     * that an fdatasync after an append has no metadata to write (worth it
     * when every commit is synced). 0: none, the file grows by each frame.
     * A clean close cuts them off; a crash leaves them, cut at the open. */
    uint64_t fill_bytes;
} sl_journal_opts;

/* Opens (creating) the journal; cuts a torn tail. On failure *out is NULL
 * and err holds a sentence saying what and how to mend: SL_STORE_EIO (the
 * directory or a file cannot be used), SL_STORE_EDATA (a segment that is not
 * the last is damaged, or records are missing). */
int sl_journal_open(const sl_journal_opts *o, sl_journal **out, char *err, size_t cap);
void sl_journal_close(sl_journal *j);
/* The last error's message (append, sync, drop). */
const char *sl_journal_error(const sl_journal *j);
/* The id the next record gets; the lowest id still kept. */
uint64_t sl_journal_next_id(const sl_journal *j);
uint64_t sl_journal_first_id(const sl_journal *j);
/* Bytes of a torn write that opening cut off the last segment's tail (0:
 * none), for a log line. With fill_bytes, the zeros at the end (written
 * ahead of the appends) are cut but not counted: they are no torn write. */
uint64_t sl_journal_cut_bytes(const sl_journal *j);

/* Appends one record of n bytes (1 to SL_JOURNAL_MAX_RECORD); *id gets its
 * id. On failure (SL_STORE_EIO: no space, an I/O error, a segment that
 * cannot be started) nothing of it stays in the file and the journal is as
 * before: the same record may be appended again. */
int sl_journal_append(sl_journal *j, const void *p, size_t n, uint64_t *id);
/* Makes every record appended so far survive power loss: one fdatasync,
 * none when nothing was appended since the last. On failure the kernel may
 * have lost the unsynced pages, so the records appended since the last
 * successful sync are cut off (sl_journal_next_id goes back) and must be
 * appended again; SL_STORE_EIO. */
int sl_journal_sync(sl_journal *j);
/* Deletes the segments whose records all have ids <= applied, never the
 * segment being appended to. A segment that cannot be deleted is left for
 * the next call (SL_STORE_EIO, the rest still go). */
int sl_journal_drop_through(sl_journal *j, uint64_t applied);

/* Calls fn for the records with from <= id < to, in order, until it returns
 * non-zero (which read returns). Reads the files of dir by name: any thread,
 * while records are appended, as long as to is at most the next id the
 * appender reported and the records from `from` on are not dropped
 * meanwhile. SL_STORE_EDATA (with err) when one of them is missing or
 * damaged; SL_STORE_EIO when a file cannot be read. */
typedef int (*sl_journal_fn)(void *ud, uint64_t id, const void *p, size_t n);
int sl_journal_read(const char *dir, uint64_t from, uint64_t to, sl_journal_fn fn, void *ud,
                    char *err, size_t cap);
/* The same for an open journal's records, from any thread (under the same
 * conditions), but seeking: the journal keeps, for each segment it opened
 * or wrote, the offset of every SL_JOURNAL_INDEX_EVERY-th record (taken as
 * records are appended, rebuilt when the open scans the files, taken back
 * with a cut), so a read starts at most that many frames before `from`
 * instead of at its segment's start. */
int sl_journal_read_indexed(sl_journal *j, uint64_t from, uint64_t to, sl_journal_fn fn,
                            void *ud, char *err, size_t cap);

#endif
