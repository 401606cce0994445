/* memtool init [--template project] [--name NAME]: seed a store with a pattern's files. */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/project.h"
#include "cli/cli.h"
#include "cli/spec.h"
#include "cli/input.h"
#include "util/buf.h"
#include "util/utf8.h"

static const char help[] =
    "usage: memtool [options] init [--template project] [--name NAME] [--json]\n\n"
    "Seed the store with the files of a pattern. The project template (the only one)\n"
    "is the pattern `memtool run --project` and `memtool chat --project` follow:\n"
    "  " MT_PROJECT_PROGRESS "    the progress log, one dated entry per session\n"
    "  " MT_PROJECT_FEATURES "  the feature list, each \"passes\": false until verified\n"
    "  " MT_PROJECT_STARTUP "     how to start the project\n"
    "A file that exists is never replaced: it is kept, and said so, so init may be\n"
    "run again. Exit status 0 whether files were created or kept.\n\n"
    "Options:\n"
    "  --template NAME  the pattern (project)\n"
    "  --name NAME      the project's name (default: the current directory's name)\n"
    "  --json           one JSON object: the files and what became of each\n";

/* The templates (src/cli/templates/project/), built into memtool. */
extern const char mt_template_progress_md[], mt_template_features_json[], mt_template_startup_md[];

static const struct {
    const char *path;
    const char *text;
    int json; /* {{name}} is a JSON string here */
} project_files[] = {
    {MT_PROJECT_PROGRESS, mt_template_progress_md, 0},
    {MT_PROJECT_FEATURES, mt_template_features_json, 1},
    {MT_PROJECT_STARTUP, mt_template_startup_md, 0},
};

#define NAME_MAX_BYTES 100

/* A name is one line of text a person would give a project. */
static int name_ok(const char *s)
{
    size_t len = strlen(s), i, n;
    uint32_t cp;

    if (len == 0 || len > NAME_MAX_BYTES)
        return 0;
    for (i = 0; i < len; i += n) {
        n = mt_utf8_decode(&cp, (const unsigned char *)s + i, len - i);
        if (n == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
            return 0;
    }
    return 1;
}

/* The template with {{name}} filled in. */
static char *fill(const char *text, const char *name, int json)
{
    mt_buf b = MT_BUF_INIT;
    char *quoted = NULL;
    const char *p, *hole;

    if (json) {
        json_t *s = json_string(name);

        quoted = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
        json_decref(s);
        if (!quoted)
            return NULL;
    }
    for (p = text; (hole = strstr(p, "{{name}}")); p = hole + 8) {
        mt_buf_put(&b, p, (size_t)(hole - p));
        mt_buf_puts(&b, json ? quoted : name);
    }
    mt_buf_puts(&b, p);
    free(quoted);
    return mt_buf_detach(&b, NULL);
}

/* The name the kept feature list gives the project (malloc'd), or NULL. */
static char *kept_name(mt_memory *mem)
{
    char *text = NULL, *name = NULL;
    size_t len = 0;
    json_t *o;

    if (mt_memory_read(&text, &len, mem, MT_PROJECT_FEATURES) < 0)
        return NULL;
    if ((o = json_loadb(text, len, 0, NULL)) && json_is_string(json_object_get(o, "project")))
        name = strdup(json_string_value(json_object_get(o, "project")));
    json_decref(o);
    free(text);
    return name;
}

/* The current directory's name, when it makes a name. */
static const char *default_name(char *buf, size_t size)
{
    const char *slash;

    if (!getcwd(buf, size))
        return "project";
    slash = strrchr(buf, '/');
    if (slash && slash[1] && name_ok(slash + 1))
        return slash + 1;
    return "project";
}

/* What the command line of init says. */
typedef struct {
    const char *template_name, *name;
    int json;
} init_args;

static const mt_cli_option init_options[] = {
    {"template", MT_CLI_STRING, offsetof(init_args, template_name), 0, 0, 0},
    {"name", MT_CLI_STRING, offsetof(init_args, name), 0, 0, 0},
    {"json", MT_CLI_FLAG, offsetof(init_args, json), 0, 0, 0},
    {NULL, 0, 0, 0, 0, 0},
};

static const mt_cli_command init_command = {
    "init", help, init_options, 0, 0, "the name is --name NAME", 0};

int mt_cmd_init(const mt_cli *cli, int argc, char **argv)
{
    char cwd[PATH_MAX];
    const char *name;
    char *old_name = NULL;
    json_t *files = NULL;
    int features_kept = 0;
    mt_memory *mem = NULL;
    size_t i;
    init_args a = {0};
    int as_json, given_name, status;

    if ((status = mt_cli_parse(&init_command, &a, argc, argv)) >= 0)
        return status;
    status = MT_EXIT_OK;
    if (a.template_name && strcmp(a.template_name, "project") != 0)
        return mt_cli_usage_error("init", "there is no template '%s': the one template is project",
                                  a.template_name);
    name = a.name;
    given_name = name != NULL;
    as_json = a.json;
    if (name && !name_ok(name))
        return mt_cli_usage_error("init",
                                  "--name needs 1 to %d bytes of UTF-8 text on one line, "
                                  "without control characters",
                                  NAME_MAX_BYTES);
    if (!name)
        name = default_name(cwd, sizeof(cwd));
    if (!(files = json_array()))
        goto nomem;
    if (!(mem = mt_cli_open(cli))) {
        json_decref(files);
        return MT_EXIT_USAGE;
    }
    for (i = 0; i < sizeof(project_files) / sizeof(project_files[0]); i++) {
        const char *path = project_files[i].path, *what;
        char *text = fill(project_files[i].text, name, project_files[i].json);
        char sha[65];
        mt_result res;
        json_t *input;
        int rc;

        if (!text)
            goto nomem;
        /* Through the library, as any write: the limits, the secrets policy
         * and the history apply, and create never replaces a file. */
        input = json_pack("{s:s,s:s,s:s}", "command", "create", "path", path, "file_text", text);
        free(text);
        if (!input)
            goto nomem;
        rc = mt_memory_call_object(&res, mem, input);
        json_decref(input);
        if (rc < 0)
            goto nomem;
        if (!res.is_error) {
            what = "created";
            mt_cli_warn_history("init", mem);
        } else if (mt_memory_sha256(sha, mem, path) == 0) {
            what = "kept";
            features_kept |= strcmp(path, MT_PROJECT_FEATURES) == 0;
        } else {
            what = "failed";
            status = MT_EXIT_TOOL;
            fprintf(stderr, "memtool init: %s\n",
                    res.text + (strncmp(res.text, "Error: ", 7) == 0 ? 7 : 0));
        }
        if (json_array_append_new(files, json_pack("{s:s,s:s}", "path", path, "status", what)) <
                0 ||
            (*what == 'f' &&
             json_object_set_new(json_array_get(files, i), "error", json_string(res.text)) < 0)) {
            mt_result_dispose(&res);
            goto nomem;
        }
        if (!as_json && *what != 'f')
            printf("%-14s %s\n", *what == 'c' ? "created" : "kept (exists)", path);
        mt_result_dispose(&res);
    }
    /* A name given to a project that has one already is not applied (no file
     * is replaced): say so, and what the name is. */
    if (given_name && features_kept && (old_name = kept_name(mem)) && strcmp(old_name, name) == 0) {
        free(old_name);
        old_name = NULL;
    }
    if (old_name && !as_json)
        fprintf(stderr,
                "memtool init: the project keeps its name '%s' (in " MT_PROJECT_FEATURES
                "): --name names a new project only; edit \"project\" there to rename it\n",
                old_name);
    if (as_json) {
        json_t *o = json_pack("{s:s,s:s,s:O}", "template", "project", "name",
                              old_name ? old_name : name, "files", files);

        if (!o)
            goto nomem;
        if (old_name && json_object_set_new(o, "name_not_applied", json_string(name)) < 0) {
            json_decref(o);
            goto nomem;
        }
        if (mt_cli_print_json("init", o) != MT_EXIT_OK)
            status = MT_EXIT_TOOL;
    }
    goto done;
nomem:
    fputs("memtool init: out of memory\n", stderr);
    status = MT_EXIT_TOOL;
done:
    free(old_name);
    json_decref(files);
    mt_memory_free(mem);
    return status;
}
