package rdsoverdat

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/tcp"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// TestTCPAckPollLone: in a request-response exchange each side's
// messages are acknowledged by the answers. The writer must never wake
// on its ack poll timer for them (no timer runs in a ping-pong); the
// answers free them a few at a time, so that at most tcp.LoneMax wait,
// and the last ones, which no traffic follows, are freed as soon as
// somebody looks at the queued bytes.
func TestTCPAckPollLone(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	buf := make([]byte, 64)
	msg := make([]byte, 64)
	exchange := func() {
		t.Helper()
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		recvTimeout(t, b, buf, 5*time.Second)
		if _, err := b.SendTo(msg, a.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		recvTimeout(t, a, buf, 5*time.Second)
	}
	exchange() // connect, trust the acks
	ca := curReader(t, st.nodeAt(as[0]), as[1])
	cb := curReader(t, st.nodeAt(as[1]), as[0])
	time.Sleep(tcp.AckTrust + 50*time.Millisecond)
	exchange()
	// The connections' start-up messages may have left a poll pending.
	eventually(t, 5*time.Second, "the start-up polls over", func() bool {
		return !ca.AckPollArmed() && !cb.AckPollArmed()
	})
	beforeA, beforeB := ca.AckPolls(), cb.AckPolls()
	for range 20 {
		exchange()
	}
	if pa, pb := ca.AckPolls()-beforeA, cb.AckPolls()-beforeB; pa != 0 || pb != 0 {
		t.Errorf("ack poll wake-ups in 20 round trips: %d and %d, want none", pa, pb)
	}
	for i, la := range as[:2] {
		if n := unackedOn(st, la, as[1-i]); n > tcp.LoneMax {
			t.Errorf("%v: %d unacknowledged messages after 20 round trips, want at most %d", la, n, tcp.LoneMax)
		}
	}
	for i, s := range []*Socket{a, b} {
		eventually(t, 5*time.Second, "the last messages freed when looked at", func() bool {
			n, _ := s.Buffered()
			return n == 0
		})
		if n := unackedOn(st, as[i], as[1-i]); n != 0 {
			t.Errorf("%d unacknowledged messages after Buffered reported none", n)
		}
	}
}

// unackedOn returns the unacknowledged messages on path 0 from node la to
// ra, without settling acks.
func unackedOn(st *Stack, la, ra netip.Addr) int {
	c := st.nodeAt(la).Conn(ra, TransTCP)
	if c == nil {
		return 0
	}
	_, n := c.paths[0].Pending()
	return n
}

// TestTCPAckPollLoneWakesForBlockedSender: a message that fills its
// socket's SO_SNDBUF alone is also a lone unacknowledged message, which
// the writer leaves to later traffic; the next SendMsg waits for the room
// its ack frees, so it must have the writer poll for it (blockForRoom,
// SettleAcks). A sender that did not would wait out its send timeout.
func TestTCPAckPollLoneWakesForBlockedSender(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	const size = 16 << 10
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(size), SendTimeout(5*time.Second))
	b := mustBind(t, st, ap(as[1], 0))
	buf := make([]byte, size)
	msg := make([]byte, size)
	exchange := func() {
		t.Helper()
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		recvTimeout(t, b, buf, 5*time.Second)
	}
	exchange() // connect
	time.Sleep(tcp.AckTrust + 50*time.Millisecond)
	for range 5 { // each send blocks until the one before it is acked
		exchange()
	}
}

// TestTCPRoomWithoutBlocking: a socket that wants SO_SNDBUF room without
// blocking for it, refused with EAGAIN or polled without POLLOUT, gets it
// when TCP acknowledges the lone message that holds it, with no further
// traffic: the writer, which leaves a lone message's ack to later
// traffic, polls for it while such a socket waits. The peer is a plain
// listener with a small receive buffer that stops reading after the
// connection's first messages, so that the message stays unacknowledged
// until the test lets it read on.
func TestTCPRoomWithoutBlocking(t *testing.T) {
	for _, tc := range []struct {
		name string
		wait func(t *testing.T, s *Socket)
	}{
		{"eagain", func(t *testing.T, s *Socket) {
			// No Poll, no send until the room has come: only the
			// EAGAIN said that the socket wants it.
			sk := s.sock()
			eventually(t, 10*time.Second, "the room freed", func() bool {
				sk.mu.Lock()
				defer sk.mu.Unlock()
				return sk.sndBytes == 0
			})
		}},
		{"pollout", func(t *testing.T, s *Socket) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			ev, err := s.Wait(ctx, PollOut)
			if err != nil || ev&PollOut == 0 {
				t.Fatalf("Wait(PollOut) = %v, %v", ev, err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leakCheck(t)
			as := testAddrs(2)
			lo, hi := as[0], as[1]
			if hi.Less(lo) {
				lo, hi = hi, lo
			}
			peer := stallingPeer(t, hi, 3) // congestion map, probe, first message
			st := tcpStack(t)
			const size = 64 << 10
			a := mustBind(t, st, ap(lo, 0), SendBuffer(size))
			dst := ap(hi, 5)
			if _, err := a.SendTo([]byte("x"), dst, 0); err != nil {
				t.Fatal(err)
			}
			// The peer never speaks, so its TCP acks count only after
			// tcp.AckTrust.
			eventually(t, 10*time.Second, "the first message acked", func() bool {
				s, _ := a.Buffered()
				return s == 0
			})
			<-peer.stalled
			msg := make([]byte, size)
			if _, err := a.SendTo(msg, dst, 0); err != nil {
				t.Fatal(err)
			}
			if tc.name == "eagain" {
				if _, err := a.SendTo(msg, dst, MsgDontWait); !errors.Is(err, syscall.EAGAIN) {
					t.Fatalf("send into a full SO_SNDBUF: %v, want EAGAIN", err)
				}
			} else if ev := a.Poll(); ev&PollOut != 0 {
				t.Fatalf("Poll = %v with SO_SNDBUF full", ev)
			}
			close(peer.drain)
			tc.wait(t, a)
			if _, err := a.SendTo(msg, dst, MsgDontWait); err != nil {
				t.Fatalf("send once the room came: %v", err)
			}
		})
	}
}

// stallPeer is a listener on the tcp port of addr that reads the frames
// of the first connection until stalled, then nothing until drain is
// closed, then everything.
type stallPeer struct {
	stalled chan struct{} // closed once the first frames are read
	drain   chan struct{} // closed by the test
}

func stallingPeer(t *testing.T, addr netip.Addr, frames int) *stallPeer {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	ln, err := lc.Listen(context.Background(), "tcp4", net.JoinHostPort(addr.String(), strconv.Itoa(wire.TCPPort)))
	if err != nil {
		t.Fatal(err)
	}
	p := &stallPeer{stalled: make(chan struct{}), drain: make(chan struct{})}
	done := make(chan struct{})
	var conn net.Conn
	go func() {
		defer close(done)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conn = c
		hdr := make([]byte, wire.HeaderLen)
		for range frames {
			if _, err := io.ReadFull(c, hdr); err != nil {
				return
			}
			if _, err := io.CopyN(io.Discard, c, int64(wire.Header(hdr).Len())); err != nil {
				return
			}
		}
		close(p.stalled)
		<-p.drain
		io.Copy(io.Discard, c)
	}()
	t.Cleanup(func() {
		ln.Close()
		select {
		case <-p.drain:
		default:
			close(p.drain)
		}
		<-done
		if conn != nil {
			conn.Close()
		}
	})
	return p
}

// TestTCPPingPongAllocs: a request-response exchange, where each side
// frees its lone message when the answer comes (settle), allocates
// nothing.
func TestTCPPingPongAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomized under -race")
	}
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], 0))
	msg := make([]byte, 64)
	ma, mb := Msg{Data: make([]byte, 64)}, Msg{Data: make([]byte, 64)}
	round := func() {
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.RecvMsg(&mb, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := b.SendTo(msg, mb.Addr, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := a.RecvMsg(&ma, 0); err != nil {
			t.Fatal(err)
		}
	}
	for range 200 { // warm the pools and bring the connection up
		round()
	}
	if n := testing.AllocsPerRun(500, round); n > 0.05 {
		t.Errorf("%.2f allocs per round trip", n)
	}
}
