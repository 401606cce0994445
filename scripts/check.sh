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

# Then the tests again under ASan+UBSan (every test but the golden variants, of
# which a sample that covers every case and variant; with the fuzz targets), the threaded
# tests under TSan, and static analysis: see scripts/sanitize.sh.
sh scripts/sanitize.sh

# One closing line for the whole run (every step above stops the run on a failure).
count() { (cd "$1" && ctest -N ${2:+-R "$2"} | sed -n 's/^Total Tests: //p'); }
echo "check: $(( $(count build) + $(count build-san "$(cat build-san/sanitize-sample.txt)") )) passed, 0 failed"
