/* The API keys file of memtool server (keys.h). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <memtool.h>
#include <memtool/store.h>
#include <sodium.h>

#include "httpd/keys.h"
#include "util/path.h"
#include "util/sha256.h"

#define HEADER                                                                                     \
    "# memtool server keys: id, tenant, access, admin, created (ms), SHA-256 of the key\n"
#define ID_PREFIX  "apikey_"
#define KEY_PREFIX "mtk_"
/* Far more than any real set of keys (a line is about 130 bytes): a bound,
 * so a wrong path (a disk image) is refused, not read. */
#define FILE_MAX (16u << 20)
/* A check stat()s the file at most this often: a revoke is seen within it. */
#define RESTAT_NS 200000000LL

typedef struct {
    mt_key_info info;
    unsigned char digest[32];
} entry;

typedef struct {
    entry *v;
    size_t n;
} entry_set;

/* Which file a set was read from. A rewrite renames a new file over the old,
 * so the inode changes even within one mtime tick; ctime is there too so a
 * file refused for its mode is read again after a chmod. */
typedef struct {
    int present;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtim, ctim;
} file_id;

struct mt_keys {
    char *path;
    /* The stat and the reload, one thread at a time, and when the next is due. */
    pthread_mutex_t reload_mu;
    int64_t next_stat_ns;
    file_id id;
    /* The set: read by every check at once, replaced by a reload. */
    pthread_rwlock_t set_lock;
    entry_set set;
};

static int64_t clock_ns(clockid_t clock)
{
    struct timespec ts;

    clock_gettime(clock, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void id_of(file_id *id, const struct stat *st)
{
    id->present = 1;
    id->dev = st->st_dev;
    id->ino = st->st_ino;
    id->size = st->st_size;
    id->mtim = st->st_mtim;
    id->ctim = st->st_ctim;
}

static int id_same(const file_id *a, const file_id *b)
{
    if (a->present != b->present)
        return 0;
    return !a->present || (a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
                           a->mtim.tv_sec == b->mtim.tv_sec && a->mtim.tv_nsec == b->mtim.tv_nsec &&
                           a->ctim.tv_sec == b->ctim.tv_sec && a->ctim.tv_nsec == b->ctim.tv_nsec);
}

static void set_free(entry_set *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

int mt_keys_tenant_check(const char *tenant)
{
    size_t i, len = tenant ? strlen(tenant) : 0;
    const char *rule = NULL;
    int printable = 1;

    if (len == 0 || len > 255)
        rule = "1 to 255 bytes";
    else if (strcmp(tenant, ".") == 0 || strcmp(tenant, "..") == 0)
        rule = "not '.' or '..'";
    else if (strncmp(tenant, ".memtool", 8) == 0 || strncmp(tenant, ".mt-tmp", 7) == 0)
        rule = "not beginning with .memtool or .mt-tmp (memtool's own names)";
    for (i = 0; !rule && i < len; i++) {
        unsigned char c = (unsigned char)tenant[i];

        if (c == '/')
            rule = "without '/'";
        else if (c == '~')
            rule = "without '~'";
        else if (c < 0x20 || c == 0x7f)
            rule = "without control characters", printable = 0;
    }
    if (rule)
        return mt_error_set(MT_EINVAL,
                            "'%.100s' cannot be a key's tenant: a tenant is named like a file, %s "
                            "(e.g. alice or team-1)",
                            printable ? tenant : "(a name with control characters)", rule);
    /* The store's own rule too (valid UTF-8 among others), so a key never
     * names a tenant no store opens. */
    if (!mt_path_name_ok(tenant, len))
        return mt_error_set(MT_EINVAL,
                            "'%.100s' cannot be a key's tenant: a tenant is named like a file "
                            "(valid UTF-8, no '/', '.' or '..'; e.g. alice or team-1)",
                            tenant);
    return 0;
}

static int is_hex(const char *s, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return 0;
    return 1;
}

static int id_ok(const char *id)
{
    size_t p = sizeof(ID_PREFIX) - 1;

    return strlen(id) == p + 16 && strncmp(id, ID_PREFIX, p) == 0 && is_hex(id + p, 16);
}

/* One line, split in place at its tabs, into e. */
static int parse_line(entry *e, char *line, size_t len, const char *path, size_t lineno)
{
    char *f[6], *tab, *end = NULL;
    const char *what = NULL;
    size_t n = 0;
    long long created = -1;

    /* strchr stops at a NUL: one inside the line would hide the rest of it. */
    int nul = memchr(line, '\0', len) != NULL;

    f[n++] = line;
    while (n < 6 && (tab = strchr(line, '\t'))) {
        *tab = '\0';
        f[n++] = line = tab + 1;
    }
    if (n == 6 && f[4][0] >= '0' && f[4][0] <= '9') {
        errno = 0;
        created = strtoll(f[4], &end, 10);
        if (errno || *end)
            created = -1;
    }
    if (nul)
        what = "it holds a NUL byte";
    else if (n != 6 || strchr(f[5], '\t'))
        what = "it does not have 6 fields";
    else if (!id_ok(f[0]))
        what = "its id is not apikey_ and 16 hex digits";
    else if (mt_keys_tenant_check(f[1]) < 0)
        what = "its tenant is not a tenant's name";
    else if (strcmp(f[2], "rw") != 0 && strcmp(f[2], "ro") != 0)
        what = "its access is not rw or ro";
    else if (strcmp(f[3], "admin") != 0 && strcmp(f[3], "-") != 0)
        what = "its admin field is not admin or -";
    else if (created < 0)
        what = "its creation time is not milliseconds since 1970";
    else if (strlen(f[5]) != 64 || !is_hex(f[5], 64))
        what = "its hash is not 64 lowercase hex digits";
    if (what)
        return mt_error_set(MT_EINVAL,
                            "keys file %s, line %zu: %s; each line is id, tenant, rw|ro, admin|-, "
                            "created (ms) and the key's SHA-256, separated by tabs: fix or remove "
                            "the line",
                            path, lineno, what);
    memset(e, 0, sizeof(*e));
    snprintf(e->info.id, sizeof(e->info.id), "%s", f[0]);
    snprintf(e->info.tenant, sizeof(e->info.tenant), "%s", f[1]);
    e->info.read_only = strcmp(f[2], "ro") == 0;
    e->info.admin = strcmp(f[3], "admin") == 0;
    e->info.created_ms = (int64_t)created;
    sodium_hex2bin(e->digest, sizeof(e->digest), f[5], 64, NULL, NULL, NULL);
    return 0;
}

static int parse(entry_set *out, char *buf, size_t len, const char *path)
{
    entry_set s = {NULL, 0};
    size_t cap = 0, lineno = 0, at = 0;
    int rc = 0;

    while (at < len) {
        char *line = buf + at, *nl = memchr(line, '\n', len - at);
        size_t n = nl ? (size_t)(nl - line) : len - at;

        at += n + 1;
        lineno++;
        line[n] = '\0'; /* the '\n', or the NUL read_all put after the last byte */
        if (n == 0 || line[0] == '#')
            continue;
        if (s.n == cap) {
            entry *grown = realloc(s.v, (cap = cap ? cap * 2 : 16) * sizeof(*s.v));

            if (!grown) {
                rc = mt_error_set(MT_ENOMEM, "out of memory reading the keys file %s", path);
                goto done;
            }
            s.v = grown;
        }
        if ((rc = parse_line(&s.v[s.n], line, n, path, lineno)) < 0)
            goto done;
        s.n++;
    }
done:
    if (rc < 0)
        set_free(&s);
    *out = s;
    return rc;
}

/* Read and parse the file; a missing one is an empty set with id->present 0. */
static int load(entry_set *out, file_id *id, const char *path)
{
    struct stat st;
    char *buf = NULL;
    size_t len = 0;
    ssize_t got;
    int rc = 0, fd;

    out->v = NULL;
    out->n = 0;
    memset(id, 0, sizeof(*id));
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
        if (errno == ENOENT)
            return 0;
        return mt_error_set(MT_EIO, "cannot open the keys file %s: %s", path, strerror(errno));
    }
    if (fstat(fd, &st) < 0) {
        rc = mt_error_set(MT_EIO, "cannot stat the keys file %s: %s", path, strerror(errno));
        goto done;
    }
    id_of(id, &st);
    if (!S_ISREG(st.st_mode)) {
        rc = mt_error_set(MT_EINVAL, "the keys file %s is not a regular file: name a file", path);
        goto done;
    }
    /* The digests are no keys, but who may read them may try keys against
     * them offline, and who may write them may add a key of their own. */
    if (st.st_mode & 077) {
        rc = mt_error_set(MT_EINVAL,
                          "the keys file %s may be read or written by others (mode %04o): make "
                          "it private: chmod 600 %s",
                          path, (unsigned)(st.st_mode & 07777), path);
        goto done;
    }
    if (!(buf = malloc(FILE_MAX + 1))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory reading the keys file %s", path);
        goto done;
    }
    while (len <= FILE_MAX) {
        got = read(fd, buf + len, FILE_MAX + 1 - len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            rc = mt_error_set(MT_EIO, "cannot read the keys file %s: %s", path, strerror(errno));
            goto done;
        }
        if (got == 0)
            break;
        len += (size_t)got;
    }
    if (len > FILE_MAX) {
        rc = mt_error_set(MT_ELIMIT, "the keys file %s is over %u MiB: is it the keys file?", path,
                          FILE_MAX >> 20);
        goto done;
    }
    buf[len] = '\0';
    rc = parse(out, buf, len, path);
done:
    free(buf);
    close(fd);
    return rc;
}

int mt_keys_open(mt_keys **out, const char *path)
{
    mt_keys *k = calloc(1, sizeof(*k));
    int rc;

    *out = NULL;
    if (!k || !(k->path = strdup(path))) {
        free(k);
        return mt_error_set(MT_ENOMEM, "out of memory opening the keys file");
    }
    pthread_mutex_init(&k->reload_mu, NULL);
    pthread_rwlock_init(&k->set_lock, NULL);
    if ((rc = load(&k->set, &k->id, path)) < 0) {
        mt_keys_free(k);
        return rc;
    }
    k->next_stat_ns = clock_ns(CLOCK_MONOTONIC) + RESTAT_NS;
    *out = k;
    return 0;
}

void mt_keys_free(mt_keys *k)
{
    if (!k)
        return;
    set_free(&k->set);
    pthread_rwlock_destroy(&k->set_lock);
    pthread_mutex_destroy(&k->reload_mu);
    free(k->path);
    free(k);
}

/* Reload the set when the file changed, at most every RESTAT_NS. */
static void refresh(mt_keys *k)
{
    struct stat st;
    file_id now = {0}, loaded;
    entry_set fresh, old;
    int64_t t = clock_ns(CLOCK_MONOTONIC);

    pthread_mutex_lock(&k->reload_mu);
    if (t < k->next_stat_ns)
        goto done;
    k->next_stat_ns = t + RESTAT_NS;
    if (stat(k->path, &st) == 0)
        id_of(&now, &st);
    else if (errno != ENOENT && errno != ENOTDIR)
        goto done; /* the file may still be there: keep what was read */
    if (id_same(&now, &k->id))
        goto done;
    if (load(&fresh, &loaded, k->path) < 0) {
        /* A file half edited by hand: its keys before stand until it parses;
         * remembering it spares parsing it again every 200 ms. */
        k->id = now;
        goto done;
    }
    pthread_rwlock_wrlock(&k->set_lock);
    old = k->set;
    k->set = fresh;
    pthread_rwlock_unlock(&k->set_lock);
    k->id = loaded;
    set_free(&old);
done:
    pthread_mutex_unlock(&k->reload_mu);
}

int mt_keys_check(mt_key_info *out, mt_keys *k, const char *key, size_t len)
{
    unsigned char digest[32];
    size_t i, match = 0, mask;
    unsigned eq, found = 0;

    refresh(k);
    mt_sha256_digest(digest, key ? key : "", key ? len : 0);
    pthread_rwlock_rdlock(&k->set_lock);
    /* Every entry, and no branch on a comparison: how long a check takes
     * tells nothing of which digest came close. */
    for (i = 0; i < k->set.n; i++) {
        eq = (unsigned)(sodium_memcmp(digest, k->set.v[i].digest, sizeof(digest)) == 0);
        mask = (size_t)0 - eq;
        match = (match & ~mask) | (i & mask);
        found |= eq;
    }
    if (found)
        *out = k->set.v[match].info;
    pthread_rwlock_unlock(&k->set_lock);
    return found ? 0 : mt_error_set(MT_ENOTFOUND, "no such API key (unknown or revoked)");
}

int mt_keys_find(mt_key_info *out, mt_keys *k, const char *id)
{
    size_t i;
    int found = 0;

    refresh(k);
    pthread_rwlock_rdlock(&k->set_lock);
    for (i = 0; !found && i < k->set.n; i++)
        if (strcmp(k->set.v[i].info.id, id) == 0) {
            *out = k->set.v[i].info;
            found = 1;
        }
    pthread_rwlock_unlock(&k->set_lock);
    return found ? 0 : mt_error_set(MT_ENOTFOUND, "no such API key (revoked)");
}

/* mkdir -p of path's directory, each new one 0700: the keys are the server's
 * own, nobody else's to list. */
static int make_parent(const char *path)
{
    char *dir = strdup(path), *p;
    struct stat st;
    int rc = 0;

    if (!dir)
        return mt_error_set(MT_ENOMEM, "out of memory");
    if (!(p = strrchr(dir, '/')) || p == dir)
        goto done;
    *p = '\0';
    for (p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(dir, 0700) < 0 && errno != EEXIST &&
            !(stat(dir, &st) == 0 && S_ISDIR(st.st_mode))) {
            rc = mt_error_set(MT_EIO, "cannot make the directory %s for the keys file: %s", dir,
                              strerror(errno));
            goto done;
        }
        *p = c;
        if (!c)
            break;
    }
done:
    free(dir);
    return rc;
}

/* flock PATH.lock: writers take turns, so no added key is lost to another's
 * rewrite. A lock file beside the keys rather than the keys file itself,
 * which each rewrite replaces. */
static int lock_take(int *fd_out, const char *path, int create)
{
    char *name = NULL;
    int fd = -1, rc = 0;

    *fd_out = -1;
    if (!*path)
        return mt_error_set(MT_EINVAL, "the keys file's path is empty: name a file");
    if (create && (rc = make_parent(path)) < 0)
        return rc;
    if (asprintf(&name, "%s.lock", path) < 0)
        return mt_error_set(MT_ENOMEM, "out of memory");
    if ((fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
        rc = errno == ENOENT && !create
                 ? mt_error_set(MT_ENOTFOUND, "there is no keys file %s", path)
                 : mt_error_set(MT_EIO, "cannot open the lock file %s: %s", name, strerror(errno));
        goto done;
    }
    while (flock(fd, LOCK_EX) < 0) {
        if (errno != EINTR) {
            rc = mt_error_set(MT_EIO, "cannot lock %s: %s", name, strerror(errno));
            close(fd);
            goto done;
        }
    }
    *fd_out = fd;
done:
    free(name);
    return rc;
}

static void lock_release(int fd)
{
    if (fd >= 0)
        close(fd); /* the lock goes with the descriptor */
}

static int write_all(int fd, const char *p, size_t len)
{
    while (len) {
        ssize_t n = write(fd, p, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* The set as the file's text (malloc'd). */
static char *format(size_t *len, const entry_set *s)
{
    char *text = NULL, hex[65];
    FILE *f = open_memstream(&text, len);
    size_t i;

    if (!f)
        return NULL;
    fputs(HEADER, f);
    for (i = 0; i < s->n; i++) {
        const mt_key_info *in = &s->v[i].info;

        sodium_bin2hex(hex, sizeof(hex), s->v[i].digest, sizeof(s->v[i].digest));
        fprintf(f, "%s\t%s\t%s\t%s\t%" PRId64 "\t%s\n", in->id, in->tenant,
                in->read_only ? "ro" : "rw", in->admin ? "admin" : "-", in->created_ms, hex);
    }
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* Replace the file with the set, all or nothing: a crash leaves the old file
 * or the new one, never half of one. Called under the lock. */
static int write_atomic(const char *path, const entry_set *s)
{
    unsigned char rnd[8];
    char *tmp = NULL, *text = NULL, *dir = NULL, *slash, hex[17];
    const char *dir_name = NULL;
    size_t len;
    int fd = -1, rc = 0;

    if (!(text = format(&len, s)))
        return mt_error_set(MT_ENOMEM, "out of memory writing the keys file");
    randombytes_buf(rnd, sizeof(rnd));
    sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
    if (asprintf(&tmp, "%s.tmp.%s", path, hex) < 0) {
        tmp = NULL;
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
        rc = mt_error_set(MT_EIO, "cannot create %s: %s", tmp, strerror(errno));
        goto done;
    }
    if (fchmod(fd, 0600) < 0 || write_all(fd, text, len) < 0 || fsync(fd) < 0) {
        rc = mt_error_set(MT_EIO, "cannot write %s: %s; the keys file %s is unchanged", tmp,
                          strerror(errno), path);
        goto done;
    }
    if (close(fd) < 0) {
        fd = -1;
        rc = mt_error_set(MT_EIO, "cannot write %s: %s; the keys file %s is unchanged", tmp,
                          strerror(errno), path);
        goto done;
    }
    fd = -1;
    if (rename(tmp, path) < 0) {
        rc = mt_error_set(MT_EIO, "cannot rename %s to %s: %s; the keys file is unchanged", tmp,
                          path, strerror(errno));
        goto done;
    }
    free(tmp);
    tmp = NULL; /* renamed: nothing to remove */
    /* The rename is durable only once the directory is. */
    if (!(dir = strdup(path))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    if (!(slash = strrchr(dir, '/')))
        dir_name = ".";
    else if (slash == dir)
        dir_name = "/";
    else
        *slash = '\0';
    if ((fd = open(dir_name ? dir_name : dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 ||
        fsync(fd) < 0)
        rc = mt_error_set(MT_ENOTDURABLE,
                          "the keys file %s was written, but syncing its directory failed (%s): "
                          "a crash may undo the change",
                          path, strerror(errno));
done:
    if (fd >= 0)
        close(fd);
    if (tmp) {
        unlink(tmp);
        free(tmp);
    }
    free(dir);
    free(text);
    return rc;
}

static int id_taken(const entry_set *s, size_t n, const char *id)
{
    size_t i;

    for (i = 0; i < n; i++)
        if (strcmp(s->v[i].info.id, id) == 0)
            return 1;
    return 0;
}

int mt_keys_add(char **key_out, mt_key_info *info_out, const char *path, const char *tenant,
                int read_only, int admin)
{
    unsigned char raw[32], rnd[8];
    char key[MT_KEYS_KEY_LEN + 1], hex[17];
    entry_set s = {NULL, 0};
    entry *grown, *e;
    file_id id;
    int rc, lock = -1;

    *key_out = NULL;
    if ((rc = mt_keys_tenant_check(tenant)) < 0)
        return rc;
    if (sodium_init() < 0)
        return mt_error_set(MT_ERROR, "libsodium could not be initialised: no random bytes");
    if ((rc = lock_take(&lock, path, 1)) < 0 || (rc = load(&s, &id, path)) < 0)
        goto done;
    if (!(grown = realloc(s.v, (s.n + 1) * sizeof(*s.v)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    s.v = grown;
    e = &s.v[s.n];
    memset(e, 0, sizeof(*e));
    do {
        randombytes_buf(rnd, sizeof(rnd));
        sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
        snprintf(e->info.id, sizeof(e->info.id), ID_PREFIX "%s", hex);
    } while (id_taken(&s, s.n, e->info.id));
    snprintf(e->info.tenant, sizeof(e->info.tenant), "%s", tenant);
    e->info.read_only = !!read_only;
    e->info.admin = !!admin;
    e->info.created_ms = clock_ns(CLOCK_REALTIME) / 1000000;
    randombytes_buf(raw, sizeof(raw));
    memcpy(key, KEY_PREFIX, sizeof(KEY_PREFIX) - 1);
    sodium_bin2base64(key + sizeof(KEY_PREFIX) - 1, sizeof(key) - (sizeof(KEY_PREFIX) - 1), raw,
                      sizeof(raw), sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    mt_sha256_digest(e->digest, key, MT_KEYS_KEY_LEN);
    s.n++;
    if ((rc = write_atomic(path, &s)) < 0)
        goto done;
    if (!(*key_out = strdup(key))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory (the key %s was added: revoke it)", e->info.id);
        goto done;
    }
    if (info_out)
        *info_out = e->info;
done:
    sodium_memzero(raw, sizeof(raw));
    sodium_memzero(key, sizeof(key));
    lock_release(lock);
    set_free(&s);
    return rc;
}

int mt_keys_list(mt_key_info **out, size_t *n, const char *path)
{
    entry_set s;
    file_id id;
    size_t i;
    int rc;

    *out = NULL;
    *n = 0;
    /* No lock: a rewrite is a rename, so a reader sees a whole file. */
    if ((rc = load(&s, &id, path)) < 0 || s.n == 0)
        goto done;
    if (!(*out = malloc(s.n * sizeof(**out)))) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    for (i = 0; i < s.n; i++)
        (*out)[i] = s.v[i].info;
    *n = s.n;
done:
    set_free(&s);
    return rc;
}

int mt_keys_revoke(const char *path, const char *id)
{
    entry_set s = {NULL, 0};
    file_id fid;
    size_t i, kept = 0;
    int rc, lock = -1;

    if ((rc = lock_take(&lock, path, 0)) < 0 || (rc = load(&s, &fid, path)) < 0)
        goto done;
    for (i = 0; i < s.n; i++)
        if (strcmp(s.v[i].info.id, id) != 0)
            s.v[kept++] = s.v[i];
    if (kept == s.n) {
        rc = mt_error_set(MT_ENOTFOUND,
                          "no key has the id '%.100s' in %s: `memtool server keys list` shows "
                          "the ids",
                          id, path);
        goto done;
    }
    s.n = kept;
    rc = write_atomic(path, &s);
done:
    lock_release(lock);
    set_free(&s);
    return rc;
}

char *mt_keys_default_path(void)
{
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    char *path = NULL;
    int n;

    /* The XDG rule: a relative XDG_CONFIG_HOME is ignored. */
    if (xdg && xdg[0] == '/')
        n = asprintf(&path, "%s/memtool/keys", xdg);
    else if (home && *home)
        n = asprintf(&path, "%s/.config/memtool/keys", home);
    else {
        mt_error_set(MT_EINVAL, "no keys file: neither XDG_CONFIG_HOME nor HOME is set; name one "
                                "with --keys FILE");
        return NULL;
    }
    if (n < 0) {
        mt_error_set(MT_ENOMEM, "out of memory");
        return NULL;
    }
    return path;
}
