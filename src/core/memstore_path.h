/* The memory-store API's rules for paths (the pure checks are in util/api_path.h, beneath
 * the stores), as the core checks a create or a rename against them. */
#ifndef MT_MEMSTORE_PATH_H
#define MT_MEMSTORE_PATH_H

#include "util/api_path.h"

#endif
