/*
 * The history engine's internals, shared by its files (hist_*.c); the
 * engine's interface is history.h.
 *
 * Write-ahead log with synchronous=NORMAL: a commit costs no fsync, so a
 * write with history costs little more than one without; a process that dies
 * loses nothing committed. A power cut may lose the newest versions, never a
 * memory's content (the file holds that, synced as the durability says), and
 * the next look at the file records what it holds as a change by "external".
 *
 * Content that goes (a redaction, versions pruned) must be gone from the disk,
 * not left in a free page or the log: secure_delete overwrites freed pages
 * with zeros, and the transaction that removed content ends with a checkpoint
 * that truncates the log, so no frame holding the old pages stays in it.
 *
 * A plain store's changes do not write the database: their versions are
 * appended to the history's own log (hist_log.h) and loaded in batches, one
 * transaction for many versions (a transaction's begin and commit were
 * about as much as the write of a memory at durability none). Every
 * transaction loads the log first, so versions keep the changes' order and
 * whatever reads or prunes the database sees them all; a redaction, which
 * is one, leaves the log truncated.
 */
#ifndef MT_HIST_INTERNAL_H
#define MT_HIST_INTERNAL_H

#include <sqlite3.h>
#include <stdint.h>
#include <sys/types.h>

#include "machinery/hist_log.h"
#include "machinery/history.h"
#include "util/buf.h"

/* 2: versions may wait in history.log (hist_log.h) before they are here. A
 * memtool that knows only 1 would not load them and would record its own
 * versions before them, so it must refuse the database: it does, as it
 * refuses any schema but its own.
 * 3: a content's count of references is a row of content_refs, no longer a
 * column of its contents row (whose change rewrote all of the content). A
 * memtool that knows only 2 would not keep the counts there, so it refuses
 * the database as it refuses any schema but its own. A database of schema 1
 * or 2 is brought to 3 at its first open by this memtool (upgrade_schema).
 * 4: versions are indexed by time, and meta records how far the prune by
 * days got (mt_hist_prune_days_at). A memtool that knows only 3 would prune
 * without keeping that record, which a later prune trusts, so it refuses
 * the database. A database of schema 1 to 3 is brought to 4 at its first
 * open. */
#define SCHEMA_VERSION 4
#define BUSY_MS        10000
/* Prune a memory's versions only when it is this far over its cap: one
 * prune, and its checkpoint, per so many writes. */
#define PRUNE_SLACK(keep) ((keep) / 10 + 1)
#define MS_PER_DAY        86400000LL
/* The log of versions is loaded into the database at the first change that
 * finds this many records in it, or this many bytes. */
#define LOG_BATCH       256
#define LOG_BATCH_BYTES (1024 * 1024)
#define LOG_NAME        MT_HIST_LOG

enum {
    S_FIND,
    S_CONTENT_PUT,
    S_CONTENT_REF,
    S_REFS_NEW,
    S_CONTENT_UNREF,
    S_REFS_DROP,
    S_CONTENT_DROP,
    S_VERSION_PUT,
    S_MEMORY_PUT,
    S_MEMORY_GONE,
    S_NTH_NEWEST,
    S_PRUNE,
    S_MAX_ID,
    S_BEGIN,
    S_COMMIT,
    S_COUNT
};

/* Statements of the record of ids alone (mt_hist_track_put...), prepared at
 * their first use: most handles never need them, and an open's statements
 * are part of every one-shot command's time. */
enum {
    L_PUT,
    L_DROP,
    L_MOVE,
    L_ELSEWHERE,
    L_LOOKUP,
    L_EXACT,
    L_MARK,
    L_VERSIONS_OF,
    L_VERSIONS,
    L_COUNT
};

/* Statement `which` of h->lazy, prepared from text at its first use (kept
 * for the handle's life: a history read on every request would otherwise
 * spend most of its time compiling SQL), else reset with its bindings
 * cleared; NULL when it cannot be prepared. The caller resets it when done,
 * which ends the read it made. */
sqlite3_stmt *mt_hist_lazy(struct mt_hist *h, int which, const char *text);

struct mt_hist {
    struct mt_hist *next; /* every open history of this process (the registry) */
    unsigned forks;       /* the forks counted when it was opened */
    sqlite3 *db;
    sqlite3_stmt *st[S_COUNT];
    sqlite3_stmt *lazy[L_COUNT]; /* NULL until first used */
    int dirfd;             /* the directory the path names: SQLite opens its log by it later */
    int dropped;           /* this transaction removed content: truncate the log at commit */
    int read_only;         /* a copy in memory of a store that cannot be written */
    int truncate_due;      /* a truncation readers kept from finishing: tried at each commit */
    int64_t last_days_run; /* when versions older than the days limit were last pruned */
    /* The memory at one path as this transaction last found or recorded it:
     * a change looks its path up three times (settling, recording, the
     * prune), and one SQLite query answers all three. */
    char *seen_path;
    int seen_found;
    mt_hist_mem seen;
    void (*on_close)(void *payload); /* see mt_hist_on_close */
    void *on_close_payload;
    /*
     * The log of versions not yet loaded (hist_log.h), for the handle a
     * store's changes use (mt_hist_log_attach). A change in `logged` mode
     * appends its versions to the log at commit, in one write; the
     * database then lags the log, and `over` holds what this handle's
     * appends made of each path they touched since the log was last
     * loaded. That is all the log holds while the store's shared slot
     * names this handle (`owner` == `token`): any other process that
     * appends or loads writes its own token there, and this handle loads
     * the log again before its next append.
     */
    volatile uint64_t *owner; /* the slot, in the store's shared state */
    uint64_t token;           /* this handle's (random, never 0) */
    int logfd;                /* the log, opened at its first use; -1 before */
    dev_t log_dev;            /* and the file it is, */
    ino_t log_ino;            /* to tell it from what the name holds */
    int mode;                 /* H_IDLE, H_LOGGED or H_SQL: what the change in progress is */
    int synced;               /* over and next_id are right (the log is this handle's appends) */
    int log_loaded;           /* this transaction loaded the log: empty it once committed */
    int64_t next_id;          /* the id of the next version appended */
    uint64_t log_end;         /* the log's size after this handle's last append */
    unsigned pending;         /* records appended since the log was last loaded */
    unsigned change_recs;     /* records of the change in progress, in `change` */
    mt_buf change;            /* those records, appended at commit */
    size_t last_rec;          /* where the last of them starts in `change` */
    char last_mem[24];        /* and the memory it is a version of */
    uint32_t days;            /* the change's cap on age, carried by its records */
    struct over *over;        /* paths touched by appends since the last load */
    size_t over_n, over_cap;
};

enum { H_IDLE, H_LOGGED, H_SQL };

struct over {
    uint64_t hash;
    char *path;
    int found;
    int has_fp; /* m.fp was recorded (a load writes it, or NULLs) */
    mt_hist_mem m;
};

typedef struct {
    mt_hist *h;
    int64_t max;     /* the newest version in the database: older records are in it already */
    int batch;       /* a load of the log: see mt_hist_apply_rec */
    int days_due;    /* a load prunes by days (at most once a minute, as changes do) */
    uint32_t days;   /* the days of the records since the last prune by days */
    int64_t days_at; /* when the last of them was made */
} apply_ctx;

/* hist_open.c */
int mt_hist_db_error(mt_hist *h, const char *what);
sqlite3_stmt *mt_hist_stmt(mt_hist *h, int which);
int64_t mt_hist_now_ms(void);
void mt_hist_reset_all(mt_hist *h);

/* hist_commit.c */
struct over *mt_hist_over_find(mt_hist *h, const char *path);
int mt_hist_over_set(mt_hist *h, const char *path, int found, const mt_hist_mem *m, int has_fp);
void mt_hist_over_clear(mt_hist *h);
int mt_hist_apply_rec(mt_hist *h, const mt_hist_rec *r, apply_ctx *c);
int mt_hist_escalate(mt_hist *h);

/* hist_prune.c */
int mt_hist_drop_content(mt_hist *h, const char *sha);
int mt_hist_days_due(mt_hist *h);
int mt_hist_max_id(mt_hist *h, int64_t *out);
int mt_hist_prune_days_at(mt_hist *h, unsigned days, int64_t now);
int mt_hist_prune_days(mt_hist *h, unsigned days);
int mt_hist_prune_memory(mt_hist *h, const char *memory_id, unsigned keep);

/* hist_record.c */
void mt_hist_seen_forget(mt_hist *h);
void mt_hist_seen_set(mt_hist *h, const char *path, int found, const mt_hist_mem *m);

#endif
