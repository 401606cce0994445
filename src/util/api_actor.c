/* memtool's actors and the memory-store API's actor objects (api_actor.h). */
#include "util/api_actor.h"

#include <stdlib.h>
#include <string.h>

#include "util/buf.h"

json_t *mt_api_actor_json(const char *actor)
{
    if (!actor || !*actor || strcmp(actor, "external") == 0)
        return json_null();
    if (strncmp(actor, "api:apikey_", 11) == 0)
        return json_pack("{s:s, s:s}", "type", "api_actor", "api_key_id", actor + 4);
    if (strncmp(actor, "session:", 8) == 0)
        return json_pack("{s:s, s:s}", "type", "session_actor", "session_id", actor + 8);
    /* memtool's own front ends (cli, serve, mcp:NAME, agent, library, web:...). */
    return json_pack("{s:s, s:s}", "type", "user_actor", "user_id", actor);
}

char *mt_api_actor_name(const json_t *by)
{
    const char *type = json_string_value(json_object_get(by, "type")), *v = NULL, *pre = "";
    mt_buf b = MT_BUF_INIT;
    size_t i;

    if (!type)
        return strdup("external");
    if (strcmp(type, "api_actor") == 0)
        v = json_string_value(json_object_get(by, "api_key_id")), pre = "api:";
    else if (strcmp(type, "session_actor") == 0)
        v = json_string_value(json_object_get(by, "session_id")), pre = "session:";
    else if (strcmp(type, "user_actor") == 0)
        v = json_string_value(json_object_get(by, "user_id"));
    else if (strcmp(type, "service_account_actor") == 0)
        v = json_string_value(json_object_get(by, "service_account_id")), pre = "service:";
    if (!v)
        return strdup("external");
    mt_buf_puts(&b, pre);
    for (i = 0; i < 128 && v[i]; i++)
        mt_buf_putc(&b, v[i] >= 0x20 && v[i] < 0x7f ? v[i] : '?');
    return mt_buf_detach(&b, NULL);
}
