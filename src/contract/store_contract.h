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

/* The error of a change refused because the store cannot be written. */
int mt_store_read_only_error(void);
/* The error of a change without the key refused because the store was
 * made encrypted after the open (store.h, mt_store_op.plain). */
int mt_store_sealed_error(void);

#endif
