/*
 * A view's access, recorded through the store (store.h, touch) unless the
 * store said, within the last grain, that the file was accessed recently
 * enough: then the store would write nothing, and asking it costs a view
 * most of its time (a path lookup and a stat). The handle remembers what the
 * store last said per path; whatever file is at the path later was put there
 * by a change, which counts as an access of it (at least as new as what was
 * remembered), so the remembered time stays a lower bound of the truth:
 * skipping is exactly the store's own "recorded within the grain". A time a
 * person sets back by hand (touch -d, a copy that keeps times) is not seen,
 * as SECURITY.md says of the file store's times.
 */
#include <stdlib.h>
#include <string.h>

#include "core/memory.h"

static uint64_t path_hash(size_t *len, const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    const char *p;

    for (p = s; *p; p++)
        h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    *len = (size_t)(p - s);
    return h;
}

/* The slot of set that holds rel, or NULL. */
static mt_touch_slot *find_slot(mt_touch_slot *set, uint64_t h, const char *rel, size_t len)
{
    for (size_t w = 0; w < MT_TOUCH_WAYS; w++) {
        if (set[w].path && set[w].hash == h && set[w].len == len &&
            memcmp(set[w].path, rel, len) == 0)
            return &set[w];
    }
    return NULL;
}

/* Where rel's answer goes: its own slot, an empty one, or the one whose
 * recorded time runs out of its grain first (the least use left in it). */
static mt_touch_slot *slot_for(mt_touch_slot *set, uint64_t h, const char *rel, size_t len)
{
    mt_touch_slot *s = find_slot(set, h, rel, len), *oldest = &set[0];

    if (s)
        return s;
    for (size_t w = 0; w < MT_TOUCH_WAYS; w++) {
        if (!set[w].path)
            return &set[w];
        if (set[w].recorded < oldest->recorded)
            oldest = &set[w];
    }
    return oldest;
}

void mt_memory_touch(mt_memory *m, const char *rel)
{
    int64_t now = mt_memory_now_ms(), recorded = 0;
    size_t len;
    uint64_t h = path_hash(&len, rel);
    mt_touch_slot *set = &m->touched[(h % MT_TOUCH_SETS) * MT_TOUCH_WAYS], *slot;
    char *copy;
    int fresh;

    pthread_mutex_lock(&m->touch_lock);
    slot = find_slot(set, h, rel, len);
    fresh = slot && slot->recorded >= now - MT_ACCESS_GRAIN_MS;
    pthread_mutex_unlock(&m->touch_lock);
    /* A failed touch never fails the view, and is not remembered. */
    if (fresh || !m->store->touch || m->store->touch(m->store, &recorded, rel, now) < 0)
        return;
    if (!(copy = malloc(len + 1)))
        return;
    memcpy(copy, rel, len + 1);
    /* Another thread may have filled the set meanwhile: look again. */
    pthread_mutex_lock(&m->touch_lock);
    slot = slot_for(set, h, rel, len);
    free(slot->path);
    slot->path = copy;
    slot->len = len;
    slot->hash = h;
    slot->recorded = recorded;
    pthread_mutex_unlock(&m->touch_lock);
}

void mt_memory_touch_forget(mt_memory *m)
{
    size_t i;

    for (i = 0; i < MT_TOUCH_SLOTS; i++)
        free(m->touched[i].path);
}
