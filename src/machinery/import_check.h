/*
 * What every store's import (memtool/store.h, mt_store_import) shares: the
 * checks of what it is given, and each version's content fetched from the
 * caller and checked against the SHA-256 and size the version names.
 */
#ifndef MT_STORE_IMPORT_H
#define MT_STORE_IMPORT_H

#include <stddef.h>

#include <memtool/store.h>

/* Whether in names a memory: a well-formed id, at least one version, each
 * with an operation, an actor and (unless redacted) a path; a live memory's
 * newest not redacted. MT_EINVAL says which. */
int mt_import_check(const mt_store_import *in);

/* The start of a store's import: in's outcome fields cleared, in checked
 * (mt_import_check), and op's history on (an import records versions). */
int mt_import_start(const mt_store_op *op, mt_store_import *in);

/* Whether the memory is live once imported (its newest version no deletion). */
int mt_import_live(const mt_store_import *in);

/* Whether version v keeps content (neither a deletion nor redacted). */
int mt_import_has_content(const mt_version *v);

/* Version i's content from in->content, its SHA-256 in sha: checked against
 * the version's content_sha256 and content_size when it names one. */
int mt_import_fetch(char **data, size_t *len, char sha[65], const mt_store_import *in, size_t i);

#endif
