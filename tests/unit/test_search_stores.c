/*
 * Search on every store that searches (tests/unit/store_openers.h; tests/pg
 * adds PostgreSQL): the SQL stores' catch-up with changes coming between its
 * transactions, a search that shows as many hits as it may although some
 * vanish between the store's answer and the library's, memories bigger
 * than a fixed cap searched whole, each handle to its own max file size, and
 * the best hits cut from many ranked as the whole would rank them (ties at
 * the cut by path, beneath a directory whose matches rank below others').
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helpers.h"
#include "core/memory.h"
#include "search/words.h"
#include "machinery/search_index.h"
#include "store_openers.h"

/* An encrypted store keeps no index (it would hold the words in the clear):
 * it searches by reading every memory, so the tests of an index leave it out. */
static int searches(size_t i)
{
    return strstr(mt_test_stores[i].name, "crypt") == NULL;
}

static int is_sql(size_t i)
{
    return searches(i) && strcmp(mt_test_stores[i].name, "fs") != 0;
}

typedef struct {
    char dir[300];
    mt_memory *mem;
} one_store;

static void options(mt_options *o)
{
    mt_options_init(o);
    o->durability = MT_DURABILITY_NONE;
}

static void open_one(one_store *s, size_t i, const mt_options *o)
{
    const char *tmp = getenv("TMPDIR");

    snprintf(s->dir, sizeof(s->dir), "%s/memtool-search-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    assert_non_null(mkdtemp(s->dir));
    if (mt_test_stores[i].open(&s->mem, s->dir, o) < 0)
        fail_msg("open %s: %s", mt_test_stores[i].name, mt_error_last()->message);
}

/* Another handle on the same store (and tenant). */
static mt_memory *open_again(const one_store *s, size_t i, const mt_options *o)
{
    mt_memory *mem;

    if (mt_test_stores[i].open(&mem, s->dir, o) < 0)
        fail_msg("open %s again: %s", mt_test_stores[i].name, mt_error_last()->message);
    return mem;
}

static void close_one(one_store *s)
{
    char cmd[400];

    mt_memory_free(s->mem);
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dir);
    assert_int_equal(system(cmd), 0);
}

static void put(mt_memory *mem, const char *path, const char *text)
{
    char json[512];

    snprintf(json, sizeof(json), "{\"command\":\"create\",\"path\":\"%s\",\"file_text\":\"%s\"}",
             path, text);
    mt_test_ok(mem, json);
}

static void replace(mt_memory *mem, const char *path, const char *old, const char *new_str)
{
    char json[512];

    snprintf(json, sizeof(json),
             "{\"command\":\"str_replace\",\"path\":\"%s\",\"old_str\":\"%s\",\"new_str\":\"%s\"}",
             path, old, new_str);
    mt_test_ok(mem, json);
}

static void del(mt_memory *mem, const char *path)
{
    char json[512];

    snprintf(json, sizeof(json), "{\"command\":\"delete\",\"path\":\"%s\"}", path);
    mt_test_ok(mem, json);
}

/* ---- the SQL stores' catch-up, changed between its transactions ---------------------- */

#define MEMORIES 200 /* a first search indexes them in 4 transactions (64 each) */

static mt_memory *changer; /* the other handle the hook changes the store through */
static int commits;        /* transactions the search committed so far */
static void (*change)(int commit);

static void between(size_t written, int committed)
{
    (void)written;
    if (committed)
        change(++commits);
}

/* After the first transaction (m000 ... m063 indexed): one of those edited,
 * one deleted, and a memory made where the catch-up has passed already. */
static void change_once(int commit)
{
    if (commit != 1)
        return;
    replace(changer, "/memories/m000.md", "common", "altered");
    del(changer, "/memories/m001.md");
    put(changer, "/memories/a-new.md", "common fresh");
}

/* After every transaction: 70 memories the catch-up indexed (more than one
 * transaction holds) move on to the next round's word. */
static void change_always(int commit)
{
    char path[64], from[16], to[16];

    snprintf(from, sizeof(from), "r%d", commit - 1);
    snprintf(to, sizeof(to), "r%d", commit);
    for (int j = 0; j < 70; j++) {
        snprintf(path, sizeof(path), "/memories/m%03d.md", j);
        replace(changer, path, from, to);
    }
}

/* The store's own answer to query, with the hook changing the store
 * between the catch-up's transactions. */
static char *found_while(one_store *s, size_t i, const mt_options *o, void (*fn)(int),
                         const char *query)
{
    char *got;

    changer = open_again(s, i, o);
    commits = 0;
    change = fn;
    mt_search_index_hook = between;
    got = mt_test_store_found(s->mem->store, query, 1000, o->max_file_size);
    mt_search_index_hook = NULL;
    mt_memory_free(changer);
    changer = NULL;
    return got;
}

static void fill(mt_memory *mem)
{
    char path[64], text[64];

    for (int k = 0; k < MEMORIES; k++) {
        snprintf(path, sizeof(path), "/memories/m%03d.md", k);
        snprintf(text, sizeof(text), "common r0 w%d", k);
        put(mem, path, text);
    }
}

/* The paths m<from> ... m<to - 1>, one a line, after `first` ("" none). */
static char *expected(const char *first, int from, int to)
{
    size_t size = strlen(first) + 16 * (size_t)(to - from) + 2, at;
    char *out = malloc(size);

    assert_non_null(out);
    at = (size_t)snprintf(out, size, "%s", first);
    for (int k = from; k < to; k++)
        at += (size_t)snprintf(out + at, size - at, "m%03d.md\n", k);
    return out;
}

/* On every SQL store, filled: the store's answer to query while fn changes
 * the store between the catch-up's transactions must be `first` and then
 * m<from> ... m<MEMORIES - 1>, each a line; then `then` looks further. */
static void catch_up(void (*fn)(int), const char *query, const char *first, int from,
                     void (*then)(one_store *s, const mt_options *o))
{
    mt_options o;
    size_t i;

    options(&o);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        one_store s;
        char *got, *want;

        if (!is_sql(i))
            continue;
        open_one(&s, i, &o);
        fill(s.mem);
        got = found_while(&s, i, &o, fn, query);
        want = expected(first, from, MEMORIES);
        if (strcmp(got, want) != 0)
            fail_msg("%s found\n%s\nnot\n%s", mt_test_stores[i].name, got, want);
        assert_true(commits > 4); /* the changes did come between transactions */
        free(got);
        free(want);
        then(&s, &o);
        close_one(&s);
    }
}

static void altered_found(one_store *s, const mt_options *o)
{
    char *got = mt_test_store_found(s->mem->store, "altered", 10, o->max_file_size);

    assert_string_equal(got, "m000.md\n");
    free(got);
}

static void ended_soon(one_store *s, const mt_options *o)
{
    (void)s;
    (void)o;
    assert_true(commits < 20);
}

/* A change between two of the catch-up's transactions, to what an earlier
 * one indexed or before where it stands, is in the answer: the answer is
 * the store at one instant, never a mix of before and after. */
static void test_catch_up_changed_meanwhile(void **state)
{
    (void)state;
    catch_up(change_once, "common", "a-new.md\n", 2, altered_found);
}

/* Changes after every transaction, more than one transaction indexes: the
 * search still ends (a pass is made in one transaction at last), and its
 * answer is still the store at one instant: the 70 changed after the first
 * transaction never say r0 again. */
static void test_catch_up_changed_always(void **state)
{
    (void)state;
    catch_up(change_always, "r0", "", 70, ended_soon);
}

/* ---- hits that vanish after the store answered ------------------------------------------- */

static int (*store_search)(mt_store *st, mt_store_hit **out, size_t *count,
                           const mt_search_query *q, const char *path, size_t limit);
static mt_memory *vanisher;
static int to_vanish;

/* The store's answer, then the first to_vanish of its hits changed under
 * the library: deleted, or no longer saying the word. */
static int vanishing_search(mt_store *st, mt_store_hit **out, size_t *count,
                            const mt_search_query *q, const char *path, size_t limit)
{
    int rc = store_search(st, out, count, q, path, limit);
    char request[300];

    for (size_t k = 0; rc == 0 && k < *count && to_vanish > 0; k++, to_vanish--) {
        snprintf(request, sizeof(request), "/memories/%s", (*out)[k].path);
        if (k % 2)
            del(vanisher, request);
        else
            replace(vanisher, request, "needle", "thread");
    }
    return rc;
}

/* 12 memories say needle (h00 ... h11, of one rank: by path); the first 4
 * of the store's answer vanish before the library shows them. */
static void vanish_case(size_t i, size_t limit, int want_from, int want_to)
{
    mt_options o;
    one_store s;
    mt_search_options so = {NULL, limit};
    mt_search_hit *h = NULL;
    size_t n = 0, k;
    char path[64], text[64];

    options(&o);
    open_one(&s, i, &o);
    for (int j = 0; j < 12; j++) {
        snprintf(path, sizeof(path), "/memories/h%02d.md", j);
        snprintf(text, sizeof(text), "needle n%d", j);
        put(s.mem, path, text);
    }
    store_search = s.mem->store->search;
    s.mem->store->search = vanishing_search;
    vanisher = s.mem;
    to_vanish = 4;
    if (mt_memory_search(&h, &n, s.mem, "needle", &so) < 0)
        fail_msg("search on %s: %s", mt_test_stores[i].name, mt_error_last()->message);
    s.mem->store->search = store_search;
    assert_int_equal(to_vanish, 0);
    if (n != (size_t)(want_to - want_from))
        fail_msg("%s: %zu hits for limit %zu, not %d", mt_test_stores[i].name, n, limit,
                 want_to - want_from);
    for (k = 0; k < n; k++) {
        snprintf(path, sizeof(path), "/memories/h%02d.md", want_from + (int)k);
        assert_string_equal(h[k].path, path);
        assert_int_equal(h[k].matches, 1);
    }
    mt_search_hits_free(h, n);
    close_one(&s);
}

/* A search shows min(limit, what matches): the hits left out are made up
 * for by asking the store for more. */
static void test_vanished_hits_replaced(void **state)
{
    size_t i;

    (void)state;
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        if (!searches(i))
            continue;
        vanish_case(i, 5, 4, 9);   /* 8 match still: the best 5 */
        vanish_case(i, 10, 4, 12); /* all 8 that match still */
    }
}

/* ---- memories bigger than a fixed cap ------------------------------------------------------ */

#define MIB (1024 * 1024)

/* A 9 MiB memory, legal under a 12 MiB max file size: its last word is
 * found. A handle with a 1 MiB limit searches its first MiB only (the file
 * is over its limit), and the first handle then finds the whole again. */
static void test_big_memory_searched_whole(void **state)
{
    static const char head[] = "headword ", tail[] = " tailword\n";
    mt_options big, small;
    size_t i, len = 9 * MIB;
    char *text;

    (void)state;
    options(&big);
    big.max_file_size = 12 * MIB;
    big.max_store_size = 64 * MIB;
    options(&small);
    small.max_store_size = 64 * MIB;
    assert_non_null(text = malloc(len));
    memcpy(text, head, sizeof(head) - 1);
    for (size_t k = sizeof(head) - 1; k < len; k++)
        text[k] = "filler "[k % 7];
    memcpy(text + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        one_store s;
        mt_memory *other;
        mt_store_op op;
        char *got;

        open_one(&s, i, &big);
        op = s.mem->op;
        if (s.mem->store->create(s.mem->store, &op, "big.md", text, len) < 0)
            fail_msg("create on %s: %s", mt_test_stores[i].name, mt_error_last()->message);
        got = mt_test_store_found(s.mem->store, "tailword", 10, big.max_file_size);
        if (strcmp(got, "big.md\n") != 0)
            fail_msg("%s found %s for the last word", mt_test_stores[i].name, got);
        free(got);
        {
            mt_search_options so = {NULL, 10};
            mt_search_hit *h;
            size_t n;

            assert_int_equal(mt_memory_search(&h, &n, s.mem, "tailword", &so), 0);
            assert_int_equal(n, 1);
            assert_string_equal(h[0].path, "/memories/big.md");
            assert_non_null(h[0].match);
            mt_search_hits_free(h, n);
        }
        other = open_again(&s, i, &small);
        got = mt_test_store_found(other->store, "tailword", 10, small.max_file_size);
        assert_string_equal(got, "-");
        free(got);
        got = mt_test_store_found(other->store, "headword", 10, small.max_file_size);
        assert_string_equal(got, "big.md\n");
        free(got);
        mt_memory_free(other);
        got = mt_test_store_found(s.mem->store, "tailword", 10, big.max_file_size);
        assert_string_equal(got, "big.md\n");
        free(got);
        close_one(&s);
    }
    free(text);
}

/* ---- the best hits of many: ties at the cut, beneath a directory ----------------------- */

/* What the store itself answers beneath path, in its order (best first). */
static char *found_in_order(mt_store *st, const char *query, const char *path, size_t limit)
{
    mt_search_query *q = NULL;
    mt_store_hit *hits = NULL;
    size_t n = 0, i, len = 2;
    char *out;

    assert_int_equal(mt_search_query_parse(&q, query, strlen(query)), 0);
    if (st->search(st, &hits, &n, q, path, limit) < 0)
        fail_msg("search %s: %s", query, mt_error_last()->message);
    mt_search_query_free(q);
    for (i = 0; i < n; i++)
        len += strlen(hits[i].path) + 1;
    assert_non_null(out = calloc(1, len));
    for (i = 0, len = 0; i < n; i++) {
        size_t k = strlen(hits[i].path);

        memcpy(out + len, hits[i].path, k);
        out[len + k] = '\n';
        len += k + 1;
    }
    mt_store_hits_free(hits, n);
    return out;
}

static void test_best_of_many(void **state)
{
    mt_options o;
    size_t i;

    (void)state;
    options(&o);
    for (i = 0; i < MT_TEST_NSTORES; i++) {
        one_store s;
        mt_store *st;
        char path[64], *got;
        int k;

        if (!searches(i))
            continue;
        open_one(&s, i, &o);
        st = s.mem->store;
#define IN_ORDER(query, beneath, limit, want)                                                      \
    do {                                                                                           \
        got = found_in_order(st, query, beneath, limit);                                           \
        if (strcmp(got, want) != 0)                                                                \
            fail_msg("%s found for %s beneath '%s':\n%s\nnot\n%s", mt_test_stores[i].name, query,  \
                     beneath, got, want);                                                          \
        free(got);                                                                                 \
    } while (0)
        /* Twelve memories alike: every score the same, the cut by path.
         * The first six by path indexed last, so the index holds them in
         * another order than their paths'. */
        for (k = 0; k < 12; k++) {
            snprintf(path, sizeof(path), "/memories/tie/t%02d.md", k);
            put(s.mem, path, "the tie word");
        }
        IN_ORDER("tie", "", 20,
                 "tie/t00.md\ntie/t01.md\ntie/t02.md\ntie/t03.md\ntie/t04.md\ntie/t05.md\n"
                 "tie/t06.md\ntie/t07.md\ntie/t08.md\ntie/t09.md\ntie/t10.md\ntie/t11.md\n");
        for (k = 0; k < 6; k++) {
            snprintf(path, sizeof(path), "/memories/tie/t%02d.md", k);
            del(s.mem, path);
        }
        IN_ORDER("tie", "", 20,
                 "tie/t06.md\ntie/t07.md\ntie/t08.md\ntie/t09.md\ntie/t10.md\ntie/t11.md\n");
        for (k = 0; k < 6; k++) {
            snprintf(path, sizeof(path), "/memories/tie/t%02d.md", k);
            put(s.mem, path, "the tie word");
        }
        /* Five mentions rank above one, whichever directory holds them. */
        for (k = 0; k < 4; k++) {
            snprintf(path, sizeof(path), "/memories/strong/s%d.md", k);
            put(s.mem, path, "beam beam beam beam beam");
            snprintf(path, sizeof(path), "/memories/weak/w%d.md", k);
            put(s.mem, path, "one beam among other words");
        }
        IN_ORDER("tie", "", 5, "tie/t00.md\ntie/t01.md\ntie/t02.md\ntie/t03.md\ntie/t04.md\n");
        IN_ORDER("tie", "", 1, "tie/t00.md\n");
        IN_ORDER("tie", "tie", 11,
                 "tie/t00.md\ntie/t01.md\ntie/t02.md\ntie/t03.md\ntie/t04.md\ntie/t05.md\n"
                 "tie/t06.md\ntie/t07.md\ntie/t08.md\ntie/t09.md\ntie/t10.md\n");
        IN_ORDER("beam", "", 5,
                 "strong/s0.md\nstrong/s1.md\nstrong/s2.md\nstrong/s3.md\nweak/w0.md\n");
        IN_ORDER("beam", "", 8,
                 "strong/s0.md\nstrong/s1.md\nstrong/s2.md\nstrong/s3.md\nweak/w0.md\nweak/w1.md\n"
                 "weak/w2.md\nweak/w3.md\n");
        IN_ORDER("beam", "", 20,
                 "strong/s0.md\nstrong/s1.md\nstrong/s2.md\nstrong/s3.md\nweak/w0.md\nweak/w1.md\n"
                 "weak/w2.md\nweak/w3.md\n");
        IN_ORDER("beam", "weak", 2, "weak/w0.md\nweak/w1.md\n");
        IN_ORDER("beam", "strong", 2, "strong/s0.md\nstrong/s1.md\n");
        /* One strictly best: its cut needs no tie broken. */
        put(s.mem, "/memories/weak/w9.md", "beam beam beam beam beam beam beam");
        IN_ORDER("beam", "", 2, "weak/w9.md\nstrong/s0.md\n");
        IN_ORDER("beam", "weak", 2, "weak/w9.md\nweak/w0.md\n");
        IN_ORDER("beam", "", 5,
                 "weak/w9.md\nstrong/s0.md\nstrong/s1.md\nstrong/s2.md\nstrong/s3.md\n");
#undef IN_ORDER
        close_one(&s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_catch_up_changed_meanwhile),
        cmocka_unit_test(test_catch_up_changed_always),
        cmocka_unit_test(test_vanished_hits_replaced),
        cmocka_unit_test(test_big_memory_searched_whole),
        cmocka_unit_test(test_best_of_many),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
