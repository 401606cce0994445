/*
 * The one loop both servers share: read newline-terminated lines of any
 * length from a descriptor, hand each to the front end, and write its answer
 * as one line. Answers to lines that were already read together are written
 * together, and all of them before the loop reads again, so a client waiting
 * on a reply never waits on a buffer.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <memtool/store.h>

#include "util/buf.h"
#include "util/lines.h"
#include "server/server.h"

#define READ_CHUNK ((size_t)64 << 10)

/* Answers wait here until the loop is about to wait for input (or there
 * are this many bytes): a client that sends one line and waits gets its
 * answer at once, and a pipelining client gets many per write. */
#define FLUSH_AT ((size_t)64 << 10)

static int flush(int fd, mt_buf *out)
{
    size_t done = 0;

    while (done < out->len) {
        ssize_t w = write(fd, out->ptr + done, out->len - done);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return mt_error_set(MT_EIO, "cannot write the answer: %s", strerror(errno));
        }
        done += (size_t)w;
    }
    mt_buf_truncate(out, 0);
    return MT_OK;
}

/* Queue one line and its newline; write the queue once it is big. */
static int put_line(int fd, mt_buf *out, const char *text, size_t len)
{
    if (mt_buf_grow(out, len + 1) < 0)
        return mt_error_set(MT_ENOMEM, "out of memory for a %zu-byte answer", len);
    memcpy(out->ptr + out->len, text, len);
    out->ptr[out->len + len] = '\n';
    out->len += len + 1;
    return out->len >= FLUSH_AT ? flush(fd, out) : MT_OK;
}

/* Answer one complete line; an oversized one gets the oversize answer. */
static int answer(int out_fd, mt_buf *out, const mt_server_handler *h, const char *line, size_t len,
                  size_t max_line)
{
    char *text = NULL;
    size_t text_len = 0;
    int rc;

    if (len <= max_line && h->append) {
        size_t mark = out->len;

        /* Straight into the queue: no buffer of its own, no copy. */
        rc = h->append(out, h->ctx, line, len);
        if (rc == MT_OK && out->len > mark && mt_buf_putc(out, '\n') < 0)
            rc = MT_ENOMEM;
        if (rc == MT_OK)
            return out->len >= FLUSH_AT ? flush(out_fd, out) : MT_OK;
        mt_buf_truncate(out, mark); /* never half an answer */
    } else if (len > max_line) {
        rc = h->oversize(&text, &text_len, line, line ? len : 0, max_line);
    } else {
        rc = h->handle(&text, &text_len, h->ctx, line, len);
    }
    if (rc < 0) {
        /* Out of memory for this line: the peer still gets one answer. */
        free(text);
        if ((rc = flush(out_fd, out)) < 0)
            return rc;
        return put_line(out_fd, out, h->fallback, strlen(h->fallback)) < 0 ? MT_ENOMEM
                                                                           : flush(out_fd, out);
    }
    if (!text)
        return MT_OK;
    rc = put_line(out_fd, out, text, text_len);
    free(text);
    return rc;
}

/* Between lines: the front end's own work, when due. At the start it runs
 * before anything is read; later only while no input waits, so a request
 * already sent is answered first. */
static void wait_between(int in_fd, const mt_server_handler *h, int start)
{
    for (;; start = 0) {
        struct pollfd p = {in_fd, POLLIN, 0};
        long ms;
        int n;

        if (!start && poll(&p, 1, 0) != 0)
            return;
        if ((ms = h->between(h->between_ctx)) < 0)
            return;
        n = poll(&p, 1, ms > INT32_MAX ? INT32_MAX : (int)ms);
        if (n != 0 && !(n < 0 && errno == EINTR))
            return; /* input (or an error the read will report) */
    }
}

int mt_server_run(int in_fd, int out_fd, const mt_server_handler *h, size_t max_line)
{
    char *buf = NULL;
    size_t cap = 0, start = 0, scan = 0, end = 0;
    int discarding = 0; /* inside an oversized line that was already answered */
    mt_buf out = MT_BUF_INIT;
    int rc = MT_OK, started = 0;

    if (max_line == 0)
        max_line = MT_SERVER_MAX_LINE;

    for (;;) {
        char *nl = scan < end ? memchr(buf + scan, '\n', end - scan) : NULL;
        ssize_t got;

        if (nl) {
            size_t len = (size_t)(nl - (buf + start));

            if (!discarding)
                rc = answer(out_fd, &out, h, buf + start, len, max_line);
            discarding = 0;
            start = scan = (size_t)(nl - buf) + 1;
            if (rc < 0)
                goto done;
            continue;
        }

        /* No newline in what is buffered: answer a line that is already
         * too long now, and drop its bytes as they come. */
        if (!discarding && end - start > max_line) {
            rc = answer(out_fd, &out, h, buf + start, end - start, max_line);
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

        /* Every answer is out before the loop may wait for more input. */
        if ((rc = flush(out_fd, &out)) < 0)
            goto done;
        if (h->between)
            wait_between(in_fd, h, !started);
        started = 1;
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
                rc = answer(out_fd, &out, h, buf, end, max_line);
            goto done;
        }
        end += (size_t)got;
    }
done:
    /* What was answered is written even when a later read failed. */
    if (out.len) {
        int frc = flush(out_fd, &out);
        if (rc == MT_OK)
            rc = frc;
    }
    mt_buf_dispose(&out);
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
