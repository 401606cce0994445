/*
 * The API ids a process has met, by memtool's 64-bit form of them: a hashed
 * id cannot be turned back, so a filter or a lookup by it needs the API's
 * own. A table of fixed size (a server that answers ids without end cannot
 * make it grow), looked up by the key's bits: an id pushed out is a
 * shortcut lost, found again by reading (remote_history.c).
 */
#include <stdlib.h>
#include <string.h>

#include "remote/remote_store.h"

/* Where key may sit: MT_REMOTE_IDS_PROBE slots from its home. */
static size_t home(uint64_t key)
{
    /* The keys are SHA-256 bits or small counters: mixed so that counters
     * spread too. */
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    return (size_t)(key % MT_REMOTE_IDS_SLOTS);
}

void mt_remote_ids_put(mt_remote_ids *t, uint64_t key, const char *api)
{
    size_t h = home(key), i, at = MT_REMOTE_IDS_SLOTS;
    char *copy;

    if (strlen(api) > 200 || !(copy = strdup(api)))
        return; /* only a shortcut is lost */
    pthread_mutex_lock(&t->lock);
    for (i = 0; i < MT_REMOTE_IDS_PROBE; i++) {
        size_t s = (h + i) % MT_REMOTE_IDS_SLOTS;
        if (t->slot[s].api && t->slot[s].key == key) {
            at = s; /* met before: replaced */
            break;
        }
        if (!t->slot[s].api && at == MT_REMOTE_IDS_SLOTS)
            at = s;
    }
    if (at == MT_REMOTE_IDS_SLOTS)
        at = h; /* every slot of its place taken: the home one's id goes */
    free(t->slot[at].api);
    t->slot[at].key = key;
    t->slot[at].api = copy;
    pthread_mutex_unlock(&t->lock);
}

int mt_remote_ids_get(mt_remote_ids *t, uint64_t key, char *out, size_t size)
{
    size_t h = home(key), i;
    int found = 0;

    pthread_mutex_lock(&t->lock);
    for (i = 0; i < MT_REMOTE_IDS_PROBE && !found; i++) {
        size_t s = (h + i) % MT_REMOTE_IDS_SLOTS;
        if (t->slot[s].api && t->slot[s].key == key && strlen(t->slot[s].api) < size) {
            memcpy(out, t->slot[s].api, strlen(t->slot[s].api) + 1);
            found = 1;
        }
    }
    pthread_mutex_unlock(&t->lock);
    return found;
}
