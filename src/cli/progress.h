/* What the long commands (gc, migrate, rekey) share: Ctrl-C asks them to
 * stop after the item in hand, and a bar redrawn in place on a terminal. */
#ifndef MT_CLI_PROGRESS_H
#define MT_CLI_PROGRESS_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    struct sigaction old;
} mt_cli_stop;

/* From catch to release, SIGINT only sets the flag mt_cli_stop_asked reads. */
void mt_cli_stop_catch(mt_cli_stop *s);
void mt_cli_stop_release(mt_cli_stop *s);
int mt_cli_stop_asked(void);

/* A bar of `width` (< size) cells, '#' for done of total ('.' for the rest). */
void mt_cli_bar(char *out, size_t size, unsigned width, uint64_t done, uint64_t total);

/* Erase the progress line on a terminal before other output. */
void mt_cli_progress_clear(int tty);

#endif
