/*
 * The secrets scanner (secrets.h). Each rule is written from the format its
 * issuer documents: a fixed prefix (the prefilter's keyword), a body of a
 * known alphabet and length, and boundaries so a longer token of the same
 * alphabet is not mistaken for one. Where a format has no prefix (an AWS
 * secret key, a password), the rule needs context: a key name before it, or
 * an access key id near it, and a value that looks random.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "guard/secrets.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pcre2.h>

#include <memtool.h>
#include <memtool/store.h>

typedef enum {
    CHECK_NONE,    /* the format is the proof */
    CHECK_ENTROPY, /* random enough, and not a documented placeholder */
    CHECK_GENERIC, /* a value after a key name: random, not a reference */
    CHECK_URL      /* a password in a URL: not a placeholder */
} check_kind;

typedef struct {
    const char *kind;
    const char *keywords[12]; /* lowercase (the prefilter folds case); NULL ends */
    const char *pattern;
    int group;          /* the secret is this capture group; 0: the whole match */
    unsigned near;      /* 0: the match starts at the keyword; else the bytes either
                           side of the keyword searched for it */
    double min_entropy; /* bits per byte of the secret, for CHECK_ENTROPY and CHECK_GENERIC */
    check_kind check;
} rule;

/* The order is the priority: where two rules find the same bytes, the first
 * names them. */
static const rule rules[] = {
    {"anthropic-api-key",
     {"sk-ant-", NULL},
     "(?<![A-Za-z0-9_-])sk-ant-[a-z]{2,10}[0-9]{2}-[A-Za-z0-9_-]{80,200}(?![A-Za-z0-9_-])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"openai-api-key",
     {"sk-", NULL},
     "(?<![A-Za-z0-9_-])sk-(?!ant-)(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,250}"
     "|[A-Za-z0-9_-]{16,200}T3BlbkFJ[A-Za-z0-9_-]{16,200}|[A-Za-z0-9]{48})(?![A-Za-z0-9_-])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"aws-access-key-id",
     {"akia", "asia", "abia", "acca", NULL},
     "(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}(?![A-Za-z0-9])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"aws-secret-access-key",
     {"secret", NULL},
     "(?i:secret_?access_?key|secret_?key)[A-Za-z0-9_]{0,8}[\"'`]?[ \\t]{0,8}(?::=|=>|=|:)"
     "[ \\t]{0,8}[\"'`]?([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
     1,
     0,
     3.0,
     CHECK_ENTROPY},
    /* The secret key that comes with an access key id: 40 characters of
     * base64 near it, more random than hex (a git SHA) can be. */
    {"aws-secret-access-key",
     {"akia", "asia", NULL},
     "(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
     0,
     240,
     4.2,
     CHECK_ENTROPY},
    {"github-token",
     {"ghp_", "gho_", "ghu_", "ghs_", "ghr_", NULL},
     "(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36,251}(?![A-Za-z0-9_])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"github-fine-grained-token",
     {"github_pat_", NULL},
     "(?<![A-Za-z0-9_])github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}(?![A-Za-z0-9_])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"gitlab-token",
     {"glpat-", "glptt-", "gldt-", "glrt-", "glsoat-", "glcbt-", "glft-", "glimt-", "gloas-",
      "glagent-", "gr1348941", NULL},
     "(?<![A-Za-z0-9_-])(?:gl(?:pat|ptt|dt|rt|soat|cbt|ft|imt|oas|agent)-|GR1348941)"
     "[A-Za-z0-9_-]{20,200}(?:\\.[A-Za-z0-9_-]{1,40}){0,4}(?![A-Za-z0-9_-])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"slack-token",
     {"xox", "xapp-", NULL},
     "(?<![A-Za-z0-9_-])(?:xox(?:[abposr]|e\\.xox[bp]|e)-[0-9]{1,20}-[0-9A-Za-z-]{8,250}"
     "|xapp-[0-9]-[A-Z0-9]{4,20}-[0-9]{4,20}-[A-Za-z0-9]{16,250})(?![A-Za-z0-9_-])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"slack-webhook",
     {"hooks.slack.com", NULL},
     "hooks\\.slack\\.com/(?:services/T[A-Z0-9]{6,12}/B[A-Z0-9]{6,12}/[A-Za-z0-9]{20,40}"
     "|(?:workflows|triggers)/T[A-Z0-9]{6,12}/A[A-Z0-9]{6,12}/[0-9]{6,24}/[A-Za-z0-9]{20,40})"
     "(?![A-Za-z0-9])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"stripe-key",
     {"sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_", NULL},
     "(?<![A-Za-z0-9_])(?:[sr]k_(?:live|test)_[A-Za-z0-9]{20,247}|whsec_[A-Za-z0-9+/"
     "]{24,128}={0,2})"
     "(?![A-Za-z0-9_])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"google-api-key",
     {"aiza", NULL},
     "(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"azure-storage-key",
     {"accountkey=", NULL},
     "(?i:AccountKey)=([A-Za-z0-9+/]{86}==)(?![A-Za-z0-9+/=])",
     1,
     0,
     3.5,
     CHECK_ENTROPY},
    {"npm-token",
     {"npm_", NULL},
     "(?<![A-Za-z0-9_])npm_[A-Za-z0-9]{36}(?![A-Za-z0-9_])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    /* A PEM or OpenSSH private key block: the header and at least a line of
     * base64, through the END line when there is one (also with the newlines
     * escaped, as in JSON: backslashes count as part of the block), else as far as the base64 goes.
     */
    {"private-key",
     {"-----begin", NULL},
     "-----BEGIN[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
     "[A-Za-z0-9+/=:,. \\t\\r\\n\\\\-]{0,400}?[A-Za-z0-9+/]{40}"
     "(?:[A-Za-z0-9+/= \\t\\r\\n\\\\]*?-----END[ A-Z0-9]{0,30}PRIVATE KEY(?: BLOCK)?-----"
     "|[A-Za-z0-9+/=\\r\\n\\\\]*)",
     0,
     0,
     0,
     CHECK_NONE},
    {"jwt",
     {"eyj", NULL},
     "(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{8,4096}\\.eyJ[A-Za-z0-9_-]{8,8192}\\.[A-Za-z0-9_-]{16,"
     "2048}(?![A-Za-z0-9_-])",
     0,
     0,
     3.0,
     CHECK_ENTROPY},
    {"url-password",
     {"://", NULL},
     "(?<=[A-Za-z0-9])://([^\\s/:@\"'<>\\[\\]\\\\\\x00-\\x1f]{1,128}):"
     "([^\\s/@\"'<>\\\\\\x00-\\x1f]{1,256})@(?=[A-Za-z0-9\\[])",
     2,
     0,
     0,
     CHECK_URL},
    {"generic-secret",
     {"password", "passwd", "pwd", "secret", "api_key", "apikey", "api-key", "access_token",
      "access-token", "auth_token", "auth-token", NULL},
     "(?i:password|passwd|pwd|secret|api[_-]?key|access[_-]?token|auth[_-]?token)[A-Za-z0-9_.-]{0,"
     "32}[\"'*`\\]]{0,3}[ \\t]{0,8}(?::=|=>|=(?!=)|:(?!:))[ \\t]{0,8}(?:[bru]?[\"'`])?"
     "([^\\s\"'`,;<>(){}\\[\\]\\\\\\x00-\\x1f\\x7f]{8,256})",
     1,
     0,
     3.0,
     CHECK_GENERIC},
};

#define RULES       (sizeof(rules) / sizeof(rules[0]))
#define KEYWORD_MAX 64
#define CARD_KIND   "card-number"
/* The longest token a rule searching near its keyword finds, with its boundaries. */
#define NEAR_TOKEN_MAX 64

typedef struct {
    const char *text;
    size_t len;
    unsigned pair; /* its first two bytes, as the prefilter sees them */
    unsigned rule;
} keyword;

static struct {
    pcre2_code *code[RULES];
    uint32_t groups; /* the most capture groups of any rule, for one match block */
    keyword kw[KEYWORD_MAX];
    size_t nkw;
    /* kw indices by first (folded) byte: first_kw[b]..first_kw[b + 1) after sorting */
    uint16_t by_first[257];
    /* Pairs of bytes where something may start, in either case, indexed as
     * one little-endian load of two reads them (b0 | b1 << 8). */
    unsigned char start[65536];
    unsigned char fold[256];
    int error; /* 0, or why init failed */
    char message[256];
    int key_id_rule; /* aws-access-key-id, which the rules near a key id need; -1 none */
} engine;

static pthread_once_t engine_once = PTHREAD_ONCE_INIT;

/* Mark the pair (a, b), given folded, in every case. */
static void start_set(unsigned a, unsigned b)
{
    unsigned x, y;

    for (x = 0; x < 256; x++)
        for (y = 0; engine.fold[x] == a && y < 256; y++)
            if (engine.fold[y] == b)
                engine.start[x | y << 8] = 1;
}

static int keyword_cmp(const void *a, const void *b)
{
    const keyword *x = a, *y = b;

    return x->pair < y->pair ? -1 : x->pair > y->pair;
}

static void engine_init(void)
{
    size_t r, k, i;
    unsigned a, b;

    for (i = 0; i < 256; i++)
        engine.fold[i] = (unsigned char)(i >= 'A' && i <= 'Z' ? i + 32 : i);
    engine.key_id_rule = -1;
    for (r = 0; r < RULES; r++)
        if (strcmp(rules[r].kind, "aws-access-key-id") == 0)
            engine.key_id_rule = (int)r;
    for (r = 0; r < RULES; r++) {
        int err;
        PCRE2_SIZE at;
        uint32_t groups = 0;

        /* Patterns start at their keyword, so each is tried at that one place. */
        engine.code[r] = pcre2_compile((PCRE2_SPTR)rules[r].pattern, PCRE2_ZERO_TERMINATED,
                                       rules[r].near ? 0 : PCRE2_ANCHORED, &err, &at, NULL);
        if (!engine.code[r]) {
            PCRE2_UCHAR why[120];
            pcre2_get_error_message(err, why, sizeof(why));
            engine.error = MT_ERROR;
            snprintf(engine.message, sizeof(engine.message),
                     "the secrets rule %s does not compile: %s at %zu", rules[r].kind,
                     (const char *)why, (size_t)at);
            return;
        }
        /* Without a JIT (a system that forbids executable memory) the
         * interpreter runs the same patterns, only slower. */
        (void)pcre2_jit_compile(engine.code[r], PCRE2_JIT_COMPLETE);
        pcre2_pattern_info(engine.code[r], PCRE2_INFO_CAPTURECOUNT, &groups);
        if (groups > engine.groups)
            engine.groups = groups;
        for (k = 0; rules[r].keywords[k]; k++) {
            keyword *w = &engine.kw[engine.nkw++];
            w->text = rules[r].keywords[k];
            w->len = strlen(w->text);
            w->pair = (unsigned)(unsigned char)w->text[0] << 8 | (unsigned char)w->text[1];
            w->rule = (unsigned)r;
        }
    }
    qsort(engine.kw, engine.nkw, sizeof(keyword), keyword_cmp);
    for (i = 0, a = 0; a <= 256; a++) {
        while (i < engine.nkw && (unsigned char)engine.kw[i].text[0] < a)
            i++;
        engine.by_first[a] = (uint16_t)i;
    }
    for (i = 0; i < engine.nkw; i++)
        start_set((unsigned char)engine.kw[i].text[0], (unsigned char)engine.kw[i].text[1]);
    /* Where a card number may start: an issuer's first digit, then a digit. */
    for (a = '2'; a <= '6'; a++)
        for (b = '0'; b <= '9'; b++)
            start_set(a, b);
}

static int engine_ready(void)
{
    pthread_once(&engine_once, engine_init);
    if (engine.error)
        return mt_error_set(engine.error, "%s", engine.message);
    return 0;
}

double mt_secrets_entropy(const char *s, size_t len)
{
    size_t count[256] = {0}, i;
    double h = 0;

    if (len == 0)
        return 0;
    for (i = 0; i < len; i++)
        count[(unsigned char)s[i]]++;
    for (i = 0; i < 256; i++)
        if (count[i]) {
            double p = (double)count[i] / (double)len;
            h -= p * log2(p);
        }
    return h;
}

int mt_secrets_luhn(const char *s, size_t len)
{
    int sum = 0, dbl = 0, digits = 0;
    size_t i;

    for (i = len; i-- > 0;) {
        int d;
        if (s[i] < '0' || s[i] > '9')
            continue;
        d = s[i] - '0';
        if (dbl && (d *= 2) > 9)
            d -= 9;
        sum += d;
        dbl = !dbl;
        digits++;
    }
    return digits > 0 && sum % 10 == 0;
}

size_t mt_secrets_marker(char *out, const char *kind)
{
    int n = snprintf(out, MT_SECRETS_MARKER_MAX, "[REDACTED:%s]", kind);

    return n < 0 ? 0 : (size_t)n < MT_SECRETS_MARKER_MAX ? (size_t)n : MT_SECRETS_MARKER_MAX - 1;
}

/* --- validators -------------------------------------------------------- */

static int contains_ci(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word), i, j;

    for (i = 0; i + n <= len; i++) {
        for (j = 0; j < n && engine.fold[(unsigned char)s[i + j]] == (unsigned char)word[j]; j++)
            ;
        if (j == n)
            return 1;
    }
    return 0;
}

static int ends_with(const char *s, size_t len, const char *tail)
{
    size_t n = strlen(tail);

    return len >= n && memcmp(s + len - n, tail, n) == 0;
}

/* What documentation and templates put where a secret goes. */
static int placeholder(const char *s, size_t len)
{
    static const char *const words[] = {"example", "changeme", "placeholder", "redacted",
                                        "your_",   "your-",    "xxxx",        "****",
                                        "dummy",   "<",        "${",          "{{"};
    size_t i;

    /* AWS's documented keys end so (AKIAIOSFODNN7EXAMPLE). */
    if (ends_with(s, len, "EXAMPLE") || ends_with(s, len, "EXAMPLEKEY"))
        return 1;
    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (contains_ci(s, len, words[i]))
            return 1;
    return 0;
}

/* A value after `password=` and the like: a secret if it looks random, not
 * if it is a name, a path, a variable or a template. */
static int generic_value(const char *s, size_t len, double min_entropy)
{
    int digit = 0, symbol = 0, other = 0;
    size_t i;

    /* $VAR, %(name)s, @Value, a path, <placeholder>, {template}, [list]. */
    if (len < 8 || strchr("$%@/~.<{[", s[0]) || placeholder(s, len) || contains_ci(s, len, "://") ||
        contains_ci(s, len, "$("))
        return 0;
    for (i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= '0' && c <= '9')
            digit = 1;
        else if ((c | 32) >= 'a' && (c | 32) <= 'z')
            other = 1;
        else if (c != '_' && c != '.' && c != '-')
            symbol = 1;
    }
    /* Letters alone are an identifier (settings.SECRET_KEY); digits alone a
     * number (a count, an id, a time). */
    if (!(digit || symbol) || !(other || symbol))
        return 0;
    return mt_secrets_entropy(s, len) >= min_entropy;
}

static int url_password(const char *s, size_t len)
{
    static const char *const words[] = {"password", "pass",  "passwd", "pwd",
                                        "secret",   "token", "pw",     "changeme"};
    size_t i;
    int same = 1;

    if (strchr("$%<{*", s[0]) || placeholder(s, len))
        return 0;
    for (i = 1; i < len; i++)
        same &= s[i] == s[0];
    if (same && len > 1)
        return 0;
    for (i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strlen(words[i]) == len && contains_ci(s, len, words[i]))
            return 0;
    return 1;
}

static int valid(const rule *r, const char *s, size_t len)
{
    switch (r->check) {
    case CHECK_ENTROPY:
        return !placeholder(s, len) && mt_secrets_entropy(s, len) >= r->min_entropy;
    case CHECK_GENERIC:
        return generic_value(s, len, r->min_entropy);
    case CHECK_URL:
        return url_password(s, len);
    default:
        return 1;
    }
}

/* --- the allow-list ---------------------------------------------------- */

struct mt_secrets_allow {
    pcre2_code **code;
    size_t n;
};

void mt_secrets_allow_free(mt_secrets_allow *a)
{
    size_t i;

    if (!a)
        return;
    for (i = 0; i < a->n; i++)
        pcre2_code_free(a->code[i]);
    free(a->code);
    free(a);
}

int mt_secrets_allow_compile(mt_secrets_allow **out, const char *const *regexes, size_t n)
{
    mt_secrets_allow *a = NULL;
    size_t i;
    int rc = 0;

    *out = NULL;
    if (n == 0)
        return 0;
    if (!regexes)
        return mt_error_set(MT_EINVAL, "an allow-list of %zu regexes needs the regexes", n);
    /* an array of n pointers to compiled patterns */
    if (!(a = calloc(1, sizeof(*a))) ||
        !(a->code = calloc(n, sizeof(*a->code)))) { /* NOLINT(bugprone-sizeof-expression) */
        rc = mt_error_set(MT_ENOMEM, "out of memory");
        goto done;
    }
    for (i = 0; i < n; i++) {
        int err;
        PCRE2_SIZE at;
        PCRE2_UCHAR why[120];

        if (!regexes[i]) {
            rc = mt_error_set(MT_EINVAL, "secrets allow-list entry %zu is NULL", i + 1);
            goto done;
        }
        a->code[i] =
            pcre2_compile((PCRE2_SPTR)regexes[i], PCRE2_ZERO_TERMINATED, 0, &err, &at, NULL);
        if (!a->code[i]) {
            pcre2_get_error_message(err, why, sizeof(why));
            rc = mt_error_set(MT_EINVAL,
                              "the secrets allow-list regex '%s' is not valid: %s (at offset %zu)",
                              regexes[i], (const char *)why, (size_t)at);
            goto done;
        }
        a->n = i + 1;
        (void)pcre2_jit_compile(a->code[i], PCRE2_JIT_COMPLETE);
    }
    *out = a;
    a = NULL;
done:
    mt_secrets_allow_free(a);
    return rc;
}

/* --- the scan ---------------------------------------------------------- */

typedef struct {
    const unsigned char *d;
    size_t len;
    const mt_secrets_cfg *cfg;
    pcre2_match_data *md, *allow_md;
    mt_secret_hit *hits; /* all found so far: local first, then the heap */
    size_t n, cap;
    mt_secret_hit local[32];
    size_t done[RULES]; /* a keyword before this offset is inside a match already found */
    size_t near_from[RULES];
} scan;

static int allowed(scan *s, size_t off, size_t len)
{
    size_t i;

    if (!s->cfg || !s->cfg->allow)
        return 0;
    for (i = 0; i < s->cfg->allow->n; i++)
        if (pcre2_match(s->cfg->allow->code[i], s->d + off, len, 0, 0, s->allow_md, NULL) >= 0)
            return 1;
    return 0;
}

static int record(scan *s, const char *kind, size_t off, size_t len)
{
    static const char marker[] = "[REDACTED:";

    /* What a redaction left is not found again. */
    if (len >= sizeof(marker) - 1 && memcmp(s->d + off, marker, sizeof(marker) - 1) == 0)
        return 0;
    if (allowed(s, off, len))
        return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap * 2;
        mt_secret_hit *h =
            s->hits == s->local ? malloc(cap * sizeof(*h)) : realloc(s->hits, cap * sizeof(*h));
        if (!h)
            return mt_error_set(MT_ENOMEM, "out of memory scanning for secrets");
        if (s->hits == s->local)
            memcpy(h, s->local, s->n * sizeof(*h));
        s->hits = h;
        s->cap = cap;
    }
    s->hits[s->n].kind = kind;
    s->hits[s->n].offset = off;
    s->hits[s->n].length = len;
    s->hits[s->n].line = 0;
    s->n++;
    return 0;
}

/* One match of rule r from `from`, in the subject's first `end` bytes. */
static int try_rule(scan *s, unsigned r, size_t from, size_t end, size_t *match_end)
{
    const rule *ru = &rules[r];
    PCRE2_SIZE *ov;
    size_t so, sl;
    int rc = pcre2_match(engine.code[r], s->d, end, from, 0, s->md, NULL);

    if (rc < 0)
        return 0;
    ov = pcre2_get_ovector_pointer(s->md);
    *match_end = ov[1] > ov[0] ? ov[1] : ov[0] + 1;
    if ((uint32_t)rc <= (uint32_t)ru->group || ov[2 * ru->group] == PCRE2_UNSET)
        return 0;
    so = ov[2 * ru->group];
    sl = ov[2 * ru->group + 1] - so;
    if (sl == 0 || !valid(ru, (const char *)s->d + so, sl))
        return 0;
    /* guest:guest, admin:admin: a service's documented default, not a secret. */
    if (ru->check == CHECK_URL && ov[3] - ov[2] == sl && memcmp(s->d + ov[2], s->d + so, sl) == 0)
        return 0;
    return record(s, ru->kind, so, sl) < 0 ? MT_ENOMEM : 1;
}

static int run_rule(scan *s, unsigned r, size_t at)
{
    const rule *ru = &rules[r];
    size_t end, from, last_end = 0;
    int rc;

    if (!ru->near) {
        if (at < s->done[r])
            return 0;
        if ((rc = try_rule(s, r, at, s->len, &last_end)) < 0)
            return rc;
        if (rc > 0)
            s->done[r] = last_end;
        return 0;
    }
    /* The keyword is found in any case, so it may be "Asia" or "Malaysia":
     * look near it only where it starts a key id itself. */
    if (engine.key_id_rule >= 0 && pcre2_match(engine.code[engine.key_id_rule], s->d, s->len, at,
                                               PCRE2_ANCHORED, s->md, NULL) < 0)
        return 0;
    /* Every match in the window around the keyword; windows of later
     * keywords start where this one's search ended, less what a token cut by
     * its end could need. */
    from = at > ru->near ? at - ru->near : 0;
    if (from < s->near_from[r])
        from = s->near_from[r];
    end = s->len - at > ru->near ? at + ru->near : s->len;
    while (from < end) {
        PCRE2_SIZE *ov;
        size_t so, eo;

        if (pcre2_match(engine.code[r], s->d, end, from, 0, s->md, NULL) < 0)
            break;
        ov = pcre2_get_ovector_pointer(s->md);
        so = ov[0];
        eo = ov[1];
        /* At the window's end the lookahead saw nothing: ask the whole text. */
        if (eo == end && end < s->len) {
            if (pcre2_match(engine.code[r], s->d, s->len, so, PCRE2_ANCHORED, s->md, NULL) < 0) {
                from = so + 1;
                continue;
            }
            ov = pcre2_get_ovector_pointer(s->md);
            eo = ov[1];
        }
        if (eo > so && valid(ru, (const char *)s->d + so, eo - so)) {
            if (record(s, ru->kind, so, eo - so) < 0)
                return MT_ENOMEM;
            last_end = eo;
        }
        from = eo > so ? eo : so + 1;
    }
    from = end > NEAR_TOKEN_MAX ? end - NEAR_TOKEN_MAX : 0;
    if (from < last_end)
        from = last_end;
    if (from > s->near_from[r])
        s->near_from[r] = from;
    return 0;
}

static int is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

static int issuer(const char *dg, size_t n)
{
    int p2 = (dg[0] - '0') * 10 + (dg[1] - '0');
    int p3 = p2 * 10 + (dg[2] - '0'), p4 = p3 * 10 + (dg[3] - '0');

    if (dg[0] == '4')
        return n == 13 || n == 16 || n == 19; /* Visa */
    if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720))
        return n == 16; /* Mastercard */
    if (p2 == 34 || p2 == 37)
        return n == 15; /* American Express */
    if (p4 == 6011 || p2 == 65 || (p3 >= 644 && p3 <= 649) || p2 == 62)
        return n >= 16; /* Discover, UnionPay */
    if (p4 >= 3528 && p4 <= 3589)
        return n >= 16; /* JCB */
    if ((p3 >= 300 && p3 <= 305) || p2 == 36 || p2 == 38 || p2 == 39)
        return n >= 14; /* Diners Club */
    return 0;
}

/* A card number starting at i (a digit): 13 to 19 digits, alone or in
 * groups split by one space or one dash, an issuer's prefix, Luhn. Returns
 * where the digit run ends, so the caller moves past it. */
static size_t card_at(scan *s, size_t i, int *err)
{
    const unsigned char *d = s->d;
    char dg[20] = {0};
    size_t n = 0, j = i, last = i;
    unsigned char sep = 0, p = i ? d[i - 1] : ' ';
    int ok;

    *err = 0;
    while (j < s->len) {
        if (d[j] >= '0' && d[j] <= '9') {
            if (n < sizeof(dg))
                dg[n] = (char)d[j];
            n++;
            last = ++j;
            continue;
        }
        if ((d[j] == ' ' || d[j] == '-') && (!sep || sep == d[j]) && j + 1 < s->len &&
            d[j + 1] >= '0' && d[j + 1] <= '9' && j > i) {
            sep = d[j];
            j++;
            continue;
        }
        break;
    }
    /* Part of a word, a decimal, a version or a path is not a card. */
    ok = n >= 13 && n <= 19 && !is_alnum(p) && !strchr("._-/+,\\", p) && p != 0;
    if (ok && last < s->len) {
        unsigned char q = d[last];
        ok = !is_alnum(q) && q != '_' &&
             !((q == '.' || q == ',' || q == '/' || q == '-') && last + 1 < s->len &&
               is_alnum(d[last + 1]));
    }
    if (ok && issuer(dg, n) && mt_secrets_luhn(dg, n)) {
        size_t k;
        int same = 1;
        for (k = 1; k < n; k++)
            same &= dg[k] == dg[0];
        if (!same && record(s, CARD_KIND, i, last - i) < 0)
            *err = MT_ENOMEM;
    }
    return last;
}

/* The rule's place in the table: of two rules finding the same bytes, the
 * earlier names them. */
static size_t rule_of(const char *kind)
{
    size_t r;

    for (r = 0; r < RULES; r++)
        if (rules[r].kind == kind)
            return r;
    return RULES;
}

static int hit_cmp(const void *a, const void *b)
{
    const mt_secret_hit *x = a, *y = b;
    size_t rx, ry;

    if (x->offset != y->offset)
        return x->offset < y->offset ? -1 : 1;
    /* Same start: the longer one (it holds the other). */
    if (x->length != y->length)
        return x->length > y->length ? -1 : 1;
    rx = rule_of(x->kind);
    ry = rule_of(y->kind);
    return rx < ry ? -1 : rx > ry;
}

static unsigned pair_at(const unsigned char *d)
{
    return (unsigned)d[0] | (unsigned)d[1] << 8;
}

/* The first place at or after i (< last) where a keyword or a card number
 * may start: its two bytes are a pair engine.start holds. This loop is most
 * of the cost of scanning ordinary text: eight places are looked up before
 * one branch, as most runs of eight bytes hold no pair at all. */
static size_t next_candidate(const unsigned char *d, size_t i, size_t last)
{
    const unsigned char *start = engine.start;

    for (; i + 8 <= last; i += 8)
        if (start[pair_at(d + i)] | start[pair_at(d + i + 1)] | start[pair_at(d + i + 2)] |
            start[pair_at(d + i + 3)] | start[pair_at(d + i + 4)] | start[pair_at(d + i + 5)] |
            start[pair_at(d + i + 6)] | start[pair_at(d + i + 7)])
            break;
    for (; i < last; i++)
        if (start[pair_at(d + i)])
            return i;
    return last;
}

static int scan_all(scan *s)
{
    const unsigned char *d = s->d, *fold = engine.fold;
    size_t i, k, last;
    unsigned pair;
    int err;

    if (s->len < 2)
        return 0;
    last = s->len - 1;
    for (i = 0; (i = next_candidate(d, i, last)) < last; i++) {
        if (d[i] >= '0' && d[i] <= '9') {
            if (i > 0 && d[i - 1] >= '0' && d[i - 1] <= '9')
                continue;
            i = card_at(s, i, &err);
            if (err < 0)
                return err;
            i--; /* past the digits (card_at moved at least one) */
            continue;
        }
        /* The keywords of this pair: sorted by pair within their first byte. */
        pair = (unsigned)fold[d[i]] << 8 | fold[d[i + 1]];
        for (k = engine.by_first[fold[d[i]]]; k < engine.by_first[fold[d[i]] + 1]; k++) {
            const keyword *w = &engine.kw[k];
            size_t j;
            if (w->pair != pair) {
                if (w->pair > pair)
                    break;
                continue;
            }
            if (w->len > s->len - i)
                continue;
            for (j = 2; j < w->len && fold[d[i + j]] == (unsigned char)w->text[j]; j++)
                ;
            if (j == w->len && (err = run_rule(s, w->rule, i)) < 0)
                return err;
        }
    }
    return 0;
}

int mt_secrets_scan(mt_secret_hit *hits, size_t max_hits, size_t *count, const char *data,
                    size_t len, const mt_secrets_cfg *cfg)
{
    scan s;
    size_t i, kept, line, counted;
    int rc;

    *count = 0;
    if ((rc = engine_ready()) < 0)
        return rc;
    memset(&s, 0, sizeof(s));
    s.d = (const unsigned char *)data;
    s.len = data ? len : 0;
    s.cfg = cfg;
    s.hits = s.local;
    s.cap = sizeof(s.local) / sizeof(s.local[0]);
    s.md = pcre2_match_data_create(engine.groups + 1, NULL);
    s.allow_md = pcre2_match_data_create(1, NULL);
    if (!s.md || !s.allow_md) {
        rc = mt_error_set(MT_ENOMEM, "out of memory scanning for secrets");
        goto done;
    }
    if ((rc = scan_all(&s)) < 0)
        goto done;
    /* In text order; of overlapping hits the first (the longest, then the
     * earliest rule) stays. */
    if (s.n > 1)
        qsort(s.hits, s.n, sizeof(*s.hits), hit_cmp);
    kept = 0;
    for (i = 0; i < s.n; i++)
        if (kept == 0 || s.hits[i].offset >= s.hits[kept - 1].offset + s.hits[kept - 1].length)
            s.hits[kept++] = s.hits[i];
    line = 1;
    counted = 0;
    for (i = 0; i < kept; i++) {
        const char *q = data + counted, *end = data + s.hits[i].offset;
        while ((q = memchr(q, '\n', (size_t)(end - q))) != NULL) {
            line++;
            q++;
        }
        counted = s.hits[i].offset;
        s.hits[i].line = line;
        if (i < max_hits)
            hits[i] = s.hits[i];
    }
    *count = kept;
done:
    pcre2_match_data_free(s.md);
    pcre2_match_data_free(s.allow_md);
    if (s.hits != s.local)
        free(s.hits);
    return rc;
}
