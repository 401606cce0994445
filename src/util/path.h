/* The path rules of SPEC section 1, as pure string functions. */
#ifndef MT_PATH_H
#define MT_PATH_H

#include <stddef.h>

typedef enum {
    MT_PATH_OK = 0,
    MT_PATH_NOT_UNDER_ROOT = -1, /* does not start with /memories or /memories/ */
    MT_PATH_ESCAPE = -2,         /* traversal, encoding, control bytes, length ... */
    MT_PATH_NOMEM = -3
} mt_path_status;

/*
 * Check a request path and normalise it. On MT_PATH_OK *rel is the path
 * relative to the store root, malloc'd: "" for /memories itself, "a/b" for
 * /memories/./a//b/. On any other status *rel is NULL.
 */
mt_path_status mt_path_parse(char **rel, const char *path, size_t len);

/* Whether one directory entry name may appear in a listing: a component the
 * path rules accept (not ".", "..", encoded, controls, over 255 bytes,
 * nor a reserved name). */
int mt_path_name_ok(const char *name, size_t len);

/* Reserved in every component: the prefix of temporary files, and the
 * store's own directory (compared without regard to ASCII case). */
/* Whether a listing leaves out an entry of that name (and what lies beneath
 * it): hidden names (a leading '.') and node_modules, on every store. */
int mt_path_is_hidden(const char *name, size_t len);

#define MT_TMP_PREFIX     ".mt-tmp."
#define MT_RESERVED_NAME  ".memtool"
#define MT_PATH_MAX       4096
#define MT_NAME_MAX       255
#define MT_PATH_MAX_DEPTH 32

#endif
