/*
 * Store URLs: which store each form names, the errors for the ones that name
 * none, passwords never shown, and the file store's tenants kept apart.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "helpers.h"
#include "factory/store_url.h"

static void parses_to(const char *url, mt_store_kind kind, const char *target)
{
    mt_store_url u;

    assert_int_equal(mt_store_url_parse(&u, url), 0);
    assert_int_equal(u.kind, kind);
    assert_string_equal(u.target, target);
    mt_store_url_dispose(&u);
}

static void refused(const char *url, const char *words)
{
    mt_store_url u;

    assert_int_equal(mt_store_url_parse(&u, url), MT_EINVAL);
    assert_null(u.target);
    if (!strstr(mt_error_last()->message, words))
        fail_msg("'%s': the error '%s' does not say '%s'", url, mt_error_last()->message, words);
}

static void test_forms(void **state)
{
    (void)state;
    parses_to("file:/var/lib/m", MT_STORE_FILE, "/var/lib/m");
    parses_to("file:rel/dir", MT_STORE_FILE, "rel/dir");
    parses_to("file:///var/lib/m", MT_STORE_FILE, "/var/lib/m");
    parses_to("file://localhost/var/lib/m", MT_STORE_FILE, "/var/lib/m");
    parses_to("sqlite:/tmp/m.db", MT_STORE_SQLITE, "/tmp/m.db");
    parses_to("sqlite:m.db", MT_STORE_SQLITE, "m.db");
    parses_to("sqlite:///tmp/m.db", MT_STORE_SQLITE, "/tmp/m.db");
    /* libpq reads a URI whole, and a keyword string after a bare scheme. */
    parses_to("postgresql://u@h:5433/db?sslmode=disable", MT_STORE_PG,
              "postgresql://u@h:5433/db?sslmode=disable");
    parses_to("postgres:///db", MT_STORE_PG, "postgres:///db");
    parses_to("postgresql:host=/run/pg dbname=m", MT_STORE_PG, "host=/run/pg dbname=m");
}

static void test_refusals(void **state)
{
    (void)state;
    refused("", "no store URL");
    refused("/var/lib/m", "--root DIR");
    refused("mysql://h/db", "file:DIR, sqlite:PATH or postgresql://");
    refused("File:/x", "not a store URL");
    refused("file:", "names no path");
    refused("sqlite:", "names no path");
    refused("file://", "has no path");
    refused("file://server/share", "not on host 'server'");
    refused("sqlite://db.example/x.db", "not on host 'db.example'");
    refused("postgresql:", "names no database");
    refused("postgres:", "names no database");
}

static void shown_as(const char *url, const char *shown)
{
    char out[256];

    mt_store_url_display(out, sizeof(out), url);
    assert_string_equal(out, shown);
}

static void test_passwords_never_shown(void **state)
{
    char small[12];
    (void)state;
    shown_as("postgresql://memtool:s3cr3t@db:5432/m", "postgresql://memtool:***@db:5432/m");
    shown_as("postgresql://memtool@db/m", "postgresql://memtool@db/m");
    /* The last @ ends the user part: a password may hold one. */
    shown_as("postgres://u:p@ss@db/m", "postgres://u:***@db/m");
    shown_as("postgresql://u@db/m?password=hunter2&sslmode=require",
             "postgresql://u@db/m?password=***&sslmode=require");
    shown_as("postgresql:host=/run dbname=m password=hunter2 user=u",
             "postgresql:host=/run dbname=m password=*** user=u");
    shown_as("postgresql:password = 'a b\\' c' user=u", "postgresql:password = *** user=u");
    shown_as("postgresql:dbname=m password=", "postgresql:dbname=m password=***");
    /* Not a keyword: a database named after one is shown. */
    shown_as("postgresql:dbname=oldpassword", "postgresql:dbname=oldpassword");
    shown_as("file:/a/password=x", "file:/a/password=x");
    mt_store_url_display(small, sizeof(small), "postgresql://u:pw@h/db");
    assert_string_equal(small, "postgresql:");
}

static void test_tenant_names(void **state)
{
    static const char *bad[] = {"..",       ".",         "a/b",  ".memtool",
                                ".MEMTOOL", ".mt-tmp.x", "a\nb", "%2e%2e"};
    size_t i;
    (void)state;
    assert_int_equal(mt_store_tenant_check(NULL), 0);
    assert_int_equal(mt_store_tenant_check(""), 0);
    assert_int_equal(mt_store_tenant_check("alice"), 0);
    assert_int_equal(mt_store_tenant_check("team-7.eu"), 0);
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(mt_store_tenant_check(bad[i]), MT_EINVAL);
        assert_non_null(strstr(mt_error_last()->message, "is not a tenant name"));
    }
}

static mt_memory *open_as(const char *url, const char *tenant)
{
    mt_options o;
    mt_memory *m = NULL;

    mt_options_init(&o);
    o.durability = MT_DURABILITY_NONE;
    o.tenant = tenant;
    assert_int_equal(mt_memory_open_url(&m, url, &o), 0);
    return m;
}

/* A file store's tenants are stores of their own beneath the reserved
 * directory, which no request path reaches; "default" is the store itself. */
static void test_file_tenants_apart(void **state)
{
    mt_test_store ts;
    char url[400], *data = NULL;
    size_t len;
    mt_memory *a, *b, *dflt;
    mt_usage u;
    (void)state;

    mt_test_store_init(&ts, NULL);
    snprintf(url, sizeof(url), "file:%s", ts.root);
    a = open_as(url, "alice");
    b = open_as(url, "bob");
    dflt = open_as(url, "default");
    mt_test_expect(a, "{\"command\":\"create\",\"path\":\"/memories/a.md\",\"file_text\":\"A\\n\"}",
                   0, "File created successfully at: /memories/a.md");
    mt_test_expect(b, "{\"command\":\"view\",\"path\":\"/memories/a.md\"}", 1,
                   "The path /memories/a.md does not exist. Please provide a valid path.");
    mt_test_expect(b, "{\"command\":\"view\",\"path\":\"/memories\"}", 0,
                   "Here're the files and directories up to 2 levels deep in /memories, "
                   "excluding hidden items and node_modules:\n0B\t/memories");
    mt_test_expect(ts.mem, "{\"command\":\"view\",\"path\":\"/memories\"}", 0,
                   "Here're the files and directories up to 2 levels deep in /memories, "
                   "excluding hidden items and node_modules:\n0B\t/memories");
    mt_test_expect(dflt, "{\"command\":\"create\",\"path\":\"/memories/d.md\",\"file_text\":\"\"}",
                   0, "File created successfully at: /memories/d.md");
    /* The default tenant is the store at the root itself. */
    assert_int_equal(mt_memory_read(&data, &len, ts.mem, "/memories/d.md"), 0);
    assert_int_equal(len, 0);
    free(data);
    assert_int_equal(mt_memory_usage(&u, b), 0);
    assert_int_equal(u.files, 0);
    assert_int_equal(mt_memory_usage(&u, a), 0);
    assert_int_equal(u.files, 1);
    assert_int_equal(u.bytes, 2);
    mt_memory_free(a);
    mt_memory_free(b);
    mt_memory_free(dflt);
    mt_test_store_free(&ts);
}

static void test_read(void **state)
{
    mt_options o;
    mt_test_store ts;
    char *data = NULL;
    size_t len = 0;
    (void)state;

    mt_options_init(&o);
    o.max_file_size = 8;
    mt_test_store_init(&ts, &o);
    mt_test_expect(ts.mem,
                   "{\"command\":\"create\",\"path\":\"/memories/n\",\"file_text\":\"a\\u0000b\"}",
                   0, "File created successfully at: /memories/n");
    assert_int_equal(mt_memory_read(&data, &len, ts.mem, "/memories/n"), 0);
    assert_int_equal(len, 3);
    assert_memory_equal(data, "a\0b", 4);
    free(data);
    assert_int_equal(mt_memory_read(&data, &len, ts.mem, "/memories/none"), MT_ENOTFOUND);
    assert_string_equal(mt_error_last()->message, "/memories/none does not exist");
    assert_null(data);
    assert_int_equal(mt_memory_read(&data, &len, ts.mem, "/memories"), MT_EISDIR);
    assert_int_equal(mt_memory_read(&data, &len, ts.mem, "/memories/../etc/passwd"), MT_EINVAL);
    /* A file put there from outside, over the limit: refused before it is read. */
    {
        char path[400];
        FILE *f;
        snprintf(path, sizeof(path), "%s/big", ts.root);
        assert_non_null(f = fopen(path, "w"));
        fputs("0123456789", f);
        fclose(f);
    }
    assert_int_equal(mt_memory_read(&data, &len, ts.mem, "/memories/big"), MT_ELIMIT);
    assert_non_null(strstr(mt_error_last()->message, "10 bytes, over the 8-byte file-size limit"));
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_forms),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_passwords_never_shown),
        cmocka_unit_test(test_tenant_names),
        cmocka_unit_test(test_file_tenants_apart),
        cmocka_unit_test(test_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
