#!/bin/bash
# Prepare the QEMU lab (tests/lab) that `make interop`, `make lab-bench` and `make rds-lab-bench`
# boot: runs the lab's setup.sh with the project's cache. Idempotent: setup.sh skips every step
# whose result is already in the cache (a few seconds and no network on a complete cache). Needs
# root.
#   scripts/lab-setup.sh
# env: LAB_CACHE   the lab cache (default /var/cache/ratlab); tests/interop reads the same variable
#      GODAPL_LAB  the lab directory (default tests/lab of this repository)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
LAB=${GODAPL_LAB:-$REPO/tests/lab}
[ -x "$LAB/setup.sh" ] || { echo "lab-setup.sh: no lab at $LAB (set GODAPL_LAB)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "lab-setup.sh: run as root" >&2; exit 1; }
export LAB_CACHE=${LAB_CACHE:-/var/cache/ratlab}
exec "$LAB/setup.sh"
