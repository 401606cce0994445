/* What the front ends that show a version's diff share: which version it is
 * a diff against (memtool diff, memtool server's diff call). */
#ifndef MT_CORE_VERSION_BASE_H
#define MT_CORE_VERSION_BASE_H

#include <stddef.h>
#include <stdint.h>

#include <memtool.h>

/*
 * The version v is compared with: the newest earlier version of the same
 * memory that is not redacted (a redacted one has no content to compare; a
 * deletion counts, as no content), moved into *out (id 0 when there is
 * none). The redacted ones passed over, newest first, are put in *skipped
 * (malloc'd; NULL when none), and counted in *nskipped. 0, or an error
 * (*out and *skipped are then empty).
 */
int mt_history_find_base(mt_version *out, int64_t **skipped, size_t *nskipped, mt_memory *mem,
                         const mt_version *v);

#endif
