/*
 * The secrets scanner (src/guard/secrets.c) on any bytes: it returns, its
 * hits are in bounds, in order, apart, on the lines they say; the same
 * bytes after a newline give the same hits one byte and one line on; a
 * second scan with no room counts as many; and what a redaction leaves is
 * never found again where a marker stands.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "guard/secrets.h"

#define MAX_HITS 64

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return 0;
}

static size_t lines_before(const uint8_t *d, size_t off)
{
    size_t n = 1, i;

    for (i = 0; i < off; i++)
        n += d[i] == '\n';
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mt_secret_hit h[MAX_HITS], h2[MAX_HITS];
    size_t n = 0, n2 = 0, i, o, at;
    char marker[MT_SECRETS_MARKER_MAX], *shifted, *red;

    FUZZ_CHECK(mt_secrets_scan(h, MAX_HITS, &n, (const char *)data, size, NULL) == 0, "scan: %s",
               mt_error_last()->message);
    for (i = 0; i < n && i < MAX_HITS; i++) {
        FUZZ_CHECK(h[i].length > 0 && h[i].offset + h[i].length <= size, "hit %zu out of bounds",
                   i);
        FUZZ_CHECK(i == 0 || h[i].offset >= h[i - 1].offset + h[i - 1].length,
                   "hit %zu overlaps or comes before the one before", i);
        FUZZ_CHECK(h[i].line == lines_before(data, h[i].offset), "hit %zu: line %zu", i, h[i].line);
    }
    FUZZ_CHECK(mt_secrets_scan(h2, 0, &n2, (const char *)data, size, NULL) == 0 && n2 == n,
               "a scan without room counts %zu, not %zu", n2, n);

    /* After a newline: the same hits, moved on. */
    shifted = malloc(size + 1);
    FUZZ_CHECK(shifted != NULL, "out of memory");
    shifted[0] = '\n';
    memcpy(shifted + 1, data, size);
    FUZZ_CHECK(mt_secrets_scan(h2, MAX_HITS, &n2, shifted, size + 1, NULL) == 0 && n2 == n,
               "after a newline %zu hits, not %zu", n2, n);
    for (i = 0; i < n && i < MAX_HITS; i++)
        FUZZ_CHECK(h2[i].offset == h[i].offset + 1 && h2[i].length == h[i].length &&
                       h2[i].line == h[i].line + 1 && strcmp(h2[i].kind, h[i].kind) == 0,
                   "hit %zu moved differently", i);
    free(shifted);

    /* Redacted: no hit starts on a marker. */
    if (n == 0 || n > MAX_HITS)
        return 0;
    red = malloc(size + n * MT_SECRETS_MARKER_MAX + 1);
    FUZZ_CHECK(red != NULL, "out of memory");
    for (i = 0, o = 0, at = 0; i < n; i++) {
        size_t k = mt_secrets_marker(marker, h[i].kind);
        memcpy(red + o, data + at, h[i].offset - at);
        o += h[i].offset - at;
        memcpy(red + o, marker, k);
        o += k;
        at = h[i].offset + h[i].length;
    }
    memcpy(red + o, data + at, size - at);
    o += size - at;
    FUZZ_CHECK(mt_secrets_scan(h2, MAX_HITS, &n2, red, o, NULL) == 0, "rescan failed");
    for (i = 0; i < n2 && i < MAX_HITS; i++)
        FUZZ_CHECK(h2[i].length < 10 || memcmp(red + h2[i].offset, "[REDACTED:", 10) != 0,
                   "a marker was found again");
    free(red);
    return 0;
}
