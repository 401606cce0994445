#!/bin/sh
# curl's banned functions, as a lint: none may appear in the C sources.
set -eu
cd "$1"
banned='strcpy|strcat|strncpy|strncat|sprintf|vsprintf|gets|atoi|atol|atoll|atof|strtok|alloca|tmpnam|tempnam|mktemp|LoadLibrary|_tcscpy|_mbscpy|wcscpy'
found=$(git ls-files '*.c' '*.h' 2>/dev/null | xargs grep -nE "(^|[^_a-zA-Z0-9])($banned)[[:space:]]*\(" || true)
if [ -n "$found" ]; then
    echo "banned functions in use:"
    echo "$found"
    echo "lint: 0 passed, 1 failed"
    exit 1
fi
echo "lint: 1 passed, 0 failed"
