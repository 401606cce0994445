/* The memory-store API's 14 endpoints (the SDK's src/resources/beta/memory-stores): the routing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool/store.h>

#include "core/memstore.h"
#include "httpd/api_json.h"
#include "core/memstore_path.h"
#include "httpd/routes_internal.h"
#include "util/sha256.h"
#include "util/utf8.h"

/* --- routing ---------------------------------------------------------- */

static int split(char *segs[MAX_SEGMENTS], char *path)
{
    int n = 0;
    char *s, *save = NULL;

    for (s = strtok_r(path, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (n == MAX_SEGMENTS)
            return -1;
        segs[n++] = s;
    }
    return n;
}

static void not_found(mt_http_reply *out, const mt_http_request *req)
{
    out->name = "not_found";
    mt_routes_error(out, 404, "not_found_error", req->request_id, "no such endpoint or object");
}

void mt_routes_bad_method(mt_http_reply *out, const mt_http_request *req, const char *allowed)
{
    mt_routes_error(out, 405, "invalid_request_error", req->request_id,
                    "method %s is not allowed here (allowed: %s)", req->method, allowed);
}

static void read_only(mt_http_reply *out, const mt_http_request *req)
{
    out->name = "forbidden";
    mt_routes_error(out, 403, "permission_error", req->request_id,
                    "this key is read-only: it cannot change memory stores");
}

static int is(const mt_http_request *req, const char *method)
{
    return strcmp(req->method, method) == 0;
}

void mt_routes_dispatch(mt_http_reply *out, mt_registry *reg, const mt_http_request *req)
{
    char *path = strdup(req->path), *s[MAX_SEGMENTS];
    int n, write = !is(req, "GET") && !is(req, "HEAD");
    int64_t vid;

    memset(out, 0, sizeof(*out));
    out->name = "memory_stores";
    if (!path) {
        mt_routes_fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
        return;
    }
    n = split(s, path);
    if (n >= 5 && strcmp(s[0], "memtool") == 0 && strcmp(s[1], "v1") == 0 &&
        strcmp(s[2], "memory_stores") == 0 && mt_routes_store_id_ok(s[3])) {
        if (write && req->key->read_only)
            read_only(out, req);
        else
            mt_routes_memtool(out, reg, req, s, n);
        goto done;
    }
    if (n < 2 || strcmp(s[0], "v1") != 0 || strcmp(s[1], "memory_stores") != 0) {
        not_found(out, req);
        goto done;
    }
    if (n >= 3 && !mt_routes_store_id_ok(s[2])) {
        not_found(out, req);
        goto done;
    }
    if (write && req->key->read_only) {
        read_only(out, req);
        goto done;
    }
    /* The plain store (mt_httpd_config.plain_store) is the store itself:
     * not the API's to rename, archive or delete. */
    if (write && (n == 3 || (n == 4 && strcmp(s[3], "archive") == 0)) &&
        mt_registry_is_plain(reg, s[2])) {
        out->name = "store";
        mt_routes_error(out, 409, "conflict_error", req->request_id,
                        "%s is the plain store (the store this server was given): it cannot be "
                        "changed, archived or deleted here",
                        s[2]);
        goto done;
    }
    if (n == 2) {
        out->name = "stores";
        if (is(req, "POST"))
            mt_routes_store_create(out, reg, req);
        else if (is(req, "GET"))
            mt_routes_store_list(out, reg, req);
        else
            mt_routes_bad_method(out, req, "GET, POST");
    } else if (n == 3) {
        out->name = "store";
        if (is(req, "GET"))
            mt_routes_store_get(out, reg, req, s[2]);
        else if (is(req, "POST"))
            mt_routes_store_update(out, reg, req, s[2]);
        else if (is(req, "DELETE"))
            mt_routes_store_delete(out, reg, req, s[2]);
        else
            mt_routes_bad_method(out, req, "GET, POST, DELETE");
    } else if (n == 4 && strcmp(s[3], "archive") == 0) {
        out->name = "store_archive";
        if (is(req, "POST"))
            mt_routes_store_change_run(out, reg, req, s[2], NULL, 1);
        else
            mt_routes_bad_method(out, req, "POST");
    } else if (n == 4 && strcmp(s[3], "memories") == 0) {
        out->name = "memories";
        if (is(req, "POST"))
            mt_routes_memory_create(out, reg, req, s[2]);
        else if (is(req, "GET"))
            mt_routes_memory_list(out, reg, req, s[2]);
        else
            mt_routes_bad_method(out, req, "GET, POST");
    } else if (n == 5 && strcmp(s[3], "memories") == 0) {
        out->name = "memory";
        if (!mt_routes_memory_id_ok(s[4]))
            not_found(out, req);
        else if (is(req, "GET"))
            mt_routes_memory_get(out, reg, req, s[2], s[4]);
        else if (is(req, "POST"))
            mt_routes_memory_update(out, reg, req, s[2], s[4]);
        else if (is(req, "DELETE"))
            mt_routes_memory_delete(out, reg, req, s[2], s[4]);
        else
            mt_routes_bad_method(out, req, "GET, POST, DELETE");
    } else if (n == 4 && strcmp(s[3], "memory_versions") == 0) {
        out->name = "versions";
        if (is(req, "GET"))
            mt_routes_version_list(out, reg, req, s[2]);
        else
            mt_routes_bad_method(out, req, "GET");
    } else if (n == 5 && strcmp(s[3], "memory_versions") == 0) {
        out->name = "version";
        if (!mt_routes_version_id(&vid, s[4]))
            not_found(out, req);
        else if (is(req, "GET"))
            mt_routes_version_get(out, reg, req, s[2], vid, 0);
        else
            mt_routes_bad_method(out, req, "GET");
    } else if (n == 6 && strcmp(s[3], "memory_versions") == 0 && strcmp(s[5], "redact") == 0) {
        out->name = "version_redact";
        if (!mt_routes_version_id(&vid, s[4]))
            not_found(out, req);
        else if (is(req, "POST"))
            mt_routes_version_get(out, reg, req, s[2], vid, 1);
        else
            mt_routes_bad_method(out, req, "POST");
    } else {
        not_found(out, req);
    }
done:
    free(path);
}
