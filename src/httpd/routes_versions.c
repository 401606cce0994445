/* A store's memory versions: list, retrieve, redact. */
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

/* --- versions --------------------------------------------------------- */

/* When and by whom a version was redacted, from the store's record. */
static void redaction_of(int64_t *at, const char **by, json_t *record, int64_t vid)
{
    char key[32];
    json_t *r;

    snprintf(key, sizeof(key), "memver_%lld", (long long)vid);
    r = json_object_get(json_object_get(record, "redactions"), key);
    *at = mt_routes_record_ms(r, "at");
    *by = json_string_value(json_object_get(r, "by"));
}

static json_t *version_json(mt_memory *m, const mt_version *v, json_t *record, const char *store_id,
                            int full)
{
    char *content = NULL;
    size_t len = 0;
    int64_t at = 0;
    const char *by = NULL;
    json_t *j;

    if (full && !v->redacted && v->operation != MT_VERSION_DELETED)
        mt_memory_version_content(&content, &len, m, v->id);
    if (v->redacted)
        redaction_of(&at, &by, record, v->id);
    j = mt_api_version(v, store_id, content, len, full, at, by);
    free(content);
    return j;
}

void mt_routes_version_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                            const char *store_id)
{
    const char *mid = mt_routes_query(req, "memory_id"), *op = mt_routes_query(req, "operation");
    const char *key = mt_routes_query(req, "api_key_id"),
               *sess = mt_routes_query(req, "session_id");
    const char *svc = mt_routes_query(req, "service_account_id");
    mt_log_query q = {0};
    mt_registry_entry e = {0};
    mt_version *v = NULL;
    mt_memory *m = NULL;
    size_t limit, n = 0, i;
    char actor[300], *page = NULL;
    int view = mt_routes_view_param(out, req, 0), rc;
    json_t *data;

    if (view < 0 ||
        mt_routes_limit_param(&limit, out, req, view ? PAGE_FULL : PAGE_BASIC, 20) < 0 ||
        mt_routes_page_param(&page, out, req) < 0 ||
        mt_routes_time_param(&q.since, out, req, "created_at[gte]") < 0 ||
        mt_routes_time_param(&q.until, out, req, "created_at[lte]") < 0)
        goto done;
    if (page && !mt_routes_version_id(&q.before_id, page)) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "page is not a cursor this server gave: pass next_page as it came");
        goto done;
    }
    if (mid && !mt_routes_memory_id_ok(mid)) {
        /* No memory has such an id: an empty page, as for any unknown id. */
        mt_routes_ok(out, json_pack("{s:[], s:n}", "data", "next_page"));
        goto done;
    }
    q.memory_id = mid;
    if (op) {
        if (strcmp(op, "created") == 0)
            q.operation = MT_VERSION_CREATED;
        else if (strcmp(op, "modified") == 0)
            q.operation = MT_VERSION_MODIFIED;
        else if (strcmp(op, "deleted") == 0)
            q.operation = MT_VERSION_DELETED;
        else {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "operation must be created, modified or deleted");
            goto done;
        }
    }
    if ((key && sess) || svc) {
        /* memtool records no service accounts, and a version has one actor. */
        mt_routes_ok(out, json_pack("{s:[], s:n}", "data", "next_page"));
        goto done;
    }
    if (key || sess) {
        snprintf(actor, sizeof(actor), "%s%.250s", key ? "api:" : "session:", key ? key : sess);
        q.actor = actor;
    }
    q.limit = limit + 1;
    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 0)))
        goto done;
    if ((rc = mt_registry_get(&e, reg, req->key->tenant, store_id)) < 0 ||
        (rc = mt_memory_log(&v, &n, m, &q)) < 0) {
        mt_routes_fail(out, req, rc == MT_ENOSYS ? MT_ERROR : rc);
        goto done;
    }
    if (!(data = json_array())) {
        mt_routes_fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
        goto done;
    }
    for (i = 0; i < n && i < limit; i++)
        json_array_append_new(data, version_json(m, &v[i], e.record, store_id, view));
    if (n > limit) {
        char c[32];
        snprintf(c, sizeof(c), "memver_%lld", (long long)v[limit - 1].id);
        mt_routes_ok(out, json_pack("{s:o, s:o}", "data", data, "next_page", mt_routes_cursor(c)));
    } else {
        mt_routes_ok(out, json_pack("{s:o, s:n}", "data", data, "next_page"));
    }
done:
    mt_versions_free(v, n);
    mt_registry_entry_dispose(&e);
    mt_registry_release(reg, m);
    free(page);
}

typedef struct {
    int64_t id;
    const char *by;
    int64_t at;
} redaction;

static int note_redaction(json_t *rec, void *payload)
{
    redaction *r = payload;
    json_t *all = json_object_get(rec, "redactions");
    char key[32];

    if (!json_is_object(all)) {
        all = json_object();
        json_object_set_new(rec, "redactions", all);
    }
    snprintf(key, sizeof(key), "memver_%lld", (long long)r->id);
    if (!json_object_get(all, key))
        json_object_set_new(all, key,
                            json_pack("{s:I, s:s}", "at", (json_int_t)r->at, "by", r->by));
    return 0;
}

void mt_routes_version_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                           const char *store_id, int64_t vid, int redact)
{
    mt_registry_entry e = {0};
    mt_version v = {0};
    mt_memory *m;
    char actor[48];
    int view = redact ? 0 : mt_routes_view_param(out, req, 1), rc;

    if (view < 0 || !(m = mt_routes_store_handle(out, reg, req, store_id, 0)))
        return;
    if ((rc = mt_memory_version(&v, m, vid)) < 0) {
        if (rc == MT_ENOTFOUND || rc == MT_EINVAL)
            mt_routes_error(out, 404, "not_found_error", req->request_id,
                            "no memory version %s%lld", "memver_", (long long)vid);
        else
            mt_routes_fail(out, req, rc);
        goto done;
    }
    if (redact && !v.redacted) {
        redaction r = {vid, mt_routes_actor_of(req, actor), mt_routes_now_ms()};
        if ((rc = mt_memory_redact(m, vid)) < 0) {
            if (rc == MT_EINVAL)
                mt_routes_error(out, 409, "conflict_error", req->request_id,
                                "version memver_%lld holds its memory's current content: change "
                                "or delete the memory first, then redact it",
                                (long long)vid);
            else
                mt_routes_fail(out, req, rc);
            goto done;
        }
        mt_version_dispose(&v);
        if ((rc = mt_registry_update(&e, reg, req->key->tenant, store_id, note_redaction, &r,
                                     actor)) < 0 ||
            (rc = mt_memory_version(&v, m, vid)) < 0) {
            mt_routes_fail(out, req, rc);
            goto done;
        }
    } else if ((rc = mt_registry_get(&e, reg, req->key->tenant, store_id)) < 0) {
        mt_routes_fail(out, req, rc);
        goto done;
    }
    mt_routes_ok(out, version_json(m, &v, e.record, store_id, view));
done:
    mt_version_dispose(&v);
    mt_registry_entry_dispose(&e);
    mt_registry_release(reg, m);
}
