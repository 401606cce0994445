/*
 * What memtool keeps that the memory-store API has no call for, under
 * /memtool/v1/memory_stores/{S}/: search with snippets, a version's diff
 * against the one before, restore, the store's usage against its limits and
 * the memories idle longest. The memory browser (src/web) uses them; any
 * client with a key may. The same keys, stores and checks as the API's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memtool.h>
#include <memtool/store.h>

#include "core/version_base.h"
#include "core/memstore.h"
#include "diff/diff.h"
#include "httpd/api_json.h"
#include "httpd/routes_internal.h"
#include "util/api_path.h"
#include "util/buf.h"

static void search(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                   const char *store_id)
{
    const char *q = mt_routes_query(req, "q");
    mt_search_options so = {NULL, 20};
    mt_search_hit *hits = NULL;
    size_t n = 0, i;
    mt_memory *m;
    json_t *data;
    int rc;

    if (!q || !*q) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "q (the words to search for) is required");
        return;
    }
    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 0)))
        return;
    if ((rc = mt_memory_search(&hits, &n, m, q, &so)) < 0) {
        mt_routes_fail(out, req, rc);
        goto done;
    }
    data = json_array();
    for (i = 0; data && i < n; i++) {
        json_t *h = json_object();
        json_object_set_new(h, "path", mt_api_path(hits[i].path));
        json_object_set_new(h, "score", json_real(hits[i].score));
        json_object_set_new(h, "matches", json_integer((json_int_t)hits[i].matches));
        json_object_set_new(h, "line", json_integer(hits[i].line));
        json_object_set_new(h, "before", mt_api_string(hits[i].before, strlen(hits[i].before)));
        json_object_set_new(h, "match", mt_api_string(hits[i].match, strlen(hits[i].match)));
        json_object_set_new(h, "after", mt_api_string(hits[i].after, strlen(hits[i].after)));
        json_array_append_new(data, h);
    }
    mt_routes_ok(out, json_pack("{s:s, s:o}", "type", "search_results", "data", data));
done:
    mt_search_hits_free(hits, n);
    mt_registry_release(reg, m);
}

static int content_of(char **out, size_t *len, mt_memory *m, const mt_version *v)
{
    *out = NULL;
    *len = 0;
    if (v->redacted || v->operation == MT_VERSION_DELETED)
        return 0;
    return mt_memory_version_content(out, len, m, v->id);
}

/* VID against the version memtool diff compares it with: the readable one
 * before it (mt_history_find_base), the redacted ones passed over named. */
static void diff(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                 const char *store_id, int64_t vid)
{
    mt_version v = {0}, p = {0};
    mt_diff_opts o = MT_DIFF_OPTS_INIT;
    mt_buf text = {0};
    char *a = NULL, *b = NULL, pid[32] = "", vid_s[32], la[1100], lb[1100];
    size_t alen = 0, blen = 0, nskipped = 0, i;
    int64_t *skipped = NULL;
    json_t *passed = NULL;
    mt_memory *m;
    int rc;

    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 0)))
        return;
    /* 404 for no such version only; a store that fails says so. */
    if ((rc = mt_memory_version(&v, m, vid)) == MT_ENOTFOUND) {
        mt_routes_error(out, 404, "not_found_error", req->request_id, "no memory version %s%lld",
                        "memver_", (long long)vid);
        goto done;
    }
    if (rc < 0 || (rc = mt_history_find_base(&p, &skipped, &nskipped, m, &v)) < 0 ||
        (p.id && (rc = content_of(&a, &alen, m, &p)) < 0) ||
        (rc = content_of(&b, &blen, m, &v)) < 0) {
        mt_routes_fail(out, req, rc);
        goto done;
    }
    /* Labelled with the API's paths, as the page shows them. */
    snprintf(la, sizeof(la), "%s",
             p.id && p.path && p.operation != MT_VERSION_DELETED ? mt_api_path_name(p.path)
                                                                 : "/dev/null");
    snprintf(lb, sizeof(lb), "%s",
             v.operation != MT_VERSION_DELETED && v.path ? mt_api_path_name(v.path) : "/dev/null");
    o.old_label = la;
    o.new_label = lb;
    if ((rc = mt_diff_unified(&text, a ? a : "", alen, b ? b : "", blen, &o)) < 0 ||
        !(passed = json_array())) {
        mt_routes_fail(out, req, rc < 0 ? rc : mt_error_set(MT_ENOMEM, "out of memory"));
        goto done;
    }
    for (i = 0; i < nskipped; i++)
        if (json_array_append_new(passed, json_sprintf("memver_%lld", (long long)skipped[i])) < 0) {
            mt_routes_fail(out, req, mt_error_set(MT_ENOMEM, "out of memory"));
            goto done;
        }
    snprintf(vid_s, sizeof(vid_s), "memver_%lld", (long long)vid);
    if (p.id)
        snprintf(pid, sizeof(pid), "memver_%lld", (long long)p.id);
    mt_routes_ok(out, json_pack("{s:s, s:s, s:o, s:b, s:o, s:o}", "type", "memory_version_diff",
                                "memory_version_id", vid_s, "previous_version_id",
                                p.id ? json_string(pid) : json_null(), "redacted", v.redacted,
                                "redacted_skipped", passed, "diff",
                                mt_api_string(text.ptr ? text.ptr : "", text.len)));
    passed = NULL;
done:
    json_decref(passed);
    free(skipped);
    mt_buf_dispose(&text);
    free(a);
    free(b);
    mt_version_dispose(&v);
    mt_version_dispose(&p);
    mt_registry_release(reg, m);
}

/* A version brought back is a write through the API like any other: held to
 * the API's limits (100 kB, its path rules) even on the plain store, whose
 * own limits may be looser. 0, or -1 with *out the 400. */
static int restorable(mt_http_reply *out, const mt_http_request *req, const mt_version *v)
{
    const char *p;

    if (v->redacted || v->operation == MT_VERSION_DELETED)
        return 0; /* nothing to bring back: mt_memory_restore says so */
    if (v->content_size > MT_MEMSTORE_MAX_CONTENT) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id,
                        "memver_%lld is %llu bytes, over the API's limit of %d bytes (100 kB)",
                        (long long)v->id, (unsigned long long)v->content_size,
                        MT_MEMSTORE_MAX_CONTENT);
        return -1;
    }
    p = v->path ? mt_api_path_name(v->path) : "";
    if (mt_memstore_path_check("the version's path", p, strlen(p)) < 0) {
        mt_routes_error(out, 400, "invalid_request_error", req->request_id, "%s",
                        mt_error_last()->message);
        return -1;
    }
    return 0;
}

static void restore(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                    const char *store_id, int64_t vid)
{
    char actor[48], made[32];
    mt_version v = {0};
    int64_t id = 0;
    mt_memory *m;
    int rc;

    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 1)))
        return;
    if ((rc = mt_memory_version(&v, m, vid)) == MT_ENOTFOUND) {
        mt_routes_error(out, 404, "not_found_error", req->request_id, "no memory version %s%lld",
                        "memver_", (long long)vid);
        goto done;
    }
    if (rc < 0) {
        mt_routes_fail(out, req, rc);
        goto done;
    }
    if (restorable(out, req, &v) < 0)
        goto done;
    mt_memstore_actor(mt_routes_actor_of(req, actor));
    rc = mt_memory_restore(&id, m, vid);
    mt_memstore_actor(NULL);
    if (rc == MT_EEXISTS)
        mt_routes_error(out, 409, "memory_path_conflict_error", req->request_id, "%s",
                        mt_error_last()->message);
    else if (rc < 0)
        mt_routes_fail(out, req, rc);
    else {
        snprintf(made, sizeof(made), "memver_%lld", (long long)id);
        mt_routes_ok(out, json_pack("{s:s, s:o}", "type", "memory_version_restored",
                                    "memory_version_id", id ? json_string(made) : json_null()));
    }
done:
    mt_version_dispose(&v);
    mt_registry_release(reg, m);
}

/* Each file's path, size and times; with expire_after_ms, when the agents'
 * expiry deletes it (its last access plus that idle time). */
static json_t *files_json(const mt_stats_file *f, size_t n, int64_t expire_after_ms)
{
    json_t *a = json_array();
    char t1[32], t2[32], t3[32];
    size_t i;

    for (i = 0; a && i < n; i++) {
        json_t *o;
        mt_api_time(t1, f[i].last_access_ms);
        mt_api_time(t2, f[i].modified_ms);
        o = json_pack("{s:o, s:I, s:s, s:s}", "path", mt_api_path(f[i].path), "size",
                      (json_int_t)f[i].size, "last_access_at", t1, "modified_at", t2);
        if (o && expire_after_ms > 0 && f[i].last_access_ms > 0) {
            mt_api_time(t3, f[i].last_access_ms + expire_after_ms);
            json_object_set_new(o, "expires_at", json_string(t3));
        }
        json_array_append_new(a, o);
    }
    return a;
}

static void stats(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                  const char *store_id)
{
    int64_t expiry = mt_registry_expiry(reg);
    mt_stats st;
    mt_memory *m;
    int rc;

    if (!(m = mt_routes_store_handle(out, reg, req, store_id, 0)))
        return;
    memset(&st, 0, sizeof(st));
    if ((rc = mt_memory_stats(&st, m)) < 0) {
        mt_routes_fail(out, req, rc);
    } else {
        mt_routes_ok(
            out, json_pack("{s:s, s:{s:I, s:I, s:I}, s:{s:I, s:I, s:I, s:I}, s:o, s:o, s:I, s:o}",
                           "type", "memory_store_stats", "used", "bytes",
                           (json_int_t)st.usage.bytes, "memories", (json_int_t)st.usage.files,
                           "directories", (json_int_t)st.usage.dirs, "limits", "max_memory_bytes",
                           (json_int_t)st.max_file_size, "max_store_bytes",
                           (json_int_t)st.max_store_size, "max_memories", (json_int_t)st.max_files,
                           "max_directories", (json_int_t)st.max_dirs, "largest",
                           files_json(st.largest, st.nlargest, 0), "idlest",
                           files_json(st.idlest, st.nidlest, expiry), "versions",
                           (json_int_t)st.versions, "expire_after_ms",
                           expiry > 0 ? json_integer((json_int_t)expiry) : json_null()));
    }
    mt_stats_dispose(&st);
    mt_registry_release(reg, m);
}

/* The audit log's tail that a refusals list reads: its last lines only. */
#define AUDIT_TAIL (1024 * 1024)
#define REFUSALS   100

/*
 * What the secrets guard refused, from the audit log (--audit) that the
 * memory tool's calls append to: newest first, each with its time, actor,
 * command, path and what was found (kind and line: the log never holds the
 * secret). The log names no tenant, so only the plain store (memtool web's,
 * whose person can read the log anyway) answers it.
 */
static void guard(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                  const char *store_id)
{
    const char *path = mt_registry_audit(reg);
    json_t *data = NULL, *l, *g, *item;
    char *text = NULL, *line, *next;
    struct stat st;
    off_t from;
    ssize_t got;
    int fd = -1, rc = 0;

    if (!mt_registry_is_plain(reg, store_id)) {
        mt_routes_error(out, 404, "not_found_error", req->request_id,
                        "the guard's refusals are kept for the plain store only (the audit log "
                        "names no tenant)");
        return;
    }
    /* Out of memory is an error, never a shorter list: an empty one says
     * the guard refused nothing. */
    if (!(data = json_array())) {
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    /* No log yet: nothing refused yet. */
    if (path && (fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0 && errno != ENOENT) {
        rc = mt_error_set(MT_EIO, "the audit log cannot be read: %s", strerror(errno));
        goto done;
    }
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        from = st.st_size > AUDIT_TAIL ? st.st_size - AUDIT_TAIL : 0;
        if (!(text = malloc(AUDIT_TAIL + 1))) {
            rc = mt_error_set(MT_ENOMEM, "out of memory");
            goto done;
        }
        if ((got = pread(fd, text, (size_t)(st.st_size - from), from)) < 0) {
            rc = mt_error_set(MT_EIO, "the audit log cannot be read: %s", strerror(errno));
            goto done;
        }
        text[got] = '\0';
        line = text;
        /* A tail that starts mid-line starts at the next line. */
        if (from > 0 && (line = strchr(text, '\n')))
            line++;
        for (; line && *line; line = next) {
            const char *p;
            int refusal;
            if ((next = strchr(line, '\n')))
                *next++ = '\0';
            l = json_loads(line, 0, NULL);
            g = json_object_get(l, "guard");
            p = json_string_value(json_object_get(l, "path"));
            refusal = json_is_string(g);
            item = refusal
                       ? json_pack("{s:O?, s:O?, s:O?, s:o, s:O}", "time",
                                   json_object_get(l, "time"), "actor", json_object_get(l, "actor"),
                                   "command", json_object_get(l, "command"), "path",
                                   p ? mt_api_path(p) : json_null(), "guard", g)
                       : NULL;
            json_decref(l);
            if (refusal && (!item || json_array_insert_new(data, 0, item) < 0)) {
                rc = mt_error_set(MT_ENOMEM, "out of memory");
                goto done;
            }
            if (json_array_size(data) > REFUSALS)
                json_array_remove(data, REFUSALS);
        }
    }
    mt_routes_ok(out, json_pack("{s:s, s:b, s:o}", "type", "guard_refusals", "audit_log",
                                path != NULL, "data", data));
    data = NULL; /* the answer's, or freed by json_pack when it failed */
done:
    if (rc < 0)
        mt_routes_fail(out, req, rc);
    json_decref(data);
    if (fd >= 0)
        close(fd);
    free(text);
}

/* The calls, each with its one method. */
typedef void (*store_call)(mt_http_reply *, mt_registry *, const mt_http_request *, const char *);
typedef void (*version_call)(mt_http_reply *, mt_registry *, const mt_http_request *, const char *,
                             int64_t);

void mt_routes_memtool(mt_http_reply *out, mt_registry *reg, const mt_http_request *req, char **s,
                       int n)
{
    static const struct {
        const char *name, *route;
        store_call call;
    } by_store[] = {{"search", "memtool_search", search},
                    {"guard", "memtool_guard", guard},
                    {"stats", "memtool_stats", stats}};
    static const struct {
        const char *name, *route, *method;
        version_call call;
    } by_version[] = {{"diff", "memtool_diff", "GET", diff},
                      {"restore", "memtool_restore", "POST", restore}};
    int get = strcmp(req->method, "GET") == 0;
    int64_t vid;
    size_t i;

    /* s: "memtool", "v1", "memory_stores", S, ... */
    for (i = 0; n == 5 && i < sizeof(by_store) / sizeof(by_store[0]); i++)
        if (strcmp(s[4], by_store[i].name) == 0) {
            out->name = by_store[i].route;
            if (get)
                by_store[i].call(out, reg, req, s[3]);
            else
                mt_routes_bad_method(out, req, "GET");
            return;
        }
    for (i = 0; n == 7 && i < sizeof(by_version) / sizeof(by_version[0]); i++)
        if (strcmp(s[4], "memory_versions") == 0 && mt_routes_version_id(&vid, s[5]) &&
            strcmp(s[6], by_version[i].name) == 0) {
            out->name = by_version[i].route;
            if (strcmp(req->method, by_version[i].method) == 0)
                by_version[i].call(out, reg, req, s[3], vid);
            else
                mt_routes_bad_method(out, req, by_version[i].method);
            return;
        }
    out->name = "not_found";
    mt_routes_error(out, 404, "not_found_error", req->request_id, "no such endpoint or object");
}
