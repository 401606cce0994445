/*
 * The history's log of versions not yet in its database (history.log
 * beside history.db): a change of a plain store appends its versions here,
 * in one write under the store's lock, instead of a SQLite transaction of
 * its own; they are loaded into the database in batches (hist_commit.c).
 *
 * A record is a header (magic, the body's length, a BLAKE2b-128 of both)
 * and a body of fixed-width little-endian fields and length-prefixed
 * strings. A record cut short by a kill or a power cut, or damaged, fails
 * its length or its hash: reading stops there, and nothing after it is
 * taken (memtool never appends after such a record: the log is loaded and
 * emptied before a process's first append).
 */
#ifndef MT_STORE_HIST_LOG_H
#define MT_STORE_HIST_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "machinery/history.h"
#include "util/buf.h"

/* One version as it goes into the database: everything resolved (its id,
 * the memory's, the content's hash), so loading it needs no lookup. */
typedef struct {
    int64_t id;
    int64_t at;
    mt_version_op op;
    char memory_id[24];
    char sha256[65]; /* "" for a deletion */
    uint64_t size;
    const char *path;
    const char *previous; /* NULL but for a rename */
    const char *actor;
    const char *data; /* NULL: the content is kept already under sha256 */
    size_t len;
    int has_fp;
    mt_hist_fp fp;
    uint32_t keep; /* the cap on the memory's versions, pruned to after this
                    * version: on the one its change pruned after (0 none) */
    uint32_t days; /* the change's cap on versions' age (each of its records) */
} mt_hist_rec;

/* The record appended to out (0, MT_ENOMEM, or MT_ELIMIT: too big). */
int mt_hist_rec_encode(mt_buf *out, const mt_hist_rec *r);

/* The cap on versions (keep) of the record at rec, as mt_hist_rec_encode
 * wrote it, set to keep (its hash made again). */
void mt_hist_rec_set_keep(char *rec, uint32_t keep);

/* Each whole record of the log open as fd, in order, from its start: cb
 * returns 0 to go on or a negative code to stop with it (returned). Stops
 * quietly at the first record cut short or damaged; *end is where the
 * records cb took end. The record's strings point into a buffer kept only
 * during cb. A log up to 4 MiB is read whole, a bigger one record by
 * record. */
typedef int (*mt_hist_rec_cb)(void *payload, const mt_hist_rec *r);
int mt_hist_log_each(int fd, uint64_t *end, mt_hist_rec_cb cb, void *payload);
/* The same, reading the log whole only up to whole_max bytes (and never
 * over 4 MiB): so tests and the fuzzer reach both readers. */
int mt_hist_log_each_sized(int fd, size_t whole_max, uint64_t *end, mt_hist_rec_cb cb,
                           void *payload);

/* The records in buf[0..len) (as the log holds them), each to cb. */
int mt_hist_rec_each(const char *buf, size_t len, mt_hist_rec_cb cb, void *payload);

#endif
