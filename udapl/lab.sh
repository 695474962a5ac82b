#!/bin/bash
# godapl's uDAPL provider against OFA dapl (libdaplofa, ofa-v2-siw) over the Linux kernel's siw in
# the QEMU lab: dapltest -T T with data validation both ways (host: libdatgodapl on the pure-Go
# soft-iWARP at 192.168.77.1; VM: OFA dapl on the kernel's siw0), then dapltest -T P RDMA Write
# 64 KiB inside the VM on OFA dapl and on libdatgodapl in the same boot, in rounds of OFA, godapl,
# godapl, OFA, each round's ratio and their median. Needs root.
#   make udapl-lab      (or udapl/lab.sh after make udapl)
# env: GODAPL_LAB the lab directory (default tests/lab), LAB_CACHE its cache (default /var/cache/ratlab),
#   UDAPL_LAB_VM and UDAPL_LAB_IP the VM's name and address (default udapl, 192.168.77.41), so that
#   several lab VMs can run at once, UDAPL_LAB_ROUNDS the -T P rounds (default 3),
#   UDAPL_LAB_STEPS of: rxe (udapl/lab/rxe.sh: the library over the kernel's rxe through rdma-core,
#   in a VM of its own, against OFA dapl; needs the library built with UDAPL_TAGS=rdmacore) and
#   siw (the above) (default both)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
LAB_STEPS=${UDAPL_LAB_STEPS:-rxe siw}
rxefail=0
case " $LAB_STEPS " in *" rxe "*) "$REPO/udapl/lab/rxe.sh" || rxefail=1 ;; esac
case " $LAB_STEPS " in *" siw "*) ;; *) exit $rxefail ;; esac
LAB=${GODAPL_LAB:-$REPO/tests/lab}
OFA_CONF=$REPO/udapl/ofa-dat.conf
export LAB_CACHE=${LAB_CACHE:-/var/cache/ratlab}
VM=${UDAPL_LAB_VM:-udapl} IP=${UDAPL_LAB_IP:-192.168.77.41} HOST=192.168.77.1 ROUNDS=${UDAPL_LAB_ROUNDS:-3}
OUT=$REPO/bin/udapl-lab
[ -f "$REPO/bin/libdatgodapl.so" ] || { echo "lab.sh: run make udapl first" >&2; exit 1; }
mkdir -p "$OUT"
# The VM sees the repository (shared); the host side runs natively in netns ratlab.
printf 'ofa-v2-siw u2.0 nonthreadsafe default %s dapl.2.0 "siw - %s" ""\n' "$REPO/bin/libdatgodapl.so" $HOST > "$OUT/host.conf"
printf 'godapl-vm u2.0 nonthreadsafe default %s dapl.2.0 "siw - %s" ""\n' "$REPO/bin/libdatgodapl.so" $IP > "$OUT/vm.conf"
vm() { "$LAB/vm.sh" exec --name $VM -- "$@"; }
host() { "$LAB/vm.sh" nsexec env DAT_OVERRIDE="$OUT/host.conf" "$@"; }
"$LAB/vm.sh" start --name $VM --ip $IP --share "$REPO"
HOSTPID=
stop() {
	if [ -n "$HOSTPID" ]; then kill "$HOSTPID" 2>/dev/null || true; fi
	"$LAB/vm.sh" stop --name $VM
}
trap stop EXIT
ready() { for _ in $(seq 240); do grep -q "Service Point Ready" "$1" 2>/dev/null && return 0; sleep 0.5; done; return 1; }
T="-i 100 -t 1 -w 1 -V client SR 4096 server SR 4096 client RW 4096 1 client RR 4096 1"
fail=0

echo "== host libdatgodapl server, VM OFA dapl client: dapltest -T T $T"
# Not through host(): $! must be dapltest's pid (vm.sh nsexec execs it), not a subshell's.
"$LAB/vm.sh" nsexec env DAT_OVERRIDE="$OUT/host.conf" dapltest -T S -D ofa-v2-siw > "$OUT/host-server.txt" 2>&1 &
HOSTPID=$!
ready "$OUT/host-server.txt"
vm env DAT_OVERRIDE="$OFA_CONF" timeout 600 dapltest -T T -s $HOST -D ofa-v2-siw $T > "$OUT/vm-client.txt" 2>&1 || fail=1
grep -a "Stats\|Total\|Error\|error\|Warning" "$OUT/vm-client.txt" || true
kill $HOSTPID; wait $HOSTPID 2>/dev/null || true; HOSTPID=

echo "== VM OFA dapl server, host libdatgodapl client: dapltest -T T $T"
vm sh -c "DAT_OVERRIDE=$OFA_CONF dapltest -T S -D ofa-v2-siw > /tmp/server.txt 2>&1 & echo \$! > /tmp/server.pid; \
  for i in \$(seq 240); do grep -q 'Service Point Ready' /tmp/server.txt && exit 0; sleep 0.5; done; exit 1"
host timeout 600 dapltest -T T -s $IP -D ofa-v2-siw $T > "$OUT/host-client.txt" 2>&1 || fail=1
grep -a "Stats\|Total\|Error\|error\|Warning\|bad" "$OUT/host-client.txt" || true
# The server outlives the job that started it (killjobs does not reach it), and while it runs it
# holds dapltest's port in the VM: the servers of the runs below could not listen, and their
# clients would reach this one.
vm sh -c 'P=$(cat /tmp/server.pid); kill $P; while kill -0 $P 2>/dev/null; do sleep 0.2; done'

# dapltest -T P in the VM, both ends in one process tree, on each provider in turn.
perf() {
	vm sh -c "export DAT_OVERRIDE=$2; dapltest -T S -D $1 > /tmp/p.txt 2>&1 & S=\$!; \
	  for i in \$(seq 240); do grep -q 'Service Point Ready' /tmp/p.txt && break; sleep 0.5; done; \
	  timeout 600 dapltest -T P -s $IP -D $1 -i 2000 -p 8 -m b RW 65536 1; kill \$S 2>/dev/null; wait \$S; true" |
		sed -n 's/.*Bandwidth *: *\([0-9.]*\) MB\/sec.*/\1/p' || true
}
# Rounds of OFA, godapl, godapl, OFA (udapl/lab/ratio.sh).
. "$REPO/udapl/lab/ratio.sh"
ratios=
for r in $(seq "$ROUNDS"); do
	o1=$(perf ofa-v2-siw "$OFA_CONF"); g1=$(perf godapl-vm "$OUT/vm.conf")
	g2=$(perf godapl-vm "$OUT/vm.conf"); o2=$(perf ofa-v2-siw "$OFA_CONF")
	ratio=$(round_ratio "$o1" "$g1" "$g2" "$o2")
	echo "dapltest -T P RW 65536 in the VM, round $r: OFA dapl/kernel siw $o1 $o2 MB/s, libdatgodapl $g1 $g2 MB/s, ratio $ratio"
	[ "$ratio" = - ] || ratios="$ratios $ratio"
done
median_ratio $ratios
[ $rxefail -eq 0 ] || fail=1
exit $fail
