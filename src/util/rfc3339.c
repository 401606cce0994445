/* RFC 3339 times and retry-after (rfc3339.h). */
#include "util/rfc3339.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <memtool/store.h>

void mt_rfc3339_format(char out[MT_RFC3339_SIZE], int64_t ms)
{
    time_t t = (time_t)(ms >= 0 ? ms / 1000 : (ms - 999) / 1000);
    struct tm tm;
    size_t n;

    gmtime_r(&t, &tm);
    n = strftime(out, MT_RFC3339_SIZE, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(out + n, MT_RFC3339_SIZE - n, ".%03dZ", (int)((ms % 1000 + 1000) % 1000));
}

/* n decimal digits at s: 0 with *out, or -1. */
static int digits(const char *s, int n, int *out)
{
    int i, v = 0;

    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

int mt_rfc3339_parse(int64_t *out, const char *s)
{
    struct tm tm;
    int y, mo, d, h, mi, sec, ms = 0, off = 0, oh, om, scale = 100;
    const char *p;
    time_t t;

    if (!s || strlen(s) < 19 || digits(s, 4, &y) || s[4] != '-' || digits(s + 5, 2, &mo) ||
        s[7] != '-' || digits(s + 8, 2, &d) || (s[10] != 'T' && s[10] != 't') ||
        digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &mi) || s[16] != ':' ||
        digits(s + 17, 2, &sec) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 ||
        sec > 60)
        return mt_error_set(MT_EINVAL, "'%.64s' is not an RFC 3339 time (2026-01-31T12:00:00Z)",
                            s ? s : "");
    p = s + 19;
    if (*p == '.')
        for (p++; *p >= '0' && *p <= '9'; p++, scale /= 10)
            ms += (*p - '0') * scale;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && !digits(p + 1, 2, &oh) && p[3] == ':' &&
               !digits(p + 4, 2, &om)) {
        off = (oh * 60 + om) * (*p == '+' ? 1 : -1);
        p += 6;
    } else {
        return mt_error_set(MT_EINVAL, "'%.64s' has no time zone (end it with Z or +HH:MM)", s);
    }
    if (*p)
        return mt_error_set(MT_EINVAL, "'%.64s' is not an RFC 3339 time", s);
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    tm.tm_sec = sec;
    t = timegm(&tm);
    *out = ((int64_t)t - (int64_t)off * 60) * 1000 + ms;
    return 0;
}

/* A non-negative decimal number, the whole string: digits and at most one
 * '.' (no sign, space, hex or exponent, which strtod would take); -1 when it
 * is not one. */
static double number(const char *s)
{
    char *end;
    double v;

    if (!s || !*s || strspn(s, "0123456789.") != strlen(s) || strchr(s, '.') != strrchr(s, '.'))
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < 0)
        return -1;
    return v;
}

double mt_retry_after_ms(const char *retry_after_ms, const char *retry_after)
{
    double v = number(retry_after_ms);
    struct tm tm;
    const char *end;

    if (v >= 0)
        return v;
    if ((v = number(retry_after)) >= 0)
        return v * 1000;
    if (!retry_after)
        return -1;
    /* An HTTP date instead of seconds. */
    memset(&tm, 0, sizeof(tm));
    end = strptime(retry_after, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    if (!end || *end)
        return -1;
    v = difftime(timegm(&tm), time(NULL)) * 1000;
    return v > 0 ? v : 0;
}
