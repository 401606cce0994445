#include "sqlite_wal.h"

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
