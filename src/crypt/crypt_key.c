/*
 * Keys for encryption at rest: a key file's 32 bytes, or a passphrase
 * turned into a key per salt by Argon2id. Key material lives in
 * sodium_malloc'd memory (guarded, mlock'd where the system allows) and is
 * wiped when freed.
 *
 * A passphrase's salt is in every file's header, not in one record of the
 * store: the layer works over any store, which has no place for a record of
 * its own that every process finds (a file store's reserved directory, a
 * SQL table), and a salt per header needs none. A process derives once per
 * salt it meets and keeps the result; it writes new files with the salt of
 * the first file it read, or a fresh one, so a store written by one process
 * costs its readers one derivation.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "crypt/crypt.h"

/* Past MT_CRYPT_KEY_CACHE salts the oldest derivation is dropped. Callers
 * get a copy of a derivation's material (and wipe it), never a pointer into
 * the cache, so dropping one frees nothing in use. */
typedef struct {
    unsigned char salt[MT_CRYPT_SALT];
    unsigned char *material; /* sodium_malloc'd */
    unsigned char id[MT_CRYPT_ID];
} derived;

struct mt_crypt_key {
    atomic_int refs;
    int passphrase;
    unsigned char *secret; /* sodium_malloc'd: the key, or the passphrase */
    size_t secret_len;
    unsigned char id[MT_CRYPT_ID]; /* a key file's */
    pthread_mutex_t lock;          /* the derivations of a passphrase */
    derived cache[MT_CRYPT_KEY_CACHE];
    size_t cached, next;
    unsigned char write_salt[MT_CRYPT_SALT];
    int have_write_salt;
    mt_crypt_key *accepted; /* keys accepted for reading, a list */
};

static const char ID_CONTEXT[] = "memtool key id v1";

void mt_crypt_id_of(unsigned char id[MT_CRYPT_ID], const unsigned char *material)
{
    crypto_generichash(id, MT_CRYPT_ID, (const unsigned char *)ID_CONTEXT, sizeof(ID_CONTEXT) - 1,
                       material, MT_CRYPT_KEY);
}

void mt_crypt_hex(char *out, const unsigned char *bytes, size_t n)
{
    sodium_bin2hex(out, n * 2 + 1, bytes, n);
}

static int key_new(mt_crypt_key **out, const unsigned char *secret, size_t len, int passphrase)
{
    mt_crypt_key *k;

    *out = NULL;
    if (sodium_init() < 0)
        return mt_error_set(MT_ERROR, "libsodium could not be initialised");
    if (!(k = calloc(1, sizeof(*k))))
        return mt_error_set(MT_ENOMEM, "out of memory");
    if (!(k->secret = sodium_malloc(len ? len : 1))) {
        free(k);
        return mt_error_set(MT_ENOMEM, "out of memory for a key");
    }
    memcpy(k->secret, secret, len);
    k->secret_len = len;
    k->passphrase = passphrase;
    atomic_init(&k->refs, 1);
    pthread_mutex_init(&k->lock, NULL);
    if (!passphrase)
        mt_crypt_id_of(k->id, k->secret);
    *out = k;
    return 0;
}

mt_crypt_key *mt_crypt_key_ref(mt_crypt_key *key)
{
    atomic_fetch_add(&key->refs, 1);
    return key;
}

int mt_crypt_key_is_passphrase(const mt_crypt_key *key)
{
    return key->passphrase;
}

void mt_crypt_key_free(mt_crypt_key *key)
{
    size_t i;

    if (!key || atomic_fetch_sub(&key->refs, 1) != 1)
        return;
    mt_crypt_key_free(key->accepted);
    for (i = 0; i < key->cached; i++)
        sodium_free(key->cache[i].material);
    sodium_free(key->secret); /* sodium_free wipes it */
    pthread_mutex_destroy(&key->lock);
    free(key);
}

static int from_hex(unsigned char out[MT_CRYPT_KEY], const char *text, size_t len)
{
    size_t got = 0;

    if (len == 65 && text[64] == '\n')
        len = 64;
    if (len != 64 || sodium_hex2bin(out, MT_CRYPT_KEY, text, len, NULL, &got, NULL) != 0 ||
        got != MT_CRYPT_KEY)
        return -1;
    return 0;
}

int mt_crypt_key_load_file(mt_crypt_key **out, const char *path)
{
    unsigned char raw[MT_CRYPT_KEY], buf[66];
    struct stat sb;
    ssize_t n;
    size_t len = 0;
    int fd = -1, rc;

    if (!out || !path || !*path)
        return mt_error_set(MT_EINVAL, "a key file needs a path");
    *out = NULL;
    if ((fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        rc = mt_error_set(errno == ENOENT ? MT_ENOTFOUND : MT_EIO,
                          "cannot open the key file %s: %s (make one with memtool key new PATH)",
                          path, strerror(errno));
        goto done;
    }
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        rc = mt_error_set(MT_EINVAL, "the key file %s is not a regular file", path);
        goto done;
    }
    if (sb.st_mode & 077) {
        rc = mt_error_set(MT_EINVAL,
                          "the key file %s may be read by others (mode %04o): run chmod 600 %s",
                          path, (unsigned)(sb.st_mode & 07777), path);
        goto done;
    }
    while (len < sizeof(buf) && (n = read(fd, buf + len, sizeof(buf) - len)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = mt_error_set(MT_EIO, "cannot read the key file %s: %s", path, strerror(errno));
            goto done;
        }
        len += (size_t)n;
    }
    if (len == MT_CRYPT_KEY)
        memcpy(raw, buf, MT_CRYPT_KEY);
    else if (from_hex(raw, (const char *)buf, len) < 0) {
        rc = mt_error_set(MT_EINVAL,
                          "the key file %s holds no key: a key file is 32 bytes, or 64 hex "
                          "digits and a newline (memtool key new PATH makes one)",
                          path);
        goto done;
    }
    rc = key_new(out, raw, MT_CRYPT_KEY, 0);
done:
    sodium_memzero(raw, sizeof(raw));
    sodium_memzero(buf, sizeof(buf));
    if (fd >= 0)
        close(fd);
    return rc;
}

int mt_crypt_key_from_passphrase(mt_crypt_key **out, const char *pass, size_t len)
{
    if (!out || !pass)
        return mt_error_set(MT_EINVAL, "a passphrase key needs a passphrase");
    *out = NULL;
    /* Argon2id makes guessing slow, not a short passphrase strong. */
    if (len < 8)
        return mt_error_set(MT_EINVAL, "a passphrase has at least 8 characters");
    return key_new(out, (const unsigned char *)pass, len, 1);
}

int mt_crypt_key_generate_file(const char *path)
{
    unsigned char raw[MT_CRYPT_KEY];
    char hex[MT_CRYPT_KEY * 2 + 2];
    size_t off = 0, len;
    int fd, rc = 0;

    if (!path || !*path)
        return mt_error_set(MT_EINVAL, "a new key file needs a path");
    if (sodium_init() < 0)
        return mt_error_set(MT_ERROR, "libsodium could not be initialised");
    if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
        return mt_error_set(errno == EEXIST ? MT_EEXISTS : MT_EIO,
                            "cannot make the key file %s: %s%s", path, strerror(errno),
                            errno == EEXIST ? " (a key file is never replaced)" : "");
    randombytes_buf(raw, sizeof(raw));
    mt_crypt_hex(hex, raw, sizeof(raw));
    len = MT_CRYPT_KEY * 2;
    hex[len++] = '\n';
    while (off < len) {
        ssize_t n = write(fd, hex + off, len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = mt_error_set(MT_EIO, "cannot write the key file %s: %s", path, strerror(errno));
            break;
        }
        off += (size_t)n;
    }
    if (rc == 0 && fsync(fd) < 0)
        rc = mt_error_set(MT_EIO, "cannot sync the key file %s: %s", path, strerror(errno));
    close(fd);
    if (rc < 0)
        unlink(path);
    sodium_memzero(raw, sizeof(raw));
    sodium_memzero(hex, sizeof(hex));
    return rc;
}

int mt_crypt_key_accept(mt_crypt_key *key, mt_crypt_key *old)
{
    mt_crypt_key **tail;

    if (!key || !old || key == old)
        return mt_error_set(MT_EINVAL, "mt_crypt_key_accept needs two keys");
    for (tail = &key->accepted; *tail; tail = &(*tail)->accepted)
        ;
    *tail = mt_crypt_key_ref(old);
    return 0;
}

void mt_crypt_key_id(char out[17], const mt_crypt_key *key)
{
    if (!key || key->passphrase)
        out[0] = '\0';
    else
        mt_crypt_hex(out, key->id, MT_CRYPT_ID);
}

/*
 * Argon2id at libsodium's INTERACTIVE limits (64 MiB, 2 passes, about 0.1 s
 * here): every one-shot `memtool call` derives once, so MODERATE's 256 MiB
 * and 0.7 s would make each call slow and heavy. The passphrase's strength
 * must come from its length.
 */
static int derive(derived **out, mt_crypt_key *key, const unsigned char salt[MT_CRYPT_SALT])
{
    unsigned char *fresh;
    derived *d;
    size_t i;

    for (i = 0; i < key->cached; i++)
        if (sodium_memcmp(key->cache[i].salt, salt, MT_CRYPT_SALT) == 0) {
            *out = &key->cache[i];
            return 0;
        }
    /* Derived aside, so a failure leaves no slot with a salt but no key. */
    if (!(fresh = sodium_malloc(MT_CRYPT_KEY)))
        return mt_error_set(MT_ENOMEM, "out of memory for a key");
    if (crypto_pwhash(fresh, MT_CRYPT_KEY, (const char *)key->secret, key->secret_len, salt,
                      crypto_pwhash_OPSLIMIT_INTERACTIVE, crypto_pwhash_MEMLIMIT_INTERACTIVE,
                      crypto_pwhash_ALG_ARGON2ID13) != 0) {
        sodium_free(fresh);
        return mt_error_set(MT_ENOMEM, "out of memory deriving a key from the passphrase "
                                       "(Argon2id needs 64 MiB)");
    }
    if (key->cached < MT_CRYPT_KEY_CACHE)
        d = &key->cache[key->cached++];
    else {
        /* No thread holds a slot's material: each copies it under the lock. */
        d = &key->cache[key->next];
        key->next = (key->next + 1) % MT_CRYPT_KEY_CACHE;
        sodium_free(d->material);
    }
    d->material = fresh;
    memcpy(d->salt, salt, MT_CRYPT_SALT);
    mt_crypt_id_of(d->id, d->material);
    *out = d;
    return 0;
}

int mt_crypt_key_writer(unsigned char material[MT_CRYPT_KEY], mt_crypt_header *h, mt_crypt_key *key,
                        const unsigned char *salt)
{
    derived *d;
    int rc;

    if (!key->passphrase) {
        memcpy(material, key->secret, MT_CRYPT_KEY);
        h->kdf = MT_CRYPT_KDF_KEY;
        memcpy(h->key_id, key->id, MT_CRYPT_ID);
        memset(h->salt, 0, MT_CRYPT_SALT);
        return 0;
    }
    pthread_mutex_lock(&key->lock);
    if (!salt) {
        if (!key->have_write_salt) {
            randombytes_buf(key->write_salt, MT_CRYPT_SALT);
            key->have_write_salt = 1;
        }
        salt = key->write_salt;
    }
    if ((rc = derive(&d, key, salt)) == 0) {
        /* A copy: another thread may drop the slot once the lock is let go. */
        memcpy(material, d->material, MT_CRYPT_KEY);
        h->kdf = MT_CRYPT_KDF_PASS;
        memcpy(h->key_id, d->id, MT_CRYPT_ID);
        memcpy(h->salt, salt, MT_CRYPT_SALT);
    }
    pthread_mutex_unlock(&key->lock);
    return rc;
}

int mt_crypt_key_reader(unsigned char *material, mt_crypt_key *key, const mt_crypt_header *h)
{
    derived *d;
    int rc;

    for (; key; key = key->accepted) {
        if (!key->passphrase) {
            if (h->kdf == MT_CRYPT_KDF_KEY && sodium_memcmp(h->key_id, key->id, MT_CRYPT_ID) == 0) {
                if (material)
                    memcpy(material, key->secret, MT_CRYPT_KEY);
                return 1;
            }
            continue;
        }
        if (h->kdf != MT_CRYPT_KDF_PASS)
            continue;
        pthread_mutex_lock(&key->lock);
        rc = derive(&d, key, h->salt);
        if (rc == 0 && sodium_memcmp(d->id, h->key_id, MT_CRYPT_ID) == 0) {
            if (material)
                memcpy(material, d->material, MT_CRYPT_KEY);
            /* New files go with the salt already derived. */
            if (!key->have_write_salt) {
                memcpy(key->write_salt, h->salt, MT_CRYPT_SALT);
                key->have_write_salt = 1;
            }
            pthread_mutex_unlock(&key->lock);
            return 1;
        }
        pthread_mutex_unlock(&key->lock);
        if (rc < 0)
            return rc;
    }
    return 0;
}
