/* --color=auto|always|never and NO_COLOR, as every command that colours its
 * output reads them. */
#ifndef MT_CLI_COLOR_H
#define MT_CLI_COLOR_H

/* --color's WHEN: 1 always, 0 never, -1 auto; -2 for any other word. */
int mt_cli_color_parse(const char *when);

/* The choice made: auto colours a terminal, unless NO_COLOR is set. */
int mt_cli_color_resolve(int color);

#endif
