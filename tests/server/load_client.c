/*
 * The load of memtool server's load test: CLIENTS threads, each one
 * keep-alive connection (libcurl) to one of the servers given, each making
 * REQUESTS mixed requests on memory store STORE and checking every answer.
 * A client in node or Python spends more CPU per request than the server
 * does, on the same two cores; this one lets the test reach 64 x 1,000.
 *
 * The mix, per client and per 8 requests (load.test.mjs says why):
 *   0  in the first COUNTER_ROUNDS rounds, the shared counter: retrieve,
 *      add one, update under a content_sha256 precondition, a 409
 *      memory_precondition_failed_error retried; after them, a version list
 *   1  a create of its own note
 *   2  a depth-1 listing of /clients/
 *   3  an update of that note under its own precondition (must succeed)
 *   4  a retrieve of it (its new content)
 *   5  a delete of the note of the round before under its precondition
 *   6  the note's versions: exactly modified, created
 *   7  a full listing of its own notes: exactly those it holds, its content
 *
 * Prints one JSON line: requests, retries, updates, seconds and, per
 * client, the notes it holds at the end ({"holds": [[i, ...], ...]}), for
 * the test to check the store against. Exit 1 on the first wrong answer,
 * named on stderr.
 *
 *   mt_server_load KEY STORE_ID COUNTER_ID CLIENTS REQUESTS COUNTER_ROUNDS URL...
 */
#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    char id[64];
    char sha[65];
    int live;
} note;

typedef struct {
    int c;
    const char *url;
    CURL *h;
    struct curl_slist *headers;
    char *body; /* the last answer */
    size_t len, cap;
    note *own; /* by request index */
    long requests, retries, updates;
    int failed;
} client;

static const char *key, *store, *counter;
static long per_client, counter_rounds;
static atomic_int stop;

static void sha_hex(char out[65], const char *s)
{
    unsigned char d[crypto_hash_sha256_BYTES];
    size_t i;

    crypto_hash_sha256(d, (const unsigned char *)s, strlen(s));
    for (i = 0; i < sizeof(d); i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static size_t sink(char *p, size_t size, size_t n, void *u)
{
    client *cl = u;
    size_t add = size * n;

    if (cl->len + add + 1 > cl->cap) {
        size_t cap = (cl->len + add + 1) * 2;
        char *b = realloc(cl->body, cap);
        if (!b)
            return 0;
        cl->body = b;
        cl->cap = cap;
    }
    memcpy(cl->body + cl->len, p, add);
    cl->len += add;
    cl->body[cl->len] = '\0';
    return add;
}

static int fail(client *cl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(client *cl, const char *fmt, ...)
{
    va_list ap;

    if (!atomic_exchange(&stop, 1)) {
        fprintf(stderr, "client %d: ", cl->c);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n");
    }
    cl->failed = 1;
    return -1;
}

/* One request; *out the parsed answer (the caller frees), *status its status. */
static int call(client *cl, long *status, json_t **out, const char *method, const char *body,
                const char *fmt, ...) __attribute__((format(printf, 6, 7)));
static int call(client *cl, long *status, json_t **out, const char *method, const char *body,
                const char *fmt, ...)
{
    char path[512], url[1024];
    va_list ap;
    CURLcode rc;

    va_start(ap, fmt);
    vsnprintf(path, sizeof(path), fmt, ap);
    va_end(ap);
    snprintf(url, sizeof(url), "%s%s", cl->url, path);
    cl->len = 0;
    curl_easy_setopt(cl->h, CURLOPT_URL, url);
    curl_easy_setopt(cl->h, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(cl->h, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(cl->h, CURLOPT_POSTFIELDSIZE, body ? (long)strlen(body) : 0L);
    curl_easy_setopt(cl->h, CURLOPT_HTTPGET, body ? 0L : 1L);
    if (!body)
        curl_easy_setopt(cl->h, CURLOPT_CUSTOMREQUEST, method);
    cl->requests++;
    if ((rc = curl_easy_perform(cl->h)) != CURLE_OK)
        return fail(cl, "%s %s: no answer (%s)", method, path, curl_easy_strerror(rc));
    curl_easy_getinfo(cl->h, CURLINFO_RESPONSE_CODE, status);
    if (!(*out = json_loads(cl->body ? cl->body : "", 0, NULL)))
        return fail(cl, "%s %s: %ld, not JSON: %.200s", method, path, *status,
                    cl->body ? cl->body : "");
    return 0;
}

/* A request that must answer 200. */
static json_t *ok(client *cl, const char *method, const char *body, const char *what, ...)
    __attribute__((format(printf, 4, 5)));
static json_t *ok(client *cl, const char *method, const char *body, const char *what, ...)
{
    char path[512];
    va_list ap;
    long status = 0;
    json_t *j = NULL;

    va_start(ap, what);
    vsnprintf(path, sizeof(path), what, ap);
    va_end(ap);
    if (call(cl, &status, &j, method, body, "%s", path) < 0)
        return NULL;
    if (status != 200) {
        fail(cl, "%s %s: %ld %.300s", method, path, status, cl->body);
        json_decref(j);
        return NULL;
    }
    return j;
}

static const char *str(json_t *j, const char *k)
{
    const char *s = json_string_value(json_object_get(j, k));
    return s ? s : "";
}

static void note_text(char *out, size_t n, int c, long i, int rev)
{
    snprintf(out, n, "client %d note %ld%s\n", c, i, rev ? " rev" : "");
}

static int counter_update(client *cl, long i)
{
    for (;;) {
        json_t *cur, *in, *ans;
        char content[128], *body;
        long status = 0;
        int rc;

        if (atomic_load(&stop))
            return -1;
        if (!(cur = ok(cl, "GET", NULL, "/v1/memory_stores/%s/memories/%s", store, counter)))
            return -1;
        snprintf(content, sizeof(content), "%ld\nclient %d update %ld\n",
                 strtol(str(cur, "content"), NULL, 10) + 1, cl->c, i);
        in = json_pack("{s:s, s:{s:s, s:s}}", "content", content, "precondition", "type",
                       "content_sha256", "content_sha256", str(cur, "content_sha256"));
        body = json_dumps(in, JSON_COMPACT);
        json_decref(in);
        json_decref(cur);
        rc = call(cl, &status, &ans, "POST", body, "/v1/memory_stores/%s/memories/%s", store,
                  counter);
        free(body);
        if (rc < 0)
            return -1;
        if (status == 200) {
            json_decref(ans);
            cl->updates++;
            return 0;
        }
        if (status != 409 || strcmp(str(json_object_get(ans, "error"), "type"),
                                    "memory_precondition_failed_error") != 0) {
            json_decref(ans);
            return fail(cl, "counter update: %ld %.300s", status, cl->body);
        }
        json_decref(ans);
        cl->retries++;
    }
}

static int step(client *cl, long i)
{
    char text[128], sha[65], path[128], *body;
    json_t *j = NULL, *in, *data;
    note *n;
    size_t k;
    int c = cl->c, rc = 0;

    switch (i % 8) {
    case 0:
        if (i < counter_rounds * 8)
            return counter_update(cl, i);
        if (!(j = ok(cl, "GET", NULL, "/v1/memory_stores/%s/memory_versions?memory_id=%s&limit=5",
                     store, counter)))
            return -1;
        k = json_array_size(json_object_get(j, "data"));
        if (k < 1 || k > 5)
            rc = fail(cl, "a version list of limit 5 holds %zu", k);
        break;
    case 1:
        note_text(text, sizeof(text), c, i, 0);
        snprintf(path, sizeof(path), "/clients/c%d/m%ld.md", c, i);
        in = json_pack("{s:s, s:s}", "path", path, "content", text);
        body = json_dumps(in, JSON_COMPACT);
        json_decref(in);
        j = ok(cl, "POST", body, "/v1/memory_stores/%s/memories", store);
        free(body);
        if (!j)
            return -1;
        sha_hex(sha, text);
        if (strcmp(str(j, "content_sha256"), sha) != 0)
            rc = fail(cl, "create %s: content_sha256 %s, not %s", path, str(j, "content_sha256"),
                      sha);
        n = &cl->own[i];
        snprintf(n->id, sizeof(n->id), "%s", str(j, "id"));
        snprintf(n->sha, sizeof(n->sha), "%s", sha);
        n->live = 1;
        break;
    case 2:
        if (!(j = ok(cl, "GET", NULL, "/v1/memory_stores/%s/memories?path_prefix=/clients/&depth=1",
                     store)))
            return -1;
        data = json_object_get(j, "data");
        if (json_array_size(data) < 1 || json_array_size(data) > 100)
            rc = fail(cl, "a depth-1 list holds %zu", json_array_size(data));
        for (k = 0; k < json_array_size(data) && rc == 0; k++) {
            json_t *x = json_array_get(data, k);
            int cn;
            char tail;
            if (strcmp(str(x, "type"), "memory_prefix") != 0 ||
                sscanf(str(x, "path"), "/clients/c%d/%c", &cn, &tail) != 1 ||
                str(x, "path")[strlen(str(x, "path")) - 1] != '/')
                rc = fail(cl, "a depth-1 list holds %s %s", str(x, "type"), str(x, "path"));
        }
        break;
    case 3:
        n = &cl->own[i - 2];
        note_text(text, sizeof(text), c, i - 2, 1);
        in = json_pack("{s:s, s:{s:s, s:s}}", "content", text, "precondition", "type",
                       "content_sha256", "content_sha256", n->sha);
        body = json_dumps(in, JSON_COMPACT);
        json_decref(in);
        j = ok(cl, "POST", body, "/v1/memory_stores/%s/memories/%s", store, n->id);
        free(body);
        if (!j)
            return -1;
        sha_hex(sha, text);
        if (strcmp(str(j, "content_sha256"), sha) != 0)
            rc = fail(cl, "its own update: content_sha256 %s, not %s", str(j, "content_sha256"),
                      sha);
        snprintf(n->sha, sizeof(n->sha), "%s", sha);
        break;
    case 4:
        n = &cl->own[i - 3];
        if (!(j = ok(cl, "GET", NULL, "/v1/memory_stores/%s/memories/%s", store, n->id)))
            return -1;
        note_text(text, sizeof(text), c, i - 3, 1);
        if (strcmp(str(j, "content"), text) != 0)
            rc = fail(cl, "its note %ld holds %.100s", i - 3, str(j, "content"));
        break;
    case 5:
        if (i >= 12 && cl->own[i - 12].live) {
            n = &cl->own[i - 12];
            if (!(j = ok(cl, "DELETE", NULL,
                         "/v1/memory_stores/%s/memories/%s?expected_content_sha256=%s", store,
                         n->id, n->sha)))
                return -1;
            n->live = 0;
        } else if (!(j = ok(cl, "GET", NULL, "/v1/memory_stores/%s/memories/%s", store,
                            cl->own[i - 4].id))) {
            return -1;
        }
        break;
    case 6:
        if (!(j = ok(cl, "GET", NULL, "/v1/memory_stores/%s/memory_versions?memory_id=%s", store,
                     cl->own[i - 5].id)))
            return -1;
        data = json_object_get(j, "data");
        if (json_array_size(data) != 2 ||
            strcmp(str(json_array_get(data, 0), "operation"), "modified") != 0 ||
            strcmp(str(json_array_get(data, 1), "operation"), "created") != 0)
            rc = fail(cl, "its note's versions are not [modified, created]: %.300s", cl->body);
        break;
    default: {
        size_t held = 0;
        long x;
        if (!(j = ok(cl, "GET", NULL,
                     "/v1/memory_stores/%s/memories?path_prefix=/clients/c%d/&view=full", store,
                     c)))
            return -1;
        data = json_object_get(j, "data");
        for (x = 0; x <= i; x++)
            held += cl->own[x].live;
        if (json_array_size(data) != held)
            rc =
                fail(cl, "its own list holds %zu, not the %zu it has", json_array_size(data), held);
        for (k = 0; k < json_array_size(data) && rc == 0; k++) {
            json_t *m = json_array_get(data, k);
            long at = -1;
            char want[128];
            if (sscanf(str(m, "path"), "/clients/c%*d/m%ld.md", &at) != 1 || at < 0 || at > i ||
                !cl->own[at].live) {
                rc = fail(cl, "its own list holds %s", str(m, "path"));
                break;
            }
            note_text(want, sizeof(want), c, at, 1);
            if (strcmp(str(m, "content"), want) != 0)
                rc = fail(cl, "%s holds %.100s", str(m, "path"), str(m, "content"));
        }
    }
    }
    json_decref(j);
    return rc;
}

static void *run(void *arg)
{
    client *cl = arg;
    char auth[256];
    long i;

    cl->h = curl_easy_init();
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    cl->headers = curl_slist_append(cl->headers, auth);
    cl->headers = curl_slist_append(cl->headers, "Content-Type: application/json");
    cl->headers = curl_slist_append(cl->headers, "anthropic-version: 2023-06-01");
    curl_easy_setopt(cl->h, CURLOPT_HTTPHEADER, cl->headers);
    curl_easy_setopt(cl->h, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(cl->h, CURLOPT_WRITEDATA, cl);
    curl_easy_setopt(cl->h, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(cl->h, CURLOPT_TIMEOUT, 60L);
    for (i = 0; i < per_client && !atomic_load(&stop); i++)
        if (step(cl, i) < 0)
            break;
    curl_slist_free_all(cl->headers);
    curl_easy_cleanup(cl->h);
    return NULL;
}

int main(int argc, char **argv)
{
    long clients, c, i, requests = 0, retries = 0, updates = 0;
    struct timespec t0, t1;
    client *cl;
    pthread_t *t;
    int failed = 0;

    if (argc < 8) {
        fprintf(stderr, "usage: mt_server_load KEY STORE_ID COUNTER_ID CLIENTS REQUESTS "
                        "COUNTER_ROUNDS URL...\n");
        return 2;
    }
    key = argv[1];
    store = argv[2];
    counter = argv[3];
    clients = strtol(argv[4], NULL, 10);
    per_client = strtol(argv[5], NULL, 10);
    counter_rounds = strtol(argv[6], NULL, 10);
    if (clients < 1 || per_client < 8 || per_client % 8 || sodium_init() < 0 ||
        curl_global_init(CURL_GLOBAL_DEFAULT) != 0) {
        fprintf(stderr, "mt_server_load: CLIENTS >= 1, REQUESTS a multiple of 8\n");
        return 2;
    }
    cl = calloc((size_t)clients, sizeof(*cl));
    t = calloc((size_t)clients, sizeof(*t));
    if (!cl || !t)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (c = 0; c < clients; c++) {
        cl[c].c = (int)c;
        cl[c].url = argv[7 + c % (argc - 7)];
        if (!(cl[c].own = calloc((size_t)per_client, sizeof(note))))
            return 1;
        pthread_create(&t[c], NULL, run, &cl[c]);
    }
    for (c = 0; c < clients; c++) {
        pthread_join(t[c], NULL);
        requests += cl[c].requests;
        retries += cl[c].retries;
        updates += cl[c].updates;
        failed |= cl[c].failed;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("{\"requests\":%ld,\"retries\":%ld,\"updates\":%ld,\"seconds\":%.1f,\"holds\":[",
           requests, retries, updates,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
    for (c = 0; c < clients; c++) {
        int first = 1;
        printf("%s[", c ? "," : "");
        for (i = 0; i < per_client; i++)
            if (cl[c].own[i].live) {
                printf("%s%ld", first ? "" : ",", i);
                first = 0;
            }
        printf("]");
        free(cl[c].own);
        free(cl[c].body);
    }
    printf("]}\n");
    free(cl);
    free(t);
    curl_global_cleanup();
    return failed;
}
