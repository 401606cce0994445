/*
 * Reading a remote store: the memories beneath a prefix (pages followed to
 * their end), one memory found by its path, and the tree the paths imply
 * (a directory exists while a memory lies beneath it).
 */
#include <stdlib.h>
#include <string.h>

#include "remote/remote_store.h"
#include "util/api_path.h"
#include "util/sha256.h"

/* The most pages one listing follows: a store holds at most 2,000
 * memories, so a server that pages on past this is refused. */
#define MAX_PAGES 4200

void mt_rmem_dispose(mt_rmem *m)
{
    free(m->id);
    free(m->path);
    free(m->content);
    free(m->version_id);
    memset(m, 0, sizeof(*m));
}

static int id_ok(const char *s, size_t max)
{
    size_t i;

    if (!s || !*s || strlen(s) > max)
        return 0;
    for (i = 0; s[i]; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
            return 0;
    return 1;
}

static int hex64_ok(const char *s)
{
    size_t i;

    if (!s || strlen(s) != 64)
        return 0;
    for (i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

/* An API path memtool can use: one the API itself would take (the rules of
 * util/api_path.h: 1 to 20 segments, NFC, no control or format character,
 * at most 1,024 bytes). A server's answer is held to them, so that no path
 * reaches a listing, the model or a migrate that memtool would refuse. */
int mt_remote_api_path_ok(const char *p, size_t len)
{
    return p && mt_memstore_path_check("a path of the server's answer", p, len) == 0;
}

int mt_rmem_parse(mt_rmem *m, const json_t *o, int want_content, const char *what)
{
    const char *id = json_string_value(json_object_get(o, "id"));
    const json_t *jp = json_object_get(o, "path"), *jc = json_object_get(o, "content");
    const char *sha = json_string_value(json_object_get(o, "content_sha256"));
    const char *ver = json_string_value(json_object_get(o, "memory_version_id"));
    const json_t *js = json_object_get(o, "content_size_bytes");
    json_int_t size = json_is_integer(js) ? json_integer_value(js) : -1;
    char got[65];

    memset(m, 0, sizeof(*m));
    if (!json_is_string(jp) ||
        !mt_remote_api_path_ok(json_string_value(jp), json_string_length(jp)))
        return mt_error_set(MT_EIO, "%s: the server answered a memory without a usable path", what);
    if (!id_ok(id, 128) || !hex64_ok(sha) || size < 0 || size > MT_REMOTE_MAX_CONTENT ||
        (ver && !id_ok(ver, 128)))
        return mt_error_set(MT_EIO,
                            "%s: the server answered a memory whose id, SHA-256 or size is not "
                            "as the API gives them",
                            what);
    memcpy(m->sha, sha, 65);
    m->size = (uint64_t)size;
    if (!(m->id = strdup(id)) || !(m->path = strdup(json_string_value(jp))) ||
        (ver && !(m->version_id = strdup(ver))))
        goto nomem;
    if (want_content && json_is_string(jc)) {
        size_t len = json_string_length(jc);
        if (len != m->size)
            goto inconsistent;
        mt_sha256_hex(got, json_string_value(jc), len);
        if (strcmp(got, m->sha) != 0)
            goto inconsistent;
        if (!(m->content = malloc(len + 1)))
            goto nomem;
        memcpy(m->content, json_string_value(jc), len + 1);
        m->has_content = 1;
    }
    return 0;
inconsistent:
    mt_rmem_dispose(m);
    return mt_error_set(MT_EIO,
                        "%s: the server answered content whose size or SHA-256 is not the one it "
                        "gave with it",
                        what);
nomem:
    mt_rmem_dispose(m);
    return mt_error_set(MT_ENOMEM, "out of memory");
}

void mt_remote_walk_init(mt_remote_walk *w, size_t max_items)
{
    memset(w, 0, sizeof(*w)); /* the cursor an empty mt_buf, as MT_BUF_INIT */
    w->max_items = max_items;
}

void mt_remote_walk_dispose(mt_remote_walk *w)
{
    mt_buf_dispose(&w->cursor);
    free(w->seen);
    memset(w, 0, sizeof(*w));
}

int mt_remote_page_get(mt_remote_store *rs, mt_remote_walk *w, json_t **page, json_t **data,
                       const char *target, const char *what, const char *not_there)
{
    json_t *o, *next;
    size_t n;
    int rc;

    *page = *data = NULL;
    if ((rc = mt_remote_get_json(&rs->http, &o, target, what, not_there ? not_there : what)) < 0)
        return rc;
    next = json_object_get(o, "next_page");
    if (!json_is_array(json_object_get(o, "data")) ||
        (next && !json_is_null(next) && !json_is_string(next))) {
        json_decref(o);
        return mt_error_set(MT_EIO, "%s: the server's page has no data array", what);
    }
    n = json_array_size(json_object_get(o, "data"));
    if (n > MT_REMOTE_PAGE_ITEMS || (w->items += n) > w->max_items) {
        json_decref(o);
        return mt_error_set(MT_EIO, "%s: the server answered %s", what,
                            n > MT_REMOTE_PAGE_ITEMS ? "a page of more items than asked for"
                                                     : "more items than a memory store holds");
    }
    *page = o;
    *data = json_object_get(o, "data");
    return 0;
}

int mt_remote_page_next(mt_remote_walk *w, const json_t *page, const char *what)
{
    const json_t *next = json_object_get(page, "next_page");
    const char *n = json_string_value(next);
    unsigned char md[32];
    size_t i;

    if (!n || !*n)
        return 0;
    if (json_string_length(next) > 4096)
        return mt_error_set(MT_EIO, "%s: the server's next_page cursor is unusable", what);
    mt_sha256_digest(md, n, json_string_length(next));
    for (i = 0; i < w->nseen; i++)
        if (memcmp(w->seen[i], md, 32) == 0)
            return mt_error_set(MT_EIO,
                                "%s: the server's next_page cursor leads back to a page already "
                                "read",
                                what);
    if (w->nseen == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 16;
        void *grown = realloc(w->seen, cap * sizeof(*w->seen));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory");
        w->seen = grown;
        w->cap = cap;
    }
    memcpy(w->seen[w->nseen++], md, 32);
    mt_buf_truncate(&w->cursor, 0);
    return mt_buf_puts(&w->cursor, n) < 0 ? MT_ENOMEM : 1;
}

int mt_remote_scan(mt_remote_store *rs, const char *prefix, int depth, int full, size_t max_pages,
                   mt_remote_item_cb cb, void *payload, int *more)
{
    mt_buf target = MT_BUF_INIT;
    mt_remote_walk w;
    size_t pages = 0;
    int rc = 0, stop = 0;

    if (more)
        *more = 0;
    /* A store holds at most 2,000 memories, and as many prefixes. */
    mt_remote_walk_init(&w, 2 * MT_REMOTE_MAX_MEMORIES);
    for (;;) {
        json_t *o, *data, *item;
        size_t i;

        mt_buf_truncate(&target, 0);
        if (mt_buf_printf(&target, "/memories?view=%s&limit=%d&depth=%d&path_prefix=",
                          full ? "full" : "basic", full ? 20 : 100, depth) < 0 ||
            mt_remote_escape(&target, prefix) < 0 ||
            (w.cursor.len &&
             (mt_buf_puts(&target, "&page=") < 0 || mt_remote_escape(&target, w.cursor.ptr) < 0))) {
            rc = MT_ENOMEM;
            break;
        }
        if ((rc = mt_remote_page_get(rs, &w, &o, &data, target.ptr, "list",
                                     "the memory store is not there (check its id, and that "
                                     "the key is the store's)")) < 0)
            break;
        json_array_foreach(data, i, item)
        {
            const char *type = json_string_value(json_object_get(item, "type"));
            mt_rmem m;
            if (type && strcmp(type, "memory_prefix") == 0) {
                const json_t *jp = json_object_get(item, "path");
                const char *p = json_string_value(jp);
                size_t n = json_string_length(jp);
                if (!p || n < 2 || p[n - 1] != '/' || !mt_remote_api_path_ok(p, n - 1) ||
                    strncmp(p, prefix, strlen(prefix)) != 0) {
                    rc = mt_error_set(MT_EIO, "list: the server answered a prefix outside %s",
                                      prefix);
                    break;
                }
                rc = cb(payload, NULL, p);
            } else if (type && strcmp(type, "memory") == 0) {
                if ((rc = mt_rmem_parse(&m, item, full, "list")) < 0)
                    break;
                if (strncmp(m.path, prefix, strlen(prefix)) != 0)
                    rc = mt_error_set(MT_EIO, "list: the server answered %.200s outside %s", m.path,
                                      prefix);
                else
                    rc = cb(payload, &m, m.path);
                mt_rmem_dispose(&m);
            } else {
                rc = mt_error_set(MT_EIO, "list: the server answered an item of unknown type");
            }
            if (rc != 0)
                break;
        }
        stop = rc != 0;
        if (rc > 0)
            rc = 0;
        if (!stop) {
            int step = mt_remote_page_next(&w, o, "list");
            if (step > 0 && ++pages >= max_pages) {
                if (more)
                    *more = 1;
                step = max_pages < MAX_PAGES
                           ? 0
                           : mt_error_set(MT_EIO, "list: the server pages on past %d pages",
                                          MAX_PAGES);
            }
            if (step < 0)
                rc = step;
            stop = step <= 0;
        }
        json_decref(o);
        if (stop || rc < 0)
            break;
    }
    mt_buf_dispose(&target);
    mt_remote_walk_dispose(&w);
    return rc;
}

int mt_remote_scan_all(mt_remote_store *rs, const char *prefix, int depth, int full,
                       mt_remote_item_cb cb, void *payload)
{
    return mt_remote_scan(rs, prefix, depth, full, MAX_PAGES, cb, payload, NULL);
}

size_t mt_remote_segments(const char *rel)
{
    size_t n = *rel ? 1 : 0;

    for (; *rel; rel++)
        n += *rel == '/';
    return n;
}

/* "/" + rel's parent + "/" (or "/"), and "/" + rel. */
int mt_remote_paths(char **parent, char **api, const char *rel)
{
    const char *slash = strrchr(rel, '/');
    size_t n = strlen(rel), plen = slash ? (size_t)(slash - rel) : 0;

    *parent = malloc(plen + 3);
    *api = malloc(n + 2);
    if (!*parent || !*api) {
        free(*parent);
        free(*api);
        *parent = *api = NULL;
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    (*parent)[0] = '/';
    memcpy(*parent + 1, rel, plen);
    if (plen)
        (*parent)[1 + plen++] = '/';
    (*parent)[1 + plen] = '\0';
    (*api)[0] = '/';
    memcpy(*api + 1, rel, n + 1);
    return 0;
}

typedef struct {
    const char *file; /* "/a/b" */
    size_t len;
    mt_rmem *out;
    int found; /* MT_NODE_FILE or MT_NODE_DIR */
    int seen;  /* the parent listed anything: it is a directory */
} find_ctx;

static int find_cb(void *payload, mt_rmem *m, const char *path)
{
    find_ctx *f = payload;

    f->seen = 1;
    if (!m) {
        if (strlen(path) == f->len + 1 && strncmp(path, f->file, f->len) == 0) {
            f->found = MT_NODE_DIR;
            return 1;
        }
        return 0;
    }
    if (strcmp(path, f->file) != 0)
        return 0;
    *f->out = *m;
    memset(m, 0, sizeof(*m)); /* taken */
    f->found = MT_NODE_FILE;
    return 1;
}

int mt_remote_memory_target(mt_buf *out, const char *id)
{
    return mt_buf_puts(out, "/memories/") < 0 || mt_remote_escape(out, id) < 0 ? MT_ENOMEM : 0;
}

int mt_remote_get(mt_remote_store *rs, mt_rmem *out, const char *id, const char *path,
                  const char *what)
{
    mt_buf target = MT_BUF_INIT;
    json_t *o;
    int rc;

    if (mt_remote_memory_target(&target, id) < 0 || mt_buf_puts(&target, "?view=full") < 0) {
        mt_buf_dispose(&target);
        return MT_ENOMEM;
    }
    rc = mt_remote_get_json(&rs->http, &o, target.ptr, what, NULL);
    mt_buf_dispose(&target);
    if (rc < 0)
        return rc;
    rc = mt_rmem_parse(out, o, 1, what);
    json_decref(o);
    if (rc == 0 && !out->has_content) {
        mt_rmem_dispose(out);
        rc = mt_error_set(MT_EIO, "%s: the server answered a memory without its content", what);
    } else if (rc == 0 && strcmp(out->id, id) != 0) {
        mt_rmem_dispose(out);
        rc = mt_error_set(MT_EIO, "%s: the server answered another memory than the one asked for",
                          what);
    } else if (rc == 0 && path && strcmp(out->path, path) != 0) {
        mt_rmem_dispose(out);
        rc = MT_ENOTFOUND; /* moved meanwhile: not at path any more */
    }
    return rc;
}

int mt_remote_find(mt_remote_store *rs, mt_rmem *out, const char *rel, int full)
{
    find_ctx f;
    char *parent = NULL, *api = NULL;
    int rc, more = 0;

    memset(out, 0, sizeof(*out));
    if (mt_remote_segments(rel) > MT_MEMSTORE_PATH_MAX_SEGMENTS)
        return MT_ENOTFOUND; /* no memory store holds such a path */
    if ((rc = mt_remote_paths(&parent, &api, rel)) < 0)
        return rc;
    f.file = api;
    f.len = strlen(api);
    f.out = out;
    f.found = 0;
    f.seen = 0;
    /* With content: the first page of the parent (20 memories) answers the
     * common case in one request; past it, the basic pages find the id and
     * one retrieve brings the content. */
    rc = mt_remote_scan(rs, parent, 1, full, full ? 1 : 4200, find_cb, &f, &more);
    if (rc == 0 && !f.found && full && more)
        rc = mt_remote_scan_all(rs, parent, 1, 0, find_cb, &f);
    if (rc == 0 && f.found == MT_NODE_FILE && full && !out->has_content) {
        char *id = out->id;
        out->id = NULL;
        mt_rmem_dispose(out);
        rc = mt_remote_get(rs, out, id, api, "read");
        free(id);
        if (rc == MT_ENOTFOUND)
            f.found = 0, rc = 0; /* deleted meanwhile */
    }
    free(parent);
    free(api);
    if (rc < 0) {
        mt_rmem_dispose(out);
        return rc;
    }
    if (!f.found && !f.seen && strchr(rel, '/')) {
        /* Nothing beneath the parent: is it a memory itself, or beneath
         * one? A file on the way is MT_ENOTDIR, as on a local store. */
        char *up = strndup(rel, (size_t)(strrchr(rel, '/') - rel));
        mt_rmem p;
        if (!up)
            return mt_error_set(MT_ENOMEM, "out of memory");
        rc = mt_remote_find(rs, &p, up, 0);
        free(up);
        mt_rmem_dispose(&p);
        if (rc == MT_NODE_FILE || rc == MT_ENOTDIR)
            return MT_ENOTDIR;
        return rc < 0 && rc != MT_ENOTFOUND ? rc : MT_ENOTFOUND;
    }
    return f.found ? f.found : MT_ENOTFOUND;
}

/* The tree: every memory beneath a prefix, and the directories they imply. */
/* Byte order of paths, '/' before every other byte: each directory just
 * before what it holds, siblings in byte order of their names. */
static int sort_key(unsigned char c)
{
    return c == 0 ? 0 : c == '/' ? 1 : c + 1;
}

static int path_cmp(const char *a, const char *b)
{
    for (; *a && *a == *b; a++, b++)
        ;
    return sort_key((unsigned char)*a) - sort_key((unsigned char)*b);
}

static int node_cmp(const void *x, const void *y)
{
    const mt_remote_node *a = x, *b = y;
    int c = path_cmp(a->path, b->path);

    return c ? c : (int)a->type - (int)b->type;
}

typedef struct {
    mt_remote_tree *t;
    size_t cap;
    size_t strip; /* bytes of the prefix's API form before the store path: 1 */
} tree_ctx;

static int tree_add(tree_ctx *c, const char *path, size_t len, mt_node_type type, uint64_t size,
                    const char *id, const char *sha)
{
    mt_remote_tree *t = c->t;
    mt_remote_node *n;

    if (t->count == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 64;
        mt_remote_node *grown = realloc(t->nodes, cap * sizeof(*grown));
        if (!grown)
            return mt_error_set(MT_ENOMEM, "out of memory");
        t->nodes = grown;
        c->cap = cap;
    }
    n = &t->nodes[t->count];
    memset(n, 0, sizeof(*n));
    if (!(n->path = strndup(path, len)) || (id && !(n->id = strdup(id))))
        goto nomem;
    n->type = type;
    n->size = size;
    n->files = type == MT_NODE_FILE;
    if (sha)
        memcpy(n->sha, sha, 65);
    t->count++;
    return 0;
nomem:
    free(n->path);
    free(n->id);
    return mt_error_set(MT_ENOMEM, "out of memory");
}

static int tree_cb(void *payload, mt_rmem *m, const char *path)
{
    tree_ctx *c = payload;
    const char *p = path + 1; /* the store path */
    const char *s;
    int rc;

    if (!m)
        return 0; /* depth 0 lists memories only */
    if (c->t->memories >= MT_REMOTE_MAX_MEMORIES * 2)
        return mt_error_set(MT_EIO, "list: the server answered more than %d memories",
                            MT_REMOTE_MAX_MEMORIES * 2);
    c->t->memories++;
    /* Each directory above it, past the listed one (deduplicated later). */
    for (s = p + c->strip; (s = strchr(s, '/')) != NULL; s++)
        if ((rc = tree_add(c, p, (size_t)(s - p), MT_NODE_DIR, 0, NULL, NULL)) < 0)
            return rc;
    return tree_add(c, p, strlen(p), MT_NODE_FILE, m->size, m->id, m->sha);
}

void mt_remote_tree_dispose(mt_remote_tree *t)
{
    size_t i;

    for (i = 0; i < t->count; i++) {
        free(t->nodes[i].path);
        free(t->nodes[i].id);
    }
    free(t->nodes);
    memset(t, 0, sizeof(*t));
}

int mt_remote_tree_load(mt_remote_store *rs, mt_remote_tree *t, const char *rel)
{
    tree_ctx c;
    mt_buf prefix = MT_BUF_INIT;
    size_t i, k, stack[64], top = 0;
    int rc;

    memset(t, 0, sizeof(*t));
    memset(&c, 0, sizeof(c));
    c.t = t;
    c.strip = *rel ? strlen(rel) + 1 : 0;
    if (mt_remote_segments(rel) >= MT_MEMSTORE_PATH_MAX_SEGMENTS)
        return 0; /* nothing can lie beneath it */
    if (mt_buf_printf(&prefix, "/%s%s", rel, *rel ? "/" : "") < 0)
        return MT_ENOMEM;
    rc = mt_remote_scan_all(rs, prefix.ptr, 0, 0, tree_cb, &c);
    mt_buf_dispose(&prefix);
    if (rc < 0) {
        mt_remote_tree_dispose(t);
        return rc;
    }
    if (t->count)
        qsort(t->nodes, t->count, sizeof(*t->nodes), node_cmp);
    /* Directories once; a path both a file and a directory's is the
     * server's fault (the API refuses overlapping paths). */
    for (i = 0, k = 0; i < t->count; i++) {
        if (k && strcmp(t->nodes[k - 1].path, t->nodes[i].path) == 0) {
            if (t->nodes[i].type != t->nodes[k - 1].type) {
                rc = mt_error_set(MT_EIO,
                                  "list: the server holds %.200s both as a memory and as a "
                                  "directory",
                                  t->nodes[i].path);
            }
            free(t->nodes[i].path);
            free(t->nodes[i].id);
            continue;
        }
        t->nodes[k++] = t->nodes[i];
    }
    t->count = k;
    if (rc < 0) {
        mt_remote_tree_dispose(t);
        return rc;
    }
    /* Sizes and counts of each directory: what lies beneath it. */
    for (i = 0; i < t->count; i++) {
        mt_remote_node *n = &t->nodes[i];
        size_t len;
        n->depth = 1;
        for (len = c.strip; n->path[len]; len++)
            n->depth += n->path[len] == '/';
        while (top) {
            const char *d = t->nodes[stack[top - 1]].path;
            size_t dl = strlen(d);
            if (strncmp(n->path, d, dl) == 0 && n->path[dl] == '/')
                break;
            top--;
        }
        if (n->type == MT_NODE_FILE) {
            for (k = 0; k < top; k++) {
                t->nodes[stack[k]].size += n->size;
                t->nodes[stack[k]].files++;
            }
            t->bytes += n->size;
            t->files++;
        } else {
            t->dirs++;
            if (top < sizeof(stack) / sizeof(stack[0]))
                stack[top++] = i;
        }
    }
    return 0;
}
