package rdsoverdat

import (
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/verbs/mem"
)

// A send with RDS_CMSG_RDMA_MAP that fails leaves no mapping behind and
// writes no cookie, whatever the error: an application retrying on
// EAGAIN must not run into the node's mapping limit. The node allows 4
// mappings; each case fails 50 times (5 for the waits), then a send
// that can go through gets its mapping and cookie.
func TestRDMAMapFailedSendLeavesNoMapping(t *testing.T) {
	const maxMRs = 4
	win := make([]byte, 64)
	// try sends one RDMA_MAP request from s to dst with flags and
	// returns the error and the cookie it wrote.
	try := func(t *testing.T, s *Socket, dst *Socket, flags MsgFlags) (Cookie, error) {
		var ck Cookie
		_, err := s.SendMsg(&Msg{Data: []byte("req"), Addr: dst.BoundAddr(),
			Control: []ControlMessage{RDMAMap{Mem: win, CookieAddr: &ck, Flags: RDMAReadWrite}}}, flags)
		return ck, err
	}
	// failing runs try n times; each must fail as want says and leave
	// the socket and its node without a mapping.
	failing := func(t *testing.T, r *rdmaRig, s, dst *Socket, flags MsgFlags, n int, want func(error) bool) {
		t.Helper()
		node := r.st.nodeAt(r.cliNode)
		for i := range n {
			ck, err := try(t, s, dst, flags)
			if !want(err) {
				t.Fatalf("attempt %d: %v", i, err)
			}
			if ck != 0 {
				t.Fatalf("attempt %d: cookie %#x written by a failed send", i, ck)
			}
			if k, nk := s.MRs(), node.rdmaMRs.Load(); k != 0 || nk != 0 {
				t.Fatalf("attempt %d (%v): socket holds %d mappings, node %d", i, err, k, nk)
			}
		}
	}
	is := func(target error) func(error) bool { return func(err error) bool { return errors.Is(err, target) } }
	// succeeds sends a request that goes through: one mapping, its cookie.
	succeeds := func(t *testing.T, r *rdmaRig, s, dst *Socket) {
		t.Helper()
		ck, err := try(t, s, dst, 0)
		if err != nil {
			t.Fatalf("send after the failures: %v", err)
		}
		if ck == 0 || s.MRs() != 1 {
			t.Fatalf("cookie %#x, %d mappings; want a cookie and 1", ck, s.MRs())
		}
		if err := s.FreeMR(ck, 0); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("EAGAIN", func(t *testing.T) {
		leakCheck(t)
		r := newMemRig(t, RDMALimits{MaxMRs: maxMRs})
		if err := r.cli.SetOption(SendBuffer(100)); err != nil {
			t.Fatal(err)
		}
		r.mem.hold.Store(true) // transmitted, never acknowledged: SO_SNDBUF stays full
		if _, err := r.cli.SendTo(make([]byte, 100), r.srv.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		failing(t, r, r.cli, r.srv, MsgDontWait, 50, is(syscall.EAGAIN))
	})

	t.Run("ETIMEDOUT and deadline", func(t *testing.T) {
		leakCheck(t)
		r := newMemRig(t, RDMALimits{MaxMRs: maxMRs})
		if err := r.cli.SetOption(SendBuffer(100)); err != nil {
			t.Fatal(err)
		}
		r.mem.hold.Store(true)
		if _, err := r.cli.SendTo(make([]byte, 100), r.srv.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		if err := r.cli.SetOption(SendTimeout(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		failing(t, r, r.cli, r.srv, 0, 5, is(syscall.ETIMEDOUT))
		if err := r.cli.SetOption(SendTimeout(0)); err != nil {
			t.Fatal(err)
		}
		r.cli.SetWriteDeadline(time.Now().Add(-time.Second))
		failing(t, r, r.cli, r.srv, 0, 5, is(os.ErrDeadlineExceeded))
		r.cli.SetWriteDeadline(time.Now().Add(time.Millisecond))
		failing(t, r, r.cli, r.srv, 0, 5, is(os.ErrDeadlineExceeded))
	})

	t.Run("ENOBUFS", func(t *testing.T) {
		leakCheck(t)
		// The dat transport: the test transport sends no congestion maps.
		r := newDATRig(t, DATConfig{Registry: registryOn(mem.New()), IA: "mem", RDMA: RDMALimits{MaxMRs: maxMRs}})
		full := r.socket(t, r.srvNode)
		if err := full.SetOption(RecvBuffer(10)); err != nil {
			t.Fatal(err)
		}
		if _, err := r.cli.SendTo(make([]byte, 20), full.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		conn := r.st.nodeAt(r.cliNode).connFor(r.srvNode, TransIB)
		eventually(t, 5*time.Second, "peer map update", func() bool { return conn.fcong.test(wire.Port(full.BoundAddr().Port())) })
		failing(t, r, r.cli, full, MsgDontWait, 50, is(syscall.ENOBUFS))
		// A blocking send waits for the port, and gives up at SO_SNDTIMEO.
		if err := r.cli.SetOption(SendTimeout(time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		failing(t, r, r.cli, full, 0, 5, is(syscall.ETIMEDOUT))
		if err := r.cli.SetOption(SendTimeout(0)); err != nil {
			t.Fatal(err)
		}
		succeeds(t, r, r.cli, r.srv) // another port is not congested
	})

	t.Run("close", func(t *testing.T) {
		leakCheck(t)
		r := newMemRig(t, RDMALimits{MaxMRs: maxMRs})
		node := r.st.nodeAt(r.cliNode)
		for i := range 5 {
			s := r.socket(t, r.cliNode)
			if err := s.SetOption(SendBuffer(100)); err != nil {
				t.Fatal(err)
			}
			r.mem.hold.Store(true)
			if _, err := s.SendTo(make([]byte, 100), r.srv.BoundAddr(), 0); err != nil {
				t.Fatal(err)
			}
			type result struct {
				ck  Cookie
				err error
			}
			done := make(chan result, 1)
			blocked := node.sndBlocked.Load()
			go func() {
				ck, err := try(t, s, r.srv, 0)
				done <- result{ck, err}
			}()
			eventually(t, 5*time.Second, "sender blocked for room", func() bool { return node.sndBlocked.Load() > blocked })
			s.Close()
			res := <-done
			if res.err == nil || res.ck != 0 {
				t.Fatalf("round %d: send on a closed socket: cookie %#x, err %v", i, res.ck, res.err)
			}
			if k := node.rdmaMRs.Load(); k != 0 {
				t.Fatalf("round %d: node holds %d mappings", i, k)
			}
		}
		r.mem.hold.Store(false)
		succeeds(t, r, r.cli, r.srv)
	})

	t.Run("ok after failures", func(t *testing.T) {
		leakCheck(t)
		r := newMemRig(t, RDMALimits{MaxMRs: maxMRs})
		if err := r.cli.SetOption(SendBuffer(100)); err != nil {
			t.Fatal(err)
		}
		r.mem.hold.Store(true)
		if _, err := r.cli.SendTo(make([]byte, 100), r.srv.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		failing(t, r, r.cli, r.srv, MsgDontWait, 2*maxMRs, is(syscall.EAGAIN))
		r.mem.hold.Store(false)
		r.st.nodeAt(r.cliNode).Conn(r.srvNode, TransIB).Reset() // the parked message goes again
		eventually(t, 5*time.Second, "SO_SNDBUF room", func() bool { snd, _ := r.cli.Buffered(); return snd == 0 })
		succeeds(t, r, r.cli, r.srv)
	})
}
