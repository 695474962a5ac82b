#!/bin/bash
# Prepare the QEMU lab the interop tests (tests/interop) boot: runs the shared lab's setup.sh with
# the project's cache. Idempotent: setup.sh skips every step whose result is already in the cache
# (about 3 s and no network on a complete cache; about 70 s from an empty one). Needs root.
#   scripts/lab-setup.sh
# env: LAB_CACHE   the lab cache (default /var/cache/ratlab); tests/interop reads the same variable
#      GODAPL_LAB  the lab directory (default ../shared/lab next to the repository)
# The shared lab directory is only read: with LAB_CACHE outside it, nothing is written there.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
LAB=${GODAPL_LAB:-$REPO/../shared/lab}
[ -x "$LAB/setup.sh" ] || { echo "lab-setup.sh: no lab at $LAB (set GODAPL_LAB)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "lab-setup.sh: run as root" >&2; exit 1; }
export LAB_CACHE=${LAB_CACHE:-/var/cache/ratlab}
mkdir -p "$LAB_CACHE"
exec "$LAB/setup.sh"
