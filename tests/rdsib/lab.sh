#!/bin/bash
# RDS over DAT against the kernel's RDS over RDMA (rds_rdma) on RoCE, in
# two VMs of the QEMU lab joined by rxe: first godapl on both (the dat
# transport on the kernel's wire: rds-cat's 10,000 datagrams checked
# byte for byte, rds-stress with RDMA), then the kernel's AF_RDS on VM1
# (testdata/kpeer.py, rds_rdma loaded) against godapl on VM2 (the Go
# tests of this directory). Run from the repository root as root
# (make rds-ib-lab).
#   env: LAB        the lab directory (vm.sh)
#        LAB_CACHE  the lab cache
#        VM1_NAME, VM1_IP  the kernel's VM (default ib1, 192.168.77.31)
#        VM2_NAME, VM2_IP  godapl's VM (default ib2, 192.168.77.32)
#        RUN        -test.run pattern for the Go tests (default all)
#        PAIR       0: skip the godapl-to-godapl part
set -euo pipefail
REPO=$(pwd -P)
: "${LAB:?set LAB to the lab directory}"
export LAB_CACHE=${LAB_CACHE:-/var/cache/ratlab}
N1=${VM1_NAME:-ib1}
IP1=${VM1_IP:-192.168.77.31}
N2=${VM2_NAME:-ib2}
IP2=${VM2_IP:-192.168.77.32}
BIN=$REPO/bin/rdsib
IA=ofa-v2-rxe0-1
mkdir -p "$BIN"

vm() { "$LAB/vm.sh" "$@"; }

go test -c -tags rdmacore -o "$BIN/rdsib.test" ./tests/rdsib
go build -tags rdmacore -o "$BIN/rds-cat" ./cmd/rds-cat
go build -tags rdmacore -o "$BIN/rds-stress" ./cmd/rds-stress

trap 'vm stop --name "$N1" >/dev/null 2>&1 || true; vm stop --name "$N2" >/dev/null 2>&1 || true' EXIT
vm start --name "$N1" --ip "$IP1" --rdma "rxe0:rxe:eth0" --share "$REPO"
vm start --name "$N2" --ip "$IP2" --rdma "rxe0:rxe:eth0" --share "$REPO"

status=0
pair() {
	echo "== godapl on both VMs over rxe (the kernel's wire): rds-cat, 10,000 datagrams $IP2 -> $IP1"
	awk 'BEGIN { srand(21); split("0 1 17 100 512 1000 1500 4000 9000", n, " ")
		for (i = 0; i < 10000; i++) { s = sprintf("%05d ", i); k = n[1 + int(rand() * 9)]
			for (j = 0; j < k; j++) s = s sprintf("%c", 97 + (i + j) % 26); print s } }' >"$BIN/rds-cat-in.txt"
	rm -f "$BIN/rds-cat-out.txt"
	vm exec --name "$N1" -- timeout 400 "$BIN/rds-cat" -l -b "$IP1:5000" --transport dat --ia $IA --count 10000 \
		--timeout 360s >"$BIN/rds-cat-out.txt" 2>"$BIN/rds-cat-listen.txt" &
	job=$!
	# No wait for the listener: until it binds, its node has no listener and
	# the sender's transport keeps reconnecting with its messages queued.
	if vm exec --name "$N2" -- timeout 400 "$BIN/rds-cat" -b "$IP2:5001" "$IP1:5000" --transport dat --ia $IA \
		-f "$BIN/rds-cat-in.txt" --timeout 60s && wait $job && cmp "$BIN/rds-cat-in.txt" "$BIN/rds-cat-out.txt"; then
		echo "   $(wc -l <"$BIN/rds-cat-out.txt") datagrams, identical and in order"
	else
		status=1
		cat "$BIN/rds-cat-listen.txt"
	fi
	echo "== godapl on both VMs over rxe (the kernel's wire): rds-stress with RDMA $IP2 -> $IP1"
	vm exec --name "$N1" -- timeout 120 "$BIN/rds-stress" --transport dat --ia $IA -r "$IP1" -p 4000 \
		>"$BIN/rds-stress-passive.txt" 2>&1 &
	job=$!
	if vm exec --name "$N2" -- timeout 120 "$BIN/rds-stress" -s "$IP1" -p 4000 --transport dat --ia $IA -T 5 -t 3 -d 4 \
		-q 64,4K,64K -D 64K >"$BIN/rds-stress.txt" 2>&1 && wait $job; then
		grep -E '^ +all ' "$BIN/rds-stress.txt" | sed 's/^/   /'
	else
		status=1
		tail -n 5 "$BIN/rds-stress.txt" "$BIN/rds-stress-passive.txt"
	fi
}
[ "${PAIR:-1}" = 0 ] || pair

echo "== the kernel's rds_rdma on $N1 against godapl on $N2"
vm exec --name "$N1" -- modprobe rds_rdma
vm exec --name "$N1" -- python3 "$REPO/tests/rdsib/testdata/kpeer.py" "$IP1" 7700 >"$BIN/kpeer.txt" 2>&1 &
kjob=$!
for _ in $(seq 300); do grep -q "kpeer listening" "$BIN/kpeer.txt" 2>/dev/null && break; sleep 0.1; done
if ! vm exec --name "$N2" -- env RDSIB_LOCAL="$IP2" RDSIB_PEER="$IP1" RDSIB_CTL="$IP1:7700" \
	"$BIN/rdsib.test" -test.run "${RUN:-.}" -test.v -test.timeout 30m >"$BIN/rdsib.txt" 2>&1; then
	status=1
fi
grep -E -- '^(=== RUN|\s*--- (PASS|FAIL|SKIP)|PASS|FAIL|ok)|_test.go:[0-9]+' "$BIN/rdsib.txt" | grep -v '=== RUN' || true
vm killjobs --name "$N1" >/dev/null 2>&1 || true
wait $kjob 2>/dev/null || true
exit $status
