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
// VM-wide view at a moment: /proc/stat's CPU ticks, interrupts and
// context switches (counts, which follow the rate less than CPU time
// does once the host's cores are full), and the RDMA devices'
// hw_counters (RNR NAKs, retries, out-of-sequence and duplicate requests).
type vmSnap struct {
	ticks [8]uint64         // user nice system idle iowait irq softirq steal
	cpus  [][8]uint64       // the same per vCPU, in /proc/stat's order
	intr  uint64            // interrupts taken, all vCPUs
	ctxt  uint64            // context switches, all vCPUs
	hw    map[string]uint64 // "device/counter"
}

// clkTck is USER_HZ, the unit of /proc/stat's ticks; Linux reports 100
// on every architecture it runs on.
const clkTck = 100

func snapVM() vmSnap {
	var s vmSnap
	if b, err := os.ReadFile("/proc/stat"); err == nil {
		for _, line := range bytes.Split(b, []byte("\n")) {
			f := strings.Fields(string(line))
			if len(f) >= 2 && (f[0] == "intr" || f[0] == "ctxt") {
				v, _ := strconv.ParseUint(f[1], 10, 64)
				if f[0] == "intr" {
					s.intr = v
				} else {
					s.ctxt = v
				}
				continue
			}
			if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
				continue
			}
			var t [8]uint64
			for i := 0; i < len(t) && i+1 < len(f); i++ {
				t[i], _ = strconv.ParseUint(f[i+1], 10, 64)
			}
			if f[0] == "cpu" {
				s.ticks = t
			} else {
				s.cpus = append(s.cpus, t)
			}
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

// tickDelta returns the ticks of each kind from a to b (/proc/stat's
// order), their total and the busy ones: all but idle and iowait.
func tickDelta(a, b [8]uint64) (d [8]float64, total, busy float64) {
	for i := range d {
		d[i] = float64(b[i] - a[i])
		total += d[i]
	}
	return d, total, total - d[3] - d[4]
}

// printVM prints a VM line, the VM's CPU between a and b per message
// (busy is every tick but idle and iowait; user, system and softirq
// apart) and the share of its vCPUs' time it was busy, and an RXE line
// of the hw_counters that moved, as deltas.
func printVM(role string, a, b vmSnap, msgs uint64) {
	if msgs == 0 {
		return
	}
	d, total, busy := tickDelta(a.ticks, b.ticks)
	us := func(t float64) float64 { return t * 1e6 / clkTck / float64(msgs) }
	share := 0.0
	if total > 0 {
		share = busy / total
	}
	// Per vCPU, busy and softirq shares of its time: where the work
	// (rxe receives in the network softirq) lands, which a boot may place
	// differently.
	var pb, ps strings.Builder
	for i := range b.cpus {
		if i >= len(a.cpus) {
			break
		}
		c, t, cbusy := tickDelta(a.cpus[i], b.cpus[i])
		sep := "/"
		if i == 0 {
			sep = ""
		}
		if t > 0 {
			fmt.Fprintf(&pb, "%s%.2f", sep, cbusy/t)
			fmt.Fprintf(&ps, "%s%.2f", sep, c[6]/t)
		}
	}
	fmt.Printf("VM role=%s msgs=%d vm_cpu_us_per_msg=%.2f user_us=%.2f sys_us=%.2f softirq_us=%.2f busy=%.3f busy_cpu=%s softirq_cpu=%s intr_per_msg=%.3f ctxt_per_msg=%.3f\n",
		role, msgs, us(busy), us(d[0]+d[1]), us(d[2]+d[5]), us(d[6]), share, pb.String(), ps.String(),
		float64(b.intr-a.intr)/float64(msgs), float64(b.ctxt-a.ctxt)/float64(msgs))
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
