/*
 * The remote store's operations over the memory-store API. Each change is
 * one request the server orders (linearizable as the server is): a create
 * never replaces (the API's path conflict), an edit writes under a
 * content_sha256 precondition and tries again on a conflict, a remove and a
 * rename carry the SHA-256 of what they read. A directory is what the paths
 * imply: it acts on every memory beneath it, one request each.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/path.h"
#include "contract/store_contract.h"
#include "remote/remote_store.h"
#include "util/api_path.h"
#include "util/sha256.h"

static mt_remote_store *R(mt_store *st)
{
    return (mt_remote_store *)st;
}

void mt_remote_nap(unsigned attempt)
{
    struct timespec ts;
    long ms;

    /* A few ms of jitter from the clock, so that racing writers part. */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ms = (5L << (attempt < 6 ? attempt : 6)) + (long)(ts.tv_nsec / 1000 % 10);
    ts.tv_sec = 0;
    ts.tv_nsec = ms * 1000000L;
    /* A signal cuts the wait short: the rest of it, still waited. */
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

/* The memory ids met, for a filter by memory: a hashed id cannot be turned
 * back. */
static mt_remote_ids memory_ids = MT_REMOTE_IDS_INIT;

/* The 64 bits of a memtool memory id ("mem_" and 16 hex digits). */
static uint64_t memory_key(const char *mid)
{
    uint64_t k = 0;
    size_t i;

    for (i = 4; i < 20 && mid[i]; i++)
        k = (k << 4) | (uint64_t)(mid[i] <= '9' ? mid[i] - '0' : mid[i] - 'a' + 10);
    return k;
}

int mt_remote_memory_api_id(char *out, size_t size, const char *mid)
{
    /* Only memtool's form has a key: anything else (a typed id) is no memory met. */
    return strlen(mid) == 20 && strncmp(mid, "mem_", 4) == 0 &&
           strspn(mid + 4, "0123456789abcdef") == 16 &&
           mt_remote_ids_get(&memory_ids, memory_key(mid), out, size);
}

void mt_remote_memory_id(char out[24], const char *api_id)
{
    size_t i, n = strlen(api_id);
    int plain = n == 20 && strncmp(api_id, "mem_", 4) == 0;
    char hex[65];

    for (i = 4; plain && i < 20; i++)
        plain = (api_id[i] >= '0' && api_id[i] <= '9') || (api_id[i] >= 'a' && api_id[i] <= 'f');
    if (plain) {
        memcpy(out, api_id, 21);
    } else {
        mt_sha256_hex(hex, api_id, n);
        memcpy(out, "mem_", 4);
        memcpy(out + 4, hex, 16);
        out[20] = '\0';
    }
    mt_remote_ids_put(&memory_ids, memory_key(out), api_id);
}

/* The API's rule for a path, in memtool's words, before any request. */
int mt_remote_rules_check(const char *rel)
{
    mt_buf api = MT_BUF_INIT;
    char why[400];
    int rc;

    if (mt_buf_printf(&api, "/%s", rel) < 0)
        return MT_ENOMEM;
    rc = mt_memstore_path_check("the path", api.ptr, api.len);
    mt_buf_dispose(&api);
    if (rc != MT_EINVAL)
        return rc;
    snprintf(why, sizeof(why), "%s", mt_error_last()->message);
    return mt_error_set(MT_EINVAL,
                        "%s (a rule of the memory-store API, which this remote store "
                        "keeps)",
                        why);
}

int mt_remote_content_check(size_t len)
{
    if (len > MT_REMOTE_MAX_CONTENT)
        return mt_error_set(MT_EINVAL,
                            "the memory would be %zu bytes, over the memory-store API's limit of "
                            "102,400 bytes a memory",
                            len);
    return 0;
}

int mt_remote_write_refused(const mt_remote_resp *r, const char *api, int *path_conflict,
                            const char *what)
{
    json_t *v = mt_remote_error_body(r);
    const json_t *e = json_object_get(v, "error");
    const char *type = json_string_value(json_object_get(e, "type")), *cp;
    int rc;
    size_t n;

    if (path_conflict)
        *path_conflict = 0;
    if (r->status == 409 && api && type && strcmp(type, "memory_path_conflict_error") == 0) {
        /* The path taken, or a memory where a directory of it would be. */
        cp = json_string_value(json_object_get(e, "conflicting_path"));
        rc = cp && (n = strlen(cp)) < strlen(api) && strncmp(api, cp, n) == 0 && api[n] == '/'
                 ? MT_ENOTDIR
                 : MT_EEXISTS;
        if (path_conflict)
            *path_conflict = 1;
    } else if (r->status == 400 || r->status == 413 || r->status == 422) {
        rc = mt_remote_fail_with(r, v, MT_EINVAL, what);
    } else if (r->status == 404) {
        rc = mt_remote_fail_with(r, v, MT_ENOTFOUND, what);
    } else if (r->status == 409 && type && strcmp(type, "memory_precondition_failed_error") == 0) {
        rc = mt_remote_fail_with(r, v, MT_ECONFLICT, what);
    } else {
        rc = mt_remote_fail_with(r, v, MT_EIO, what);
    }
    json_decref(v);
    return rc;
}

void mt_remote_note_version(mt_remote_store *rs, mt_store_op *op, const json_t *answer)
{
    const char *v = json_string_value(json_object_get(answer, "memory_version_id"));

    if (v)
        op->version = mt_remote_version_id(rs, v);
}

int mt_remote_not_a_file(void)
{
    return mt_error_set(MT_EINVAL, "an expected SHA-256 applies only to a regular file");
}

static int remote_stat(mt_store *st, mt_node_type *type, uint64_t *size, const char *path)
{
    mt_rmem m;
    int rc;

    *size = 0;
    if (!*path) {
        *type = MT_NODE_DIR;
        return 0;
    }
    if ((rc = mt_remote_find(R(st), &m, path, 0)) < 0)
        return rc == MT_ENOTFOUND || rc == MT_ENOTDIR
                   ? mt_store_path_error(rc, "cannot look at", path)
                   : rc;
    *type = (mt_node_type)rc;
    *size = rc == MT_NODE_FILE ? m.size : 0;
    mt_rmem_dispose(&m);
    return 0;
}

/* The memory at path, a file: MT_EISDIR for a directory (or the root),
 * worded as every store words it. */
static int find_file(mt_remote_store *rs, mt_rmem *m, const char *path, int full, const char *what)
{
    int rc;

    if (!*path)
        return mt_store_path_error(MT_EISDIR, what, path);
    if ((rc = mt_remote_find(rs, m, path, full)) < 0)
        return rc == MT_ENOTFOUND || rc == MT_ENOTDIR ? mt_store_path_error(rc, what, path) : rc;
    return rc == MT_NODE_DIR ? mt_store_path_error(MT_EISDIR, what, path) : 0;
}

static int remote_read(mt_store *st, uint64_t *size, const char *path, size_t whole, mt_read_cb cb,
                       void *payload)
{
    mt_rmem m;
    size_t off = 0, piece;
    int rc;

    if ((rc = find_file(R(st), &m, path, 1, "cannot read")) < 0)
        return rc;
    *size = m.size;
    piece = m.size <= whole ? m.size : MT_STORE_PIECE;
    do {
        size_t n = m.size - off < piece ? m.size - off : piece;
        rc = cb(payload, m.content + off, n, off, off + n == m.size);
        off += n;
    } while (rc == 0 && off < m.size);
    mt_rmem_dispose(&m);
    return rc < 0 ? rc : 0;
}

char *mt_remote_memory_body(const char *api, const char *data, size_t len, const char *sha,
                            int with_path, int with_content)
{
    json_t *o = json_object(), *c;
    char *s = NULL;

    if (!o)
        return NULL;
    if (with_path && json_object_set_new(o, "path", json_string(api)) < 0)
        goto done;
    if (with_content) {
        if (!(c = json_stringn(data ? data : "", len)) || json_object_set_new(o, "content", c) < 0)
            goto done;
    }
    if (sha && json_object_set_new(
                   o, "precondition",
                   json_pack("{s:s,s:s}", "type", "content_sha256", "content_sha256", sha)) < 0)
        goto done;
    s = json_dumps(o, JSON_COMPACT);
done:
    json_decref(o);
    return s;
}

static int count_cb(void *payload, mt_rmem *m, const char *path)
{
    (void)path;
    *(size_t *)payload += m != NULL;
    return 0;
}

/* rc, or the error of a store that holds the API's most memories. */
static int store_full(mt_remote_store *rs, int rc)
{
    char why[600];
    size_t n = 0;

    snprintf(why, sizeof(why), "%s", mt_error_last()->message);
    if (mt_remote_scan_all(rs, "/", 0, 0, count_cb, &n) < 0 || n < MT_REMOTE_MAX_MEMORIES) {
        mt_error_set(rc, "%s", why);
        return rc;
    }
    return mt_error_set(MT_EINVAL,
                        "the memory store holds %zu memories, the memory-store API's limit of "
                        "2,000 a store; delete or merge memories that are no longer needed",
                        n);
}

static int remote_create(mt_store *st, mt_store_op *op, const char *path, const char *data,
                         size_t len)
{
    mt_remote_store *rs = R(st);
    mt_remote_resp r;
    mt_buf what = MT_BUF_INIT;
    char *api = NULL, *parent = NULL, *body = NULL;
    json_t *o;
    int rc;

    op->version = 0;
    if (!*path)
        return mt_store_path_error(MT_EEXISTS, "cannot create", path);
    if ((rc = mt_remote_content_check(len)) < 0 || (rc = mt_remote_rules_check(path)) < 0)
        return rc;
    if ((rc = mt_remote_paths(&parent, &api, path)) < 0)
        return rc;
    if (!(body = mt_remote_memory_body(api, data, len, NULL, 1, 1))) {
        rc = mt_error_set(MT_EINVAL, "the content is not valid UTF-8: the API takes text only");
        goto done;
    }
    if (mt_buf_printf(&what, "the create of %s", api) < 0) {
        rc = MT_ENOMEM;
        goto done;
    }
    /* Never sent twice: a create carries no precondition. */
    if ((rc = mt_remote_send(&rs->http, &r, "POST", "/memories", body, MT_REMOTE_ONCE, what.ptr)) <
        0)
        goto done;
    if (r.status == 200 || r.status == 201) {
        if ((o = mt_remote_json(&r, what.ptr)) != NULL) {
            mt_remote_note_version(rs, op, o);
            json_decref(o);
        }
        rc = 0;
    } else if (r.status == 404) {
        rc = mt_remote_fail(&r, MT_EIO,
                            "the memory store is not there (check its id, and that "
                            "the key is the store's)");
    } else {
        int conflict;
        rc = mt_remote_write_refused(&r, api, &conflict, what.ptr);
        /* A refusal the API's cap of memories a store may explain: said in
         * memtool's words when the store is full (the count is known only
         * now, by one listing). */
        if (!conflict && r.status >= 400 && r.status < 500 && r.status != 401 && r.status != 404 &&
            r.status != 429)
            rc = store_full(rs, rc);
    }
    mt_remote_resp_dispose(&r);
done:
    mt_buf_dispose(&what);
    free(api);
    free(parent);
    free(body);
    return rc;
}

/* POST /memories/{id} with body; the answer's status (and r kept). */
int mt_remote_update(mt_remote_store *rs, mt_remote_resp *r, const char *id, const char *body,
                     const char *what)
{
    mt_buf target = MT_BUF_INIT;
    int rc;

    if (mt_remote_memory_target(&target, id) < 0) {
        mt_buf_dispose(&target);
        return MT_ENOMEM;
    }
    /* Safe to repeat: the precondition makes a second one a no-op or a
     * conflict, and the API answers one that finds its content in place
     * with success. */
    rc = mt_remote_send(&rs->http, r, "POST", target.ptr, body, MT_REMOTE_SAFE, what);
    mt_buf_dispose(&target);
    return rc;
}

static int remote_edit(mt_store *st, mt_store_op *op, const char *path, mt_edit_cb cb,
                       void *payload)
{
    mt_remote_store *rs = R(st);
    mt_buf what = MT_BUF_INIT;
    char sent[65] = "", sent_id[200] = "";
    unsigned attempt;
    int rc = 0;

    op->version = 0;
    if (!*path)
        return mt_store_path_error(MT_EISDIR, "cannot edit", path);
    if (mt_buf_printf(&what, "the edit of /%s", path) < 0)
        return MT_ENOMEM;
    for (attempt = 0; attempt < MT_REMOTE_EDIT_ATTEMPTS; attempt++) {
        mt_rmem m;
        mt_remote_resp r;
        char *out = NULL, *body;
        size_t out_len = 0;
        json_t *o;

        if ((rc = mt_remote_find(rs, &m, path, 1)) < 0)
            break;
        if (rc == MT_NODE_DIR) {
            rc = op->expect_sha256 ? mt_remote_not_a_file() : MT_EISDIR;
            break;
        }
        /* A write sent again after a lost answer, refused because the first
         * landed (a server need not answer a repeat with success): the memory
         * holds what was written, and the edit is not made twice. */
        if (sent[0] && strcmp(m.sha, sent) == 0 && strcmp(m.id, sent_id) == 0) {
            if (m.version_id)
                op->version = mt_remote_version_id(rs, m.version_id);
            mt_rmem_dispose(&m);
            rc = 0;
            break;
        }
        sent[0] = '\0';
        if (op->expect_sha256 && strcmp(op->expect_sha256, m.sha) != 0) {
            memcpy(op->current_sha256, m.sha, 65);
            mt_rmem_dispose(&m);
            rc = MT_ECONFLICT;
            break;
        }
        if (op->max_file_size && m.size > op->max_file_size) {
            op->refused = MT_LIMIT_FILE_SIZE;
            op->limit = op->max_file_size;
            op->held = op->would = m.size;
            mt_rmem_dispose(&m);
            rc = MT_ELIMIT;
            break;
        }
        rc = cb(&out, &out_len, m.content, m.size, payload);
        if (rc < 0) {
            mt_rmem_dispose(&m);
            free(out);
            break;
        }
        if ((rc = mt_remote_content_check(out_len)) < 0) {
            mt_rmem_dispose(&m);
            free(out);
            break;
        }
        body = mt_remote_memory_body(NULL, out, out_len, m.sha, 0, 1);
        mt_sha256_hex(sent, out, out_len);
        snprintf(sent_id, sizeof(sent_id), "%s", m.id);
        free(out);
        if (!body) {
            mt_rmem_dispose(&m);
            rc = mt_error_set(MT_EINVAL, "the new content is not valid UTF-8");
            break;
        }
        rc = mt_remote_update(rs, &r, m.id, body, what.ptr);
        free(body);
        mt_rmem_dispose(&m);
        if (rc < 0)
            break;
        if (r.status == 200) {
            const char *now;
            rc = 0;
            if ((o = mt_remote_json(&r, what.ptr)) != NULL) {
                mt_remote_note_version(rs, op, o);
                /* Moved by another client, content kept, between the read
                 * and the write: the precondition could not see it, so the
                 * edit landed at the new path. Said, not hidden. */
                now = json_string_value(json_object_get(o, "path"));
                if (now && (now[0] != '/' || strcmp(now + 1, path) != 0))
                    rc = mt_error_set(MT_EIO,
                                      "/%s was moved to %.1024s by another client while it was "
                                      "edited: the edit was made there",
                                      path, now);
                json_decref(o);
            }
            mt_remote_resp_dispose(&r);
            break;
        }
        /* Changed, moved or deleted meanwhile: read again. Only a write sent
         * more than once may have been the change itself (checked above). */
        if (r.attempts < 2)
            sent[0] = '\0';
        rc = mt_remote_write_refused(&r, NULL, NULL, what.ptr);
        mt_remote_resp_dispose(&r);
        if (rc != MT_ECONFLICT && rc != MT_ENOTFOUND)
            break;
        mt_remote_nap(attempt);
    }
    if (attempt == MT_REMOTE_EDIT_ATTEMPTS)
        rc = mt_error_set(MT_EBUSY,
                          "/%s kept changing while it was edited (%d attempts): nothing was "
                          "written; try again",
                          path, MT_REMOTE_EDIT_ATTEMPTS);
    mt_buf_dispose(&what);
    return rc;
}

int mt_remote_not_here(const char *what)
{
    return mt_error_set(MT_ENOSYS,
                        "%s is not available on a remote store (a memory store of the "
                        "memory-store API)",
                        what);
}

static int remote_list(mt_store *st, mt_store_listing *out, const char *path, unsigned depth,
                       size_t max_entries)
{
    mt_remote_tree t;
    mt_rmem m;
    size_t i, cap = 0, skip_len = 0;
    const char *skip = NULL;
    int rc;

    memset(out, 0, sizeof(*out));
    if ((rc = mt_remote_tree_load(R(st), &t, path)) < 0)
        return rc;
    if (*path && t.count == 0) {
        mt_remote_tree_dispose(&t);
        rc = mt_remote_find(R(st), &m, path, 0);
        mt_rmem_dispose(&m);
        return rc == MT_NODE_FILE ? MT_ENOTDIR : rc < 0 ? rc : MT_ENOTFOUND;
    }
    out->size = t.bytes;
    out->files = t.files;
    for (i = 0; i < t.count; i++) {
        mt_remote_node *n = &t.nodes[i];
        const char *name = strrchr(n->path, '/');
        mt_store_entry *e;

        name = name ? name + 1 : n->path;
        if (skip && strncmp(n->path, skip, skip_len) == 0 && n->path[skip_len] == '/')
            continue;
        skip = NULL;
        if (n->depth > depth || mt_path_is_hidden(name, strlen(name))) {
            skip = n->path;
            skip_len = strlen(skip);
            continue;
        }
        if (max_entries && out->count == max_entries) {
            out->more = 1;
            skip = n->path;
            skip_len = strlen(skip);
            continue;
        }
        if (out->count == cap) {
            size_t c2 = cap ? cap * 2 : 64;
            mt_store_entry *grown = realloc(out->entries, c2 * sizeof(*grown));
            if (!grown) {
                rc = mt_error_set(MT_ENOMEM, "out of memory");
                break;
            }
            out->entries = grown;
            cap = c2;
        }
        e = &out->entries[out->count];
        if (!(e->path = strdup(n->path))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            break;
        }
        e->type = n->type;
        e->depth = n->depth;
        e->size = n->size;
        e->files = n->files;
        out->count++;
    }
    mt_remote_tree_dispose(&t);
    if (rc < 0)
        mt_store_listing_dispose(out);
    return rc < 0 ? rc : 0;
}

static int remote_usage(mt_store *st, mt_store_usage *out)
{
    mt_remote_tree t;
    int rc;

    if ((rc = mt_remote_tree_load(R(st), &t, "")) < 0)
        return rc;
    out->bytes = t.bytes;
    out->files = t.files;
    out->dirs = t.dirs;
    mt_remote_tree_dispose(&t);
    return 0;
}

static int remote_walk(mt_store *st, const char *path, mt_walk_cb cb, void *payload)
{
    mt_remote_tree t;
    mt_rmem m;
    size_t i;
    int rc;

    if ((rc = mt_remote_tree_load(R(st), &t, path)) < 0)
        return rc;
    if (*path && t.count == 0) {
        mt_remote_tree_dispose(&t);
        rc = mt_remote_find(R(st), &m, path, 0);
        mt_rmem_dispose(&m);
        return rc == MT_NODE_FILE ? MT_ENOTDIR : rc < 0 ? rc : MT_ENOTFOUND;
    }
    for (i = 0; i < t.count && rc == 0; i++)
        rc = cb(payload, t.nodes[i].path, t.nodes[i].type, t.nodes[i].size);
    mt_remote_tree_dispose(&t);
    return rc;
}

static int remote_memory_id(mt_store *st, char out[24], const char *path)
{
    mt_rmem m;
    int rc;

    if ((rc = find_file(R(st), &m, path, 0, "cannot look at")) < 0)
        return rc;
    mt_remote_memory_id(out, m.id);
    mt_rmem_dispose(&m);
    return 1;
}

/* What a remote store cannot do: the API keeps no last access, no count of
 * versions, no record of encryption. */
static int remote_touch(mt_store *st, int64_t *recorded, const char *path, int64_t now_ms)
{
    (void)st;
    (void)recorded;
    (void)path;
    (void)now_ms;
    return mt_remote_not_here("recording when a memory was last viewed (for expiry)");
}

static int remote_idle(mt_store *st, const char *path, mt_idle_cb cb, void *payload)
{
    (void)st;
    (void)path;
    (void)cb;
    (void)payload;
    return mt_remote_not_here("expiry (when each memory was last used)");
}

static int remote_version_count(mt_store *st, uint64_t *out)
{
    (void)st;
    *out = 0;
    return mt_remote_not_here("counting the versions kept");
}

static int remote_control(mt_store *st, int request, void *arg)
{
    (void)st;
    (void)arg;
    (void)request;
    return mt_error_set(MT_ENOSYS, "not available on a remote store");
}

static void remote_free(mt_store *st)
{
    mt_remote_store *rs = R(st);

    if (!rs)
        return;
    mt_remote_http_dispose(&rs->http);
    mt_remote_cache_free(rs->cache);
    free(rs);
}

int mt_store_remote_open(mt_store **out, const char *url)
{
    mt_remote_store *rs;
    const char *key = getenv("MEMTOOL_API_KEY");
    char *base = NULL, *id = NULL;
    int rc;

    *out = NULL;
    if (!key || !*key)
        key = getenv("ANTHROPIC_API_KEY");
    if ((rc = mt_remote_url_parse(&base, &id, url)) < 0)
        return rc;
    if (!key || !*key) {
        free(base);
        free(id);
        return mt_error_set(MT_EINVAL, "a remote store needs an API key: set MEMTOOL_API_KEY (or "
                                       "ANTHROPIC_API_KEY)");
    }
    if (strpbrk(key, "\r\n") || strlen(key) > 1024) {
        free(base);
        free(id);
        return mt_error_set(MT_EINVAL, "the API key holds a line break or is over 1,024 bytes");
    }
    if (!(rs = calloc(1, sizeof(*rs)))) {
        free(base);
        free(id);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    /* The store's id is the base URL's last segment: nothing keeps it apart. */
    rc = mt_remote_http_init(&rs->http, base, key);
    if (rc == 0)
        rc = mt_remote_cache_new(&rs->cache);
    free(base);
    free(id);
    rs->base.version = MT_STORE_VERSION;
    rs->base.stat = remote_stat;
    rs->base.read = remote_read;
    rs->base.create = remote_create;
    rs->base.edit = remote_edit;
    rs->base.remove = mt_remote_remove;
    rs->base.rename = mt_remote_rename;
    rs->base.list = remote_list;
    rs->base.usage = remote_usage;
    rs->base.free = remote_free;
    rs->base.versions = mt_remote_versions;
    rs->base.version_get = mt_remote_version_get;
    rs->base.version_content = mt_remote_version_content;
    rs->base.redact = mt_remote_redact;
    rs->base.walk = remote_walk;
    rs->base.memory_id = remote_memory_id;
    rs->base.control = remote_control;
    rs->base.touch = remote_touch;
    rs->base.idle = remote_idle;
    rs->base.version_count = remote_version_count;
    rs->base.search = mt_remote_search;
    /* No request yet: the first command's says whether the store is there
     * (a 404 names the store), so that a view costs one request. */
    if (rc < 0) {
        remote_free(&rs->base);
        return rc;
    }
    *out = &rs->base;
    return 0;
}
