#!/bin/sh
# Install the Debian packages in scripts/debian-packages.txt that are missing.
# Idempotent and quick when everything is there: it asks dpkg before apt.
set -eu
here=$(dirname "$0")
want=$(grep -v '^[[:space:]]*#' "$here/debian-packages.txt" | tr -s ' \n' ' ')
missing=""
for p in $want; do
    # Node.js from another source (nvm, NodeSource) is fine: only the commands matter.
    case $p in
    nodejs) command -v node >/dev/null 2>&1 && continue ;;
    npm) command -v npm >/dev/null 2>&1 && continue ;;
    python3) command -v python3 >/dev/null 2>&1 && continue ;;
    esac
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "install-deps: installing:$missing" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# shellcheck disable=SC2086
$sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
