/* What the fuzz targets share: a scratch store with traps beside it, and
 * the invariants every result must keep. */
#ifndef MT_FUZZ_COMMON_H
#define MT_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <memtool.h>

/* The libFuzzer entry points (also called by the replay driver). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Stop the process with a message: an invariant broke. abort() so libFuzzer
 * saves the input as a crash. */
#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fuzz_fail(__FILE__, __LINE__, #cond, __VA_ARGS__);                                     \
    } while (0)

_Noreturn void fuzz_fail(const char *file, int line, const char *cond, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Strict UTF-8 (SPEC section 2): no overlong forms, no surrogates, <= U+10FFFF. */
int fuzz_utf8_valid(const char *s, size_t len);

/*
 * The scratch layout, made once per process under $TMPDIR:
 *   base/store/          the store the target works on
 *   base/outside/        a directory the store must never reach, with a
 *                        canary file whose bytes must never show in a result
 * and inside the store, traps: symlinks to outside (relative and absolute), a
 * hard link to the outside canary, a FIFO, and an ordinary notes file.
 */
typedef struct {
    char base[256];
    char store[300];
    char outside[300];
    char canary[64]; /* the canary's content, random per process */
    int atime_works; /* whether a read of the canary shows in its atime */
} fuzz_scratch;

extern fuzz_scratch fuzz_env;

/* Make the layout (once). */
void fuzz_scratch_init(void);
/* Empty the store and lay the traps again, so each input starts the same. */
void fuzz_store_reset(void);
/* The layout made (once) and the store laid afresh, then a handle on it with
 * durability none (nothing checked needs the disk) and the given view limit
 * (0: the default). Free it with mt_memory_free. */
mt_memory *fuzz_open_store(uint64_t view_limit);
/* A digest of everything in the store (names, types, sizes, contents' mtimes, inodes). */
uint64_t fuzz_store_digest(void);
/* Check nothing outside the store was read, changed or created. */
void fuzz_check_outside(void);
/* Check a result text: valid UTF-8, NUL-terminated, no canary. */
void fuzz_check_text(const char *text, size_t len);

#endif
