/*
 * A memory brought into a history database whole (the file store's import,
 * fs_import.c): its versions as given (their content kept with
 * mt_hist_content_ref and mt_hist_content_keep, and a live memory's row with
 * mt_hist_memory_set, history.h). Each call works in the transaction the
 * caller opened with mt_hist_begin.
 */
#ifndef MT_STORE_HIST_IMPORT_H
#define MT_STORE_HIST_IMPORT_H

#include "machinery/history.h"

/* Whether any version of memory_id is kept: 1, 0, or an error. */
int mt_hist_import_present(mt_hist *h, const char *memory_id);

/* A version of memory_id as v says (its content, when it has any, kept
 * already under sha); *out_id its id here. */
int mt_hist_import_version(mt_hist *h, int64_t *out_id, const char *memory_id, const mt_version *v,
                           const char *sha, uint64_t size);

#endif
