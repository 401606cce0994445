/*
 * A remote store's history: the API's memory_versions, which the server
 * writes itself (one version a change), read as memtool's versions.
 *
 * Version ids. memtool counts versions with int64 ids; the API names them
 * with opaque strings. memtool server's are "memver_N" with N its own
 * version id, so N is the id, in both directions, in every process: the
 * same numbers `memtool log` shows on the server's store. Any other id
 * (another server's) is 2^62 plus the first 62 bits of its SHA-256: the
 * same in every process and on every machine, but not ordered by time and
 * not reversible, so such an id is found again by a scan of the versions,
 * remembered for the rest of the process.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "remote/remote_store.h"
#include "util/api_actor.h"
#include "util/rfc3339.h"
#include "util/sha256.h"

#define HASHED ((int64_t)1 << 62)
/* 1,000,000 versions: a bound for a history read through without the API's filters. */
#define MAX_HISTORY_PAGES 10000
/* The local stores' words for an id no version has (machinery/hist_read.c). */
#define NO_VERSION "there is no version %lld (see memtool log; old versions are pruned)"

/* The version ids met that are not memtool server's, with their API form. */
static mt_remote_ids version_ids = MT_REMOTE_IDS_INIT;

int64_t mt_remote_version_id(mt_remote_store *rs, const char *api)
{
    unsigned char md[32];
    int64_t n = 0;
    size_t i;

    (void)rs;
    if (strncmp(api, "memver_", 7) == 0 && api[7] >= '1' && api[7] <= '9' &&
        strlen(api) <= 7 + 18) {
        for (i = 7; api[i] >= '0' && api[i] <= '9'; i++)
            n = n * 10 + (api[i] - '0');
        if (!api[i] && n < HASHED)
            return n;
    }
    mt_sha256_digest(md, api, strlen(api));
    {
        uint64_t h = 0; /* unsigned: the digest's top bit would overflow a signed shift */
        for (i = 0; i < 8; i++)
            h = (h << 8) | md[i];
        n = HASHED | (int64_t)(h & (uint64_t)(HASHED - 1));
    }
    mt_remote_ids_put(&version_ids, (uint64_t)n, api);
    return n;
}

/* The API form of id: 1 with out filled, 0 when not known (yet). */
static int api_form(char *out, size_t size, int64_t id)
{
    if (id <= 0)
        return 0;
    if (id < HASHED) {
        snprintf(out, size, "memver_%lld", (long long)id);
        return 1;
    }
    return mt_remote_ids_get(&version_ids, (uint64_t)id, out, size);
}

static int version_parse(mt_remote_store *rs, mt_version *v, const json_t *o, char **content,
                         size_t *content_len)
{
    const char *id = json_string_value(json_object_get(o, "id"));
    const char *mem = json_string_value(json_object_get(o, "memory_id"));
    const char *op = json_string_value(json_object_get(o, "operation"));
    const json_t *jp = json_object_get(o, "path"), *jc = json_object_get(o, "content");
    const char *sha = json_string_value(json_object_get(o, "content_sha256"));
    const json_t *js = json_object_get(o, "content_size_bytes");
    const json_t *red = json_object_get(o, "redacted_at");

    memset(v, 0, sizeof(*v));
    if (!id || strlen(id) > 128 || !mem || strlen(mem) > 128 || !op)
        return mt_error_set(MT_EIO, "history: the server answered a version without its ids");
    v->id = mt_remote_version_id(rs, id);
    mt_remote_memory_id(v->memory_id, mem);
    v->operation = strcmp(op, "created") == 0    ? MT_VERSION_CREATED
                   : strcmp(op, "modified") == 0 ? MT_VERSION_MODIFIED
                   : strcmp(op, "deleted") == 0  ? MT_VERSION_DELETED
                                                 : 0;
    if (!v->operation)
        return mt_error_set(MT_EIO, "history: the server answered an unknown operation");
    v->redacted = red && !json_is_null(red);
    /* A time the server writes wrong is no reason to refuse its version. */
    if (mt_rfc3339_parse(&v->created_at, json_string_value(json_object_get(o, "created_at"))) < 0)
        v->created_at = 0;
    if (json_is_string(jp)) {
        if (!mt_remote_api_path_ok(json_string_value(jp), json_string_length(jp)))
            return mt_error_set(MT_EIO, "history: the server answered an unusable path");
        if (!(v->path = strdup(json_string_value(jp) + 1)))
            return MT_ENOMEM;
    }
    if (sha && strlen(sha) == 64)
        memcpy(v->content_sha256, sha, 65);
    if (json_is_integer(js) && json_integer_value(js) >= 0 &&
        json_integer_value(js) <= MT_REMOTE_MAX_CONTENT)
        v->content_size = (uint64_t)json_integer_value(js);
    if (!(v->actor = mt_api_actor_name(json_object_get(o, "created_by"))))
        goto nomem;
    if (content && json_is_string(jc)) {
        char got[65];
        size_t n = json_string_length(jc);
        mt_sha256_hex(got, json_string_value(jc), n);
        if (n != v->content_size || strcmp(got, v->content_sha256) != 0) {
            mt_version_dispose(v);
            return mt_error_set(MT_EIO, "history: the server answered content whose SHA-256 is "
                                        "not the version's");
        }
        if (!(*content = malloc(n + 1)))
            goto nomem;
        memcpy(*content, json_string_value(jc), n + 1);
        *content_len = n;
    }
    return 0;
nomem:
    mt_version_dispose(v);
    return mt_error_set(MT_ENOMEM, "out of memory");
}

static int list_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *query,
                         int64_t until);

/* The API form of id, scanning the versions for a hashed id not met yet,
 * up to that id. */
static int find_api_form(mt_remote_store *rs, char *out, size_t size, int64_t id)
{
    mt_version *v = NULL;
    size_t n = 0;
    mt_log_query q;
    int rc;

    if (api_form(out, size, id))
        return 0;
    memset(&q, 0, sizeof(q));
    q.limit = 100000;
    /* A history that could not be read is that error, not "no version". */
    if ((rc = list_versions(&rs->base, &v, &n, &q, id)) < 0)
        return rc;
    mt_versions_free(v, n);
    return api_form(out, size, id) ? 0 : mt_error_set(MT_ENOTFOUND, NO_VERSION, (long long)id);
}

static int versions_of_path(mt_store *st, mt_version **out, size_t *count,
                            const mt_log_query *query);

/*
 * A rename's former path. The API's versions carry each version's path, not
 * the one before it, so a modified version whose memory's previous version
 * had another path is a rename from there. The previous version is looked for
 * in the listing itself (newest first), else asked for: one request, by the
 * memory's id, for the version just before.
 */
static int previous_paths(mt_store *st, mt_version *v, size_t n)
{
    size_t i, j;
    int rc = 0;

    for (i = 0; i < n && rc == 0; i++) {
        const char *before = NULL;
        mt_version *prev = NULL;
        size_t np = 0;

        if (v[i].operation != MT_VERSION_MODIFIED || !v[i].path || v[i].previous_path)
            continue;
        for (j = i + 1; j < n && strcmp(v[j].memory_id, v[i].memory_id) != 0; j++)
            ;
        if (j < n) {
            before = v[j].path;
        } else {
            mt_log_query q;
            memset(&q, 0, sizeof(q));
            q.memory_id = v[i].memory_id;
            q.before_id = v[i].id;
            q.limit = 1;
            if ((rc = list_versions(st, &prev, &np, &q, 0)) < 0)
                break;
            before = np ? prev[0].path : NULL;
        }
        if (before && strcmp(before, v[i].path) != 0 && !(v[i].previous_path = strdup(before)))
            rc = mt_error_set(MT_ENOMEM, "out of memory");
        mt_versions_free(prev, np);
    }
    return rc;
}

int mt_remote_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *query)
{
    int rc = list_versions(st, out, count, query, 0);

    if (rc == 0 && (rc = previous_paths(st, *out, *count)) < 0) {
        mt_versions_free(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return rc;
}

/* The versions query asks for; with until, none past the version of that id. */
static int list_versions(mt_store *st, mt_version **out, size_t *count, const mt_log_query *query,
                         int64_t until)
{
    mt_remote_store *rs = (mt_remote_store *)st;
    mt_buf target = MT_BUF_INIT;
    mt_remote_walk w;
    size_t limit = query && query->limit ? query->limit : 100, cap = 0, pages = 0;
    const char *p = query && query->path ? query->path : "";
    size_t plen = strlen(p);
    int rc = 0, passed = !(query && query->before_id);
    char when[MT_RFC3339_SIZE], api_mem[200];

    *out = NULL;
    *count = 0;
    if (plen)
        return versions_of_path(st, out, count, query);
    mt_remote_walk_init(&w, (size_t)MAX_HISTORY_PAGES * MT_REMOTE_PAGE_ITEMS);
    for (;;) {
        json_t *o, *data, *item;
        size_t i;

        mt_buf_truncate(&target, 0);
        rc = mt_buf_puts(&target, "/memory_versions?view=basic&limit=100");
        /* By memory: the API's id when this process met it; else every
         * version, picked below (a hashed id cannot be turned back). */
        if (rc == 0 && query && query->memory_id &&
            mt_remote_memory_api_id(api_mem, sizeof(api_mem), query->memory_id))
            rc = mt_buf_puts(&target, "&memory_id=") < 0 ? MT_ENOMEM
                                                         : mt_remote_escape(&target, api_mem);
        if (rc == 0 && query && query->operation)
            rc = mt_buf_printf(&target, "&operation=%s",
                               query->operation == MT_VERSION_CREATED    ? "created"
                               : query->operation == MT_VERSION_MODIFIED ? "modified"
                                                                         : "deleted");
        if (rc == 0 && query && query->since > 0) {
            mt_rfc3339_format(when, query->since);
            rc = mt_buf_printf(&target, "&created_at%%5Bgte%%5D=%s", when);
        }
        if (rc == 0 && query && query->until > 0) {
            mt_rfc3339_format(when, query->until);
            rc = mt_buf_printf(&target, "&created_at%%5Blte%%5D=%s", when);
        }
        if (rc == 0 && w.cursor.len)
            rc = mt_buf_puts(&target, "&page=") < 0 ? MT_ENOMEM
                                                    : mt_remote_escape(&target, w.cursor.ptr);
        if (rc < 0)
            break;
        if ((rc = mt_remote_page_get(rs, &w, &o, &data, target.ptr, "history", NULL)) < 0)
            break;
        json_array_foreach(data, i, item)
        {
            mt_version v;
            if ((rc = version_parse(rs, &v, item, NULL, NULL)) < 0)
                break;
            if (!passed) {
                /* The cursor: memtool server's ids are ordered; another's
                 * are found in the order the server lists them. */
                passed = query->before_id < HASHED ? v.id < query->before_id : 0;
                if (v.id == query->before_id)
                    passed = 1, v.id = 0; /* this one is the cursor itself */
                if (!passed || !v.id) {
                    mt_version_dispose(&v);
                    continue;
                }
            }
            if ((plen && (!v.path || (strncmp(v.path, p, plen) != 0) ||
                          (v.path[plen] != '\0' && v.path[plen] != '/'))) ||
                (query && query->memory_id && strcmp(query->memory_id, v.memory_id) != 0) ||
                (query && query->actor && strcmp(query->actor, v.actor) != 0)) {
                mt_version_dispose(&v);
                continue;
            }
            if (*count == cap) {
                size_t c2 = cap ? cap * 2 : 32;
                mt_version *grown = realloc(*out, c2 * sizeof(*grown));
                if (!grown) {
                    mt_version_dispose(&v);
                    rc = mt_error_set(MT_ENOMEM, "out of memory");
                    break;
                }
                *out = grown;
                cap = c2;
            }
            (*out)[(*count)++] = v;
            if (*count >= limit || (until && v.id == until)) {
                limit = *count; /* no page more */
                break;
            }
        }
        if (rc == 0 && *count < limit) {
            int step = mt_remote_page_next(&w, o, "history");
            /* A filter the API cannot apply (an actor, a hashed memory id)
             * reads on, but not without end. */
            if (step > 0 && ++pages > MAX_HISTORY_PAGES)
                step = mt_error_set(MT_EIO, "history: the server pages on past %d pages",
                                    MAX_HISTORY_PAGES);
            json_decref(o);
            if (step > 0)
                continue;
            rc = step;
            break;
        }
        json_decref(o);
        break;
    }
    mt_buf_dispose(&target);
    mt_remote_walk_dispose(&w);
    if (rc < 0) {
        mt_versions_free(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return rc < 0 ? rc : 0;
}

static int get_version(mt_remote_store *rs, mt_version *v, int64_t id, char **content, size_t *len)
{
    char api[200];
    mt_buf target = MT_BUF_INIT;
    json_t *o;
    int rc;

    if ((rc = find_api_form(rs, api, sizeof(api), id)) < 0)
        return rc;
    if (mt_buf_puts(&target, "/memory_versions/") < 0 || mt_remote_escape(&target, api) < 0 ||
        mt_buf_puts(&target, content ? "?view=full" : "?view=basic") < 0) {
        mt_buf_dispose(&target);
        return MT_ENOMEM;
    }
    rc = mt_remote_get_json(&rs->http, &o, target.ptr, "history", NULL);
    mt_buf_dispose(&target);
    if (rc == MT_ENOTFOUND)
        return mt_error_set(MT_ENOTFOUND, NO_VERSION, (long long)id);
    if (rc < 0)
        return rc;
    rc = version_parse(rs, v, o, content, len);
    json_decref(o);
    return rc;
}

int mt_remote_version_get(mt_store *st, mt_version *out, int64_t id)
{
    return get_version((mt_remote_store *)st, out, id, NULL, NULL);
}

int mt_remote_version_content(mt_store *st, char **out, size_t *len, int64_t id)
{
    mt_version v;
    int rc;

    *out = NULL;
    *len = 0;
    if ((rc = get_version((mt_remote_store *)st, &v, id, out, len)) < 0)
        return rc;
    /* The local stores' words (machinery/hist_read.c), so that a command
     * says the same on every store. */
    if (!*out && v.redacted)
        rc = mt_error_set(MT_ENOTFOUND, "version %lld was redacted: its content is gone",
                          (long long)id);
    else if (!*out && v.operation == MT_VERSION_DELETED)
        rc = mt_error_set(MT_ENOTFOUND,
                          "version %lld records a deletion: it has no content (try the version "
                          "before it)",
                          (long long)id);
    else if (!*out)
        rc = mt_error_set(MT_EIO, "history: the server answered version %lld without content",
                          (long long)id);
    mt_version_dispose(&v);
    return rc;
}

int mt_remote_redact(mt_store *st, mt_store_op *op, int64_t id)
{
    mt_remote_store *rs = (mt_remote_store *)st;
    char api[200];
    mt_buf target = MT_BUF_INIT;
    mt_remote_resp r;
    int rc;

    (void)op;
    /* redact names no log to look in: the local stores' shorter words. */
    if ((rc = find_api_form(rs, api, sizeof(api), id)) == MT_ENOTFOUND)
        return mt_error_set(MT_ENOTFOUND, "there is no version %lld", (long long)id);
    if (rc < 0)
        return rc;
    if (mt_buf_puts(&target, "/memory_versions/") < 0 || mt_remote_escape(&target, api) < 0 ||
        mt_buf_puts(&target, "/redact") < 0) {
        mt_buf_dispose(&target);
        return MT_ENOMEM;
    }
    /* A second redaction of a redacted version changes nothing. */
    rc = mt_remote_send(&rs->http, &r, "POST", target.ptr, NULL, MT_REMOTE_SAFE, "redact");
    mt_buf_dispose(&target);
    if (rc < 0)
        return rc;
    if (r.status == 200)
        rc = 0;
    else if (r.status == 404)
        rc = mt_error_set(MT_ENOTFOUND, "there is no version %lld", (long long)id);
    else if (r.status == 409)
        /* The one version the API will not redact (a conflict_error): the
         * memory's current content. Said as the local stores say it. */
        rc = mt_error_set(MT_EINVAL,
                          "version %lld is the memory's current content, which cannot be "
                          "redacted: change or delete the memory first, then redact this version",
                          (long long)id);
    else
        rc = mt_remote_fail(&r, MT_EIO, "redact");
    mt_remote_resp_dispose(&r);
    return rc;
}

/*
 * The versions of a path, as the local stores give them: every version of
 * each memory that was ever at the path or beneath it (its versions at other
 * paths and redacted ones too). The API filters by memory, not by path, so
 * every version is read (pages of 100), and the memories picked from them.
 */
static int versions_of_path(mt_store *st, mt_version **out, size_t *count,
                            const mt_log_query *query)
{
    mt_log_query all = *query;
    mt_version *v = NULL;
    size_t n = 0, i, k, plen = strlen(query->path), limit = query->limit ? query->limit : 100;
    char(*ids)[24] = NULL;
    size_t nids = 0;
    int rc, passed = !query->before_id;

    all.path = NULL;
    all.before_id = 0;
    all.limit = (size_t)-1;
    if ((rc = list_versions(st, &v, &n, &all, 0)) < 0)
        return rc;
    if (n && !(ids = calloc(n, sizeof(*ids)))) {
        mt_versions_free(v, n);
        return mt_error_set(MT_ENOMEM, "out of memory");
    }
    for (i = 0; i < n; i++) {
        const char *vp = v[i].path;
        if (!vp || strncmp(vp, query->path, plen) != 0 || (vp[plen] && vp[plen] != '/'))
            continue;
        for (k = 0; k < nids && strcmp(ids[k], v[i].memory_id) != 0; k++)
            ;
        if (k == nids)
            memcpy(ids[nids++], v[i].memory_id, 24);
    }
    for (i = 0; i < n; i++) {
        int keep = 0;
        for (k = 0; k < nids && !keep; k++)
            keep = strcmp(ids[k], v[i].memory_id) == 0;
        if (keep && !passed) {
            /* The cursor, as in mt_remote_versions. */
            if (v[i].id == query->before_id)
                passed = 1, keep = 0;
            else if (query->before_id < HASHED && v[i].id < query->before_id)
                passed = 1;
            else
                keep = 0;
        }
        if (keep && *count < limit) {
            if (!*out && !(*out = calloc(limit < n ? limit : n, sizeof(**out)))) {
                rc = mt_error_set(MT_ENOMEM, "out of memory");
                break;
            }
            (*out)[(*count)++] = v[i];
            memset(&v[i], 0, sizeof(v[i]));
        }
    }
    free(ids);
    mt_versions_free(v, n);
    if (rc < 0) {
        mt_versions_free(*out, *count);
        *out = NULL;
        *count = 0;
    }
    return rc;
}
