/*
 * mt_bench_floor_serve --root DIR [serve]: the floor of `memtool serve` for
 * the view mix. Lines in, one line out each, over the same pipes and the
 * same client as memtool; per line it finds the "path" value, opens, stats
 * and reads the file under DIR, and writes the bytes back framed like a
 * tool_result (newlines blanked so the answer stays one line, no escaping,
 * no line numbers). Answers are written as memtool serve writes them:
 * together when their lines were read together, always before the next read.
 *
 * With --look it makes the system calls memtool's guarantees require of a
 * view and nothing else: fstatat first (a FIFO, socket or device is never
 * opened; a file with a second hard link is never read through), a confined
 * openat2 (RESOLVE_BENEATH and the rest: the kernel keeps the view inside the
 * store), and fstat to check that the file opened is the one looked at. The
 * two floors side by side measure what the guarantees cost by themselves, so
 * a regression of memtool's own code is told from the price of a promise.
 * With --confined it opens as --look does but without the look before (what
 * memtool did before it looked): beside --look, the price of the look alone.
 *
 * It accepts and ignores memtool's global options, so mt_bench_serve can
 * start it in memtool's place.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHUNK (1 << 16)

/* Answers not written yet. */
static char *out;
static size_t out_len, out_cap;

static int flush(void)
{
    size_t done = 0;

    while (done < out_len) {
        ssize_t w = write(1, out + done, out_len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        done += (size_t)w;
    }
    out_len = 0;
    return 0;
}

static int put(const char *data, size_t len)
{
    if (out_len + len > out_cap) {
        size_t cap = out_cap * 2 > out_len + len ? out_cap * 2 : out_len + len;
        char *grown = realloc(out, cap);
        if (!grown)
            return -1;
        out = grown;
        out_cap = cap;
    }
    memcpy(out + out_len, data, len);
    out_len += len;
    return 0;
}

static int look, confined;

/* The guarantees' open: looked at, confined, checked (see the top); with
 * --confined, not looked at. */
static int open_looked(int root_fd, const char *rel, struct stat *sb)
{
    struct open_how how = {.flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOATIME | O_CLOEXEC,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
                                      RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV};
    struct stat seen;
    int fd;

    if (confined) {
        fd = (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
        if (fd >= 0 && (fstat(fd, sb) < 0 || !S_ISREG(sb->st_mode))) {
            close(fd);
            return -1;
        }
        return fd;
    }
    if (fstatat(root_fd, rel, &seen, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(seen.st_mode) ||
        seen.st_nlink != 1)
        return -1;
    fd = (int)syscall(SYS_openat2, root_fd, rel, &how, sizeof(how));
    if (fd < 0)
        return -1;
    if (fstat(fd, sb) < 0 || sb->st_dev != seen.st_dev || sb->st_ino != seen.st_ino) {
        close(fd);
        return -1;
    }
    return fd;
}

static int answer(int root_fd, char *line, size_t len, char **buf, size_t *cap)
{
    static const char key[] = "\"path\":\"/memories/";
    static const char head[] = "{\"type\":\"tool_result\",\"content\":\"";
    static const char tail[] = "\",\"is_error\":false}\n";
    char *p = memmem(line, len, key, sizeof(key) - 1), *end;
    struct stat sb;
    ssize_t n;
    size_t i;
    int fd;

    if (!p)
        return -1;
    p += sizeof(key) - 1;
    end = memchr(p, '"', len - (size_t)(p - line));
    if (!end)
        return -1;
    *end = '\0';
    if (look || confined) {
        if ((fd = open_looked(root_fd, p, &sb)) < 0)
            return -1;
    } else if ((fd = openat(root_fd, p, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &sb) < 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if ((size_t)sb.st_size + 1 > *cap) {
        free(*buf);
        *cap = (size_t)sb.st_size + 1;
        if (!(*buf = malloc(*cap)))
            return -1;
    }
    n = read(fd, *buf, (size_t)sb.st_size);
    close(fd);
    if (n < 0)
        return -1;
    for (i = 0; i < (size_t)n; i++) {
        if ((*buf)[i] == '\n')
            (*buf)[i] = ' ';
    }
    if (put(head, sizeof(head) - 1) < 0 || put(*buf, (size_t)n) < 0 ||
        put(tail, sizeof(tail) - 1) < 0)
        return -1;
    return out_len >= CHUNK ? flush() : 0;
}

int main(int argc, char **argv)
{
    const char *root = NULL;
    char *in = malloc(CHUNK * 2), *file = NULL;
    size_t start = 0, end = 0, cap = 0;
    int i, root_fd;

    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--root") == 0 && i + 1 < argc)
            root = argv[i + 1];
        else if (strcmp(argv[i], "--look") == 0)
            look = 1;
        else if (strcmp(argv[i], "--confined") == 0)
            confined = 1;
    }
    if (!root || !in)
        return 2;
    root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0)
        return 1;
    for (;;) {
        char *nl;
        ssize_t got;

        while ((nl = memchr(in + start, '\n', end - start)) != NULL) {
            size_t len = (size_t)(nl - (in + start));
            if (len > 0 && answer(root_fd, in + start, len, &file, &cap) < 0) {
                /* Framing must hold even for a line it cannot serve. */
                static const char err[] = "{\"type\":\"tool_result\",\"is_error\":true}\n";
                if (put(err, sizeof(err) - 1) < 0)
                    return 1;
            }
            start = (size_t)(nl - in) + 1;
        }
        memmove(in, in + start, end - start);
        end -= start;
        start = 0;
        if (end == CHUNK * 2)
            return 1; /* no line is that long in the view mix */
        if (flush() < 0)
            return 1;
        got = read(0, in + end, CHUNK * 2 - end);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        end += (size_t)got;
    }
    if (flush() < 0)
        return 1;
    free(in);
    free(file);
    free(out);
    return 0;
}
