/* The memory stores: create, list, retrieve, update, archive, delete. */
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

/* --- memory stores ---------------------------------------------------- */

static json_t *store_json(json_t *record)
{
    json_t *o = json_object(), *v;
    const char *k;
    char t[32];

    if (!o)
        return NULL;
    json_object_set(o, "id", json_object_get(record, "id"));
    json_object_set_new(o, "type", json_string("memory_store"));
    json_object_set(o, "name", json_object_get(record, "name"));
    json_object_set(o, "description", json_object_get(record, "description"));
    json_object_set(o, "metadata", json_object_get(record, "metadata"));
    json_object_foreach(record, k, v)
    {
        if (strcmp(k, "created_at") && strcmp(k, "updated_at") && strcmp(k, "archived_at"))
            continue;
        if (json_is_integer(v)) {
            mt_api_time(t, json_integer_value(v));
            json_object_set_new(o, k, json_string(t));
        } else {
            json_object_set_new(o, k, json_null());
        }
    }
    return o;
}

static int metadata_check(mt_http_reply *out, const mt_http_request *req, json_t *md, int patch)
{
    const char *k;
    json_t *v;

    if (!json_is_object(md)) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "metadata must be an object of strings");
        return -1;
    }
    json_object_foreach(md, k, v)
    {
        size_t kl = strlen(k);
        if (kl == 0 || mt_routes_chars(k, kl) > 64 || mt_routes_has_control(k, kl)) {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "a metadata key is 1 to 64 characters, no control characters");
            return -1;
        }
        if (patch && json_is_null(v))
            continue;
        if (!json_is_string(v) ||
            mt_routes_chars(json_string_value(v), json_string_length(v)) > 512) {
            mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                            "metadata value of '%.64s' must be a string of at most 512 "
                            "characters%s",
                            k, patch ? " (or null to remove the key)" : "");
            return -1;
        }
    }
    return 0;
}

static int name_check(mt_http_reply *out, const mt_http_request *req, const char *s, size_t len)
{
    if (len == 0 || mt_routes_chars(s, len) > 255 || mt_routes_has_control(s, len)) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "name must be 1 to 255 characters with no control characters");
        return -1;
    }
    return 0;
}

static int description_check(mt_http_reply *out, const mt_http_request *req, const char *s,
                             size_t len)
{
    if (mt_routes_chars(s, len) > 1024) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "description must be at most 1,024 characters");
        return -1;
    }
    return 0;
}

const char *mt_routes_actor_of(const mt_http_request *req, char buf[48])
{
    /* A front end that vouched for the request named its actor itself. */
    if (req->actor && *req->actor)
        snprintf(buf, 48, "%s", req->actor);
    else
        snprintf(buf, 48, "api:%s", req->key->id);
    return buf;
}

void mt_routes_store_create(mt_http_reply *out, mt_registry *reg, const mt_http_request *req)
{
    json_t *body = mt_routes_body_object(out, req, 1), *md;
    const char *name, *desc;
    size_t nlen, dlen;
    mt_registry_entry e;
    char actor[48];
    int rc;

    if (!body)
        return;
    if ((rc = mt_routes_member_string(&name, &nlen, out, req, body, "name", 0)) < 0 ||
        mt_routes_member_string(&desc, &dlen, out, req, body, "description", 1) < 0)
        goto done;
    if (rc == 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "name is required");
        goto done;
    }
    if (name_check(out, req, name, nlen) < 0 ||
        (desc && description_check(out, req, desc, dlen) < 0))
        goto done;
    md = json_object_get(body, "metadata");
    if (md && json_is_null(md))
        md = NULL;
    if (md && (metadata_check(out, req, md, 0) < 0))
        goto done;
    if (md && json_object_size(md) > 16) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "metadata holds at most 16 pairs");
        goto done;
    }
    if ((rc = mt_registry_create(&e, reg, req->key->tenant, name, desc, md,
                                 mt_routes_actor_of(req, actor))) < 0) {
        mt_routes_fail(out, req, rc);
        goto done;
    }
    mt_routes_ok(out, store_json(e.record));
    mt_registry_entry_dispose(&e);
done:
    json_decref(body);
}

int64_t mt_routes_record_ms(json_t *record, const char *name)
{
    json_t *v = json_object_get(record, name);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

/* Newest first; ties by id. */
static int store_order(const void *a, const void *b)
{
    json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int64_t tx = mt_routes_record_ms(x, "created_at"), ty = mt_routes_record_ms(y, "created_at");

    if (tx != ty)
        return tx > ty ? -1 : 1;
    return -strcmp(json_string_value(json_object_get(x, "id")),
                   json_string_value(json_object_get(y, "id")));
}

void mt_routes_store_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req)
{
    json_t *all = NULL, **sorted = NULL, *data = NULL, *res;
    const char *arch = mt_routes_query(req, "include_archived");
    int include_archived = arch && (strcmp(arch, "true") == 0 || strcmp(arch, "1") == 0);
    int64_t gte, lte;
    size_t limit, n, i, taken = 0;
    char *after = NULL, key[64], last[64] = "";
    int rc, more = 0;

    if (mt_routes_limit_param(&limit, out, req, 100, 20) < 0 ||
        mt_routes_page_param(&after, out, req) < 0 ||
        mt_routes_time_param(&gte, out, req, "created_at[gte]") < 0 ||
        mt_routes_time_param(&lte, out, req, "created_at[lte]") < 0)
        goto done;
    if ((rc = mt_registry_list(&all, reg, req->key->tenant)) < 0) {
        mt_routes_fail(out, req, rc);
        goto done;
    }
    n = json_array_size(all);
    if (!(sorted = calloc(n + 1, sizeof(json_t *))) || !(data = json_array()))
        goto nomem;
    for (i = 0; i < n; i++)
        sorted[i] = json_array_get(all, i);
    qsort(sorted, n, sizeof(json_t *), store_order);
    for (i = 0; i < n; i++) {
        json_t *r = sorted[i];
        int64_t at = mt_routes_record_ms(r, "created_at");
        snprintf(key, sizeof(key), "%020lld:%s", (long long)at,
                 json_string_value(json_object_get(r, "id")));
        if (after && strcmp(key, after) >= 0)
            continue; /* the newest-first order runs keys downwards */
        if (!include_archived && mt_routes_record_ms(r, "archived_at"))
            continue;
        if ((gte && at < gte) || (lte && at > lte))
            continue;
        if (taken == limit) {
            more = 1;
            break;
        }
        json_array_append_new(data, store_json(r));
        snprintf(last, sizeof(last), "%s", key);
        taken++;
    }
    res = json_pack("{s:O, s:o}", "data", data, "next_page",
                    more ? mt_routes_cursor(last) : json_null());
    mt_routes_ok(out, res);
    goto done;
nomem:
    mt_routes_fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
done:
    json_decref(data);
    json_decref(all);
    free(sorted);
    free(after);
}

void mt_routes_store_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                         const char *id)
{
    mt_registry_entry e;
    int rc = mt_registry_get(&e, reg, req->key->tenant, id);

    if (rc < 0) {
        mt_routes_fail(out, req, rc);
        return;
    }
    mt_routes_ok(out, store_json(e.record));
    mt_registry_entry_dispose(&e);
}

typedef struct {
    json_t *body;
    int archive;
    int64_t now;
} store_change;

int64_t mt_routes_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int apply_store_change(json_t *rec, void *payload)
{
    store_change *c = payload;
    json_t *v, *md;
    const char *k;
    int changed = 0;

    if (c->archive) {
        if (!mt_routes_record_ms(rec, "archived_at")) {
            json_object_set_new(rec, "archived_at", json_integer(c->now));
            json_object_set_new(rec, "updated_at", json_integer(c->now));
        }
        return 0;
    }
    if (mt_routes_record_ms(rec, "archived_at"))
        return mt_error_set(MT_ECONFLICT, "the memory store is archived: it can no longer be "
                                          "updated");
    if ((v = json_object_get(c->body, "name")) && json_is_string(v)) {
        changed |= !json_equal(v, json_object_get(rec, "name"));
        json_object_set(rec, "name", v);
    }
    if ((v = json_object_get(c->body, "description"))) {
        json_t *d = json_is_string(v) ? v : json_string("");
        changed |= !json_equal(d, json_object_get(rec, "description"));
        json_object_set(rec, "description", d);
        if (d != v)
            json_decref(d);
    }
    if ((v = json_object_get(c->body, "metadata")) && json_is_object(v)) {
        md = json_object_get(rec, "metadata");
        if (!json_is_object(md)) {
            md = json_object();
            json_object_set_new(rec, "metadata", md);
        }
        json_t *value;
        json_object_foreach(v, k, value)
        {
            json_t *old = json_object_get(md, k);
            if (json_is_null(value)) {
                changed |= old != NULL;
                json_object_del(md, k);
            } else {
                changed |= !old || !json_equal(old, value);
                json_object_set(md, k, value);
            }
        }
        if (json_object_size(md) > 16)
            return mt_error_set(MT_EINVAL, "metadata would hold %zu pairs, over 16",
                                json_object_size(md));
    }
    if (changed)
        json_object_set_new(rec, "updated_at", json_integer(c->now));
    return 0;
}

void mt_routes_store_change_run(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                                const char *id, json_t *body, int archive)
{
    store_change c = {body, archive, mt_routes_now_ms()};
    mt_registry_entry e;
    char actor[48];
    int rc = mt_registry_update(&e, reg, req->key->tenant, id, apply_store_change, &c,
                                mt_routes_actor_of(req, actor));

    if (rc == MT_ECONFLICT) {
        mt_routes_error(out, 409, "conflict_error", req->request_id, "%s",
                        mt_error_last()->message);
        return;
    }
    if (rc < 0) {
        mt_routes_fail(out, req, rc);
        return;
    }
    mt_routes_ok(out, store_json(e.record));
    mt_registry_entry_dispose(&e);
}

void mt_routes_store_update(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                            const char *id)
{
    json_t *body = mt_routes_body_object(out, req, 0), *md;
    const char *s;
    size_t len;
    int rc;

    if (!body)
        return;
    if ((rc = mt_routes_member_string(&s, &len, out, req, body, "name", 1)) < 0)
        goto done;
    if (rc && name_check(out, req, s, len) < 0)
        goto done;
    if ((rc = mt_routes_member_string(&s, &len, out, req, body, "description", 1)) < 0)
        goto done;
    if (rc && description_check(out, req, s, len) < 0)
        goto done;
    md = json_object_get(body, "metadata");
    if (md && !json_is_null(md) && metadata_check(out, req, md, 1) < 0)
        goto done;
    mt_routes_store_change_run(out, reg, req, id, body, 0);
done:
    json_decref(body);
}

void mt_routes_store_delete(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                            const char *id)
{
    char actor[48];
    int rc = mt_registry_delete(reg, req->key->tenant, id, mt_routes_actor_of(req, actor));

    if (rc < 0) {
        mt_routes_fail(out, req, rc);
        return;
    }
    mt_routes_ok(out, json_pack("{s:s, s:s}", "id", id, "type", "memory_store_deleted"));
}
