/* memtool's actor names and the memory-store API's actor objects, both ways
 * (docs/server.md's table): memtool server writes them, the remote store
 * reads them (util: one copy for both). */
#ifndef MT_UTIL_API_ACTOR_H
#define MT_UTIL_API_ACTOR_H

#include <jansson.h>

/* The API's created_by for a memtool actor: api:apikey_... is an api_actor,
 * session:... a session_actor, external (or none) null, any other a
 * user_actor named by it. */
json_t *mt_api_actor_json(const char *actor);

/* memtool's actor for the API's created_by (the table read backwards; a
 * service account is "service:ID", an unknown or missing one "external"),
 * printable ASCII only, malloc'd; NULL when memory runs out. */
char *mt_api_actor_name(const json_t *by);

#endif
