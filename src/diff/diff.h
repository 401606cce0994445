/* Unified diffs between two versions of a file, as GNU `diff -u` prints them. */
#ifndef MT_DIFF_H
#define MT_DIFF_H

#include <stddef.h>

#include "util/buf.h"

typedef struct {
    const char *old_label; /* the text after "--- " (NULL: "a"); no timestamp is added */
    const char *new_label; /* the text after "+++ " (NULL: "b") */
    unsigned context;      /* unchanged lines shown around each change, normally 3 */
    int color;             /* non-zero: ANSI colours as `git diff` uses them */
    /* The edit cost past which one split of the search stops looking for the
     * minimal diff and takes the best point it has (0: chosen from the size
     * of the input). Tests set it small to reach that path on small input. */
    size_t max_cost;
    size_t *steps; /* when not NULL, gets the search's steps, for tests to bound */
} mt_diff_opts;

#define MT_DIFF_OPTS_INIT                                                                          \
    {                                                                                              \
        NULL, NULL, 3, 0, 0, NULL                                                                  \
    }

/* Append to out a unified diff turning a into b (byte strings, NULs
 * included; a line ends after each '\n', and a last line without one gets
 * "\ No newline at end of file" after it, as GNU diff prints it). Identical
 * inputs append nothing. opts may be NULL for MT_DIFF_OPTS_INIT.
 *
 * The diff is minimal (and, in the tests, GNU diff's text byte for byte
 * wherever GNU's is minimal too) unless finding the minimum would cost more
 * than a bound on the work: about max(2^25, 32 * lines) search steps after
 * a linear pass, whatever the input. Past it, the diff is still correct,
 * only longer than it need be. Memory is linear in the size of the input.
 *
 * Returns 0, MT_EINVAL (out NULL, or a NULL string of non-zero length) or
 * MT_ENOMEM; on an error out is left as it was. */
int mt_diff_unified(mt_buf *out, const char *a, size_t alen, const char *b, size_t blen,
                    const mt_diff_opts *opts);

#endif
