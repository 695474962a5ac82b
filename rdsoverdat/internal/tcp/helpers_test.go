package tcp

import (
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// leakCheck fails t if goroutines started during it outlive it.
func leakCheck(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// testMsg is a message as the core hands it to a transport: a header, a
// payload and a reference count, which starts at one (the caller's).
type testMsg struct {
	hdr  [wire.HeaderLen]byte
	buf  []byte
	refs atomic.Int32
}

var _ xport.Msg = (*testMsg)(nil)

func newTestMsg(n int) *testMsg {
	m := &testMsg{buf: make([]byte, n)}
	m.refs.Store(1)
	return m
}

func (m *testMsg) Header() wire.Header  { return m.hdr[:] }
func (m *testMsg) Payload() []byte      { return m.buf }
func (m *testMsg) Retransmitted() bool  { return false }
func (m *testMsg) AckRequired() bool    { return false }
func (m *testMsg) IsCongMap() bool      { return false }
func (m *testMsg) WireFlags() wire.Flag { return 0 }
func (m *testMsg) SetAckKey(uint64)     {}
func (m *testMsg) RDMA() xport.RDMAOp   { return nil }
func (m *testMsg) Hold()                { m.refs.Add(1) }
func (m *testMsg) Release()             { m.refs.Add(-1) }
