/*
 * Runs a fuzz target's entry point once on each file named, or on each file
 * in each directory named: the seed corpus and the saved crashes replay in
 * any build, with any compiler, without libFuzzer.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char *buf = NULL;
    size_t len = 0, cap = 0, n;

    if (!f) {
        perror(path);
        return -1;
    }
    do {
        if (len == cap) {
            unsigned char *grown = realloc(buf, cap = cap ? cap * 2 : 4096);
            if (!grown) {
                free(buf);
                fclose(f);
                return -1;
            }
            buf = grown;
        }
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    size_t total = 0;

    LLVMFuzzerInitialize(&argc, &argv);
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        DIR *d;
        struct dirent *de;
        char **names = NULL;
        size_t count = 0;

        if (stat(argv[i], &sb) < 0) {
            perror(argv[i]);
            return 1;
        }
        if (!S_ISDIR(sb.st_mode)) {
            if (run_file(argv[i]) < 0)
                return 1;
            total++;
            continue;
        }
        if (!(d = opendir(argv[i]))) {
            perror(argv[i]);
            return 1;
        }
        while ((de = readdir(d)) != NULL) {
            char **grown;
            if (de->d_name[0] == '.')
                continue;
            grown = realloc(names, (count + 1) * sizeof(*names));
            if (!grown)
                return 1;
            names = grown;
            names[count] = malloc(strlen(argv[i]) + strlen(de->d_name) + 2);
            if (!names[count])
                return 1;
            snprintf(names[count], strlen(argv[i]) + strlen(de->d_name) + 2, "%s/%s", argv[i],
                     de->d_name);
            count++;
        }
        closedir(d);
        /* A fixed order, so a failure reproduces the same way. */
        qsort(names, count, sizeof(*names), by_name);
        for (size_t k = 0; k < count; k++) {
            if (run_file(names[k]) < 0)
                return 1;
            free(names[k]);
            total++;
        }
        free(names);
    }
    printf("%zu inputs replayed, 0 invariants broken\n", total);
    return 0;
}
