#!/bin/bash
# The rdmacore provider against the kernel's RDMA devices, in one boot of
# the QEMU lab: the verbs conformance suite on rxe (RoCE) and on siw
# (iWARP), once more under GOEXPERIMENT=cgocheck2, the hot-path
# benchmarks beside perftest's ib_write_bw and ib_send_bw on the same rxe
# device, interleaved, godapl's pure-Go siw on the host against
# rdmacore on the kernel's siw (tests/rdmacore/internal/peer), each end
# passive once, port events with eth0 taken down under rxe, and RDS over
# DAT over rdmacore between two VMs on rxe: rds-stress (with RDMA) and
# rds-cat's 10,000 datagrams of mixed sizes, checked byte for byte and
# in order. Run from the repository root as root (make rdmacore-lab).
#   env: LAB        the lab directory (vm.sh)
#        LAB_CACHE  the lab cache
#        REPS       benchmark repetitions (default 3)
#        VM_NAME, VM_IP  the VM (default rdmacore, 192.168.77.21)
#        VM2_NAME, VM2_IP  the RDS peer VM (default rdmacore2, .22)
#        DAT_STRICT      1: a failing DAT suite fails the run (it is
#                        reported either way)
#        STEPS      the steps to run, of: rxe-suite rping rxe-dat rds
#                   port-events cgo bench cloop split sched siw-suite
#                   interop siw-dat (default all but cloop, split and
#                   sched, in that order)
#        BUSY_POLL  the BusyPoll setting (GODAPL_RDMACORE_BUSY_POLL) of
#                   the rdmacore Send row; the bench step also times
#                   godapl without it (default 256)
#        INTEROP_REPS    how many times the interop step runs (default 1)
#        HOST_PORT  the first port of the host end of the interop step
#                   (default from the VM's address, so that runs with
#                   distinct VMs never share one in the lab's netns)
set -euo pipefail
REPO=$(pwd -P)
: "${LAB:?set LAB to the lab directory}"
export LAB_CACHE=${LAB_CACHE:-/var/cache/ratlab}
REPS=${REPS:-3}
NAME=${VM_NAME:-rdmacore}
IP=${VM_IP:-192.168.77.21}
NAME2=${VM2_NAME:-rdmacore2}
IP2=${VM2_IP:-192.168.77.22}
BIN=$REPO/bin/rdmacore
STEPS=${STEPS:-rxe-suite rping rxe-dat rds port-events cgo bench siw-suite interop siw-dat}
BUSY_POLL=${BUSY_POLL:-256}
INTEROP_REPS=${INTEROP_REPS:-1}
HOST_PORT=${HOST_PORT:-$((20000 + ${IP##*.} * 100))}
# step NAME: whether NAME is one of the steps to run.
step() { [[ " $STEPS " == *" $1 "* ]]; }
mkdir -p "$BIN"

vm() { "$LAB/vm.sh" "$@"; }
vmx() { vm exec --name "$NAME" -- "$@"; }

go test -c -tags rdmacore -o "$BIN/rdmacore.test" ./verbs/rdmacore
go test -c -tags rdmacore -o "$BIN/cgocost.test" ./verbs/rdmacore/internal/cgocost
go build -tags rdmacore -o "$BIN/peer" ./tests/rdmacore/internal/peer
go build -tags rdmacore -o "$BIN/rping" ./cmd/rping
go test -c -tags rdmacore -o "$BIN/dattest.test" ./dat/dattest
go build -tags rdmacore -o "$BIN/rds-stress" ./cmd/rds-stress
go build -tags rdmacore -o "$BIN/rds-cat" ./cmd/rds-cat
GOEXPERIMENT=cgocheck2 go test -c -tags rdmacore -o "$BIN/rdmacore-cgocheck2.test" ./verbs/rdmacore
# The same with perftest's local ACK timeout (14: 67 ms) on the QPs, for
# the comparison of the Write paths.
CGO_CFLAGS="${CGO_CFLAGS:--O2 -g} -DGD_ACK_TIMEOUT=14" go test -c -tags rdmacore -o "$BIN/rdmacore-ack14.test" ./verbs/rdmacore

vm start --name "$NAME" --ip "$IP" --rdma "rxe0:rxe:eth0" --share "$REPO"
CAPTURE=
trap 'vm stop --name "$NAME" >/dev/null 2>&1 || true; vm stop --name "$NAME2" >/dev/null 2>&1 || true; [ -z "$CAPTURE" ] || kill "$CAPTURE" 2>/dev/null || true' EXIT

status=0
# suite DEVICE BINARY: the conformance suite on one device.
suite() {
	echo "== conformance on $1 ($(basename "$2"))"
	if ! vmx env GODAPL_RDMACORE_DEVICE="$1" GODAPL_RDMACORE_ADDR="$IP" "$2" \
		-test.run 'TestConformance|TestDevices|TestHotPathAllocs|TestFaults|TestPrivData|TestPrivLimit|TestBusyPoll|TestQPPath|TestMinRNRTimer|TestRetryCount|TestYielder|TestPollYields|TestPollLockedLeavesYield|TestCQWait' -test.v -test.timeout 15m >"$BIN/suite-$1-$(basename "$2").txt" 2>&1; then
		status=1
		grep -E -- '--- FAIL|^\s+[a-z_]+\.go:[0-9]+' "$BIN/suite-$1-$(basename "$2").txt" | grep -v harness.go || true
	fi
	grep -cE -- '--- PASS' "$BIN/suite-$1-$(basename "$2").txt" | sed 's/^/   passed: /'
	grep -cE -- '--- SKIP' "$BIN/suite-$1-$(basename "$2").txt" | sed 's/^/   skipped: /'
	tail -1 "$BIN/suite-$1-$(basename "$2").txt"
}

# dat DEVICE: the DAT suite (dat/dattest) over the device's IA.
dat() {
	local out=$BIN/dat-$1.txt
	echo "== DAT suite over ofa-v2-$1-1"
	if vmx env GODAPL_RDMACORE_DEVICE="$1" "$BIN/dattest.test" -test.run TestRdmacore -test.v -test.timeout 15m >"$out" 2>&1; then
		echo "   PASS"
	else
		[ "${DAT_STRICT:-0}" = 1 ] && status=1
		grep -E -- '^\s+--- FAIL' "$out" | sed 's/^ */   /'
	fi
	grep -cE -- '--- PASS' "$out" | sed 's/^/   passed: /'
}

# rping_interop: godapl's rping over rdmacore against rdma-core's rping
# on rxe0, each as the server once. A server serves one connection; the
# timeouts end one whose client never came.
rping_interop() {
	echo "== rping: rdma-core rping -s, godapl rping --provider rdmacore -c"
	if vmx sh -c "timeout 60 rping -s -a $IP -p 7400 -C 5 -V >/dev/null 2>&1 & sleep 2; \
		timeout 60 $BIN/rping --provider rdmacore -c -a $IP -p 7400 -C 5 -V; c=\$?; wait \$!; exit \$((c | \$?))"; then
		echo "   both rc 0"
	else
		status=1
	fi
	echo "== rping: godapl rping --provider rdmacore -s, rdma-core rping -c"
	local out=$BIN/rping-server.txt
	rm -f "$out"
	# The client starts once the server says it listens (-d).
	if vmx sh -c "timeout 60 $BIN/rping --provider rdmacore -s -d -a $IP -p 7401 -C 5 -V >$out 2>&1 & \
		for i in \$(seq 300); do grep -q rdma_listen $out && break; sleep 0.1; done; \
		timeout 60 rping -c -a $IP -p 7401 -C 5 -V; c=\$?; wait \$!; exit \$((c | \$?))"; then
		echo "   both rc 0"
	else
		status=1
		cat "$out"
	fi
}

# perftest TOOL SIZE N [ARGS]: wall-clock seconds of one server+client run of N
# iterations (perftest's own figures are meaningless under TCG, whose
# cycle calibration fails), or nan when the client failed. The client
# starts once the server listens; both are bounded, as a server
# whose client failed to connect waits for ever.
perftest() {
	local port=$((18500 + RANDOM % 1000))
	# The server's output is buffered until it ends: wait for its port.
	vmx sh -c "timeout 600 $1 -d rxe0 -s $2 -n $3 -F -p $port ${4:-} >/dev/null 2>&1 & \
		for i in \$(seq 200); do ss -ltn | grep -q ':$port ' && break; sleep 0.05; done; \
		s=\$(date +%s.%N); timeout 600 $1 -d rxe0 -s $2 -n $3 -F -p $port ${4:-} $IP >/dev/null 2>&1; c=\$?; e=\$(date +%s.%N); \
		wait \$!; [ \$c = 0 ] && echo \"\$s \$e\" || echo 'nan nan'" |
		awk '$1 == "nan" { print "nan"; next } { printf "%.6f\n", $2 - $1 }'
}

# rate SHORT LONG SHORT_S LONG_S: operations per second from the
# difference of a short and a long run, which cancels the connection
# setup (the long run should last seconds: setup varies by about one).
rate() {
	awk -v s="$3" -v l="$4" -v n=$(($2 - $1)) 'BEGIN { if (s == "nan" || l == "nan") print "nan"; else printf "%.1f\n", n / (l - s) }'
}

# perf_rate TOOL SIZE SHORT LONG [ARGS]: perftest's messages per second.
perf_rate() {
	rate "$3" "$4" "$(perftest "$1" "$2" "$3" "${5:-}")" "$(perftest "$1" "$2" "$4" "${5:-}")"
}

# ours BENCH N [SPINS [ENV]]: wall-clock seconds of one run of the test
# binary that runs one of the package's benchmarks for N operations, its
# CQ polls spinning SPINS times (BusyPoll; default 0), with the
# environment ENV (NAME=VALUE words, e.g. GOMAXPROCS=2) added: the whole
# process, as perftest is timed, setup included; nan when it failed.
ours() {
	vmx sh -c "s=\$(date +%s.%N); timeout 600 env GODAPL_RDMACORE_DEVICE=rxe0 GODAPL_RDMACORE_ADDR=$IP \
		GODAPL_RDMACORE_BUSY_POLL=${3:-0} ${4:-} $BIN/rdmacore.test \
		-test.run '^\$' -test.bench '^$1\$' -test.benchtime $2x >/dev/null 2>&1; c=\$?; e=\$(date +%s.%N); \
		[ \$c = 0 ] && echo \"\$s \$e\" || echo 'nan nan'" |
		awk '$1 == "nan" { print "nan"; next } { printf "%.6f\n", $2 - $1 }'
}

# ours_rate BENCH SHORT LONG [SPINS [ENV]]: operations per second as
# perf_rate measures perftest.
ours_rate() {
	rate "$2" "$3" "$(ours "$1" "$2" "${4:-0}" "${5:-}")" "$(ours "$1" "$3" "${4:-0}" "${5:-}")"
}

# counters: rxe0's port counters, one "name value" a line.
counters() {
	vmx sh -c 'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f $(cat $f)"; done'
}

# counted LABEL COMMAND...: runs COMMAND (which prints its result) and
# then the counters that moved during it, as "COUNTERS LABEL name +n".
counted() {
	local label=$1 before after
	shift
	before=$(counters)
	"$@"
	after=$(counters)
	join <(echo "$before") <(echo "$after") |
		awk -v l="$label" '$3 != $2 { printf "COUNTERS %s %s +%d\n", l, $1, $3 - $2 }' >&2
}

# rds: RDS over DAT over rdmacore, the dat transport on each VM's
# ofa-v2-rxe0-1 IA: rds-stress with RDMA of mixed request sizes, then
# rds-cat sending 10,000 datagrams of mixed sizes (0 to 9,000 bytes
# after a 6-byte sequence number), one per line, that must come out at
# the listener identical and in order.
rds() {
	local ia=ofa-v2-rxe0-1
	echo "== RDS over DAT over rdmacore: rds-stress $IP -> $IP2 ($ia)"
	vm start --name "$NAME2" --ip "$IP2" --rdma "rxe0:rxe:eth0" --share "$REPO"
	vm exec --name "$NAME2" -- timeout 120 "$BIN/rds-stress" --transport dat --ia $ia -r "$IP2" -p 4000 >"$BIN/rds-stress-passive.txt" 2>&1 &
	local job=$!
	sleep 3
	if vmx timeout 120 "$BIN/rds-stress" -s "$IP2" -p 4000 --transport dat --ia $ia -T 5 -t 3 -d 4 -q 64,4K,64K -D 64K >"$BIN/rds-stress.txt" 2>&1 && wait $job; then
		grep -E '^ +all ' "$BIN/rds-stress.txt" | sed 's/^/   /'
	else
		status=1
		tail -n 5 "$BIN/rds-stress.txt" "$BIN/rds-stress-passive.txt"
	fi
	echo "== RDS over DAT over rdmacore: rds-cat, 10,000 datagrams $IP -> $IP2"
	awk 'BEGIN { srand(20); split("0 1 17 100 512 1000 1500 4000 9000", n, " ")
		for (i = 0; i < 10000; i++) { s = sprintf("%05d ", i); k = n[1 + int(rand() * 9)]
			for (j = 0; j < k; j++) s = s sprintf("%c", 97 + (i + j) % 26); print s } }' >"$BIN/rds-cat-in.txt"
	rm -f "$BIN/rds-cat-out.txt"
	vm exec --name "$NAME2" -- timeout 400 "$BIN/rds-cat" -l -b "$IP2:5000" --transport dat --ia $ia --count 10000 --timeout 360s >"$BIN/rds-cat-out.txt" 2>"$BIN/rds-cat-listen.txt" &
	job=$!
	sleep 3
	if vmx timeout 400 "$BIN/rds-cat" -b "$IP:5001" "$IP2:5000" --transport dat --ia $ia -f "$BIN/rds-cat-in.txt" --timeout 60s && wait $job &&
		cmp "$BIN/rds-cat-in.txt" "$BIN/rds-cat-out.txt"; then
		echo "   $(wc -l <"$BIN/rds-cat-out.txt") datagrams, $(wc -c <"$BIN/rds-cat-out.txt") bytes, identical and in order"
	else
		status=1
		cat "$BIN/rds-cat-listen.txt"
	fi
	vm stop --name "$NAME2"
}

# port_events: rxe's port follows eth0; TestPortEvents takes it down and
# up and wants PORT_ERR and PORT_ACTIVE. After that bounce rxe (Linux
# 6.1) no longer delivers to its own address (rdma-core's rping hangs
# too) until the link is made again, so the step ends by remaking it.
port_events() {
	echo "== port events on rxe0 (ip link set eth0 down/up)"
	if vmx env GODAPL_RDMACORE_DEVICE=rxe0 GODAPL_RDMACORE_ADDR="$IP" GODAPL_RDMACORE_NETDEV=eth0 \
		"$BIN/rdmacore.test" -test.run TestPortEvents -test.v -test.timeout 5m >"$BIN/port-events.txt" 2>&1; then
		grep -E 'over a downed port|^--- ' "$BIN/port-events.txt" | sed 's/^ */   /'
	else
		status=1
		cat "$BIN/port-events.txt"
	fi
	vmx sh -c 'rdma link del rxe0 && rdma link add rxe0 type rxe netdev eth0'
}

if step rxe-suite; then
	suite rxe0 "$BIN/rdmacore.test"
	suite rxe0 "$BIN/rdmacore-cgocheck2.test"
fi
step rping && rping_interop
step rxe-dat && dat rxe0
step rds && rds
step port-events && port_events

# cgo: what a crossing from Go into C costs on the host and in the VM,
# with and without #cgo noescape/nocallback, and how many crossings each
# side of BenchmarkSendRate64 makes per message, without BusyPoll and
# with it; then the path of rdma_cm's QPs beside perftest's.
cgo_step() {
	echo "== one cgo call (ns/op): host, then the VM"
	"$BIN/cgocost.test" -test.run '^$' -test.bench Crossing -test.benchtime 2000000x -test.count 3 | grep ^Benchmark | sed 's/^/   host /'
	vmx "$BIN/cgocost.test" -test.run '^$' -test.bench Crossing -test.benchtime 200000x -test.count 3 | grep ^Benchmark | sed 's/^/   vm   /'
	echo "== crossings per message of BenchmarkSendRate64 (92000 Sends)"
	for spins in 0 $BUSY_POLL; do
		vmx env GODAPL_RDMACORE_DEVICE=rxe0 GODAPL_RDMACORE_ADDR="$IP" GODAPL_RDMACORE_BUSY_POLL=$spins "$BIN/rdmacore.test" \
			-test.run '^$' -test.bench '^BenchmarkSendRate64$' -test.benchtime 92000x | grep ^Benchmark | sed "s/^/   busy-poll $spins: /"
	done
	echo "== BenchmarkWrite64K (3200 Writes): the longest wait for a completion, rxe0's counters"
	for t in rdmacore rdmacore-ack14 rdmacore rdmacore-ack14; do
		counted "$t" vmx env GODAPL_RDMACORE_DEVICE=rxe0 GODAPL_RDMACORE_ADDR="$IP" "$BIN/$t.test" \
			-test.run '^$' -test.bench '^BenchmarkWrite64K$' -test.benchtime 3200x 2>&1 | grep -E '^Benchmark|^COUNTERS' | sed "s/^/   $t: /"
	done
	echo "== QP path: rdma_cm's (TestQPPath) and perftest's (its header)"
	for t in rdmacore rdmacore-ack14; do
		vmx env GODAPL_RDMACORE_DEVICE=rxe0 GODAPL_RDMACORE_ADDR="$IP" "$BIN/$t.test" -test.run '^TestQPPath$' -test.v |
			grep -E 'QP [0-9]+:' | sed "s/^ */   $t: /"
	done
	vmx sh -c "f=/tmp/perftest-hdr.txt; timeout 120 ib_write_bw -d rxe0 -s 65536 -n 200 -F -p 18499 >\$f 2>&1 & \
		for i in \$(seq 100); do grep -qs 'Waiting for client' \$f && break; sleep 0.1; done; \
		timeout 120 ib_write_bw -d rxe0 -s 65536 -n 200 -F -p 18499 $IP; wait" 2>&1 |
		grep -E 'Mtu|Outstand|TX depth|CQ Moder|Link type|QPN' | sed 's/^ */   perftest: /'
}
step cgo && cgo_step

bench() {
	echo "== benchmarks on rxe0 (operations per second; ours / perftest)"
	for r in $(seq "$REPS"); do
		pw=$(counted perftest_write perf_rate ib_write_bw 65536 200 3200)
		ow=$(counted rdmacore_write ours_rate BenchmarkWrite64K 200 3200)
		owl=$(ours_rate BenchmarkWrite64KLocked 200 3200)
		ps=$(perf_rate ib_send_bw 64 2000 92000)
		os=$(ours_rate BenchmarkSendRate64 2000 92000)
		ob=$(ours_rate BenchmarkSendRate64 2000 92000 "$BUSY_POLL")
		# Both ends asleep on the completion channel: ib_send_bw -e.
		pe=$(perf_rate ib_send_bw 64 2000 92000 -e)
		oe=$(ours_rate BenchmarkSendRate64Event 2000 92000)
		# The same Send stream with both loops in C on the provider's
		# QPs, and in Go without the provider's Go code (internal/cloop).
		oc=$(ours_rate BenchmarkSendRate64C 2000 92000)
		or=$(ours_rate BenchmarkSendRate64Raw 2000 92000)
		# The Go loops with their goroutines locked to their threads.
		ol=$(ours_rate BenchmarkSendRate64Locked 2000 92000)
		echo "RESULT perftest_write_64k $pw op/s"
		echo "RESULT rdmacore_write_64k $ow op/s"
		echo "RESULT rdmacore_write_64k_locked $owl op/s"
		echo "RESULT perftest_send_64 $ps op/s"
		echo "RESULT rdmacore_send_64 $os op/s"
		echo "RESULT rdmacore_send_64_busy_poll_$BUSY_POLL $ob op/s"
		echo "RESULT perftest_send_64_events $pe op/s"
		echo "RESULT rdmacore_send_64_events $oe op/s"
		echo "RESULT rdmacore_send_64_c_loops $oc op/s"
		echo "RESULT rdmacore_send_64_raw_go_loops $or op/s"
		echo "RESULT rdmacore_send_64_locked $ol op/s"
		awk -v a="$ow" -v b="$pw" -v c="$os" -v d="$ps" -v e="$ob" -v f="$oe" -v g="$pe" -v h="$oc" -v i="$or" -v j="$ol" -v k="$owl" \
			'function r(x, y) { return x == "nan" || y == "nan" ? "nan" : sprintf("%.3f", x / y) }
			BEGIN { printf "RESULT ratio_write_64k %s x\nRESULT ratio_send_64 %s x\nRESULT ratio_send_64_busy_poll %s x\n", r(a, b), r(c, d), r(e, d)
				printf "RESULT ratio_send_64_events %s x\nRESULT ratio_send_64_events_to_spinning %s x\n", r(f, g), r(f, d)
				printf "RESULT ratio_send_64_c_loops %s x\nRESULT ratio_send_64_raw_go_loops %s x\n", r(h, d), r(i, d)
				printf "RESULT ratio_send_64_locked %s x\nRESULT ratio_write_64k_locked %s x\n", r(j, d), r(k, b) }'
	done 2>&1 | tee "$BIN/bench.txt"

	echo "== DAT over rdmacore against bare rdmacore verbs on rxe0 (dat/verbs CPU per op, paired blocks)"
	vmx env GODAPL_RDMACORE_DEVICE=rxe0 GODAPL_RDMACORE_ADDR="$IP" "$BIN/dattest.test" -test.run '^$' \
		-test.bench 'DTOPaired/rdmacore/(send|write)/(64B|4KiB)$' -test.benchtime 40000x |
		awk '/dat\/verbs/ { for (i = 1; i <= NF; i++) if ($(i+1) == "dat/verbs") printf "RESULT %s %s x\n", $1, $i }' |
		tee -a "$BIN/bench.txt"
}
step bench && bench

# ratio A B: A / B to three places, nan when either is.
ratio() {
	awk -v a="$1" -v b="$2" 'BEGIN { print a == "nan" || b == "nan" ? "nan" : sprintf("%.3f", a / b) }'
}

# send_variants LABEL:BENCH:SPINS:ENV...: REPS reps of ib_send_bw's
# 64 B rate and, interleaved, each variant's (BENCH with BusyPoll SPINS
# and ENV in its environment), as RESULT lines with the ratio.
send_variants() {
	local r ps v label bn spins env o
	for r in $(seq "$REPS"); do
		ps=$(perf_rate ib_send_bw 64 2000 92000)
		echo "RESULT perftest_send_64 $ps op/s"
		for v in "$@"; do
			IFS=: read -r label bn spins env <<<"$v"
			o=$(ours_rate "$bn" 2000 92000 "$spins" "$env")
			echo "RESULT $label $o op/s $(ratio "$o" "$ps") x"
		done
	done
}

# cloop: the Send stream with its loops in C on the provider's own QPs
# (BenchmarkSendRate64C), each end in C with the other in Go, the Go
# loops with the provider's Go code and with none of it (each step one
# cgo call: BenchmarkSendRate64Raw), with their goroutines locked to
# their threads (BenchmarkSendRate64Locked) and with BusyPoll, and
# ib_send_bw, interleaved, REPS reps: whether the gap to perftest lies
# in the provider's Go half or in its queue pairs.
cloop_step() {
	echo "== Send 64 B on rxe0: loops in Go, in C, mixed, and ib_send_bw (op/s; ratio to ib_send_bw)"
	send_variants BenchmarkSendRate64:BenchmarkSendRate64:0: BenchmarkSendRate64C:BenchmarkSendRate64C:0: \
		BenchmarkSendRate64CSend:BenchmarkSendRate64CSend:0: BenchmarkSendRate64CRecv:BenchmarkSendRate64CRecv:0: \
		BenchmarkSendRate64Raw:BenchmarkSendRate64Raw:0: BenchmarkSendRate64Locked:BenchmarkSendRate64Locked:0: \
		"BenchmarkSendRate64_busy_poll_$BUSY_POLL:BenchmarkSendRate64:$BUSY_POLL:" 2>&1 | tee "$BIN/cloop.txt"
}
step cloop && cloop_step

# split: what is left between the locked Go loops and ib_send_bw, split
# further, interleaved, REPS reps. Poll yields to the scheduler before
# sysmon would signal a spinning goroutine (verbs/rdmacore/yield.go); the
# test binary turns that off with GODAPL_RDMACORE_TEST_YIELD_AFTER=0. The
# rows: the Go loops as they are and locked, each with the yield and
# without it; locked with BusyPoll 256; locked with the runtime's
# asynchronous preemption off (GODEBUG=asyncpreemptoff=1), with the
# yield and without it; the unlocked loops with preemption off and no
# yield. Then the Write stream the same way beside ib_write_bw: as it is
# and locked, each with the yield and without. Then the signals the
# runtime delivers and the context switches in one run of the Go loops
# and the locked ones, with the yield and preemption each on and off.
split_step() {
	local noy=GODAPL_RDMACORE_TEST_YIELD_AFTER=0 off=GODEBUG=asyncpreemptoff=1
	echo "== Send 64 B on rxe0: the Go loops split (op/s; ratio to ib_send_bw)"
	send_variants go:BenchmarkSendRate64:0: "go_noyield:BenchmarkSendRate64:0:$noy" \
		locked:BenchmarkSendRate64Locked:0: "locked_noyield:BenchmarkSendRate64Locked:0:$noy" \
		locked_busy_poll_256:BenchmarkSendRate64Locked:256: \
		"locked_asyncpreemptoff:BenchmarkSendRate64Locked:0:$off" \
		"locked_asyncpreemptoff_noyield:BenchmarkSendRate64Locked:0:$off $noy" \
		"go_asyncpreemptoff_noyield:BenchmarkSendRate64:0:$off $noy" \
		2>&1 | tee "$BIN/split.txt"
	echo "== Write 64 KiB on rxe0: with the yield and without (op/s; ratio to ib_write_bw)"
	local r pw v label bn env o
	for r in $(seq "$REPS"); do
		pw=$(perf_rate ib_write_bw 65536 200 3200)
		echo "RESULT perftest_write_64k $pw op/s"
		for v in write:BenchmarkWrite64K: "write_noyield:BenchmarkWrite64K:$noy" \
			write_locked:BenchmarkWrite64KLocked: "write_locked_noyield:BenchmarkWrite64KLocked:$noy"; do
			IFS=: read -r label bn env <<<"$v"
			o=$(ours_rate "$bn" 200 3200 0 "$env")
			echo "RESULT $label $o op/s $(ratio "$o" "$pw") x"
		done
	done 2>&1 | tee -a "$BIN/split.txt"
	echo "== signals delivered and context switches in one 92000-Send run (perf stat)"
	vmx sh -c 'mountpoint -q /sys/kernel/tracing || mount -t tracefs nodev /sys/kernel/tracing'
	for env in GODEBUG= "GODEBUG= $noy" "$off $noy"; do
		for bn in BenchmarkSendRate64 BenchmarkSendRate64Locked; do
			vmx env GODAPL_RDMACORE_DEVICE=rxe0 GODAPL_RDMACORE_ADDR="$IP" $env perf stat -x, \
				-e signal:signal_deliver -e context-switches "$BIN/rdmacore.test" -test.run '^$' \
				-test.bench "^$bn\$" -test.benchtime 92000x 2>&1 |
				awk -F, -v l="$bn $env" '/^Benchmark/ { nf = split($0, f, " "); ns = f[3]
						for (i = 1; i < nf; i++) { if (f[i+1] == "tx-yields") ty = f[i]; if (f[i+1] == "rx-yields") ry = f[i] } }
					$3 ~ /signal_deliver/ { sig = $1 } $3 ~ /context-switches/ { cs = $1 }
					END { printf "   %s: %s signals, %s context switches, %s ns/op, yields %s tx %s rx\n", l, sig, cs, ns, ty, ry }'
		done
	done | tee -a "$BIN/split.txt"
}
step split && split_step

# sched: where the VM's two vCPUs go during a Send stream and a Write
# stream, perftest's and ours, interleaved, REPS reps: acct.sh around a
# short and a long run of each, the difference per operation (so that
# set-up cancels, as in the bench step): the rate, each CPU's user,
# system, softirq and idle microseconds, ksoftirqd's, the context
# switches and migrations of the programs, rxe's counters. Ours runs
# spinning with a P to spare (the default), with GOMAXPROCS=2, with both
# ends asleep on the completion channel (perftest's --events is the
# control) and with BusyPoll; Write also with GOMAXPROCS=1.
sched() {
	local acct=$REPO/tests/rdmacore/acct.sh env="env GODAPL_RDMACORE_DEVICE=rxe0 GODAPL_RDMACORE_ADDR=$IP"
	# pt LABEL N TOOL SIZE [ARGS]: perftest's server and client.
	pt() {
		local port=$((18500 + RANDOM % 1000))
		# The server's output is buffered: wait for its port instead.
		vmx "$acct" "$1" sh -c "timeout 600 $3 -d rxe0 -s $4 -n $2 -F -p $port ${5:-} >/dev/null 2>&1 & \
			for i in \$(seq 200); do ss -ltn | grep -q ':$port ' && break; sleep 0.05; done; \
			timeout 600 $3 -d rxe0 -s $4 -n $2 -F -p $port ${5:-} $IP >/dev/null; c=\$?; wait \$!; exit \$c" 2>&1 |
			grep -E '^ACCT' || true
	}
	# gb LABEL N BENCH [ENV...]: ours.
	gb() {
		local label=$1 n=$2 bench=$3
		shift 3
		vmx "$acct" "$label" $env "$@" timeout 600 "$BIN/rdmacore.test" -test.run '^$' -test.bench "^$bench\$" \
			-test.benchtime "${n}x" 2>&1 | grep -E '^ACCT|^Benchmark' || true
	}
	# excess SHORT LONG RUNNER LABEL ARGS...: RUNNER (pt or gb) with
	# N = SHORT and N = LONG, and the long run's excess per operation.
	excess() {
		local s=$1 l=$2 run=$3 label=$4 out=$BIN/sched-run.txt
		shift 4
		"$run" "$label" "$s" "$@" | sed 's/^ACCT [^ ]* /S /' >"$out"
		"$run" "$label" "$l" "$@" | sed 's/^ACCT [^ ]* /L /' >>"$out"
		set -- "$label"
		{ grep ^Benchmark "$out" || true; } | sed "s/^/SCHED $1 /" | tail -1
		awk -v lab="$1" -v n=$((l - s)) '$1 == "S" { s[$2] = $3 } $1 == "L" { v[$2] = $3 }
			END {
				if (s["rc"] != 0 || v["rc"] != 0 || !("wall" in s) || !("wall" in v)) { printf "SCHED %s failed\n", lab; exit }
				w = v["wall"] - s["wall"]
				printf "SCHED %s rate %.1f op/s\n", lab, n / w
				line = ""
				for (c = 0; ("cpu" c "-idle") in v; c++)
					line = line sprintf(" | cpu%d user %.1f sys %.1f softirq %.1f idle %.1f", c,
						(v["cpu" c "-user"] - s["cpu" c "-user"]) * 1e4 / n, (v["cpu" c "-sys"] - s["cpu" c "-sys"]) * 1e4 / n,
						(v["cpu" c "-softirq"] - s["cpu" c "-softirq"]) * 1e4 / n, (v["cpu" c "-idle"] - s["cpu" c "-idle"]) * 1e4 / n)
				printf "SCHED %s us/op wall %.1f%s | ksoftirqd %.1f | task-clock %.1f\n", lab, w * 1e6 / n, line,
					(v["ksoftirqd"] - s["ksoftirqd"]) * 1e4 / n, (v["task-clock"] - s["task-clock"]) * 1e3 / n
				printf "SCHED %s per op: context-switches %.3f migrations %.4f tasklets %.3f", lab,
					(v["context-switches"] - s["context-switches"]) / n, (v["cpu-migrations"] - s["cpu-migrations"]) / n, (v["TASKLET"] - s["TASKLET"]) / n
				for (k in v) if (k ~ /^syscalls:sys_enter_/) printf " %s %.3f", substr(k, 20), (v[k] - s[k]) / n
				for (k in v) if (k ~ /^rxe-/ && v[k] != s[k]) printf " %s %.3f", substr(k, 5), (v[k] - s[k]) / n
				printf "\n"
			}' "$out"
	}
	echo "== where the vCPUs go (acct.sh; per operation, long run minus short), $REPS reps"
	for r in $(seq "$REPS"); do
		excess 2000 92000 pt perftest_send ib_send_bw 64
		excess 2000 92000 gb ours_send BenchmarkSendRate64
		excess 2000 92000 gb ours_send_gomaxprocs2 BenchmarkSendRate64 GOMAXPROCS=2
		excess 2000 92000 pt perftest_send_events ib_send_bw 64 -e
		excess 2000 92000 gb ours_send_events BenchmarkSendRate64Event
		excess 2000 92000 gb ours_send_busy_poll BenchmarkSendRate64 GODAPL_RDMACORE_BUSY_POLL="$BUSY_POLL"
		excess 200 3200 pt perftest_write ib_write_bw 65536
		excess 200 3200 gb ours_write BenchmarkWrite64K
		excess 200 3200 gb ours_write_gomaxprocs1 BenchmarkWrite64K GOMAXPROCS=1
	done 2>&1 | tee "$BIN/sched.txt"
}
step sched && sched

# listening FILE: waits until the peer writing FILE listens.
listening() {
	for _ in $(seq 300); do
		grep -q "peer: listening" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# capture NAME FILTER: records the frames on the lab's bridge matching
# FILTER into $BIN/NAME.pcap in the background (CAPTURE holds the pid);
# it returns once tcpdump listens. Without tcpdump it does nothing.
capture() {
	CAPTURE=
	command -v tcpdump >/dev/null || return 0
	rm -f "$BIN/$1.pcap" "$BIN/$1.tcpdump"
	ip netns exec ratlab tcpdump -i br77 -s 256 -U -w "$BIN/$1.pcap" "$2" 2>"$BIN/$1.tcpdump" &
	CAPTURE=$!
	for _ in $(seq 100); do
		grep -qs listening "$BIN/$1.tcpdump" && return 0
		sleep 0.1
	done
}

# uncapture NAME KEEP: stops the capture; the file stays when KEEP is 1.
uncapture() {
	[ -n "$CAPTURE" ] || return 0
	kill "$CAPTURE" && wait "$CAPTURE" || true
	CAPTURE=
	if [ "$2" = 1 ]; then
		echo "   frames: $BIN/$1.pcap"
	else
		rm -f "$BIN/$1.pcap"
	fi
	rm -f "$BIN/$1.tcpdump"
}

# interop REP: godapl's pure-Go siw on the host (netns ratlab) against
# rdmacore on the VM's kernel siw, each end passive once. The frames of
# a failed case are kept, and the VM kernel's last messages shown.
interop() {
	local out=$BIN/interop-vm.txt vport=$((7310 + 2 * $1)) hport=$((HOST_PORT + $1)) failed
	echo "== interop: host siw (active) -> VM rdmacore on siw0 (passive, SRQ)"
	capture interop-$1-vm "host $IP and tcp port $vport"
	# A file left by an earlier run or rep says "listening" already:
	# the other end would connect before this one listens.
	rm -f "$out"
	vmx "$BIN/peer" -provider rdmacore -device siw0 -listen "$IP:$vport" -srq >"$out" 2>&1 &
	local vmjob=$!
	failed=1
	if listening "$out" && vm nsexec "$BIN/peer" -provider siw -connect "$IP:$vport" && wait $vmjob; then
		echo "   both ends: peer: OK"
		failed=0
	else
		wait $vmjob || true
		status=1
		cat "$out"
		vmx dmesg | tail -20
	fi
	uncapture interop-$1-vm $failed
	out=$BIN/interop-host.txt
	echo "== interop: VM rdmacore on siw0 (active) -> host siw (passive, SRQ)"
	capture interop-$1-host "host $IP and tcp port $hport"
	rm -f "$out"
	vm nsexec "$BIN/peer" -provider siw -listen "192.168.77.1:$hport" -srq >"$out" 2>&1 &
	local hostjob=$!
	failed=1
	if listening "$out" && vmx "$BIN/peer" -provider rdmacore -device siw0 -connect "192.168.77.1:$hport" && wait $hostjob; then
		echo "   both ends: peer: OK"
		failed=0
	else
		wait $hostjob || true
		status=1
		cat "$out"
		vmx dmesg | tail -20
	fi
	uncapture interop-$1-host $failed
}

if step siw-suite || step interop || step siw-dat; then
	vmx sh -c 'rdma link del rxe0 && rdma link add siw0 type siw netdev eth0'
fi
if step siw-suite; then
	suite siw0 "$BIN/rdmacore.test"
	suite siw0 "$BIN/rdmacore-cgocheck2.test"
fi
if step interop; then
	for r in $(seq 0 $((INTEROP_REPS - 1))); do
		interop "$r"
	done
fi
step siw-dat && dat siw0
exit $status
