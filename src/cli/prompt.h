/* Reading the lines typed at `memtool chat`, with Ctrl-C that never gets lost. */
#ifndef MT_CLI_PROMPT_H
#define MT_CLI_PROMPT_H

#include <signal.h>
#include <stddef.h>

#include "util/buf.h"

typedef struct {
    mt_buf in;    /* bytes read and not yet handed out */
    size_t taken; /* how many of them the last line used */
    int eof;
} mt_prompt;

enum {
    MT_PROMPT_LINE = 1,  /* *line holds the next line, without its newline */
    MT_PROMPT_EOF = 0,   /* no more input */
    MT_PROMPT_INTR = -1, /* *flag was set (by SIGINT) before a whole line came */
    MT_PROMPT_FAIL = -2  /* read error or no memory; errno says which */
};

/* The next line from fd. SIGINT is blocked except inside ppoll, so a Ctrl-C
 * that lands just before the wait is seen rather than leaving the read
 * blocked: getline() cannot give that guarantee. The line stays valid until
 * the next call. */
int mt_prompt_read(mt_prompt *p, int fd, volatile sig_atomic_t *flag, char **line, size_t *len);

void mt_prompt_dispose(mt_prompt *p);

#endif
