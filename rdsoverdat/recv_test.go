package rdsoverdat

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestRecvFlags(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 0))
		msg := []byte("0123456789")
		for range 2 {
			a.SendTo(msg, b.BoundAddr(), 0)
		}
		eventually(t, 5*time.Second, "delivery", func() bool { _, r := b.Buffered(); return r == 20 })

		// PEEK|TRUNC with an empty buffer sizes the next message.
		m := Msg{}
		n, err := b.RecvMsg(&m, MsgPeek|MsgTrunc|MsgDontWait)
		if err != nil || n != 10 || m.Flags&MsgTrunc == 0 || m.Addr != a.BoundAddr() {
			t.Fatalf("peek|trunc: %d %v flags %#x from %v", n, err, m.Flags, m.Addr)
		}
		// PEEK leaves it queued; truncation without MSG_TRUNC returns the copied length.
		m = Msg{Data: make([]byte, 4)}
		n, err = b.RecvMsg(&m, MsgPeek)
		if err != nil || n != 4 || string(m.Data) != "0123" || m.Flags&MsgTrunc == 0 {
			t.Fatalf("peek short: %d %v %q %#x", n, err, m.Data, m.Flags)
		}
		// Truncating read consumes the message; the rest is gone.
		n, err = b.RecvMsg(&m, 0)
		if err != nil || n != 4 || m.Flags&MsgTrunc == 0 {
			t.Fatalf("trunc: %d %v %#x", n, err, m.Flags)
		}
		// MSG_TRUNC in flags returns the full length even when truncating.
		n, err = b.RecvMsg(&m, MsgTrunc)
		if err != nil || n != 10 || m.Flags&MsgTrunc == 0 {
			t.Fatalf("trunc flag: %d %v", n, err)
		}
		if _, r := b.Buffered(); r != 0 {
			t.Errorf("rcv bytes %d", r)
		}
		// Each message is seen once: the queue is empty now.
		_, err = b.RecvMsg(&m, MsgDontWait)
		wantErrno(t, err, syscall.EAGAIN)
		if n, _ := b.RecvMsg(&m, MsgOOB); n != 0 {
			t.Error("MSG_OOB returned data")
		}

		// SO_RCVTIMEO and the read deadline.
		b.SetOption(RecvTimeout(20 * time.Millisecond))
		_, err = b.RecvMsg(&m, 0)
		wantErrno(t, err, syscall.ETIMEDOUT)
		b.SetOption(RecvTimeout(0))
		b.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, _, err = b.ReadFrom(m.Data); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("deadline: %v", err)
		}
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("deadline error is not a net.Error timeout: %v", err)
		}
		b.SetReadDeadline(time.Time{})

		// ReadFrom/WriteTo (net.PacketConn).
		var pc net.PacketConn = a
		if _, err := pc.WriteTo([]byte("pc"), Addr(b.BoundAddr())); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 8)
		b.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := b.ReadFrom(buf)
		if err != nil || string(buf[:n]) != "pc" || from.(Addr).AddrPort() != a.BoundAddr() {
			t.Fatalf("ReadFrom: %q %v %v", buf[:n], from, err)
		}

		// Close wakes a blocked receiver with net.ErrClosed.
		done := make(chan error, 1)
		go func() { _, err := b.RecvMsg(&Msg{Data: buf}, 0); done <- err }()
		time.Sleep(5 * time.Millisecond)
		b.Close()
		if err := <-done; !errors.Is(err, net.ErrClosed) {
			t.Errorf("after close: %v", err)
		}
	})
}

// A receiver that closes with unread messages: the sender considers
// them delivered (nothing retransmitted, SO_SNDBUF back to zero).
func TestReceiverClosesWithQueued(t *testing.T) {
	transports(t, func(t *testing.T, st *Stack) {
		as := testAddrs(2)
		a := mustBind(t, st, ap(as[0], 0))
		b := mustBind(t, st, ap(as[1], 0))
		for range 5 {
			a.SendTo([]byte("x"), b.BoundAddr(), 0)
		}
		eventually(t, 5*time.Second, "delivery", func() bool { _, r := b.Buffered(); return r == 5 })
		b.Close()
		eventually(t, 5*time.Second, "acks", func() bool { s, _ := a.Buffered(); return s == 0 })
	})
}
