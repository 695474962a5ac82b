#!/bin/bash
# RDS/TCP side by side inside one boot of the lab VM: the kernel's rds_tcp against rdsoverdat's
# tcp transport, with the same workload (the lab's rdsbench: 64 B message rate, 64 KiB
# throughput, 64 B round trip), interleaved kernel / Go REPS times. Both ends of every run live in
# two network namespaces of the VM joined by a veth pair (rdsA 192.168.77.101, rdsB .102), as in
# the lab's bench.sh rdsnetns section, so both are emulated alike under TCG.
# Prints "RESULT <name> <value> <unit>" lines for the lab's summarize.py.
#
# Run from the host:  make rds-lab-bench   (builds bin/rds-bench, boots a VM with the repo shared)
# or inside the VM:   scripts/rds-lab-bench.sh (with bin/rds-bench built beforehand)
#
# Three implementations per workload:
#   rds_kernel_*   the lab's rdsbench (C, AF_RDS; fork + setns), the reference
#   rds_kapi_*     cmd/rds-bench -backend kernel: the kernel again, through rdsoverdat's kernel
#                  backend (Go socket API over AF_RDS): the cost of the Go API on the same kernel
#   rds_go_*       cmd/rds-bench -backend tcp: rdsoverdat's tcp transport, one process per netns,
#                  TCP port 16386 (rds_tcp holds 16385 in every namespace)
#   raw_go_*       cmd/rds-bench -backend rawtcp: the same workload over one plain TCP connection
#                  from Go (length-prefixed, buffered): the ceiling for any Go transport here
# The Go binary runs from a copy in the VM's own tmpfs: from the 9p share every first touch of a
# code page is a 9p read, which under TCG costs the process seconds of start-up and stalls its
# first seconds of running. The sender starts once the receiver has created its -ready file.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
CACHE=${LAB_CACHE:?LAB_CACHE must point at the lab cache}
REPS=${REPS:-3}
SECS=${SECS:-3}
ITERS=${ITERS:-2000}
# GO_MAXPROCS (optional) sets GOMAXPROCS for every Go process: the C tool's processes are single
# threaded, a Go process runs one P per vCPU unless told otherwise.
GOENV=()
[ -n "${GO_MAXPROCS:-}" ] && GOENV=(GOMAXPROCS="$GO_MAXPROCS")
RB=$CACHE/rdsbench
GB=$REPO/bin/rds-bench
[ -x "$RB" ] || { echo "rds-lab-bench.sh: no $RB (run the lab's setup.sh)" >&2; exit 1; }
[ -x "$GB" ] || { echo "rds-lab-bench.sh: build $GB first (make rds-lab-bench does)" >&2; exit 1; }
A=192.168.77.101 B=192.168.77.102
TMP=$(mktemp -d)
cp "$GB" "$TMP/rds-bench"; GB=$TMP/rds-bench

res() { echo "RESULT $*"; }
field() { sed -n "s|.*$1=\([0-9.]*\).*|\1|p" <<<"$2"; }

ip netns add rdsA; ip netns add rdsB
# The VM's job poller (PID 1, the lab's vm-init.sh: a shell loop that forks `sleep 0.1` and globs
# the 9p spool folder) keeps about a quarter of the idle VM's two vCPUs busy under TCG. At nice 19
# it yields to the measured processes instead of taking CPU from them.
renice -n 19 -p 1 >/dev/null
trap 'renice -n 0 -p 1 >/dev/null; ip netns del rdsA 2>/dev/null; ip netns del rdsB 2>/dev/null; rm -rf "$TMP"' EXIT
ip link add vA netns rdsA type veth peer name vB netns rdsB
ip -n rdsA addr add $A/24 dev vA; ip -n rdsB addr add $B/24 dev vB
for n in rdsA rdsB; do ip -n $n link set lo up; done
ip -n rdsA link set vA up; ip -n rdsB link set vB up
NS="$B $A /var/run/netns/rdsB /var/run/netns/rdsA"
$RB pingpong 64 10 $NS >/dev/null   # bring the kernel's RDS/TCP connection up first

# ktput SIZE: the C tool's tput run, then a second line with the whole machine's busy CPU over
# it (/proc/stat: all CPUs, softirq and kernel threads included), as rds-bench's receiver prints
# it for the Go runs: "machine busy=Xs idle=Ys per_msg=Zms". The C tool starts in milliseconds,
# so its whole run is its measured window.
ktput() {
  local s0 s1 o
  s0=$(head -1 /proc/stat); o=$($RB tput "$1" "$SECS" $NS); s1=$(head -1 /proc/stat)
  echo "$o"
  awk -v m="$(field msgs "$o")" 'NR == 1 { b0 = $2+$3+$4+$7+$8+$9; i0 = $5+$6 }
    NR == 2 { b = ($2+$3+$4+$7+$8+$9 - b0) / 100; i = ($5+$6 - i0) / 100
      if (m > 0) printf "rdsbench: machine busy=%.2fs idle=%.2fs per_msg=%.3fms\n", b, i, b * 1000 / m }' \
    <(echo "$s0"; echo "$s1")
}

gobench() { # BACKEND MODE SIZE: one rds-bench pair; prints the line with the figures
  local be=$1 mode=$2 sz=$3 out
  out=$(mktemp)
  rm -f "$TMP/ready"
  ip netns exec rdsB env "${GOENV[@]}" "$GB" -backend "$be" rx -bind $B:19011 -mode "$mode" -size "$sz" -ready "$TMP/ready" >"$out" 2>&1 &
  local rx=$!
  while [ ! -e "$TMP/ready" ]; do   # the receiver binds (and listens) first
    kill -0 $rx 2>/dev/null || { cat "$out" >&2; return 1; }
    sleep 0.05
  done
  if [ "$mode" = tput ]; then
    ip netns exec rdsA env "${GOENV[@]}" "$GB" -backend "$be" tx -bind $A:19012 -to $B:19011 -mode tput -size "$sz" -secs "$SECS"
    wait $rx; cat "$out"
  else
    ip netns exec rdsA env "${GOENV[@]}" "$GB" -backend "$be" tx -bind $A:19012 -to $B:19011 -mode pingpong -size "$sz" -iters "$ITERS"
    wait $rx
  fi
  rm -f "$out"
}

echo "Go processes: GOMAXPROCS=${GO_MAXPROCS:-default}" >&2
for r in $(seq "$REPS"); do
  echo "== round $r" >&2
  o=$(ktput 64); echo "$o" >&2;                          res rds_kernel_rate_64 "$(field msgs/s "$o")" msg/s
  o=$(gobench kernel tput 64); echo "$o" >&2;             res rds_kapi_rate_64 "$(field msgs/s "$o")" msg/s
  o=$(gobench tcp tput 64); echo "$o" >&2;                res rds_go_rate_64 "$(field msgs/s "$o")" msg/s
  o=$(gobench rawtcp tput 64); echo "$o" >&2;             res raw_go_rate_64 "$(field msgs/s "$o")" msg/s
  o=$(ktput 65536); echo "$o" >&2;                       res rds_kernel_tput_65536 "$(field MB/s "$o")" MB/s
  o=$(gobench kernel tput 65536); echo "$o" >&2;          res rds_kapi_tput_65536 "$(field MB/s "$o")" MB/s
  o=$(gobench tcp tput 65536); echo "$o" >&2;             res rds_go_tput_65536 "$(field MB/s "$o")" MB/s
  o=$(gobench rawtcp tput 65536); echo "$o" >&2;          res raw_go_tput_65536 "$(field MB/s "$o")" MB/s
  o=$($RB pingpong 64 "$ITERS" $NS); echo "$o" >&2;      res rds_kernel_rtt_64 "$(field p50 "$o")" us_p50
  o=$(gobench kernel pingpong 64); echo "$o" >&2;         res rds_kapi_rtt_64 "$(field p50 "$o")" us_p50
  o=$(gobench tcp pingpong 64); echo "$o" >&2;            res rds_go_rtt_64 "$(field p50 "$o")" us_p50
  o=$(gobench rawtcp pingpong 64); echo "$o" >&2;         res raw_go_rtt_64 "$(field p50 "$o")" us_p50
done
