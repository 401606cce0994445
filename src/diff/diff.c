/*
 * Unified diffs, line by line.
 *
 * Lines are hashed once and numbered by equivalence class, so the search
 * compares integers. Lines common to the start or end of both files, and
 * lines of one file found nowhere in what is left of the other, are settled
 * before the search: no shortest edit script can keep the latter, so
 * leaving them out keeps the result minimal and makes files with nothing in
 * common cost nothing. What is left goes to Myers' O(ND) algorithm in its
 * linear-space form ("An O(ND) Difference Algorithm and Its Variations",
 * 1986, section 4b): find the middle snake of a shortest path by searching
 * from both ends at once, split there, and do each half the same way.
 *
 * A search that reaches the cost bound without meeting takes the point
 * either end has carried furthest, as GNU diff does when a search is "too
 * expensive": the halves are still diffed exactly, so the result is a
 * correct edit script, only perhaps not the shortest.
 *
 * Runs of changes are then slid, where equal lines allow, to where GNU diff
 * puts them, and printed in its unified format.
 */
#include "diff/diff.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <memtool.h>

/* The cost bound of each split is the step budget over the lines searched,
 * kept within these. A search takes about half a step per line per unit of
 * bound (a split past the bound costs about its square and moves at least
 * the bound along), so some DIFF_BUDGET / 2 steps in all, a fifth of a
 * second. Up to 16,384 lines the bound is 4096, and a split stays exact up
 * to an edit distance of twice that; a million lines of two letters, the
 * worst 1 MiB can hold, get 64 and take a third of a second. Where changes
 * lie scattered between long common runs, even 16 gives a near-minimal diff. */
#define DIFF_BUDGET   (1 << 26)
#define DIFF_COST_MIN 64
#define DIFF_COST_MAX 4096

#define COLOR_HEADER "\033[1m"
#define COLOR_HUNK   "\033[36m"
#define COLOR_OLD    "\033[31m"
#define COLOR_NEW    "\033[32m"
#define COLOR_RESET  "\033[m"

typedef struct {
    const char *data;
    size_t len;
    ptrdiff_t n;        /* lines */
    size_t *start;      /* n + 1 offsets: line i is data[start[i]] up to data[start[i + 1]] */
    ptrdiff_t *id;      /* n classes: equal lines, equal ids */
    unsigned char *mem; /* n + 2 flags; chg is mem + 1, so chg[-1] and chg[n] are 0 */
    unsigned char *chg; /* 1 where the line is not in the common subsequence */
    ptrdiff_t lo, hi;   /* the lines that take part, as in GNU diff (see diff_lcs) */
} diff_side;

/* The search over the lines left once the ends and the lines with no match
 * are taken out: x and y are their classes, xline and yline their numbers. */
typedef struct {
    const ptrdiff_t *x, *y;
    const ptrdiff_t *xline, *yline;
    unsigned char *xchg, *ychg;
    ptrdiff_t *fd, *bd; /* furthest x per diagonal (x - y), forward and backward */
    ptrdiff_t max_cost;
    size_t steps;
} diff_search;

static void *diff_alloc(size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size)
        return NULL;
    /* Never malloc(0), whose NULL would read as out of memory. */
    return malloc(count && size ? count * size : 1);
}

static int diff_split_lines(diff_side *s)
{
    const char *p = s->data, *end = s->data + s->len;
    size_t n = 0, i = 0;

    while (p < end && (p = memchr(p, '\n', (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    if (s->len > 0 && s->data[s->len - 1] != '\n')
        n++;
    if (n > PTRDIFF_MAX / 4 || !(s->start = diff_alloc(n + 1, sizeof(*s->start))) ||
        !(s->id = diff_alloc(n, sizeof(*s->id))) || !(s->mem = calloc(n + 2, 1)))
        return MT_ENOMEM;
    s->n = (ptrdiff_t)n;
    s->chg = s->mem + 1;
    for (p = s->data; i < n; i++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));

        s->start[i] = (size_t)(p - s->data);
        p = nl ? nl + 1 : end;
    }
    s->start[n] = s->len;
    return 0;
}

static uint64_t diff_mix(uint64_t h)
{
    h ^= h >> 33;
    h *= UINT64_C(0xff51afd7ed558ccd);
    h ^= h >> 33;
    return h;
}

static uint64_t diff_hash(const char *p, size_t len, uint64_t seed)
{
    uint64_t h = seed ^ (len * UINT64_C(0x9e3779b97f4a7c15)), w;

    for (; len >= 8; p += 8, len -= 8) {
        memcpy(&w, p, 8);
        h = diff_mix(h ^ w) * UINT64_C(0xc4ceb9fe1a85ec53);
    }
    w = 0;
    memcpy(&w, p, len);
    return diff_mix(h ^ w);
}

/* Number the lines of both sides by class, hashing each once and comparing
 * bytes only when hashes agree. The hash is seeded from addresses, which
 * address-space randomisation moves, so lines made to collide on one run do
 * not on the next; ids follow first appearance, so the output does not
 * depend on the seed. */
static int diff_classify(diff_side *a, diff_side *b, ptrdiff_t *nclasses)
{
    static const char anchor = 0;
    uint64_t seed = diff_mix((uint64_t)(uintptr_t)&anchor ^ ((uint64_t)(uintptr_t)nclasses << 17));
    size_t total = (size_t)a->n + (size_t)b->n, cap = 16, mask;
    ptrdiff_t *slot = NULL, next = 0; /* slot: class + 1, or 0 when free */
    uint64_t *chash = NULL;           /* per class: its hash and its first line */
    const char **cptr = NULL;
    size_t *clen = NULL;
    diff_side *side;
    int rc = MT_ENOMEM, f;

    while (cap < 2 * total)
        cap *= 2;
    mask = cap - 1;
    if (!(slot = calloc(cap, sizeof(*slot))) || !(chash = diff_alloc(total, sizeof(*chash))) ||
        !(cptr = diff_alloc(total, sizeof(*cptr))) || !(clen = diff_alloc(total, sizeof(*clen))))
        goto done;
    for (f = 0, side = a; f < 2; f++, side = b) {
        ptrdiff_t i;

        for (i = 0; i < side->n; i++) {
            const char *p = side->data + side->start[i];
            size_t len = side->start[i + 1] - side->start[i];
            uint64_t h = diff_hash(p, len, seed);
            size_t at = (size_t)h & mask;
            ptrdiff_t c;

            while ((c = slot[at]) != 0) {
                c--;
                if (chash[c] == h && clen[c] == len && !memcmp(cptr[c], p, len))
                    break;
                at = (at + 1) & mask;
            }
            if (!slot[at]) {
                c = next++;
                chash[c] = h;
                cptr[c] = p;
                clen[c] = len;
                slot[at] = c + 1;
            }
            side->id[i] = c;
        }
    }
    *nclasses = next;
    rc = 0;
done:
    free(slot);
    free(chash);
    free(cptr);
    free(clen);
    return rc;
}

/* Find where a shortest path from (xoff, yoff) to (xlim, ylim) crosses the
 * middle, or, past the cost bound, a point far along a cheap one. The
 * rectangle has lines on both sides and differs in its first and last. */
static void diff_middle(diff_search *s, ptrdiff_t xoff, ptrdiff_t xlim, ptrdiff_t yoff,
                        ptrdiff_t ylim, ptrdiff_t *xmid, ptrdiff_t *ymid)
{
    ptrdiff_t *fd = s->fd, *bd = s->bd;
    const ptrdiff_t *x = s->x, *y = s->y;
    const ptrdiff_t kmin = xoff - ylim, kmax = xlim - yoff;
    const ptrdiff_t fmid = xoff - yoff, bmid = xlim - ylim;
    ptrdiff_t flo = fmid, fhi = fmid, blo = bmid, bhi = bmid, cost, k;
    size_t steps = 0;
    /* A path of odd length meets the backward search of one step less. */
    const int odd = (fmid - bmid) % 2 != 0;

    fd[fmid] = xoff;
    bd[bmid] = xlim;
    for (cost = 1;; cost++) {
        ptrdiff_t lo = flo > kmin ? flo - 1 : flo + 1, hi = fhi < kmax ? fhi + 1 : fhi - 1;
        ptrdiff_t best, bestx;

        /* Diagonals new to the search have a neighbour it never reached:
         * mark it as behind every other. */
        if (lo < flo)
            fd[lo - 1] = -1;
        if (hi > fhi)
            fd[hi + 1] = -1;
        for (k = hi; k >= lo; k -= 2) {
            ptrdiff_t right = fd[k - 1] + 1, down = fd[k + 1];
            ptrdiff_t px = right > down ? right : down, py, from;

            /* A step off the edge lands on the end of the diagonal, which
             * the same cost also reaches. */
            if (px > xlim)
                px = xlim;
            if (px - k > ylim)
                px = ylim + k;
            from = px;
            for (py = px - k; px < xlim && py < ylim && x[px] == y[py]; px++, py++)
                ;
            steps += 1 + (size_t)(px - from);
            fd[k] = px;
            if (odd && k >= blo && k <= bhi && bd[k] <= px) {
                *xmid = px;
                *ymid = py;
                goto done;
            }
        }
        flo = lo;
        fhi = hi;

        lo = blo > kmin ? blo - 1 : blo + 1;
        hi = bhi < kmax ? bhi + 1 : bhi - 1;
        if (lo < blo)
            bd[lo - 1] = PTRDIFF_MAX;
        if (hi > bhi)
            bd[hi + 1] = PTRDIFF_MAX;
        for (k = hi; k >= lo; k -= 2) {
            ptrdiff_t up = bd[k - 1], left = bd[k + 1] - 1;
            ptrdiff_t px = up < left ? up : left, py, from;

            if (px < xoff)
                px = xoff;
            if (px - k < yoff)
                px = yoff + k;
            from = px;
            for (py = px - k; px > xoff && py > yoff && x[px - 1] == y[py - 1]; px--, py--)
                ;
            steps += 1 + (size_t)(from - px);
            bd[k] = px;
            if (!odd && k >= flo && k <= fhi && px <= fd[k]) {
                *xmid = px;
                *ymid = py;
                goto done;
            }
        }
        blo = lo;
        bhi = hi;

        if (cost < s->max_cost)
            continue;
        /* Too expensive: split at whichever search has got further. */
        best = -1;
        bestx = xoff;
        for (k = fhi; k >= flo; k -= 2) {
            if (2 * fd[k] - k > best) {
                best = 2 * fd[k] - k;
                bestx = fd[k];
            }
        }
        *xmid = bestx;
        *ymid = best - bestx;
        best = PTRDIFF_MAX;
        bestx = xlim;
        for (k = bhi; k >= blo; k -= 2) {
            if (2 * bd[k] - k < best) {
                best = 2 * bd[k] - k;
                bestx = bd[k];
            }
        }
        if ((xlim + ylim) - best >= (*xmid + *ymid) - (xoff + yoff)) {
            *xmid = bestx;
            *ymid = best - bestx;
        }
        break;
    }
done:
    s->steps += steps;
}

/* Mark the lines outside a shortest (or, past the bound, a short) common
 * subsequence of x[xoff, xlim) and y[yoff, ylim). It recurses into the
 * smaller half and loops on the larger, so the depth is logarithmic. */
static void diff_compare(diff_search *s, ptrdiff_t xoff, ptrdiff_t xlim, ptrdiff_t yoff,
                         ptrdiff_t ylim)
{
    for (;;) {
        ptrdiff_t xmid, ymid;

        while (xoff < xlim && yoff < ylim && s->x[xoff] == s->y[yoff]) {
            xoff++;
            yoff++;
        }
        while (xoff < xlim && yoff < ylim && s->x[xlim - 1] == s->y[ylim - 1]) {
            xlim--;
            ylim--;
        }
        if (xoff == xlim || yoff == ylim)
            break;
        diff_middle(s, xoff, xlim, yoff, ylim, &xmid, &ymid);
        /* A split at a corner would not shrink the problem; the search
         * cannot return one, but a loop that may not end is not worth it. */
        if ((xmid == xoff && ymid == yoff) || (xmid == xlim && ymid == ylim))
            break;
        if ((xmid - xoff) + (ymid - yoff) <= (xlim - xmid) + (ylim - ymid)) {
            diff_compare(s, xoff, xmid, yoff, ymid);
            xoff = xmid;
            yoff = ymid;
        } else {
            diff_compare(s, xmid, xlim, ymid, ylim);
            xlim = xmid;
            ylim = ymid;
        }
    }
    for (; xoff < xlim; xoff++)
        s->xchg[s->xline[xoff]] = 1;
    for (; yoff < ylim; yoff++)
        s->ychg[s->yline[yoff]] = 1;
}

/* Keep the lines of side[lo, hi) whose class other has (in its count),
 * marking the rest changed; returns how many were kept. */
static ptrdiff_t diff_keep(ptrdiff_t *cls, ptrdiff_t *line, diff_side *side, ptrdiff_t lo,
                           ptrdiff_t hi, const ptrdiff_t *other_count)
{
    ptrdiff_t i, n = 0;

    for (i = lo; i < hi; i++) {
        if (other_count[side->id[i]]) {
            cls[n] = side->id[i];
            line[n++] = i;
        } else {
            side->chg[i] = 1;
        }
    }
    return n;
}

/* The context asked for, kept small enough that twice it cannot overflow. */
static ptrdiff_t diff_context(const mt_diff_opts *o)
{
    const size_t wanted = o->context;

    return wanted > (size_t)(PTRDIFF_MAX / 4) ? PTRDIFF_MAX / 4 : (ptrdiff_t)wanted;
}

static int diff_lcs(diff_side *a, diff_side *b, ptrdiff_t nclasses, ptrdiff_t horizon,
                    size_t max_cost, size_t *steps)
{
    ptrdiff_t lo = 0, ahi = a->n, bhi = b->n, nx, ny, i, *count = NULL, *cls = NULL, *line = NULL;
    ptrdiff_t *diag = NULL;
    diff_search s = {0};
    size_t lines;
    int rc = MT_ENOMEM;

    while (lo < ahi && lo < bhi && a->id[lo] == b->id[lo])
        lo++;
    while (ahi > lo && bhi > lo && a->id[ahi - 1] == b->id[bhi - 1]) {
        ahi--;
        bhi--;
    }
    /* GNU diff keeps `context` lines of the common ends with the rest, its
     * horizon: they count when lines with no match are sorted out, and runs
     * of changes slide into them but no further. Doing the same here gives
     * the same output as its, where shortest diffs tie. */
    a->lo = b->lo = lo - (lo < horizon ? lo : horizon);
    i = a->n - ahi < horizon ? a->n - ahi : horizon;
    a->hi = ahi + i;
    b->hi = bhi + i;
    /* count[c] and count[nclasses + c]: class c's lines in a's part and in b's. */
    if (!(count = calloc(2 * (size_t)nclasses + 1, sizeof(*count))) ||
        !(cls = diff_alloc((size_t)(ahi - lo) + (size_t)(bhi - lo), sizeof(*cls))) ||
        !(line = diff_alloc((size_t)(ahi - lo) + (size_t)(bhi - lo), sizeof(*line))))
        goto done;
    for (i = a->lo; i < a->hi; i++)
        count[a->id[i]]++;
    for (i = b->lo; i < b->hi; i++)
        count[nclasses + b->id[i]]++;
    nx = diff_keep(cls, line, a, lo, ahi, count + nclasses);
    ny = diff_keep(cls + nx, line + nx, b, lo, bhi, count);
    free(count);
    count = NULL;

    lines = (size_t)nx + (size_t)ny;
    if (!(diag = diff_alloc(2 * (lines + 3), sizeof(*diag))))
        goto done;
    s.x = cls;
    s.y = cls + nx;
    s.xline = line;
    s.yline = line + nx;
    s.xchg = a->chg;
    s.ychg = b->chg;
    /* Diagonals run from -ny to nx; one spare each side. */
    s.fd = diag + ny + 1;
    s.bd = diag + (lines + 3) + ny + 1;
    if (max_cost == 0) {
        max_cost = lines ? DIFF_BUDGET / lines : DIFF_COST_MAX;
        max_cost = max_cost < DIFF_COST_MIN   ? DIFF_COST_MIN
                   : max_cost > DIFF_COST_MAX ? DIFF_COST_MAX
                                              : max_cost;
    }
    s.max_cost = max_cost > PTRDIFF_MAX ? PTRDIFF_MAX : (ptrdiff_t)max_cost;
    diff_compare(&s, 0, nx, 0, ny);
    if (steps)
        *steps = s.steps;
    rc = 0;
done:
    free(count);
    free(cls);
    free(line);
    free(diag);
    return rc;
}

/* Slide each run of changes in side, where the lines allow, to where GNU
 * diff puts it: merged with as many neighbouring runs as sliding can reach,
 * then as far down as it goes, unless higher up its end meets a change in
 * the other side, which makes one hunk block of the two. j follows the line
 * of other that pairs with the line ending the run. */
static void diff_shift(diff_side *side, const diff_side *other)
{
    unsigned char *chg = side->chg;
    const unsigned char *ochg = other->chg;
    const ptrdiff_t *id = side->id, lo = side->lo, hi = side->hi;
    ptrdiff_t i = lo, j = other->lo;

    for (;;) {
        ptrdiff_t start, len, meets;

        while (i < hi && !chg[i]) {
            while (ochg[j])
                j++;
            i++;
            j++;
        }
        if (i == hi)
            break;
        start = i;
        while (chg[i])
            i++;
        while (ochg[j])
            j++;
        do {
            len = i - start;
            while (start > lo && id[start - 1] == id[i - 1]) {
                chg[--start] = 1;
                chg[--i] = 0;
                while (chg[start - 1])
                    start--;
                while (ochg[--j])
                    ;
            }
            /* Where the run's end last met a change in other, if anywhere. */
            meets = ochg[j - 1] ? i : hi;
            while (i < hi && id[start] == id[i]) {
                chg[start++] = 0;
                chg[i++] = 1;
                while (chg[i])
                    i++;
                while (ochg[++j])
                    meets = i;
            }
        } while (len != i - start);
        while (meets < i) {
            chg[--start] = 1;
            chg[--i] = 0;
            while (ochg[--j])
                ;
        }
    }
}

static int diff_put_line(mt_buf *out, const diff_side *s, ptrdiff_t i, char mark, const char *color)
{
    const char *p = s->data + s->start[i];
    size_t len = s->start[i + 1] - s->start[i];
    int newline = len > 0 && p[len - 1] == '\n';

    if (color && mt_buf_puts(out, color) < 0)
        return MT_ENOMEM;
    if (mt_buf_putc(out, mark) < 0 || mt_buf_put(out, p, newline ? len - 1 : len) < 0)
        return MT_ENOMEM;
    if (color && mt_buf_puts(out, COLOR_RESET) < 0)
        return MT_ENOMEM;
    if (mt_buf_putc(out, '\n') < 0)
        return MT_ENOMEM;
    if (!newline && mt_buf_puts(out, "\\ No newline at end of file\n") < 0)
        return MT_ENOMEM;
    return 0;
}

/* GNU's ranges: one line is just its number, none is the line before. */
static int diff_put_range(mt_buf *out, char mark, ptrdiff_t start, ptrdiff_t count)
{
    if (count == 0)
        return mt_buf_printf(out, "%c%td,0", mark, start);
    if (count == 1)
        return mt_buf_printf(out, "%c%td", mark, start + 1);
    return mt_buf_printf(out, "%c%td,%td", mark, start + 1, count);
}

static int diff_put_hunk(mt_buf *out, const diff_side *a, const diff_side *b, ptrdiff_t i,
                         ptrdiff_t iend, ptrdiff_t j, ptrdiff_t jend, int color)
{
    if ((color && mt_buf_puts(out, COLOR_HUNK) < 0) || mt_buf_puts(out, "@@ ") < 0 ||
        diff_put_range(out, '-', i, iend - i) < 0 || mt_buf_putc(out, ' ') < 0 ||
        diff_put_range(out, '+', j, jend - j) < 0 || mt_buf_puts(out, " @@") < 0 ||
        (color && mt_buf_puts(out, COLOR_RESET) < 0) || mt_buf_putc(out, '\n') < 0)
        return MT_ENOMEM;
    while (i < iend || j < jend) {
        if (i < iend && j < jend && !a->chg[i] && !b->chg[j]) {
            if (diff_put_line(out, a, i++, ' ', NULL) < 0)
                return MT_ENOMEM;
            j++;
            continue;
        }
        if (!(i < iend && a->chg[i]) && !(j < jend && b->chg[j]))
            break; /* the ranges disagree: cannot happen, but never loop */
        for (; i < iend && a->chg[i]; i++)
            if (diff_put_line(out, a, i, '-', color ? COLOR_OLD : NULL) < 0)
                return MT_ENOMEM;
        for (; j < jend && b->chg[j]; j++)
            if (diff_put_line(out, b, j, '+', color ? COLOR_NEW : NULL) < 0)
                return MT_ENOMEM;
    }
    return 0;
}

static int diff_put_header(mt_buf *out, const char *mark, const char *label, int color)
{
    if ((color && mt_buf_puts(out, COLOR_HEADER) < 0) || mt_buf_puts(out, mark) < 0 ||
        mt_buf_puts(out, label) < 0 || (color && mt_buf_puts(out, COLOR_RESET) < 0) ||
        mt_buf_putc(out, '\n') < 0)
        return MT_ENOMEM;
    return 0;
}

/* Group the blocks of changes into hunks: blocks at most 2 * context
 * unchanged lines apart share one, as their context lines would touch. */
static int diff_print(mt_buf *out, const diff_side *a, const diff_side *b, const mt_diff_opts *o)
{
    const ptrdiff_t na = a->n, nb = b->n;
    const ptrdiff_t context = diff_context(o);
    ptrdiff_t i = 0, j = 0, hunk_i = 0, hunk_j = 0;
    int open = 0, headers = 0;

    for (;;) {
        ptrdiff_t gap = 0, keep;
        int end;

        for (; i < na && j < nb && !a->chg[i] && !b->chg[j]; gap++) {
            i++;
            j++;
        }
        end = i == na && j == nb;
        if (open && (end || gap > 2 * context)) {
            keep = gap < context ? gap : context;
            if (diff_put_hunk(out, a, b, hunk_i, i - gap + keep, hunk_j, j - gap + keep, o->color) <
                0)
                return MT_ENOMEM;
            open = 0;
        }
        if (end)
            return 0;
        if (!open) {
            if (!headers &&
                (diff_put_header(out, "--- ", o->old_label ? o->old_label : "a", o->color) < 0 ||
                 diff_put_header(out, "+++ ", o->new_label ? o->new_label : "b", o->color) < 0))
                return MT_ENOMEM;
            headers = 1;
            keep = gap < context ? gap : context;
            hunk_i = i - keep;
            hunk_j = j - keep;
            open = 1;
        }
        while (i < na && a->chg[i])
            i++;
        while (j < nb && b->chg[j])
            j++;
    }
}

int mt_diff_unified(mt_buf *out, const char *a, size_t alen, const char *b, size_t blen,
                    const mt_diff_opts *opts)
{
    static const mt_diff_opts defaults = MT_DIFF_OPTS_INIT;
    diff_side sa = {0}, sb = {0};
    size_t was = out ? out->len : 0;
    ptrdiff_t nclasses;
    int rc;

    if (!out || (!a && alen) || (!b && blen)) {
        rc = MT_EINVAL;
        goto done;
    }
    if (!opts)
        opts = &defaults;
    if (opts->steps)
        *opts->steps = 0;
    if (alen == blen && (alen == 0 || !memcmp(a, b, alen))) {
        rc = 0;
        goto done;
    }
    sa.data = a ? a : "";
    sa.len = alen;
    sb.data = b ? b : "";
    sb.len = blen;
    if ((rc = diff_split_lines(&sa)) < 0 || (rc = diff_split_lines(&sb)) < 0 ||
        (rc = diff_classify(&sa, &sb, &nclasses)) < 0 ||
        (rc = diff_lcs(&sa, &sb, nclasses, diff_context(opts), opts->max_cost, opts->steps)) < 0)
        goto done;
    diff_shift(&sa, &sb);
    diff_shift(&sb, &sa);
    rc = diff_print(out, &sa, &sb, opts);
done:
    if (rc < 0 && out && out->ptr)
        mt_buf_truncate(out, was);
    free(sa.start);
    free(sa.id);
    free(sa.mem);
    free(sb.start);
    free(sb.id);
    free(sb.mem);
    return rc;
}
