#!/bin/bash
# acct.sh LABEL CMD...: runs CMD inside the lab VM and prints what the
# VM's CPUs did meanwhile, one "ACCT LABEL KEY VALUE" line per figure:
#   wall                      seconds
#   cpuN-user, -sys, -softirq, -irq, -idle   /proc/stat ticks per CPU
#   ksoftirqd                 ticks of the ksoftirqd threads (rxe's
#                             deferred work runs in softirq context, on
#                             the CPU that raised it or in its ksoftirqd)
#   TASKLET, NET_RX           softirqs raised
#   task-clock (ms), context-switches, cpu-migrations, and the calls of
#                             futex, nanosleep, clock_gettime and tgkill
#                             (the Go runtime's sleeps, wake-ups, clock
#                             reads and preemption signals) of CMD and
#                             its children (perf stat)
#   rxe-NAME                  the RDMA device's port counters
# CMD's own output goes to stderr. lab.sh's sched step subtracts a short
# run's figures from a long one's, so that set-up cancels out.
set -u
label=$1
shift
dev=${ACCT_DEV:-rxe0}
snap() {
	awk '/^cpu[0-9]/ { print $1 "-user", $2; print $1 "-sys", $4; print $1 "-idle", $5; print $1 "-irq", $7; print $1 "-softirq", $8 }' /proc/stat
	local t=0 p
	for p in $(pgrep '^ksoftirqd/'); do
		t=$((t + $(awk '{ s = $0; sub(/.*\) /, "", s); split(s, f, " "); print f[12] + f[13] }' /proc/$p/stat)))
	done
	echo "ksoftirqd $t"
	awk '$1 == "TASKLET:" || $1 == "NET_RX:" { s = 0; for (i = 2; i <= NF; i++) s += $i; sub(/:/, "", $1); print $1, s }' /proc/softirqs
	local d=/sys/class/infiniband/$dev/ports/1/hw_counters f
	[ -d $d ] || return 0
	for f in $d/*; do echo "rxe-$(basename $f) $(cat $f)"; done
}
before=$(snap) t0=$(date +%s.%N)
perf stat -x, -o /tmp/acct-$$.txt -e task-clock,context-switches,cpu-migrations,syscalls:sys_enter_futex,syscalls:sys_enter_nanosleep,syscalls:sys_enter_clock_gettime,syscalls:sys_enter_tgkill -- "$@" >&2
rc=$?
t1=$(date +%s.%N) after=$(snap)
echo "ACCT $label rc $rc"
awk -v l="$label" -v a="$t0" -v b="$t1" 'BEGIN { printf "ACCT %s wall %.6f\n", l, b - a }'
join <(echo "$before" | sort) <(echo "$after" | sort) | awk -v l="$label" '{ print "ACCT", l, $1, $3 - $2 }'
awk -F, -v l="$label" '$3 != "" && $1 !~ /^#/ { print "ACCT", l, $3, $1 }' /tmp/acct-$$.txt
rm -f /tmp/acct-$$.txt
exit $rc
