#include "cli/progress.h"

#include <stdio.h>
#include <string.h>

static volatile sig_atomic_t asked;

static void on_interrupt(int sig)
{
    (void)sig;
    asked = 1;
}

void mt_cli_stop_catch(mt_cli_stop *s)
{
    struct sigaction sa;

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    asked = 0;
    sigaction(SIGINT, &sa, &s->old);
}

void mt_cli_stop_release(mt_cli_stop *s)
{
    sigaction(SIGINT, &s->old, NULL);
}

int mt_cli_stop_asked(void)
{
    return asked;
}

void mt_cli_bar(char *out, size_t size, unsigned width, uint64_t done, uint64_t total)
{
    unsigned filled;

    if (size == 0)
        return;
    if (width >= size)
        width = (unsigned)size - 1;
    filled = total ? (unsigned)((uint64_t)width * (done < total ? done : total) / total) : width;
    memset(out, '#', filled);
    memset(out + filled, '.', width - filled);
    out[width] = '\0';
}

void mt_cli_progress_clear(int tty)
{
    if (tty)
        fputs("\r\033[K", stderr);
}
