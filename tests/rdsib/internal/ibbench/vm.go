package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Both lab VMs' vCPUs share the host's cores, so what one VM spends is
// taken from the other: the figure that ranks the two implementations is
// each VM's whole CPU per message (the kernel's rxe tasks, softirqs and
// the process together), not the measured process's alone. vmSnap is that
// VM-wide view at a moment: /proc/stat's CPU ticks and the RDMA devices'
// hw_counters (RNR NAKs, retries, out-of-sequence and duplicate requests).
type vmSnap struct {
	ticks [8]uint64         // user nice system idle iowait irq softirq steal
	hw    map[string]uint64 // "device/counter"
}

// clkTck is USER_HZ, the unit of /proc/stat's ticks; Linux reports 100
// on every architecture it runs on.
const clkTck = 100

func snapVM() vmSnap {
	var s vmSnap
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		line, _, _ := bytes.Cut(b, []byte("\n"))
		f := strings.Fields(string(line))
		for i := 0; i < len(s.ticks) && i+1 < len(f); i++ {
			s.ticks[i], _ = strconv.ParseUint(f[i+1], 10, 64)
		}
	}
	s.hw = map[string]uint64{}
	files, _ := filepath.Glob("/sys/class/infiniband/*/ports/*/hw_counters/*")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			continue
		}
		dev := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(p)))))
		s.hw[dev+"/"+filepath.Base(p)] = v
	}
	return s
}

// printVM prints a VM line, the VM's CPU between a and b per message
// (busy is every tick but idle and iowait; user, system and softirq
// apart) and the share of its vCPUs' time it was busy, and an RXE line
// of the hw_counters that moved, as deltas.
func printVM(role string, a, b vmSnap, msgs uint64) {
	if msgs == 0 {
		return
	}
	var d [8]float64
	var total float64
	for i := range d {
		d[i] = float64(b.ticks[i] - a.ticks[i])
		total += d[i]
	}
	busy := total - d[3] - d[4]
	us := func(t float64) float64 { return t * 1e6 / clkTck / float64(msgs) }
	share := 0.0
	if total > 0 {
		share = busy / total
	}
	fmt.Printf("VM role=%s msgs=%d vm_cpu_us_per_msg=%.2f user_us=%.2f sys_us=%.2f softirq_us=%.2f busy=%.3f\n",
		role, msgs, us(busy), us(d[0]+d[1]), us(d[2]+d[5]), us(d[6]), share)
	var keys []string
	for k, v := range b.hw {
		if v != a.hw[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var sb strings.Builder
	fmt.Fprintf(&sb, "RXE role=%s msgs=%d", role, msgs)
	for _, k := range keys {
		fmt.Fprintf(&sb, " %s=%d", k, b.hw[k]-a.hw[k])
	}
	fmt.Println(sb.String())
}
