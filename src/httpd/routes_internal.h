/* What the endpoint files share (routes_*.c); nothing outside them uses it. */
#ifndef MT_ROUTES_INTERNAL_H
#define MT_ROUTES_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include <memtool.h>

#include "httpd/routes.h"

/* Page sizes: the SDK's (basic up to 100, full up to 20). */
#define PAGE_BASIC   100
#define PAGE_FULL    20
#define MAX_SEGMENTS 7

void mt_routes_fail(mt_http_reply *out, const mt_http_request *req, int rc);
void mt_routes_ok(mt_http_reply *out, json_t *body);
/* 405, naming the methods allowed ("GET, POST"). */
void mt_routes_bad_method(mt_http_reply *out, const mt_http_request *req, const char *allowed);
int mt_routes_is_hex(const char *s, size_t n);
int mt_routes_store_id_ok(const char *s);
int mt_routes_memory_id_ok(const char *s);
int mt_routes_version_id(int64_t *out, const char *s);
const char *mt_routes_query(const mt_http_request *req, const char *name);
int mt_routes_view_param(mt_http_reply *out, const mt_http_request *req, int dflt);
int mt_routes_limit_param(size_t *limit, mt_http_reply *out, const mt_http_request *req, size_t max,
                          size_t dflt);
int mt_routes_time_param(int64_t *out, mt_http_reply *reply, const mt_http_request *req,
                         const char *name);
json_t *mt_routes_cursor(const char *key);
int mt_routes_page_param(char **out, mt_http_reply *reply, const mt_http_request *req);
json_t *mt_routes_body_object(mt_http_reply *out, const mt_http_request *req, int required);
int mt_routes_member_string(const char **s, size_t *len, mt_http_reply *out,
                            const mt_http_request *req, json_t *obj, const char *name,
                            int nullable);
size_t mt_routes_chars(const char *s, size_t len);
int mt_routes_has_control(const char *s, size_t len);
const char *mt_routes_actor_of(const mt_http_request *req, char buf[48]);
void mt_routes_store_create(mt_http_reply *out, mt_registry *reg, const mt_http_request *req);
int64_t mt_routes_record_ms(json_t *record, const char *name);
void mt_routes_store_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req);
void mt_routes_store_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                         const char *id);
int64_t mt_routes_now_ms(void);
void mt_routes_store_change_run(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                                const char *id, json_t *body, int archive);
void mt_routes_store_update(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                            const char *id);
void mt_routes_store_delete(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                            const char *id);
mt_memory *mt_routes_store_handle(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                                  const char *store_id, int write);
void mt_routes_memory_create(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                             const char *store_id);
void mt_routes_memory_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                           const char *store_id);
void mt_routes_memory_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                          const char *store_id, const char *id);
void mt_routes_memory_update(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                             const char *store_id, const char *id);
void mt_routes_memory_delete(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                             const char *store_id, const char *id);
void mt_routes_version_list(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                            const char *store_id);
/* /memtool/v1/memory_stores/{S}/...: s holds the path's n segments. */
void mt_routes_memtool(mt_http_reply *out, mt_registry *reg, const mt_http_request *req, char **s,
                       int n);
void mt_routes_version_get(mt_http_reply *out, mt_registry *reg, const mt_http_request *req,
                           const char *store_id, int64_t vid, int redact);

#endif
