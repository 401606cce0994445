/* A symlink swapped in during operations never lets one reach outside. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

#define OPS 4000

typedef struct {
    char root[300];
    atomic_int stop;
    long swaps;
} attacker;

/* Keep exchanging the directory d with a symlink to the outside. */
static void *attack(void *arg)
{
    attacker *a = arg;
    int fd = open(a->root, O_RDONLY | O_DIRECTORY);

    while (!atomic_load(&a->stop)) {
        if (renameat2(fd, "d", fd, "lnk", RENAME_EXCHANGE) == 0)
            a->swaps++;
    }
    close(fd);
    return NULL;
}

static void test_symlink_swap(void **state)
{
    mt_test_store ts;
    attacker a;
    pthread_t t;
    char outside[300], path[400], json[256], *text, *data;
    int i, err, fd;
    (void)state;
    mt_test_store_init(&ts, NULL);
    snprintf(outside, sizeof(outside), "%s/outside", ts.dir);
    assert_int_equal(mkdir(outside, 0700), 0);
    snprintf(path, sizeof(path), "%s/f", outside);
    fd = open(path, O_CREAT | O_WRONLY, 0600);
    assert_int_equal(write(fd, "OUTSIDE\n", 8), 8);
    close(fd);
    snprintf(path, sizeof(path), "%s/lnk", ts.root);
    assert_int_equal(symlink(outside, path), 0);
    mt_test_expect(
        ts.mem, "{\"command\":\"create\",\"path\":\"/memories/d/f\",\"file_text\":\"inside\\n\"}",
        0, "File created successfully at: /memories/d/f");

    snprintf(a.root, sizeof(a.root), "%s", ts.root);
    atomic_store(&a.stop, 0);
    a.swaps = 0;
    assert_int_equal(pthread_create(&t, NULL, attack, &a), 0);
    for (i = 0; i < OPS; i++) {
        switch (i % 4) {
        case 0:
            snprintf(json, sizeof(json), "{\"command\":\"view\",\"path\":\"/memories/d/f\"}");
            break;
        case 1:
            snprintf(json, sizeof(json),
                     "{\"command\":\"create\",\"path\":\"/memories/d/n%d\",\"file_text\":\"x\"}",
                     i);
            break;
        case 2:
            snprintf(json, sizeof(json),
                     "{\"command\":\"insert\",\"path\":\"/memories/d/f\",\"insert_line\":0,"
                     "\"insert_text\":\"i%d\"}",
                     i);
            break;
        default:
            snprintf(json, sizeof(json),
                     "{\"command\":\"rename\",\"old_path\":\"/memories/d/n%d\",\"new_path\":"
                     "\"/memories/d/m%d\"}",
                     i - 2, i);
            break;
        }
        text = mt_test_call(ts.mem, &err, json);
        assert_null(strstr(text, "OUTSIDE"));
        free(text);
    }
    atomic_store(&a.stop, 1);
    assert_int_equal(pthread_join(t, NULL), 0);
    /* The attack really ran, and nothing outside was read, written or made. */
    assert_true(a.swaps > 100);
    data = mt_test_read(&ts, "../outside/f", NULL);
    assert_string_equal(data, "OUTSIDE\n");
    free(data);
    snprintf(path, sizeof(path), "ls -A '%s' | grep -qvx f", outside);
    assert_int_not_equal(system(path), 0);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_symlink_swap)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
