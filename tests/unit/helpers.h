/* Shared by the unit tests: scratch stores and running tool inputs. */
#ifndef MT_TEST_HELPERS_H
#define MT_TEST_HELPERS_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/types.h>

#include <memtool.h>
#include <memtool/store.h>

/* A fresh store in a new temporary directory; free with mt_test_store_free. */
typedef struct {
    char dir[256];  /* the temporary directory */
    char root[300]; /* the store root inside it */
    mt_memory *mem;
} mt_test_store;

void mt_test_store_init(mt_test_store *ts, const mt_options *opts);
void mt_test_store_free(mt_test_store *ts);

/* Run a tool input; returns the text (malloc'd) and sets *is_error. */
char *mt_test_call(mt_memory *mem, int *is_error, const char *json);

/* Run a tool input and assert its exact text and error flag. */
void mt_test_expect(mt_memory *mem, const char *json, int is_error, const char *text);

/* Run a tool input that must succeed: fails the test with its text otherwise. */
void mt_test_ok(mt_memory *mem, const char *json);

/* A memory's versions by path, newest first, at most limit (fails the test on an error). */
size_t mt_test_log(mt_version **v, mt_memory *mem, const char *path, size_t limit);

/* Create /memories/path holding text (already escaped for JSON); must succeed. */
void mt_test_create(mt_memory *mem, const char *path, const char *text);

/* The whole content of a file under the store root (malloc'd), or NULL. */
char *mt_test_read(const mt_test_store *ts, const char *rel, size_t *len);

/* The size of the store's history log of versions not yet loaded
 * (.memtool/history.log), or -1 when there is none. */
long mt_test_log_size(const mt_test_store *ts);

/* A new empty file in a scratch directory, already unlinked (the directory
 * removed too): open for reading and writing, gone when closed. */
int mt_test_temp_fd(const char *name);

/* What the store's own search finds for query beneath "" (the words of each
 * memory's first max_size bytes): its paths sorted, one a line, or "-" for
 * none (malloc'd). Fails the test when the search fails. */
char *mt_test_store_found(mt_store *st, const char *query, size_t limit, uint64_t max_size);

/* A new scratch directory $TMPDIR/memtool-NAME-XXXXXX (dir holds at least
 * 256 bytes), and its removal with everything in it (0, or -1). */
void mt_test_scratch_make(char *dir, size_t size, const char *name);
int mt_test_scratch_remove(const char *dir);

/* A start barrier for forked children: made before the forks, each child
 * waits on it (its store open, ready to act) and the parent releases them
 * all at once by closing the write end, so they start together (whether
 * their work then overlaps is for each test to show). */
typedef struct {
    int fd[2];
} mt_test_barrier;

void mt_test_barrier_make(mt_test_barrier *b);
/* In a child (no cmocka there): 0 once released, or -1. */
int mt_test_barrier_wait(mt_test_barrier *b);
/* In the parent, after the forks. */
void mt_test_barrier_release(mt_test_barrier *b);

/* Run sql (one or more statements) on the SQLite database at path, as
 * another process would, waiting up to 10 s for its lock; fails the test
 * with SQLite's message. */
void mt_test_sql_exec(const char *path, const char *sql);

/* An edit callback (mt_edit_cb) whose new content is payload, a string. */
int mt_test_replace_with(char **out, size_t *out_len, const char *data, size_t len, void *payload);

/* fork() for one of several children: when it fails, the n children forked
 * before (pids) are killed and reaped and the test fails, so that none is
 * left waiting at a barrier the failed test never releases. */
pid_t mt_test_fork(const pid_t *pids, size_t n);

/* A scratch directory holding two new key files, key and key2; free with
 * mt_test_keys_free (which removes the directory). */
typedef struct {
    char dir[256];
    char key[300], key2[300];
} mt_test_keys;

void mt_test_keys_init(mt_test_keys *s, const char *name);
void mt_test_keys_free(mt_test_keys *s);

/* The key in a key file; fails the test when it cannot be read. */
mt_crypt_key *mt_test_key_load(const char *path);

/* A change's settings for a store called directly: no limits, history on
 * or off, every version kept. */
void mt_test_store_op(mt_store_op *op, int history);

/* The contents two tenants' stores share, for tests of their counts of
 * references: in a, x.md and y.md hold "shared\n" with history and lone.md
 * "lonely\n" without; in b, x.md holds "shared\n" with history. So a's
 * "shared\n" counts 4 (two files, two versions), its "lonely\n" 1, b's 2. */
void mt_test_refs_fixture(mt_store *a, mt_store *b);

/* The prune by days on a database store, through memories: open(ctx) gives
 * a new handle of the store (each prunes at its first change, as one-shot
 * processes do), with history on and a 90-day limit; age(ctx, ms) sets
 * every version of its tenant back by ms. Each memory's versions older
 * than the cut go but its newest, also the version of a memory left alone
 * past the cut and then changed. */
void mt_test_days_prune(mt_memory *(*open)(void *ctx, const mt_options *opts),
                        void (*age)(void *ctx, int64_t ms), void *ctx);

/* The counts of references are kept by each change's own statements, never
 * recounted: after a random mix of changes, refused ones, restores,
 * redactions and prunes, on tenant "on" (history, 3 versions kept) and
 * "off" (no history), both opened by open(ctx, tenant, opts), every count
 * is the number of nodes and versions naming its content, and a content is
 * stored exactly while something names it. sql(ctx, text) is one number the
 * store's database answers, past any row security; prefix qualifies its
 * tables ("" or "memtool."). */
void mt_test_refs_mix(mt_memory *(*open)(void *ctx, const char *tenant, const mt_options *opts),
                      long long (*sql)(void *ctx, const char *text), void *ctx, const char *prefix);

#endif
