/*
 * Store URLs. A store is named the way people already name these things:
 * file:DIR and sqlite:PATH (also in the file:///abs form), and for
 * PostgreSQL whatever libpq accepts, so that an operator can paste the
 * connection string the rest of their tools use. A memory store of the
 * memory-store API is named by its URL, as the API names it.
 */
#include "factory/store_url.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <memtool/store.h>

#include "remote/remote.h"
#include "util/url_shown.h"

static const struct {
    const char *scheme;
    mt_store_kind kind;
} schemes[] = {
    {"file:", MT_STORE_FILE},   {"sqlite:", MT_STORE_SQLITE}, {"postgresql:", MT_STORE_PG},
    {"postgres:", MT_STORE_PG}, {"https:", MT_STORE_REMOTE},  {"http:", MT_STORE_REMOTE},
};

static int has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The local path of file:PATH or file://[localhost]/PATH. */
static int local_path(const char **path, const char *scheme, const char *rest)
{
    if (has_prefix(rest, "//")) {
        const char *host = rest + 2, *slash = strchr(host, '/');
        size_t n;
        if (!slash)
            return mt_error_set(MT_EINVAL,
                                "'%s//%s' has no path: write %s///absolute/path or %srelative/path",
                                scheme, host, scheme, scheme);
        n = (size_t)(slash - host);
        if (n != 0 && !(n == 9 && strncmp(host, "localhost", 9) == 0))
            return mt_error_set(MT_EINVAL,
                                "a %s URL names a path on this machine, not on host '%.*s': write "
                                "%s///absolute/path",
                                scheme, (int)(n > 255 ? 255 : n), host, scheme);
        rest = slash;
    }
    if (!*rest)
        return mt_error_set(MT_EINVAL, "'%s' names no path: write %s/path/to/%s", scheme, scheme,
                            strcmp(scheme, "file:") == 0 ? "dir" : "memories.db");
    *path = rest;
    return 0;
}

int mt_store_url_parse(mt_store_url *out, const char *url)
{
    const char *rest = NULL, *target = NULL;
    size_t i;
    int rc;

    memset(out, 0, sizeof(*out));
    if (!url || !*url)
        return mt_error_set(MT_EINVAL, "no store URL given: use file:DIR, sqlite:PATH or "
                                       "postgresql://USER@HOST/DATABASE, or a memory store's "
                                       "https://HOST/v1/memory_stores/memstore_ID");
    for (i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
        if (has_prefix(url, schemes[i].scheme)) {
            out->kind = schemes[i].kind;
            rest = url + strlen(schemes[i].scheme);
            break;
        }
    }
    if (!rest) {
        char shown[240];
        mt_url_shown(shown, sizeof(shown), url);
        return mt_error_set(MT_EINVAL,
                            "'%s' is not a store URL: use file:DIR, sqlite:PATH or "
                            "postgresql://USER@HOST/DATABASE, or a memory store's "
                            "https://HOST/v1/memory_stores/memstore_ID (a directory alone is "
                            "--root DIR)",
                            shown);
    }
    if (out->kind == MT_STORE_REMOTE) {
        if ((rc = mt_remote_url_check(url)) < 0)
            return rc;
        target = url;
    } else if (out->kind == MT_STORE_PG) {
        /* libpq reads the URI whole (both schemes); after a bare
         * "postgresql:" comes a keyword string ("host=... dbname=..."). */
        target = has_prefix(rest, "//") ? url : rest;
        if (!*target)
            return mt_error_set(MT_EINVAL,
                                "'%s' names no database: write postgresql://USER@HOST/DATABASE or "
                                "postgresql:host=HOST dbname=DATABASE",
                                url);
    } else if ((rc = local_path(&target, url[0] == 'f' ? "file:" : "sqlite:", rest)) < 0) {
        return rc;
    }
    if (!(out->target = strdup(target)))
        return mt_error_set(MT_ENOMEM, "out of memory");
    return 0;
}

void mt_store_url_dispose(mt_store_url *url)
{
    if (!url)
        return;
    free(url->target);
    url->target = NULL;
}

/* Append s[0..n) to out, keeping room for the NUL. */
static void put(char *out, size_t size, size_t *len, const char *s, size_t n)
{
    if (*len + 1 >= size)
        return;
    if (n > size - 1 - *len)
        n = size - 1 - *len;
    memcpy(out + *len, s, n);
    *len += n;
    out[*len] = '\0';
}

/* Where a keyword string's or a query's password value ends. */
static size_t value_end(const char *v)
{
    size_t i = 0;

    if (v[0] == '\'') {
        for (i = 1; v[i] && v[i] != '\''; i++)
            if (v[i] == '\\' && v[i + 1])
                i++;
        return v[i] ? i + 1 : i;
    }
    while (v[i] && v[i] != ' ' && v[i] != '\t' && v[i] != '\n' && v[i] != '&')
        i++;
    return i;
}

void mt_store_url_display(char *out, size_t size, const char *url)
{
    size_t len = 0, i = 0, n = strlen(url), auth_end = 0, at = 0;
    const char *sep = strstr(url, "://");

    out[0] = '\0';
    /* user:PASSWORD@ in a URI's authority. */
    if (sep) {
        size_t a = (size_t)(sep - url) + 3, j;
        auth_end = a + strcspn(url + a, "/?#");
        for (j = a; j < auth_end; j++)
            if (url[j] == '@')
                at = j;
        if (at) {
            const char *colon = memchr(url + a, ':', at - a);
            if (colon) {
                put(out, size, &len, url, (size_t)(colon - url) + 1);
                put(out, size, &len, "***", 3);
                i = at;
            }
        }
    }
    while (i < n) {
        /* password=VALUE in a keyword string or a URI's query. */
        if (strncmp(url + i, "password", 8) == 0 && (i == 0 || strchr(" \t\n?&:", url[i - 1]))) {
            size_t j = i + 8;
            while (url[j] == ' ' || url[j] == '\t')
                j++;
            if (url[j] == '=') {
                j++;
                while (url[j] == ' ' || url[j] == '\t')
                    j++;
                put(out, size, &len, url + i, j - i);
                put(out, size, &len, "***", 3);
                i = j + value_end(url + j);
                continue;
            }
        }
        put(out, size, &len, url + i, 1);
        i++;
    }
}

/* A tenant as the stores name it: NULL and "" are the store's own. */
static const char *tenant_name(const char *tenant)
{
    return tenant && *tenant ? tenant : "default";
}

int mt_store_same(int *same, const char *url_a, const char *tenant_a, const char *url_b,
                  const char *tenant_b)
{
    mt_store_url a = {MT_STORE_FILE, NULL}, b = {MT_STORE_FILE, NULL};
    struct stat sa, sb;
    int rc;

    *same = 0;
    if ((rc = mt_store_url_parse(&a, url_a)) < 0 || (rc = mt_store_url_parse(&b, url_b)) < 0)
        goto done;
    if (a.kind != b.kind || strcmp(tenant_name(tenant_a), tenant_name(tenant_b)) != 0)
        goto done;
    if (a.kind == MT_STORE_PG || a.kind == MT_STORE_REMOTE)
        *same = strcmp(a.target, b.target) == 0;
    else
        /* The thing itself, not its spelling: a symlink or a relative path
         * to the same directory or file is the same store. */
        *same = stat(a.target, &sa) == 0 && stat(b.target, &sb) == 0 && sa.st_dev == sb.st_dev &&
                sa.st_ino == sb.st_ino;
done:
    mt_store_url_dispose(&a);
    mt_store_url_dispose(&b);
    return rc < 0 ? rc : 0;
}
