#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <memtool.h>

int mt_buf_grow(mt_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (extra > SIZE_MAX - b->len - 1)
        return MT_ENOMEM;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 64;
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    p = realloc(b->ptr, cap);
    if (!p)
        return MT_ENOMEM;
    b->ptr = p;
    b->cap = cap;
    return 0;
}

int mt_buf_put(mt_buf *b, const char *data, size_t len)
{
    if (mt_buf_grow(b, len) < 0)
        return MT_ENOMEM;
    if (len)
        memcpy(b->ptr + b->len, data, len);
    b->len += len;
    b->ptr[b->len] = '\0';
    return 0;
}

int mt_buf_puts(mt_buf *b, const char *s)
{
    return mt_buf_put(b, s, strlen(s));
}

int mt_buf_putc(mt_buf *b, char c)
{
    return mt_buf_put(b, &c, 1);
}

int mt_buf_vprintf(mt_buf *b, const char *fmt, va_list ap)
{
    va_list again;
    int n;

    va_copy(again, ap);
    n = vsnprintf(NULL, 0, fmt, again);
    va_end(again);
    if (n < 0 || mt_buf_grow(b, (size_t)n) < 0)
        return MT_ENOMEM;
    vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
    return 0;
}

int mt_buf_printf(mt_buf *b, const char *fmt, ...)
{
    va_list ap;
    int rc;

    va_start(ap, fmt);
    rc = mt_buf_vprintf(b, fmt, ap);
    va_end(ap);
    return rc;
}

void mt_buf_truncate(mt_buf *b, size_t len)
{
    if (len < b->len) {
        b->len = len;
        b->ptr[len] = '\0';
    }
}

char *mt_buf_detach(mt_buf *b, size_t *len)
{
    char *p;

    if (!b->ptr && mt_buf_grow(b, 0) < 0)
        return NULL;
    b->ptr[b->len] = '\0';
    p = b->ptr;
    if (len)
        *len = b->len;
    b->ptr = NULL;
    b->len = b->cap = 0;
    return p;
}

void mt_buf_dispose(mt_buf *b)
{
    free(b->ptr);
    b->ptr = NULL;
    b->len = b->cap = 0;
}
