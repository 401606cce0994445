/* Reading the lines typed at `memtool chat`, with Ctrl-C that never gets lost. */
#include "cli/prompt.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

enum { READ_CHUNK = 4096 };

/* Hand out the first line of p->in (or all of it at end of input). */
static int take_line(mt_prompt *p, char **line, size_t *len)
{
    char *nl = p->in.len ? memchr(p->in.ptr, '\n', p->in.len) : NULL;
    size_t n;

    if (!nl && !(p->eof && p->in.len))
        return 0;
    n = nl ? (size_t)(nl - p->in.ptr) : p->in.len;
    p->in.ptr[n] = '\0'; /* the newline, or the NUL mt_buf keeps past len */
    p->taken = nl ? n + 1 : n;
    *line = p->in.ptr;
    *len = n;
    return 1;
}

int mt_prompt_read(mt_prompt *p, int fd, volatile sig_atomic_t *flag, char **line, size_t *len)
{
    sigset_t intr, old;
    int rc;

    /* Drop the line handed out last time. */
    if (p->taken) {
        memmove(p->in.ptr, p->in.ptr + p->taken, p->in.len - p->taken);
        mt_buf_truncate(&p->in, p->in.len - p->taken);
        p->taken = 0;
    }
    sigemptyset(&intr);
    sigaddset(&intr, SIGINT);
    if (sigprocmask(SIG_BLOCK, &intr, &old) != 0)
        return MT_PROMPT_FAIL;
    for (;;) {
        struct pollfd pfd = {.fd = fd, .events = POLLIN};
        ssize_t n;

        if (take_line(p, line, len)) {
            rc = MT_PROMPT_LINE;
            goto done;
        }
        if (p->eof) {
            rc = MT_PROMPT_EOF;
            goto done;
        }
        if (*flag) {
            /* Ctrl-C drops the line being typed, as the terminal does. */
            mt_buf_truncate(&p->in, 0);
            rc = MT_PROMPT_INTR;
            goto done;
        }
        /* SIGINT can only arrive here, and it ends the wait with EINTR. */
        if (ppoll(&pfd, 1, NULL, &old) < 0) {
            if (errno == EINTR)
                continue;
            rc = MT_PROMPT_FAIL;
            goto done;
        }
        if (mt_buf_grow(&p->in, READ_CHUNK) != 0) {
            errno = ENOMEM;
            rc = MT_PROMPT_FAIL;
            goto done;
        }
        n = read(fd, p->in.ptr + p->in.len, READ_CHUNK);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            rc = MT_PROMPT_FAIL;
            goto done;
        }
        if (n == 0) {
            p->eof = 1;
        } else {
            p->in.len += (size_t)n;
            p->in.ptr[p->in.len] = '\0';
        }
    }
done:
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

void mt_prompt_dispose(mt_prompt *p)
{
    mt_buf_dispose(&p->in);
    p->taken = 0;
}
