/* Shared by the stress tests: scratch directories, tool calls built with
 * jansson (so any bytes can be sent), and raw looks at the store. */
#ifndef MT_STRESS_UTIL_H
#define MT_STRESS_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>
#include <memtool.h>

/* How many rounds a stress test runs: base times $MT_STRESS_SCALE (default 1). */
long st_scaled(long base);

/* A new directory under $TMPDIR (or /tmp); the caller frees the string. */
char *st_mkdtemp(const char *tag);
/* rm -rf, never following links. */
void st_rmrf(const char *path);
/* "a/b" joined; the caller frees. */
char *st_join(const char *a, const char *b);
/* mkdir -p for a test's own layout. */
void st_mkdirs(const char *path);
/* Write a whole file for a test's own layout (O_TRUNC, not atomic). */
void st_write(const char *path, const char *data, size_t len);
/* The whole content of a file (malloc'd, NUL-terminated), or NULL if it is
 * missing; *len gets its size. Reads with O_NOATIME where allowed. */
char *st_read(const char *path, size_t *len);
/* Whether a file holds exactly these bytes. */
int st_equals(const char *path, const char *data, size_t len);

/* Run one tool input (the reference to input is taken). Returns the result
 * text (malloc'd) and sets *is_error; on MT_ENOMEM returns NULL. */
char *st_call(mt_memory *mem, int *is_error, json_t *input);
/* The same, for JSON text. */
char *st_call_text(mt_memory *mem, int *is_error, const char *json);

json_t *st_view(const char *path);
json_t *st_create(const char *path, const char *text, size_t len);
json_t *st_replace(const char *path, const char *old_str, const char *new_str);
json_t *st_insert(const char *path, long line, const char *text);
json_t *st_delete(const char *path);
json_t *st_rename(const char *from, const char *to);

/* Entries named .mt-tmp.* anywhere below dir (raw, not through memtool). */
size_t st_count_temps(const char *dir);

/* Damage the store's usage counter (if there is one yet), as a test that
 * changed the store around memtool must: the next change counts it again. */
void st_forget_usage(const char *root);
/* NULL when the store's usage counter equals an independent walk of root
 * (regular files, their bytes, directories; the store's own directory and
 * temporaries left out), else what differs (malloc'd). */
char *st_usage_mismatch(mt_memory *mem, const char *root);
#define st_check_usage(mem, root)                                                                  \
    do {                                                                                           \
        char *st_why_ = st_usage_mismatch((mem), (root));                                          \
        if (st_why_)                                                                               \
            fail_msg("%s", st_why_);                                                               \
    } while (0)
/* Set the mtime of every .mt-tmp.* entry below dir `seconds` into the past. */
void st_age_temps(const char *dir, int seconds);
/* Whether a text holds a listing line or a path naming a .mt-tmp. entry. */
int st_shows_temp(const char *text);

/* A small fast PRNG for random delays and choices (not for security). */
uint64_t st_rand(uint64_t *state);

#endif
