/*
 * One request of the in-process suites and the two C implementations that
 * run it: libmemtool through mt_memory_call, and the floor, which does only
 * the system calls the operation needs and formats nothing.
 *
 * Requests are prepared before the clock starts (memtool's JSON text is
 * built then), so a timed iteration is exactly one call.
 */
#ifndef MT_BENCH_BACKEND_H
#define MT_BENCH_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <memtool.h>

typedef enum {
    OP_VIEW,
    OP_VIEW_DIR,
    OP_CREATE,
    OP_STR_REPLACE,
    OP_INSERT,
    OP_DELETE,
    OP_RENAME
} bench_op;

typedef struct {
    bench_op op;
    char rel[256];    /* below the store root, no leading slash */
    char rel2[256];   /* rename's destination */
    const char *text; /* create's file_text, insert's insert_text, str_replace's new_str */
    size_t text_len;
    const char *old;  /* str_replace's old_str */
    size_t line;      /* insert_line */
    int64_t range[2]; /* view_range; range[0] == 0 means none */
    char *json;       /* memtool's input, built by bench_prepare */
    size_t json_len;
} bench_req;

typedef struct bench_backend bench_backend;

/* Open an implementation on the store root (the directory /memories maps to). */
bench_backend *bench_backend_open(const char *impl, const char *root, mt_durability d);
/* Build what the implementation needs before timing (memtool: the JSON). */
void bench_prepare(bench_backend *b, bench_req *r);
/* Run one request; dies if it did not succeed. */
void bench_run(bench_backend *b, const bench_req *r);
void bench_req_dispose(bench_req *r);
void bench_backend_close(bench_backend *b);

#endif
