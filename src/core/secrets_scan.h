/*
 * A scan of what a store already holds for secrets (memtool secrets scan):
 * for stores written before the guard or with it off. Every memory's current
 * content, and with history every older version's, is read (decrypted on an
 * encrypted store) and scanned with the handle's allow-list; findings name a
 * path or a version, a line and a kind, never the secret. The fix redacts the
 * current content as --secrets redact would on a write (a new version, by
 * the handle's actor) and then erases from history every version holding a
 * finding, the one that was current included.
 */
#ifndef MT_LIB_SECRETS_SCAN_H
#define MT_LIB_SECRETS_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include <memtool.h>

typedef struct {
    char *path;       /* the request path ("/memories/a.md") */
    int64_t version;  /* 0: the memory's current content; else that version */
    const char *kind; /* static */
    size_t line;      /* 1-based */
} mt_secrets_finding;

typedef struct {
    mt_secrets_finding *findings;
    size_t count;
    /* After a fix: the memories rewritten (path and new version, 0 without
     * history) and the versions erased. */
    struct {
        char *path;
        int64_t version;
        size_t secrets;
    } * fixed;
    size_t fixed_count;
    int64_t *redacted;
    size_t redacted_count;
} mt_secrets_report;

/* Scan at or beneath path (a request path; NULL: /memories); history: the
 * older versions too (MT_ENOSYS when the store keeps none); fix: redact as
 * above. Returns 0 with out filled (free with mt_secrets_report_dispose),
 * or an error; out then holds what was found and fixed before it. */
int mt_secrets_scan_store(mt_secrets_report *out, mt_memory *m, const char *path, int history,
                          int fix);
void mt_secrets_report_dispose(mt_secrets_report *r);

#endif
