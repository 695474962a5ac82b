#!/usr/bin/env bash
# Runs every Fuzz target of the module for FUZZTIME each (default 30s).
# `make fuzz` runs the long version; CI runs it with a short FUZZTIME.
# New corpus entries that crash are written by Go under testdata/fuzz and
# should be committed with the fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime=${FUZZTIME:-30s}
status=0
for pkg in $(go list ./...); do
	targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for t in $targets; do
		echo "== $pkg $t ($fuzztime)"
		if ! go test -run='^$' -fuzz="^${t}\$" -fuzztime="$fuzztime" "$pkg"; then
			status=1
		fi
	done
done
exit $status
