/* The secrets scanner (src/guard/secrets.c) and the write policy (src/core/secrets_check.c). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>
#include <semaphore.h>

#include <jansson.h>

#include "guard/secrets.h"
#include "helpers.h"

/* A sanitizer's allocator holds freed blocks back instead of reusing them. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MT_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MT_TEST_SANITIZED 1
#endif
#endif
#ifndef MT_TEST_SANITIZED
#define MT_TEST_SANITIZED 0
#endif

#ifndef MT_SECRETS_DATA
#error "MT_SECRETS_DATA names tests/unit/data/secrets"
#endif

/* A fixed generator: the same tokens every run, none of them real. */
static uint64_t rng = 0x9e3779b97f4a7c15u;

static unsigned next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

static void fill(char *out, size_t n, const char *alphabet)
{
    size_t k = strlen(alphabet), i;

    for (i = 0; i < n; i++)
        out[i] = alphabet[next_rand() % k];
    out[n] = '\0';
}

#define ALNUM  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#define B64    ALNUM "+/"
#define B64URL ALNUM "_-"
#define BASE32 "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

/* One detector's example: `core` is the text as it is pasted, `secret` the
 * part a hit must cover (what redact replaces). */
typedef struct {
    const char *kind;
    char core[1024];
    char secret[1024];
} example;

static void set(example *e, const char *kind, const char *core, const char *secret)
{
    e->kind = kind;
    snprintf(e->core, sizeof(e->core), "%s", core);
    snprintf(e->secret, sizeof(e->secret), "%s", secret ? secret : core);
}

/* Every detector, in the formats their issuers document. */
static size_t examples(example *ex)
{
    char a[128], b[256], c[128], t[900];
    size_t n = 0;

    fill(a, 93, B64URL);
    snprintf(t, sizeof(t), "sk-ant-api03-%sAA", a);
    set(&ex[n++], "anthropic-api-key", t, NULL);
    fill(a, 74, B64URL);
    fill(b, 74, B64URL);
    snprintf(t, sizeof(t), "sk-proj-%sT3BlbkFJ%s", a, b);
    set(&ex[n++], "openai-api-key", t, NULL);
    fill(a, 20, ALNUM);
    fill(b, 20, ALNUM);
    snprintf(t, sizeof(t), "sk-%sT3BlbkFJ%s", a, b);
    set(&ex[n++], "openai-api-key", t, NULL);
    fill(a, 16, BASE32);
    snprintf(t, sizeof(t), "AKIA%s", a);
    set(&ex[n++], "aws-access-key-id", t, NULL);
    fill(a, 16, BASE32);
    snprintf(t, sizeof(t), "ASIA%s", a);
    set(&ex[n++], "aws-access-key-id", t, NULL);
    fill(a, 40, B64);
    snprintf(t, sizeof(t), "aws_secret_access_key = %s", a);
    set(&ex[n++], "aws-secret-access-key", t, a);
    fill(a, 36, ALNUM);
    snprintf(t, sizeof(t), "ghp_%s", a);
    set(&ex[n++], "github-token", t, NULL);
    fill(a, 36, ALNUM);
    snprintf(t, sizeof(t), "ghs_%s", a);
    set(&ex[n++], "github-token", t, NULL);
    fill(a, 22, ALNUM);
    fill(b, 59, ALNUM);
    snprintf(t, sizeof(t), "github_pat_%s_%s", a, b);
    set(&ex[n++], "github-fine-grained-token", t, NULL);
    fill(a, 20, B64URL);
    snprintf(t, sizeof(t), "glpat-%s", a);
    set(&ex[n++], "gitlab-token", t, NULL);
    fill(a, 24, ALNUM);
    snprintf(t, sizeof(t), "xoxb-2345678901-3456789012345-%s", a);
    set(&ex[n++], "slack-token", t, NULL);
    fill(a, 64, "0123456789abcdef");
    snprintf(t, sizeof(t), "xapp-1-A0123BCDE45-6789012345678-%s", a);
    set(&ex[n++], "slack-token", t, NULL);
    fill(a, 8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
    fill(b, 8, "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789");
    fill(c, 24, ALNUM);
    snprintf(t, sizeof(t), "hooks.slack.com/services/T%s/B%s/%s", a, b, c);
    {
        char url[1000];
        snprintf(url, sizeof(url), "https://%s", t);
        set(&ex[n++], "slack-webhook", url, t);
    }
    fill(a, 24, ALNUM);
    snprintf(t, sizeof(t), "sk_live_%s", a);
    set(&ex[n++], "stripe-key", t, NULL);
    fill(a, 24, ALNUM);
    snprintf(t, sizeof(t), "rk_test_%s", a);
    set(&ex[n++], "stripe-key", t, NULL);
    fill(a, 32, ALNUM);
    snprintf(t, sizeof(t), "whsec_%s", a);
    set(&ex[n++], "stripe-key", t, NULL);
    fill(a, 35, B64URL);
    snprintf(t, sizeof(t), "AIza%s", a);
    set(&ex[n++], "google-api-key", t, NULL);
    fill(a, 86, B64);
    snprintf(b, sizeof(b), "%s==", a);
    snprintf(t, sizeof(t),
             "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=%s;EndpointSuffix=core."
             "windows.net",
             b);
    set(&ex[n++], "azure-storage-key", t, b);
    fill(a, 36, ALNUM);
    snprintf(t, sizeof(t), "npm_%s", a);
    set(&ex[n++], "npm-token", t, NULL);
    fill(a, 64, B64);
    fill(b, 64, B64);
    fill(c, 20, B64);
    snprintf(t, sizeof(t),
             "-----BEGIN RSA PRIVATE KEY-----\n%s\n%s\n%s==\n-----END RSA PRIVATE KEY-----", a, b,
             c);
    set(&ex[n++], "private-key", t, NULL);
    fill(a, 70, B64);
    fill(b, 70, B64);
    snprintf(t, sizeof(t),
             "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n%s\n-----END OPENSSH PRIVATE KEY-----", a,
             b);
    set(&ex[n++], "private-key", t, NULL);
    fill(a, 43, B64URL);
    snprintf(t, sizeof(t),
             "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwiaWF0IjoxNTE2MjM5MDIy"
             "fQ.%s",
             a);
    set(&ex[n++], "jwt", t, NULL);
    fill(a, 16, ALNUM "!#%&*");
    snprintf(t, sizeof(t), "postgres://app:%s@db.internal:5432/app", a);
    set(&ex[n++], "url-password", t, a);
    fill(a, 14, ALNUM);
    snprintf(t, sizeof(t), "mongodb+srv://svc:%s@cluster0.abcd.mongodb.net", a);
    set(&ex[n++], "url-password", t, a);
    fill(a, 14, ALNUM "!#%&*");
    snprintf(t, sizeof(t), "password=%s", a);
    set(&ex[n++], "generic-secret", t, a);
    fill(a, 32, ALNUM);
    snprintf(t, sizeof(t), "client_secret: %s", a);
    set(&ex[n++], "generic-secret", t, a);
    fill(a, 24, ALNUM "-");
    snprintf(t, sizeof(t), "api_key := %s", a);
    set(&ex[n++], "generic-secret", t, a);
    set(&ex[n++], "card-number", "4111 1111 1111 1111", NULL);
    set(&ex[n++], "card-number", "5500-0000-0000-0004", NULL);
    set(&ex[n++], "card-number", "378282246310005", NULL);
    set(&ex[n++], "card-number", "6011111111111117", NULL);
    return n;
}

#define EXAMPLES_MAX 40

static size_t scan(mt_secret_hit *hits, size_t max, const char *data, size_t len,
                   const mt_secrets_cfg *cfg)
{
    size_t count = 0;

    assert_int_equal(mt_secrets_scan(hits, max, &count, data, len, cfg), 0);
    return count;
}

/* The text holds the example's secret exactly once, as a hit of its kind. */
static void expect_hit(const char *text, size_t len, const example *e, const char *form)
{
    mt_secret_hit hits[8];
    size_t n = scan(hits, 8, text, len, NULL), i, found = 0;

    for (i = 0; i < n && i < 8; i++)
        if (strcmp(hits[i].kind, e->kind) == 0 && hits[i].length == strlen(e->secret) &&
            memcmp(text + hits[i].offset, e->secret, hits[i].length) == 0)
            found++;
    if (found != 1 || n != 1)
        fail_msg("%s, %s: %zu hits, %zu of them the secret; text: %s", e->kind, form, n, found,
                 text);
}

static void test_detectors_in_every_form(void **state)
{
    example ex[EXAMPLES_MAX];
    size_t n = examples(ex), i;
    char text[4096];

    (void)state;
    assert_true(n <= EXAMPLES_MAX);
    for (i = 0; i < n; i++) {
        char *json;
        json_t *s = json_string(ex[i].core);

        snprintf(text, sizeof(text), "%s", ex[i].core);
        expect_hit(text, strlen(text), &ex[i], "alone");
        snprintf(text, sizeof(text), "note: use %s for the deploy\n", ex[i].core);
        expect_hit(text, strlen(text), &ex[i], "inline");
        snprintf(text, sizeof(text), "cfg = \"%s\"\nother = 'x'\n", ex[i].core);
        expect_hit(text, strlen(text), &ex[i], "double quoted");
        snprintf(text, sizeof(text), "cfg = '%s'\n", ex[i].core);
        expect_hit(text, strlen(text), &ex[i], "single quoted");
        snprintf(text, sizeof(text), "VALUE=%s\nDEBUG=1\n", ex[i].core);
        expect_hit(text, strlen(text), &ex[i], ".env");
        /* In JSON the core is escaped (a key block's newlines become \n):
         * the hit is then the escaped text. */
        json = json_dumps(s, JSON_ENCODE_ANY);
        snprintf(text, sizeof(text), "{\"name\": \"deploy\", \"value\": %s}\n", json);
        if (!strchr(ex[i].core, '\n')) {
            expect_hit(text, strlen(text), &ex[i], "JSON");
        } else {
            mt_secret_hit h[4];
            size_t k = scan(h, 4, text, strlen(text), NULL);
            assert_int_equal(k, 1);
            assert_string_equal(h[0].kind, ex[i].kind);
            /* The whole escaped block, from its header to its END line. */
            assert_int_equal(h[0].offset, strstr(text, "-----BEGIN") - text);
            assert_true(strstr(text + h[0].offset, "PRIVATE KEY-----\"") ==
                        text + h[0].offset + h[0].length - strlen("PRIVATE KEY-----"));
        }
        free(json);
        json_decref(s);
    }
}

/* Hits are where the secret is, at the very start and end of the buffer too,
 * with NUL bytes and invalid UTF-8 around. */
static void test_offsets_lines_and_bytes(void **state)
{
    example ex[EXAMPLES_MAX];
    mt_secret_hit h[4];
    char text[4096];
    size_t n, len, k;

    (void)state;
    n = examples(ex);
    for (k = 0; k < n; k++) {
        size_t sl = strlen(ex[k].secret), cl = strlen(ex[k].core);
        /* At the start, with nothing after. */
        memcpy(text, ex[k].core, cl);
        assert_int_equal(scan(h, 4, text, cl, NULL), 1);
        assert_int_equal(h[0].line, 1);
        assert_int_equal(h[0].offset + h[0].length, strstr(text, ex[k].secret) - text + sl);
        /* After NULs, invalid UTF-8 and two lines; NULs after it. */
        memcpy(text, "\0\xff\xfe\n\x80z\n", 7);
        memcpy(text + 7, ex[k].core, cl);
        memcpy(text + 7 + cl, "\0\0\xc3", 3);
        len = 7 + cl + 3;
        assert_int_equal(scan(h, 4, text, len, NULL), 1);
        assert_string_equal(h[0].kind, ex[k].kind);
        assert_int_equal(h[0].line, 3);
        assert_memory_equal(text + h[0].offset, ex[k].secret, sl);
        /* At each place in a run of eight bytes (the scan looks at eight
         * at once) and with 0 to 8 bytes after it. */
        for (len = 0; len < 17; len++) {
            size_t at = (size_t)(strstr(ex[k].core, ex[k].secret) - ex[k].core);
            memset(text, ' ', len);
            memcpy(text + len, ex[k].core, cl);
            memset(text + len + cl, ' ', len % 9);
            assert_int_equal(scan(h, 4, text, len + cl + len % 9, NULL), 1);
            assert_string_equal(h[0].kind, ex[k].kind);
            assert_int_equal(h[0].offset, len + at);
            assert_int_equal(h[0].length, sl);
        }
    }
    /* Cut short, a token is no token. */
    assert_int_equal(scan(h, 4, "ghp_abcDEF123", 13, NULL), 0);
    assert_int_equal(scan(h, 4, "AKIA", 4, NULL), 0);
    assert_int_equal(scan(h, 4, "", 0, NULL), 0);
    assert_int_equal(scan(h, 4, NULL, 0, NULL), 0);
}

static void test_boundaries(void **state)
{
    mt_secret_hit h[4];
    char t[256], a[64];

    (void)state;
    fill(a, 36, ALNUM);
    /* Inside a longer token of the same alphabet, it is not that token. */
    snprintf(t, sizeof(t), "xghp_%s", a);
    assert_int_equal(scan(h, 4, t, strlen(t), NULL), 0);
    snprintf(t, sizeof(t), "ghp_%s_name", a);
    assert_int_equal(scan(h, 4, t, strlen(t), NULL), 0);
    assert_int_equal(scan(h, 4, "XAKIAABCDEFGHIJKLMNOP", 21, NULL), 0);
    /* A card number inside a longer digit run, a decimal or a word is none. */
    assert_int_equal(scan(h, 4, "14111111111111111", 17, NULL), 0);
    assert_int_equal(scan(h, 4, "0.4111111111111111", 18, NULL), 0);
    assert_int_equal(scan(h, 4, "id4111111111111111", 18, NULL), 0);
    assert_int_equal(scan(h, 4, "4111111111111111.5", 18, NULL), 0);
    assert_int_equal(scan(h, 4, "(4111111111111111)", 18, NULL), 1);
}

static void test_luhn_and_issuers(void **state)
{
    mt_secret_hit h[4];

    (void)state;
    assert_true(mt_secrets_luhn("4111111111111111", 16));
    assert_true(mt_secrets_luhn("4111 1111 1111 1111", 19));
    assert_true(mt_secrets_luhn("79927398713", 11));
    assert_false(mt_secrets_luhn("4111111111111112", 16));
    assert_false(mt_secrets_luhn("79927398710", 11));
    assert_false(mt_secrets_luhn("", 0));
    /* Luhn-valid, but no issuer starts so, or the length is not theirs. */
    assert_int_equal(scan(h, 4, "1234567812345670", 16, NULL), 0);
    assert_int_equal(scan(h, 4, "4111111111111111 ", 17, NULL), 1);
    assert_int_equal(scan(h, 4, "41111111111111111", 17, NULL), 0); /* Visa has no 17 */
    /* Off by one digit: Luhn fails. */
    assert_int_equal(scan(h, 4, "4111 1111 1111 1112", 19, NULL), 0);
    /* Mixed separators are not one number. */
    assert_int_equal(scan(h, 4, "4111 1111-1111 1111", 19, NULL), 0);
    /* All one digit: Luhn-valid filler. */
    assert_int_equal(scan(h, 4, "5555555555555555", 16, NULL), 0);
}

static void test_entropy(void **state)
{
    mt_secret_hit h[4];
    char t[128];

    (void)state;
    assert_true(mt_secrets_entropy("aaaa", 4) == 0.0);
    assert_true(mt_secrets_entropy("abcdefgh", 8) == 3.0);
    assert_true(mt_secrets_entropy("", 0) == 0.0);
    /* Placeholders of the right shape: too regular to be keys. */
    assert_int_equal(scan(h, 4, "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 40, NULL), 0);
    assert_int_equal(scan(h, 4, "sk_test_000000000000000000000000", 32, NULL), 0);
    /* AWS's documented examples. */
    assert_int_equal(scan(h, 4, "AKIAIOSFODNN7EXAMPLE", 20, NULL), 0);
    /* generic values: 8 distinct characters is exactly 3 bits each, the threshold. */
    assert_int_equal(scan(h, 4, "password=ab12cd34", 17, NULL), 1);
    assert_int_equal(scan(h, 4, "password=aa12aa12", 17, NULL), 0);
    /* ... and a value must look random: not letters alone, digits alone, a
     * reference or a template. */
    assert_int_equal(scan(h, 4, "password=correcthorse", 21, NULL), 0);
    assert_int_equal(scan(h, 4, "password=8273649150", 19, NULL), 0);
    assert_int_equal(scan(h, 4, "password=$DB_PASSWORD", 21, NULL), 0);
    assert_int_equal(scan(h, 4, "password=${DB_PASSWORD}", 23, NULL), 0);
    assert_int_equal(scan(h, 4, "password = settings.DB_PASSWORD", 31, NULL), 0);
    /* The AWS secret near an access key id: base64 is random enough, a
     * 40-digit hex SHA is not (at most 4 bits a character). */
    fill(t, 40, "0123456789abcdef");
    {
        char text[256];
        snprintf(text, sizeof(text), "AKIAQWB5PDKHX6PYGPAN\n%s\n", t);
        assert_int_equal(scan(h, 4, text, strlen(text), NULL), 1);
        fill(t, 40, B64);
        snprintf(text, sizeof(text), "AKIAQWB5PDKHX6PYGPAN\n%s\n", t);
        assert_int_equal(scan(h, 4, text, strlen(text), NULL), 2);
        assert_string_equal(h[1].kind, "aws-secret-access-key");
        assert_int_equal(h[1].line, 2);
        /* ... and only near a key id: not near a word that holds "asia". */
        snprintf(text, sizeof(text), "Trip to Asia, Malaysia: booking %s\n", t);
        assert_int_equal(scan(h, 4, text, strlen(text), NULL), 0);
        snprintf(text, sizeof(text), "asiaQWB5PDKHX6PYGPAN\n%s\n", t);
        assert_int_equal(scan(h, 4, text, strlen(text), NULL), 0);
    }
}

static void test_allow_list(void **state)
{
    const char *good[] = {"^4111( ?1111){3}$", "EXAMPLETOKEN"};
    const char *bad[] = {"fine", "([unclosed"};
    mt_secrets_allow *allow = NULL;
    mt_secrets_cfg cfg = {NULL};
    mt_secret_hit h[4];
    const char *text = "4111 1111 1111 1111 and 5500 0000 0000 0004";

    (void)state;
    assert_int_equal(mt_secrets_allow_compile(&allow, good, 2), 0);
    cfg.allow = allow;
    assert_int_equal(scan(h, 4, text, strlen(text), NULL), 2);
    assert_int_equal(scan(h, 4, text, strlen(text), &cfg), 1);
    assert_memory_equal(text + h[0].offset, "5500", 4);
    mt_secrets_allow_free(allow);
    assert_int_equal(mt_secrets_allow_compile(&allow, bad, 2), MT_EINVAL);
    assert_null(allow);
    assert_non_null(strstr(mt_error_last()->message, "'([unclosed'"));
    assert_int_equal(mt_secrets_allow_compile(&allow, NULL, 0), 0);
    assert_null(allow);
}

/* More hits than room: the count says so; a second scan gets them all, in order. */
static void test_many_hits(void **state)
{
    mt_secret_hit h[2], *all;
    char *text = malloc(100 * 32);
    size_t len = 0, n, i;

    (void)state;
    for (i = 0; i < 100; i++)
        len += (size_t)snprintf(text + len, 32, "card 4111111111111111\n");
    n = scan(h, 2, text, len, NULL);
    assert_int_equal(n, 100);
    all = malloc(n * sizeof(*all));
    assert_int_equal(scan(all, n, text, len, NULL), 100);
    for (i = 0; i < n; i++) {
        assert_int_equal(all[i].line, i + 1);
        assert_int_equal(all[i].offset, i * 22 + 5);
    }
    free(all);
    free(text);
}

static char *slurp(const char *name, size_t *len)
{
    char path[1024];
    FILE *f;
    char *buf;
    long n;

    snprintf(path, sizeof(path), "%s/%s", MT_SECRETS_DATA, name);
    assert_non_null(f = fopen(path, "rb"));
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    rewind(f);
    buf = malloc((size_t)n + 1);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

/* Ordinary memory text: nothing fires, on any line alone or on the whole. */
static void test_false_positive_corpus(void **state)
{
    mt_secret_hit h[4];
    size_t len, lines = 0, start = 0, i;
    char *text = slurp("corpus.txt", &len);

    (void)state;
    for (i = 0; i <= len; i++) {
        if (i < len && text[i] != '\n')
            continue;
        if (i > start) {
            size_t n = scan(h, 4, text + start, i - start, NULL);
            if (n)
                fail_msg("corpus line %zu: %s fires on '%.*s'", lines + 1, h[0].kind,
                         (int)h[0].length, text + start + h[0].offset);
        }
        lines += i < len;
        start = i + 1;
    }
    assert_true(lines >= 2000);
    if (scan(h, 4, text, len, NULL))
        fail_msg("the whole corpus: %s fires on line %zu", h[0].kind, h[0].line);
    free(text);
}

/* 1 MiB of ordinary text, 1 MiB built to be slow (keywords everywhere) and
 * 1 MiB of one digit: each ends, with nothing found (bench/secrets.sh times
 * them). */
static void test_one_mebibyte(void **state)
{
    mt_secret_hit h[4];
    size_t len, n = 1 << 20, i;
    char *corpus = slurp("corpus.txt", &len), *big = malloc(n);

    (void)state;
    for (i = 0; i < n; i++)
        big[i] = corpus[i % len];
    assert_int_equal(scan(h, 4, big, n, NULL), 0);
    for (i = 0; i < n; i++)
        big[i] = "sk-AKIApassword=://eyJ-----BEGIN 4111 "[i % 38];
    /* Every keyword, no value long or random enough to be a secret. */
    assert_int_equal(scan(h, 4, big, n, NULL), 0);
    memset(big, '4', n);
    assert_int_equal(scan(h, 4, big, n, NULL), 0);
    free(big);
    free(corpus);
}

/* The corpus is what its generator makes. */
static void test_corpus_is_generated(void **state)
{
    char cmd[2048];

    (void)state;
    snprintf(cmd, sizeof(cmd), "python3 %s/make_corpus.py | cmp -s - %s/corpus.txt",
             MT_SECRETS_DATA, MT_SECRETS_DATA);
    assert_int_equal(system(cmd), 0);
}

/* --- the write policy, through the library -------------------------------- */

static mt_memory *open_handle(const char *root, mt_secrets_policy policy)
{
    mt_options o;
    mt_memory *m = NULL;

    mt_options_init(&o);
    o.secrets = policy;
    o.durability = MT_DURABILITY_NONE;
    assert_int_equal(mt_memory_open(&m, root, &o), 0);
    return m;
}

static char *call_json(mt_memory *m, int *err, json_t *j)
{
    char *s = json_dumps(j, 0), *res = mt_test_call(m, err, s);

    free(s);
    json_decref(j);
    return res;
}

/* For every detector: a str_replace whose old_str and new_str each hold only
 * part of the secret is refused (the file it would leave holds it), and
 * nothing changes, no version either; under redact the file holds the marker
 * where the secret would be. */
static void test_split_by_the_edit(void **state)
{
    example ex[EXAMPLES_MAX];
    mt_test_store ts;
    mt_memory *rej, *red;
    size_t n = examples(ex), i;

    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_memory_free(ts.mem);
    ts.mem = open_handle(ts.root, MT_SECRETS_OFF);
    rej = open_handle(ts.root, MT_SECRETS_REJECT);
    red = open_handle(ts.root, MT_SECRETS_REDACT);
    for (i = 0; i < n; i++) {
        const char *s = strstr(ex[i].core, ex[i].secret);
        size_t at = (size_t)(s - ex[i].core), sl = strlen(ex[i].secret);
        size_t cut = at + sl / 2, len, k, versions;
        char head[1100], path[64], want[2400], marker[MT_SECRETS_MARKER_MAX], *res, *got;
        mt_version *v;
        int err, o;

        snprintf(head, sizeof(head), "note: %.*s|CUT|\n", (int)cut, ex[i].core);
        snprintf(path, sizeof(path), "/memories/split%zu.md", i);
        free(call_json(
            ts.mem, &err,
            json_pack("{s:s, s:s, s:s}", "command", "create", "path", path, "file_text", head)));
        assert_false(err);
        assert_int_equal(mt_memory_log(&v, &versions, ts.mem, NULL), 0);
        mt_versions_free(v, versions);

        res = call_json(rej, &err,
                        json_pack("{s:s, s:s, s:s, s:s}", "command", "str_replace", "path", path,
                                  "old_str", "|CUT|", "new_str", ex[i].core + cut));
        snprintf(want, sizeof(want),
                 "Error: %s would contain a secret (%s, line 1); memory must not hold "
                 "credentials. Remove it and retry, or run memtool with --secrets redact to store "
                 "it redacted, or --secrets-allow REGEX for what is no secret.",
                 path, ex[i].kind);
        if (!err || strcmp(res, want) != 0)
            fail_msg("%s split at %zu: %s", ex[i].kind, cut, res);
        assert_null(strstr(res, ex[i].secret + sl / 2));
        free(res);
        got = mt_test_read(&ts, path + 10, &len);
        assert_int_equal(len, strlen(head));
        assert_memory_equal(got, head, len);
        free(got);
        assert_int_equal(mt_memory_log(&v, &k, ts.mem, NULL), 0);
        mt_versions_free(v, k);
        assert_int_equal(k, versions);

        res = call_json(red, &err,
                        json_pack("{s:s, s:s, s:s, s:s}", "command", "str_replace", "path", path,
                                  "old_str", "|CUT|", "new_str", ex[i].core + cut));
        assert_false(err);
        assert_non_null(strstr(res, "(1 secret redacted: "));
        assert_null(strstr(res, ex[i].secret + sl / 2));
        free(res);
        o = snprintf(want, sizeof(want), "note: %.*s%.*s", (int)at, ex[i].core,
                     (int)mt_secrets_marker(marker, ex[i].kind), marker);
        for (k = 0; k < sl; k++)
            if (ex[i].secret[k] == '\n')
                want[o++] = '\n';
        snprintf(want + o, sizeof(want) - (size_t)o, "%s\n", s + sl);
        got = mt_test_read(&ts, path + 10, &len);
        assert_int_equal(len, strlen(want));
        assert_memory_equal(got, want, len);
        free(got);
    }
    mt_memory_free(rej);
    mt_memory_free(red);
    mt_test_store_free(&ts);
}

/* A secret redacted above an edit moves the bytes of the lines the snippet
 * shows, not their numbers: the snippet shows the redacted file's lines. */
static void test_snippet_after_redaction(void **state)
{
    example ex[EXAMPLES_MAX];
    mt_test_store ts;
    mt_memory *red;
    size_t n = examples(ex), i;
    char file[2048], want[4096], *res;
    mt_secret_hit h[4];
    int err, checked = 0;

    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_memory_free(ts.mem);
    ts.mem = open_handle(ts.root, MT_SECRETS_OFF);
    red = open_handle(ts.root, MT_SECRETS_REDACT);
    for (i = 0; i < n; i++) {
        if (strchr(ex[i].core, '\n'))
            continue;
        snprintf(file, sizeof(file), "l1\n%s\nl3\nl4 %s\nl5\nl6\nl7\nl8\nEDIT\nl10\n", ex[i].core,
                 ex[i].core);
        /* Some examples are secrets only in some places (a password
         * starting with %: a template): those two places must both hold one. */
        if (scan(h, 4, file, strlen(file), NULL) != 2)
            continue;
        free(call_json(ts.mem, &err,
                       json_pack("{s:s, s:s, s:s}", "command", "create", "path", "/memories/r.md",
                                 "file_text", file)));
        assert_false(err);
        res = call_json(red, &err,
                        json_pack("{s:s, s:s, s:s, s:s}", "command", "str_replace", "path",
                                  "/memories/r.md", "old_str", "EDIT", "new_str", "DONE"));
        assert_false(err);
        snprintf(want, sizeof(want),
                 "The memory file has been edited (2 secrets redacted: %s on line 2, %s on line "
                 "4). Here is the snippet showing the change (with line numbers):\n     5\tl5\n"
                 "     6\tl6\n     7\tl7\n     8\tl8\n     9\tDONE\n    10\tl10",
                 ex[i].kind, ex[i].kind);
        if (strcmp(res, want) != 0)
            fail_msg("%s in %s:\ngot  %s\nwant %s", ex[i].kind, file, res, want);
        free(res);
        free(call_json(ts.mem, &err,
                       json_pack("{s:s, s:s}", "command", "delete", "path", "/memories/r.md")));
        assert_false(err);
        checked++;
    }
    assert_true(checked > 5);
    mt_memory_free(red);
    mt_test_store_free(&ts);
}

typedef struct {
    mt_memory *m;
    int64_t id;
    int rc, noted;
} restore_arg;

/* A restore on another thread: what it returned, and whether it saw a note. */
static void *restore_thread(void *p)
{
    restore_arg *a = p;
    int64_t now;

    a->rc = mt_memory_restore(&now, a->m, a->id);
    a->noted = mt_memory_secrets_note(a->m) != NULL;
    return NULL;
}

/* A create and an insert are refused alike; restore too, with MT_ESECRET. */
static void test_create_insert_restore(void **state)
{
    mt_test_store ts;
    mt_memory *rej, *red;
    int64_t now = 0;
    char *res;
    int err;

    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_memory_free(ts.mem);
    ts.mem = open_handle(ts.root, MT_SECRETS_OFF);
    rej = open_handle(ts.root, MT_SECRETS_REJECT);
    red = open_handle(ts.root, MT_SECRETS_REDACT);
    mt_test_expect(rej,
                   "{\"command\":\"create\",\"path\":\"/memories/a\",\"file_text\":\"k "
                   "npm_abcdefghijklmnopqrstuvwxyz0123456789\"}",
                   1,
                   "Error: /memories/a would contain a secret (npm-token, line 1); memory must "
                   "not hold credentials. Remove it and retry, or run memtool with --secrets "
                   "redact to store it redacted, or --secrets-allow REGEX for what is no "
                   "secret.");
    mt_test_expect(rej, "{\"command\":\"create\",\"path\":\"/memories/a\",\"file_text\":\"x\\n\"}",
                   0, "File created successfully at: /memories/a");
    mt_test_expect(rej,
                   "{\"command\":\"insert\",\"path\":\"/memories/a\",\"insert_line\":1,"
                   "\"insert_text\":\"card 4111111111111111\"}",
                   1,
                   "Error: /memories/a would contain a secret (card-number, line 2); memory must "
                   "not hold credentials. Remove it and retry, or run memtool with --secrets "
                   "redact to store it redacted, or --secrets-allow REGEX for what is no "
                   "secret.");
    mt_test_expect(red,
                   "{\"command\":\"insert\",\"path\":\"/memories/a\",\"insert_line\":1,"
                   "\"insert_text\":\"card 4111111111111111\"}",
                   0,
                   "The file /memories/a has been edited (1 secret redacted: card-number on line "
                   "2).");
    /* Version 3 will hold a card, written with the policy off. */
    res = mt_test_call(ts.mem, &err,
                       "{\"command\":\"str_replace\",\"path\":\"/memories/a\",\"old_str\":\"card "
                       "[REDACTED:card-number]\",\"new_str\":\"card 5500000000000004\"}");
    free(res);
    assert_false(err);
    mt_test_expect(ts.mem,
                   "{\"command\":\"str_replace\",\"path\":\"/memories/a\",\"old_str\":\"card "
                   "5500000000000004\",\"new_str\":\"no card\"}",
                   0,
                   "The memory file has been edited. Here is the snippet showing the change "
                   "(with line numbers):\n     1\tx\n     2\tno card");
    assert_int_equal(mt_memory_restore(&now, rej, 3), MT_ESECRET);
    assert_string_equal(mt_error_last()->message,
                        "/memories/a would contain a secret (card-number, line 2) from version 3; "
                        "memory must not hold credentials. Run it again with --secrets redact to "
                        "store it redacted (or --secrets-allow REGEX for what is no secret), and "
                        "memtool redact 3 to erase the version.");
    assert_null(mt_memory_secrets_note(rej));
    assert_int_equal(mt_memory_restore(&now, red, 3), 0);
    assert_int_equal(now, 5);
    assert_string_equal(mt_memory_secrets_note(red), "1 secret redacted: card-number on line 2");
    /* Another thread's restore on the same handle, with nothing to redact,
     * leaves this thread's note as it was. */
    {
        pthread_t t;
        restore_arg a = {red, 1, 1, 1};
        assert_int_equal(pthread_create(&t, NULL, restore_thread, &a), 0);
        pthread_join(t, NULL);
        assert_int_equal(a.rc, 0);
        assert_int_equal(a.noted, 0);
        assert_string_equal(mt_memory_secrets_note(red),
                            "1 secret redacted: card-number on line 2");
        assert_int_equal(mt_memory_restore(&now, red, 1), 0);
        assert_null(mt_memory_secrets_note(red));
        assert_int_equal(mt_memory_restore(&now, red, 3), 0);
    }
    res = mt_test_read(&ts, "a", NULL);
    assert_string_equal(res, "x\ncard [REDACTED:card-number]\n");
    free(res);
    mt_memory_free(rej);
    mt_memory_free(red);
    mt_test_store_free(&ts);
}

/* A thread that restores on a handle, then, once the handle is freed and
 * another opened (on the main thread), asks the new one for its note. */
typedef struct {
    mt_memory *m;
    sem_t go, done;
    int rc, noted_old, noted_new;
} reuse_arg;

static void *reuse_thread(void *p)
{
    reuse_arg *a = p;
    int64_t now;

    a->rc = mt_memory_restore(&now, a->m, 1);
    a->noted_old = mt_memory_secrets_note(a->m) != NULL;
    sem_post(&a->done);
    while (sem_wait(&a->go) < 0)
        ;
    a->noted_new = mt_memory_secrets_note(a->m) != NULL;
    return NULL;
}

/* A refusal names every finding by kind and line (never the secret), the
 * first MT_GUARD_SHOWN of them and how many more, however many there are. */
static void test_refusal_lists_every_finding(void **state)
{
    static const char card[] = "4111 1111 1111 1111\n";
    mt_test_store ts;
    json_t *in;
    char *text, *res, *p;
    size_t n = 5000, i;
    int err;

    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_test_expect(ts.mem,
                   "{\"command\":\"create\",\"path\":\"/memories/a\",\"file_text\":\"id "
                   "AKIAUJZDEGXDNCF32EPF\\nok\\nnpm_abcdefghijklmnopqrstuvwxyz0123456789\\n"
                   "4111 1111 1111 1111\"}",
                   1,
                   "Error: /memories/a would contain 3 secrets (aws-access-key-id, line 1; "
                   "npm-token, line 3; card-number, line 4); memory must not hold credentials. "
                   "Remove them and retry, or run memtool with --secrets redact to store them "
                   "redacted, or --secrets-allow REGEX for what is no secret.");
    /* A hostile input: thousands of findings make a message of a few lines. */
    text = malloc(n * (sizeof(card) - 1) + 1);
    assert_non_null(text);
    for (i = 0; i < n; i++)
        memcpy(text + i * (sizeof(card) - 1), card, sizeof(card) - 1);
    text[n * (sizeof(card) - 1)] = '\0';
    in =
        json_pack("{s:s, s:s, s:s}", "command", "create", "path", "/memories/b", "file_text", text);
    assert_non_null(in);
    res = call_json(ts.mem, &err, in);
    assert_true(err);
    assert_true(strlen(res) < 512);
    assert_non_null(strstr(res, " would contain 5000 secrets (card-number, line 1; "));
    assert_non_null(strstr(res, "card-number, line 8; and 4992 more); "));
    assert_null(strstr(res, "line 9;"));
    assert_null(strstr(res, "4111"));
    for (p = res, i = 0; (p = strstr(p, "card-number")) != NULL; p++)
        i++;
    assert_int_equal(i, 8);
    free(res);
    free(text);
    mt_test_store_free(&ts);
}

/* A handle opened after another was freed, at the same address, has no note
 * of the old one's restores: not on the thread that freed it, nor on one
 * that restored with it and lives on. */
static void test_note_not_inherited(void **state)
{
    mt_test_store ts;
    mt_memory *old, *fresh;
    reuse_arg a;
    pthread_t t;
    int64_t now;
    uintptr_t old_at;
    int reused;

    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_memory_free(ts.mem);
    ts.mem = open_handle(ts.root, MT_SECRETS_OFF);
    mt_test_create(ts.mem, "a", "card 4111111111111111\\n");
    mt_test_ok(ts.mem, "{\"command\":\"str_replace\",\"path\":\"/memories/a\",\"old_str\":\"card "
                       "4111111111111111\",\"new_str\":\"no card\"}");
    /* This thread. */
    old = open_handle(ts.root, MT_SECRETS_REDACT);
    assert_int_equal(mt_memory_restore(&now, old, 1), 0);
    assert_non_null(mt_memory_secrets_note(old));
    mt_memory_free(old);
    old = open_handle(ts.root, MT_SECRETS_REDACT);
    assert_null(mt_memory_secrets_note(old));
    /* The memory changed since, so that restoring version 1 again is a change
     * (one that leaves the content as it is records nothing, and notes nothing). */
    mt_test_ok(ts.mem, "{\"command\":\"insert\",\"path\":\"/memories/a\",\"insert_line\":0,"
                       "\"insert_text\":\"first\"}");
    /* Another thread, which restored with the handle before this one freed it. */
    assert_int_equal(sem_init(&a.go, 0, 0), 0);
    assert_int_equal(sem_init(&a.done, 0, 0), 0);
    a.m = old;
    assert_int_equal(pthread_create(&t, NULL, reuse_thread, &a), 0);
    while (sem_wait(&a.done) < 0)
        ;
    assert_int_equal(a.rc, 0);
    assert_true(a.noted_old);
    /* The address as a number: a freed pointer is not to be compared. */
    old_at = (uintptr_t)old;
    mt_memory_free(old);
    fresh = open_handle(ts.root, MT_SECRETS_REDACT);
    reused = (uintptr_t)fresh == old_at;
    a.m = fresh;
    sem_post(&a.go);
    pthread_join(t, NULL);
    assert_false(a.noted_new);
    assert_null(mt_memory_secrets_note(fresh));
#if !MT_TEST_SANITIZED
    /* Without a sanitizer's quarantine, the allocator hands the freed block
     * straight back: the case above is the one that matters. */
    assert_true(reused);
#else
    (void)reused;
#endif
    sem_destroy(&a.go);
    sem_destroy(&a.done);
    mt_memory_free(fresh);
    mt_test_store_free(&ts);
}

/* Redacted content is bounded by the max file size like any content. */
static void test_redaction_limit(void **state)
{
    mt_test_store ts;
    mt_options o;
    char json[512];

    (void)state;
    mt_options_init(&o);
    o.secrets = MT_SECRETS_REDACT;
    o.max_file_size = 30;
    mt_test_store_init(&ts, &o);
    /* 23 bytes in; the 20 of the key become 28 of marker: 31 out. */
    snprintf(json, sizeof(json),
             "{\"command\":\"create\",\"path\":\"/memories/a\",\"file_text\":\"id "
             "AKIAQWB5PDKHX6PYGPAN\"}");
    mt_test_expect(ts.mem, json, 1,
                   "Error: Cannot write /memories/a: the file would hold 31 bytes, over the max "
                   "file size limit of 30 bytes; keep memory files small and split large content");
    assert_null(mt_test_read(&ts, "a", NULL));
    mt_test_store_free(&ts);
}

/* Options of version 4 (before the policy) get reject; a bad regex fails
 * the open, naming it; a bad policy too. */
static void test_options(void **state)
{
    mt_test_store ts;
    mt_options o;
    mt_memory *m = NULL;
    const char *bad[] = {"a{2,1}"};

    (void)state;
    mt_test_store_init(&ts, NULL);
    mt_options_init(&o);
    o.version = 4;
    o.secrets = MT_SECRETS_OFF; /* past a version 4 struct's end: not read */
    assert_int_equal(mt_memory_open(&m, ts.root, &o), 0);
    mt_test_expect(
        m,
        "{\"command\":\"create\",\"path\":\"/memories/a\",\"file_text\":\"4111 1111 1111 "
        "1111\"}",
        1,
        "Error: /memories/a would contain a secret (card-number, line 1); memory must "
        "not hold credentials. Remove it and retry, or run memtool with --secrets "
        "redact to store it redacted, or --secrets-allow REGEX for what is no "
        "secret.");
    mt_memory_free(m);
    mt_options_init(&o);
    o.secrets_allow = bad;
    o.secrets_allow_count = 1;
    assert_int_equal(mt_memory_open(&m, ts.root, &o), MT_EINVAL);
    assert_non_null(strstr(mt_error_last()->message, "'a{2,1}'"));
    mt_options_init(&o);
    o.secrets = (mt_secrets_policy)7;
    assert_int_equal(mt_memory_open(&m, ts.root, &o), MT_EINVAL);
    mt_test_store_free(&ts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_detectors_in_every_form),
        cmocka_unit_test(test_offsets_lines_and_bytes),
        cmocka_unit_test(test_boundaries),
        cmocka_unit_test(test_luhn_and_issuers),
        cmocka_unit_test(test_entropy),
        cmocka_unit_test(test_allow_list),
        cmocka_unit_test(test_many_hits),
        cmocka_unit_test(test_false_positive_corpus),
        cmocka_unit_test(test_one_mebibyte),
        cmocka_unit_test(test_corpus_is_generated),
        cmocka_unit_test(test_split_by_the_edit),
        cmocka_unit_test(test_snippet_after_redaction),
        cmocka_unit_test(test_create_insert_restore),
        cmocka_unit_test(test_refusal_lists_every_finding),
        cmocka_unit_test(test_note_not_inherited),
        cmocka_unit_test(test_redaction_limit),
        cmocka_unit_test(test_options),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
