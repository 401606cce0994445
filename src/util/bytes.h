/* Testing 16 bytes at a time with SSE2 (all of x86-64). Each gives a mask
 * with bit i set for byte s[i]; s must have 16 readable bytes. These exist
 * only where __SSE2__ is defined: elsewhere each caller takes its own
 * portable way (memchr, eight bytes in a word), which a byte-by-byte mask
 * would only be slower than. tests/unit builds those ways too (-mno-sse2). */
#ifndef MT_BYTES_H
#define MT_BYTES_H

#include <stddef.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>

static inline __m128i mt_bytes_load16(const char *s)
{
    return _mm_loadu_si128((const __m128i *)(const void *)s);
}

/* Bytes equal to c. */
static inline unsigned mt_bytes_eq16(const char *s, char c)
{
    return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(mt_bytes_load16(s), _mm_set1_epi8(c)));
}

/* Bytes above 0x7f: not ASCII. */
static inline unsigned mt_bytes_high16(const char *s)
{
    return (unsigned)_mm_movemask_epi8(mt_bytes_load16(s));
}

/* The bytes of v a JSON string must escape (below 0x20, '"' and '\\'),
 * each 0xff in the result. */
static inline __m128i mt_bytes_json_v(__m128i v)
{
    const __m128i low = _mm_set1_epi8(0x1f);
    __m128i ctl = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low); /* v <= 0x1f */
    __m128i quote = _mm_cmpeq_epi8(v, _mm_set1_epi8('"'));
    __m128i bslash = _mm_cmpeq_epi8(v, _mm_set1_epi8('\\'));

    return _mm_or_si128(ctl, _mm_or_si128(quote, bslash));
}

/* The same for the 16 bytes at s, as a bit mask. */
static inline unsigned mt_bytes_json16(const char *s)
{
    return (unsigned)_mm_movemask_epi8(mt_bytes_json_v(mt_bytes_load16(s)));
}

/* How many of the bytes in `blocks` blocks of 16 at s equal c; *high is
 * nonzero when any of them is above 0x7f (not ASCII), and *other, unless
 * NULL, when any but those equal to c is one a JSON string escapes. */
static inline size_t mt_bytes_count_eq(unsigned *high, unsigned *other, const char *s,
                                       size_t blocks, char c)
{
    const __m128i want = _mm_set1_epi8(c), zero = _mm_setzero_si128();
    __m128i any = zero, esc = zero;
    size_t n = 0;

    while (blocks > 0) {
        /* Each byte of acc counts up to 255 matches before it is summed. */
        size_t k = blocks < 255 ? blocks : 255;
        __m128i acc = zero;

        blocks -= k;
        for (; k > 0; k--, s += 16) {
            __m128i v = mt_bytes_load16(s), eq = _mm_cmpeq_epi8(v, want);
            acc = _mm_sub_epi8(acc, eq);
            any = _mm_or_si128(any, v);
            if (other) /* the matches of c taken out */
                esc = _mm_or_si128(esc, _mm_andnot_si128(eq, mt_bytes_json_v(v)));
        }
        acc = _mm_sad_epu8(acc, zero);
        n += (size_t)_mm_cvtsi128_si32(acc) +
             (size_t)_mm_cvtsi128_si32(_mm_unpackhi_epi64(acc, acc));
    }
    *high = (unsigned)_mm_movemask_epi8(any);
    if (other)
        *other = (unsigned)_mm_movemask_epi8(esc);
    return n;
}

#endif

/* 16 bytes from s to d, which may overlap neither: one load and one store
 * wherever the compiler knows the target, SSE2 or not. */
static inline void mt_bytes_copy16(char *d, const char *s)
{
    memcpy(d, s, 16);
}

/* The lowest set bit of a nonzero mask. */
static inline unsigned mt_bytes_first(unsigned mask)
{
#if defined(__GNUC__)
    return (unsigned)__builtin_ctz(mask);
#else
    unsigned i = 0;

    while (!(mask & 1u)) {
        mask >>= 1;
        i++;
    }
    return i;
#endif
}

#endif
