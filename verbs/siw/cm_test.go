package siw_test

import (
	"errors"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

// The MPA handshake on the wire, with a raw peer on the other side.

// rtrWriteFPDU is the peer-to-peer RTR a Go initiator sends: a zero-length
// RDMA Write, STag 1, TO 0.
var rtrWriteFPDU = fpdu(taggedULPDU(0, true, 1, 0, nil), false)

func TestInitiatorRequestBytes(t *testing.T) {
	pd := []byte("hello")
	for _, c := range []struct {
		name string
		opts siw.Options
		p    verbs.ConnParam
		want []byte
	}{
		{"p2p", siw.Options{}, verbs.ConnParam{}, mpaFrame(false, 0x10, 2, irdord(0x8001, 0xC001))},
		{"no-p2p", siw.Options{NoPeerToPeer: true}, verbs.ConnParam{}, mpaFrame(false, 0x10, 2, irdord(1, 1))},
		{"crc", siw.Options{NoPeerToPeer: true, CRC: true}, verbs.ConnParam{}, mpaFrame(false, 0x50, 2, irdord(1, 1))},
		{"ird-ord-pdata", siw.Options{}, verbs.ConnParam{ResponderResources: 7, InitiatorDepth: 3, PrivateData: pd},
			mpaFrame(false, 0x10, 2, cat(irdord(0x8007, 0xC003), pd))},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, peer := connectInitiator(t, c.opts, c.p)
			if got := peer.read(len(c.want)); string(got) != string(c.want) {
				t.Fatalf("MPA Request\n got % x\nwant % x", got, c.want)
			}
			peer.c.Close()
			if _, err := s.result(t); verbs.ConnEventOf(err) != verbs.ConnEventRejected {
				t.Fatalf("Connect to a peer that closed during the handshake: %v (%v), want REJECTED", err, verbs.ConnEventOf(err))
			}
		})
	}
}

// TestInitiatorP2PWriteRTR: after a Reply that accepts peer-to-peer mode
// with the Write RTR, the first FPDU is the RTR, then the data.
func TestInitiatorP2PWriteRTR(t *testing.T) {
	s, peer := connectInitiator(t, siw.Options{NoStartupNudge: true}, verbs.ConnParam{PrivateData: []byte{1, 2}})
	peer.read(26)
	peer.write(mpaFrame(true, 0x10, 2, cat(irdord(0x8001, 0x8001), []byte("ok"))))
	conn, err := s.result(t)
	if err != nil {
		t.Fatal(err)
	}
	if string(conn.PrivateData()) != "ok" || conn.ResponderResources() != 1 || conn.InitiatorDepth() != 1 {
		t.Fatalf("connection private data %q, IRD %d, ORD %d", conn.PrivateData(), conn.ResponderResources(), conn.InitiatorDepth())
	}
	peer.expectFPDU("RTR", rtrWriteFPDU)
	copy(s.side.Buf.B, "abcd")
	verbstest.MustPostSend(t, s.side.QP, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{s.side.Buf.SGE(0, 4)}})
	peer.expectFPDU("first Send", fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("abcd")), false))
}

// TestInitiatorStartupNudges: after the RTR an initiator sends its
// startup nudges — zero-length RDMA Writes to STag 1, the work-around for
// the Linux siw responder's accept race — and then falls silent. Data
// posted meanwhile goes out at once, between them, not after them.
func TestInitiatorStartupNudges(t *testing.T) {
	for _, p2p := range []bool{true, false} {
		t.Run(map[bool]string{true: "p2p", false: "no-p2p"}[p2p], func(t *testing.T) {
			s, peer := connectInitiator(t, siw.Options{NoPeerToPeer: !p2p}, verbs.ConnParam{})
			block := irdord(1, 1)
			if p2p {
				block = irdord(0x8001, 0x8001) // P2P accepted, Write RTR chosen
			}
			peer.read(24)
			peer.write(mpaFrame(true, 0x10, 2, block))
			if _, err := s.result(t); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if p2p {
				peer.expectFPDU("RTR", rtrWriteFPDU)
			}
			copy(s.side.Buf.B, "abcd")
			verbstest.MustPostSend(t, s.side.QP, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{s.side.Buf.SGE(0, 4)}})
			send := fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("abcd")), false)
			sawSend, nudges := false, 0
			for nudges < 4 {
				switch got := peer.readFPDU(); string(got) {
				case string(rtrWriteFPDU):
					nudges++
				case string(send):
					if sawSend {
						t.Fatal("the Send went out twice")
					}
					sawSend = true
				default:
					t.Fatalf("unexpected FPDU % x", got)
				}
			}
			if el := time.Since(start); el < 150*time.Millisecond {
				t.Errorf("four nudges within %v: they should spread over about 200 ms", el)
			}
			if !sawSend {
				peer.expectFPDU("first Send", send)
			}
			peer.expectSilence("after the nudges", 300*time.Millisecond)
		})
	}
}

// TestInitiatorNudgesEndWhenResponderSpeaks: in peer-to-peer mode the
// responder's first FPDU ends the startup nudges. It has read the RTR,
// and siw reads everything queued behind it then; a later nudge is a
// stray frame, and one that reaches a siw peer closing the connection
// (no longer reading) turns its close into a reset.
func TestInitiatorNudgesEndWhenResponderSpeaks(t *testing.T) {
	s, peer := connectInitiator(t, siw.Options{}, verbs.ConnParam{})
	peer.read(24)
	peer.write(mpaFrame(true, 0x10, 2, irdord(0x8001, 0x8001)))
	if _, err := s.result(t); err != nil {
		t.Fatal(err)
	}
	verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 9, SGL: []verbs.SGE{s.side.Buf.SGE(0, 16)}})
	peer.expectFPDU("RTR", rtrWriteFPDU)
	peer.write(fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("hi")), false))
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 9, verbs.WCSuccess, verbs.WCRecv)
	// Nudges sent before the responder's FPDU was seen precede this
	// Send on the wire; none may follow it.
	copy(s.side.Buf.B[16:], "abcd")
	verbstest.MustPostSend(t, s.side.QP, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{s.side.Buf.SGE(16, 4)}})
	send := fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("abcd")), false)
	for got := peer.readFPDU(); string(got) != string(send); got = peer.readFPDU() {
		if string(got) != string(rtrWriteFPDU) {
			t.Fatalf("unexpected FPDU % x", got)
		}
	}
	peer.expectSilence("after the responder's first FPDU", 300*time.Millisecond)
}

// TestInitiatorP2PReadRTR: a responder that picks the Read RTR gets a
// zero-length Read Request and answers with a zero-length Read Response,
// which the initiator absorbs.
func TestInitiatorP2PReadRTR(t *testing.T) {
	s, peer := connectInitiator(t, siw.Options{NoStartupNudge: true}, verbs.ConnParam{})
	peer.read(24)
	peer.write(mpaFrame(true, 0x10, 2, irdord(0x8001, 0x4001)))
	if _, err := s.result(t); err != nil {
		t.Fatal(err)
	}
	peer.expectFPDU("Read RTR", fpdu(readReqULPDU(1, 0, 0, 0, 1, 0), false))
	peer.write(fpdu(taggedULPDU(2, true, 0, 0, nil), false))
	// The stream is healthy: a Send from the peer lands.
	verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 9, SGL: []verbs.SGE{s.side.Buf.SGE(0, 16)}})
	peer.write(fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("hi")), false))
	wc := verbstest.PollOne(t, s.side.CQ, peerTimeout)
	verbstest.ExpectWC(t, wc, 9, verbs.WCSuccess, verbs.WCRecv)
	if s.side.QP.State() != verbs.QPStateRTS {
		t.Fatalf("QP state %v", s.side.QP.State())
	}
}

// TestInitiatorReplyFailures: every Reply a siw initiator refuses fails
// Connect with the rdma_cm event siw reports; a wrong key is answered, as
// siw answers it, with a Terminate (LLP, MPA, invalid Request/Reply, CRC
// field zero even when CRC was requested), the other failures with a
// plain close.
func TestInitiatorReplyFailures(t *testing.T) {
	garbageKey := mpaFrame(true, 0x10, 2, irdord(1, 1))
	copy(garbageKey, "MPA ID Rep Frxme")
	bigRev := mpaFrame(true, 0x10, 3, irdord(1, 1))
	copy(bigRev, "MPA ID Rep Frxme") // a bad revision is dropped before the key is looked at
	invalidMPA := terminateFPDU(0x2004, 0, nil, false)
	for _, c := range []struct {
		name  string
		opts  siw.Options
		reply []byte
		event verbs.ConnEventType
		pdata string
		term  []byte // what the peer reads before the close
	}{
		{"reject", siw.Options{}, mpaFrame(true, 0x30, 2, cat(irdord(1, 1), []byte("go away"))), verbs.ConnEventRejected, "go away", nil},
		{"markers", siw.Options{}, mpaFrame(true, 0x90, 2, irdord(1, 1)), verbs.ConnEventRejected, "", nil},
		{"rev1", siw.Options{}, mpaFrame(true, 0x00, 1, nil), verbs.ConnEventRejected, "", nil},
		{"no-rtr", siw.Options{}, mpaFrame(true, 0x10, 2, irdord(0x8001, 0x0001)), verbs.ConnEventRejected, "", nil},
		{"rev3-bad-key", siw.Options{}, bigRev, verbs.ConnEventConnectError, "", nil},
		{"request-key", siw.Options{}, mpaFrame(false, 0x10, 2, irdord(1, 1)), verbs.ConnEventConnectError, "", invalidMPA},
		{"garbage-key", siw.Options{}, garbageKey, verbs.ConnEventConnectError, "", invalidMPA},
		{"garbage-key-crc", siw.Options{CRC: true}, garbageKey, verbs.ConnEventConnectError, "", invalidMPA},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, peer := connectInitiator(t, c.opts, verbs.ConnParam{})
			peer.read(24)
			peer.write(c.reply)
			if c.term != nil {
				peer.expectFPDU("Terminate for the Reply's key", c.term)
			}
			peer.expectEOF("after the refused Reply")
			_, err := s.result(t)
			if ev := verbs.ConnEventOf(err); ev != c.event {
				t.Fatalf("Connect: %v (%v), want %v", err, ev, c.event)
			}
			var rej *verbs.RejectError
			if c.pdata != "" && (!errors.As(err, &rej) || string(rej.PrivateData) != c.pdata) {
				t.Fatalf("Connect: %v, want a RejectError with %q", err, c.pdata)
			}
			if st := s.side.QP.State(); st != verbs.QPStateReset {
				t.Errorf("QP after a failed Connect in %v, want RESET", st)
			}
		})
	}
}

func TestInitiatorReplyTimeout(t *testing.T) {
	s, peer := connectInitiator(t, siw.Options{MPAReplyTimeout: 200 * time.Millisecond}, verbs.ConnParam{})
	peer.read(24)
	_, err := s.result(t)
	if verbs.ConnEventOf(err) != verbs.ConnEventUnreachable {
		t.Fatalf("Connect with no Reply: %v (%v), want UNREACHABLE", err, verbs.ConnEventOf(err))
	}
}

func TestInitiatorRefused(t *testing.T) {
	verbstest.CheckLeaks(t)
	dev, err := siw.New(siw.Options{}).Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	lis, err := dev.Listen("127.0.0.1:0", 1)
	if err != nil {
		t.Fatal(err)
	}
	addr := lis.Addr().String()
	lis.Close()
	side := verbstest.NewSide(t, dev, verbstest.PairAttr{})
	_, err = dev.Connect(t.Context(), side.QP, addr, verbs.ConnParam{})
	if verbs.ConnEventOf(err) != verbs.ConnEventRejected || !errors.Is(err, verbs.ErrRejected) {
		t.Fatalf("Connect to a closed port: %v, want REJECTED", err)
	}
	_, err = dev.Connect(t.Context(), side.QP, addr, verbs.ConnParam{PrivateData: make([]byte, verbs.MaxPrivateData+1)})
	if !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("Connect with 253 bytes of private data: %v, want ErrInvalidArgument", err)
	}
}

// TestResponderReplyBytes checks the Reply to the requests a kernel siw
// (and other peers) may send.
func TestResponderReplyBytes(t *testing.T) {
	for _, c := range []struct {
		name     string
		request  []byte
		p        verbs.ConnParam
		reply    []byte
		ird, ord int // what the ConnRequest reports
	}{
		{"siw", siwRequest, verbs.ConnParam{}, mpaFrame(true, 0x10, 2, irdord(1, 1)), 1, 1},
		{"crc", mpaFrame(false, 0x50, 2, irdord(1, 1)), verbs.ConnParam{}, mpaFrame(true, 0x50, 2, irdord(1, 1)), 1, 1},
		{"relaxed", mpaFrame(false, 0x10, 2, irdord(4, 2)), verbs.ConnParam{ResponderResources: 1, InitiatorDepth: 16},
			mpaFrame(true, 0x10, 2, irdord(2, 4)), 2, 4},
		{"p2p-write", mpaFrame(false, 0x10, 2, irdord(0x8001, 0xC001)), verbs.ConnParam{},
			mpaFrame(true, 0x10, 2, irdord(0x8001, 0x8001)), 1, 1},
		{"p2p-read", mpaFrame(false, 0x10, 2, irdord(0x8001, 0x4001)), verbs.ConnParam{},
			mpaFrame(true, 0x10, 2, irdord(0x8001, 0x4001)), 1, 1},
		{"rev1", mpaFrame(false, 0x00, 1, []byte("pd")), verbs.ConnParam{PrivateData: []byte("re")},
			mpaFrame(true, 0x00, 1, []byte("re")), 0, 0},
		{"pdata", mpaFrame(false, 0x10, 2, cat(irdord(1, 1), []byte("abc"))), verbs.ConnParam{PrivateData: []byte("xyz")},
			mpaFrame(true, 0x10, 2, cat(irdord(1, 1), []byte("xyz"))), 1, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := dialResponder(t, testOptions(), c.request)
			reply := s.accept(t, verbstest.PairAttr{}, c.p, len(c.reply))
			if string(reply) != string(c.reply) {
				t.Fatalf("MPA Reply\n got % x\nwant % x", reply, c.reply)
			}
			if s.req.ResponderResources() != c.ird || s.req.InitiatorDepth() != c.ord {
				t.Errorf("ConnRequest IRD/ORD %d/%d, want %d/%d", s.req.ResponderResources(), s.req.InitiatorDepth(), c.ird, c.ord)
			}
		})
	}
}

func TestResponderReject(t *testing.T) {
	s := dialResponder(t, testOptions(), siwRequest)
	req, err := s.lis.Accept(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Reject(make([]byte, verbs.MaxPrivateData+1)); !errors.Is(err, verbs.ErrInvalidArgument) {
		t.Fatalf("Reject with 253 bytes: %v", err)
	}
	if err := req.Reject([]byte("no")); err != nil {
		t.Fatal(err)
	}
	want := mpaFrame(true, 0x30, 2, cat(irdord(1, 1), []byte("no")))
	if got := s.peer.read(len(want)); string(got) != string(want) {
		t.Fatalf("reject\n got % x\nwant % x", got, want)
	}
	s.peer.expectEOF("after the reject")
}

// TestResponderDrops: markers are rejected with a Reply; a bad key, a
// revision above 2, PD_Length above 256 and silence are dropped without
// one; the listener keeps serving.
func TestResponderDrops(t *testing.T) {
	badKey := mpaFrame(false, 0x10, 2, irdord(1, 1))
	badKey[0] = 'X'
	for _, c := range []struct {
		name    string
		request []byte
		reply   []byte
	}{
		{"markers", mpaFrame(false, 0x90, 2, irdord(1, 1)), mpaFrame(true, 0x30, 2, irdord(1, 1))},
		{"key", badKey, nil},
		{"rev3", mpaFrame(false, 0x10, 3, irdord(1, 1)), nil},
		{"pdlen", mpaFrame(false, 0x10, 2, make([]byte, 257)), nil},
		{"silent", nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := testOptions()
			opts.MPARequestTimeout = 200 * time.Millisecond
			s := dialResponder(t, opts, c.request)
			if c.reply != nil {
				if got := s.peer.read(len(c.reply)); string(got) != string(c.reply) {
					t.Fatalf("reply\n got % x\nwant % x", got, c.reply)
				}
			}
			s.peer.expectEOF("after a refused request")
			proveDeviceServes(t, s.dev)
		})
	}
}

// TestResponderHoldsUntilFirstFPDU: a responder without peer-to-peer mode
// sends nothing before the initiator's first FPDU, then everything.
func TestResponderHoldsUntilFirstFPDU(t *testing.T) {
	s := siwConnected(t, testOptions(), verbstest.PairAttr{})
	copy(s.side.Buf.B[100:], "early")
	verbstest.MustPostSend(t, s.side.QP, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{s.side.Buf.SGE(100, 5)}})
	s.peer.expectSilence("before the initiator's first FPDU", 200*time.Millisecond)
	verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 2, SGL: []verbs.SGE{s.side.Buf.SGE(0, 64)}})
	s.peer.write(fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("first")), false))
	s.peer.expectFPDU("the held Send", fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("early")), false))
	// The inbound Send completes first: it is what opened the gate.
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 2, verbs.WCSuccess, verbs.WCRecv)
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 1, verbs.WCSuccess, verbs.WCSend)
}

// TestResponderP2PRTR: in peer-to-peer mode the responder waits for the
// RTR (a zero-length Write with STag 1, which it must not check), and a
// Read RTR is answered with a zero-length Read Response.
func TestResponderP2PRTR(t *testing.T) {
	t.Run("write", func(t *testing.T) {
		s := dialResponder(t, testOptions(), mpaFrame(false, 0x10, 2, irdord(0x8001, 0xC001)))
		s.accept(t, verbstest.PairAttr{}, verbs.ConnParam{}, 24)
		copy(s.side.Buf.B, "data")
		verbstest.MustPostSend(t, s.side.QP, verbs.SendWR{ID: 1, Opcode: verbs.OpSend, SGL: []verbs.SGE{s.side.Buf.SGE(0, 4)}})
		s.peer.expectSilence("before the RTR", 200*time.Millisecond)
		s.peer.write(rtrWriteFPDU)
		s.peer.expectFPDU("Send after the RTR", fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("data")), false))
	})
	t.Run("read", func(t *testing.T) {
		s := dialResponder(t, testOptions(), mpaFrame(false, 0x10, 2, irdord(0x8001, 0x4001)))
		s.accept(t, verbstest.PairAttr{}, verbs.ConnParam{}, 24)
		s.peer.write(fpdu(readReqULPDU(1, 0, 0, 0, 1, 0), false))
		s.peer.expectFPDU("zero-length Read Response", fpdu(taggedULPDU(2, true, 0, 0, nil), false))
	})
}

// TestCRC: an initiator that asks for CRC gets it; FPDUs carry valid CRCs
// both ways, and a corrupted one terminates the stream (LLP, CRC error).
func TestCRC(t *testing.T) {
	s := dialResponder(t, testOptions(), mpaFrame(false, 0x50, 2, irdord(1, 1)))
	s.accept(t, verbstest.PairAttr{}, verbs.ConnParam{}, 24)
	verbstest.MustPostRecv(t, s.side.QP,
		verbs.RecvWR{ID: 1, SGL: []verbs.SGE{s.side.Buf.SGE(0, 64)}},
		verbs.RecvWR{ID: 2, SGL: []verbs.SGE{s.side.Buf.SGE(64, 64)}})
	s.peer.write(fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("checked")), true))
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 1, verbs.WCSuccess, verbs.WCRecv)
	copy(s.side.Buf.B[200:], "reply!")
	verbstest.MustPostSend(t, s.side.QP, verbs.SendWR{ID: 3, Opcode: verbs.OpSend, SGL: []verbs.SGE{s.side.Buf.SGE(200, 6)}})
	s.peer.expectFPDU("Send with CRC", fpdu(sendULPDU(3, true, 0, 0, 1, 0, []byte("reply!")), true))

	before := s.dev.Stats().CRCErrors
	bad := fpdu(sendULPDU(3, true, 0, 0, 2, 0, []byte("garbled")), true)
	bad[len(bad)-1] ^= 0xFF
	s.peer.write(bad)
	s.peer.expectFPDU("Terminate for the CRC error", terminateFPDU(0x2002, 0, nil, true))
	verbstest.WaitDone(t, s.conn, peerTimeout)
	expectTerminate(t, s.conn, verbs.TermLayerLLP, 0, 0x02, false)
	if after := s.dev.Stats().CRCErrors; after != before+1 {
		t.Errorf("CRCErrors %d -> %d", before, after)
	}
	proveDeviceServes(t, s.dev)
}

// expectTerminate checks that conn ended with the given Terminate.
func expectTerminate(t *testing.T, conn verbs.Conn, layer verbs.TermLayer, etype, code uint8, remote bool) {
	t.Helper()
	var te *verbs.TerminateError
	if err := conn.Err(); !errors.As(err, &te) || te.Layer != layer || te.EType != etype || te.Code != code || te.Remote != remote {
		t.Fatalf("Conn.Err() = %v, want Terminate layer %v etype %d code %#x remote %v", err, layer, etype, code, remote)
	}
}

// TestResponderGatedBind: while the startup rule holds the responder's
// FPDUs, a memory window bind at the head of its send queue still
// completes, and a Send behind it waits for the gate.
func TestResponderGatedBind(t *testing.T) {
	s := siwConnected(t, testOptions(), verbstest.PairAttr{})
	mw, err := s.side.PD.AllocMW()
	if err != nil {
		t.Fatal(err)
	}
	mr := verbstest.NewBuf(t, s.side.PD, 8192, verbstest.DefaultAccess|verbs.AccessMWBind)
	verbstest.MustPostSend(t, s.side.QP,
		verbs.SendWR{ID: 1, Opcode: verbs.OpBindMW, Flags: verbs.SendSignaled,
			Bind: verbs.MWBind{MW: mw, MR: mr.MR, Addr: mr.Addr(0), Length: 4096, Access: verbs.AccessRemoteRead}},
		verbs.SendWR{ID: 2, Opcode: verbs.OpSend, Flags: verbs.SendSignaled, SGL: []verbs.SGE{s.side.Buf.SGE(0, 8)}})
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 1, verbs.WCSuccess, verbs.WCBindMW)
	s.peer.expectSilence("Send behind the bind, before the first FPDU", 100*time.Millisecond)
	s.peer.write(rtrWriteFPDU)
	s.peer.expectFPDU("the held Send", fpdu(sendULPDU(3, true, 0, 0, 1, 0, s.side.Buf.B[:8]), false))
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 2, verbs.WCSuccess, verbs.WCSend)
}
