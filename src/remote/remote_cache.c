/*
 * The remote store's content cache: what a search read of each memory, kept
 * for the life of the handle (a serve, mcp or agent process searches many
 * times) and used again only while the server's content_sha256 of the
 * memory is still the one its content was checked against. Bounded in
 * memories and bytes; past either, the least recently used goes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "remote/remote_store.h"

/* A store holds at most 2,000 memories of at most 100 kB: the bytes bound
 * keeps a cache of a full store to a fraction of that. */
#define CACHE_MEMORIES MT_REMOTE_MAX_MEMORIES
#define CACHE_BYTES    (32u << 20)

typedef struct {
    char *id;
    char sha[65];
    char *content;
    size_t size;
    uint64_t used;
} entry;

struct mt_remote_cache {
    pthread_mutex_t lock;
    entry *v;
    size_t n;
    size_t bytes;
    uint64_t tick;
};

int mt_remote_cache_new(mt_remote_cache **out)
{
    mt_remote_cache *c = calloc(1, sizeof(*c));

    *out = NULL;
    if (!c || !(c->v = calloc(CACHE_MEMORIES, sizeof(entry)))) {
        free(c);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&c->lock, NULL);
    *out = c;
    return 0;
}

static void drop(mt_remote_cache *c, size_t i)
{
    c->bytes -= c->v[i].size;
    free(c->v[i].id);
    free(c->v[i].content);
    c->v[i] = c->v[--c->n];
    memset(&c->v[c->n], 0, sizeof(entry));
}

void mt_remote_cache_free(mt_remote_cache *c)
{
    if (!c)
        return;
    while (c->n)
        drop(c, c->n - 1);
    free(c->v);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

static size_t find(const mt_remote_cache *c, const char *id)
{
    size_t i;

    for (i = 0; i < c->n; i++)
        if (strcmp(c->v[i].id, id) == 0)
            return i;
    return c->n;
}

int mt_remote_cache_get(mt_remote_cache *c, char **content, size_t *size, const char *id,
                        const char *sha)
{
    size_t i;
    int rc = 0;

    *content = NULL;
    *size = 0;
    pthread_mutex_lock(&c->lock);
    i = find(c, id);
    if (i < c->n && strcmp(c->v[i].sha, sha) == 0) {
        if (!(*content = malloc(c->v[i].size + 1))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
        } else {
            memcpy(*content, c->v[i].content, c->v[i].size + 1);
            *size = c->v[i].size;
            c->v[i].used = ++c->tick;
            rc = 1;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

int mt_remote_cache_has(mt_remote_cache *c, const char *id, const char *sha)
{
    size_t i;
    int has;

    pthread_mutex_lock(&c->lock);
    i = find(c, id);
    has = i < c->n && strcmp(c->v[i].sha, sha) == 0;
    pthread_mutex_unlock(&c->lock);
    return has;
}

void mt_remote_cache_put(mt_remote_cache *c, const mt_rmem *m)
{
    size_t i, size = (size_t)m->size;
    entry e = {0};

    /* Kept only as what the server's SHA-256 names (mt_rmem_parse checked
     * the content against it): a later match of the SHA-256 then means this
     * very content. */
    if (!m->has_content || size > CACHE_BYTES / 8)
        return;
    if (!(e.id = strdup(m->id)) || !(e.content = malloc(size + 1))) {
        free(e.id);
        return; /* a cache: a memory not kept is read again */
    }
    memcpy(e.content, m->content, size);
    e.content[size] = '\0';
    e.size = size;
    memcpy(e.sha, m->sha, sizeof(e.sha));
    pthread_mutex_lock(&c->lock);
    if ((i = find(c, m->id)) < c->n)
        drop(c, i);
    while (c->n && (c->n >= CACHE_MEMORIES || c->bytes + size > CACHE_BYTES)) {
        size_t old = 0;
        for (i = 1; i < c->n; i++)
            if (c->v[i].used < c->v[old].used)
                old = i;
        drop(c, old);
    }
    e.used = ++c->tick;
    c->v[c->n++] = e;
    c->bytes += size;
    pthread_mutex_unlock(&c->lock);
}
