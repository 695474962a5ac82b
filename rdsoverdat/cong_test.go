package rdsoverdat

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// A receiver above SO_RCVBUF marks its port congested; the sender gets
// ENOBUFS (or blocks) until the receiver reads below half the limit,
// and a monitoring sender gets RDS_CMSG_CONG_UPDATE for the port.
func TestCongestion(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 4100), RecvBuffer(1000))
		dst := b.BoundAddr()
		bport := wire.Port(dst.Port())
		// Fill b beyond its limit: the last message is accepted anyway.
		for range 3 {
			if _, err := a.SendTo(make([]byte, 400), dst, MsgDontWait); err != nil {
				t.Fatal(err)
			}
		}
		eventually(t, 5*time.Second, "congested bit", func() bool { return st.nodeAt(as[1]).lcong.test(bport) })
		conn := st.nodeAt(as[0]).connFor(as[1], a.sock().trans.Type())
		eventually(t, 5*time.Second, "peer map update", func() bool { return conn.fcong.test(bport) })
		if err := a.SetOption(CongMonitor{Enable: true}); err != nil {
			t.Fatal(err)
		}
		_, err := a.SendTo([]byte("x"), dst, MsgDontWait)
		wantErrno(t, err, syscall.ENOBUFS)
		var cm CongMonitor
		a.Option(&cm)
		if cm.Mask != CongMonitorMask(dst.Port()) {
			t.Errorf("ENOBUFS did not arm the monitor mask: %#x", cm.Mask)
		}
		// Other ports of b's node are not congested.
		other := mustBind(t, st, ap(as[1], 4101))
		if _, err := a.SendTo([]byte("y"), other.BoundAddr(), MsgDontWait); err != nil {
			t.Fatalf("uncongested port: %v", err)
		}
		// A blocking sender waits for the uncongestion.
		blocked := make(chan error, 1)
		go func() { _, err := a.SendTo([]byte("z"), dst, 0); blocked <- err }()
		select {
		case err := <-blocked:
			t.Fatalf("blocking send to a congested port returned %v", err)
		case <-time.After(20 * time.Millisecond):
		}
		// Read until below rcvbuf/2: 1200 -> 800 -> 400 (< 500).
		buf := make([]byte, 1000)
		recvTimeout(t, b, buf, time.Second)
		if !st.nodeAt(as[1]).lcong.test(bport) {
			t.Fatal("uncongested above half the limit")
		}
		recvTimeout(t, b, buf, time.Second)
		if err := <-blocked; err != nil {
			t.Fatal(err)
		}
		// The monitoring sender sees the update alone, with 0 bytes.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if ev, err := a.Wait(ctx, PollIn); err != nil || ev&PollIn == 0 {
			t.Fatalf("Wait: %#x %v", ev, err)
		}
		m := Msg{Data: buf}
		n, err := a.RecvMsg(&m, MsgDontWait)
		if err != nil || n != 0 || len(m.Control) != 1 || m.Control[0] != CongUpdate(CongMonitorMask(dst.Port())) {
			t.Fatalf("cong update: n=%d err=%v control=%v", n, err, m.Control)
		}
		if _, err := a.SendTo([]byte("w"), dst, MsgDontWait); err != nil {
			t.Fatalf("after uncongestion: %v", err)
		}
		s := st.nodeAt(as[0]).Stats()
		if s.CongSendError == 0 || s.CongSendBlocked == 0 {
			t.Errorf("stats %+v", s)
		}
		// Disabling the monitor clears mask and notifications.
		a.SetOption(CongMonitor{Enable: false})
		if a.Option(&cm); cm.Enable || cm.Mask != 0 {
			t.Errorf("disabled monitor %+v", cm)
		}
	})
}

// Without RDS_CONG_MONITOR, any congestion map change makes the socket
// readable once (POLLIN|POLLWRBAND), so an ENOBUFS sender can sleep in poll.
func TestPollCongestionWakeup(t *testing.T) {
	leakCheck(t)
	st := newTestStack(t, Config{})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0), RecvBuffer(10))
	a.Poll() // consume any earlier generation
	if ev := a.Poll(); ev&PollIn != 0 || ev&PollOut == 0 {
		t.Fatalf("idle socket: %#x", ev)
	}
	a.SendTo(make([]byte, 20), b.BoundAddr(), 0)
	if ev := a.Poll(); ev&(PollIn|PollWrBand) != PollIn|PollWrBand {
		t.Fatalf("after a map change: %#x", ev)
	}
	if ev := a.Poll(); ev&PollIn != 0 {
		t.Fatalf("reported twice: %#x", ev)
	}
	if ev := b.Poll(); ev&(PollIn|PollRdNorm) != PollIn|PollRdNorm {
		t.Fatalf("receiver: %#x", ev)
	}
	// Closing a congested socket uncongests its port.
	b.Close()
	if st.nodeAt(as[1]).lcong.test(wire.Port(b.BoundAddr().Port())) {
		t.Error("closed socket's port still congested")
	}
}
