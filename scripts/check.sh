#!/bin/sh
# The test command: build and run every test, then the hardening runs.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
jobs=$(nproc 2>/dev/null || echo 2)

echo "== build and test (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")

# A release build too: -O3 inlines more, and GCC's flow warnings (maybe-
# uninitialized, nonnull) then see paths -O2 does not; -Werror makes them fail.
echo "== build (Release)"
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build-release -j "$jobs"

# Then every test again under ASan+UBSan (with the fuzz targets), the threaded
# tests under TSan, and static analysis: see scripts/sanitize.sh.
sh scripts/sanitize.sh

# One closing line for the whole run (every step above stops the run on a failure).
count() { (cd "$1" && ctest -N | sed -n 's/^Total Tests: //p'); }
echo "check: $(( $(count build) + $(count build-san) )) passed, 0 failed"
