package rdsdproto

import (
	"bytes"
	"net"
	"os"
	"testing"

	"github.com/godapl/godapl/rdsoverdat/internal/shmring"
	"golang.org/x/sys/unix"
)

// ringConns returns two connected Conns whose records travel in rings
// of capacity bytes: a writes what b reads.
func ringConns(t *testing.T, capacity int) (a, b *Conn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*Conn, 2)
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "seqpacket")
		nc, err := net.FileConn(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		conns[i] = NewConn(nc.(*net.UnixConn))
	}
	atob, err := shmring.Create(capacity)
	if err != nil {
		t.Fatal(err)
	}
	btoa, err := shmring.Create(capacity)
	if err != nil {
		t.Fatal(err)
	}
	peer := func(r *shmring.Ring) *shmring.Ring {
		p, err := shmring.Attach(r.Files())
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	conns[0].UseRings(atob, peer(btoa))
	conns[1].UseRings(btoa, peer(atob))
	t.Cleanup(func() {
		conns[0].Close()
		conns[1].Close()
	})
	return conns[0], conns[1]
}

// A record begun with TryReserve is written in place and read whole;
// while it is open nothing else is written, an aborted one leaves
// nothing, and no room (a full ring, a body beyond one record) is a
// refusal, never a wait.
func TestConnTryReserve(t *testing.T) {
	a, b := ringConns(t, shmring.MinCapacity)
	body, ok := a.TryReserve(100)
	if !ok || len(body) != 0 || cap(body) != 100 {
		t.Fatalf("TryReserve: len %d cap %d %v", len(body), cap(body), ok)
	}
	if _, ok := a.TryReserve(10); ok {
		t.Fatal("a second record begun while one is open")
	}
	body = append(body, "in place"...)
	var hb [HeaderLen]byte
	h := New(hb[:], OpRecv, 7, 0)
	h.SetFlags(FlagReply | FlagMore)
	h.SetC(3)
	if err := a.CommitReserved(h, len(body)); err != nil {
		t.Fatal(err)
	}
	var buf []byte
	r, err := b.TryReadRing(&buf)
	if r == nil || err != nil {
		t.Fatalf("nothing read: %v", err)
	}
	if r.Op() != OpRecv || r.ID() != 7 || r.C() != 3 || r.Flags() != FlagReply || !bytes.Equal(r.Body(), []byte("in place")) {
		t.Fatalf("read op %v id %d c %d flags %#x body %q", r.Op(), r.ID(), r.C(), r.Flags(), r.Body())
	}
	if _, ok := a.TryReserve(40); !ok {
		t.Fatal("no record begun after one was read")
	}
	a.AbortReserved()
	if r, err := b.TryReadRing(&buf); r != nil || err != nil {
		t.Fatalf("after an aborted record: %v %v", r, err)
	}
	if _, ok := a.TryReserve(shmring.MinCapacity); ok {
		t.Fatal("a body larger than a ring record begun")
	}
	for {
		body, ok := a.TryReserve(1000)
		if !ok {
			break
		}
		if err := a.CommitReserved(h, len(body)); err != nil {
			t.Fatal(err)
		}
	}
	// Full: the writer that may wait still can once there is room.
	if r, err := b.TryReadRing(&buf); r == nil || err != nil {
		t.Fatalf("nothing read from a full ring: %v", err)
	}
	if err := a.Write(h, []byte("after")); err != nil {
		t.Fatal(err)
	}
}
