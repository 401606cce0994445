/*
 * A view reads what it shows, not the whole file: a big file streams past in
 * pieces with memory bounded by the view limit, a file that grows is read to
 * the size it had when opened, and the streaming way answers byte for byte
 * as the whole-buffer way does. FIFOs and sockets are never opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "core/memory.h"

static void write_file(const mt_test_store *ts, const char *name, const char *data, size_t len)
{
    char path[400];
    int fd;

    snprintf(path, sizeof(path), "%s/%s", ts->root, name);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

/* 3 MiB of lines of every kind: short, empty, 30,000 characters long, UTF-8,
 * invalid bytes, CR; no final newline. */
static char *varied(size_t *len)
{
    size_t cap = 3u << 20, o = 0;
    char *s = malloc(cap + 64);
    unsigned x = 12345;

    assert_non_null(s);
    while (o < cap) {
        unsigned kind;
        x = x * 1103515245u + 12345u;
        kind = (x >> 16) % 10;
        if (kind == 0) {
            s[o++] = '\n';
        } else if (kind == 1 && o + 30001 < cap) {
            memset(s + o, 'L', 30000);
            o += 30000;
            s[o++] = '\n';
        } else if (kind == 2) {
            memcpy(s + o, "caf\xc3\xa9 \xe7\xac\x94\xe8\xae\xb0 \xf0\x9f\x98\x80\n", 18);
            o += 18;
        } else if (kind == 3) {
            memcpy(s + o, "bad \xff\xfe\xc3 bytes\r\n", 15);
            o += 15;
        } else {
            o += (size_t)snprintf(s + o, 64, "line %u of text\n", x % 100000);
        }
    }
    s[o - 1] = 'x'; /* no final newline */
    *len = o;
    return s;
}

static void test_streaming_equals_whole(void **state)
{
    static const long ranges[][2] = {{0, 0},     {1, 1},      {1, -1},      {2, 10},
                                     {50, 60},   {100, -1},   {1000, 1010}, {5000, -1},
                                     {9999, -1}, {20000, -1}, {400000, -1}, {3, 2}};
    static const unsigned limits[] = {200, 1000, 16000, 100000};
    mt_test_store ts;
    size_t len;
    char *data = varied(&len), json[200];
    (void)state;

    mt_test_store_init(&ts, NULL);
    write_file(&ts, "big.txt", data, len);
    for (size_t l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
        mt_options o;
        mt_memory *mem;
        mt_options_init(&o);
        o.view_limit = limits[l];
        assert_int_equal(mt_memory_open(&mem, ts.root, &o), 0);
        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
            char *whole, *streamed;
            int e1, e2;
            if (ranges[i][0] == 0)
                snprintf(json, sizeof(json),
                         "{\"command\":\"view\",\"path\":\"/memories/big.txt\"}");
            else
                snprintf(json, sizeof(json),
                         "{\"command\":\"view\",\"path\":\"/memories/big.txt\","
                         "\"view_range\":[%ld,%ld]}",
                         ranges[i][0], ranges[i][1]);
            mt_view_whole = (size_t)-1;
            whole = mt_test_call(mem, &e1, json);
            mt_view_whole = 1; /* everything streams, in 1 MiB pieces */
            streamed = mt_test_call(mem, &e2, json);
            mt_view_whole = (size_t)4 << 20;
            if (e1 != e2 || strcmp(whole, streamed) != 0)
                fail_msg("limit %u, %s: the streaming view differs:\n%.300s\n---\n%.300s",
                         limits[l], json, whole, streamed);
            free(whole);
            free(streamed);
        }
        mt_memory_free(mem);
    }
    free(data);
    mt_test_store_free(&ts);
}

static long max_rss_kb(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* view_range [1, 1] of a 512 MiB file (sparse: no disk used) in a child,
 * whose peak memory must stay far below the file. */
static void test_big_file_bounded_memory(void **state)
{
    mt_test_store ts;
    char path[400];
    int fd, status;
    pid_t pid;
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(path, sizeof(path), "%s/huge.log", ts.root);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "first line\nsecond\n", 18), 18);
    assert_int_equal(ftruncate(fd, (off_t)1 << 29), 0);
    close(fd);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        long before = max_rss_kb();
        int is_error;
        char *text = mt_test_call(ts.mem, &is_error,
                                  "{\"command\":\"view\",\"path\":\"/memories/huge.log\","
                                  "\"view_range\":[1,1]}");
        long grew = max_rss_kb() - before;
        if (is_error || strcmp(text, "Here's the content of /memories/huge.log with line numbers:\n"
                                     "     1\tfirst line") != 0) {
            fprintf(stderr, "view of the big file: %.200s\n", text);
            _exit(1);
        }
        if (grew > 64 * 1024) {
            fprintf(stderr, "view of a 512 MiB file grew the process by %ld KiB\n", grew);
            _exit(2);
        }
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    mt_test_store_free(&ts);
}

/* A file another process keeps appending to: the view reads it to the size it
 * had when opened, and ends (under an alarm: a view that chases it fails). */
static void test_growing_file(void **state)
{
    mt_test_store ts;
    char path[400];
    static char chunk[1 << 16];
    int fd, status;
    pid_t writer, viewer;
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(path, sizeof(path), "%s/grows.log", ts.root);
    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    /* Lines of 1 KiB: however fast the writer, the file stays far below the
     * 999,999-line limit while the view runs. */
    for (size_t i = 0; i < sizeof(chunk); i++)
        chunk[i] = i % 1024 == 1023 ? '\n' : 'g';
    for (int i = 0; i < 128; i++) /* 8 MiB to begin with: the streaming way */
        assert_int_equal(write(fd, chunk, sizeof(chunk)), (ssize_t)sizeof(chunk));
    writer = fork();
    assert_true(writer >= 0);
    if (writer == 0) {
        struct timespec tick = {0, 200 * 1000}; /* 64 KiB each 0.2 ms: 300 MB a second */
        for (;;) {
            if (write(fd, chunk, sizeof(chunk)) < 0)
                _exit(0);
            nanosleep(&tick, NULL);
        }
    }
    viewer = fork();
    assert_true(viewer >= 0);
    if (viewer == 0) {
        int is_error;
        char *text;
        long before = max_rss_kb();
        alarm(60);
        text = mt_test_call(ts.mem, &is_error,
                            "{\"command\":\"view\",\"path\":\"/memories/grows.log\","
                            "\"view_range\":[1,2]}");
        if (is_error || !strstr(text, "     2\tggg"))
            _exit(1);
        /* Not the 8 MiB it had, nor what was added: a piece and what shows. */
        _exit(max_rss_kb() - before > 6 * 1024 ? 2 : 0);
    }
    assert_int_equal(waitpid(viewer, &status, 0), viewer);
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);
    close(fd);
    if (WIFSIGNALED(status))
        fail_msg("a view chased a growing file until killed");
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    mt_test_store_free(&ts);
}

/* A writer blocked opening a FIFO is released by any reader's open: after a
 * view of the FIFO it must still be blocked. */
static void test_fifo_never_opened(void **state)
{
    mt_test_store ts;
    char path[400];
    int status;
    pid_t writer;
    struct timespec pause = {0, 200 * 1000 * 1000};
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(path, sizeof(path), "%s/pipe", ts.root);
    assert_int_equal(mkfifo(path, 0600), 0);
    writer = fork();
    assert_true(writer >= 0);
    if (writer == 0) {
        int fd = open(path, O_WRONLY); /* blocks until someone opens it to read */
        _exit(fd >= 0 ? 3 : 4);
    }
    nanosleep(&pause, NULL);
    mt_test_expect(ts.mem, "{\"command\":\"view\",\"path\":\"/memories/pipe\"}", 1,
                   "Error: Unsupported file type for /memories/pipe");
    mt_test_expect(ts.mem,
                   "{\"command\":\"str_replace\",\"path\":\"/memories/pipe\",\"old_str\":\"a\","
                   "\"new_str\":\"b\"}",
                   1, "Error: Unsupported file type for /memories/pipe");
    mt_test_expect(ts.mem,
                   "{\"command\":\"insert\",\"path\":\"/memories/pipe\",\"insert_line\":0,"
                   "\"insert_text\":\"b\"}",
                   1, "Error: Unsupported file type for /memories/pipe");
    nanosleep(&pause, NULL);
    if (waitpid(writer, &status, WNOHANG) == writer)
        fail_msg("the FIFO was opened: its blocked writer went on (status %d)", status);
    kill(writer, SIGKILL);
    waitpid(writer, NULL, 0);

    /* A socket: the same words. */
    {
        struct sockaddr_un addr;
        char sock[400];
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        memset(&addr, 0, sizeof(addr));
        addr.sun_family = AF_UNIX;
        snprintf(sock, sizeof(sock), "%s/sock", ts.root);
        assert_true(strlen(sock) < sizeof(addr.sun_path));
        memcpy(addr.sun_path, sock, strlen(sock) + 1);
        if (bind(s, (struct sockaddr *)&addr, sizeof(addr)) == 0)
            mt_test_expect(ts.mem, "{\"command\":\"view\",\"path\":\"/memories/sock\"}", 1,
                           "Error: Unsupported file type for /memories/sock");
        close(s);
    }
    mt_test_store_free(&ts);
}

/* A header longer than the view limit (a long path, a small limit): the
 * first line is still shown, and the advice moves on. */
static void test_long_header(void **state)
{
    mt_test_store ts;
    mt_options o;
    char dir[700], json[1200], *text;
    int is_error;
    size_t o_len = 0;
    (void)state;

    mt_options_init(&o);
    o.view_limit = 200;
    mt_test_store_init(&ts, &o);
    for (int i = 0; i < 20; i++)
        o_len += (size_t)snprintf(dir + o_len, sizeof(dir) - o_len, "/component%02d", i);
    snprintf(json, sizeof(json),
             "{\"command\":\"create\",\"path\":\"/memories%s/f\",\"file_text\":\"one\\ntwo\\n\"}",
             dir);
    text = mt_test_call(ts.mem, &is_error, json);
    assert_false(is_error);
    free(text);
    snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories%s/f\"}", dir);
    text = mt_test_call(ts.mem, &is_error, json);
    assert_false(is_error);
    if (!strstr(text, "with line numbers:\n     1\tone\n[output truncated at line 1 of 2; call "
                      "view with view_range [2, 2] to read more]"))
        fail_msg("a long header left no room for a line: %s", text);
    free(text);
    snprintf(json, sizeof(json),
             "{\"command\":\"view\",\"path\":\"/memories%s/f\",\"view_range\":[2,2]}", dir);
    text = mt_test_call(ts.mem, &is_error, json);
    assert_false(is_error);
    if (!strstr(text, "with line numbers:\n     2\ttwo"))
        fail_msg("the advised range shows nothing: %s", text);
    free(text);
    /* A listing too: its first entry is shown. */
    snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories%.*s\"}",
             (int)(o_len - 12), dir);
    text = mt_test_call(ts.mem, &is_error, json);
    assert_false(is_error);
    if (!strstr(text, "/component19/\n[listing truncated after 1 entries"))
        fail_msg("a long listing header left no entry: %s", text);
    free(text);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streaming_equals_whole),
        cmocka_unit_test(test_big_file_bounded_memory),
        cmocka_unit_test(test_growing_file),
        cmocka_unit_test(test_fifo_never_opened),
        cmocka_unit_test(test_long_header),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
