/*
 * The store interface: what the memory commands need from storage.
 *
 * A store sees only normalised, already validated relative paths: "" is the
 * root, "notes/a.md" a file below it; no component is empty, ".", ".." or
 * longer than 255 bytes. It knows nothing of JSON, of result texts or of the
 * limits; it reports what happened as an mt_error_code and leaves the words
 * to the commands. Every function may be called from many threads at once.
 */
#ifndef MEMTOOL_STORE_H
#define MEMTOOL_STORE_H

#include "../memtool.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { MT_NODE_FILE = 1, MT_NODE_DIR = 2 } mt_node_type;

/* One line of a listing. */
typedef struct {
    char *path; /* relative to the store root, normalised */
    mt_node_type type;
    unsigned depth; /* 1 for a child of the listed directory, 2 below */
    uint64_t size;  /* bytes of regular files at or beneath it */
} mt_store_entry;

typedef struct {
    mt_store_entry *entries; /* depth first, names sorted by bytes */
    size_t count;
    uint64_t size; /* bytes of regular files beneath the listed dir */
    int more;      /* entries were left out at max_entries (sizes still count them) */
} mt_store_listing;

/*
 * The edit callback of a read-modify-write: given the current content, set
 * *out and *out_len to the new content (malloc'd; the store frees it) and return
 * 0, or return a negative code to leave the file untouched. The store holds
 * an exclusive lock on the file across the callback and the replacement.
 */
typedef int (*mt_edit_cb)(char **out, size_t *out_len, const char *data, size_t len, void *payload);

#define MT_STORE_VERSION 1

struct mt_store {
    unsigned int version; /* MT_STORE_VERSION */

    /* What is at path: a file (with its size) or a directory. */
    int (*stat)(mt_store *st, mt_node_type *type, uint64_t *size, const char *path);

    /* The whole content of a regular file (malloc'd, NUL-terminated). */
    int (*read)(mt_store *st, char **out, size_t *out_len, const char *path);

    /* Make a new file, and its missing parent directories; never replaces. */
    int (*create)(mt_store *st, const char *path, const char *data, size_t len);

    /* Replace a file's content under an exclusive lock. */
    int (*edit)(mt_store *st, const char *path, mt_edit_cb cb, void *payload);

    /* Remove a file, a symlink (never its target) or a directory tree. */
    int (*remove)(mt_store *st, const char *path);

    /* Move without ever replacing; makes missing parents of `to`. */
    int (*rename)(mt_store *st, const char *from, const char *to);

    /* List a directory `depth` levels deep, hidden names and node_modules left
     * out (but counted in sizes), recording at most max_entries entries (0: all;
     * a view shows only what fits its limit, but its sizes are totals of
     * everything). Free with mt_store_listing_dispose. */
    int (*list)(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
                size_t max_entries);

    /* Bytes and number of regular files in the whole store. */
    int (*usage)(mt_store *st, uint64_t *bytes, uint64_t *files);

    void (*free)(mt_store *st);
};

MT_EXTERN(void) mt_store_listing_dispose(mt_store_listing *listing);

/* The filesystem store: openat2(2)-confined below `root`. */
MT_EXTERN(int) mt_store_fs_open(mt_store **out, const char *root, mt_durability durability);

/* Record an error for mt_error_last(); returns code, for `return mt_error_set(...)`. */
MT_EXTERN(int)
mt_error_set(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif

#endif
