/* Adding up the regular files beneath directories, shared out to helper threads. */
#include "fs_count.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fs.h"

/* Each waiting job holds an open directory: past this many, a directory is
 * counted at once by whoever found it, which bounds the descriptors. */
#define MAX_QUEUED 64
/* Helpers start once this many directories were handed over: a small store
 * is counted sooner than a thread starts. */
#define HELPERS_AFTER 16

struct mt_fs_job {
    mt_fs_job *next;
    int fd;
    unsigned level;
    mt_fs_sum *sum;
};

int mt_fs_count_init(mt_fs_count *c)
{
    memset(c, 0, sizeof(*c));
    if (pthread_mutex_init(&c->lock, NULL) != 0)
        return mt_error_set(MT_ENOMEM, "cannot make a lock to count the store");
    if (pthread_cond_init(&c->wake, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        return mt_error_set(MT_ENOMEM, "cannot make a lock to count the store");
    }
    atomic_init(&c->files, 0);
    atomic_init(&c->dirs, 0);
    return 0;
}

static void fail(mt_fs_count *c, int err)
{
    pthread_mutex_lock(&c->lock);
    if (!c->error)
        c->error = err;
    pthread_mutex_unlock(&c->lock);
}

static void count_now(mt_fs_count *c, int fd, unsigned level, mt_fs_sum *sum)
{
    DIR *dir = fdopendir(fd);
    struct dirent *de;
    uint64_t bytes = 0, files = 0, dirs = 0;

    if (!dir) {
        fail(c, errno);
        close(fd);
        return;
    }
    for (errno = 0; (de = readdir(dir)) != NULL; errno = 0) {
        const char *name = de->d_name;
        unsigned char type = de->d_type;
        struct stat sb;

        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0')))
            continue;
        if (mt_fs_is_internal(name)) {
            if (mt_fs_is_temp(name))
                mt_fs_clean_temp(dirfd(dir), name, c->clean);
            continue;
        }
        if (type == DT_UNKNOWN || type == DT_REG) {
            if (fstatat(dirfd(dir), name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
                if (errno != ENOENT) /* ENOENT: gone meanwhile */
                    fail(c, errno);
                continue;
            }
            type = S_ISREG(sb.st_mode) ? DT_REG : S_ISDIR(sb.st_mode) ? DT_DIR : DT_UNKNOWN;
        }
        if (type == DT_REG) {
            bytes += (uint64_t)sb.st_size;
            files++;
        } else if (type == DT_DIR) {
            /* Links, FIFOs and the rest are neither followed nor counted. */
            int child;
            dirs++;
            if (level >= MT_WALK_MAX_DEPTH) {
                pthread_mutex_lock(&c->lock);
                c->too_deep = 1;
                pthread_mutex_unlock(&c->lock);
                continue;
            }
            child = mt_fs_openat(dirfd(dir), name, O_RDONLY | O_DIRECTORY, 0);
            if (child >= 0)
                mt_fs_count_dir(c, child, level + 1, sum);
            else if (child != -ENOENT)
                fail(c, -child); /* EMFILE and the like: the count would come out short */
        }
    }
    if (errno != 0)
        fail(c, errno);
    closedir(dir);
    atomic_fetch_add_explicit(&sum->counted, bytes, memory_order_relaxed);
    atomic_fetch_add_explicit(&sum->counted_files, files, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->files, files, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->dirs, dirs, memory_order_relaxed);
}

/* Take jobs until there are none and no more can come. */
static void work(mt_fs_count *c)
{
    pthread_mutex_lock(&c->lock);
    for (;;) {
        mt_fs_job *j = c->jobs;

        if (!j) {
            if (c->closing && c->busy == 0)
                break;
            pthread_cond_wait(&c->wake, &c->lock);
            continue;
        }
        c->jobs = j->next;
        c->queued--;
        c->busy++;
        pthread_mutex_unlock(&c->lock);
        count_now(c, j->fd, j->level, j->sum);
        free(j);
        pthread_mutex_lock(&c->lock);
        c->busy--;
        if (c->closing && c->busy == 0 && !c->jobs)
            pthread_cond_broadcast(&c->wake);
    }
    pthread_mutex_unlock(&c->lock);
}

static void *helper(void *arg)
{
    work(arg);
    return NULL;
}

static void start_helpers(mt_fs_count *c)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int want = cpus > 1 ? (int)(cpus - 1) : 0;
    int max = (int)(sizeof(c->helpers) / sizeof(c->helpers[0]));

    if (want > max)
        want = max;
    /* A helper that cannot start is no loss: the work waits for the others. */
    while (c->nhelpers < want && pthread_create(&c->helpers[c->nhelpers], NULL, helper, c) == 0)
        c->nhelpers++;
}

void mt_fs_count_dir(mt_fs_count *c, int fd, unsigned level, mt_fs_sum *sum)
{
    mt_fs_job *j = NULL;
    int start;

    pthread_mutex_lock(&c->lock);
    if (c->queued >= MAX_QUEUED || !(j = malloc(sizeof(*j)))) {
        pthread_mutex_unlock(&c->lock);
        count_now(c, fd, level, sum);
        return;
    }
    j->fd = fd;
    j->level = level;
    j->sum = sum;
    j->next = c->jobs;
    c->jobs = j;
    c->queued++;
    /* Exactly one push is the one that starts the helpers. */
    start = ++c->pushed == HELPERS_AFTER;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    if (start)
        start_helpers(c);
}

int mt_fs_count_finish(mt_fs_count *c)
{
    int i, err;

    pthread_mutex_lock(&c->lock);
    c->closing = 1;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->lock);
    work(c);
    for (i = 0; i < c->nhelpers; i++)
        pthread_join(c->helpers[i], NULL);
    err = c->error;
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    if (err)
        return mt_fs_error(err, "cannot count what is beneath", "");
    if (c->too_deep)
        return mt_error_set(MT_EIO,
                            "the store holds directories nested more than %d levels deep, made "
                            "outside memtool; delete that tree",
                            MT_WALK_MAX_DEPTH);
    return 0;
}
