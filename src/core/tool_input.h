/* A tool input's parameters, whether jansson parsed it or the flat-object reader did. */
#ifndef MT_INPUT_H
#define MT_INPUT_H

#include <stdint.h>

#include "core/memory.h"

struct json_t;

typedef enum {
    MT_ARG_ABSENT = 0,
    MT_ARG_NULL,
    MT_ARG_STRING,
    MT_ARG_INTEGER,
    MT_ARG_ARRAY,
    MT_ARG_OTHER /* a boolean, a number that is not an integer, an object */
} mt_arg_type;

typedef struct {
    mt_arg_type type;
    const char *kind; /* for messages: "a string", "an integer", "null"... */
    mt_str str;       /* MT_ARG_STRING: may hold NULs, not NUL-terminated */
    int64_t num;      /* MT_ARG_INTEGER */
    int is_pair;      /* MT_ARG_ARRAY of exactly two integers, in pair */
    int64_t pair[2];
} mt_arg;

/* The parameters the six commands read; other keys are ignored. */
typedef enum {
    MT_IN_COMMAND,
    MT_IN_PATH,
    MT_IN_OLD_PATH,
    MT_IN_NEW_PATH,
    MT_IN_FILE_TEXT,
    MT_IN_OLD_STR,
    MT_IN_NEW_STR,
    MT_IN_INSERT_LINE,
    MT_IN_INSERT_TEXT,
    MT_IN_VIEW_RANGE,
    MT_IN_EXPECTED_SHA256, /* not from the model: a program's precondition */
    MT_IN_COUNT
} mt_input_key;

typedef struct mt_input {
    mt_arg arg[MT_IN_COUNT];
    int has_type;  /* a "type" key was present: a tool_use block, not a tool input */
    char *scratch; /* strings the flat reader had to unescape */
} mt_input;

/* The name of a parameter as it appears in JSON. */
const char *mt_input_name(mt_input_key key);

/* Fill in from a parsed object; strings are borrowed from it. */
void mt_input_from_json(mt_input *in, const struct json_t *obj);

/*
 * Read a tool input that is a flat JSON object (string, integer, boolean and
 * null values, and arrays of two integers) without building a jansson tree:
 * the common case, at a fraction of the cost. Returns 1 with *in filled
 * (strings point into text or into in->scratch; mt_input_dispose after), 0
 * when the text is anything else (nested values, other numbers, duplicate or
 * escaped keys, or not valid JSON), so the caller parses it with jansson,
 * which then gives exactly the answer it always gave; or MT_ENOMEM.
 */
int mt_input_parse_flat(mt_input *in, const char *text, size_t len);

void mt_input_dispose(mt_input *in);

#endif
