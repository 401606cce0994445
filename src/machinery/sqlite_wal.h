/* What every SQLite database memtool opens (the SQLite store, the file
 * store's history) needs at its first open. */
#ifndef MT_STORE_SQLITE_WAL_H
#define MT_STORE_SQLITE_WAL_H

#include <sqlite3.h>

/*
 * Run pragmas that switch a database to WAL. Two connections opening a new
 * database at once (processes started together, a search and the first
 * change) may both try: the loser's switch fails with SQLITE_BUSY at once,
 * without the busy handler, so it is tried again for up to wait_ms.
 * Returns SQLite's result code; *msg as sqlite3_exec gives it.
 */
int mt_sqlite_setup_wal(sqlite3 *db, const char *pragmas, char **msg, unsigned wait_ms);

/*
 * Make the database `name` (in dirfd, or AT_FDCWD for a path) private before
 * SQLite opens it: created 0600 when missing (unless `create` is 0), and it
 * and its -wal, -shm and -journal files, where this user owns them, made
 * 0600 if they were looser (an older memtool let them follow the umask).
 * SQLite gives the files it makes the database's mode. Files that are not
 * regular files are left to the caller's own checks. Returns 0, or -errno
 * of the database's open (ENOENT when it is missing and not created).
 */
int mt_sqlite_make_private(int dirfd, const char *name, int create);

/*
 * The database at path, opened read-only and copied whole into a database
 * in memory (path NULL: an empty one). A store that cannot be written (a
 * read-only mount) is read through the copy: what a read writes (a log
 * loaded, a search index brought up to date, a record of access) goes there
 * and is dropped at close; nothing is written to the disk. SQLite reads a
 * WAL database read-only when its -wal and -shm files are there.
 */
int mt_sqlite_open_copy(sqlite3 **out, const char *path);

#endif
