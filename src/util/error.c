#include <stdarg.h>
#include <stdio.h>

#include <memtool/store.h>

/* Per thread, so one handle can serve many threads without their errors mixing. */
static _Thread_local char last_message[1024] = "no error";
static _Thread_local mt_error last;

const mt_error *mt_error_last(void)
{
    /* A thread-local's address is not a constant initialiser: set it here. */
    last.message = last_message;
    return &last;
}

int mt_error_set(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(last_message, sizeof(last_message), fmt, ap);
    va_end(ap);
    last.code = code;
    last.message = last_message;
    return code;
}
