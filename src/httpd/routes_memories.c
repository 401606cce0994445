/* A store's memories: create, list, retrieve, update, delete. */
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

/* --- memories --------------------------------------------------------- */

/* The store's handle, for a change when `write` (an archived store takes
 * none: 409 conflict_error). Answers and returns NULL when it cannot. */
mt_memory *mt_routes_store_handle(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                                  const char *store_id, int write)
{
    mt_registry_entry e;
    mt_memory *m = NULL;
    int rc, archived;

    if ((rc = mt_registry_handle(&m, &e, reg, req->key->tenant, store_id)) < 0) {
        mt_routes_fail(out, req, rc);
        return NULL;
    }
    archived = mt_routes_record_ms(e.record, "archived_at") != 0;
    mt_registry_entry_dispose(&e);
    if (write && archived) {
        mt_registry_release(reg, m);
        mt_routes_error(out, 409, "conflict_error", req->request_id,
                        "memory store %s is archived: its memories can be read and deleted, "
                        "not created or changed",
                        store_id);
        return NULL;
    }
    return m;
}

static void conflict_reply(mt_http_reply *out, const mt_http_request *req,
                           const mt_memstore_conflict *c)
{
    json_t *err;

    mt_routes_error(out, 409, "memory_path_conflict_error", req->request_id, "%s",
                    mt_error_last()->message);
    err = json_object_get(out->body, "error");
    json_object_set_new(err, "conflicting_memory_id", json_string(c->memory_id));
    json_object_set_new(err, "conflicting_path",
                        c->path ? mt_api_string(c->path, strlen(c->path)) : json_null());
}

static int content_check(mt_http_reply *out, const mt_http_request *req, size_t len)
{
    if (len > MT_MEMSTORE_MAX_CONTENT) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "content is %zu bytes, over the limit of %d bytes (100 kB)", len,
                        MT_MEMSTORE_MAX_CONTENT);
        return -1;
    }
    return 0;
}

static int path_ok(mt_http_reply *out, const mt_http_request *req, const char *path, size_t len)
{
    if (mt_memstore_path_check("path", path, len) < 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "%s",
                        mt_error_last()->message);
        return 0;
    }
    return 1;
}

void mt_routes_memory_create(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                             const char *store_id)
{
    json_t *body;
    const char *path, *content;
    size_t plen, clen;
    mt_memstore_memory mem;
    mt_memstore_conflict c;
    mt_memory *m = NULL;
    char actor[48];
    int view = mt_routes_view_param(out, req, 0), rc;

    if (view < 0 || !(body = mt_routes_body_object(out, req, 1)))
        return;
    if ((rc = mt_routes_member_string(&path, &plen, out, req, body, "path", 0)) < 0 ||
        mt_routes_member_string(&content, &clen, out, req, body, "content", 1) < 0)
        goto done;
    if (rc == 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "path is required");
        goto done;
    }
    if (!path_ok(out, req, path, plen) || content_check(out, req, clen) < 0)
        goto done;
    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 1)))
        goto done;
    mt_memstore_actor(mt_routes_actor_of(req, actor));
    rc = mt_memstore_create(&mem, &c, m, path, content ? content : "", clen);
    mt_memstore_actor(NULL);
    if (rc == MT_EEXISTS)
        conflict_reply(out, req, &c);
    else if (rc < 0)
        mt_routes_fail(out, req, rc);
    else {
        /* The content as stored (the secrets policy may have redacted it). */
        char id[24];
        snprintf(id, sizeof(id), "%s", mem.id);
        mt_memstore_memory_dispose(&mem);
        if ((rc = mt_memstore_get(&mem, m, id, view)) < 0)
            mt_routes_fail(out, req, rc);
        else
            mt_routes_ok(out, mt_api_memory(&mem, store_id, view));
    }
    mt_memstore_memory_dispose(&mem);
    mt_memstore_conflict_dispose(&c);
done:
    mt_registry_release(reg, m);
    json_decref(body);
}

void mt_routes_memory_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                           const char *store_id)
{
    const char *prefix = mt_routes_query(req, "path_prefix"), *d = mt_routes_query(req, "depth");
    mt_memstore_memory *items = NULL;
    mt_memory *m = NULL;
    size_t limit, n = 0, i;
    char *after = NULL, *end;
    long depth = 0;
    int view = mt_routes_view_param(out, req, 0), more = 0, rc;
    json_t *data;

    if (view < 0 ||
        mt_routes_limit_param(&limit, out, req, view ? PAGE_FULL : PAGE_BASIC,
                              view ? PAGE_FULL : PAGE_BASIC) < 0 ||
        mt_routes_page_param(&after, out, req) < 0)
        goto done;
    if (prefix && mt_memstore_prefix_check("path_prefix", prefix, strlen(prefix)) < 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "%s",
                        mt_error_last()->message);
        goto done;
    }
    if (d) {
        depth = strtol(d, &end, 10);
        if (!*d || *end || depth < 0 || depth > 20) {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "depth must be a whole number from 0 to 20, not '%.32s'", d);
            goto done;
        }
    }
    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 0)))
        goto done;
    if ((rc = mt_memstore_list(&items, &n, &more, m, prefix ? prefix : "/", (unsigned)depth, after,
                               limit, view)) < 0) {
        mt_routes_fail(out, req, rc);
        goto done;
    }
    if (!(data = json_array())) {
        mt_routes_fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
        goto done;
    }
    for (i = 0; i < n; i++)
        json_array_append_new(data, mt_api_memory(&items[i], store_id, view));
    mt_routes_ok(out, json_pack("{s:o, s:o}", "data", data, "next_page",
                                more && n ? mt_routes_cursor(items[n - 1].path) : json_null()));
done:
    mt_memstore_memories_free(items, n);
    mt_registry_release(reg, m);
    free(after);
}

void mt_routes_memory_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                          const char *store_id, const char *id)
{
    mt_memstore_memory mem;
    mt_memory *m;
    int view = mt_routes_view_param(out, req, 1), rc;

    if (view < 0 || !(m = mt_routes_store_handle(out, reg, req, store_id, 0)))
        return;
    if ((rc = mt_memstore_get(&mem, m, id, view)) < 0)
        mt_routes_fail(out, req, rc);
    else
        mt_routes_ok(out, mt_api_memory(&mem, store_id, view));
    mt_memstore_memory_dispose(&mem);
    mt_registry_release(reg, m);
}

void mt_routes_memory_update(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                             const char *store_id, const char *id)
{
    json_t *body, *pre;
    const char *path, *content, *expect = NULL;
    size_t plen, clen;
    mt_memstore_memory mem = {0};
    mt_memstore_conflict c = {0};
    mt_memory *m = NULL;
    char actor[48];
    int view = mt_routes_view_param(out, req, 0), rc;

    if (view < 0 || !(body = mt_routes_body_object(out, req, 0)))
        return;
    if (mt_routes_member_string(&path, &plen, out, req, body, "path", 1) < 0 ||
        mt_routes_member_string(&content, &clen, out, req, body, "content", 1) < 0)
        goto done;
    if ((path && !path_ok(out, req, path, plen)) || content_check(out, req, clen) < 0)
        goto done;
    if ((pre = json_object_get(body, "precondition")) && !json_is_null(pre)) {
        json_t *t = json_object_get(pre, "type"), *h = json_object_get(pre, "content_sha256");
        if (!json_is_object(pre) || !json_is_string(t) ||
            strcmp(json_string_value(t), "content_sha256") != 0 || !json_is_string(h) ||
            json_string_length(h) != 64 || !mt_routes_is_hex(json_string_value(h), 64)) {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "precondition must be {\"type\": \"content_sha256\", "
                            "\"content_sha256\": 64 lowercase hex digits}");
            goto done;
        }
        expect = json_string_value(h);
    }
    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 1)))
        goto done;
    mt_memstore_actor(mt_routes_actor_of(req, actor));
    rc = mt_memstore_update(&mem, &c, m, id, path, content, clen, expect);
    mt_memstore_actor(NULL);
    if (rc == MT_EEXISTS)
        conflict_reply(out, req, &c);
    else if (rc < 0)
        mt_routes_fail(out, req, rc);
    else {
        if (view == 1) {
            mt_memstore_memory_dispose(&mem);
            if ((rc = mt_memstore_get(&mem, m, id, 1)) < 0) {
                mt_routes_fail(out, req, rc);
                goto done;
            }
        }
        mt_routes_ok(out, mt_api_memory(&mem, store_id, view));
    }
done:
    mt_memstore_memory_dispose(&mem);
    mt_memstore_conflict_dispose(&c);
    mt_registry_release(reg, m);
    json_decref(body);
}

void mt_routes_memory_delete(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                             const char *store_id, const char *id)
{
    const char *expect = mt_routes_query(req, "expected_content_sha256");
    mt_memory *m;
    char actor[48];
    int rc;

    if (expect && (strlen(expect) != 64 || !mt_routes_is_hex(expect, 64))) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "expected_content_sha256 must be 64 lowercase hex digits");
        return;
    }
    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 0)))
        return;
    mt_memstore_actor(mt_routes_actor_of(req, actor));
    rc = mt_memstore_delete(m, id, expect);
    mt_memstore_actor(NULL);
    mt_registry_release(reg, m);
    if (rc < 0) {
        mt_routes_fail(out, req, rc);
        return;
    }
    mt_routes_ok(out, json_pack("{s:s, s:s}", "id", id, "type", "memory_deleted"));
}
