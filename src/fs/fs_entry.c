/*
 * Which entries of the store's directories are memories: one rule for every
 * walk (a count, a listing, a search, migrate, expiry), so that what a
 * search finds, what migrate copies and what the limits count never
 * disagree about a name.
 */
#include "fs/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

int mt_fs_is_internal(const char *name)
{
    return strncmp(name, MT_TMP_PREFIX, sizeof(MT_TMP_PREFIX) - 1) == 0 ||
           strcasecmp(name, MT_FS_RESERVED) == 0;
}

int mt_fs_entry(struct stat *sb, int *named, int dirfd, const char *name, unsigned char d_type,
                size_t parent_len)
{
    size_t n = strlen(name);

    *named = 0;
    if (mt_fs_is_internal(name))
        return MT_FS_SKIP;
    /* A directory's or a link's type is the kernel's word from readdir: no
     * stat. A file's size is needed, and an unknown type must be asked. */
    if (d_type == DT_UNKNOWN || d_type == DT_REG) {
        if (fstatat(dirfd, name, sb, AT_SYMLINK_NOFOLLOW) < 0)
            return errno == ENOENT ? MT_FS_SKIP : -errno; /* ENOENT: removed since it was listed */
        d_type = S_ISREG(sb->st_mode) ? DT_REG : S_ISDIR(sb->st_mode) ? DT_DIR : DT_LNK;
    }
    if (d_type != DT_REG && d_type != DT_DIR)
        return MT_FS_OTHER;
    *named = mt_path_name_ok(name, n) && parent_len + (parent_len > 0) + n <= MT_FS_REL_MAX;
    return d_type == DT_REG ? MT_FS_FILE : MT_FS_DIR;
}
