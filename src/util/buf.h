/* A growable byte buffer: the one way results and file contents are built. */
#ifndef MT_BUF_H
#define MT_BUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct {
    char *ptr; /* always NUL-terminated once anything was put */
    size_t len;
    size_t cap;
} mt_buf;

#define MT_BUF_INIT                                                                                \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

/* Each returns 0 or MT_ENOMEM (the buffer keeps what it had). */
int mt_buf_grow(mt_buf *b, size_t extra);
int mt_buf_put(mt_buf *b, const char *data, size_t len);
int mt_buf_puts(mt_buf *b, const char *s);
int mt_buf_putc(mt_buf *b, char c);
int mt_buf_printf(mt_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int mt_buf_vprintf(mt_buf *b, const char *fmt, va_list ap)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 0)))
#endif
    ;
void mt_buf_truncate(mt_buf *b, size_t len);
/* Hand the bytes to the caller (never NULL: "" for an empty buffer, or NULL on ENOMEM). */
char *mt_buf_detach(mt_buf *b, size_t *len);
void mt_buf_dispose(mt_buf *b);

#endif
