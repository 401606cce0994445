/*
 * Waiting for the store's flock with a bound. flock(2) has no timeout, and
 * polling it wastes the moment the lock is released (a waiter asleep while the
 * lock is free: with several processes writing, most of their time). So a
 * helper thread waits in a blocking flock for this process and hands the lock
 * over the instant it has it; the caller waits on a condition variable with a
 * deadline. A caller that gives up leaves the helper waiting: when it gets
 * the lock with no caller left, it lets it go at once.
 *
 * The lock belongs to the open file description, which the helper shares
 * (through a dup), so the caller releases it with its own descriptor. While
 * the helper is in flock, no caller may take the lock on its own: both would
 * think they owned it, and the helper's release would pull it from under the
 * caller.
 */
#include "fs/fs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

struct mt_fs_waiter {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int fd;        /* the helper's dup of the state file's descriptor */
    pid_t pid;     /* the process the helper runs in (a forked child has none) */
    int running;   /* a helper thread exists */
    int acquiring; /* the helper is in flock, or handing the lock over */
    int want;      /* a caller is waiting for the lock */
    int acquired;  /* the helper has the lock for the waiting caller */
    int closing;   /* the store is gone: end when idle */
    int error;     /* flock failed other than by being interrupted */
};

static void waiter_destroy(mt_fs_waiter *w)
{
    if (w->fd >= 0)
        close(w->fd);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

static void *helper(void *arg)
{
    mt_fs_waiter *w = arg;

    pthread_mutex_lock(&w->mu);
    for (;;) {
        int rc;

        while (!w->want && !w->closing)
            pthread_cond_wait(&w->cv, &w->mu);
        if (w->closing)
            break;
        w->acquiring = 1;
        pthread_mutex_unlock(&w->mu);
        while ((rc = flock(w->fd, LOCK_EX)) < 0 && errno == EINTR)
            ;
        pthread_mutex_lock(&w->mu);
        if (rc < 0) {
            w->error = errno;
            w->want = 0;
        } else if (w->want) {
            w->acquired = 1;
            pthread_cond_broadcast(&w->cv);
            while (w->acquired)
                pthread_cond_wait(&w->cv, &w->mu);
        } else {
            flock(w->fd, LOCK_UN); /* the caller gave up meanwhile */
        }
        w->acquiring = 0;
        pthread_cond_broadcast(&w->cv);
    }
    w->running = 0;
    pthread_mutex_unlock(&w->mu);
    /* The store was freed while this thread was in flock: it owns w now. */
    waiter_destroy(w);
    return NULL;
}

int mt_fs_waiter_new(mt_fs_waiter **out, int fd)
{
    pthread_condattr_t attr;
    mt_fs_waiter *w = calloc(1, sizeof(*w));

    *out = NULL;
    if (!w)
        return mt_error_set(MT_ENOMEM, "out of memory making the store's lock");
    w->fd = dup(fd);
    if (w->fd < 0) {
        free(w);
        return mt_error_set(MT_EIO, "cannot make the store's lock: %s", strerror(errno));
    }
    w->pid = getpid();
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &attr);
    pthread_condattr_destroy(&attr);
    *out = w;
    return 0;
}

void mt_fs_waiter_free(mt_fs_waiter *w)
{
    int running;

    if (!w)
        return;
    pthread_mutex_lock(&w->mu);
    running = w->running && w->pid == getpid();
    w->closing = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    /* A helper still in flock (someone else holds the lock for good) frees
     * w itself once flock returns; an idle one does at once. In a forked
     * child (the state file is opened anew there) there is no helper. */
    if (!running)
        waiter_destroy(w);
}

int mt_fs_lock_wait(mt_fs_waiter *w, int fd, unsigned timeout_ms)
{
    struct timespec deadline;
    int rc = 0;

    pthread_mutex_lock(&w->mu);
    /* The common case: nobody holds the lock, and no helper is in flock. */
    if (!w->acquiring) {
        if (flock(fd, LOCK_EX | LOCK_NB) == 0)
            goto done;
        if (errno != EWOULDBLOCK && errno != EINTR) {
            rc = -errno;
            goto done;
        }
    }
    if (timeout_ms == 0) {
        rc = -EWOULDBLOCK;
        goto done;
    }
    if (!w->running) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &attr, helper, w) != 0) {
            pthread_attr_destroy(&attr);
            rc = -EAGAIN;
            goto done;
        }
        pthread_attr_destroy(&attr);
        w->running = 1;
    }
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    w->error = 0;
    w->want = 1;
    pthread_cond_broadcast(&w->cv);
    while (!w->acquired && !w->error) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &deadline) == ETIMEDOUT && !w->acquired)
            break;
    }
    if (w->acquired) {
        w->acquired = 0;
        pthread_cond_broadcast(&w->cv);
    } else {
        rc = w->error ? -w->error : -EWOULDBLOCK;
    }
    w->want = 0;
done:
    pthread_mutex_unlock(&w->mu);
    return rc;
}
