/*
 * What every store and shim shares of the store contract
 * (include/memtool/store.h) beyond its public helpers: how a store is
 * opened, and the errors a store gives in the same words whichever it is.
 */
#ifndef MT_STORE_CONTRACT_H
#define MT_STORE_CONTRACT_H

#include <memtool/store.h>

/* How a store is opened: */
#define MT_STORE_OPEN_EXISTING                                                                     \
    1u /* only one that exists (and its tenant): MT_ENOTFOUND                                      \
          naming what is missing, and nothing is made */

/* code (MT_ENOTFOUND, MT_EEXISTS, MT_ENOTDIR, MT_EISDIR, else invalid) as
 * every store words it: "WHAT /memories/REL: why". */
int mt_store_path_error(int code, const char *what, const char *rel);
/* The error of a change refused because the store cannot be written. */
int mt_store_read_only_error(void);
/* The error of a change without the key refused because the store was
 * made encrypted after the open (store.h, mt_store_op.plain). */
int mt_store_sealed_error(void);

/* What requests name the store's root, and a store path as "%s%s" for
 * messages ("/memories/notes/a.md", "/memories"); a version is named as
 * such when rel begins with '(' ("(version 12 of ...)"). */
#define MT_STORE_SHOWN_ROOT "/memories"
#define MT_STORE_SHOWN(rel)                                                                        \
    (*(rel) && *(rel) != '(' ? MT_STORE_SHOWN_ROOT "/" : *(rel) ? "" : MT_STORE_SHOWN_ROOT), (rel)

/* st's control (store.h), or MT_ENOSYS from a store without one (older
 * than version 7, or one that answers no request), without an error set. */
int mt_store_control(mt_store *st, int request, void *arg);

#endif
