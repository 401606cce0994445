#include "machinery/sqlite_wal.h"

#include <memtool/store.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int mt_sqlite_setup_wal(sqlite3 *db, const char *pragmas, char **msg, unsigned wait_ms)
{
    unsigned waited;
    int rc;

    for (waited = 0;; waited += 10) {
        rc = sqlite3_exec(db, pragmas, NULL, NULL, msg);
        if ((rc != SQLITE_BUSY && rc != SQLITE_LOCKED) || waited >= wait_ms)
            return rc;
        sqlite3_free(*msg);
        *msg = NULL;
        usleep(10000);
    }
}

/* One file made 0600 if this user owns it and it is looser. Never opened:
 * closing any descriptor of a database file drops every POSIX lock this
 * process holds on it (SQLite's own connections' too), which let another
 * process write under a connection that believed it held the file. */
static int tighten(int dirfd, const char *name)
{
    struct stat sb;

    if (fstatat(dirfd, name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
        return -errno;
    /* NOFOLLOW too: a symlink swapped in after the fstatat must not get
     * its target (maybe outside the store) chmodded. On a link it fails
     * with EOPNOTSUPP and changes nothing. */
    if (S_ISREG(sb.st_mode) && sb.st_uid == geteuid() && (sb.st_mode & 07777) != 0600)
        (void)fchmodat(dirfd, name, 0600, AT_SYMLINK_NOFOLLOW);
    return 0;
}

int mt_sqlite_make_private(int dirfd, const char *name, int create)
{
    static const char *const suffix[] = {"-wal", "-shm", "-journal"};
    char file[4096];
    size_t k;
    int rc;

    /* Made here, 0600, only when missing: a file this call created is open in
     * no connection of this process, so closing it drops no lock. */
    if (create) {
        int fd = openat(dirfd, name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd >= 0)
            close(fd);
        else if (errno != EEXIST)
            return -errno;
    }
    if ((rc = tighten(dirfd, name)) < 0)
        return rc;
    for (k = 0; k < sizeof(suffix) / sizeof(suffix[0]); k++)
        if (snprintf(file, sizeof(file), "%s%s", name, suffix[k]) < (int)sizeof(file))
            (void)tighten(dirfd, file);
    return 0;
}

/* Without its -shm file (copied without it) a WAL database opens read-only
 * only as immutable, which reads no log: taken only when the log is missing
 * or empty, so nothing in it is passed over. */
static int open_immutable(sqlite3 **db, const char *path)
{
    static const char hex[] = "0123456789ABCDEF";
    char wal[4096], uri[3 * 4096 + 32], *p = uri;
    struct stat sb;
    size_t i;

    if (snprintf(wal, sizeof(wal), "%s-wal", path) >= (int)sizeof(wal) ||
        (stat(wal, &sb) == 0 && sb.st_size > 0) || strlen(path) >= 4096)
        return -1;
    memcpy(p, "file:", 5);
    p += 5;
    for (i = 0; path[i]; i++) {
        /* What a URI gives its own meaning to is written as %XX. */
        if (path[i] == '%' || path[i] == '?' || path[i] == '#') {
            *p++ = '%';
            *p++ = hex[(unsigned char)path[i] >> 4];
            *p++ = hex[(unsigned char)path[i] & 15];
        } else {
            *p++ = path[i];
        }
    }
    memcpy(p, "?immutable=1", sizeof("?immutable=1"));
    sqlite3_close(*db);
    *db = NULL;
    return sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                           NULL) == SQLITE_OK
               ? 0
               : -1;
}

int mt_sqlite_open_copy(sqlite3 **out, const char *path)
{
    sqlite3 *ro = NULL, *mem = NULL;
    unsigned char *data = NULL;
    sqlite3_int64 size = 0;
    int rc = 0;

    *out = NULL;
    if (sqlite3_open_v2(":memory:", &mem, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        rc = mt_error_set(MT_ENOMEM, "out of memory opening a database");
        goto done;
    }
    if (!path)
        goto done;
    /* SQLite reads a WAL database on a read-only mount when its -wal and
     * -shm files are there (it keeps the index in its own memory); it opens
     * lazily, so a failure shows at the first read. */
    if ((sqlite3_open_v2(path, &ro, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
             SQLITE_OK ||
         !(data = sqlite3_serialize(ro, "main", &size, 0))) &&
        (open_immutable(&ro, path) < 0 || !(data = sqlite3_serialize(ro, "main", &size, 0)))) {
        rc = mt_error_set(MT_EIO, "cannot read the database %s of a read-only store: %s", path,
                          ro ? sqlite3_errmsg(ro) : "out of memory");
        goto done;
    }
    /* A WAL database's header asks for its log, which a database in
     * memory has none of: the copy is made a rollback-journal one. */
    if (size >= 20)
        data[18] = data[19] = 1;
    if (sqlite3_deserialize(mem, "main", data, size, size,
                            SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE) !=
        SQLITE_OK) {
        data = NULL; /* freed by SQLite, even on failure */
        rc = mt_error_set(MT_EIO, "cannot copy the database %s: %s", path, sqlite3_errmsg(mem));
        goto done;
    }
    data = NULL;
done:
    sqlite3_free(data);
    sqlite3_close(ro);
    if (rc < 0)
        sqlite3_close(mem);
    else
        *out = mem;
    return rc;
}
