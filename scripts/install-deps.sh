#!/usr/bin/env bash
# Installs the system tools the tests drive, with apt, when they are
# missing: iproute2 (ip, tc, ss) for the network-namespace tests under
# tests/ (tests/internal/netns, tests/faults). Idempotent and quiet: it
# prints nothing when everything is present, and does nothing without
# root or apt (the tests that need the tools then skip and say why).
set -euo pipefail

need=()
command -v ip >/dev/null 2>&1 || need+=(iproute2)
command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v ss >/dev/null 2>&1 || need+=(iproute2)
# Deduplicate: one package provides all three.
mapfile -t need < <(printf '%s\n' "${need[@]}" | sort -u | sed '/^$/d')
[ ${#need[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "install-deps: missing ${need[*]} (need root and apt-get to install; namespace tests will skip)" >&2
	exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get -qq update >/dev/null
apt-get -qq install -y --no-install-recommends "${need[@]}" >/dev/null
