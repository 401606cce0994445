/* One walk of the store's directories, shared out to helper threads. */
#include "fs/fs_pool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Each waiting job holds an open directory: past this many, a directory is
 * walked at once by whoever found it, which bounds the descriptors. */
#define MAX_QUEUED 64
/* Helpers start once this many directories were handed over: a small store
 * is walked sooner than a thread starts. */
#define HELPERS_AFTER 8

struct mt_fs_job {
    mt_fs_job *next;
    int fd;
    unsigned depth;
    void *dir;
};

void (*mt_fs_pool_hook)(const char *dir, const char *name);

int mt_fs_pool_init(mt_fs_pool *p, const mt_fs_walker *walker, void *payload)
{
    memset(p, 0, sizeof(*p));
    p->walker = walker;
    p->payload = payload;
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        return mt_error_set(MT_ENOMEM, "cannot make a lock to walk the store");
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->lock);
        return mt_error_set(MT_ENOMEM, "cannot make a lock to walk the store");
    }
    return 0;
}

void mt_fs_pool_fail(mt_fs_pool *p, int rc)
{
    pthread_mutex_lock(&p->lock);
    if (p->rc == 0) {
        p->rc = rc;
        snprintf(p->why, sizeof(p->why), "%s", mt_error_last()->message);
    }
    pthread_mutex_unlock(&p->lock);
}

static void leave(mt_fs_pool *p, void *dir)
{
    if (p->walker->leave)
        p->walker->leave(p->payload, dir);
}

/* errno as a failure naming the directory and, when there is one, the entry. */
static int walk_error(mt_fs_pool *p, int err, const char *at, const char *name)
{
    char where[1024];

    snprintf(where, sizeof(where), "%s%s%s", at ? at : "", at && *at && name ? "/" : "",
             name ? name : "");
    return mt_fs_error(err, p->walker->what, where);
}

static int push(mt_fs_pool *p, int fd, unsigned depth, void *dir);

static void run_dir(mt_fs_pool *p, int fd, unsigned depth, void *dir)
{
    const mt_fs_walker *w = p->walker;
    const char *at = w->path ? w->path(p->payload, dir) : NULL;
    size_t at_len = at ? strlen(at) : 0;
    struct dirent *de = NULL;
    DIR *d = NULL;
    int rc = 0;

    if (w->enter && (rc = w->enter(p->payload, dir, fd)) < 0)
        goto done;
    if (!(d = fdopendir(fd))) {
        rc = walk_error(p, errno, at, NULL);
        goto done;
    }
    fd = -1;
    for (errno = 0; (de = readdir(d)) != NULL; errno = 0) {
        const char *name = de->d_name;
        struct stat sb;
        int named, kind, child;
        void *sub;

        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
            continue;
        if (mt_fs_pool_hook)
            mt_fs_pool_hook(at, name);
        kind = mt_fs_entry(&sb, &named, dirfd(d), name, de->d_type, at_len);
        if (kind < 0) {
            rc = walk_error(p, -kind, at, name);
            break;
        }
        if (kind == MT_FS_SKIP) {
            if (w->clean >= 0 && mt_fs_is_temp(name))
                mt_fs_clean_temp(dirfd(d), name, w->clean);
            continue;
        }
        if (kind == MT_FS_OTHER || (w->memories_only && !named))
            continue;
        if (kind == MT_FS_FILE) {
            if ((rc = w->file(p->payload, dir, name, strlen(name), &sb)) < 0)
                break;
            continue;
        }
        if (depth >= MT_WALK_MAX_DEPTH) {
            rc = mt_error_set(MT_ELIMIT,
                              "%s%s%s is nested more than %d directories deep, made outside "
                              "memtool; memtool does not walk deeper (move it up or delete it, "
                              "then try again)",
                              at ? at : "", at && *at ? "/" : "", name, MT_WALK_MAX_DEPTH);
            break;
        }
        child = mt_fs_openat(dirfd(d), name, O_RDONLY | O_DIRECTORY, 0);
        if (child < 0) {
            /* Removed, or swapped for a link or a file, since it was looked
             * at: not a directory of the store any more. A walk that must
             * see everything cannot tell what took its place, so it fails. */
            if (child == -ENOENT || (!w->complete && (child == -ELOOP || child == -ENOTDIR)))
                continue;
            rc = walk_error(p, -child, at, name);
            break;
        }
        if ((rc = w->subdir(p->payload, &sub, dir, name, strlen(name))) < 0) {
            close(child);
            break;
        }
        if (push(p, child, depth + 1, sub))
            break; /* the walk failed elsewhere */
    }
    if (rc == 0 && !de && errno != 0)
        rc = walk_error(p, errno, at, NULL);
done:
    if (d)
        closedir(d);
    else
        close(fd);
    if (rc < 0)
        mt_fs_pool_fail(p, rc);
    leave(p, dir);
}

/* Take jobs until there are none and no more can come; a failed walk only drops them. */
static void work(mt_fs_pool *p)
{
    pthread_mutex_lock(&p->lock);
    for (;;) {
        mt_fs_job *j = p->jobs;
        int failed;

        if (!j) {
            if (p->closing && p->busy == 0)
                break;
            pthread_cond_wait(&p->wake, &p->lock);
            continue;
        }
        p->jobs = j->next;
        p->queued--;
        p->busy++;
        failed = p->rc < 0;
        pthread_mutex_unlock(&p->lock);
        if (failed) {
            close(j->fd);
            leave(p, j->dir);
        } else {
            run_dir(p, j->fd, j->depth, j->dir);
        }
        free(j);
        pthread_mutex_lock(&p->lock);
        p->busy--;
        if (p->closing && p->busy == 0 && !p->jobs)
            pthread_cond_broadcast(&p->wake);
    }
    pthread_mutex_unlock(&p->lock);
}

static void *helper(void *arg)
{
    work(arg);
    return NULL;
}

static void start_helpers(mt_fs_pool *p)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int want = cpus > 1 ? (int)(cpus - 1) : 0;
    int max = (int)(sizeof(p->helpers) / sizeof(p->helpers[0]));

    if (want > max)
        want = max;
    /* A helper that cannot start is no loss: the work waits for the others. */
    while (p->nhelpers < want && pthread_create(&p->helpers[p->nhelpers], NULL, helper, p) == 0)
        p->nhelpers++;
}

/* Queue the directory, or walk it now when the queue is full; 1 when the walk has failed. */
static int push(mt_fs_pool *p, int fd, unsigned depth, void *dir)
{
    mt_fs_job *j = NULL;
    int start;

    pthread_mutex_lock(&p->lock);
    if (p->rc < 0) {
        pthread_mutex_unlock(&p->lock);
        close(fd);
        leave(p, dir);
        return 1;
    }
    if (p->queued >= MAX_QUEUED || !(j = malloc(sizeof(*j)))) {
        pthread_mutex_unlock(&p->lock);
        run_dir(p, fd, depth, dir);
        return 0;
    }
    j->fd = fd;
    j->depth = depth;
    j->dir = dir;
    j->next = p->jobs;
    p->jobs = j;
    p->queued++;
    /* Exactly one push is the one that starts the helpers. */
    start = ++p->pushed == HELPERS_AFTER;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->lock);
    if (start)
        start_helpers(p);
    return 0;
}

void mt_fs_pool_start(mt_fs_pool *p)
{
    int start;

    /* as push's count would: whichever comes first starts them, once */
    pthread_mutex_lock(&p->lock);
    start = p->pushed < HELPERS_AFTER;
    if (start)
        p->pushed = HELPERS_AFTER;
    pthread_mutex_unlock(&p->lock);
    if (start)
        start_helpers(p);
}

void mt_fs_pool_dir(mt_fs_pool *p, int fd, unsigned depth, void *dir)
{
    push(p, fd, depth, dir);
}

int mt_fs_pool_finish(mt_fs_pool *p)
{
    int i, rc;

    pthread_mutex_lock(&p->lock);
    p->closing = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
    work(p);
    for (i = 0; i < p->nhelpers; i++)
        pthread_join(p->helpers[i], NULL);
    rc = p->rc;
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->lock);
    if (rc < 0)
        return mt_error_set(rc, "%s", p->why);
    return 0;
}
