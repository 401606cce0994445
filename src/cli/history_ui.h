/* What the history commands (log, show, diff, restore, undo, redact) share. */
#ifndef MT_CLI_HISTORY_UI_H
#define MT_CLI_HISTORY_UI_H

#include <stdint.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/input.h"

/* Milliseconds since the epoch as RFC 3339 UTC with milliseconds. */
void mt_cli_time_format(char out[32], int64_t ms);

/* RFC 3339 ("2026-11-22T10:00:00Z", a fraction and an offset allowed), a
 * date or a date and time without an offset, in UTC ("2026-11-22",
 * "2026-11-22 10:00", "2026-11-22T10:00:30"), or an age before now ("30d",
 * "12h", "15m", "45s") as milliseconds since the epoch. */
int mt_cli_time_parse(int64_t *ms, const char *s);

/* "created", "modified", "deleted". */
const char *mt_cli_op_name(mt_version_op op);
int mt_cli_op_parse(mt_version_op *op, const char *s);

/* One version as a line for people, or as a JSON object on one line. */
void mt_cli_version_print(FILE *out, const mt_version *v);
int mt_cli_version_json(FILE *out, const mt_version *v);

/* After a restore's line: " (1 secret redacted: ...)" when it redacted, and
 * the newline. */
void mt_cli_print_secrets_note(mt_memory *mem);

/* s as a JSON string (null for NULL). */
int mt_cli_json_string(FILE *out, const char *s);

#endif
