#!/bin/bash
# godapl's RDS over DAT over rdmacore/rxe against the kernel's rds_rdma
# over the same rxe, in one boot of two lab VMs, interleaved: each round
# measures the kernel on both VMs (rds_rdma loaded) and godapl on both
# (rds_rdma unloaded, its listener would hold port 18634), in reverse
# order in even rounds, with tests/rdsib/internal/ibbench: 64 KiB
# throughput, 64 B message rate and 64 B round trip. Prints RESULT lines
# and each round's ratios godapl / kernel: above 1 is better for
# throughput and rate, below 1 for the round trip and for
# rate_64_vm_cpu, both VMs' CPU per message of the 64 B rate run (the
# VM lines, as the VMs count it), and rate_64_host_cpu, both VMs' QEMU
# processes' host CPU per message of that run: what a message costs the
# host's cores, which the two VMs share.
# Run from the repository root as root (make rds-ib-bench).
#   env: LAB, LAB_CACHE, VM1_NAME, VM1_IP, VM2_NAME, VM2_IP as lab.sh
#        REPS   rounds (default 3)
#        SECS   seconds per throughput run (default 5)
#        MODES  what to measure: any of tput rate rtt (default all three)
#        BUF    SO_SNDBUF and SO_RCVBUF of both backends (ibbench -buf,
#               which the kernel backend forces as root; default VM1's
#               net.core.wmem_max, 212992 in the lab VM, what the kernel
#               grants an application without privilege)
#        BASE   an ibbench binary of another build (of this version or
#               later; under the repository, which the VMs share)
#               measured each round as backend "base" beside this
#               build's, for before/after ratios
#        WARM   1: one unranked 2 s rate run of each backend after boot,
#               before round 1 (default 0)
#        HOSTPERF  1: sample both QEMU processes over each window with
#               perf and print a HOSTPERF line (host samples by class)
# Besides the RESULT and RATIO lines it prints, after boot and after
# each round, a LAYOUT line per VM (what a boot may lay out differently:
# huge pages on the host, KASLR, timer calibration, interrupt placement)
# and, per tput window, a HOST line whose other_ticks is the host CPU
# that processes other than the two VMs took in it: a pair in which
# the two sides' other_ticks differ much ranks nothing.
set -euo pipefail
REPO=$(pwd -P)
: "${LAB:?set LAB to the lab directory}"
export LAB_CACHE=${LAB_CACHE:-/var/cache/ratlab}
N1=${VM1_NAME:-ib1}
IP1=${VM1_IP:-192.168.77.31}
N2=${VM2_NAME:-ib2}
IP2=${VM2_IP:-192.168.77.32}
REPS=${REPS:-3}
SECS=${SECS:-5}
MODES=${MODES:-tput rate rtt}
BASE=${BASE:-}
BUF=${BUF:-}
BIN=$REPO/bin/rdsib
mkdir -p "$BIN"

vm() { "$LAB/vm.sh" "$@"; }

go build -tags rdmacore -o "$BIN/ibbench" ./tests/rdsib/internal/ibbench

trap 'vm stop --name "$N1" >/dev/null 2>&1 || true; vm stop --name "$N2" >/dev/null 2>&1 || true' EXIT
vm start --name "$N1" --ip "$IP1" --rdma "rxe0:rxe:eth0" --share "$REPO"
vm start --name "$N2" --ip "$IP2" --rdma "rxe0:rxe:eth0" --share "$REPO"
Q1=$(<"$LAB_CACHE/vms/$N1/qemu.pid")
Q2=$(<"$LAB_CACHE/vms/$N2/qemu.pid")
if [ -z "$BUF" ]; then
	BUF=$(vm exec --name "$N1" -- cat /proc/sys/net/core/wmem_max)
fi
echo "BUF $BUF"

# qcpu: the host CPU time both VMs' QEMU processes have used, in clock
# ticks (utime + stime of /proc/PID/stat, all their threads): unlike the
# VMs' own accounting, it does not count a vCPU's time off the host's
# cores as busy.
qcpu() { cat "/proc/$Q1/stat" "/proc/$Q2/stat" | awk '{sub(/.*\) /, ""); s += $12 + $13} END {print s}'; }
# hcpu: the host's busy CPU time (all but idle and iowait), in clock
# ticks: less qcpu, what other processes took from the two VMs.
hcpu() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9; exit}' /proc/stat; }
# hostwin: qcpu's and hcpu's ticks between the files $BIN/win.start and
# win.end that a tput sender run with -window creates, into
# $BIN/win.ticks; polled, so each end is late by up to 50 ms. Gives up
# after 10 minutes.
# With HOSTPERF=1 it also samples both QEMU processes over the window
# (perf record, cpu-clock at 499 Hz) into $BIN/win.perf, a HOSTPERF line.
hostwin() {
	for _ in $(seq 12000); do [ -e "$BIN/win.start" ] && break; sleep 0.05; done
	local a h pp=
	a=$(qcpu) h=$(hcpu)
	if [ "${HOSTPERF:-0}" = 1 ]; then
		perf record -q -e cpu-clock -F 499 -p "$Q1,$Q2" -o "$BIN/win.data" >/dev/null 2>&1 &
		pp=$!
	fi
	for _ in $(seq 12000); do [ -e "$BIN/win.end" ] && break; sleep 0.05; done
	echo "$(($(qcpu) - a)) $(($(hcpu) - h))" >"$BIN/win.ticks"
	if [ -n "$pp" ]; then
		kill -INT "$pp" 2>/dev/null || true
		wait "$pp" || true
		perf report -i "$BIN/win.data" -q --stdio -n --sort dso,sym 2>/dev/null | hostclass >"$BIN/win.perf"
	fi
}

# hostclass: perf report's "share samples dso [.] sym" lines of QEMU,
# the samples counted by what the host ran: the guest's translated code
# (perf's [JIT] or an anonymous mapping), looking translated blocks up
# (QEMU's qht hash table, for each jump whose target the per-vCPU block
# cache lacks; a full soft TLB flush empties that cache), translation
# (front end, optimiser, code generator, linking and invalidating
# blocks), the soft MMU (loads and stores that miss QEMU's TLB, page
# walks, TLB fills and flushes), the rest of QEMU, the host kernel and
# other libraries.
hostclass() {
	awk '{c = $2; d = $3; s = $5; n += c}
		d ~ /kernel/ {k["host_kernel"] += c; next}
		d ~ /JIT|unknown|anon/ {k["guest_code"] += c; next}
		d ~ /qemu/ && s ~ /^qht_/ {k["tb_lookup"] += c; next}
		d ~ /qemu|accel-tcg/ && s ~ /^(tcg_|gen_intermediate_code|translator_|tb_|disas_|i386_tr_)/ {k["translate"] += c; next}
		d ~ /qemu|accel-tcg/ && s ~ /^(helper_.*mmu|tlb_|x86_cpu_tlb_fill|get_page_addr_code|probe_access|cpu_ld|cpu_st)/ {k["softmmu"] += c; next}
		d ~ /qemu|accel-tcg/ {k["qemu_other"] += c; next}
		{k["libs"] += c}
		END {printf "HOSTPERF samples=%d hz=499", n
			split("guest_code tb_lookup translate softmmu qemu_other host_kernel libs", o, " ")
			for (i = 1; i <= 7; i++) printf " %s=%d", o[i], k[o[i]]
			printf "\n"}'
}

# one BACKEND ARGS...: one measurement, the receiver on VM1, the sender
# on VM2; prints the sender's RESULT line, both sides' BUF, STATS, PROC,
# VM and RXE lines and, for a tput run of this build, a HOST line.
# BACKEND base is the dat backend of the BASE binary.
port=19000
one() {
	local backend=$1 bin=$BIN/ibbench
	shift
	if [ "$backend" = base ]; then
		backend=dat bin=$BASE
	fi
	port=$((port + 2))
	rm -f "$BIN/rx.ready" "$BIN/win.start" "$BIN/win.end" "$BIN/win.ticks" "$BIN/win.perf" "$BIN/win.data"
	# The window of a tput run, in this build's ibbench only (a BASE
	# binary may predate -window).
	local win=() poll=
	if [ "$bin" != "$BASE" ] && [[ " $* " == *" -mode tput "* ]]; then
		win=(-window "$BIN/win")
		hostwin &
		poll=$!
	fi
	vm exec --name "$N1" -- timeout 600 "$bin" -backend "$backend" -buf "$BUF" -stats rx -bind "$IP1:$port" \
		-ready "$BIN/rx.ready" >"$BIN/rx.txt" 2>&1 &
	local rxjob=$!
	for _ in $(seq 600); do [ -e "$BIN/rx.ready" ] && break; sleep 0.1; done
	if ! vm exec --name "$N2" -- timeout 600 "$bin" -backend "$backend" -buf "$BUF" -stats tx -bind "$IP2:$((port + 1))" \
		-to "$IP1:$port" "${win[@]}" "$@" >"$BIN/tx.txt" 2>&1; then
		echo "ibbench $backend $* failed:" >&2
		cat "$BIN/tx.txt" >&2
		[ -z "$poll" ] || kill "$poll" 2>/dev/null || true
		return 1
	fi
	wait $rxjob || true
	if [ -n "$poll" ]; then
		wait "$poll" || true
		if [ -s "$BIN/win.ticks" ]; then
			local qt ht
			read -r qt ht <"$BIN/win.ticks"
			echo "HOST ticks=$qt hz=$(getconf CLK_TCK) other_ticks=$((ht - qt))"
		fi
		[ ! -s "$BIN/win.perf" ] || cat "$BIN/win.perf"
	fi
	grep -h "^RESULT\|^BUF \|^STATS\|^PROC\|^VM \|^RXE " "$BIN/tx.txt" "$BIN/rx.txt"
}

# qmaps PID: of QEMU's guest RAM (its largest mapping) and its
# translated code (the executable anonymous mappings, one per region of
# the translation cache), the host memory resident and how much of it is
# in transparent huge pages, in kB.
qmaps() {
	awk '/^[0-9a-f]+-[0-9a-f]+ / {perm = $2; anon = NF < 6; next}
		/^Size:/ {size = $2}
		/^Rss:/ {rss = $2}
		/^AnonHugePages:/ {
			if (size > msize) {msize = size; mrss = rss; mhuge = $2}
			if (anon && perm ~ /x/) {crss += rss; chuge += $2}
		}
		END {printf "ram_rss_kB=%d ram_huge_kB=%d code_rss_kB=%d code_huge_kB=%d", mrss, mhuge, crss, chuge}' "/proc/$1/smaps"
}

# probe WHEN: a LAYOUT line per VM of what one boot fixes for the whole
# boot and may differ from the next, for both implementations alike:
# how much of the VM's RAM the host backs with transparent huge pages
# (QEMU madvises guest RAM; under TCG every guest access goes through
# QEMU's soft TLB and then the host's), where the guest kernel's text
# lies (KASLR), the guest's THP mode and its anonymous huge pages, its
# LAPIC timer's calibration (mult, per vCPU) and delay loops (BogoMIPS),
# whether it isolates page tables (each switch would empty QEMU's soft
# TLB), and on which vCPU the virtio-net receive interrupt lands (rxe
# receives in its softirq) with the interrupts each vCPU took so far.
probe() {
	local n q
	for n in "$N1" "$N2"; do
		q=$(<"$LAB_CACHE/vms/$n/qemu.pid")
		vm exec --name "$n" -- sh -c '
			t=$(awk "\$3 == \"_text\" {print \$1}" /proc/kallsyms)
			thp=$(sed "s/.*\[\(.*\)\].*/\1/" /sys/kernel/mm/transparent_hugepage/enabled)
			ah=$(awk "/^AnonHugePages:/ {print \$2}" /proc/meminfo)
			irq=$(awk -F: "/virtio.*-input/ {gsub(/ /, \"\", \$1); print \$1; exit}" /proc/interrupts)
			aff=$(cat /proc/irq/$irq/effective_affinity_list 2>/dev/null)
			ints=$(awk "/^ *[0-9]+:/ {for (i = 2; i <= 3; i++) s[i] += \$i} END {printf \"%d/%d\", s[2], s[3]}" /proc/interrupts)
			pti=$(cat /sys/devices/system/cpu/vulnerabilities/meltdown | tr " " _)
			lapic=$(awk "/^Clock Event Device: lapic/ {f = 1} f && /^ mult:/ {printf \"%s%s\", s, \$2; s = \"/\"; f = 0}" /proc/timer_list)
			bogo=$(awk "/^bogomips/ {printf \"%s%s\", s, \$3; s = \"/\"}" /proc/cpuinfo)
			echo "guest_text=$t guest_thp=$thp guest_meltdown=$pti lapic_mult=$lapic bogomips=$bogo guest_anonhuge_kB=$ah netirq_cpu=$aff irqs_cpu0/1=$ints"' |
			sed "s|^|LAYOUT at=$1 vm=$n $(qmaps "$q") |"
	done
}

# value FIELD LINE: a field=value of a RESULT line.
value() { tr ' ' '\n' <<<"$2" | sed -n "s|^$1=||p"; }

# The kernel's RDS answers slowly in an idle TCG VM (tests/lab/README.md,
# "Timing"): a loop that forks keeps both VMs awake for both sides alike.
for n in "$N1" "$N2"; do
	vm exec --name "$n" -- sh -c 'while :; do sleep 0.1; done' >/dev/null 2>&1 &
done

# vmcpu LINES: the VM lines' CPU per message, both VMs together: what a
# message costs the host's cores, which the two VMs share.
vmcpu() { awk '/^VM /{for(i=1;i<=NF;i++) if($i ~ /^vm_cpu_us_per_msg=/){split($i,a,"=");s+=a[2];n++}} END{if(n==2) printf "%.1f", s}' <<<"$1"; }

# hostcpu LINES: the HOST line's QEMU CPU (both VMs, over the sender's
# window) per message of the RESULT line, in us.
hostcpu() {
	awk '/^HOST /{split($2, a, "="); split($3, b, "="); t = a[2] / b[2]; h = 1}
		/^RESULT /{for (i = 1; i <= NF; i++) if ($i ~ /^msgs=/) {split($i, c, "="); n = c[2]}}
		END {if (h && n > 0) printf "%.1f", t * 1e6 / n}' <<<"$1"
}

# use BACKEND: rds_rdma loaded on both VMs for the kernel, unloaded for
# godapl (its listener would hold port 18634).
use() {
	local op=-r
	[ "$1" = kernel ] && op=
	vm exec --name "$N1" -- modprobe $op rds_rdma
	vm exec --name "$N2" -- modprobe $op rds_rdma
}

# has MODE: MODES names MODE.
has() { [[ " $MODES " == *" $1 "* ]]; }

probe boot
backends="kernel dat"
if [ -n "$BASE" ]; then
	backends="kernel base dat"
fi
# Round 1 was godapl's dearest of its boot in four of six boots (its
# host CPU a message 1.00-1.39 times, median 1.27, its later runs').
# WARM=1 has each backend send for 2 s once, unranked, before round 1;
# it did not remove that in every boot (docs/RDS-IB.md section 11), so
# it is off by default.
if [ "${WARM:-0}" = 1 ]; then
	for backend in $backends; do
		use $backend
		one $backend -mode tput -size 64 -secs 2 >/dev/null
	done
	probe warm
fi
# A round's first measurement (right after boot in round 1) and its
# last have places the others lack: even rounds take the backends in
# reverse order, so that no implementation always has the same place.
rev() { tr ' ' '\n' <<<"$1" | tac | tr '\n' ' '; }
for r in $(seq "$REPS"); do
	declare -A res=()
	order=$backends
	if [ $((r % 2)) = 0 ]; then
		order=$(rev "$backends")
	fi
	for backend in $order; do
		use $backend
		t= m= p=
		if has tput; then
			t=$(one $backend -mode tput -size 65536 -secs "$SECS")
			{ grep "^BUF \|^STATS\|^PROC\|^VM \|^RXE \|^HOST" <<<"$t" || true; } | sed "s/^/round=$r backend=$backend tput_64k /"
		fi
		if has rate; then
			m=$(one $backend -mode tput -size 64 -secs "$SECS")
			{ grep "^BUF \|^STATS\|^PROC\|^VM \|^RXE \|^HOST" <<<"$m" || true; } | sed "s/^/round=$r backend=$backend rate_64 /"
		fi
		if has rtt; then
			p=$(one $backend -mode rtt -size 64 -iters 500)
		fi
		c=$(vmcpu "$m") h=$(hostcpu "$m")
		t=$(grep RESULT <<<"$t" || true) m=$(grep RESULT <<<"$m" || true) p=$(grep RESULT <<<"$p" || true)
		echo "RESULT round=$r backend=$backend tput_64k_MBps=$(value MBps "$t") rate_64_msgs=$(value msgps "$m") rtt_64_p50_us=$(value p50_us "$p") rate_64_vm_us=$c rate_64_host_us=$h"
		res[$backend.c]=$c
		res[$backend.h]=$h
		res[$backend.t]=$(value MBps "$t")
		res[$backend.m]=$(value msgps "$m")
		res[$backend.p]=$(value p50_us "$p")
	done
	for b in $backends; do
		[ $b = kernel ] && continue
		awk -v r="$r" -v n="$b" -v a="${res[$b.t]}" -v b="${res[kernel.t]}" -v c="${res[$b.m]}" -v d="${res[kernel.m]}" \
			-v e="${res[$b.p]}" -v f="${res[kernel.p]}" -v g="${res[$b.c]}" -v h="${res[kernel.c]}" \
			-v i="${res[$b.h]}" -v j="${res[kernel.h]}" \
			'function q(x, y) { return x > 0 && y > 0 ? sprintf("%.3f", x / y) : "-" }
			BEGIN { printf "RATIO round=%d backend=%s tput_64k=%s rate_64=%s rtt_64=%s rate_64_vm_cpu=%s rate_64_host_cpu=%s\n",
				r, n, q(a, b), q(c, d), q(e, f), q(g, h), q(i, j) }'
	done
	probe "round$r"
done
