/*
 * A passphrase key used by many threads of one handle over a store whose
 * files carry more salts than the key keeps derivations of: every read
 * opens its file with the right key and gives its content, whatever the
 * other threads derive meanwhile (a derivation dropped to make room for
 * another must never be wiped or reused under a thread still decrypting
 * with it). Run under TSan and ASan too.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "crypt/crypt.h"

#define PASS    "correct horse battery"
#define SALTS   (MT_CRYPT_KEY_CACHE + 1) /* more than the key keeps */
#define THREADS 4
#define ROUNDS  2
#define HANDLES 5 /* each with a new key: its first evictions are where a thread is caught */
#define SIZE    (256 * 1024) /* long enough a decryption for others to derive meanwhile */

typedef struct {
    mt_memory *mem;
    int first;
    atomic_int *failures;
    char message[256];
} reader;

static mt_crypt_key *passphrase(void)
{
    mt_crypt_key *key = NULL;

    assert_int_equal(mt_crypt_key_from_passphrase(&key, PASS, strlen(PASS)), 0);
    return key;
}

/* File i's content: its number's letter, SIZE times. */
static char letter(int i)
{
    return (char)('a' + i);
}

/* File i written by a handle of its own, with a new key object from the
 * passphrase: a key writes new files with a fresh salt until it reads one,
 * so each file has a salt of its own, as if written by another process. */
static void write_file(const char *root, int i)
{
    mt_crypt_key *key = passphrase();
    mt_memory *m = NULL;
    size_t off = 0, cap = SIZE + 128;
    char *json = malloc(cap);
    mt_result res;

    assert_non_null(json);
    /* As a memtool before the store's record wrote them: each process with
     * a salt of its own (with the record, every process writes with its
     * salt), so the readers meet many salts. */
    mt_crypt_record_off = 1;
    assert_int_equal(mt_memory_open_encrypted(&m, root, NULL, key), 0);
    mt_crypt_record_off = 0;
    off = (size_t)snprintf(
        json, cap, "{\"command\":\"create\",\"path\":\"/memories/f%d.md\",\"file_text\":\"", i);
    memset(json + off, letter(i), SIZE);
    off += SIZE;
    off += (size_t)snprintf(json + off, cap - off, "\"}");
    assert_int_equal(mt_memory_call(&res, m, json, off), 0);
    if (res.is_error)
        fail_msg("create f%d.md: %s", i, res.text);
    free(res.text);
    free(json);
    mt_memory_free(m);
    mt_crypt_key_free(key);
}

/* The salt in file i's header (bytes 16 to 32, crypt.h). */
static void salt_of(unsigned char salt[16], const char *root, int i)
{
    unsigned char head[32];
    char path[400];
    FILE *f;

    snprintf(path, sizeof(path), "%s/f%d.md", root, i);
    assert_non_null(f = fopen(path, "rb"));
    assert_int_equal(fread(head, 1, sizeof(head), f), sizeof(head));
    fclose(f);
    memcpy(salt, head + 16, 16);
}

static int check_file(reader *r, int i)
{
    char path[64], *data = NULL;
    size_t len = 0, j;
    int rc;

    snprintf(path, sizeof(path), "/memories/f%d.md", i);
    if ((rc = mt_memory_read(&data, &len, r->mem, path)) < 0) {
        snprintf(r->message, sizeof(r->message), "%s: %s", path, mt_error_last()->message);
        return -1;
    }
    for (j = 0; j < len && data[j] == letter(i); j++)
        ;
    if (len != SIZE || j != len) {
        snprintf(r->message, sizeof(r->message), "%s: %zu bytes, byte %zu wrong", path, len, j);
        free(data);
        return -1;
    }
    free(data);
    return 0;
}

/* Every file ROUNDS times, from the thread's own first one: the threads
 * ask for different salts at once, and the key keeps missing some. */
static void *read_all(void *arg)
{
    reader *r = arg;
    int round, k;

    for (round = 0; round < ROUNDS; round++)
        for (k = 0; k < SALTS; k++)
            if (check_file(r, (r->first + k * (round + 1)) % SALTS) < 0) {
                atomic_fetch_add(r->failures, 1);
                return NULL;
            }
    return NULL;
}

static void test_many_salts_many_threads(void **state)
{
    char dir[256], root[300];
    mt_crypt_key *key;
    mt_memory *m = NULL;
    reader readers[THREADS];
    pthread_t tids[THREADS];
    atomic_int failures;
    unsigned char salts[SALTS][16];
    int h, i, j;

    (void)state;
    mt_test_scratch_make(dir, sizeof(dir), "salts");
    snprintf(root, sizeof(root), "%s/fs", dir);
    for (i = 0; i < SALTS; i++)
        write_file(root, i);
    for (i = 0; i < SALTS; i++) {
        salt_of(salts[i], root, i);
        for (j = 0; j < i; j++)
            assert_memory_not_equal(salts[i], salts[j], 16);
    }
    atomic_init(&failures, 0);
    for (h = 0; h < HANDLES; h++) {
        key = passphrase();
        assert_int_equal(mt_memory_open_encrypted(&m, root, NULL, key), 0);
        for (i = 0; i < THREADS; i++) {
            readers[i] = (reader){.mem = m, .first = i * SALTS / THREADS, .failures = &failures};
            assert_int_equal(pthread_create(&tids[i], NULL, read_all, &readers[i]), 0);
        }
        for (i = 0; i < THREADS; i++)
            assert_int_equal(pthread_join(tids[i], NULL), 0);
        for (i = 0; i < THREADS; i++)
            if (readers[i].message[0])
                print_error("handle %d, thread %d: %s\n", h, i, readers[i].message);
        mt_memory_free(m);
        mt_crypt_key_free(key);
        assert_int_equal(atomic_load(&failures), 0);
    }
    assert_int_equal(mt_test_scratch_remove(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_salts_many_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
