/*
 * Whole tool inputs, JSON and all, against a scratch store with traps in it
 * (links out, a hard link to an outside file, a FIFO).
 *
 * An input is up to 8 lines, each one call, so one input can create and then
 * edit. The store is laid afresh for every input, so a crash reproduces.
 * After every call:
 *   - the result has the SPEC's shape, is valid UTF-8, never shows the canary;
 *   - nothing outside the store was read, changed or created;
 *   - an error changed nothing in the store (a refused path never touched it);
 *   - a success did what it said (the file exists with the text, is gone...);
 *   - a listing shows only regular files and directories, never hidden names.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "util/json.h"
#include "util/path.h"

#define MAX_CALLS 8

static int starts(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

/* The normalised path of a string parameter, or NULL. */
static char *rel_of(const json_t *input, const char *name)
{
    const json_t *v = json_object_get(input, name);
    char *rel = NULL;

    if (!json_is_string(v) ||
        mt_path_parse(&rel, json_string_value(v), json_string_length(v)) != MT_PATH_OK)
        return NULL;
    return rel;
}

static int lstat_rel(struct stat *sb, const char *rel)
{
    char path[MT_PATH_MAX + 512];

    snprintf(path, sizeof(path), "%s/%s", fuzz_env.store, rel);
    return lstat(path, sb);
}

static char *read_rel(size_t *len, const char *rel)
{
    char path[MT_PATH_MAX + 512];
    struct stat sb;
    char *buf;
    int fd;

    snprintf(path, sizeof(path), "%s/%s", fuzz_env.store, rel);
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    FUZZ_CHECK(fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode), "%s is not a regular file", rel);
    buf = malloc((size_t)sb.st_size + 1);
    FUZZ_CHECK(buf != NULL, "out of memory");
    FUZZ_CHECK(read(fd, buf, (size_t)sb.st_size) == sb.st_size, "short read of %s", rel);
    close(fd);
    *len = (size_t)sb.st_size;
    return buf;
}

/* Each listed entry below the listed directory: a real file or directory,
 * never hidden, never a name the path rules refuse. */
static void check_listing(const char *text, size_t len, const char *rel)
{
    const char *line = memchr(text, '\n', len), *end = text + len;
    int first = 1;

    while (line && line < end) {
        const char *next, *p, *tab;
        size_t n;

        line++;
        next = memchr(line, '\n', (size_t)(end - line));
        n = next ? (size_t)(next - line) : (size_t)(end - line);
        if (n > 0 && line[0] == '[') {
            FUZZ_CHECK(!next, "text after the truncation note");
            break;
        }
        tab = memchr(line, '\t', n);
        FUZZ_CHECK(tab && (size_t)(tab - line) < 8 && (size_t)(line + n - tab) > 9 &&
                       memcmp(tab + 1, "/memories", 9) == 0,
                   "a listing line is not '{size}\\t/memories...': %.*s", (int)n, line);
        if (!first) {
            char entry[MT_PATH_MAX + 1];
            size_t base = strlen(rel), elen = (size_t)(line + n - tab) - 11;
            struct stat sb;

            p = tab + 11; /* past "\t/memories/" */
            FUZZ_CHECK(elen < sizeof(entry), "listing line too long");
            memcpy(entry, p, elen);
            entry[elen] = '\0';
            if (elen > 0 && entry[elen - 1] == '/')
                entry[--elen] = '\0';
            FUZZ_CHECK(base == 0 ||
                           (elen > base && strncmp(entry, rel, base) == 0 && entry[base] == '/'),
                       "listed entry %s is not below %s", entry, rel);
            for (const char *c = entry + (base ? base + 1 : 0); *c;) {
                const char *slash = strchr(c, '/');
                size_t cl = slash ? (size_t)(slash - c) : strlen(c);
                FUZZ_CHECK(c[0] != '.' && mt_path_name_ok(c, cl) &&
                               !(cl == 12 && memcmp(c, "node_modules", 12) == 0),
                           "listing shows a hidden or refused name: %s", entry);
                c += cl + (slash != NULL);
            }
            FUZZ_CHECK(lstat_rel(&sb, entry) == 0 && (S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)),
                       "listing shows %s, which is not a regular file or directory", entry);
        }
        first = 0;
        line = next;
    }
}

static void check_shape(const json_t *input, const mt_result *res)
{
    const char *cmd = json_string_value(json_object_get(input, "command"));
    const char *t = res->text;

    if (res->is_error) {
        FUZZ_CHECK(starts(t, "Error: ") || starts(t, "The path ") ||
                       starts(t, "No replacement was performed") || starts(t, "File "),
                   "an error result of unknown shape: %.300s", t);
        return;
    }
    FUZZ_CHECK(cmd != NULL, "a success for an input without a command: %.200s", t);
    FUZZ_CHECK(res->len == 0 || t[res->len - 1] != '\n', "a success ends with a newline: %.300s",
               t);
    if (strcmp(cmd, "view") == 0)
        FUZZ_CHECK(starts(t, "Here're the files and directories up to 2 levels deep in ") ||
                       starts(t, "Here's the content of "),
                   "view said: %.300s", t);
    else if (strcmp(cmd, "create") == 0)
        FUZZ_CHECK(starts(t, "File created successfully at: "), "create said: %.300s", t);
    else if (strcmp(cmd, "str_replace") == 0)
        FUZZ_CHECK(starts(t, "The memory file has been edited. Here is the snippet showing the "
                             "change (with line numbers):"),
                   "str_replace said: %.300s", t);
    else if (strcmp(cmd, "insert") == 0)
        FUZZ_CHECK(starts(t, "The file ") && res->len > 17 &&
                       strcmp(t + res->len - 17, " has been edited.") == 0,
                   "insert said: %.300s", t);
    else if (strcmp(cmd, "delete") == 0)
        FUZZ_CHECK(starts(t, "Successfully deleted "), "delete said: %.300s", t);
    else if (strcmp(cmd, "rename") == 0)
        FUZZ_CHECK(starts(t, "Successfully renamed "), "rename said: %.300s", t);
    else
        FUZZ_CHECK(0, "a success for command '%s'", cmd);
}

/* What a successful call must have done. */
static void check_effect(const json_t *input, const mt_result *res, off_t size_before)
{
    const char *cmd = json_string_value(json_object_get(input, "command"));
    char *rel = rel_of(input, strcmp(cmd, "rename") == 0 ? "old_path" : "path");
    struct stat sb;

    FUZZ_CHECK(rel != NULL, "a success for a path the rules refuse");
    if (strcmp(cmd, "view") == 0 && starts(res->text, "Here're")) {
        check_listing(res->text, res->len, rel);
    } else if (strcmp(cmd, "create") == 0) {
        const json_t *text = json_object_get(input, "file_text");
        size_t len = 0;
        char *data = read_rel(&len, rel);
        FUZZ_CHECK(data && len == json_string_length(text) &&
                       memcmp(data, json_string_value(text), len) == 0,
                   "created %s does not hold the text", rel);
        free(data);
    } else if (strcmp(cmd, "delete") == 0) {
        FUZZ_CHECK(lstat_rel(&sb, rel) < 0 && errno == ENOENT, "deleted %s is still there", rel);
    } else if (strcmp(cmd, "rename") == 0) {
        char *to = rel_of(input, "new_path");
        FUZZ_CHECK(to != NULL, "renamed to a path the rules refuse");
        FUZZ_CHECK(lstat_rel(&sb, rel) < 0 && errno == ENOENT, "renamed %s is still there", rel);
        FUZZ_CHECK(lstat_rel(&sb, to) == 0, "renamed to %s, which is not there", to);
        free(to);
    } else if (strcmp(cmd, "str_replace") == 0) {
        const json_t *o = json_object_get(input, "old_str"), *n = json_object_get(input, "new_str");
        size_t len = 0, nlen = json_is_string(n) ? json_string_length(n) : 0;
        char *data = read_rel(&len, rel);
        FUZZ_CHECK(data && (off_t)len == size_before - (off_t)json_string_length(o) + (off_t)nlen,
                   "%s has %zu bytes after a replacement, expected %lld", rel, len,
                   (long long)(size_before - (off_t)json_string_length(o) + (off_t)nlen));
        FUZZ_CHECK(nlen == 0 || memmem(data, len, json_string_value(n), nlen),
                   "%s does not hold new_str", rel);
        free(data);
    } else if (strcmp(cmd, "insert") == 0) {
        FUZZ_CHECK(lstat_rel(&sb, rel) == 0 && sb.st_size > size_before,
                   "%s did not grow by an insert", rel);
    }
    free(rel);
}

static void one_call(mt_memory *mem, const char *line, size_t len)
{
    /* Read as memtool reads a tool input: jansson, with a lone surrogate
     * escape taken as U+FFFD (mt_json_loadb). */
    json_t *input = NULL;
    json_error_t jerr;

    if (mt_json_loadb(&input, line, len, JSON_ALLOW_NUL | JSON_REJECT_DUPLICATES, &jerr) ==
        MT_ENOMEM)
        return;
    const char *cmd = input ? json_string_value(json_object_get(input, "command")) : NULL;
    uint64_t before = fuzz_store_digest();
    off_t size_before = -1;
    mt_result res;
    int rc;

    if (cmd && (strcmp(cmd, "str_replace") == 0 || strcmp(cmd, "insert") == 0)) {
        char *rel = rel_of(input, "path");
        struct stat sb;
        if (rel && lstat_rel(&sb, rel) == 0)
            size_before = sb.st_size;
        free(rel);
    }
    rc = mt_memory_call(&res, mem, line, len);
    if (rc == MT_ENOMEM) {
        json_decref(input);
        return;
    }
    FUZZ_CHECK(rc == 0, "mt_memory_call returned %d: %s", rc, mt_error_last()->message);
    fuzz_check_text(res.text, res.len);
    fuzz_check_outside();
    if (!input) {
        FUZZ_CHECK(res.is_error && starts(res.text, "Error: The tool input is not valid JSON"),
                   "bad JSON answered with: %.300s", res.text);
    } else {
        check_shape(input, &res);
        if (res.is_error)
            FUZZ_CHECK(fuzz_store_digest() == before,
                       "a failed call changed the store: %.*s\n  -> %.300s", (int)len, line,
                       res.text);
        else
            check_effect(input, &res, size_before);
    }
    mt_result_dispose(&res);
    json_decref(input);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_scratch_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data, *end = p + size;
    /* A small view limit reaches the truncation paths with small inputs. */
    mt_memory *mem = fuzz_open_store(2000);
    int calls = 0;

    while (p < end && calls < MAX_CALLS) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        one_call(mem, p, n);
        calls++;
        p += n + 1;
    }
    mt_memory_free(mem);
    return 0;
}
