/*
 * A view that shows every line it was asked for shows each exactly as
 * "\n%6zu\t" and the line's bytes: ASCII and not, lines of every length
 * around the 16-byte steps, with and without a final newline, whole files
 * and ranges, at view limits from the smallest allowed (200) up. Whenever
 * the whole answer fits the limit, the view is that answer, byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "util/buf.h"
#include "core/tool_input.h"
#include "util/json.h"
#include "core/memory.h"
#include "util/utf8.h"

static void write_file(const mt_test_store *ts, const char *name, const char *data, size_t len)
{
    char path[400];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", ts->root, name);
    assert_non_null(f = fopen(path, "wb"));
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* The answer the view must give when it has room for all of it. */
static void expected(mt_buf *b, const char *data, size_t len, size_t first, size_t last)
{
    size_t line = 1, off = 0;

    mt_buf_truncate(b, 0);
    assert_int_equal(mt_buf_puts(b, "Here's the content of /memories/t.md with line numbers:"), 0);
    while (line <= last && off <= len) {
        const char *nl = memchr(data + off, '\n', len - off);
        size_t end = nl ? (size_t)(nl - data) : len;

        if (line >= first) {
            assert_int_equal(mt_buf_printf(b, "\n%6zu\t", line), 0);
            assert_int_equal(mt_utf8_sanitize(b, data + off, end - off), 0);
        }
        off = end + 1;
        line++;
    }
}

static size_t random_text(char *s, size_t cap, unsigned *seed, int with_utf8)
{
    size_t len = 0, lines;

    *seed = *seed * 1103515245u + 12345u;
    lines = (*seed >> 16) % 40;
    for (size_t l = 0; l < lines && len + 80 < cap; l++) {
        size_t n;

        *seed = *seed * 1103515245u + 12345u;
        /* Mostly around the steps of 16 (0..50), sometimes long. */
        n = (*seed >> 16) % 8 == 0 ? 60 + (*seed >> 20) % 19 : (*seed >> 20) % 50;
        for (size_t i = 0; i < n; i++)
            s[len++] = (char)(' ' + (i * 7 + l) % 95);
        if (with_utf8 && l % 5 == 2) {
            memcpy(s + len, "\xc3\xa9", 2);
            len += 2;
        }
        s[len++] = '\n';
    }
    *seed = *seed * 1103515245u + 12345u;
    if (len > 0 && (*seed >> 16) % 2)
        len--; /* no final newline */
    return len;
}

static void test_lines_shown_whole(void **state)
{
    static const unsigned limits[] = {200, 450, 700, 2000, 16000};
    unsigned seed = 4242;
    char text[4096], json[160];
    mt_buf want = MT_BUF_INIT;
    size_t checked = 0;
    (void)state;

    for (size_t li = 0; li < sizeof(limits) / sizeof(limits[0]); li++) {
        mt_test_store ts;
        mt_options o;

        mt_options_init(&o);
        o.view_limit = limits[li];
        mt_test_store_init(&ts, &o);
        for (int round = 0; round < 150; round++) {
            size_t len = random_text(text, sizeof(text), &seed, round % 3 == 0);
            size_t n = 0, first = 1, last;
            int is_error, ranged = round % 2;
            char *got;

            for (size_t i = 0; i < len; i++)
                n += text[i] == '\n';
            n += len > 0 && text[len - 1] != '\n';
            write_file(&ts, "t.md", text, len);
            last = n;
            if (ranged && n > 0) {
                seed = seed * 1103515245u + 12345u;
                first = 1 + (seed >> 16) % n;
                last = first + (seed >> 20) % (n - first + 1);
                snprintf(json, sizeof(json),
                         "{\"command\":\"view\",\"path\":\"/memories/t.md\","
                         "\"view_range\":[%zu,%zu]}",
                         first, last);
            } else {
                snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories/t.md\"}");
            }
            expected(&want, text, len, first, last);
            got = mt_test_call(ts.mem, &is_error, json);
            assert_false(is_error);
            if (mt_utf8_width(want.ptr, want.len) <= limits[li]) {
                assert_string_equal(got, want.ptr);
                checked++;
            } else {
                /* Cut short: what is shown is the start of the whole answer. */
                const char *note = strstr(got, "\n[output truncated");
                assert_non_null(note);
                assert_true((size_t)(note - got) <= want.len);
                assert_memory_equal(got, want.ptr, (size_t)(note - got));
            }
            free(got);
        }
        mt_test_store_free(&ts);
    }
    /* Enough of the rounds had room for everything to say something. */
    assert_true(checked > 200);
    mt_buf_dispose(&want);
}

/* Lines for the escaped view: plain ASCII mostly, else one kind of byte a
 * JSON string escapes (or UTF-8) somewhere in it. */
static size_t escape_text(char *s, size_t cap, unsigned *seed, int kind)
{
    static const char *const odd[] = {"\"", "\\", "\t", "\x01", "\x1f", "\r", "\xc3\xa9", "\x7f"};
    size_t len = 0, lines;

    *seed = *seed * 1103515245u + 12345u;
    lines = (*seed >> 16) % 30;
    for (size_t l = 0; l < lines && len + 80 < cap; l++) {
        size_t n;

        *seed = *seed * 1103515245u + 12345u;
        n = (*seed >> 20) % 60;
        for (size_t i = 0; i < n; i++)
            s[len++] = (char)('a' + (i * 7 + l) % 26);
        if (kind > 0 && l == lines / 2) {
            const char *b = odd[(size_t)(kind - 1) % (sizeof(odd) / sizeof(odd[0]))];
            memcpy(s + len, b, strlen(b));
            len += strlen(b);
        }
        s[len++] = '\n';
    }
    *seed = *seed * 1103515245u + 12345u;
    if (len > 0 && (*seed >> 16) % 2)
        len--;
    return len;
}

/* The bytes_read of the audit log's last line. */
static long last_bytes_read(const char *log)
{
    char line[1024], last[1024] = "";
    FILE *f = fopen(log, "r");
    const char *p;

    assert_non_null(f);
    while (fgets(line, sizeof(line), f))
        memcpy(last, line, sizeof(line));
    fclose(f);
    assert_non_null(p = strstr(last, "\"bytes_read\":"));
    return strtol(p + strlen("\"bytes_read\":"), NULL, 10);
}

/*
 * What serve sends (mt_memory_run_input_json, which writes a view of plain
 * lines escaped as it numbers them) is the call's answer as a JSON string,
 * byte for byte, for texts that take that way and texts that do not, and
 * the audit log counts the answer's plain bytes either way.
 */
static void test_lines_escaped_as_rendered(void **state)
{
    unsigned seed = 977;
    char text[4096], json[160], dir[256], log[300];
    mt_buf want = MT_BUF_INIT, got = MT_BUF_INIT, scratch = MT_BUF_INIT;
    mt_test_store ts;
    mt_options o;
    (void)state;

    mt_test_scratch_make(dir, sizeof(dir), "audit");
    snprintf(log, sizeof(log), "%s/audit.log", dir);
    mt_options_init(&o);
    o.audit = log;
    mt_test_store_init(&ts, &o);
    for (int round = 0; round < 400; round++) {
        int kind = round % 3 ? 0 : 1 + round / 3 % 8;
        size_t len = escape_text(text, sizeof(text), &seed, kind);
        int is_error, json_error = -1;
        mt_input in;
        char *plain;

        write_file(&ts, "t.md", text, len);
        if (round % 4 == 3)
            snprintf(json, sizeof(json),
                     "{\"command\":\"view\",\"path\":\"/memories/t.md\",\"view_range\":[2,-1]}");
        else
            snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories/t.md\"}");
        plain = mt_test_call(ts.mem, &is_error, json);
        mt_buf_truncate(&want, 0);
        assert_int_equal(mt_json_put_string(&want, plain, strlen(plain)), 0);

        assert_int_equal(mt_input_parse_flat(&in, json, strlen(json)), 1);
        mt_buf_truncate(&got, 0);
        assert_int_equal(mt_buf_puts(&got, "["), 0); /* what was there stays */
        assert_int_equal(mt_memory_run_input_json(&got, &scratch, &json_error, ts.mem, &in), 0);
        mt_input_dispose(&in);
        assert_int_equal(json_error, is_error);
        assert_int_equal(got.len, want.len + 1);
        assert_memory_equal(got.ptr + 1, want.ptr, want.len);
        assert_int_equal(last_bytes_read(log), is_error ? 0 : (long)strlen(plain));
        free(plain);
    }
    mt_test_store_free(&ts);
    assert_int_equal(mt_test_scratch_remove(dir), 0);
    mt_buf_dispose(&want);
    mt_buf_dispose(&got);
    mt_buf_dispose(&scratch);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_shown_whole),
        cmocka_unit_test(test_lines_escaped_as_rendered),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
