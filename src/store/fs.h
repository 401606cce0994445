/* The filesystem store's internals, shared by fs.c, fs_write.c and fs_walk.c. */
#ifndef MT_STORE_FS_H
#define MT_STORE_FS_H

#include <stdint.h>
#include <sys/stat.h>

#include <memtool/store.h>

typedef struct {
    mt_store base;
    int root_fd;
    mt_durability durability;
} mt_fs;

/* Directories deeper than this are neither entered nor counted: deeper than
 * memtool ever makes them (its paths are shorter). */
#define MT_WALK_MAX_DEPTH 256

/* Open rel (a normalised relative path; "" is the root) beneath dirfd with
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
 * RESOLVE_NO_XDEV): the kernel, not string checks, keeps it inside. Returns
 * an fd or a negative mt_error_code. */
int mt_fs_openat(int dirfd, const char *rel, int flags, mode_t mode);

/* Open the directory that holds rel's last component, making the missing
 * ones (0700) when create is set; *name points into rel at that component. */
int mt_fs_open_parent(mt_fs *fs, int *out_fd, const char **name, const char *rel, int create);

/* errno as an mt_error_code, with a message naming what was being done. */
int mt_fs_error(int err, const char *what, const char *rel);

/* fsync after the change is already in place: a failure is MT_ENOTDURABLE,
 * so the caller can say the change was made. */
int mt_fs_sync_done(int fd, const char *rel);

/* Read all of fd (a regular file of about `hint` bytes) into a malloc'd,
 * NUL-terminated buffer. */
int mt_fs_read_fd(char **out, size_t *out_len, int fd, size_t hint, const char *rel);

/* fsync with the error made an mt_error_code. */
int mt_fs_sync(int fd, const char *rel);

/* Write data to a new temporary file in dirfd, under an exclusive flock (so
 * the stale-file cleaner leaves it alone); returns its fd and fills name. */
int mt_fs_write_temp(mt_fs *fs, int *out_fd, char name[64], int dirfd, const char *data, size_t len,
                     const char *rel);

/* Remove everything below the directory dirfd (never following a link). */
int mt_fs_remove_tree(int dirfd, unsigned depth);

/* Whether a name is one of memtool's temporary files: ".mt-tmp." and a
 * closing backslash, which no request path can contain. */
int mt_fs_is_temp(const char *name);

/* Remove a temporary entry of dirfd if no live writer holds it. */
void mt_fs_clean_temp(int dirfd, const char *name);

int mt_fs_create(mt_store *st, const char *path, const char *data, size_t len);
int mt_fs_edit(mt_store *st, const char *path, mt_edit_cb cb, void *payload);
int mt_fs_remove(mt_store *st, const char *path);
int mt_fs_rename(mt_store *st, const char *from, const char *to);
int mt_fs_list(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
               size_t max_entries);
int mt_fs_usage(mt_store *st, uint64_t *bytes, uint64_t *files);

#endif
