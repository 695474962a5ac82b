//go:build rdmacore

package rdsib

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

// The kernel RDMA-ing into godapl's memory: a godapl socket maps memory
// and sends the cookie to a kernel socket (RDS_CMSG_RDMA_DEST), whose
// RDS_CMSG_RDMA_ARGS op, tied to its reply, writes into the memory or
// reads from it. The kernel addresses the cookie zero-based
// (remote_vec.addr plus the cookie's offset), which godapl's mappings on
// RoCE are. Statuses are the kernel's (rds-rdma(7)): NOTIFY_ME reports
// RDS_RDMA_SUCCESS, or RDS_RDMA_REMOTE_ERROR for an op godapl's device
// refused; the owner of the memory is told nothing.

// Kernel statuses (struct rds_rdma_notify).
const (
	rdmaSuccess     = 0
	rdmaRemoteError = 1
)

// skew puts mapped memory off any page start, so that a cookie's offset
// is not 0.
const skew = 1234

// ownerSetup binds a godapl socket on port and a kernel socket on port+1
// and brings their connection up.
func ownerSetup(t *testing.T, port uint16) (*rdsoverdat.Socket, netip.AddrPort, *kpeer) {
	e, k := setup(t)
	st := e.stack(t)
	s := e.sock(t, st, port, 3*time.Minute)
	k.must(t, map[string]any{"op": "open", "port": port + 1})
	kaddr := netip.AddrPortFrom(e.peer, port+1)
	warm := k.bg(t, map[string]any{"op": "recv", "port": port + 1, "first": 0, "sizes": []int{8}})
	if err := sendAll(s, kaddr, 0, []int{8}); err != nil {
		t.Fatal(err)
	}
	if _, err := warm(); err != nil {
		t.Fatal(err)
	}
	return s, kaddr, k
}

// kernelOp has the kernel socket at kaddr run an op on the cookie of the
// next message it receives; send sends that message. It returns the
// kernel's answer (status, cookie, check of the bytes read).
func kernelOp(t *testing.T, k *kpeer, s *rdsoverdat.Socket, kaddr netip.AddrPort, req map[string]any, send func()) map[string]any {
	t.Helper()
	req["op"], req["port"], req["dst"] = "rdmaargs", int(kaddr.Port()), s.BoundAddr().String()
	wait := k.bg(t, req)
	send()
	res, err := wait()
	if err != nil {
		labState(t, k, res)
		t.Fatal(err)
	}
	return res
}

// expectReply receives the kernel's message behind its op: message first
// of 64 bytes.
func expectReply(t *testing.T, s *rdsoverdat.Socket, kaddr netip.AddrPort, first int) {
	t.Helper()
	if err := recvAll(s, kaddr, first, []int{64}); err != nil {
		t.Fatal(err)
	}
}

func guarded(size int) (mem, win []byte) {
	mem = bytes.Repeat([]byte{0xa5}, size+2*skew)
	return mem, mem[skew : skew+size]
}

func untouchedGuards(t *testing.T, mem []byte) {
	t.Helper()
	for _, b := range [][]byte{mem[:skew], mem[len(mem)-skew:]} {
		if !bytes.Equal(b, bytes.Repeat([]byte{0xa5}, skew)) {
			t.Fatal("bytes outside the mapping changed")
		}
	}
}

// TestRDMAKernelOps: godapl maps memory with RDS_CMSG_RDMA_MAP
// (USE_ONCE) on a message to the kernel, which writes into it or reads
// from it (NOTIFY_ME, FENCE) with its reply: the memory holds the bytes
// written when the reply arrives, the kernel reads godapl's bytes, the
// kernel is told RDS_RDMA_SUCCESS, and the mapping is gone once the
// reply arrived.
func TestRDMAKernelOps(t *testing.T) {
	s, kaddr, k := ownerSetup(t, 4810)
	for i, c := range rdmaOpCases {
		t.Run(c.name(), func(t *testing.T) {
			first := 2000 + i
			mem, win := guarded(c.size)
			flags := rdsoverdat.RDMAUseOnce
			if c.write {
				flags |= rdsoverdat.RDMAReadWrite
			} else {
				copy(win, pattern(nil, uint64(first), c.size))
			}
			var ck rdsoverdat.Cookie
			res := kernelOp(t, k, s, kaddr, map[string]any{"size": c.size, "first": first, "write": c.write}, func() {
				m := rdsoverdat.Msg{Data: []byte("map"), Addr: kaddr,
					Control: []rdsoverdat.ControlMessage{rdsoverdat.RDMAMap{Mem: win, CookieAddr: &ck, Flags: flags}}}
				if _, err := s.SendMsg(&m, 0); err != nil {
					t.Fatal(err)
				}
			})
			t.Logf("cookie %#x (offset %#x): the kernel's answer %v", uint64(ck), ck.Offset(), res)
			// The message behind an op that failed never comes.
			if st, _ := res["status"].(float64); res["status"] == nil || st != rdmaSuccess {
				labState(t, k, res)
				t.Fatalf("the kernel's status %v, want RDS_RDMA_SUCCESS", res["status"])
			}
			expectReply(t, s, kaddr, first)
			if got, _ := res["cookie"].(float64); uint64(got) != uint64(ck) || ck.Offset() == 0 {
				t.Errorf("the kernel used cookie %v, godapl made %#x (offset %#x)", res["cookie"], uint64(ck), ck.Offset())
			}
			if c.write && !bytes.Equal(win, pattern(nil, uint64(first), c.size)) {
				t.Error("godapl's memory does not hold what the kernel wrote")
			}
			if !c.write && res["ok_pattern"] != true {
				t.Errorf("the kernel read other bytes (crc %v)", res["crc"])
			}
			untouchedGuards(t, mem)
			if n := s.MRs(); n != 0 {
				t.Errorf("%d mappings left: the use-once mapping outlived its op", n)
			}
		})
	}
}

// TestRDMAKernelOpsOffset: a mapping without USE_ONCE, from GetMR, sent
// with RDS_CMSG_RDMA_DEST, serves several kernel ops at remote_vec.addr
// inside it until FreeMR.
func TestRDMAKernelOpsOffset(t *testing.T) {
	s, kaddr, k := ownerSetup(t, 4820)
	const size = 3 * 4096
	mem, win := guarded(size)
	clear(win)
	ck, err := s.GetMR(win, rdsoverdat.RDMAReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	sendCookie := func() {
		m := rdsoverdat.Msg{Data: []byte("dest"), Addr: kaddr, Control: []rdsoverdat.ControlMessage{rdsoverdat.RDMADest(ck)}}
		if _, err := s.SendMsg(&m, 0); err != nil {
			t.Fatal(err)
		}
	}
	want := make([]byte, size)
	for i, at := range []int{0, 4000, size - 1000} {
		first := 3000 + i
		res := kernelOp(t, k, s, kaddr, map[string]any{"size": 1000, "first": first, "write": true, "remote_addr": at}, sendCookie)
		if st, _ := res["status"].(float64); res["status"] == nil || st != rdmaSuccess {
			labState(t, k, res)
			t.Fatalf("op at %d: the kernel's status %v", at, res["status"])
		}
		expectReply(t, s, kaddr, first)
		copy(want[at:], pattern(nil, uint64(first), 1000))
		if !bytes.Equal(win, want) {
			t.Fatalf("op at remote_vec.addr %d did not land there", at)
		}
	}
	untouchedGuards(t, mem)
	if s.MRs() != 1 {
		t.Fatalf("%d mappings, want the one from GetMR", s.MRs())
	}
	if err := s.FreeMR(ck, 0); err != nil {
		t.Fatal(err)
	}
}

// TestRDMAKernelOpsRefused: kernel ops godapl's device refuses (an R_Key
// godapl never issued, a range past the mapping, a write into memory
// mapped read-only) fail at the kernel with RDS_RDMA_REMOTE_ERROR, the
// memory unchanged and the kernel's message behind the op never
// delivered; the connection, which the error broke, comes back, and
// messages flow both ways after each.
func TestRDMAKernelOpsRefused(t *testing.T) {
	s, kaddr, k := ownerSetup(t, 4830)
	const size = 8192
	mem, win := guarded(size)
	ro, err := s.GetMR(win[:4096], 0)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := s.GetMR(win[4096:], rdsoverdat.RDMAReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	orig := bytes.Clone(mem)
	next := 1
	for i, c := range []struct {
		name   string
		ck     rdsoverdat.Cookie
		badkey int
		at     int
	}{{"bad R_Key", rw, 0x5a, 0}, {"past the end", rw, 0, 4000}, {"write to read-only", ro, 0, 0}} {
		t.Run(c.name, func(t *testing.T) {
			first := 4000 + i
			res := kernelOp(t, k, s, kaddr, map[string]any{"size": 1000, "first": first, "write": true,
				"remote_addr": c.at, "badkey": c.badkey}, func() {
				m := rdsoverdat.Msg{Data: []byte("dest"), Addr: kaddr, Control: []rdsoverdat.ControlMessage{rdsoverdat.RDMADest(c.ck)}}
				if _, err := s.SendMsg(&m, 0); err != nil {
					t.Fatal(err)
				}
			})
			if st, _ := res["status"].(float64); res["status"] == nil || st != rdmaRemoteError {
				t.Errorf("the kernel's status %v, want RDS_RDMA_REMOTE_ERROR", res["status"])
			}
			if !bytes.Equal(mem, orig) {
				t.Error("a refused op changed godapl's memory")
			}
			// Both ways over the connection that replaced the broken one;
			// the kernel's message behind the op is not among them.
			wait := k.bg(t, map[string]any{"op": "recv", "port": int(kaddr.Port()), "first": next, "sizes": []int{8}})
			if err := sendAll(s, kaddr, next, []int{8}); err != nil {
				t.Fatal(err)
			}
			if _, err := wait(); err != nil {
				t.Fatal(err)
			}
			k.must(t, map[string]any{"op": "send", "port": int(kaddr.Port()), "dst": s.BoundAddr().String(), "first": next + 1, "sizes": []int{16}})
			if err := recvAll(s, kaddr, next+1, []int{16}); err != nil {
				t.Fatal(err)
			}
			next += 2
		})
	}
	if s.MRs() != 2 {
		t.Fatalf("%d mappings, want 2", s.MRs())
	}
}
