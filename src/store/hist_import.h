/*
 * A memory brought into a history database whole (the file store's import,
 * fs_import.c): its versions as given, its content kept once per SHA-256,
 * and, for a live memory, its row. Each call works in the transaction the
 * caller opened with mt_hist_begin.
 */
#ifndef MT_STORE_HIST_IMPORT_H
#define MT_STORE_HIST_IMPORT_H

#include "history.h"

/* Whether any version of memory_id is kept: 1, 0, or an error. */
int mt_hist_import_present(mt_hist *h, const char *memory_id);

/* One more reference to the content of sha: 1 when it is kept (so data
 * need not be fetched), 0 when it is not. */
int mt_hist_import_ref(mt_hist *h, const char *sha);

/* Keep data as the content of sha (one reference; more when kept already). */
int mt_hist_import_put(mt_hist *h, const char *sha, const char *data, size_t len);

/* A version of memory_id as v says (its content, when it has any, kept
 * already under sha); *out_id its id here. */
int mt_hist_import_version(mt_hist *h, int64_t *out_id, const char *memory_id, const mt_version *v,
                           const char *sha, uint64_t size);

/* The live memory at path: its id, content and how its file looks. */
int mt_hist_import_live(mt_hist *h, const char *path, const char *memory_id, const char *sha,
                        uint64_t size, const mt_hist_fp *fp);

#endif
