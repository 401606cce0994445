#!/bin/sh
# `npm ci` in the current directory, skipped when node_modules was made by
# this same command from this same package.json and package-lock.json:
#
#   sh scripts/npm-ci.sh NPM [ARGS...]      (runs NPM ci ARGS...)
#
# The test command builds and tests twice (plain, then under the sanitizers)
# in one source tree, and each test folder's fixture ran `npm ci`, which
# deletes node_modules and installs it again, on every pass. A stamp in
# node_modules (the SHA-256 of the two files and the arguments) is written
# only after an install succeeds, and npm ci removes it with the rest.
set -eu
[ $# -ge 1 ] || {
    echo "usage: npm-ci.sh NPM [ARGS...]" >&2
    exit 2
}
npm=$1
shift
stamp=node_modules/.memtool-npm-ci
want=$( (cat package.json package-lock.json && echo "$*") | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    echo "npm-ci: node_modules is as package-lock.json says (installed by npm ci): kept"
    exit 0
fi
"$npm" ci "$@"
echo "$want" >"$stamp"
