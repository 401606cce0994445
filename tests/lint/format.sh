#!/bin/sh
# Every C file is as clang-format (with the committed .clang-format) makes it.
set -eu
cd "$1"
bad=$(git ls-files '*.c' '*.h' | while read -r f; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$bad" ]; then
    echo "not clang-formatted (run clang-format -i on them):"
    echo "$bad"
    echo "lint: 0 passed, 1 failed"
    exit 1
fi
echo "lint: 1 passed, 0 failed"
