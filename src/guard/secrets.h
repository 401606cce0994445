/*
 * The secrets scanner: credentials and card numbers in text about to be
 * written to memory. It knows nothing of paths, stores or replies: bytes in,
 * hits out.
 *
 * Rules are data (secrets.c): a kind name, keywords for the prefilter, a
 * PCRE2 pattern and a validator (entropy, placeholder checks). One pass over
 * the text finds the keywords (and card-shaped digit runs); only there are
 * patterns run, each over a bounded window, so a scan costs a pass over the
 * bytes plus a little per keyword. Patterns are compiled (and JIT-compiled)
 * once per process; a scan allocates one match block, never per byte.
 * Content may hold NUL bytes and invalid UTF-8: patterns work on bytes.
 */
#ifndef MT_GUARD_SECRETS_H
#define MT_GUARD_SECRETS_H

#include <stddef.h>

typedef struct {
    const char *kind; /* a static name: "aws-access-key-id", "card-number", ... */
    size_t offset;    /* of the secret itself (what a redaction replaces) */
    size_t length;
    size_t line; /* 1-based line of offset */
} mt_secret_hit;

/* Compiled allow-list regexes: a hit whose secret text one of them matches
 * (anywhere; anchor with ^ and $ for the whole) is not a secret. */
typedef struct mt_secrets_allow mt_secrets_allow;

typedef struct {
    const mt_secrets_allow *allow; /* NULL: none */
} mt_secrets_cfg;

/* Compile n regexes (PCRE2 syntax). A bad one fails with MT_EINVAL and a
 * message naming it and saying what is wrong. *out is NULL for n == 0. */
int mt_secrets_allow_compile(mt_secrets_allow **out, const char *const *regexes, size_t n);
void mt_secrets_allow_free(mt_secrets_allow *allow);

/*
 * Scan data[0..len). Stores up to max_hits hits, sorted by offset and not
 * overlapping; *count is the number of hits there are, which may be more
 * than max_hits (scan again with room for all). Returns 0, MT_ENOMEM, or
 * MT_ERROR when the patterns could not be compiled (never in practice: they
 * are fixed; the message says so).
 */
int mt_secrets_scan(mt_secret_hit *hits, size_t max_hits, size_t *count, const char *data,
                    size_t len, const mt_secrets_cfg *cfg);

/* Shannon entropy of the bytes, in bits per byte. */
double mt_secrets_entropy(const char *s, size_t len);

/* Whether the digits (ASCII, separators ignored) pass the Luhn check. */
int mt_secrets_luhn(const char *s, size_t len);

/* The longest "[REDACTED:kind]" marker any rule makes. */
#define MT_SECRETS_MARKER_MAX 48

/* "[REDACTED:kind]" into out (size at least MT_SECRETS_MARKER_MAX); returns its length. */
size_t mt_secrets_marker(char *out, const char *kind);

#endif
