/*
 * Two hosts, one PostgreSQL server: 4 processes on each of two "hosts"
 * (network namespaces that reach the server only over their own veth pair,
 * set up by tests/pg/two-hosts.sh: MEMTOOL_TEST_HOSTS="PID_A URL_A PID_B
 * URL_B") share one tenant's memories. Their changes serialise on the
 * tenant's row lock in the server, whatever host they come from.
 */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "helpers.h"
#include <memtool/store.h>

#define HOSTS    2
#define PER_HOST 4
#define INSERTS  25

static char host_pid[HOSTS][32], host_url[HOSTS][256];

static int setup(void **state)
{
    const char *hosts = getenv("MEMTOOL_TEST_HOSTS"), *owner = getenv("MEMTOOL_TEST_PG_OWNER");
    PGconn *c;
    PGresult *r;
    int ok;
    (void)state;

    if (!hosts || !owner ||
        sscanf(hosts, "%31s %255s %31s %255s", host_pid[0], host_url[0], host_pid[1],
               host_url[1]) != 4) {
        fprintf(stderr, "MEMTOOL_TEST_HOSTS is not set: run this test through "
                        "tests/pg/two-hosts.sh (ctest does)\n");
        return -1;
    }
    if (mt_store_pg_upgrade(owner) < 0) {
        fprintf(stderr, "%s\n", mt_error_last()->message);
        return -1;
    }
    c = PQconnectdb(owner);
    r = PQexec(c, "GRANT USAGE ON SCHEMA memtool TO memtool; GRANT SELECT ON memtool.meta TO "
                  "memtool; GRANT SELECT, INSERT, UPDATE, DELETE ON memtool.usage, memtool.nodes, "
                  "memtool.contents, memtool.content_refs, memtool.versions, memtool.search_docs "
                  "TO memtool");
    ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    PQfinish(c);
    return ok ? 0 : -1;
}

/* Move this process onto host h: into its network namespace. */
static int onto_host(int h)
{
    char path[64];
    int fd, rc;

    snprintf(path, sizeof(path), "/proc/%s/ns/net", host_pid[h]);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    rc = setns(fd, CLONE_NEWNET);
    close(fd);
    return rc;
}

/* The server sees the connection come from the host's own address. */
static int from_host(int h)
{
    PGconn *c = PQconnectdb(host_url[h]);
    PGresult *r = PQexec(c, "SELECT host(inet_client_addr())");
    char want[32];
    int ok;

    snprintf(want, sizeof(want), "10.213.%d.2", h + 1);
    ok = PQresultStatus(r) == PGRES_TUPLES_OK && !strcmp(PQgetvalue(r, 0, 0), want);
    if (!ok)
        fprintf(stderr, "host %d: %s%s\n", h, PQerrorMessage(c),
                PQresultStatus(r) == PGRES_TUPLES_OK ? PQgetvalue(r, 0, 0) : "");
    PQclear(r);
    PQfinish(c);
    return ok;
}

typedef int (*work_fn)(mt_memory *mem, int host, int proc);

/* Run work in PER_HOST processes on each host; returns the sum of their
 * exit statuses (each a count below 100), or fails. */
static int on_hosts(work_fn work, const mt_options *o)
{
    pid_t kids[HOSTS * PER_HOST];
    int i, status, sum = 0;

    for (i = 0; i < HOSTS * PER_HOST; i++) {
        assert_true((kids[i] = fork()) >= 0);
        if (kids[i] == 0) {
            int h = i / PER_HOST, n;
            mt_store *st;
            mt_memory *mem;
            if (onto_host(h) < 0 || !from_host(h))
                _exit(100);
            if (mt_store_pg_open(&st, host_url[h], "shared") < 0 ||
                mt_memory_new(&mem, st, o) < 0) {
                fprintf(stderr, "host %d: %s\n", h, mt_error_last()->message);
                _exit(101);
            }
            n = work(mem, h, i);
            mt_memory_free(mem);
            _exit(n);
        }
    }
    for (i = 0; i < HOSTS * PER_HOST; i++) {
        assert_int_equal(waitpid(kids[i], &status, 0), kids[i]);
        assert_true(WIFEXITED(status));
        if (WEXITSTATUS(status) >= 100)
            fail_msg("process %d failed (%d)", i, WEXITSTATUS(status));
        sum += WEXITSTATUS(status);
    }
    return sum;
}

static int insert_lines(mt_memory *mem, int host, int proc)
{
    int k;

    for (k = 0; k < INSERTS; k++) {
        char json[256], *text;
        int err = 1;
        snprintf(json, sizeof(json),
                 "{\"command\":\"insert\",\"path\":\"/memories/log.md\",\"insert_line\":0,"
                 "\"insert_text\":\"h%d-p%d-%d\"}",
                 host, proc, k);
        text = mt_test_call(mem, &err, json);
        if (err) {
            fprintf(stderr, "%s\n", text);
            free(text);
            return 102;
        }
        free(text);
    }
    return 0;
}

static int create_files(mt_memory *mem, int host, int proc)
{
    int k, made = 0;

    for (k = 0; k < 5; k++) {
        char json[256], *text;
        int err = 1;
        snprintf(json, sizeof(json),
                 "{\"command\":\"create\",\"path\":\"/memories/r/h%d-p%d-%d.md\","
                 "\"file_text\":\"x\"}",
                 host, proc, k);
        text = mt_test_call(mem, &err, json);
        if (!err)
            made++;
        else if (!strstr(text, "the max files limit is 11")) {
            fprintf(stderr, "%s\n", text);
            free(text);
            return 103;
        }
        free(text);
    }
    return made;
}

static void test_two_hosts(void **state)
{
    mt_options o;
    mt_store *st;
    mt_memory *mem;
    mt_usage u;
    char *text;
    int err = 1, h, p, k;
    (void)state;

    mt_options_init(&o);
    o.lock_timeout_ms = 60000;
    assert_int_equal(mt_store_pg_open(&st, getenv("MEMTOOL_TEST_PG"), "shared"), 0);
    assert_int_equal(mt_memory_new(&mem, st, &o), 0);
    mt_test_expect(mem, "{\"command\":\"create\",\"path\":\"/memories/log.md\",\"file_text\":\"\"}",
                   0, "File created successfully at: /memories/log.md");

    /* 4 processes on each host, 25 inserts each, into one memory: 200 lines. */
    assert_int_equal(on_hosts(insert_lines, &o), 0);
    text = mt_test_call(mem, &err, "{\"command\":\"view\",\"path\":\"/memories/log.md\"}");
    assert_int_equal(err, 0);
    for (h = 0; h < HOSTS; h++)
        for (p = h * PER_HOST; p < (h + 1) * PER_HOST; p++)
            for (k = 0; k < INSERTS; k++) {
                char line[48];
                size_t n = (size_t)snprintf(line, sizeof(line), "\th%d-p%d-%d\n", h, p, k);
                /* (The result's last line has no newline.) */
                if (!strstr(text, line) &&
                    (strlen(text) < n || memcmp(text + strlen(text) - n + 1, line, n - 1)))
                    fail_msg("line %s missing", line + 1);
            }
    assert_non_null(strstr(text, "\n   200\t"));
    assert_null(strstr(text, "\n   201\t"));
    free(text);

    /* Racing past max_files from both hosts: exactly the limit lands (11:
     * the log and 10 new ones). */
    o.max_files = 11;
    assert_int_equal(on_hosts(create_files, &o), 10);
    assert_int_equal(mt_memory_usage(&u, mem), 0);
    assert_int_equal(u.files, 11);
    mt_memory_free(mem);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_two_hosts)};
    return cmocka_run_group_tests(tests, setup, NULL);
}
