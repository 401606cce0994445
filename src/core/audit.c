/* The audit log (audit.h). */
#include "core/audit.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <memtool/store.h>

#include "util/json.h"
#include "util/utf8.h"

#define FIELD_MAX 4096

int mt_audit_open(int *out_fd, const char *path)
{
    int fd;

    *out_fd = -1;
    if (!path || !*path)
        return mt_error_set(MT_EINVAL, "the audit log needs a file name");
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
    if (fd < 0)
        return mt_error_set(MT_EINVAL, "cannot open the audit log %s: %s%s", path, strerror(errno),
                            errno == ELOOP ? " (it is a symbolic link; name the file itself)" : "");
    *out_fd = fd;
    return 0;
}

/* A string member, cut to FIELD_MAX bytes between two characters (a cut
 * inside one would write a line that is not UTF-8, which JSON readers
 * refuse); a cut one is followed by "<name>_bytes", its whole length. */
static int put_field(mt_buf *b, const char *name, const char *s, size_t len)
{
    size_t keep;

    if (mt_buf_printf(b, ",\"%s\":", name) < 0)
        return -1;
    if (!s)
        return mt_buf_puts(b, "null");
    keep = mt_utf8_cut(s, len, FIELD_MAX);
    if (mt_json_put_string(b, s, keep) < 0)
        return -1;
    return keep < len ? mt_buf_printf(b, ",\"%s_bytes\":%zu", name, len) : 0;
}

int mt_audit_record(int fd, const mt_audit_entry *e)
{
    struct timespec ts;
    struct tm tm;
    mt_buf b = MT_BUF_INIT;
    time_t secs;
    ssize_t n;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &ts);
    secs = ts.tv_sec;
    gmtime_r(&secs, &tm);
    if (mt_buf_printf(&b, "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\"",
                      (tm.tm_year + 1900) % 10000, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                      tm.tm_sec, ts.tv_nsec / 1000000) < 0 ||
        put_field(&b, "actor", e->actor, e->actor ? strlen(e->actor) : 0) < 0 ||
        put_field(&b, "command", e->command, e->command ? strlen(e->command) : 0) < 0 ||
        put_field(&b, "path", e->path, e->path_len) < 0 ||
        (e->new_path && put_field(&b, "new_path", e->new_path, e->new_path_len) < 0) ||
        (e->guard && put_field(&b, "guard", e->guard, strlen(e->guard)) < 0) ||
        mt_buf_printf(&b, ",\"is_error\":%s,\"bytes_read\":%llu,\"bytes_written\":%llu}\n",
                      e->is_error ? "true" : "false", (unsigned long long)e->bytes_read,
                      (unsigned long long)e->bytes_written) < 0) {
        rc = mt_error_set(MT_ENOMEM, "out of memory writing the audit log");
        goto done;
    }
    /* One write: O_APPEND makes it one line at the end, whoever else writes. */
    do
        n = write(fd, b.ptr, b.len);
    while (n < 0 && errno == EINTR);
    if (n < 0 || (size_t)n != b.len)
        rc = mt_error_set(MT_EIO, "cannot write the audit log: %s",
                          n < 0 ? strerror(errno) : "a short write");
done:
    mt_buf_dispose(&b);
    return rc;
}
