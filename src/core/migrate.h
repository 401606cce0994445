/* Migration's parts (migrate.c runs it; migrate_history.c brings histories). */
#ifndef MT_LIB_MIGRATE_H
#define MT_LIB_MIGRATE_H

#include "core/memory.h"

#define MT_MIGRATE_ROOT "/memories/"

/* A memory of the source's history, as its newest version shows it. */
typedef struct {
    char id[24];
    mt_version_op newest_op;
    char *newest_path; /* store path; NULL when redacted */
    uint64_t versions;
    int matched; /* a file of the walk is this memory */
    int handled; /* told this pass (copied, same, conflict, failed) */
} mt_mig_memory;

typedef struct {
    mt_mig_memory *v;
    size_t n, cap;
    size_t *slot; /* ids hashed: an index + 1, 0 for none */
    size_t nslot;
    mt_mig_memory **live; /* the live ones, by newest_path */
    size_t nlive;
    int64_t min_id, max_id; /* of the versions read (0: none) */
} mt_mig_memories;

/* Bring the source's history up to date and read every memory in it. */
int mt_mig_scan(mt_mig_memories *out, mt_memory *from);
mt_mig_memory *mt_mig_by_path(const mt_mig_memories *t, const char *path);
mt_mig_memory *mt_mig_by_id(const mt_mig_memories *t, const char *id);
void mt_mig_memories_free(mt_mig_memories *t);

typedef struct {
    mt_memory *from, *to;
    mt_migrate_cb cb;
    void *payload;
    mt_migrate_stats *stats;
    mt_buf path;    /* the request path of the memory at hand */
    mt_buf message; /* why, for conflicts and failures */
    int last_pass;  /* a file gone now fails, rather than being looked for again */
    /* Version ids at the destination: a source id plus id_shift, and the
     * versions the source had not recorded from id_next up (set once, on
     * the first pass); ids, for the event, what changed. */
    int ids_planned;
    int64_t id_shift, id_next;
    int64_t *ids;
    size_t nids, ids_cap;
} mt_migration;

/* Where the source's version ids go at the destination (g->id_shift,
 * g->id_next): kept when the destination holds no version beside the
 * source's memories at or above the source's smallest id, else all moved
 * past its newest. Memories of the source already there (a stopped run's)
 * do not count, so a run again shifts as the first did. */
int mt_mig_plan_ids(mt_migration *g, const mt_mig_memories *mems);

/* What happened to the memory at hand (g->path): counted, and told. A
 * deleted memory counts apart from the files; `versions` are its versions,
 * handled whatever the outcome. */
typedef struct {
    uint64_t size;
    int deleted;
    uint64_t versions;
} mt_mig_subject;

int mt_mig_emit(mt_migration *g, mt_migrate_event_kind kind, const mt_mig_subject *s,
                const char *why);
/* A failure: why is prefix followed by detail. */
int mt_mig_fail(mt_migration *g, const mt_mig_subject *s, const char *prefix, const char *detail);
/* What the destination holds at store path rel: 0 nothing, or 1 when the
 * event that settles it (same, conflict) was emitted. */
int mt_mig_settled(mt_migration *g, const mt_mig_subject *s, const char *rel, const char *sha);
/* A copy's outcome when the file was gone by the time it was read (moved
 * or deleted in the source since the walk): nothing was told, and the run
 * walks the source again to find the memory where it is now. */
#define MT_MIG_VANISHED 3

/* The file at hand was gone: MT_MIG_VANISHED, or on the last pass a failure told. */
int mt_mig_vanished(mt_migration *g, const mt_mig_subject *s);
/* The file at rel copied as a create (no history); MT_MIG_VANISHED when gone. */
int mt_mig_copy_file(mt_migration *g, const mt_mig_subject *s, const char *rel);
/* The source file's last access and change (both 0 where the store keeps
 * none): a copy's, with history (mt_store_import) or without (`times`). */
void mt_mig_times(int64_t *accessed_ms, int64_t *modified_ms, mt_memory *from, const char *rel);
/* Memory m with its history: at rel (a walked file; MT_MIG_VANISHED when
 * gone), or deleted (rel NULL). */
int mt_mig_copy_memory(mt_migration *g, const mt_mig_subject *s, const char *rel,
                       const mt_mig_memory *m);

#endif
