/*
 * The audit log (--audit FILE): one JSON line per tool call, views and
 * refused inputs included, appended with one write(2) to a file opened
 * O_APPEND, so that any number of processes can share it without tearing
 * a line. A line:
 *
 *   {"time":"2026-11-22T10:00:00.123Z","actor":"cli","command":"create",
 *    "path":"/memories/a.md","is_error":false,"bytes_read":0,"bytes_written":12}
 *
 * with "new_path" for a rename, and "guard" when the secrets guard refused
 * the call: what it found, by kind and line, never the secret
 * ("a secret (aws-access-key-id, line 3)"). command and path are null when the input had
 * none (it was refused before); bytes_written is the size of the text the
 * input carried to write (file_text, new_str, insert_text), bytes_read the
 * size of the result a view returned. Strings are as given, cut to at most
 * 4,096 bytes so a line stays bounded: the cut falls between two characters
 * (the line stays UTF-8), and a cut string is followed by "<name>_bytes",
 * its whole length ("path":"/memories/aaa...","path_bytes":5000).
 */
#ifndef MT_AUDIT_H
#define MT_AUDIT_H

#include <stdint.h>

#include "util/buf.h"

typedef struct {
    const char *actor;
    const char *command; /* NULL: none was read */
    const char *path;
    size_t path_len;
    const char *new_path; /* rename's, else NULL */
    size_t new_path_len;
    int is_error;
    uint64_t bytes_read, bytes_written;
    const char *guard; /* what the secrets guard refused (never the secret), or NULL */
} mt_audit_entry;

/* Open (creating, 0600) the log; never through a symbolic link. */
int mt_audit_open(int *out_fd, const char *path);

/* Append one line; MT_EIO when it could not be written whole. */
int mt_audit_record(int fd, const mt_audit_entry *e);

#endif
