/* Colour on or off (color.h). */
#include "cli/color.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int mt_cli_color_parse(const char *when)
{
    if (strcmp(when, "always") == 0)
        return 1;
    if (strcmp(when, "never") == 0)
        return 0;
    if (strcmp(when, "auto") == 0)
        return -1;
    return -2;
}

int mt_cli_color_resolve(int color)
{
    if (color >= 0)
        return color;
    return isatty(STDOUT_FILENO) && !getenv("NO_COLOR");
}
