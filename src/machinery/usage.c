/* The limits every store checks in the same step as a change. */
#include "machinery/usage.h"

#include <string.h>

#include "contract/store_contract.h"

static int refuse(mt_store_op *op, mt_limit_kind kind, uint64_t limit, uint64_t held,
                  uint64_t would, const char *rel)
{
    op->refused = kind;
    op->limit = limit;
    op->held = held;
    op->would = would;
    return mt_error_set(MT_ELIMIT, "changing %s would go over a limit of the store",
                        *rel ? rel : MT_STORE_SHOWN_ROOT);
}

int mt_store_quota(mt_store_op *op, const mt_store_usage *u, const char *rel, int64_t bytes,
                   int64_t files, int64_t dirs)
{
    /* With encryption each file holds file_overhead bytes more than its
     * memory: the limit counts memories, so a store holds exactly as much
     * encrypted as plain. */
    uint64_t o = op->file_overhead;
    uint64_t held = u->bytes - (u->files * o <= u->bytes ? u->files * o : u->bytes);
    int64_t grows = bytes - files * (int64_t)o;

    if (grows > 0 && op->max_store_size && held + (uint64_t)grows > op->max_store_size)
        return refuse(op, MT_LIMIT_STORE_SIZE, op->max_store_size, held, held + (uint64_t)grows,
                      rel);
    if (files > 0 && op->max_files && u->files + (uint64_t)files > op->max_files)
        return refuse(op, MT_LIMIT_FILES, op->max_files, u->files, u->files + (uint64_t)files, rel);
    if (dirs > 0 && op->max_dirs && u->dirs + (uint64_t)dirs > op->max_dirs)
        return refuse(op, MT_LIMIT_DIRS, op->max_dirs, u->dirs, u->dirs + (uint64_t)dirs, rel);
    return 0;
}

int mt_store_content_limit(mt_store_op *op, const char *rel, uint64_t was, uint64_t len)
{
    uint64_t would = mt_store_file_memory(op, len);

    if (!op->max_file_size || would <= op->max_file_size)
        return 0;
    return refuse(op, MT_LIMIT_FILE_SIZE, op->max_file_size, mt_store_file_memory(op, was), would,
                  rel);
}

int mt_store_move_limit(mt_store_op *op, const char *from, const char *to, int is_file,
                        unsigned to_depth, unsigned height, size_t longest)
{
    unsigned depth =
        op->max_depth && op->max_depth < MT_STORE_MAX_DEPTH ? op->max_depth : MT_STORE_MAX_DEPTH;
    size_t bytes = strlen(to) + (longest ? 1 + longest : 0);

    /* Everything moved stays within the depth a request can name (and every
     * walk sees in full): `height` levels beneath the destination. */
    if (to_depth + height > depth) {
        op->refused = MT_LIMIT_DEPTH;
        op->limit = depth;
        op->held = height;
        op->would = to_depth + height;
        return mt_error_set(MT_ELIMIT, "moving %s to %s would nest it too deep", from, to);
    }
    /* Only a regular file's path is bounded: a tree without one moves no file. */
    if (op->max_path_bytes && (is_file || longest) && bytes > op->max_path_bytes) {
        op->refused = MT_LIMIT_PATH_BYTES;
        op->limit = op->max_path_bytes;
        op->held = strlen(from) + (longest ? 1 + longest : 0);
        op->would = bytes;
        return mt_error_set(MT_ELIMIT, "moving %s to %s would make a path too long", from, to);
    }
    return 0;
}

uint64_t mt_store_file_memory(const mt_store_op *op, uint64_t size)
{
    return size > op->file_overhead ? size - op->file_overhead : 0;
}

uint64_t mt_store_usage_add(uint64_t v, int64_t d)
{
    if (d < 0 && (uint64_t)-d > v)
        return 0;
    return v + (uint64_t)d;
}
