package rdsoverdat

import (
	"bytes"
	"testing"
)

// These cases need messages held in flight, which only the in-memory
// transport can do deterministically; zerocopy_dat_test.go resets a dat
// connection under load instead.

// A connection reset with an RDMA op transmitted but unacknowledged:
// the op completes with RDS_RDMA_DROPPED and its message is not resent,
// while plain messages around it are.
func TestRDMAResetDrops(t *testing.T) {
	leakCheck(t)
	r := newMemRig(t, RDMALimits{})
	win := make([]byte, 32)
	ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win, Flags: RDMAReadWrite})
	conn := r.st.nodeAt(r.srvNode).Conn(r.cliNode, TransIB)
	nt := conn.nt.(*memNode)
	r.mem.hold.Store(true)
	r.srv.SendTo([]byte("before"), r.cli.BoundAddr(), 0)
	r.op(t, r.srv, r.cli, []byte("ack"), RDMAArgs{Cookie: ck, RemoteBytes: 32, Local: [][]byte{bytes.Repeat([]byte{1}, 32)}, Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 5})
	r.srv.SendTo([]byte("after"), r.cli.BoundAddr(), 0)
	if n := nt.parkedOn(conn.Path(0)); n != 3 {
		t.Fatalf("%d messages in flight, want 3", n)
	}
	r.mem.hold.Store(false)
	conn.Reset()
	if n := r.notes(t, r.srv, 1); n[0] != (RDMANotify{UserToken: 5, Status: RDMADropped}) {
		t.Fatalf("notification %+v", n[0])
	}
	if st := r.st.nodeAt(r.srvNode).Stats(); st.RDMADropped != 1 || st.RDMASuccess != 0 {
		t.Fatalf("counters: %d dropped, %d succeeded", st.RDMADropped, st.RDMASuccess)
	}
	expectNext(t, r.cli, []byte("before"))
	expectNext(t, r.cli, []byte("after"))
	if !bytes.Equal(win, make([]byte, 32)) {
		t.Fatal("dropped op ran")
	}
	if snd, _ := r.srv.Buffered(); snd != 0 {
		t.Fatalf("SO_SNDBUF still charged %d bytes", snd)
	}
}

// RDS_RECVERR alone reports a dropped op; with neither it nor NOTIFY_ME
// nothing is reported.
func TestRDMAResetRecvErr(t *testing.T) {
	leakCheck(t)
	r := newMemRig(t, RDMALimits{})
	ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: make([]byte, 8), Flags: RDMAReadWrite})
	conn := r.st.nodeAt(r.srvNode).Conn(r.cliNode, TransIB)
	r.mem.hold.Store(true)
	r.op(t, r.srv, r.cli, nil, RDMAArgs{Cookie: ck, RemoteBytes: 8, Local: [][]byte{make([]byte, 8)}, Flags: RDMAReadWrite, UserToken: 1})
	r.srv.SetOption(RecvErr(true))
	r.op(t, r.srv, r.cli, nil, RDMAArgs{Cookie: ck, RemoteBytes: 8, Local: [][]byte{make([]byte, 8)}, Flags: RDMAReadWrite, UserToken: 2})
	r.mem.hold.Store(false)
	conn.Reset()
	if n := r.notes(t, r.srv, 1); len(n) != 1 || n[0] != (RDMANotify{UserToken: 2, Status: RDMADropped}) {
		t.Fatalf("notifications %+v", n)
	}
	if ev := r.srv.Poll(); ev&PollIn != 0 {
		t.Fatalf("more notifications pending (poll %#x)", ev)
	}
}

// RDS_CANCEL_SENT_TO cancels a queued op: RDS_RDMA_CANCELED.
func TestRDMACancel(t *testing.T) {
	leakCheck(t)
	r := newMemRig(t, RDMALimits{})
	ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: make([]byte, 8), Flags: RDMAReadWrite})
	r.mem.hold.Store(true)
	r.op(t, r.srv, r.cli, []byte("ack"), RDMAArgs{Cookie: ck, RemoteBytes: 8, Local: [][]byte{make([]byte, 8)}, Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 3})
	if err := r.srv.SetOption(CancelSentTo(r.cli.BoundAddr())); err != nil {
		t.Fatal(err)
	}
	if n := r.notes(t, r.srv, 1); n[0] != (RDMANotify{UserToken: 3, Status: RDMACanceled}) {
		t.Fatalf("notification %+v", n[0])
	}
	if st := r.st.nodeAt(r.srvNode).Stats(); st.RDMACanceled != 1 {
		t.Fatalf("%d ops counted canceled", st.RDMACanceled)
	}
	r.mem.hold.Store(false)
	r.st.nodeAt(r.srvNode).Conn(r.cliNode, TransIB).Reset() // releases the parked copy
}

// A silent op with no payload sends no message: the data moves, the
// client hears nothing, the server gets its notification.
func TestRDMASilent(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		win := make([]byte, 4000)
		ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win, Flags: RDMAReadWrite})
		src := make([]byte, 4000)
		pattern(src, 9)
		r.op(t, r.srv, r.cli, nil, RDMAArgs{Cookie: ck, RemoteBytes: 4000, Local: [][]byte{src}, Flags: RDMAReadWrite | RDMASilent | RDMANotifyMe, UserToken: 4})
		if n := r.notes(t, r.srv, 1); n[0] != (RDMANotify{UserToken: 4, Status: RDMASuccess}) {
			t.Fatalf("notification %+v", n[0])
		}
		if !bytes.Equal(win, src) {
			t.Fatal("silent WRITE missing")
		}
		r.srv.SendTo([]byte("next"), r.cli.BoundAddr(), 0)
		expectNext(t, r.cli, []byte("next"))
	})
}

// Closing a socket releases its mappings and drops its notifications.
func TestRDMACloseReleases(t *testing.T) {
	forEachRig(t, RDMALimits{}, func(t *testing.T, r *rdmaRig) {
		for range 5 {
			if _, err := r.cli.GetMR(make([]byte, 100), RDMAUseOnce); err != nil {
				t.Fatal(err)
			}
		}
		if n := r.st.nodeAt(r.cliNode).rdmaMRs.Load(); n != 5 {
			t.Fatalf("%d mappings", n)
		}
		r.cli.Close()
		if n := r.st.nodeAt(r.cliNode).rdmaMRs.Load(); n != 0 {
			t.Fatalf("%d mappings after close", n)
		}
		_, err := r.cli.GetMR(make([]byte, 100), 0)
		if err == nil {
			t.Fatal("GetMR on a closed socket")
		}
	})
}
