/*
 * The one loop both servers share: read newline-terminated lines of any
 * length from a descriptor, hand each to the front end, and write its answer
 * as one line before reading on. Answers are written with write(2) as they
 * are made, so a client waiting on a reply never waits on a buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <memtool/store.h>

#include "lib/text.h"
#include "server/server.h"

#define READ_CHUNK ((size_t)64 << 10)

static int write_line(int fd, const char *text, size_t len)
{
    struct iovec iov[2];
    int n = 2, first = 0;

    iov[0].iov_base = (void *)text;
    iov[0].iov_len = len;
    iov[1].iov_base = (void *)"\n";
    iov[1].iov_len = 1;
    /* One writev for the line and its newline, so a line is never split
     * by a concurrent writer; partial writes are finished in a loop. */
    while (first < n) {
        ssize_t w = writev(fd, iov + first, n - first);
        size_t left;

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return mt_error_set(MT_EIO, "cannot write the answer: %s", strerror(errno));
        }
        left = (size_t)w;
        while (first < n && left >= iov[first].iov_len) {
            left -= iov[first].iov_len;
            first++;
        }
        if (first < n) {
            iov[first].iov_base = (char *)iov[first].iov_base + left;
            iov[first].iov_len -= left;
        }
    }
    return MT_OK;
}

/* Answer one complete line; an oversized one gets the oversize answer. */
static int answer(int out_fd, const mt_server_handler *h, const char *line, size_t len,
                  size_t max_line)
{
    char *text = NULL;
    size_t text_len = 0;
    int rc;

    if (len > max_line)
        rc = h->oversize(&text, &text_len, max_line);
    else
        rc = h->handle(&text, &text_len, h->ctx, line, len);
    if (rc < 0) {
        /* Out of memory for this line: the peer still gets one answer. */
        free(text);
        return write_line(out_fd, h->fallback, strlen(h->fallback));
    }
    if (!text)
        return MT_OK;
    rc = write_line(out_fd, text, text_len);
    free(text);
    return rc;
}

int mt_server_run(int in_fd, int out_fd, const mt_server_handler *h, size_t max_line)
{
    char *buf = NULL;
    size_t cap = 0, start = 0, scan = 0, end = 0;
    int discarding = 0; /* inside an oversized line that was already answered */
    int rc = MT_OK;

    if (max_line == 0)
        max_line = MT_SERVER_MAX_LINE;

    for (;;) {
        char *nl = scan < end ? memchr(buf + scan, '\n', end - scan) : NULL;
        ssize_t got;

        if (nl) {
            size_t len = (size_t)(nl - (buf + start));

            if (!discarding)
                rc = answer(out_fd, h, buf + start, len, max_line);
            discarding = 0;
            start = scan = (size_t)(nl - buf) + 1;
            if (rc < 0)
                goto done;
            continue;
        }

        /* No newline in what is buffered: answer a line that is already
         * too long now, and drop its bytes as they come. */
        if (!discarding && end - start > max_line) {
            rc = answer(out_fd, h, NULL, end - start, max_line);
            if (rc < 0)
                goto done;
            discarding = 1;
        }
        if (discarding)
            start = end;
        if (start > 0) {
            memmove(buf, buf + start, end - start);
            end -= start;
            start = 0;
        }
        scan = end;
        if (cap - end < READ_CHUNK) {
            /* Doubling keeps a long line from being copied once per chunk;
             * the bound holds because an oversized line is dropped as read. */
            size_t want = cap * 2 > end + READ_CHUNK ? cap * 2 : end + READ_CHUNK;
            char *grown;

            if (want > max_line + 2 * READ_CHUNK)
                want = max_line + 2 * READ_CHUNK;
            grown = realloc(buf, want);

            if (!grown) {
                rc = mt_error_set(MT_ENOMEM, "out of memory reading a %zu-byte line", end);
                goto done;
            }
            buf = grown;
            cap = want;
        }

        got = read(in_fd, buf + end, cap - end);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            rc = mt_error_set(MT_EIO, "cannot read the input: %s", strerror(errno));
            goto done;
        }
        if (got == 0) {
            /* End of input: a last line without a newline still counts. */
            if (!discarding && end > 0)
                rc = answer(out_fd, h, buf, end, max_line);
            goto done;
        }
        end += (size_t)got;
    }
done:
    free(buf);
    return rc;
}

int mt_server_parse_size(size_t *out, const char *s)
{
    uint64_t v;

    /* The bound leaves room for the read buffer's slack above the limit. */
    if (mt_text_parse_size(&v, s) < 0 || v == 0 || v > SIZE_MAX / 4)
        return mt_error_set(MT_EINVAL, "not a size: '%s'", s ? s : "");
    *out = (size_t)v;
    return MT_OK;
}

int mt_server_is_blank(const char *line, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if (line[i] != ' ' && line[i] != '\t' && line[i] != '\r')
            return 0;
    }
    return 1;
}
