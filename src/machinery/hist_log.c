/*
 * The log of versions not yet loaded (hist_log.h): its records, written
 * and read.
 */
#include "machinery/hist_log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include <memtool.h>

/* The record's first four bytes: bytes, not a string (no NUL is written). */
static const unsigned char magic[4] = {'M', 'T', 'V', 'L'};

#define HEAD     24 /* magic, the body's length, the hash */
#define HASH     16
#define NO_STR   0xffffffffu
#define BODY_MAX 0x7fffffffu
/* A log up to this size is read whole; a bigger one record by record. */
#define WHOLE_MAX (4u * 1024 * 1024)

static void put32(unsigned char *p, uint32_t v)
{
    int i;

    for (i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    int i;

    for (i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* The hash of a record: its body's length (as written) and its body. */
static void rec_hash(unsigned char out[HASH], const unsigned char len[4], const unsigned char *body,
                     size_t n)
{
    crypto_generichash_state st;

    crypto_generichash_init(&st, NULL, 0, HASH);
    crypto_generichash_update(&st, len, 4);
    crypto_generichash_update(&st, body, n);
    crypto_generichash_final(&st, out, HASH);
}

#define FIXED   64 /* id, at, op, flags, keep, days, size, ino, mtime, ctime */
#define KEEP_AT 20 /* where keep is in the body: mt_hist_rec_set_keep changes it in place */

static size_t str_size(const char *s)
{
    return 4 + (s ? strlen(s) : 0);
}

static unsigned char *put_str(unsigned char *p, const char *s)
{
    size_t n = s ? strlen(s) : 0;

    put32(p, s ? (uint32_t)n : NO_STR);
    /* Length-prefixed: the NUL stays behind on purpose. */
    if (n)
        memcpy(p + 4, s, n); // NOLINT(bugprone-not-null-terminated-result)
    return p + 4 + n;
}

int mt_hist_rec_encode(mt_buf *out, const mt_hist_rec *r)
{
    size_t body;
    unsigned char *start, *p;

    /* Checked first so the sum cannot wrap. A body within BODY_MAX also
     * keeps every string's length below NO_STR. */
    if (r->data && r->len > BODY_MAX)
        return mt_error_set(MT_ELIMIT, "a version of %zu bytes is too big for the history's log",
                            r->len);
    body = FIXED + str_size(r->memory_id) + str_size(r->sha256) + str_size(r->path) +
           str_size(r->previous) + str_size(r->actor) + (r->data ? 8 + r->len : 0);
    if (body > BODY_MAX)
        return mt_error_set(MT_ELIMIT, "a version of %zu bytes is too big for the history's log",
                            r->len);
    if (mt_buf_grow(out, HEAD + body) < 0)
        return MT_ENOMEM;
    start = (unsigned char *)out->ptr + out->len;
    memcpy(start, magic, sizeof(magic));
    put32(start + 4, (uint32_t)body);
    p = start + HEAD;
    put64(p, (uint64_t)r->id);
    put64(p + 8, (uint64_t)r->at);
    p[16] = (unsigned char)r->op;
    p[17] = (unsigned char)((r->has_fp ? 1 : 0) | (r->data ? 2 : 0));
    p[18] = p[19] = 0;
    put32(p + KEEP_AT, r->keep);
    put32(p + 24, r->days);
    put64(p + 28, r->size);
    put64(p + 36, r->fp.ino);
    put64(p + 44, (uint64_t)r->fp.mtime_ns);
    put64(p + 52, (uint64_t)r->fp.ctime_ns);
    memset(p + 60, 0, 4);
    p += FIXED;
    p = put_str(p, r->memory_id);
    p = put_str(p, r->sha256);
    p = put_str(p, r->path);
    p = put_str(p, r->previous);
    p = put_str(p, r->actor);
    if (r->data) {
        put64(p, r->len);
        if (r->len)
            memcpy(p + 8, r->data, r->len);
    }
    rec_hash(start + 8, start + 4, start + HEAD, body);
    out->len += HEAD + body;
    return 0;
}

void mt_hist_rec_set_keep(char *rec, uint32_t keep)
{
    unsigned char *p = (unsigned char *)rec;

    put32(p + HEAD + KEEP_AT, keep);
    rec_hash(p + 8, p + 4, p + HEAD, get32(p + 4));
}

/* A string of the body at *p (before end), NUL-terminated in place: the
 * byte after each string is the next field's, so strings are moved one
 * byte down over their length prefix first. 0 when it does not fit. */
static int get_str(const char **out, unsigned char **p, const unsigned char *end, int nullable)
{
    uint32_t n;

    if (end - *p < 4)
        return 0;
    n = get32(*p);
    if (n == NO_STR) {
        *out = NULL;
        *p += 4;
        return nullable;
    }
    if ((size_t)(end - *p - 4) < n || memchr(*p + 4, '\0', n))
        return 0;
    memmove(*p, *p + 4, n);
    (*p)[n] = '\0';
    *out = (const char *)*p;
    *p += 4 + n;
    return 1;
}

/* The body (n bytes, writable) as a record: 0 when it does not parse. */
static int decode(mt_hist_rec *r, unsigned char *b, size_t n)
{
    const unsigned char *end = b + n;
    unsigned char *p = b + FIXED;
    const char *id, *sha;

    memset(r, 0, sizeof(*r));
    if (n < FIXED)
        return 0;
    r->id = (int64_t)get64(b);
    r->at = (int64_t)get64(b + 8);
    r->op = (mt_version_op)b[16];
    r->has_fp = b[17] & 1;
    r->keep = get32(b + KEEP_AT);
    r->days = get32(b + 24);
    r->size = get64(b + 28);
    r->fp.ino = get64(b + 36);
    r->fp.mtime_ns = (int64_t)get64(b + 44);
    r->fp.ctime_ns = (int64_t)get64(b + 52);
    r->fp.size = r->size;
    /* One spelling per record: flags and spare bytes this memtool does not
     * write are refused, not ignored. */
    if (r->id <= 0 ||
        (r->op != MT_VERSION_CREATED && r->op != MT_VERSION_MODIFIED &&
         r->op != MT_VERSION_DELETED) ||
        (b[17] & ~3u) || b[18] || b[19] || get32(b + 60))
        return 0;
    if (!get_str(&id, &p, end, 0) || strlen(id) >= sizeof(r->memory_id) || !*id ||
        !get_str(&sha, &p, end, 0) || strlen(sha) >= sizeof(r->sha256) ||
        !get_str(&r->path, &p, end, 0) || !get_str(&r->previous, &p, end, 1) ||
        !get_str(&r->actor, &p, end, 0))
        return 0;
    memcpy(r->memory_id, id, strlen(id) + 1);
    memcpy(r->sha256, sha, strlen(sha) + 1);
    /* A version with content names it; a deletion names none. */
    if ((r->op == MT_VERSION_DELETED) != (r->sha256[0] == '\0'))
        return 0;
    if (b[17] & 2) {
        uint64_t len;
        if (end - p < 8)
            return 0;
        len = get64(p);
        if (len != (uint64_t)(end - p - 8))
            return 0;
        r->data = (const char *)p + 8;
        r->len = (size_t)len;
        p += 8 + len;
    }
    return p == end;
}

/* One record at buf (n bytes there): its size, or 0 when it is cut short,
 * damaged or does not parse. Writes into buf (decode's strings). */
static size_t one(mt_hist_rec *r, unsigned char *buf, size_t n)
{
    unsigned char hash[HASH];
    uint32_t body;

    if (n < HEAD || memcmp(buf, magic, sizeof(magic)) != 0)
        return 0;
    body = get32(buf + 4);
    if (body > BODY_MAX || body > n - HEAD)
        return 0;
    rec_hash(hash, buf + 4, buf + HEAD, body);
    if (sodium_memcmp(hash, buf + 8, HASH) != 0 || !decode(r, buf + HEAD, body))
        return 0;
    return HEAD + (size_t)body;
}

/* The whole records at the start of buf (len bytes, written into: see
 * decode), each to cb; *used is where the records cb took end (one it
 * stopped at is not taken). */
static int each_in(unsigned char *buf, size_t len, size_t *used, mt_hist_rec_cb cb, void *payload)
{
    size_t off = 0, n;
    int rc = 0;

    while (off < len) {
        mt_hist_rec r;
        if (!(n = one(&r, buf + off, len - off)) || (rc = cb(payload, &r)) != 0)
            break;
        off += n;
    }
    *used = off;
    return rc;
}

int mt_hist_rec_each(const char *buf, size_t len, mt_hist_rec_cb cb, void *payload)
{
    unsigned char *copy;
    size_t used;
    int rc;

    if (!len)
        return 0;
    /* Decoding writes in place; the caller's buffer stays as it was. */
    if (!(copy = malloc(len)))
        return mt_error_set(MT_ENOMEM, "out of memory reading the history's log");
    memcpy(copy, buf, len);
    rc = each_in(copy, len, &used, cb, payload);
    free(copy);
    if (rc == 0 && used != len)
        rc = mt_error_set(MT_EIO, "history's log: a record of this change does not read back");
    return rc;
}

static int read_at(int fd, unsigned char *buf, size_t n, uint64_t off)
{
    size_t got = 0;

    while (got < n) {
        ssize_t k = pread(fd, buf + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return mt_error_set(MT_EIO, "cannot read the history's log: %s", strerror(errno));
        if (k == 0)
            return 0;
        got += (size_t)k;
    }
    return 1;
}

int mt_hist_log_each(int fd, uint64_t *end, mt_hist_rec_cb cb, void *payload)
{
    return mt_hist_log_each_sized(fd, WHOLE_MAX, end, cb, payload);
}

int mt_hist_log_each_sized(int fd, size_t whole_max, uint64_t *end, mt_hist_rec_cb cb,
                           void *payload)
{
    struct stat sb;
    unsigned char head[HEAD], *buf = NULL;
    uint64_t off = 0, size;
    int rc = 0;

    *end = 0;
    if (fstat(fd, &sb) < 0)
        return mt_error_set(MT_EIO, "cannot read the history's log: %s", strerror(errno));
    size = (uint64_t)sb.st_size;
    /* The usual log (a batch of small records) in one read; never more
     * than WHOLE_MAX, whatever the caller asks. */
    if (size <= whole_max && size <= WHOLE_MAX) {
        size_t used = 0;
        if (!(buf = malloc(size ? (size_t)size : 1)))
            return mt_error_set(MT_ENOMEM, "out of memory reading the history's log");
        if ((rc = read_at(fd, buf, (size_t)size, 0)) > 0)
            rc = each_in(buf, (size_t)size, &used, cb, payload);
        free(buf);
        *end = used;
        return rc < 0 ? rc : 0;
    }
    while (size - off >= HEAD) {
        mt_hist_rec r;
        uint32_t body;
        size_t used;

        if ((rc = read_at(fd, head, HEAD, off)) <= 0)
            break;
        body = get32(head + 4);
        /* Read no more than the file holds: memory stays bounded by it. */
        if (memcmp(head, magic, sizeof(magic)) != 0 || body > BODY_MAX || body > size - off - HEAD)
            break;
        if (!(buf = malloc(HEAD + (size_t)body))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory reading the history's log");
            break;
        }
        memcpy(buf, head, HEAD);
        if ((rc = read_at(fd, buf + HEAD, body, off + HEAD)) <= 0 ||
            !(used = one(&r, buf, HEAD + (size_t)body)))
            break;
        if ((rc = cb(payload, &r)) != 0)
            break;
        off += used;
        free(buf);
        buf = NULL;
    }
    free(buf);
    *end = off;
    return rc < 0 ? rc : 0;
}
