/*
 * Injected faults at each step of each command.
 *
 * This program is linked with -Wl,--wrap for the calls the library makes to
 * change the disk (write, fsync, renameat, renameat2, linkat, mkdirat,
 * unlinkat, openat, openat2 through syscall(), flock) and for allocation
 * (malloc, calloc, realloc, strdup, and jansson's allocator). For every
 * command and every such function, a clean run counts the calls; then the
 * command runs again once per call with exactly that call failing. After
 * each run:
 *   - an error result starts with "Error: " and names the cause;
 *   - an error left the store exactly as it was (empty directories aside),
 *     a success left it exactly as a clean run does;
 *   - no temporary file is left anywhere in the store;
 *   - the store still works.
 * A failure prints the command, the function and which call failed.
 *
 * The same judgement then applies to hostile environments, each in a child
 * process: all file descriptors but 0..6 taken (RLIMIT_NOFILE), a read-only
 * store root (a read-only bind mount: root ignores file modes), and a full
 * disk (a 256 KiB tmpfs). The last two need a private mount namespace and
 * are skipped where one cannot be made.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "stress_util.h"

/* ---- the fault switchboard ---- */

enum {
    F_WRITE,
    F_FSYNC,
    F_RENAMEAT,
    F_RENAMEAT2,
    F_LINKAT,
    F_MKDIRAT,
    F_UNLINKAT,
    F_OPENAT,
    F_OPENAT2,
    F_FLOCK,
    F_ALLOC,
    F_COUNT
};

static const struct {
    const char *name;
    int err; /* what the failing call reports */
} fault_fn[F_COUNT] = {
    {"write", ENOSPC},   {"fsync", EIO},      {"renameat", EIO},      {"renameat2", EIO},
    {"linkat", EIO},     {"mkdirat", ENOSPC}, {"unlinkat", EIO},      {"openat", EMFILE},
    {"openat2", EMFILE}, {"flock", ENOLCK},   {"allocation", ENOMEM},
};

static int counting;              /* calls are counted (and may fail) only while set */
static long calls[F_COUNT];       /* calls seen since counting began */
static int armed = -1;            /* the function to fail, or -1 */
static long armed_at;             /* which of its calls fails (1-based) */
static int fired;                 /* the armed call happened */
static int renameat2_unsupported; /* every renameat2 says EINVAL, as on a filesystem without it */

static int fault_hit(int fn)
{
    if (!counting)
        return 0;
    calls[fn]++;
    if (fn == armed && calls[fn] == armed_at) {
        fired = 1;
        errno = fault_fn[fn].err;
        return 1;
    }
    return 0;
}

/* Prototypes for -Wmissing-prototypes: the linker sends the library's calls here. */
ssize_t __real_write(int fd, const void *buf, size_t n);
ssize_t __wrap_write(int fd, const void *buf, size_t n);
int __real_fsync(int fd);
int __wrap_fsync(int fd);
int __real_renameat(int a, const char *b, int c, const char *d);
int __wrap_renameat(int a, const char *b, int c, const char *d);
int __real_renameat2(int a, const char *b, int c, const char *d, unsigned flags);
int __wrap_renameat2(int a, const char *b, int c, const char *d, unsigned flags);
int __real_linkat(int a, const char *b, int c, const char *d, int flags);
int __wrap_linkat(int a, const char *b, int c, const char *d, int flags);
int __real_mkdirat(int fd, const char *path, mode_t mode);
int __wrap_mkdirat(int fd, const char *path, mode_t mode);
int __real_unlinkat(int fd, const char *path, int flags);
int __wrap_unlinkat(int fd, const char *path, int flags);
int __real_openat(int fd, const char *path, int flags, ...);
int __wrap_openat(int fd, const char *path, int flags, ...);
long __real_syscall(long n, ...);
long __wrap_syscall(long n, ...);
int __real_flock(int fd, int op);
int __wrap_flock(int fd, int op);
void *__real_malloc(size_t n);
void *__wrap_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__wrap_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__wrap_strdup(const char *s);

ssize_t __wrap_write(int fd, const void *buf, size_t n)
{
    return fault_hit(F_WRITE) ? -1 : __real_write(fd, buf, n);
}

int __wrap_fsync(int fd)
{
    return fault_hit(F_FSYNC) ? -1 : __real_fsync(fd);
}

int __wrap_renameat(int a, const char *b, int c, const char *d)
{
    return fault_hit(F_RENAMEAT) ? -1 : __real_renameat(a, b, c, d);
}

int __wrap_renameat2(int a, const char *b, int c, const char *d, unsigned flags)
{
    if (counting && renameat2_unsupported) {
        errno = EINVAL;
        return -1;
    }
    return fault_hit(F_RENAMEAT2) ? -1 : __real_renameat2(a, b, c, d, flags);
}

int __wrap_linkat(int a, const char *b, int c, const char *d, int flags)
{
    return fault_hit(F_LINKAT) ? -1 : __real_linkat(a, b, c, d, flags);
}

int __wrap_mkdirat(int fd, const char *path, mode_t mode)
{
    return fault_hit(F_MKDIRAT) ? -1 : __real_mkdirat(fd, path, mode);
}

int __wrap_unlinkat(int fd, const char *path, int flags)
{
    return fault_hit(F_UNLINKAT) ? -1 : __real_unlinkat(fd, path, flags);
}

int __wrap_openat(int fd, const char *path, int flags, ...)
{
    mode_t mode = 0;

    if (flags & (O_CREAT | O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = (mode_t)va_arg(ap, int);
        va_end(ap);
    }
    return fault_hit(F_OPENAT) ? -1 : __real_openat(fd, path, flags, mode);
}

/* openat2 has no libc wrapper here; the library reaches it through
 * syscall(), with four arguments. It makes no other raw system call: one
 * would need its own arguments passed on, so it stops the test instead. */
long __wrap_syscall(long n, ...)
{
    va_list ap;
    long dirfd, path, how, size;

    if (n != SYS_openat2) {
        fprintf(stderr, "unexpected raw system call %ld: teach test_faults.c about it\n", n);
        abort();
    }
    va_start(ap, n);
    dirfd = va_arg(ap, long);
    path = va_arg(ap, long);
    how = va_arg(ap, long);
    size = va_arg(ap, long);
    va_end(ap);
    if (fault_hit(F_OPENAT2))
        return -1;
    return __real_syscall(n, dirfd, path, how, size);
}

int __wrap_flock(int fd, int op)
{
    return fault_hit(F_FLOCK) ? -1 : __real_flock(fd, op);
}

void *__wrap_malloc(size_t n)
{
    return fault_hit(F_ALLOC) ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
    return fault_hit(F_ALLOC) ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
    return fault_hit(F_ALLOC) ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
    return fault_hit(F_ALLOC) ? NULL : __real_strdup(s);
}

/* jansson allocates through these, so parsing the input can fail too. */
static void *json_alloc(size_t n)
{
    return __wrap_malloc(n);
}

static void json_release(void *p)
{
    free(p);
}

/* ---- scenarios ---- */

typedef struct {
    const char *name;
    const char *input; /* the tool input */
    int writes;        /* a writing command (a read-only one changes nothing) */
} scenario;

static const scenario scenarios[] = {
    {"create", "{\"command\":\"create\",\"path\":\"/memories/a/new.md\",\"file_text\":\"new\\n\"}",
     1},
    {"create with parents",
     "{\"command\":\"create\",\"path\":\"/memories/x/y/new.md\",\"file_text\":\"deep\\n\"}", 1},
    {"str_replace",
     "{\"command\":\"str_replace\",\"path\":\"/memories/a/f.md\",\"old_str\":\"two\","
     "\"new_str\":\"TWO\"}",
     1},
    {"insert",
     "{\"command\":\"insert\",\"path\":\"/memories/a/f.md\",\"insert_line\":1,"
     "\"insert_text\":\"one and a half\"}",
     1},
    {"delete file", "{\"command\":\"delete\",\"path\":\"/memories/a/f.md\"}", 1},
    {"delete tree", "{\"command\":\"delete\",\"path\":\"/memories/t\"}", 1},
    {"rename file",
     "{\"command\":\"rename\",\"old_path\":\"/memories/a/f.md\",\"new_path\":\"/memories/n/m/"
     "g.md\"}",
     1},
    {"rename dir",
     "{\"command\":\"rename\",\"old_path\":\"/memories/t\",\"new_path\":\"/memories/t2\"}", 1},
    {"view file", "{\"command\":\"view\",\"path\":\"/memories/a/f.md\"}", 0},
    {"view dir", "{\"command\":\"view\",\"path\":\"/memories\"}", 0},
};
#define N_SCENARIOS (sizeof(scenarios) / sizeof(scenarios[0]))

static char *base_dir;

static void lay_store(const char *root)
{
    static const char *const files[] = {"a/f.md",   "a/other.md", "t/1.md",   "t/s/2.md",
                                        "t/s/3.md", "t/s/u/4.md", "t/v/5.md", "top.md"};
    st_rmrf(root);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char *p = st_join(root, files[i]), *d = strdup(p);
        char text[64];
        assert_non_null(d);
        *strrchr(d, '/') = '\0';
        st_mkdirs(d);
        snprintf(text, sizeof(text), "one\ntwo\nthree of %s\n", files[i]);
        st_write(p, text, strlen(text));
        free(p);
        free(d);
    }
}

/* Every file, link and directory below dir (files with their content),
 * sorted: a failed create must not keep the parents it made. The store's own
 * directory (its lock and usage counter) is no memory and is left out. */
static void snap_dir(char ***lines, size_t *n, const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    struct dirent *de;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        char *full, rel[1024], *line;
        struct stat sb;
        size_t len = 0;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (!*prefix && strcmp(de->d_name, ".memtool") == 0)
            continue;
        full = st_join(dir, de->d_name);
        snprintf(rel, sizeof(rel), "%s%s", prefix, de->d_name);
        assert_int_equal(lstat(full, &sb), 0);
        if (S_ISDIR(sb.st_mode)) {
            char sub[1024];
            snprintf(sub, sizeof(sub), "%s/", rel);
            line = strdup(sub);
            assert_non_null(line);
            *lines = realloc(*lines, (*n + 1) * sizeof(**lines));
            assert_non_null(*lines);
            (*lines)[(*n)++] = line;
            snap_dir(lines, n, full, sub);
        } else {
            char *data = S_ISREG(sb.st_mode) ? st_read(full, &len) : NULL;
            size_t cap = strlen(rel) + len + 16;
            line = malloc(cap);
            assert_non_null(line);
            snprintf(line, cap, "%s=%s", rel, data ? data : "(not a file)");
            free(data);
            *lines = realloc(*lines, (*n + 1) * sizeof(**lines));
            assert_non_null(*lines);
            (*lines)[(*n)++] = line;
        }
        free(full);
    }
    closedir(d);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *snapshot(const char *root)
{
    char **lines = NULL, *out;
    size_t n = 0, total = 1, o = 0;

    snap_dir(&lines, &n, root, "");
    qsort(lines, n, sizeof(*lines), by_str);
    for (size_t i = 0; i < n; i++)
        total += strlen(lines[i]) + 1;
    out = malloc(total);
    assert_non_null(out);
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(lines[i]);
        memcpy(out + o, lines[i], l);
        out[o + l] = '\n';
        o += l + 1;
        free(lines[i]);
    }
    out[o] = '\0';
    free(lines);
    return out;
}

/*
 * Once a command's change is in place (renamed in, unlinked), a failure after
 * it (syncing the directory) cannot undo it. Saying just "Error" then would
 * make a model repeat the command (an insert twice); such an error must say
 * the change was made.
 */
#define COMMITTED "was made"

/* Regular .mt-tmp. files below dir: a writer's temporary left behind. */
static size_t count_temp_files_in(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *de;
    size_t n = 0;

    assert_non_null(d);
    while ((de = readdir(d)) != NULL) {
        struct stat sb;
        int sub;
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            fstatat(dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISREG(sb.st_mode) && strncmp(de->d_name, ".mt-tmp.", 8) == 0)
            n++;
        if (S_ISDIR(sb.st_mode) &&
            (sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >=
                0) {
            n += count_temp_files_in(sub);
            close(sub);
        }
    }
    closedir(d);
    return n;
}

static size_t count_temp_files(const char *root)
{
    int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    size_t n;

    assert_true(fd >= 0);
    n = count_temp_files_in(fd);
    close(fd);
    return n;
}

/* Age what is left and let a walk of the store clean it, as it would in time. */
static void clean_stale(const char *root)
{
    mt_memory *mem;
    int is_error;
    char *text;

    if (st_count_temps(root) == 0)
        return;
    /* A change that died or failed half way left the usage counter dirty;
     * the next change (even one that is refused) counts the store again
     * under the lock and removes the temporaries. */
    assert_int_equal(mt_memory_open(&mem, root, NULL), 0);
    text = st_call(mem, &is_error, st_delete("/memories/no such file"));
    free(text);
    mt_memory_free(mem);
}

typedef struct {
    int rc;
    int is_error;
    char *text;
} outcome;

/* Run the scenario once on a freshly laid store, counting (and maybe failing) calls. */
static outcome run_on(const char *root, const scenario *s, int fn, long at, int lay)
{
    mt_memory *mem;
    mt_result res;
    outcome o = {0, 0, NULL};

    if (lay)
        lay_store(root);
    assert_int_equal(mt_memory_open(&mem, root, NULL), 0);
    memset(calls, 0, sizeof(calls));
    armed = fn;
    armed_at = at;
    fired = 0;
    counting = 1;
    o.rc = mt_memory_call(&res, mem, s->input, strlen(s->input));
    counting = 0;
    armed = -1;
    if (o.rc == 0) {
        o.is_error = res.is_error;
        o.text = strdup(res.text);
        assert_non_null(o.text);
        mt_result_dispose(&res);
    }
    mt_memory_free(mem);
    return o;
}

static outcome run_once(const char *root, const scenario *s, int fn, long at)
{
    return run_on(root, s, fn, at, 1);
}

/* What a clear error for a failing call looks like: the cause in words. */
static int names_cause(const char *text, int fn)
{
    int err = fault_fn[fn].err;

    if (err == ENOMEM)
        return strstr(text, "out of memory") != NULL || strstr(text, "memory") != NULL;
    return strstr(text, strerror(err)) != NULL;
}

static long run_scenario(const scenario *s, int *problems)
{
    char *root = st_join(base_dir, "store"), *before, *after_clean;
    outcome clean;
    long clean_calls[F_COUNT], runs = 0;

    lay_store(root);
    before = snapshot(root);
    clean = run_once(root, s, -1, 0);
    assert_int_equal(clean.rc, 0);
    if (clean.is_error)
        fail_msg("%s: the clean run failed: %s", s->name, clean.text);
    memcpy(clean_calls, calls, sizeof(calls));
    after_clean = snapshot(root);
    if (s->writes)
        assert_string_not_equal(before, after_clean);
    free(clean.text);

    for (int fn = 0; fn < F_COUNT; fn++) {
        for (long at = 1; at <= clean_calls[fn]; at++) {
            outcome o = run_once(root, s, fn, at);
            size_t temp_files = count_temp_files(root), temps;
            const char *why = NULL;
            char *now;

            /* A hidden tree a failed delete left is the stale cleaner's to
             * take; a temporary file is its writer's to remove at once. */
            clean_stale(root);
            temps = st_count_temps(root);
            now = snapshot(root);

            runs++;
            if (!fired)
                why = "the armed call never came (the command took another path)";
            else if (o.rc != 0 && !(o.rc == MT_ENOMEM && fn == F_ALLOC))
                why = "no result";
            else if (o.rc == 0 && o.is_error && strncmp(o.text, "Error: ", 7) != 0 &&
                     strncmp(o.text, "The path ", 9) != 0)
                why = "an error result that does not start with 'Error: '";
            else if (o.rc == 0 && o.is_error && !names_cause(o.text, fn))
                why = "an error result that does not name the cause";
            else if (o.rc == 0 && o.is_error && strcmp(now, before) != 0 &&
                     !(strcmp(now, after_clean) == 0 && strstr(o.text, COMMITTED)))
                why = "an error, but the store changed (and the error does not say so)";
            else if (o.rc == 0 && !o.is_error && strcmp(now, after_clean) != 0)
                why = "a success, but the store is not as a clean run leaves it";
            else if (o.rc != 0 && strcmp(now, before) != 0 && strcmp(now, after_clean) != 0)
                why = "out of memory, and the store is neither old nor new";
            else if (temp_files != 0)
                why = "a temporary file was left behind";
            else if (temps != 0)
                why = "a temporary entry is left even after the stale cleaner ran";
            if (why) {
                (*problems)++;
                print_message("FAULT %s: %s call %ld of %ld fails (%s): %s\n    result: %s\n",
                              s->name, fault_fn[fn].name, at, clean_calls[fn],
                              strerror(fault_fn[fn].err), why,
                              o.rc == 0 ? o.text : "(none: MT_ENOMEM)");
            }
            free(o.text);
            free(now);
        }
    }
    free(before);
    free(after_clean);
    free(root);
    return runs;
}

static void test_each_fault_at_each_step(void **state)
{
    int problems = 0;
    long runs = 0;

    (void)state;
    for (size_t i = 0; i < N_SCENARIOS; i++)
        runs += run_scenario(&scenarios[i], &problems);
    print_message("%ld faulty runs over %zu commands\n", runs, N_SCENARIOS);
    assert_true(runs > 100);
    assert_int_equal(problems, 0);
}

/* Without RENAME_NOREPLACE (some network and FUSE filesystems), files are
 * still created and moved without ever replacing anything. */
static void test_without_renameat2(void **state)
{
    char *root = st_join(base_dir, "store");
    int problems = 0;

    (void)state;
    renameat2_unsupported = 1;
    for (size_t i = 0; i < N_SCENARIOS; i++) {
        const scenario *s = &scenarios[i];
        char *before, *now;
        outcome o;

        lay_store(root);
        before = snapshot(root);
        o = run_once(root, s, -1, 0);
        now = snapshot(root);
        assert_int_equal(o.rc, 0);
        if (o.is_error && (strncmp(o.text, "Error: ", 7) != 0 || strcmp(now, before) != 0)) {
            problems++;
            print_message("NO RENAMEAT2 %s: %s\n", s->name, o.text);
        } else if (o.is_error) {
            print_message("NO RENAMEAT2 %s: refused cleanly: %s\n", s->name, o.text);
        }
        if (st_count_temps(root) != 0) {
            problems++;
            print_message("NO RENAMEAT2 %s: a temporary file was left behind\n", s->name);
        }
        /* Files must still work: create and rename of a file are the core. */
        if ((strcmp(s->name, "create") == 0 || strcmp(s->name, "rename file") == 0 ||
             strcmp(s->name, "str_replace") == 0) &&
            o.is_error) {
            problems++;
            print_message("NO RENAMEAT2 %s failed: %s\n", s->name, o.text);
        }
        free(o.text);
        free(before);
        free(now);
    }
    renameat2_unsupported = 0;
    free(root);
    assert_int_equal(problems, 0);
}

/* ---- hostile environments, each in a child process ---- */

/* Run fn in a child; it returns the number of problems, or 77 to skip. */
static void in_child(int (*fn)(void), const char *what)
{
    int status;
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0)
        _exit(fn());
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 77) {
        print_message("%s: skipped (needs root and mount namespaces)\n", what);
        skip();
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fail_msg("%s: %d problems (status %d)", what, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                 status);
}

/* One scenario on a laid store, judged as the fault runs are. `cause` is
 * what an error must name. Returns 1 for a problem. */
static int judge(const char *root, const scenario *s, const char *before, const char *after_clean,
                 const outcome *o, const char *cause, const char *label)
{
    const char *why = NULL;
    size_t temp_files = count_temp_files(root);
    char *now;

    clean_stale(root);
    now = snapshot(root);
    if (o->rc != 0)
        why = "no result";
    else if (o->is_error && strncmp(o->text, "Error: ", 7) != 0)
        why = "an error result that does not start with 'Error: '";
    else if (o->is_error && !strstr(o->text, cause))
        why = "an error result that does not name the cause";
    else if (o->is_error && strcmp(now, before) != 0 &&
             !(strcmp(now, after_clean) == 0 && strstr(o->text, COMMITTED)))
        why = "an error, but the store changed";
    else if (!o->is_error && strcmp(now, after_clean) != 0)
        why = "a success, but the store is not as a clean run leaves it";
    else if (temp_files != 0)
        why = "a temporary file was left behind";
    free(now);
    if (!why)
        return 0;
    fprintf(stderr, "%s %s: %s\n    result: %s\n", label, s->name, why,
            o->rc == 0 ? o->text : "(none)");
    return 1;
}

static char env_root[512];

/* Run s with all but `spare` descriptors taken. */
static outcome run_starved(const char *root, const scenario *s, int spare)
{
    mt_memory *mem;
    mt_result res;
    outcome o = {0, 0, NULL};
    int fds[512], n = 0;

    lay_store(root);
    if (mt_memory_open(&mem, root, NULL) < 0)
        abort();
    while (n < 512 && (fds[n] = dup(0)) >= 0)
        n++;
    for (int i = 0; i < spare && n > 0; i++)
        close(fds[--n]);
    o.rc = mt_memory_call(&res, mem, s->input, strlen(s->input));
    while (n > 0)
        close(fds[--n]);
    if (o.rc == 0) {
        o.is_error = res.is_error;
        o.text = strdup(res.text);
        mt_result_dispose(&res);
    }
    mt_memory_free(mem);
    return o;
}

static int starved_child(void)
{
    struct rlimit rl = {128, 128};
    int problems = 0;

    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        return 1;
    for (size_t i = 0; i < N_SCENARIOS; i++) {
        const scenario *s = &scenarios[i];
        outcome clean = run_starved(env_root, s, 64);
        char *after_clean = snapshot(env_root), *before;

        lay_store(env_root);
        before = snapshot(env_root);
        if (clean.rc != 0 || clean.is_error) {
            fprintf(stderr, "starved %s: the clean run failed: %s\n", s->name, clean.text);
            problems++;
        }
        /* Each number of spare descriptors fails a different open of the command. */
        for (int spare = 0; spare <= 6; spare++) {
            outcome o = run_starved(env_root, s, spare);
            char label[32];
            snprintf(label, sizeof(label), "starved(%d spare)", spare);
            problems +=
                judge(env_root, s, before, after_clean, &o,
                      o.is_error && strncmp(o.text, "Error: ", 7) != 0 ? "" : "open files", label);
            free(o.text);
        }
        free(clean.text);
        free(before);
        free(after_clean);
    }
    return problems;
}

static void test_descriptor_exhaustion(void **state)
{
    (void)state;
    snprintf(env_root, sizeof(env_root), "%s/starved", base_dir);
    in_child(starved_child, "RLIMIT_NOFILE exhaustion");
}

/* A private mount namespace: mounts vanish with the child, whatever happens. */
static int private_mounts(void)
{
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return -1;
    return 0;
}

static int readonly_child(void)
{
    int problems = 0;
    mt_memory *mem;
    char *sub;

    if (private_mounts() < 0)
        return 77;
    for (size_t i = 0; i < N_SCENARIOS; i++) {
        const scenario *s = &scenarios[i];
        char *before;
        outcome o;

        lay_store(env_root);
        before = snapshot(env_root);
        if (mount(env_root, env_root, NULL, MS_BIND, NULL) < 0 ||
            mount(NULL, env_root, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
            return 77;
        o = run_on(env_root, s, -1, 0, 0);
        /* Refused before anything is tried, naming the cause and that reads work. */
        if (s->writes)
            problems += judge(env_root, s, before, "(no change can be made)", &o,
                              "the store is read-only", "read-only");
        else if (o.rc != 0 || o.is_error) {
            fprintf(stderr, "read-only %s: a read failed: %s\n", s->name, o.text);
            problems++;
        }
        free(o.text);
        free(before);
        if (umount(env_root) < 0)
            return 1;
    }
    /* Opening a store whose root cannot be made says why. */
    if (mount(env_root, env_root, NULL, MS_BIND, NULL) < 0 ||
        mount(NULL, env_root, NULL, MS_BIND | MS_REMOUNT | MS_RDONLY, NULL) < 0)
        return 77;
    sub = st_join(env_root, "not/yet");
    if (mt_memory_open(&mem, sub, NULL) == 0 ||
        !strstr(mt_error_last()->message, "Read-only file system")) {
        fprintf(stderr, "read-only: opening a new root said: %s\n", mt_error_last()->message);
        problems++;
    }
    free(sub);
    return problems;
}

static void test_readonly_root(void **state)
{
    (void)state;
    snprintf(env_root, sizeof(env_root), "%s/ro", base_dir);
    in_child(readonly_child, "read-only store root");
}

static int nospace_child(void)
{
    static const size_t big = 300 * 1024;
    char *root, *text = malloc(big + 1), *before, *json;
    int problems = 0, is_error;
    mt_memory *mem;

    if (private_mounts() < 0 || !text)
        return 77;
    if (mount("tmpfs", env_root, "tmpfs", 0, "size=256k,mode=0700") < 0)
        return 77;
    root = st_join(env_root, "store");
    lay_store(root);
    before = snapshot(root);
    if (mt_memory_open(&mem, root, NULL) < 0)
        return 1;
    memset(text, 'x', big);
    text[big] = '\0';
    /* A file bigger than the disk, an edit and an insert that grow one past it. */
    for (int k = 0; k < 3; k++) {
        json_t *in = k == 0   ? st_create("/memories/huge.md", text, big)
                     : k == 1 ? st_replace("/memories/a/f.md", "two", text)
                              : st_insert("/memories/a/f.md", 1, text);
        char *out = st_call(mem, &is_error, in), *now = snapshot(root);
        if (!out || !is_error || strncmp(out, "Error: ", 7) != 0 ||
            !strstr(out, "No space left on device") || strcmp(now, before) != 0 ||
            st_count_temps(root) != 0) {
            fprintf(stderr, "no space, case %d: %s\n", k, out ? out : "(none)");
            problems++;
        }
        free(out);
        free(now);
    }
    /* Small writes still work once the failed ones are gone. */
    json = st_call(mem, &is_error, st_create("/memories/small.md", "fits\n", 5));
    if (!json || is_error) {
        fprintf(stderr, "no space: a small create after the failures: %s\n", json ? json : "");
        problems++;
    }
    free(json);
    mt_memory_free(mem);
    free(before);
    free(text);
    free(root);
    return problems;
}

static void test_disk_full(void **state)
{
    (void)state;
    snprintf(env_root, sizeof(env_root), "%s/full", base_dir);
    st_mkdirs(env_root);
    in_child(nospace_child, "disk full");
}

static int setup(void **state)
{
    (void)state;
    json_set_alloc_funcs(json_alloc, json_release);
    /* tmpfs when there is one: fsync is still called (and can fail), but costs nothing. */
    if (access("/dev/shm", W_OK) == 0 && !getenv("TMPDIR"))
        setenv("TMPDIR", "/dev/shm", 1);
    base_dir = st_mkdtemp("faults");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    st_rmrf(base_dir);
    free(base_dir);
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_each_fault_at_each_step),
        cmocka_unit_test(test_without_renameat2),
        cmocka_unit_test(test_descriptor_exhaustion),
        cmocka_unit_test(test_readonly_root),
        cmocka_unit_test(test_disk_full),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
