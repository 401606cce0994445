/*
 * What the encryption layer tells of a store: which key each file and each
 * version is sealed with (status, each), and whether a store without a
 * record was sealed before records were kept (probe).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "contract/store_contract.h"
#include "crypt/crypt.h"
#include "crypt/crypt_layer.h"
#include "machinery/history.h"

int mt_crypt_collect_path(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    mt_crypt_paths *l = payload;
    char **grown;

    (void)size;
    if (type != MT_NODE_FILE)
        return 0;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        if (!(grown = realloc(l->paths, l->cap * sizeof(*grown))))
            return mt_error_set(MT_ENOMEM, "out of memory walking the store");
        l->paths = grown;
    }
    if (!(l->paths[l->n] = strdup(path)))
        return mt_error_set(MT_ENOMEM, "out of memory walking the store");
    l->n++;
    return 0;
}

void mt_crypt_paths_free(mt_crypt_paths *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->paths[i]);
    free(l->paths);
}

/* The first bytes of a file: its header, without reading the rest. */
typedef struct {
    unsigned char head[MT_CRYPT_HEADER + MT_CRYPT_TAG];
    size_t len;
} head_read;

static int take_head(void *payload, const char *data, size_t len, uint64_t off, int last)
{
    head_read *h = payload;
    size_t want = sizeof(h->head) - h->len;

    (void)off;
    (void)last;
    if (len > want)
        len = want;
    memcpy(h->head + h->len, data, len);
    h->len += len;
    return h->len == sizeof(h->head) ? 1 : 0;
}

/* The header of the file at rel, read without the rest of the file: 1 with
 * *hd and *size set, 0 when it has no header (written outside memtool), or
 * an error (MT_ENOTFOUND: removed meanwhile). */
int mt_crypt_file_header(mt_crypt_header *hd, uint64_t *size, mt_crypt *c, const char *rel)
{
    head_read h = {{0}, 0};
    int rc;

    if ((rc = c->inner->read(c->inner, size, rel, 0, take_head, &h)) < 0)
        return rc;
    return mt_crypt_header_read(hd, h.head, h.len, rel) == 0 ? 1 : 0;
}

/* The first memory a walk meets, looked at for a header. */
typedef struct {
    mt_store *inner;
    mt_crypt_header *h;
    char *path;
    int found; /* 1 sealed, 2 not */
} probe_walk;

#define PROBE_DONE (-1003)

static int probe_one(void *payload, const char *path, mt_node_type type, uint64_t size)
{
    probe_walk *p = payload;
    head_read h = {{0}, 0};
    uint64_t got;
    int rc;

    (void)size;
    if (type != MT_NODE_FILE)
        return 0;
    /* A file the store never reads (more than one hard link, a FIFO or a
     * device put there, a symlink), or one removed meanwhile, says nothing of
     * the store: the next one is asked. An open must not fail on what a view
     * of that one path would refuse. */
    if ((rc = p->inner->read(p->inner, &got, path, 0, take_head, &h)) < 0)
        return rc == MT_ENOTFOUND || rc == MT_EMULTILINK || rc == MT_EUNSUPPORTED ||
                       rc == MT_ESYMLINK || rc == MT_EISDIR
                   ? 0
                   : rc;
    if (mt_crypt_header_read(p->h, h.head, h.len, path) == 0)
        p->found = 1;
    else {
        p->found = 2;
        if (!(p->path = strdup(path)))
            return mt_error_set(MT_ENOMEM, "out of memory");
    }
    return PROBE_DONE;
}

int mt_crypt_probe(mt_crypt_header *h, char **path, mt_store *inner)
{
    probe_walk p = {inner, h, NULL, 0};
    int rc;

    /* Files only: asking the history would make the file store's database
     * where there is none (history off). */
    *path = NULL;
    if (inner->version >= 7 && inner->first_head) {
        char head[MT_STORE_HEAD_MAX];
        size_t len;

        if ((rc = inner->first_head(inner, head, &len, path)) <= 0)
            return rc;
        return mt_crypt_header_read(h, (const unsigned char *)head, len, *path) == 0 ? 1 : 2;
    }
    if (!inner->walk)
        return 0;
    if ((rc = inner->walk(inner, "", probe_one, &p)) < 0 && rc != PROBE_DONE) {
        free(p.path);
        return rc;
    }
    *path = p.path;
    return p.found;
}

/* The count of key id (from header hd) in out, added when new. */
static int status_key(mt_crypt_key_count **k, mt_crypt_status *out, const mt_crypt_header *hd)
{
    char id[17];
    size_t i;

    mt_crypt_hex(id, hd->key_id, MT_CRYPT_ID);
    for (i = 0; i < out->count && strcmp(out->keys[i].key_id, id) != 0; i++)
        ;
    if (i == out->count) {
        mt_crypt_key_count *grown = realloc(out->keys, (i + 1) * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory");
        out->keys = grown;
        memset(&out->keys[i], 0, sizeof(out->keys[i]));
        memcpy(out->keys[i].key_id, id, sizeof(id));
        out->keys[i].passphrase = hd->kdf == MT_CRYPT_KDF_PASS;
        out->count++;
    }
    *k = &out->keys[i];
    return 0;
}

/* How many versions a walk of the history asks for at a time. */
#define VERSIONS_PAGE 256

/* Every version the history keeps, newest first, by pages (a cursor on
 * the id, so versions recorded meanwhile are not met); fn returns 0 to go
 * on or a negative code to stop with it. */
int mt_crypt_each_version(mt_crypt *c, mt_crypt_version_fn fn, void *payload)
{
    int64_t cursor = 0;
    int rc = 0;

    for (;;) {
        mt_log_query q;
        mt_version *v = NULL;
        size_t n = 0, i;

        memset(&q, 0, sizeof(q));
        q.before_id = cursor;
        q.limit = VERSIONS_PAGE;
        if ((rc = c->inner->versions(c->inner, &v, &n, &q)) < 0)
            return rc;
        for (i = 0; rc == 0 && i < n; i++) {
            cursor = v[i].id;
            rc = fn(payload, &v[i]);
        }
        mt_versions_free(v, n);
        if (rc < 0 || n < VERSIONS_PAGE)
            return rc;
    }
}

typedef struct {
    mt_crypt *c;
    mt_crypt_status *out;
} status_walk;

static int status_version(void *payload, const mt_version *v)
{
    status_walk *w = payload;
    mt_crypt *c = w->c;
    mt_crypt_status *out = w->out;
    mt_crypt_key_count *k;
    mt_crypt_header hd;
    char *data;
    size_t len;
    int rc;

    if (v->redacted || !v->content_sha256[0])
        return 0;
    if ((rc = c->inner->version_content(c->inner, &data, &len, v->id)) < 0)
        return rc == MT_ENOTFOUND ? 0 : rc; /* pruned or redacted meanwhile */
    out->versions++;
    if (mt_crypt_header_read(&hd, (const unsigned char *)data, len, "(version)") < 0)
        out->versions_plain++;
    else if ((rc = status_key(&k, out, &hd)) == 0)
        k->versions++;
    free(data);
    return rc;
}

int mt_crypt_status_of(mt_store *st, mt_crypt_status *out)
{
    mt_crypt *c = (mt_crypt *)st;
    mt_crypt_paths l = {NULL, 0, 0};
    size_t i, k;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = c->inner->walk(c->inner, "", mt_crypt_collect_path, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++) {
        mt_crypt_key_count *kc;
        mt_crypt_header hd;
        uint64_t size;

        if ((rc = mt_crypt_file_header(&hd, &size, c, l.paths[i])) < 0) {
            if (rc == MT_ENOTFOUND)
                continue; /* removed meanwhile */
            goto done;
        }
        out->files++;
        if (rc == 0) {
            out->plain++;
            continue;
        }
        if ((rc = status_key(&kc, out, &hd)) < 0)
            goto done;
        kc->files++;
        kc->bytes += mt_crypt_minus(size, 1);
    }
    {
        status_walk w = {c, out};
        if ((rc = mt_crypt_each_version(c, status_version, &w)) < 0)
            goto done;
    }
    /* Most files first, then most versions, then by id: the same store
     * always reads the same. */
    for (i = 1; i < out->count; i++)
        for (k = i; k > 0 && (out->keys[k].files > out->keys[k - 1].files ||
                              (out->keys[k].files == out->keys[k - 1].files &&
                               (out->keys[k].versions > out->keys[k - 1].versions ||
                                (out->keys[k].versions == out->keys[k - 1].versions &&
                                 strcmp(out->keys[k].key_id, out->keys[k - 1].key_id) < 0))));
             k--) {
            mt_crypt_key_count t = out->keys[k];
            out->keys[k] = out->keys[k - 1];
            out->keys[k - 1] = t;
        }
done:
    mt_crypt_paths_free(&l);
    if (rc < 0)
        mt_crypt_status_dispose(out);
    return rc;
}

int mt_crypt_each(mt_store *st, mt_crypt_file_cb cb, void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    mt_crypt_paths l = {NULL, 0, 0};
    size_t i;
    int rc;

    if ((rc = c->inner->walk(c->inner, "", mt_crypt_collect_path, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++) {
        mt_crypt_header hd;
        uint64_t size;
        char id[17] = "";
        int sealed;

        if ((sealed = mt_crypt_file_header(&hd, &size, c, l.paths[i])) < 0) {
            if (sealed == MT_ENOTFOUND)
                continue; /* removed meanwhile */
            rc = sealed;
            goto done;
        }
        if (sealed)
            mt_crypt_hex(id, hd.key_id, MT_CRYPT_ID);
        if ((rc = cb(payload, l.paths[i], id, sealed && hd.kdf == MT_CRYPT_KDF_PASS)) != 0) {
            if (rc > 0)
                rc = mt_error_set(MT_ESTOPPED, "stopped");
            goto done;
        }
    }
done:
    mt_crypt_paths_free(&l);
    return rc;
}
