/* The API keys of `memtool server`: a file of their SHA-256 digests, one
 * line a key, each opening one tenant. Only digests are kept, so a copy of
 * the file opens nothing; the server rereads it when it changes, so a
 * revoked key stops working without a restart. */
#ifndef MT_HTTPD_KEYS_H
#define MT_HTTPD_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* A keys file, loaded; reloaded when it changes. */
typedef struct mt_keys mt_keys;

typedef struct {
    char id[32];        /* "apikey_" + 16 lowercase hex (random) */
    char tenant[256];   /* the memtool tenant the key opens */
    int read_only;      /* 1: the key may only read */
    int admin;          /* 1: may read /metrics */
    int64_t created_ms; /* ms since epoch */
} mt_key_info;

/* A key as shown: "mtk_" + 43 characters of base64url (32 random bytes). */
#define MT_KEYS_KEY_LEN 47

/* Load the file at path. A missing file is no keys (not an error); a file
 * others may read or write is refused (MT_EINVAL naming chmod 600), and so
 * is one that does not parse (the line named). */
int mt_keys_open(mt_keys **out, const char *path);
void mt_keys_free(mt_keys *k);

/* Look a presented key up; safe from many threads at once. 0 with *out
 * filled, or MT_ENOTFOUND when no key matches (unknown or revoked). The file
 * is stat()ed at most every 200 ms and reloaded when it changed (a revoke
 * takes effect within a second); a file that no longer parses keeps the keys
 * loaded before, a file removed means no keys. */
int mt_keys_check(mt_key_info *out, mt_keys *k, const char *key, size_t len);

/* The key with that id as the file says now (reloaded as mt_keys_check
 * does): 0 with *out filled, or MT_ENOTFOUND (revoked, or never made). For
 * a holder that checked the key itself once and keeps only its id. */
int mt_keys_find(mt_key_info *out, mt_keys *k, const char *id);

/* Make a key for tenant and add its line to the file (created, with its
 * directory, when missing), under PATH.lock and by an atomic rewrite.
 * *key_out (malloc'd) is the key, never stored; info_out may be NULL. */
int mt_keys_add(char **key_out, mt_key_info *info_out, const char *path, const char *tenant,
                int read_only, int admin);

/* The keys of the file, in its order (*out freed with free(); NULL when
 * there are none). A missing file is no keys. */
int mt_keys_list(mt_key_info **out, size_t *n, const char *path);

/* Remove the key with that id (MT_ENOTFOUND if none has it). */
int mt_keys_revoke(const char *path, const char *id);

/* Whether tenant may be named by a key: 0, or MT_EINVAL saying the rule. */
int mt_keys_tenant_check(const char *tenant);

/* $XDG_CONFIG_HOME/memtool/keys, else $HOME/.config/memtool/keys (malloc'd);
 * NULL with MT_EINVAL set when neither is set. */
char *mt_keys_default_path(void);

#endif
