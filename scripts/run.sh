#!/bin/sh
# Build everything (installing missing Debian packages first), then show
# memtool at work on a scratch store.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)"
sh scripts/demo.sh build/memtool
