//go:build rdmacore

package rdsib

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// kpeer is the control connection to testdata/kpeer.py, the kernel's
// side: one request line, one answer line.
type kpeer struct {
	mu sync.Mutex
	c  net.Conn
	r  *bufio.Reader
	n  int // background job ids
}

func dialKpeer(t *testing.T, addr string) *kpeer {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 30*time.Second)
	if err != nil {
		t.Fatalf("kpeer at %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &kpeer{c: c, r: bufio.NewReader(c)}
}

// call runs one operation and returns its answer; a failed operation is
// an error.
func (k *kpeer) call(req map[string]any) (map[string]any, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	b, _ := json.Marshal(req)
	if _, err := k.c.Write(append(b, '\n')); err != nil {
		return nil, err
	}
	line, err := k.r.ReadBytes('\n')
	if err != nil {
		return nil, err
	}
	var res map[string]any
	if err := json.Unmarshal(line, &res); err != nil {
		return nil, err
	}
	if ok, _ := res["ok"].(bool); !ok {
		return res, fmt.Errorf("kernel %v: %v", req["op"], res["err"])
	}
	return res, nil
}

// must is call that fails the test.
func (k *kpeer) must(t *testing.T, req map[string]any) map[string]any {
	t.Helper()
	res, err := k.call(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// bg starts req in the background; the returned function waits for its
// answer.
func (k *kpeer) bg(t *testing.T, req map[string]any) func() (map[string]any, error) {
	t.Helper()
	k.mu.Lock()
	k.n++
	id := k.n
	k.mu.Unlock()
	req["bg"] = id
	k.must(t, req)
	return func() (map[string]any, error) { return k.call(map[string]any{"op": "wait", "id": id}) }
}

// The message contents both sides make and check (kpeer.py's pattern):
// message k of n bytes is k's 8-byte big-endian index, then a byte ramp
// starting at k % 251, cut to n bytes.
var ramp = func() []byte {
	b := make([]byte, 1<<20+251)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}()

func pattern(dst []byte, k uint64, n int) []byte {
	dst = binary.BigEndian.AppendUint64(dst[:0], k)
	dst = append(dst, ramp[k%251:k%251+uint64(n)]...)
	return dst[:n]
}
