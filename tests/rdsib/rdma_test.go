//go:build rdmacore

package rdsib

import (
	"bytes"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

// TestRDMAKernelMaps: the kernel's client maps memory with
// RDS_CMSG_RDMA_MAP (USE_ONCE) on a message to a godapl server, which
// RDMA-writes into it, or reads from it, with RDS_CMSG_RDMA_ARGS
// (NOTIFY_ME) tied to its reply: the kernel's buffer holds the bytes
// written when the reply arrives, the bytes read are the kernel's, and
// the server is told RDS_RDMA_SUCCESS.
func TestRDMAKernelMaps(t *testing.T) {
	e, k := setup(t)
	st := e.stack(t)
	s := e.sock(t, st, 4800, 2*time.Minute)
	k.must(t, map[string]any{"op": "open", "port": 4801})
	kaddr := netip.AddrPortFrom(e.peer, 4801)
	// RDS_CMSG_RDMA_MAP registers on the message's connection and fails
	// with EINVAL while that is not up: bring it up first.
	warm := k.bg(t, map[string]any{"op": "recv", "port": 4801, "first": 0, "sizes": []int{8}})
	if err := sendAll(s, kaddr, 0, []int{8}); err != nil {
		t.Fatal(err)
	}
	if _, err := warm(); err != nil {
		t.Fatal(err)
	}
	for i, c := range rdmaOpCases {
		t.Run(c.name(), func(t *testing.T) {
			first := 1000 + i
			wait := k.bg(t, map[string]any{"op": "rdmamap", "port": 4801, "dst": s.BoundAddr().String(),
				"size": c.size, "first": first, "write": c.write})
			m := rdsoverdat.Msg{Data: make([]byte, 64)}
			if _, err := s.RecvMsg(&m, 0); err != nil {
				t.Fatal(err)
			}
			var cookie rdsoverdat.Cookie
			found := false
			for _, cm := range m.Control {
				if d, ok := cm.(rdsoverdat.RDMADest); ok {
					cookie, found = rdsoverdat.Cookie(d), true
				}
			}
			if !found || m.Addr != kaddr {
				t.Fatalf("request from %v without RDMA_DEST: %+v", m.Addr, m.Control)
			}
			local := make([]byte, c.size)
			flags := rdsoverdat.RDMANotifyMe | rdsoverdat.RDMAFence
			if c.write {
				copy(local, pattern(nil, uint64(first), c.size))
				flags |= rdsoverdat.RDMAReadWrite
			}
			args := rdsoverdat.RDMAArgs{Cookie: cookie, RemoteBytes: uint64(c.size), Local: [][]byte{local}, Flags: flags, UserToken: 77}
			note := sendRDMA(t, k, s, kaddr, "done", args)
			if note == nil || note.UserToken != 77 || note.Status != rdsoverdat.RDMASuccess {
				labState(t, k, nil)
				t.Errorf("notification %+v, want token 77 RDS_RDMA_SUCCESS", note)
			}
			res, err := wait()
			if err != nil {
				labState(t, k, res)
				t.Fatal(err)
			}
			if c.write && res["ok_pattern"] != true {
				t.Errorf("the kernel's buffer does not hold what was written (crc %v)", res["crc"])
			}
			if !c.write && !bytes.Equal(local, pattern(nil, uint64(first), c.size)) {
				t.Error("the bytes read are not the kernel's")
			}
			t.Logf("cookie %#x: R_Key %#x offset %#x", uint64(cookie), cookie.RKey(), cookie.Offset())
		})
	}
}

// TestRDMABadCookie: an op on a cookie whose R_Key the kernel never
// issued fails at the kernel's responder: the server is told
// RDS_RDMA_REMOTE_ERROR, the message behind the op is never delivered,
// and the connection, which the error broke, comes back for the next
// message.
func TestRDMABadCookie(t *testing.T) {
	e, k := setup(t)
	st := e.stack(t)
	s := e.sock(t, st, 4900, 2*time.Minute)
	k.must(t, map[string]any{"op": "open", "port": 4901})
	kaddr := netip.AddrPortFrom(e.peer, 4901)
	warm := k.bg(t, map[string]any{"op": "recv", "port": 4901, "first": 0, "sizes": []int{8}})
	if err := sendAll(s, kaddr, 0, []int{8}); err != nil {
		t.Fatal(err)
	}
	if _, err := warm(); err != nil {
		t.Fatal(err)
	}
	wait := k.bg(t, map[string]any{"op": "recv", "port": 4901, "first": 1, "sizes": []int{8}})
	local := make([]byte, 4096)
	args := rdsoverdat.RDMAArgs{Cookie: rdsoverdat.MakeCookie(0x7fff00, 0), RemoteBytes: 4096, Local: [][]byte{local},
		Flags: rdsoverdat.RDMANotifyMe | rdsoverdat.RDMAReadWrite, UserToken: 78}
	note := sendRDMA(t, k, s, kaddr, "lost", args)
	if note == nil || note.UserToken != 78 || note.Status != rdsoverdat.RDMARemoteError {
		t.Errorf("notification %+v, want token 78 RDS_RDMA_REMOTE_ERROR", note)
	}
	// The kernel's next message is the one after the failed op's.
	if err := sendAll(s, kaddr, 1, []int{8}); err != nil {
		t.Fatal(err)
	}
	if _, err := wait(); err != nil {
		t.Fatal(err)
	}
}

// sendRDMA sends data to dst with the RDMA op args, which asks for a
// notification, and returns the RDMANotify of the next message s
// receives (nil if it carries none). A receive that fails logs the
// state of both VMs (labState) through k.
func sendRDMA(t *testing.T, k *kpeer, s *rdsoverdat.Socket, dst netip.AddrPort, data string, args rdsoverdat.RDMAArgs) *rdsoverdat.RDMANotify {
	t.Helper()
	if _, err := s.SendMsg(&rdsoverdat.Msg{Data: []byte(data), Addr: dst, Control: []rdsoverdat.ControlMessage{args}}, 0); err != nil {
		t.Fatal(err)
	}
	n := rdsoverdat.Msg{Data: make([]byte, 64)}
	if _, err := s.RecvMsg(&n, 0); err != nil {
		labState(t, k, nil)
		t.Fatal(err)
	}
	var note *rdsoverdat.RDMANotify
	for _, cm := range n.Control {
		if x, ok := cm.(rdsoverdat.RDMANotify); ok {
			note = &x
		}
	}
	return note
}

// rdmaOpCase is one RDMA op of the kernel-RDMA tests: a write or a read
// of size bytes.
type rdmaOpCase struct {
	write bool
	size  int
}

// rdmaOpCases are the sizes both directions of RDMA are tried with.
var rdmaOpCases = []rdmaOpCase{{true, 64}, {true, 65536}, {true, 1 << 20}, {false, 64}, {false, 65536}, {false, 1 << 20}}

// name is the subtest's name: write-SIZE or read-SIZE.
func (c rdmaOpCase) name() string {
	if c.write {
		return fmt.Sprintf("write-%d", c.size)
	}
	return fmt.Sprintf("read-%d", c.size)
}
