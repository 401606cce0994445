/*
 * The history's log reader (src/machinery/hist_log.c) on hostile logs.
 *
 * The input is a list of record bodies, each given a valid header here (its
 * length and BLAKE2b-128, written from the format's description, not from
 * hist_log.c), so that the body's parser is what gets fuzzed rather than the
 * hash; an input whose first byte is odd is taken as the raw log instead.
 * Every record the reader takes must encode back to exactly the bytes it
 * was read from: nothing is read past a record, and nothing is accepted in
 * two spellings. The reader must stop at the first record it refuses.
 *
 * The log is read by both readers, the whole-log one (for logs up to 4 MiB)
 * and the record-by-record one (bigger logs), which must take the same
 * records and end at the same place.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <sodium.h>

#include "fuzz_common.h"
#include "util/buf.h"
#include "machinery/hist_log.h"

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* "MTVL", the body's length, BLAKE2b-128 of the length's 4 bytes and the
 * body, then the body. */
static int add_record(mt_buf *log, const uint8_t *body, size_t n)
{
    unsigned char head[24];
    crypto_generichash_state st;

    memcpy(head, "MTVL", 4);
    put32(head + 4, (uint32_t)n);
    crypto_generichash_init(&st, NULL, 0, 16);
    crypto_generichash_update(&st, head + 4, 4);
    crypto_generichash_update(&st, body, n);
    crypto_generichash_final(&st, head + 8, 16);
    return mt_buf_put(log, (const char *)head, sizeof(head)) < 0 ||
           mt_buf_put(log, (const char *)body, n) < 0;
}

static int reencode(void *payload, const mt_hist_rec *r)
{
    FUZZ_CHECK(r->id > 0, "a record with id %lld was taken", (long long)r->id);
    FUZZ_CHECK(r->path && r->actor && r->memory_id[0], "a record without its names was taken");
    FUZZ_CHECK((r->op == MT_VERSION_DELETED) == (r->sha256[0] == '\0'),
               "a deletion with content, or content without a hash, was taken");
    FUZZ_CHECK(mt_hist_rec_encode(payload, r) == 0, "a record taken does not encode");
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return sodium_init() < 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_buf log = MT_BUF_INIT, back = MT_BUF_INIT, one_by_one = MT_BUF_INIT;
    uint64_t end = 0, end_one = 0;
    size_t i = 1;
    int fd;

    if (size < 1 || size > 1 << 16)
        return 0;
    if (data[0] & 1) {
        FUZZ_CHECK(mt_buf_put(&log, (const char *)data + 1, size - 1) == 0, "out of memory");
    } else {
        while (i + 2 <= size) {
            size_t n = (size_t)data[i] << 8 | data[i + 1];
            i += 2;
            if (n > size - i)
                n = size - i;
            FUZZ_CHECK(add_record(&log, data + i, n) == 0, "out of memory");
            i += n;
        }
    }
    fd = memfd_create("fuzz-hist-log", MFD_CLOEXEC);
    FUZZ_CHECK(fd >= 0, "memfd_create failed");
    FUZZ_CHECK(log.len == 0 || write(fd, log.ptr, log.len) == (ssize_t)log.len, "write failed");
    FUZZ_CHECK(mt_hist_log_each_sized(fd, SIZE_MAX, &end, reencode, &back) == 0,
               "the whole-log reader failed: %s", mt_error_last()->message);
    FUZZ_CHECK(mt_hist_log_each_sized(fd, 0, &end_one, reencode, &one_by_one) == 0,
               "the record-by-record reader failed: %s", mt_error_last()->message);
    close(fd);
    FUZZ_CHECK(end_one == end && one_by_one.len == back.len &&
                   (back.len == 0 || memcmp(one_by_one.ptr, back.ptr, back.len) == 0),
               "the readers disagree: the whole log ends at %llu, record by record at %llu",
               (unsigned long long)end, (unsigned long long)end_one);
    FUZZ_CHECK(end <= log.len, "the reader ended at %llu of %zu bytes", (unsigned long long)end,
               log.len);
    FUZZ_CHECK(back.len == end && (end == 0 || memcmp(back.ptr, log.ptr, end) == 0),
               "the %llu bytes taken do not encode back to themselves (%zu bytes)",
               (unsigned long long)end, back.len);
    /* Reading from a buffer takes the same records. */
    FUZZ_CHECK(mt_hist_rec_each(log.ptr, (size_t)end, reencode, &back) == 0,
               "the records taken from the file do not read from memory: %s",
               mt_error_last()->message);
    mt_buf_dispose(&log);
    mt_buf_dispose(&back);
    mt_buf_dispose(&one_by_one);
    return 0;
}
