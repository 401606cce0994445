/* Store URLs: which store a --store URL names, and how to show it. */
#ifndef MT_STORE_URL_H
#define MT_STORE_URL_H

#include <stddef.h>

#include <memtool/store.h>

#include "contract/store_contract.h"

typedef enum {
    MT_STORE_FILE = 1,   /* file:DIR */
    MT_STORE_SQLITE = 2, /* sqlite:PATH */
    MT_STORE_PG = 3,     /* postgresql://... or postgresql:KEYWORDS */
    MT_STORE_REMOTE = 4  /* https://HOST/v1/memory_stores/memstore_ID (http:// on loopback) */
} mt_store_kind;

typedef struct {
    mt_store_kind kind;
    /* What the store opens: a directory, a database file, or a libpq
     * connection string (the URI whole, or the keyword string), or a memory
     * store's URL. Malloc'd. */
    char *target;
} mt_store_url;

/* Read a store URL; on failure the message names the forms that work. */
int mt_store_url_parse(mt_store_url *out, const char *url);
void mt_store_url_dispose(mt_store_url *url);

/* The URL as it may be printed: a password in it (user:PASSWORD@ or
 * password=...) is replaced by "***". Cut to fit `size` (which is > 0). */
void mt_store_url_display(char *out, size_t size, const char *url);

/* The file store at dir, for a tenant (NULL, "" or "default": dir itself);
 * *read_only (may be NULL) is set when the store cannot be written. */
int mt_store_fs_open_tenant(mt_store **out, int *read_only, const char *dir, const char *tenant,
                            mt_durability durability, unsigned flags);

/* mt_store_open_url with flags, and *read_only (may be NULL) set as above. */
int mt_store_open_url_with(mt_store **out, int *read_only, const char *url, const char *tenant,
                           mt_durability durability, unsigned flags);

#endif
