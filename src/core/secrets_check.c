/*
 * The secrets policy on every write: the content a command is about to
 * store (a create's text, an edit's result, a restored version) is scanned,
 * then refused, redacted or let through as the handle's options say. The
 * words never hold the secret: a kind and a line number are enough to find it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

void mt_guard_dispose(mt_guard *g)
{
    free(g->data);
    memset(g, 0, sizeof(*g));
}

/* The content with each hit replaced by its marker. A secret spanning lines
 * (a private key block) keeps its newlines after the marker, so line numbers
 * in the file and in the messages stay those the writer knows. */
static size_t redacted_len(const char *data, size_t len, const mt_secret_hit *h, size_t n)
{
    char marker[MT_SECRETS_MARKER_MAX];
    size_t out = len, i, j;

    for (i = 0; i < n; i++) {
        out = out - h[i].length + mt_secrets_marker(marker, h[i].kind);
        for (j = 0; j < h[i].length; j++)
            out += data[h[i].offset + j] == '\n';
    }
    return out;
}

static char *redact(const char *data, size_t len, const mt_secret_hit *h, size_t n, size_t out_len)
{
    char marker[MT_SECRETS_MARKER_MAX], *out = malloc(out_len + 1);
    size_t at = 0, o = 0, i, j, k;

    if (!out)
        return NULL;
    for (i = 0; i < n; i++) {
        memcpy(out + o, data + at, h[i].offset - at);
        o += h[i].offset - at;
        k = mt_secrets_marker(marker, h[i].kind);
        memcpy(out + o, marker, k);
        o += k;
        for (j = 0; j < h[i].length; j++)
            if (data[h[i].offset + j] == '\n')
                out[o++] = '\n';
        at = h[i].offset + h[i].length;
    }
    memcpy(out + o, data + at, len - at);
    o += len - at;
    out[o] = '\0';
    return out;
}

static int guard_as(mt_guard *g, mt_memory *m, mt_secrets_policy policy, const char *data,
                    size_t len)
{
    mt_secret_hit local[16], *hits = local;
    mt_secrets_cfg cfg = {m->secrets_allow};
    size_t count = 0, i;
    int rc;

    memset(g, 0, sizeof(*g));
    if (policy == MT_SECRETS_OFF)
        return 0;
    if ((rc = mt_secrets_scan(hits, sizeof(local) / sizeof(local[0]), &count, data, len, &cfg)) < 0)
        return rc;
    if (count == 0)
        return 0;
    g->found.count = count;
    for (i = 0; i < count && i < MT_GUARD_SHOWN; i++)
        g->found.shown[i] = hits[i];
    if (policy == MT_SECRETS_REJECT) {
        g->rejected = 1;
        return 0;
    }
    /* Redact: all the hits, which the first scan only counted past its room. */
    if (count > sizeof(local) / sizeof(local[0])) {
        if (!(hits = malloc(count * sizeof(*hits))))
            return mt_error_set(MT_ENOMEM, "out of memory redacting secrets");
        if ((rc = mt_secrets_scan(hits, count, &count, data, len, &cfg)) < 0)
            goto done;
    }
    g->len = redacted_len(data, len, hits, count);
    /* Bounded by the limit, not the input: too big is the caller's limit error. */
    if (g->len > m->opts.max_file_size)
        goto done;
    if (!(g->data = redact(data, len, hits, count, g->len)))
        rc = mt_error_set(MT_ENOMEM, "out of memory redacting secrets");
done:
    if (hits != local)
        free(hits);
    return rc;
}

int mt_guard_content(mt_guard *g, mt_memory *m, const char *data, size_t len)
{
    return guard_as(g, m, m->opts.secrets, data, len);
}

int mt_guard_redact(mt_guard *g, mt_memory *m, const char *data, size_t len)
{
    return guard_as(g, m, MT_SECRETS_REDACT, data, len);
}

/* "a secret (kind, line n)" or "N secrets (kind, line n; kind, line m; and K
 * more)": every finding by kind and line, bounded so a hostile input cannot
 * make a huge message. */
static int findings(mt_buf *b, const mt_guard_found *f)
{
    size_t i, shown = f->count < MT_GUARD_SHOWN ? f->count : MT_GUARD_SHOWN;

    if (f->count == 1)
        return mt_buf_printf(b, "a secret (%s, line %zu)", f->shown[0].kind, f->shown[0].line);
    if (mt_buf_printf(b, "%zu secrets (", f->count) < 0)
        return MT_ENOMEM;
    for (i = 0; i < shown; i++)
        if (mt_buf_printf(b, "%s%s, line %zu", i ? "; " : "", f->shown[i].kind, f->shown[i].line) <
            0)
            return MT_ENOMEM;
    if (f->count > shown && mt_buf_printf(b, "; and %zu more", f->count - shown) < 0)
        return MT_ENOMEM;
    return mt_buf_putc(b, ')');
}

/* The ways out: take the secret out, or (an operator's choice, so named as
 * options) keep it redacted or allow what is no secret. */
static int way_out(mt_buf *b, const mt_guard_found *f)
{
    int one = f->count == 1;

    return mt_buf_printf(b,
                         "; memory must not hold credentials. Remove %s and retry, or run memtool "
                         "with --secrets redact to store %s redacted, or --secrets-allow REGEX "
                         "for what is no secret.",
                         one ? "it" : "them", one ? "it" : "them");
}

int mt_guard_reject(mt_reply *r, mt_str path, const mt_guard_found *f)
{
    mt_buf what = MT_BUF_INIT;

    if (mt_reply_fail(r, "Error: ", path, "") < 0 || mt_buf_puts(&r->text, " would contain ") < 0 ||
        findings(&r->text, f) < 0 || way_out(&r->text, f) < 0)
        return MT_ENOMEM;
    /* The same findings for the audit log (cut short there if need be). */
    if (findings(&what, f) == 0 && what.ptr)
        snprintf(r->guard, sizeof(r->guard), "%s", what.ptr);
    mt_buf_dispose(&what);
    return 0;
}

int mt_guard_restore_error(const char *path, int64_t id, const mt_guard_found *f)
{
    mt_buf b = MT_BUF_INIT;
    int one = f->count == 1, rc;

    /* A restore cannot take the secret out of the version: store it
     * redacted, and erase the version itself from history. */
    if (mt_buf_printf(&b, "%s would contain ", path) < 0 || findings(&b, f) < 0 ||
        mt_buf_printf(&b,
                      " from version %lld; memory must not hold credentials. Run it again with "
                      "--secrets redact to store %s redacted (or --secrets-allow REGEX for what "
                      "is no secret), and memtool redact %lld to erase the version.",
                      (long long)id, one ? "it" : "them", (long long)id) < 0) {
        mt_buf_dispose(&b);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    rc = mt_error_set(MT_ESECRET, "%s", b.ptr);
    mt_buf_dispose(&b);
    return rc;
}

int mt_guard_note(mt_buf *b, const mt_guard_found *f)
{
    size_t i, shown = f->count < MT_GUARD_SHOWN ? f->count : MT_GUARD_SHOWN;

    if (f->count == 0)
        return 0;
    if (mt_buf_printf(b, " (%zu secret%s redacted: ", f->count, f->count == 1 ? "" : "s") < 0)
        return MT_ENOMEM;
    for (i = 0; i < shown; i++)
        if (mt_buf_printf(b, "%s%s on line %zu", i ? ", " : "", f->shown[i].kind,
                          f->shown[i].line) < 0)
            return MT_ENOMEM;
    if (f->count > shown && mt_buf_printf(b, " and %zu more", f->count - shown) < 0)
        return MT_ENOMEM;
    return mt_buf_putc(b, ')') < 0 ? MT_ENOMEM : 0;
}

int mt_edit_guard(mt_edit *e, char **buf, size_t *len)
{
    mt_guard g;
    int rc = mt_guard_content(&g, e->m, *buf, *len);

    if (rc < 0)
        goto fail;
    if (g.rejected) {
        e->answered = 1;
        rc = mt_guard_reject(e->r, e->path, &g.found) < 0 ? MT_ENOMEM : MT_ERROR;
        goto fail;
    }
    e->redacted = g.found;
    if (g.found.count == 0)
        return 0;
    if ((rc = mt_edit_reserve(e, g.len)) != 0)
        goto fail;
    free(*buf);
    *buf = g.data;
    *len = g.len;
    return 0;
fail:
    mt_guard_dispose(&g);
    free(*buf);
    *buf = NULL;
    return rc;
}
