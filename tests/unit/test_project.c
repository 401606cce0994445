/*
 * The project pattern's record of a session (src/agent/project.c): whether
 * the session itself changed the progress log is told by who wrote its
 * versions, so a change by another session or a person is not taken for it.
 */
#include <stdlib.h>
#include <string.h>

#include "agent/project.h"
#include "helpers.h"

static const char create_log[] =
    "{\"command\":\"create\",\"path\":\"" MT_PROJECT_PROGRESS "\",\"file_text\":\"# Progress\\n\"}";
static const char append[] = "{\"command\":\"insert\",\"path\":\"" MT_PROJECT_PROGRESS
                             "\",\"insert_line\":1,\"insert_text\":\"- a line\\n\"}";

static void ok(mt_memory *mem, const char *json)
{
    int err = 1;
    char *text = mt_test_call(mem, &err, json);

    if (err)
        fail_msg("%s: %s", json, text);
    free(text);
}

/* Another handle on the same store, as another session would have. */
static mt_memory *other_session(const mt_test_store *ts, int history)
{
    mt_options o;
    mt_memory *m;

    mt_options_init(&o);
    o.actor = "agent:other";
    o.history = history;
    assert_int_equal(mt_memory_open(&m, ts->root, &o), 0);
    return m;
}

static void turn(mt_project_session *p)
{
    char *text = NULL;

    assert_int_equal(mt_project_turn_begin(&text, p, "work on the next feature"), 0);
    assert_non_null(strstr(text, "work on the next feature"));
    free(text);
}

static void run(int history)
{
    mt_test_store ts;
    mt_options o;
    mt_project_session p;
    mt_memory *other;

    mt_options_init(&o);
    o.actor = "agent:mine";
    o.history = history;
    mt_test_store_init(&ts, &o);
    other = other_session(&ts, history);
    ok(ts.mem, create_log);
    mt_project_begin(&p, ts.mem);

    /* The session writes nothing; another one appends meanwhile. */
    turn(&p);
    ok(other, append);
    mt_project_turn_end(&p, 0, 0);
    if (history)
        assert_int_equal(p.last_changed, 0);
    else
        assert_int_equal(p.last_changed, 1); /* the log's hash is all there is to go by */

    /* The session appends: that is its entry, whoever else writes too. */
    turn(&p);
    ok(ts.mem, append);
    ok(other, append);
    mt_project_turn_end(&p, 0, 0);
    assert_int_equal(p.last_changed, 1);
    assert_int_equal(p.changed, 1);

    /* Nobody writes. */
    turn(&p);
    mt_project_turn_end(&p, 0, 0);
    assert_int_equal(p.last_changed, 0);

    mt_project_dispose(&p);
    mt_memory_free(other);
    mt_test_store_free(&ts);
}

static void test_by_actor(void **state)
{
    (void)state;
    run(1);
}

static void test_history_off(void **state)
{
    (void)state;
    run(0);
}

/* memtool's own entry goes after the last line, whatever the log ends with. */
static void test_append_entry(void **state)
{
    mt_test_store ts;
    size_t len;
    char *log;
    (void)state;

    mt_test_store_init(&ts, NULL);
    ok(ts.mem, "{\"command\":\"create\",\"path\":\"" MT_PROJECT_PROGRESS
               "\",\"file_text\":\"# Progress\\n\\n## earlier\\n- no newline at the end\"}");
    assert_int_equal(mt_project_append_entry(ts.mem, "Ctrl-C", "the task"), 0);
    log = mt_test_read(&ts, "project/progress.md", &len);
    assert_non_null(log);
    assert_non_null(strstr(log, "- no newline at the end\n\n## "));
    assert_non_null(strstr(log, "- session ended: Ctrl-C; Claude wrote no entry"));
    assert_non_null(strstr(log, "- task: the task\n"));
    free(log);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_by_actor),
        cmocka_unit_test(test_history_off),
        cmocka_unit_test(test_append_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
