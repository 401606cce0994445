/* The history commands' shared pieces: ids, times, one version per line. */
#include "cli/history_ui.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "util/lines.h"

int mt_cli_parse_version(int64_t *out, const char *name, const char *s)
{
    char *end;
    long long v;

    errno = 0;
    v = s && *s >= '1' && *s <= '9' ? strtoll(s, &end, 10) : 0;
    if (v <= 0 || errno || *end)
        return mt_cli_usage_error(name, "'%s' is not a version id (a number from memtool log)",
                                  s ? s : "");
    *out = v;
    return 0;
}

void mt_cli_print_secrets_note(mt_memory *mem)
{
    const char *note = mt_memory_secrets_note(mem);

    if (note)
        printf(" (%s)", note);
    putchar('\n');
}

int mt_cli_fail(const char *name)
{
    const mt_error *e = mt_error_last();

    fprintf(stderr, "memtool %s: %s\n", name, e->message);
    return MT_EXIT_TOOL;
}

/* n decimal digits of v (0 <= v < 10^n), zero-padded. */
static void put_digits(char *out, int v, int n)
{
    while (n-- > 0) {
        out[n] = (char)('0' + v % 10);
        v /= 10;
    }
}

int mt_cli_put_bytes(const char *name, const char *data, size_t len)
{
    if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0) {
        fprintf(stderr, "memtool %s: cannot write the output: %s\n", name, strerror(errno));
        return MT_EXIT_TOOL;
    }
    return MT_EXIT_OK;
}

void mt_cli_time_format(char out[32], int64_t ms)
{
    time_t secs = (time_t)(ms / 1000);
    struct tm tm;

    /* Years of four digits only: anything else is not RFC 3339. */
    if (ms < 0 || ms >= 253402300800000LL || !gmtime_r(&secs, &tm)) {
        snprintf(out, 32, "%" PRId64, ms);
        return;
    }
    /* Digit by digit: snprintf was an eighth of a long `memtool log`. */
    put_digits(out, (tm.tm_year + 1900) % 10000, 4);
    out[4] = '-';
    put_digits(out + 5, (tm.tm_mon + 1) % 100, 2);
    out[7] = '-';
    put_digits(out + 8, tm.tm_mday % 100, 2);
    out[10] = 'T';
    put_digits(out + 11, tm.tm_hour % 100, 2);
    out[13] = ':';
    put_digits(out + 14, tm.tm_min % 100, 2);
    out[16] = ':';
    put_digits(out + 17, tm.tm_sec % 100, 2);
    out[19] = '.';
    put_digits(out + 20, (int)(ms % 1000), 3);
    out[23] = 'Z';
    out[24] = '\0';
}

static int digits(const char **p, int n, int *out)
{
    int v = 0;

    for (; n > 0; n--, (*p)++) {
        if (**p < '0' || **p > '9')
            return -1;
        v = v * 10 + (**p - '0');
    }
    *out = v;
    return 0;
}

/* A date like 2026-02-30 is refused, not read as a day in March. */
static int days_in_month(int y, int mo)
{
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

    if (mo == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))
        return 29;
    return days[mo - 1];
}

int mt_cli_time_parse(int64_t *ms, const char *s)
{
    struct timespec now;
    const char *p = s;
    int y, mo, d, h, mi, sec, frac = 0, scale = 1000, seconds = 0;
    int64_t days;

    if (!s || !*s)
        return -1;
    /* An age, a duration as every command reads one (30d, 12h, 1d12h): that long ago. */
    if (strchr("0123456789", *s) && !strchr(s, '-')) {
        uint64_t age;

        if (mt_cli_parse_duration(&age, s) < 0)
            return -1;
        clock_gettime(CLOCK_REALTIME, &now);
        *ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - (int64_t)age;
        return 0;
    }
    if (digits(&p, 4, &y) || *p++ != '-' || digits(&p, 2, &mo) || *p++ != '-' || digits(&p, 2, &d))
        return -1;
    /* A date alone, or a time without seconds or an offset, is what people
     * type (as git's --since takes it): read in UTC, the log's own zone. */
    h = mi = sec = 0;
    if (*p) {
        if (*p != 'T' && *p != 't' && *p != ' ')
            return -1;
        p++;
        if (digits(&p, 2, &h) || *p++ != ':' || digits(&p, 2, &mi))
            return -1;
        if (*p == ':') {
            p++;
            if (digits(&p, 2, &sec))
                return -1;
            seconds = 1;
        }
    }
    if (*p == '.' && seconds) {
        p++;
        if (*p < '0' || *p > '9')
            return -1;
        for (; *p >= '0' && *p <= '9'; p++)
            if (scale > 1) {
                scale /= 10;
                frac += (*p - '0') * scale;
            }
    }
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || sec > 60)
        return -1;
    /* Days since the epoch of a civil date (proleptic Gregorian). */
    {
        int yy = y - (mo <= 2), era = (yy >= 0 ? yy : yy - 399) / 400;
        int yoe = yy - era * 400, doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        days = (int64_t)era * 146097 + doe - 719468;
    }
    *ms = ((days * 24 + h) * 60 + mi) * 60000LL + sec * 1000LL + frac;
    if (!*p) {
        return 0; /* no offset: UTC */
    } else if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p == '-' ? -1 : 1, oh, om;
        p++;
        if (digits(&p, 2, &oh) || *p++ != ':' || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        *ms -= sign * (oh * 60 + om) * 60000LL;
    } else {
        return -1;
    }
    return *p ? -1 : 0;
}

const char *mt_cli_op_name(mt_version_op op)
{
    return op == MT_VERSION_CREATED ? "created" : op == MT_VERSION_DELETED ? "deleted" : "modified";
}

int mt_cli_op_parse(mt_version_op *op, const char *s)
{
    if (strcmp(s, "created") == 0)
        *op = MT_VERSION_CREATED;
    else if (strcmp(s, "modified") == 0)
        *op = MT_VERSION_MODIFIED;
    else if (strcmp(s, "deleted") == 0)
        *op = MT_VERSION_DELETED;
    else
        return -1;
    return 0;
}

void mt_cli_version_print(FILE *out, const mt_version *v)
{
    char when[32], size[32];

    char id[32];
    const char *op = mt_cli_op_name(v->operation);
    size_t n;

    /* Put piece by piece: fprintf's formatting was a sixth of a long log. */
    mt_cli_time_format(when, v->created_at);
    n = (size_t)snprintf(id, sizeof(id), "%-6" PRId64, v->id);
    fwrite(id, 1, n < sizeof(id) ? n : sizeof(id) - 1, out);
    fputc(' ', out);
    fputs(when, out);
    fputs("  ", out);
    fputs(op, out);
    for (n = strlen(op); n < 8; n++)
        fputc(' ', out);
    fputs("  ", out);
    fputs(v->actor, out);
    fputs("  ", out);
    if (v->redacted) {
        fputs("(redacted)\n", out);
        return;
    }
    if (v->previous_path) {
        fputs(v->previous_path, out);
        fputs(" -> ", out);
    }
    fputs(v->path ? v->path : "", out);
    if (v->operation != MT_VERSION_DELETED) {
        mt_text_format_size(size, v->content_size);
        fputs("  (", out);
        fputs(size, out);
        fputs(", sha256 ", out);
        fwrite(v->content_sha256, 1, strnlen(v->content_sha256, 8), out);
        fputc(')', out);
    }
    fputc('\n', out);
}

int mt_cli_version_json(FILE *out, const mt_version *v)
{
    char when[32], *line;
    json_t *o;
    int rc = 0;

    mt_cli_time_format(when, v->created_at);
    /* s* leaves previous_path out unless the version is a rename. */
    o = json_pack("{s:I, s:s, s:s?, s:s*, s:s, s:s, s:s, s:s?, s:I, s:b}", "id", (json_int_t)v->id,
                  "memory_id", v->memory_id, "path", v->path, "previous_path", v->previous_path,
                  "operation", mt_cli_op_name(v->operation), "actor", v->actor, "created_at", when,
                  "content_sha256", *v->content_sha256 ? v->content_sha256 : NULL,
                  "content_size_bytes", (json_int_t)v->content_size, "redacted", v->redacted);
    line = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (line) {
        fprintf(out, "%s\n", line);
        free(line);
    } else {
        rc = -1;
    }
    json_decref(o);
    return rc;
}

int mt_cli_json_string(FILE *out, const char *s)
{
    json_t *j = s ? json_string(s) : json_null();
    char *text = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    int rc = text ? 0 : -1;

    if (text)
        fputs(text, out);
    free(text);
    json_decref(j);
    return rc;
}
