//go:build rdmacore

package rdsib

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// labState logs where an RDMA op between the two VMs that did not end as
// it should stopped, so that an op lost in the lab names its cause: the
// kernel VM's side as kpeer found it when it gave up on the op
// (res["diag"]; asked for now when res has none), then this VM's. Each
// side gives its RDMA devices' hw_counters (retries, duplicate and
// out-of-sequence requests, RNR NAKs) and its QPs with their send and
// receive PSNs, which tell a lost request, a lost response and a
// requester that stopped retrying apart; the kernel's side adds its RDS
// counters.
func labState(t *testing.T, k *kpeer, res map[string]any) {
	t.Helper()
	d, ok := res["diag"]
	if !ok {
		r, err := k.call(map[string]any{"op": "diag"})
		if err != nil {
			t.Logf("the kernel's side: %v", err)
		}
		d = r
	}
	b, _ := json.Marshal(d)
	t.Logf("the kernel's side: %s", b)
	b, _ = json.Marshal(map[string]any{"hw_counters": hwCounters(), "qps": qps()})
	t.Logf("this side: %s", b)
}

// hwCounters returns this VM's RDMA hw_counters that are not 0, by
// device/counter.
func hwCounters() map[string]int64 {
	c := map[string]int64{}
	dirs, _ := filepath.Glob("/sys/class/infiniband/*/ports/*/hw_counters")
	for _, dir := range dirs {
		dev := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(dir))))
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			if v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && v != 0 {
				c[dev+"/"+e.Name()] = v
			}
		}
	}
	return c
}

// qps returns this VM's QPs as `rdma resource show qp` lists them.
func qps() []string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rdma", "resource", "show", "qp").CombinedOutput()
	if err != nil {
		return []string{err.Error()}
	}
	return strings.Split(strings.TrimSpace(string(out)), "\n")
}
