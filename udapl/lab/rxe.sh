#!/bin/bash
# godapl's uDAPL provider on a real RDMA device: the kernel's rxe (RoCE v2)
# in one QEMU lab VM, through a library built with the rdmacore provider
# (make udapl UDAPL_TAGS=rdmacore). Both ends of every case run in the VM
# over rxe0:
#   - godapl on both ends: dtest; dapltest -T T (SR, RW, RR, -V checks
#     every buffer); dapltest -T P; dapltest -T F (the FFT features
#     Debian's dapltest has)
#   - wire interop with OFA dapl (libdaplofa, rdma_cm, ofa-v2-rxe0-1 of
#     udapl/ofa-dat.conf): dtest and dapltest -T T, godapl as server and
#     as client
#   - lab/iarelease.c: C threads blocked in dat_evd_wait take no OS thread
#     each; dat_ia_close wakes them and releases the device
#   - dtest and dapltest -T T again on a build under GOEXPERIMENT=cgocheck2
#   - dapltest -T P RDMA Write 64 KiB on OFA dapl and on godapl in rounds
#     of OFA, godapl, godapl, OFA: each round's ratio and their median
# Prints one line per case and a summary; exits 1 if a case failed.
# Run by udapl/lab.sh (make udapl-lab); needs root.
# env: GODAPL_LAB the lab directory (default tests/lab), LAB_CACHE its cache,
#   UDAPL_LAB_RXE_VM and UDAPL_LAB_RXE_IP the VM (default udapl-rxe,
#   192.168.77.42), UDAPL_LAB_ROUNDS the -T P rounds (default 3),
#   UDAPL_LAB_LOCK a file to flock around the -T P rounds, so that no
#   other benchmark of the host runs beside them,
#   UDAPL_LAB_RXE_STEPS of: godapl interop release cgocheck perf (default all)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd -P)
LAB=${GODAPL_LAB:-$REPO/tests/lab}
export LAB_CACHE=${LAB_CACHE:-/var/cache/ratlab}
VM=${UDAPL_LAB_RXE_VM:-udapl-rxe} IP=${UDAPL_LAB_RXE_IP:-192.168.77.42}
ROUNDS=${UDAPL_LAB_ROUNDS:-3}
STEPS=${UDAPL_LAB_RXE_STEPS:-godapl interop release cgocheck perf}
LIB=$REPO/bin/libdatgodapl.so
OUT=$REPO/bin/udapl-lab/rxe
OFA=$REPO/udapl/ofa-dat.conf GD=$OUT/godapl.conf CG=$OUT/cgocheck2.conf
IA=ofa-v2-rxe0-1
PAIR=$REPO/udapl/lab/pair.sh
if ! ldd "$LIB" 2>/dev/null | grep -q libibverbs; then
	echo "rxe.sh: $LIB is not built with rdmacore: make udapl UDAPL_TAGS=rdmacore" >&2
	exit 1
fi
mkdir -p "$OUT"
rm -f "$OUT"/*.server "$OUT"/*.client
: >"$OUT/results.txt"
step() { case " $STEPS " in *" $1 "*) return 0 ;; esac; return 1; }
if step cgocheck; then
	GOEXPERIMENT=cgocheck2 CGO_ENABLED=1 go build -tags udapl,rdmacore -buildmode=c-shared \
		-o "$OUT/cgocheck2/libdatgodapl.so" "$REPO/udapl/libdatgodapl"
	rm -f "$OUT/cgocheck2/libdatgodapl.h"
fi
if step release; then
	cc -Wall -Werror -o "$OUT/iarelease" "$REPO/udapl/lab/iarelease.c" -ldat2 -lpthread
fi

vm() { "$LAB/vm.sh" exec --name "$VM" -- "$@"; }
"$LAB/vm.sh" start --name "$VM" --ip "$IP" --rdma "rxe0:rxe:eth0" --share "$REPO"
trap '"$LAB/vm.sh" stop --name "$VM"' EXIT
# The dat.conf names the ports the VM has (rxe0 port 1).
vm "$REPO/udapl/datconf.sh" --rdmacore "$LIB" >"$GD"
grep -q "\"rdmacore rxe0 1\"" "$GD" || { echo "rxe.sh: no rxe0 port in the VM" >&2; exit 1; }
sed "s|$LIB|$OUT/cgocheck2/libdatgodapl.so|" "$GD" >"$CG"

fail=0
result() { # NAME OK|FAIL DETAIL
	printf '%-4s %s: %s\n' "$2" "$1" "$3" | tee -a "$OUT/results.txt"
	[ "$2" = ok ] || fail=1
}
# dtest NAME SERVER_CONF CLIENT_CONF: dtest server and client, both PASSED.
# 64 KiB buffers: with dtest's default of 4 MiB, 2000 RDMA Writes back to
# back time out in rxe's retransmission under the lab's emulated CPU, and
# the QP is flushed with OFA dapl on both ends as with godapl.
dtest_case() {
	local o=$OUT/$1
	if vm "$PAIR" "$o" "waiting for client" "$2" "dtest -P $IA -s -b 65536" "$3" "dtest -P $IA -b 65536 -h $IP" >/dev/null &&
		grep -q "Test Complete. PASSED" "$o.server" && grep -q "Test Complete. PASSED" "$o.client"; then
		result "$1" ok "$(grep -ao 'RDMA write (bi-direction).*' "$o.client" | sed 's/.*usec, //')"
	else
		result "$1" FAIL "see $o.client and $o.server"
	fi
}
# dapltest -T T with every buffer checked: Send/Receive, RDMA Write and
# multi-segment RDMA Read both ways, 2 threads x 2 EPs.
T="-i 100 -t 2 -w 2 -V client SR 4096 server SR 1024 2 client RW 4096 1 server RW 2048 4 client RR 8192 2 server RR 4096 4 client SR 256"
tt_case() {
	local o=$OUT/$1
	if vm "$PAIR" "$o" "Service Point Ready" "$2" "dapltest -T S -D $IA" "$3" "dapltest -T T -s $IP -D $IA $T" kill >/dev/null &&
		grep -q "End of Work" "$o.client" && ! grep -aq "Error\|error" "$o.client"; then
		result "$1" ok "$(grep -a 'Total WQE' "$o.client" | head -1 | tr -s ' ')"
	else
		result "$1" FAIL "see $o.client and $o.server"
	fi
}
# perf CONF OP: one dapltest -T P against its server, the bandwidth in MB/s.
perf() {
	local o=$OUT/perf
	vm "$PAIR" "$o" "Service Point Ready" "$1" "dapltest -T S -D $IA" "$1" "dapltest -T P -s $IP -D $IA -i 2000 -p 8 -m b $2" kill >/dev/null || true
	sed -n 's/.*Bandwidth *: *\([0-9.]*\) MB\/sec.*/\1/p' "$o.client" | head -1
}

if step godapl; then
	dtest_case dtest-godapl "$GD" "$GD"
	tt_case dapltest-T-godapl "$GD" "$GD"
	for op in "RW 65536 1" "RR 65536 1" "RW 256 1"; do
		bw=$(perf "$GD" "$op")
		if [ -n "$bw" ]; then result "dapltest-T-P-godapl $op" ok "$bw MB/s"; else result "dapltest-T-P-godapl $op" FAIL "see $OUT/perf.client"; fi
	done
	# FFT: no dapltest server may run (connmgt and queryinfo create service
	# points on its port). queryinfo 13 and 15 crash in libdat2 with any
	# provider, case 5 is UNSUPP in dapltest (docs/UDAPL.md).
	qi=$(for c in $(seq 0 17); do [ "$c" = 13 ] || [ "$c" = 15 ] || printf 'case%d ' "$c"; done)
	for f in "hwconn:4" "endpoint:3" "pz:3" "mem:5" "connmgt:2" "queryinfo:15"; do
		feat=${f%%:*} want=${f#*:} cases=
		[ "$feat" = queryinfo ] && cases=$qi
		o=$OUT/fft-$feat.client
		vm env DAT_OVERRIDE="$GD" timeout 600 dapltest -T F -D $IA -s "$IP" -f "$feat" $cases >"$o" 2>&1 || true
		pass=$(grep -ac "Result: PASS" "$o" || true)
		if [ "$pass" = "$want" ] && ! grep -aq "Result: FAIL\|failed in file" "$o"; then
			result "dapltest-T-F-godapl $feat" ok "$pass PASS"
		else
			result "dapltest-T-F-godapl $feat" FAIL "$pass PASS of $want, see $o"
		fi
	done
fi
if step interop; then
	dtest_case dtest-godapl-server-ofa-client "$GD" "$OFA"
	dtest_case dtest-ofa-server-godapl-client "$OFA" "$GD"
	tt_case dapltest-T-godapl-server-ofa-client "$GD" "$OFA"
	tt_case dapltest-T-ofa-server-godapl-client "$OFA" "$GD"
fi
if step release; then
	if vm env DAT_OVERRIDE="$GD" timeout 600 "$OUT/iarelease" $IA 3 >"$OUT/iarelease.txt" 2>&1; then
		result iarelease ok "$(grep -a 'threads more' "$OUT/iarelease.txt" | head -1 | sed 's/^ok *//')"
	else
		result iarelease FAIL "$(grep -a FAIL "$OUT/iarelease.txt" | head -1)"
	fi
fi
if step cgocheck; then
	dtest_case dtest-godapl-cgocheck2 "$CG" "$CG"
	tt_case dapltest-T-godapl-cgocheck2 "$CG" "$CG"
fi
if step perf; then
	# Rounds of OFA, godapl, godapl, OFA (udapl/lab/ratio.sh).
	. "$REPO/udapl/lab/ratio.sh"
	rounds() {
		local ratios= r o1 g1 g2 o2 ratio
		echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
		for r in $(seq "$ROUNDS"); do
			o1=$(perf "$OFA" "RW 65536 1") g1=$(perf "$GD" "RW 65536 1")
			g2=$(perf "$GD" "RW 65536 1") o2=$(perf "$OFA" "RW 65536 1")
			ratio=$(round_ratio "$o1" "$g1" "$g2" "$o2")
			echo "dapltest -T P RW 65536 over rxe0, round $r: OFA dapl $o1 $o2 MB/s, libdatgodapl $g1 $g2 MB/s, ratio $ratio"
			[ "$ratio" = - ] || ratios="$ratios $ratio"
		done
		median_ratio $ratios
		echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
	}
	if [ -n "${UDAPL_LAB_LOCK:-}" ]; then
		export -f rounds perf vm round_ratio median_ratio
		export OFA GD OUT PAIR IA IP LAB VM ROUNDS
		flock "$UDAPL_LAB_LOCK" bash -c rounds | tee "$OUT/perf.txt"
	else
		rounds | tee "$OUT/perf.txt"
	fi
	grep -q "^median" "$OUT/perf.txt" || result dapltest-T-P-ratio FAIL "no round completed"
fi
echo "== rxe: $(grep -c '^ok' "$OUT/results.txt" || true) ok, $(grep -c '^FAIL' "$OUT/results.txt" || true) failed"
exit $fail
