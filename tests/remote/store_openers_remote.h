/*
 * The store tests' list of stores with the remote store: the file store (the
 * reference) and a memory store of memtool server reached over HTTP
 * (src/remote), forced in (-include) before a store test's own source, inside
 * tests/remote/with-server.sh, which starts the server. A fresh store is a new
 * memory store, made with one POST (curl).
 */
#ifndef MT_TEST_STORE_OPENERS_REMOTE_H
#define MT_TEST_STORE_OPENERS_REMOTE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define mt_test_stores mt_test_stores_shared
#include "store_openers.h"
#undef mt_test_stores
#undef MT_TEST_NSTORES

/* The remote variant: main() leaves out the tests of what a remote store
 * does not have (test_store_conformance.c says which, and why). */
#define MT_TEST_REMOTE 1

/* A new memory store's URL in url; 0, or -1 (with a message on stderr). The
 * scratch directory (and tenant) names the store, so a handle opened on it
 * again (a test that reopens its store) finds the same memory store. A
 * tenant is a memory store of its own: what the API keeps apart. */
static int mt_test_remote_url(char *url, size_t size, const char *dir, const char *tenant)
{
    const char *base = getenv("MEMTOOL_TEST_REMOTE"), *key = getenv("MEMTOOL_API_KEY");
    char cmd[1200], got[512], path[700];
    FILE *f;
    size_t n;
    int fd = -1;
    char *id, *end;

    if (!base || !key) {
        fprintf(stderr, "MEMTOOL_TEST_REMOTE is not set: run this test through "
                        "tests/remote/with-server.sh (ctest does)\n");
        return -1;
    }
    snprintf(path, sizeof(path), "%s/remote-url%s%s", dir, tenant ? "-" : "", tenant ? tenant : "");
    if ((f = fopen(path, "r")) != NULL) {
        n = fread(url, 1, size - 1, f);
        url[n] = '\0';
        fclose(f);
        return n ? 0 : -1;
    }
    /* The key goes to curl in a file of the scratch directory (mode 0600),
     * never on its command line, where every process may read it. */
    snprintf(path, sizeof(path), "%s/remote-key-header", dir);
    if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) < 0 || !(f = fdopen(fd, "w"))) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    fprintf(f, "Authorization: Bearer %s\n", key);
    fclose(f);
    snprintf(cmd, sizeof(cmd),
             "curl -sS -X POST -H @'%s' -H 'content-type: application/json' "
             "-d '{\"name\":\"conformance\"}' '%s/v1/memory_stores'",
             path, base);
    f = popen(cmd, "r");
    if (!f) {
        unlink(path);
        return -1;
    }
    n = fread(got, 1, sizeof(got) - 1, f);
    got[n] = '\0';
    pclose(f);
    unlink(path);
    snprintf(path, sizeof(path), "%s/remote-url%s%s", dir, tenant ? "-" : "", tenant ? tenant : "");
    if (!(id = strstr(got, "\"id\":\"memstore_")) || !(end = strchr(id + 6, '"'))) {
        fprintf(stderr, "cannot make a memory store: %s\n", got);
        return -1;
    }
    *end = '\0';
    snprintf(url, size, "%s/v1/memory_stores/%s", base, id + 6);
    if ((f = fopen(path, "w")) != NULL) {
        fputs(url, f);
        fclose(f);
    }
    return 0;
}

static int mt_test_open_remote(mt_memory **out, const char *dir, const mt_options *opts)
{
    char url[600];
    mt_store *st;
    int rc;

    if (mt_test_remote_url(url, sizeof(url), dir,
                           opts && opts->tenant && *opts->tenant ? opts->tenant : NULL) < 0)
        return MT_EIO;
    if ((rc = mt_store_open_url(&st, url, NULL, MT_DURABILITY_NONE)) < 0)
        return rc;
    return mt_memory_new(out, st, opts);
}

static const mt_test_store_opener mt_test_stores[] = {
    {"fs", mt_test_open_fs},
    {"remote", mt_test_open_remote},
};
#define MT_TEST_NSTORES (sizeof(mt_test_stores) / sizeof(mt_test_stores[0]))

#endif
