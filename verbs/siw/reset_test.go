package siw_test

// How a stream's end is reported: the peer's FIN is an orderly
// disconnect (ErrDisconnected), a TCP reset is a broken connection
// (*verbs.BrokenError carrying ECONNRESET), whichever of the stream's
// readers or writers notices it first.

import (
	"context"
	"errors"
	"net"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// resetPeer makes the raw peer's kernel answer the close with a RST
// instead of a FIN (SO_LINGER 0).
func resetPeer(t *testing.T, p *rawPeer) {
	t.Helper()
	if err := p.c.(*net.TCPConn).SetLinger(0); err != nil {
		t.Fatal(err)
	}
	p.c.Close()
}

// expectBroken checks that conn ended as a reset: ErrBroken carrying
// ECONNRESET, still an ended connection for ErrDisconnected tests, and
// no Terminate.
func expectBroken(t *testing.T, conn verbs.Conn) {
	t.Helper()
	verbstest.WaitDone(t, conn, peerTimeout)
	err := conn.Err()
	if !errors.Is(err, verbs.ErrBroken) || !errors.Is(err, syscall.ECONNRESET) || !errors.Is(err, verbs.ErrDisconnected) {
		t.Fatalf("Err after the peer's reset = %v, want ErrBroken with ECONNRESET", err)
	}
	var te *verbs.TerminateError
	if errors.As(err, &te) {
		t.Fatalf("Err after the peer's reset is a Terminate: %v", te)
	}
	if ev := verbs.DisconnectEventOf(err); ev != verbs.ConnEventBroken {
		t.Fatalf("DisconnectEventOf(%v) = %v, want BROKEN", err, ev)
	}
}

// TestPeerCloseMidFPDU: a FIN inside an FPDU is still the peer closing,
// not TCP failing (TestPeerClose has the FIN at a boundary).
func TestPeerCloseMidFPDU(t *testing.T) {
	s := siwConnected(t, testOptions(), verbstest.PairAttr{})
	verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 3, SGL: []verbs.SGE{s.side.Buf.SGE(0, 8)}})
	s.peer.write(rtrWriteFPDU[:7])
	if err := s.peer.c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	verbstest.WaitDone(t, s.conn, peerTimeout)
	err := s.conn.Err()
	if !errors.Is(err, verbs.ErrDisconnected) || errors.Is(err, verbs.ErrBroken) {
		t.Fatalf("Err after the peer's FIN = %v, want ErrDisconnected", err)
	}
	if ev := verbs.DisconnectEventOf(err); ev != verbs.ConnEventDisconnected {
		t.Fatalf("DisconnectEventOf(%v) = %v, want DISCONNECTED", err, ev)
	}
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 3, verbs.WCWRFlushErr, verbs.WCRecv)
}

// TestPeerReset: a RST read by the receive goroutine breaks the
// connection; the posted receive is flushed and no async event is raised
// (the QP did nothing wrong).
func TestPeerReset(t *testing.T) {
	s := siwConnected(t, testOptions(), verbstest.PairAttr{})
	verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 3, SGL: []verbs.SGE{s.side.Buf.SGE(0, 8)}})
	resetPeer(t, s.peer)
	expectBroken(t, s.conn)
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 3, verbs.WCWRFlushErr, verbs.WCRecv)
	select {
	case ev := <-s.dev.AsyncEvents():
		t.Fatalf("async event %v after a reset", ev)
	default:
	}
}

// TestPeerResetInline: a RST read by a CQ waiter that holds the socket
// (inline receive) is reported the same way.
func TestPeerResetInline(t *testing.T) {
	s := siwConnected(t, testOptions(), verbstest.PairAttr{})
	verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 3, SGL: []verbs.SGE{s.side.Buf.SGE(0, 8)}})
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	waited := make(chan error, 1)
	go func() { waited <- s.side.CQ.Wait(ctx, false) }()
	// An RDMA Write completes nothing, so the waiter keeps waiting: the
	// peer sends one for each time the waiter asks the receive goroutine
	// for the socket, and the waiter, once it reads the socket itself,
	// places the next one.
	write := fpdu(taggedULPDU(0, true, stagOf(s.side.Buf), s.side.Buf.Addr(64), []byte("inline")), false)
	awaitInline(t, s.conn, func() { s.peer.write(write) })
	deadline := time.Now().Add(peerTimeout)
	before := s.dev.Stats().InlineFrames
	s.peer.write(write)
	for ; s.dev.Stats().InlineFrames == before; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not place the Write inline")
		}
	}
	resetPeer(t, s.peer)
	if err := <-waited; err != nil {
		t.Fatalf("Wait across the reset: %v", err)
	}
	expectBroken(t, s.conn)
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 3, verbs.WCWRFlushErr, verbs.WCRecv)
}

// TestPeerResetWhileSending: a peer that stops reading and resets while a
// large Send is on its way; the transmit side may see the reset first
// (EPIPE or ECONNRESET on a write). Either way the connection is broken
// and the Send does not complete successfully.
func TestPeerResetWhileSending(t *testing.T) {
	const size = 16 << 20
	s := siwConnected(t, testOptions(), verbstest.PairAttr{BufSize: size})
	s.peer.write(rtrWriteFPDU) // opens the responder's gate
	verbstest.MustPostSend(t, s.side.QP, verbs.SendWR{ID: 4, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{s.side.Buf.SGE(0, size)}})
	s.peer.readFPDU() // the Send is streaming
	resetPeer(t, s.peer)
	verbstest.WaitDone(t, s.conn, peerTimeout)
	err := s.conn.Err()
	if !errors.Is(err, verbs.ErrBroken) || verbs.DisconnectEventOf(err) != verbs.ConnEventBroken {
		t.Fatalf("Err after the peer's reset = %v, want ErrBroken", err)
	}
	if wc := verbstest.PollOne(t, s.side.CQ, peerTimeout); wc.ID != 4 || wc.Status == verbs.WCSuccess {
		t.Fatalf("Send across the reset completed %v", wc.Status)
	}
}
