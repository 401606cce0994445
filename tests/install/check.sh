#!/bin/sh
# Install into a scratch prefix as a user would, then build the example
# against the installed library with pkg-config only, and run it (shared and
# static), comparing its output with examples/expected.txt.
set -eu
build=$1 src=$2 extra=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
lib=$(ls -d "$tmp"/prefix/lib*/ | head -n 1)
export PKG_CONFIG_PATH="$lib/pkgconfig"
test -f "$tmp/prefix/include/memtool.h"
test -f "$tmp/prefix/include/memtool/store.h"
test -x "$tmp/prefix/bin/memtool"
"$tmp/prefix/bin/memtool" --version | grep -q '^memtool [0-9]'
# A real soname, and the static archive next to it.
readelf -d "$lib/libmemtool.so" | grep -q 'SONAME.*libmemtool\.so\.0'
test -f "$lib/libmemtool.a"
cc $extra "$src/examples/embed.c" $(pkg-config --cflags --libs memtool) -o "$tmp/embed"
LD_LIBRARY_PATH="$lib" "$tmp/embed" "$tmp/store-shared" > "$tmp/out-shared"
diff -u "$src/examples/expected.txt" "$tmp/out-shared"
# The archive with its dependencies (from Requires.private, and Libs.private
# as memtool.pc states it) linked as shared libraries.
deps=$(pkg-config --print-requires-private memtool | tr '\n' ' ')
private=$(pkg-config --static --libs-only-l --libs-only-other memtool | sed 's/-lmemtool\b//')
cc $extra "$src/examples/embed.c" $(pkg-config --cflags memtool) "$lib/libmemtool.a" \
    $(pkg-config --libs $deps) $private -o "$tmp/embed-static"
"$tmp/embed-static" "$tmp/store-static" > "$tmp/out-static"
diff -u "$src/examples/expected.txt" "$tmp/out-static"
echo "install: 1 passed, 0 failed"
