/* A URL as an error message may show it: never its credentials. */
#ifndef MT_UTIL_URL_SHOWN_H
#define MT_UTIL_URL_SHOWN_H

#include <stddef.h>

/* url into out (size bytes, cut to fit), with a "user:password@" before
 * its host shown as "***@": a URL the user mistyped may carry a key. */
void mt_url_shown(char *out, size_t size, const char *url);

#endif
