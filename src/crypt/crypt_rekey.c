/*
 * Re-encryption: every file, then every version the history keeps, under a
 * new key, while other threads of the handle go on reading and writing.
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

/* A rekey under way. */
typedef struct {
    mt_crypt *c;
    mt_crypt_key *new_key;
    mt_store_op *op;
    mt_rekey_cb cb;
    void *payload;
    mt_rekey_result *res;
    int first_code; /* of the first failure */
} rekey_run;

/* A store path, malloc'd (NULL for NULL): the core names it as requests do. */
static char *path_copy(const char *rel, int *oom)
{
    char *p;

    if (!rel)
        return NULL;
    if (!(p = strdup(rel)))
        *oom = 1;
    return p;
}

/* One file or version done: counted, a failure named (the message is
 * mt_error_last()'s), and told to the caller's callback. */
static int rekey_done(rekey_run *r, mt_rekey_kind kind, const char *rel, int64_t version,
                      uint64_t done, uint64_t total, int outcome)
{
    mt_rekey_result *res = r->res;
    mt_rekey_event e;
    char *message = NULL, *path;
    int oom = 0, stop;

    path = path_copy(rel, &oom);
    if (outcome < 0) {
        if (!(message = strdup(mt_error_last()->message)))
            oom = 1;
        if (!r->first_code)
            r->first_code = outcome;
        if (kind == MT_REKEY_FILE)
            res->files_failed++;
        else
            res->versions_failed++;
    } else if (kind == MT_REKEY_FILE) {
        (*(outcome ? &res->files : &res->files_kept))++;
    } else {
        (*(outcome ? &res->versions : &res->versions_kept))++;
    }
    if (oom) {
        free(path);
        free(message);
        return mt_error_set(MT_ENOMEM, "out of memory re-encrypting the store");
    }
    e.kind = kind;
    e.path = path;
    e.version = version;
    e.done = done;
    e.total = total;
    e.outcome = outcome;
    e.message = message;
    stop = r->cb && r->cb(r->payload, &e) != 0;
    if (outcome < 0 && res->nfailures < MT_REKEY_NAMED) {
        mt_rekey_failure *grown =
            res->nfailures % 16 ? res->failures
                                : realloc(res->failures, (res->nfailures + 16) * sizeof(*grown));
        if (!grown) {
            free(path);
            free(message);
            return mt_error_set(MT_ENOMEM, "out of memory re-encrypting the store");
        }
        res->failures = grown;
        grown[res->nfailures].kind = kind;
        grown[res->nfailures].path = path;
        grown[res->nfailures].version = version;
        grown[res->nfailures].code = outcome;
        grown[res->nfailures].message = message;
        res->nfailures++;
        path = message = NULL;
    }
    free(path);
    free(message);
    if (stop)
        return mt_error_set(MT_ESTOPPED, "stopped after %llu of %llu %s", (unsigned long long)done,
                            (unsigned long long)total,
                            kind == MT_REKEY_FILE ? "files" : "versions");
    return 0;
}

/* One file: 1 re-encrypted, 0 left as it was, or why not. */
static int rekey_file(rekey_run *r, const char *rel)
{
    mt_crypt *c = r->c;
    mt_store_op *op = r->op;
    mt_crypt_edit_args a = {c, op, rel, NULL, NULL, NULL, r->new_key, 0, 0, NULL, NULL};
    char memory[24];
    mt_crypt_header hd;
    uint64_t size;
    int rc;

    /* Done by an earlier run: not even an edit. */
    if (mt_crypt_file_header(&hd, &size, c, rel) == 1 &&
        mt_crypt_key_reader(NULL, r->new_key, &hd) == 1)
        return 0;
    if ((rc = mt_crypt_memory_at(c, memory, rel)) < 0)
        return rc;
    a.memory = rc == 1 ? memory : NULL;
    {
        int keep = op->keep_access, reseal = op->reseal;
        INNER_OP(op, NULL);
        /* A re-encryption is no use of the memory: expiry sees it as idle as
         * before. Nor is it a change of content: no version; the newest,
         * which holds the file's content, takes the new bytes with it. */
        op->keep_access = 1;
        op->reseal = 1;
        rc = c->inner->edit(c->inner, op, rel, mt_crypt_edit_sealed, &a);
        op->keep_access = keep;
        op->reseal = reseal;
        INNER_DONE(op);
    }
    if (rc == MT_ENOTFOUND)
        return 0; /* removed meanwhile: nothing to re-encrypt */
    return rc < 0 ? rc : a.sealed;
}

static int rekey_files(rekey_run *r)
{
    mt_crypt_paths l = {NULL, 0, 0};
    size_t i;
    int rc;

    if ((rc = r->c->inner->walk(r->c->inner, "", mt_crypt_collect_path, &l)) < 0)
        goto done;
    for (i = 0; i < l.n; i++)
        if ((rc = rekey_done(r, MT_REKEY_FILE, l.paths[i], 0, i + 1, l.n,
                             rekey_file(r, l.paths[i]))) < 0)
            goto done;
done:
    mt_crypt_paths_free(&l);
    return rc;
}

/* Whether a version's content is under key already (a read: no lock). */
static int version_under(mt_crypt *c, int64_t id, mt_crypt_key *key, const char *rel)
{
    mt_crypt_header hd;
    char *data;
    size_t len;
    int under = 0;

    if (c->inner->version_content(c->inner, &data, &len, id) == 0) {
        under = mt_crypt_header_read(&hd, (const unsigned char *)data, len, rel) == 0 &&
                mt_crypt_key_reader(NULL, key, &hd) == 1;
        free(data);
    }
    return under;
}

/* One version: 1 re-encrypted, 0 left as it was, or why not. */
static int rekey_version(rekey_run *r, const mt_version *v)
{
    mt_crypt *c = r->c;
    size_t n = (v->path ? strlen(v->path) : 0) + 64;
    char *rel = NULL;
    mt_crypt_edit_args a = {c, r->op, NULL, NULL, NULL, NULL, r->new_key, 0, 0, NULL, NULL};
    int rc;

    if (v->redacted || !v->content_sha256[0])
        return 0;
    if (!c->inner->version_reseal)
        return mt_error_set(MT_ENOSYS,
                            "version %lld: the store cannot replace a version's content (its "
                            "interface has no version_reseal), so it keeps its key",
                            (long long)v->id);
    if (!(rel = malloc(n)))
        return mt_error_set(MT_ENOMEM, "out of memory re-encrypting the store");
    if (v->path)
        snprintf(rel, n, "(version %lld of " MT_STORE_SHOWN_ROOT "/%s, %s)", (long long)v->id,
                 v->path, v->memory_id);
    else
        snprintf(rel, n, "(version %lld of %s)", (long long)v->id, v->memory_id);
    a.rel = rel;
    /* Done by an earlier run: seen in a read, so not even the write lock
     * is taken (a run again passes every version). The reseal checks again
     * under the lock, and says what it fails on. */
    if (version_under(c, v->id, r->new_key, rel)) {
        rc = 0;
        goto done;
    }
    rc = c->inner->version_reseal(c->inner, r->op, v->id, mt_crypt_edit_sealed, &a);
    if (rc == MT_EINVAL && v->path && c->inner->catch_up) {
        /* Still the memory's current content to the history, though it
         * reads: its file was re-encrypted with history off, which the
         * history has not seen. Recorded as any change made with history
         * off is, the file's content is the current one, and this version
         * can go under the new key. */
        mt_store_op caught = *r->op;

        caught.history = 1;
        caught.expect_sha256 = NULL;
        caught.file_overhead = MT_CRYPT_OVERHEAD;
        if (c->inner->catch_up(c->inner, &caught, v->path) == 0) {
            a.sealed = a.unchanged = 0;
            rc = c->inner->version_reseal(c->inner, r->op, v->id, mt_crypt_edit_sealed, &a);
        }
    }
    if (rc == MT_ENOTFOUND)
        rc = 0; /* pruned or redacted meanwhile */
    else if (rc == MT_EINVAL)
        rc = mt_error_set(MT_EINVAL,
                          "%s is its memory's current content, which changes only with the "
                          "memory's file, and the file was not re-encrypted",
                          rel);
    else if (rc == 0)
        rc = a.sealed;
done:
    free(rel);
    return rc;
}

typedef struct {
    rekey_run *r;
    uint64_t done, total;
} versions_walk;

static int rekey_one_version(void *payload, const mt_version *v)
{
    versions_walk *w = payload;

    w->done++;
    if (w->total < w->done)
        w->total = w->done; /* recorded since the count */
    return rekey_done(w->r, MT_REKEY_VERSION, v->path, v->id, w->done, w->total,
                      rekey_version(w->r, v));
}

static int rekey_run_all(rekey_run *r, versions_walk *w);

int mt_crypt_rekey(mt_store *st, mt_rekey_result *out, mt_crypt_key *new_key, mt_store_op *op,
                   mt_rekey_cb cb, void *payload)
{
    mt_crypt *c = (mt_crypt *)st;
    rekey_run r = {c, new_key, op, cb, payload, out, 0};
    versions_walk w = {&r, 0, 0};
    mt_crypt_key *gone[ALSO_MAX + 2]; /* the oldest of `also`, the old key, all of `also` */
    unsigned ngone = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    /* Other threads of the handle go on reading and writing: what is
     * re-encrypted already they read with the new key meanwhile. */
    pthread_mutex_lock(&c->rekey_lock);
    pthread_mutex_lock(&c->keys_lock);
    if (c->nalso == ALSO_MAX) {
        unsigned i;
        gone[ngone++] = c->also[0];
        for (i = 1; i < ALSO_MAX; i++)
            c->also[i - 1] = c->also[i];
        c->nalso--;
    }
    c->also[c->nalso++] = mt_crypt_key_ref(new_key);
    /* Writes still sealing with the old key (begun before the last rekey's
     * switch; none begins with it any more) finish before the files are
     * looked at: what they wrote is then on disk for this rekey to
     * re-encrypt, before the switch below stops reading that key. Waited
     * for only at the switch, a write that ended after this rekey had
     * passed its file left it under a key no longer read. */
    while (c->writing_old)
        pthread_cond_wait(&c->keys_idle, &c->keys_lock);
    pthread_mutex_unlock(&c->keys_lock);
    rc = rekey_run_all(&r, &w);
    /* Everything is under the new key: from now on the store opens with it
     * only. Not before: a rekey stopped part way is run again with the old. */
    if (rc == 0)
        rc = mt_crypt_record_rekey(c->inner, new_key);
    pthread_mutex_lock(&c->keys_lock);
    /* Failed part way, the store is partly under the new key: the handle
     * goes on reading it (it stays among `also`) until a rekey succeeds. */
    if (rc == 0) {
        /* Everything is under the new key: write with it. The old key still
         * reads what a process that kept it wrote meanwhile, and what this
         * handle's writes begun before now seal with it (the next rekey
         * waits for them before it looks at the files). The key before
         * that is read no more: no write has used it since this rekey
         * began; nor are the keys of rekeys that failed, whose files this
         * one re-encrypted. Threads reading hold references: dropping a
         * key frees nothing they use. */
        gone[ngone++] = c->old;
        c->old = c->key;
        c->key = mt_crypt_key_ref(new_key);
        c->writing_old = c->writing_cur;
        c->writing_cur = 0;
        c->epoch++;
        while (c->nalso)
            gone[ngone++] = c->also[--c->nalso];
    }
    pthread_mutex_unlock(&c->keys_lock);
    pthread_mutex_unlock(&c->rekey_lock);
    while (ngone)
        mt_crypt_key_free(gone[--ngone]);
    return rc;
}

static int rekey_run_all(rekey_run *r, versions_walk *w)
{
    mt_crypt *c = r->c;
    mt_rekey_result *out = r->res;
    int rc;

    /* The files first: each one's re-encryption records a version under the
     * new key, and leaves the one before it to the history's turn. */
    if ((rc = rekey_files(r)) < 0)
        return rc;
    if (c->inner->version_count && c->inner->version_count(c->inner, &w->total) < 0)
        w->total = 0; /* only the progress's total */
    if ((rc = mt_crypt_each_version(c, rekey_one_version, w)) < 0)
        return rc;
    if (out->files_failed || out->versions_failed)
        return mt_error_set(
            r->first_code,
            "%llu file%s and %llu version%s could not be re-encrypted (each "
            "named with why) and still need the key they are under; the rest "
            "was. Accept that key (--old-key-file), or delete or redact what "
            "is damaged, and run rekey again",
            (unsigned long long)out->files_failed, out->files_failed == 1 ? "" : "s",
            (unsigned long long)out->versions_failed, out->versions_failed == 1 ? "" : "s");
    return 0;
}
