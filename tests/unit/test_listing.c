/*
 * Listings and usage of bigger stores, where the counting is shared out to
 * helper threads: every size shown must be the exact total beneath its
 * entry, checked against an independent walk of the same tree.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"
#include "util/lines.h"

#define DIRS 40

static void put_file(const char *root, const char *rel, size_t size)
{
    char path[1024];
    char *data = malloc(size + 1);
    FILE *f;

    assert_non_null(data);
    memset(data, 'x', size);
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
    free(data);
}

static void put_dir(const char *root, const char *rel)
{
    char path[1024];

    snprintf(path, sizeof(path), "%s/%s", root, rel);
    assert_int_equal(mkdir(path, 0700), 0);
}

/* DIRS directories, each with files, a subdirectory two levels deep (below
 * what a view shows), a hidden directory and node_modules (counted, not
 * shown), and a link and a FIFO (neither). Returns how many regular files. */
static size_t make_tree(const char *root)
{
    char rel[256];
    size_t files = 0;
    int d, k;

    for (d = 0; d < DIRS; d++) {
        snprintf(rel, sizeof(rel), "d%02d", d);
        put_dir(root, rel);
        for (k = 0; k < 3; k++, files++) {
            snprintf(rel, sizeof(rel), "d%02d/f%d.md", d, k);
            put_file(root, rel, (size_t)(d * 37 + k * 101) % 900);
        }
        snprintf(rel, sizeof(rel), "d%02d/sub", d);
        put_dir(root, rel);
        snprintf(rel, sizeof(rel), "d%02d/sub/deeper", d);
        put_dir(root, rel);
        snprintf(rel, sizeof(rel), "d%02d/sub/deeper/g.md", d);
        put_file(root, rel, (size_t)d * 1000 + 7);
        snprintf(rel, sizeof(rel), "d%02d/sub/h.md", d);
        put_file(root, rel, 64);
        files += 2;
        if (d % 3 == 0) {
            snprintf(rel, sizeof(rel), "d%02d/.hidden", d);
            put_dir(root, rel);
            snprintf(rel, sizeof(rel), "d%02d/.hidden/secret.md", d);
            put_file(root, rel, 500);
            snprintf(rel, sizeof(rel), "d%02d/node_modules", d);
            put_dir(root, rel);
            snprintf(rel, sizeof(rel), "d%02d/node_modules/m.js", d);
            put_file(root, rel, 3000);
            files += 2;
        }
        if (d % 5 == 0) {
            char path[1024];
            snprintf(path, sizeof(path), "%s/d%02d/link", root, d);
            assert_int_equal(symlink("../d01", path), 0);
            snprintf(path, sizeof(path), "%s/d%02d/fifo", root, d);
            assert_int_equal(mkfifo(path, 0600), 0);
        }
    }
    put_file(root, "top.md", 12345);
    return files + 1;
}

/* The total of the regular files at or beneath path, links never followed. */
static uint64_t ref_size(const char *path)
{
    struct stat sb;
    uint64_t total = 0;
    struct dirent *de;
    DIR *dir;

    assert_int_equal(lstat(path, &sb), 0);
    if (S_ISREG(sb.st_mode))
        return (uint64_t)sb.st_size;
    if (!S_ISDIR(sb.st_mode))
        return 0;
    dir = opendir(path);
    assert_non_null(dir);
    while ((de = readdir(dir)) != NULL) {
        char child[1024];
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        snprintf(child, sizeof(child), "%s/%s", path, de->d_name);
        total += ref_size(child);
    }
    closedir(dir);
    return total;
}

/* Check every "size\t/memories/..." line of a listing against ref_size;
 * returns how many entry lines there were. */
static size_t check_sizes(const char *root, const char *text)
{
    const char *line = strchr(text, '\n');
    size_t lines = 0;

    assert_non_null(line);
    while (line) {
        const char *start = line + 1, *end = strchr(start, '\n'), *tab = strchr(start, '\t');
        char rel[512], want[32], got[32];
        size_t len = end ? (size_t)(end - start) : strlen(start);

        line = end;
        if (start[0] == '[')
            break; /* the truncation notice */
        assert_non_null(tab);
        assert_true(tab < start + len);
        assert_true((size_t)(tab - start) < sizeof(got));
        memcpy(got, start, (size_t)(tab - start));
        got[tab - start] = '\0';
        /* "/memories" is 9 bytes; a directory's trailing slash is dropped. */
        snprintf(rel, sizeof(rel), "%s%.*s", root, (int)(len - (size_t)(tab + 1 - start) - 9),
                 tab + 1 + 9);
        if (rel[strlen(rel) - 1] == '/')
            rel[strlen(rel) - 1] = '\0';
        mt_text_format_size(want, ref_size(rel));
        if (strcmp(got, want) != 0)
            print_message("%s: shown %s, holds %s\n", rel, got, want);
        assert_string_equal(got, want);
        lines++;
    }
    return lines;
}

static void test_whole_listing(void **state)
{
    mt_test_store ts;
    mt_options opts;
    int is_error;
    char *text;
    (void)state;
    mt_options_init(&opts);
    opts.view_limit = 10000000;
    mt_test_store_init(&ts, &opts);
    make_tree(ts.root);
    text = mt_test_call(ts.mem, &is_error, "{\"command\":\"view\",\"path\":\"/memories\"}");
    assert_false(is_error);
    /* The root, top.md, and per directory: itself, 3 files and sub. */
    assert_int_equal(check_sizes(ts.root, text), 1 + 1 + DIRS * 5);
    assert_null(strstr(text, "/.hidden"));
    assert_null(strstr(text, "/node_modules"));
    assert_null(strstr(text, "/link"));
    assert_null(strstr(text, "/fifo"));
    assert_null(strstr(text, "deeper"));
    free(text);
    text = mt_test_call(ts.mem, &is_error, "{\"command\":\"view\",\"path\":\"/memories/d07\"}");
    assert_false(is_error);
    assert_int_equal(check_sizes(ts.root, text), 1 + 3 + 1 + 2);
    free(text);
    mt_test_store_free(&ts);
}

/* At the default limit only some entries fit, but every size shown is still
 * the total of everything beneath. */
static void test_truncated_listing(void **state)
{
    mt_test_store ts;
    int is_error, d, k;
    char *text, rel[64];
    (void)state;
    mt_test_store_init(&ts, NULL);
    make_tree(ts.root);
    for (d = 0; d < DIRS; d++) {
        for (k = 0; k < 60; k++) {
            snprintf(rel, sizeof(rel), "d%02d/more%02d.md", d, k);
            put_file(ts.root, rel, (size_t)k * 3);
        }
    }
    text = mt_test_call(ts.mem, &is_error, "{\"command\":\"view\",\"path\":\"/memories\"}");
    assert_false(is_error);
    assert_true(check_sizes(ts.root, text) > 100);
    assert_non_null(strstr(text, "\n[listing truncated after "));
    free(text);
    mt_test_store_free(&ts);
}

/* More entries than the limit could show, all with names the path rules
 * refuse, ahead of the good ones: the store is asked again for everything,
 * and the listing is what it would be without the shortcut. */
static void test_refused_names_first(void **state)
{
    mt_test_store ts;
    mt_options opts;
    int is_error, k;
    char *text, rel[64], line[128];
    const char *p;
    size_t shown;
    (void)state;
    mt_options_init(&opts);
    opts.view_limit = 600; /* room for about 40 short lines: 41 entries asked for */
    mt_test_store_init(&ts, &opts);
    for (k = 0; k < 100; k++) {
        snprintf(rel, sizeof(rel), "a\\%03d", k); /* a backslash: refused, never shown */
        put_file(ts.root, rel, 1);
    }
    for (k = 0; k < 100; k++) {
        snprintf(rel, sizeof(rel), "b%03d", k);
        put_file(ts.root, rel, 2);
    }
    text = mt_test_call(ts.mem, &is_error, "{\"command\":\"view\",\"path\":\"/memories\"}");
    assert_false(is_error);
    assert_null(strchr(text, '\\'));
    p = strstr(text, "\n[listing truncated after ");
    assert_non_null(p);
    assert_int_equal(sscanf(p, "\n[listing truncated after %zu", &shown), 1);
    assert_true(shown > 10);
    assert_non_null(strstr(text, "\n300B\t/memories\n"));
    for (k = 0; k < (int)shown; k++) {
        snprintf(line, sizeof(line), "\n2B\t/memories/b%03d\n", k);
        assert_non_null(strstr(text, line));
    }
    free(text);
    mt_test_store_free(&ts);
}

/* The file-count limit sees every regular file, hidden ones included. */
static void test_usage_counts_everything(void **state)
{
    mt_test_store ts;
    mt_options opts;
    char *text;
    int is_error;
    size_t files;
    char tmp[] = "/tmp/memtool-listing-XXXXXX";
    (void)state;
    /* Count the files first, in a scratch tree, to set the limit exactly. */
    assert_non_null(mkdtemp(tmp));
    files = make_tree(tmp);
    {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
        assert_int_equal(system(cmd), 0);
    }
    mt_options_init(&opts);
    opts.max_files = files;
    mt_test_store_init(&ts, &opts);
    make_tree(ts.root);
    text = mt_test_call(ts.mem, &is_error,
                        "{\"command\":\"create\",\"path\":\"/memories/one-more.md\","
                        "\"file_text\":\"x\"}");
    assert_true(is_error);
    free(text);
    mt_test_store_free(&ts);

    opts.max_files = files + 1;
    mt_test_store_init(&ts, &opts);
    make_tree(ts.root);
    text = mt_test_call(ts.mem, &is_error,
                        "{\"command\":\"create\",\"path\":\"/memories/one-more.md\","
                        "\"file_text\":\"x\"}");
    assert_false(is_error);
    free(text);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_listing),
        cmocka_unit_test(test_truncated_listing),
        cmocka_unit_test(test_refused_names_first),
        cmocka_unit_test(test_usage_counts_everything),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
