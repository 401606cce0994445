/* The limits every store checks in the same step as a change. */
#ifndef MT_STORE_USAGE_H
#define MT_STORE_USAGE_H

#include <stdint.h>

#include <memtool/store.h>

/* Whether adding these to what the store holds (u) keeps every limit of op;
 * only growth is checked, so a change that shrinks the store always goes.
 * Fills op's refusal and returns MT_ELIMIT when it does not. */
int mt_store_quota(mt_store_op *op, const mt_store_usage *u, const char *rel, int64_t bytes,
                   int64_t files, int64_t dirs);

/* New content of len bytes for a file of `was` bytes (both as stored, the
 * overhead included) against max_file_size: a rename's content
 * (mt_store_op.rename_content), which no caller has bounded before the
 * store. Fills op's refusal and returns MT_ELIMIT when over it. */
int mt_store_content_limit(mt_store_op *op, const char *rel, uint64_t was, uint64_t len);

/* A rename of `from` (a regular file when is_file) to `to`, at depth
 * to_depth (components below the root), of a tree `height` levels deep (0
 * for a file) whose longest regular file path beneath it is `longest` bytes
 * (0 for a file, or a tree without files): within MT_STORE_MAX_DEPTH and
 * op's max_depth, and each regular file moved within max_path_bytes. Fills
 * op's refusal and returns MT_ELIMIT when not. */
int mt_store_move_limit(mt_store_op *op, const char *from, const char *to, int is_file,
                        unsigned to_depth, unsigned height, size_t longest);

/* A file's size as its memory's (without op->file_overhead), for max_file_size. */
uint64_t mt_store_file_memory(const mt_store_op *op, uint64_t size);

/* v + d, never below zero. */
uint64_t mt_store_usage_add(uint64_t v, int64_t d);

#endif
