#!/bin/bash
# RDS/TCP side by side inside one boot of the lab VM (tests/lab): the kernel's rds_tcp against
# rdsoverdat's tcp transport, with the same workload (64 B message rate, 64 KiB throughput, 64 B
# round trip), interleaved kernel / Go REPS times. Both ends of every run live in two network
# namespaces of the VM joined by a veth pair (rdsA 192.168.77.101, rdsB .102): across
# namespaces the kernel uses real RDS/TCP (between two local addresses it would use its loopback
# transport), and both implementations are emulated alike under TCG.
# Prints "RESULT <name> <value> <unit>" lines for tests/lab/bench/summarize.py, and at the end
# the per-round ratios of ours (rds_go) to the kernel (rds_kernel) with their median: the paired
# figure, since the host's load moves both between rounds far more than it moves them apart.
#
# Run from the host:  make rds-lab-bench   (builds bin/rds-bench and bin/rdsbench, boots a VM
#                                           with the repo shared)
# or inside the VM:   scripts/rds-lab-bench.sh (with both binaries built beforehand)
#
# Three implementations per workload:
#   rds_kernel_*   bin/rdsbench, built from tests/lab/bench/rdsbench.c (C, AF_RDS; fork + setns),
#                  the reference
#   rds_kapi_*     cmd/rds-bench -backend kernel: the kernel again, through rdsoverdat's kernel
#                  backend (Go socket API over AF_RDS): the cost of the Go API on the same kernel
#   rds_go_*       cmd/rds-bench -backend tcp: rdsoverdat's tcp transport, one process per netns,
#                  TCP port 16386 (rds_tcp holds 16385 in every namespace)
#   raw_go_*       cmd/rds-bench -backend rawtcp: the same workload over one plain TCP connection
#                  from Go (length-prefixed, buffered): the ceiling for any Go transport here
#   rds_base_*     (with BASE=FILE) another build of cmd/rds-bench -backend tcp, FILE, beside
#                  ours in every round: an experiment's baseline, paired round by round
# Order: within each workload, odd rounds run kernel, kapi, go, raw and even rounds the reverse,
# so that a host disturbance that starts during a workload does not always hit the same
# implementations (in a fixed order it hit the later ones, ours among them, every time).
# The Go binary runs from a copy in the VM's own tmpfs: from the 9p share every first touch of a
# code page is a 9p read, which under TCG costs the process seconds of start-up and stalls its
# first seconds of running. The sender starts once the receiver has created its -ready file.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
REPS=${REPS:-3}
SECS=${SECS:-3}
ITERS=${ITERS:-2000}
# WORKLOADS (optional) picks the workloads of each round, in this order: rate, tput and rtt by
# default; WORKLOADS=rtt runs the round trip alone, for an experiment that touches nothing else.
WORKLOADS=${WORKLOADS:-rate tput rtt}
for w in $WORKLOADS; do
  case $w in rate | tput | rtt) ;; *) echo "rds-lab-bench.sh: WORKLOADS: unknown workload $w" >&2; exit 2 ;; esac
done
# GO_MAXPROCS (optional) sets GOMAXPROCS for every Go process: the C tool's processes are single
# threaded, a Go process runs one P per vCPU unless told otherwise.
GOENV=()
[ -n "${GO_MAXPROCS:-}" ] && GOENV=(GOMAXPROCS="$GO_MAXPROCS")
RB=$REPO/bin/rdsbench
GB=${GO_BIN:-$REPO/bin/rds-bench} # GO_BIN: ours from another file (an experiment's build)
# BASE (optional): a second rds-bench binary, run as implementation "base" between ours and raw
# Go TCP in every round (a path the VM sees: under the shared repository, not /tmp).
BASE=${BASE:-}
for b in "$RB" "$GB" ${BASE:+"$BASE"}; do
  [ -x "$b" ] || { echo "rds-lab-bench.sh: build $b first (make rds-lab-bench does)" >&2; exit 1; }
done
A=192.168.77.101 B=192.168.77.102
TMP=$(mktemp -d)
cp "$GB" "$TMP/rds-bench"; GB=$TMP/rds-bench
cp "$RB" "$TMP/rdsbench"; RB=$TMP/rdsbench
if [ -n "$BASE" ]; then cp "$BASE" "$TMP/rds-bench-base"; BASE=$TMP/rds-bench-base; fi

res() { echo "RESULT $*"; }
field() { sed -n "s|.*$1=\([0-9.]*\).*|\1|p" <<<"$2"; }

ip netns add rdsA; ip netns add rdsB
# The kernel's RDS/TCP is slow in a VM that is otherwise idle under TCG: its 64 B round trip
# (rdsbench, which blocks in recvfrom) took 2.2-4.0 ms at p50, against 0.26-0.28 ms with a shell
# loop beside it that forks `sleep 0.1` forever. A loop that waits as long without forking did
# not help, nor did nohz=off or idle=poll on the kernel command line. The Go programs, whose
# runtime spins before it sleeps, hardly notice. But the forking loop is not free under TCG: it
# keeps about a seventh of the machine's CPU busy (the WAKER line measures it), which streams
# that use both vCPUs need. So it runs through the round-trip and rate workloads only, for all
# implementations alike, where the C tool blocks for every message or sleeps 50 µs on every
# full send buffer (without the loop the kernel's rate ranged from 1348 to 22520 msg/s over the
# rounds of one boot); the 64 KiB
# throughput workload runs without it (in one boot the kernel moved 38, 86 and 103 MB/s
# without it against 32, 55 and 80 with it, alternating).
WAKER=
waker_on() { ( while :; do sleep 0.1; done ) & WAKER=$!; }
waker_off() {
  [ -n "$WAKER" ] || return 0
  kill "$WAKER" 2>/dev/null || true
  wait "$WAKER" 2>/dev/null || true # killed: a non-zero status
  WAKER=
}
trap 'waker_off; ip netns del rdsA 2>/dev/null; ip netns del rdsB 2>/dev/null; rm -rf "$TMP"' EXIT
# busyshare SECS: the share of the machine's CPU time (all vCPUs) that was busy over SECS.
busyshare() {
  local s0 s1
  s0=$(head -1 /proc/stat); sleep "$1"; s1=$(head -1 /proc/stat)
  awk 'NR == 1 { b0 = $2+$3+$4+$7+$8+$9; i0 = $5+$6 }
    NR == 2 { b = $2+$3+$4+$7+$8+$9 - b0; i = $5+$6 - i0; printf "%.1f", 100 * b / (b + i) }' \
    <(echo "$s0"; echo "$s1")
}
idle=$(busyshare 3); waker_on; woke=$(busyshare 3); waker_off
echo "WAKER machine CPU busy: ${idle}% idle, ${woke}% with the waker" >&2
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

gobench() { # BACKEND MODE SIZE [BINARY]: one rds-bench pair; prints the line with the figures
  local be=$1 mode=$2 sz=$3 GB=${4:-$GB} out
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

# one IMPL WORKLOAD: one run; prints its lines on stderr and its RESULT line.
one() {
  local o
  case $1.$2 in
  kernel.rate) o=$(ktput 64) ;;
  kernel.tput) o=$(ktput 65536) ;;
  kernel.rtt) o=$($RB pingpong 64 "$ITERS" $NS) ;;
  base.rtt) o=$(gobench tcp pingpong 64 "$BASE") ;;
  base.rate) o=$(gobench tcp tput 64 "$BASE") ;;
  base.tput) o=$(gobench tcp tput 65536 "$BASE") ;;
  *.rtt) o=$(gobench "$(backend "$1")" pingpong 64) ;;
  *.rate) o=$(gobench "$(backend "$1")" tput 64) ;;
  *.tput) o=$(gobench "$(backend "$1")" tput 65536) ;;
  esac
  echo "$o" >&2
  case $2 in
  rate) res "$(prefix "$1")_rate_64" "$(field msgs/s "$o")" msg/s ;;
  tput) res "$(prefix "$1")_tput_65536" "$(field MB/s "$o")" MB/s ;;
  rtt) res "$(prefix "$1")_rtt_64" "$(field p50 "$o")" us_p50 ;;
  esac
}
backend() { case $1 in kapi) echo kernel ;; go) echo tcp ;; raw) echo rawtcp ;; esac; }
prefix() { case $1 in kernel | kapi | go | base) echo "rds_$1" ;; raw) echo raw_go ;; esac; }

# paired NAME INV [BASE]: the per-round ratios rds_go / BASE (rds_kernel unless given) of RESULT
# lines NAME (from $LOG), and their median and range; for a round trip (INV non-empty) the
# ratio is the base's over ours, so that above 1 is ours better in every line.
paired() {
  awk -v name="$1" -v inv="$2" -v base="${3:-rds_kernel}" '
    $1 == "RESULT" && $2 == base "_" name { k[++nk] = $3 }
    $1 == "RESULT" && $2 == "rds_go_" name { g[++ng] = $3 }
    END {
      n = nk < ng ? nk : ng; line = ""
      if (n == 0) { printf "PAIRED %s %s: no rounds\n", name, base; exit }
      for (i = 1; i <= n; i++) {
        r[i] = (inv ? (g[i] > 0 ? k[i] / g[i] : 0) : (k[i] > 0 ? g[i] / k[i] : 0))
        line = line sprintf(" %.3f", r[i])
      }
      for (i = 2; i <= n; i++) for (j = i; j > 1 && r[j-1] > r[j]; j--) { t = r[j]; r[j] = r[j-1]; r[j-1] = t }
      med = n % 2 ? r[(n+1)/2] : (r[n/2] + r[n/2+1]) / 2
      b = base == "rds_kernel" ? "kernel" : base
      printf "PAIRED %s %s per round:%s | median %.3f [%.3f..%.3f] over %d rounds\n", name,
        (inv ? b "/go" : "go/" b), line, med, r[1], r[n], n
    }' "$LOG"
}

echo "Go processes: GOMAXPROCS=${GO_MAXPROCS:-default}" >&2
LOG=$TMP/results
for r in $(seq "$REPS"); do
  echo "== round $r" >&2
  order="kernel kapi go ${BASE:+base }raw"
  [ $((r % 2)) = 0 ] && order="raw ${BASE:+base }go kapi kernel"
  echo "order: $order" >&2
  for w in $WORKLOADS; do
    [ $w != tput ] && waker_on
    for i in $order; do one "$i" "$w"; done
    waker_off
  done | tee -a "$LOG"
done
echo "== paired: ours (rds_go) against the kernel (rds_kernel), round by round" >&2
{
  for w in $WORKLOADS; do
    case $w in rate) paired rate_64 "" ;; tput) paired tput_65536 "" ;; rtt) paired rtt_64 1 ;; esac
  done
  # The round trip against plain Go TCP in the same rounds: what the transport adds to the Go
  # runtime's own cost, which the kernel's figure includes.
  for w in $WORKLOADS; do
    if [ $w = rtt ]; then paired rtt_64 1 raw_go; fi
  done
  # Ours against the baseline build, when there is one.
  if [ -n "$BASE" ]; then
    for w in $WORKLOADS; do
      case $w in rate) paired rate_64 "" rds_base ;; tput) paired tput_65536 "" rds_base ;; rtt) paired rtt_64 1 rds_base ;; esac
    done
  fi
} >&2
