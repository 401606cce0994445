/* The chat prompt's line reader: lines, end of input, and Ctrl-C at any moment. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helpers.h"
#include "cli/prompt.h"

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* A reader that never returns would hang ctest: let SIGALRM end it loudly. */
static int setup(void **state)
{
    struct sigaction sa;

    (void)state;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    interrupted = 0;
    alarm(20);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    alarm(0);
    signal(SIGINT, SIG_DFL);
    return 0;
}

static void write_all(int fd, const char *s, size_t len)
{
    while (len) {
        ssize_t n = write(fd, s, len);
        assert_true(n > 0);
        s += n;
        len -= (size_t)n;
    }
}

static void expect_line(mt_prompt *p, int fd, const char *want)
{
    char *line;
    size_t len;

    assert_int_equal(mt_prompt_read(p, fd, &interrupted, &line, &len), MT_PROMPT_LINE);
    assert_int_equal(len, strlen(want));
    assert_string_equal(line, want);
}

static void test_lines_then_eof(void **state)
{
    mt_prompt p;
    int fds[2];
    char *line;
    size_t len;

    (void)state;
    memset(&p, 0, sizeof(p));
    assert_int_equal(pipe(fds), 0);
    write_all(fds[1], "one\n\ntwo\nlast", 13);
    close(fds[1]);
    expect_line(&p, fds[0], "one");
    expect_line(&p, fds[0], "");
    expect_line(&p, fds[0], "two");
    expect_line(&p, fds[0], "last"); /* no newline before the end */
    assert_int_equal(mt_prompt_read(&p, fds[0], &interrupted, &line, &len), MT_PROMPT_EOF);
    assert_int_equal(mt_prompt_read(&p, fds[0], &interrupted, &line, &len), MT_PROMPT_EOF);
    mt_prompt_dispose(&p);
    close(fds[0]);
}

static void test_long_line(void **state)
{
    mt_prompt p;
    int fds[2];
    char *big = malloc(100001);
    pid_t pid;
    int status;

    (void)state;
    assert_non_null(big);
    memset(big, 'x', 100000);
    big[100000] = '\0';
    memset(&p, 0, sizeof(p));
    assert_int_equal(pipe(fds), 0);
    pid = fork(); /* the pipe holds less than the line */
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        write_all(fds[1], big, 100000);
        write_all(fds[1], "\nshort\n", 7);
        _exit(0);
    }
    close(fds[1]);
    expect_line(&p, fds[0], big);
    expect_line(&p, fds[0], "short");
    assert_int_equal(waitpid(pid, &status, 0), pid);
    mt_prompt_dispose(&p);
    close(fds[0]);
    free(big);
}

/* Ctrl-C that came before the wait began (the chat was still printing its
 * prompt): it must end the read, not be lost while the read blocks. */
static void test_interrupt_before_wait(void **state)
{
    mt_prompt p;
    int fds[2];
    char *line;
    size_t len;

    (void)state;
    memset(&p, 0, sizeof(p));
    assert_int_equal(pipe(fds), 0);
    raise(SIGINT);
    assert_int_equal(interrupted, 1);
    assert_int_equal(mt_prompt_read(&p, fds[0], &interrupted, &line, &len), MT_PROMPT_INTR);
    /* After it, reading goes on. */
    interrupted = 0;
    write_all(fds[1], "next\n", 5);
    expect_line(&p, fds[0], "next");
    mt_prompt_dispose(&p);
    close(fds[0]);
    close(fds[1]);
}

/* Ctrl-C while the reader waits, with a half-typed line already read. */
static void test_interrupt_while_waiting(void **state)
{
    mt_prompt p;
    int fds[2], status;
    char *line;
    size_t len;
    pid_t parent = getpid(), pid;

    (void)state;
    memset(&p, 0, sizeof(p));
    assert_int_equal(pipe(fds), 0);
    write_all(fds[1], "half", 4);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        usleep(200000);
        kill(parent, SIGINT);
        _exit(0);
    }
    assert_int_equal(mt_prompt_read(&p, fds[0], &interrupted, &line, &len), MT_PROMPT_INTR);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    /* The half line went with the Ctrl-C. */
    interrupted = 0;
    write_all(fds[1], "next\n", 5);
    expect_line(&p, fds[0], "next");
    mt_prompt_dispose(&p);
    close(fds[0]);
    close(fds[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_lines_then_eof, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_line, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_before_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_interrupt_while_waiting, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
