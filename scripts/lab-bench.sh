#!/bin/bash
# Side-by-side RDMA Write bandwidth of the kernel's siw and of godapl's soft-iWARP, measured inside
# one boot of the lab VM (both emulated alike under TCG), interleaved kernel/godapl REPS times.
# Prints "RESULT <name> <value> <unit>" lines that tests/lab/bench/summarize.py turns into a table.
#
# Run from the host:  make lab-bench       (builds bin/rdma-perf, boots the VM with the repo shared)
# or inside the VM:   scripts/lab-bench.sh (with bin/rdma-perf built beforehand)
#
# perftest under TCG cannot calibrate its cycle counter (it reports 0), so the kernel's
# bandwidth is (N2 - N1) x size over the wall-clock difference of runs with N1 and N2
# iterations (the shorter of two runs each), which cancels process start and connection setup. godapl's figure is rdma-perf's own
# measurement: 16 writes of 64 KiB in flight for -d seconds, ended by an RDMA Read that proves every
# byte was placed. Both run on siw0's address, so both go through the VM's loopback.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd -P)
REPS=${REPS:-3}
ADDR=${ADDR:-192.168.77.2}
DEV=${DEV:-siw0}
SECS=${SECS:-5}
PERF=$REPO/bin/rdma-perf
[ -x "$PERF" ] || { echo "lab-bench.sh: build $PERF first (make lab-bench does)" >&2; exit 1; }

res() { echo "RESULT $*"; }
waitport() { for _ in $(seq 150); do ss -ltn | grep -q ":$1 " && return 0; sleep 0.2; done; return 1; }
timed() { local a b; a=$(date +%s.%N); "$@" >/tmp/lab-bench.out 2>&1; b=$(date +%s.%N); python3 -c "print($b-$a)"; }

ib_pair() { # ib_pair N: one ib_write_bw -R server and client, N writes of 64 KiB; prints the
  # client's wall-clock seconds
  ib_write_bw -R -d "$DEV" -s 65536 -n "$1" -F >/tmp/lab-bench-srv.out 2>&1 &
  local srv=$! t
  waitport 18515 || sleep 2
  t=$(timed timeout 300 ib_write_bw -R -d "$DEV" -s 65536 -n "$1" -F "$ADDR")
  wait $srv
  echo "  ib_write_bw -n $1: $t s" >&2
  echo "$t"
}

# ib_best N: the shorter of two ib_pair N runs. Connection set-up under TCG varies by a second or
# more from run to run, and only ever adds time.
ib_best() {
  local a b
  a=$(ib_pair "$1")
  b=$(ib_pair "$1")
  python3 -c 'import sys; print(min(map(float, sys.argv[1:])))' "$a" "$b"
}

kernel_write_bw() { # one kernel figure: ib_write_bw -R, 64 KiB, wall-clock difference
  # 5000 writes (328 MB) take 2-3 s in the VM, several times the set-up's spread.
  local n1=200 n2=5200 t1 t2
  t1=$(ib_best $n1)
  t2=$(ib_best $n2)
  python3 - "$t1" "$t2" 65536 "$n1" "$n2" <<'P'
import sys
t1, t2, sz, n1, n2 = map(float, sys.argv[1:])
print("%.1f" % ((n2 - n1) * sz / (t2 - t1) / 1e6))
P
}

godapl_write_bw() { # one godapl figure: rdma-perf write64k over siw on $ADDR
  "$PERF" -a "$ADDR" -t write64k -d "${SECS}s" -notcp -json >/tmp/lab-bench-godapl.json
  echo "  rdma-perf: $(tr -d ' \n' </tmp/lab-bench-godapl.json)" >&2
  python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"][0]; print("%.1f" % r["rdma"])' /tmp/lab-bench-godapl.json
}

# The VM reads programs and libraries from the host over 9p at their first use, which under TCG
# takes seconds: a first, unmeasured pair puts perftest in the VM's page cache, so that it slows
# neither timed run (once it made the shorter run the slower one).
ib_pair 20 >/dev/null
for r in $(seq "$REPS"); do
  res siw_kernel_ib_write_bw_64k "$(kernel_write_bw)" MB/s
  res siw_godapl_write_bw_64k "$(godapl_write_bw)" MB/s
done
