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

#endif
