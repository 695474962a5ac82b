package siw_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// The Terminates of section 5.2/5.3 of the wire notes, byte for byte: a
// raw initiator injects one faulty FPDU into an established stream and
// reads back the Terminate; the provider's connection must end with the
// same cause, the counters must move, and the device must keep serving.

// faultCase builds the offending FPDU for a connected scene.
type faultCase struct {
	name string
	// setup prepares the Go side and returns the ULPDU to inject (without
	// its length) and the Terminate expected back.
	setup func(t *testing.T, s *responderScene) (offending []byte, cause, flags uint16, att []byte)
	// recv, if set, is the status the receive posted by setup completes with.
	recv       verbs.WCStatus
	hasRecv    bool
	malformed  bool
	protection bool
}

func stagOf(b *verbstest.Buf) uint32 { return b.RKey() }

// badSTag has the index of k and another key byte.
func badSTag(k uint32) uint32 { return k ^ 0x5a }

var payload64 = bytes.Repeat([]byte{0xAB}, 64)

func writeCase(name string, cause uint16, target func(t *testing.T, s *responderScene) (stag uint32, to uint64, n int)) faultCase {
	return faultCase{name: name, protection: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		stag, to, n := target(t, s)
		u := taggedULPDU(0, true, stag, to, payload64[:n])
		return u, cause, 0xC000, attached(n, u[:14])
	}}
}

func readCase(name string, cause uint16, target func(t *testing.T, s *responderScene) (stag uint32, to uint64, n int)) faultCase {
	return faultCase{name: name, protection: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		stag, to, n := target(t, s)
		u := readReqULPDU(1, 0x4242, 0x1000, uint32(n), stag, to)
		return u, cause, 0xE000, attached(0, u)
	}}
}

var faultCases = []faultCase{
	writeCase("WriteInvalidSTag", 0x1100, func(t *testing.T, s *responderScene) (uint32, uint64, int) {
		return badSTag(stagOf(s.side.Buf)), s.side.Buf.Addr(0), 64
	}),
	writeCase("WriteBaseBounds", 0x1101, func(t *testing.T, s *responderScene) (uint32, uint64, int) {
		return stagOf(s.side.Buf), s.side.Buf.Addr(len(s.side.Buf.B) - 8), 16
	}),
	writeCase("WriteNoRemoteWrite", 0x1100, func(t *testing.T, s *responderScene) (uint32, uint64, int) {
		ro := verbstest.NewBuf(t, s.side.PD, 4096, verbs.AccessLocalWrite|verbs.AccessRemoteRead)
		return ro.RKey(), ro.Addr(0), 64
	}),
	writeCase("WriteOtherPD", 0x1102, func(t *testing.T, s *responderScene) (uint32, uint64, int) {
		pd, err := s.dev.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		other := verbstest.NewBuf(t, pd, 4096, verbstest.DefaultAccess)
		return other.RKey(), other.Addr(0), 64
	}),
	readCase("ReadInvalidSTag", 0x0100, func(t *testing.T, s *responderScene) (uint32, uint64, int) {
		return badSTag(stagOf(s.side.Buf)), s.side.Buf.Addr(0), 64
	}),
	readCase("ReadBaseBounds", 0x0101, func(t *testing.T, s *responderScene) (uint32, uint64, int) {
		return stagOf(s.side.Buf), s.side.Buf.Addr(len(s.side.Buf.B) - 8), 16
	}),
	readCase("ReadAccessRights", 0x0102, func(t *testing.T, s *responderScene) (uint32, uint64, int) {
		wo := verbstest.NewBuf(t, s.side.PD, 4096, verbs.AccessLocalWrite|verbs.AccessRemoteWrite)
		return wo.RKey(), wo.Addr(0), 64
	}),
	readCase("ReadOtherPD", 0x0103, func(t *testing.T, s *responderScene) (uint32, uint64, int) {
		pd, err := s.dev.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		other := verbstest.NewBuf(t, pd, 4096, verbstest.DefaultAccess)
		return other.RKey(), other.Addr(0), 64
	}),
	{name: "SendNoReceive", setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := sendULPDU(3, true, 0, 0, 1, 0, payload64)
		return u, 0x1202, 0xC000, attached(64, u[:18])
	}},
	{name: "SendTooLong", hasRecv: true, recv: verbs.WCLocLenErr, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{s.side.Buf.SGE(0, 16)}})
		u := sendULPDU(3, true, 0, 0, 1, 0, payload64)
		return u, 0x1202, 0xC000, attached(64, u[:18])
	}},
	{name: "SendInvalidateBadSTag", hasRecv: true, recv: verbs.WCRemInvReqErr, protection: true,
		setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
			verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 1, SGL: []verbs.SGE{s.side.Buf.SGE(0, 64)}})
			u := sendULPDU(4, true, badSTag(stagOf(s.side.Buf)), 0, 1, 0, payload64[:8])
			return u, 0x0209, 0xC000, attached(8, u[:18])
		}},
	{name: "MSNRange", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := sendULPDU(3, true, 0, 0, 5, 0, payload64[:8])
		return u, 0x1203, 0xC000, attached(8, u[:18])
	}},
	{name: "InvalidMO", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := sendULPDU(3, true, 0, 0, 1, 8, payload64[:8])
		return u, 0x1204, 0xC000, attached(8, u[:18])
	}},
	{name: "InvalidQN", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := sendULPDU(3, true, 0, 3, 1, 0, payload64[:8])
		return u, 0x1201, 0xC000, attached(8, u[:18])
	}},
	{name: "InvalidOpcode", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := sendULPDU(8, true, 0, 0, 1, 0, payload64[:8])
		return u, 0x0206, 0, nil
	}},
	{name: "RDMAPVersion", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := sendULPDU(3, true, 0, 0, 1, 0, payload64[:8])
		u[1] = 0x80 | 3
		return u, 0x0205, 0, nil
	}},
	{name: "DDPVersionTagged", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := taggedULPDU(0, true, stagOf(s.side.Buf), s.side.Buf.Addr(0), payload64[:8])
		u[0] = 0xC2
		return u, 0x1104, 0, nil
	}},
	{name: "DDPVersionUntagged", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := sendULPDU(3, true, 0, 0, 1, 0, payload64[:8])
		u[0] = 0x42
		return u, 0x1206, 0, nil
	}},
	{name: "ReadRequestWithPayload", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := append(readReqULPDU(1, 1, 0, 8, stagOf(s.side.Buf), s.side.Buf.Addr(0)), 1, 2, 3, 4)
		return u, 0x0207, 0xC000, attached(4, u[:18])
	}},
	{name: "UnexpectedReadResponse", malformed: true, setup: func(t *testing.T, s *responderScene) ([]byte, uint16, uint16, []byte) {
		u := taggedULPDU(2, true, 5, 0, payload64[:8])
		return u, 0x0207, 0xC000, attached(8, u[:14])
	}},
}

func TestTerminates(t *testing.T) {
	for _, c := range faultCases {
		t.Run(c.name, func(t *testing.T) {
			s := siwConnected(t, testOptions(), verbstest.PairAttr{})
			offending, cause, flags, att := c.setup(t, s)
			before := s.dev.Stats()
			s.peer.write(fpdu(offending, false))
			s.peer.expectFPDU("Terminate", terminateFPDU(cause, flags, att, false))
			s.peer.expectEOF("after the Terminate")
			verbstest.WaitDone(t, s.conn, peerTimeout)
			expectTerminate(t, s.conn, verbs.TermLayer(cause>>12), uint8(cause>>8)&0xF, uint8(cause), false)
			if c.hasRecv {
				verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 1, c.recv, verbs.WCRecv)
			}
			verbstest.NoWC(t, s.side.CQ)
			if st := s.side.QP.State(); st != verbs.QPStateError {
				t.Errorf("QP in %v after the Terminate, want ERROR", st)
			}
			after := s.dev.Stats()
			if after.TerminatesSent != before.TerminatesSent+1 {
				t.Errorf("TerminatesSent %d -> %d", before.TerminatesSent, after.TerminatesSent)
			}
			if c.malformed && after.MalformedFrames <= before.MalformedFrames {
				t.Errorf("MalformedFrames %d -> %d", before.MalformedFrames, after.MalformedFrames)
			}
			if c.protection && after.ProtectionErrors <= before.ProtectionErrors {
				t.Errorf("ProtectionErrors %d -> %d", before.ProtectionErrors, after.ProtectionErrors)
			}
			ev := verbstest.WaitAsyncEvent(t, s.dev, peerTimeout, func(ev verbs.AsyncEvent) bool { return ev.QP == s.side.QP })
			if !errors.Is(ev.Err, verbs.ErrDisconnected) {
				t.Errorf("async event %v", ev)
			}
			proveDeviceServes(t, s.dev)
		})
	}
}

// TestReadOverflow: a peer with more Read Requests outstanding than the
// IRD it negotiated (1) gets RDMAP "catastrophic, stream". The first Read
// is large, so its response is still being sent when the second arrives.
func TestReadOverflow(t *testing.T) {
	const big = 32 << 20
	s := siwConnected(t, testOptions(), verbstest.PairAttr{BufSize: big})
	first := readReqULPDU(1, 0x4242, 0, big, stagOf(s.side.Buf), s.side.Buf.Addr(0))
	second := readReqULPDU(2, 0x4242, 0, 64, stagOf(s.side.Buf), s.side.Buf.Addr(0))
	s.peer.write(cat(fpdu(first, false), fpdu(second, false)))
	want := terminateFPDU(0x0207, 0xC000, attached(0, second[:18]), false)
	for {
		f := s.peer.readFPDU()
		if f[3] == 0x42 { // Read Response segment of the first Read
			continue
		}
		if string(f) != string(want) {
			t.Fatalf("Terminate\n got % x\nwant % x", f, want)
		}
		break
	}
	verbstest.WaitDone(t, s.conn, peerTimeout)
	expectTerminate(t, s.conn, verbs.TermLayerRDMAP, 2, 0x07, false)
}

// TestPeerTerminate: a Terminate from the peer ends the stream with the
// peer's cause; a Read the Terminate names completes with a remote access
// error instead of a flush.
func TestPeerTerminate(t *testing.T) {
	s := siwConnected(t, testOptions(), verbstest.PairAttr{})
	s.peer.write(rtrWriteFPDU) // any first FPDU opens the responder's gate
	verbstest.MustPostSend(t, s.side.QP, verbs.SendWR{ID: 7, Opcode: verbs.OpRDMARead, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{s.side.Buf.SGE(16, 32)}, RemoteAddr: 0x9000, RKey: 0x1234})
	req := s.peer.readFPDU()
	wantReq := fpdu(readReqULPDU(1, stagOf(s.side.Buf), s.side.Buf.Addr(16), 32, 0x1234, 0x9000), false)
	if string(req) != string(wantReq) {
		t.Fatalf("Read Request\n got % x\nwant % x", req, wantReq)
	}
	before := s.dev.Stats().TerminatesReceived
	s.peer.write(terminateFPDU(0x0100, 0xE000, attached(0, req[2:48]), false))
	verbstest.WaitDone(t, s.conn, peerTimeout)
	expectTerminate(t, s.conn, verbs.TermLayerRDMAP, 1, 0x00, true)
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 7, verbs.WCRemAccessErr, verbs.WCRDMARead)
	if after := s.dev.Stats().TerminatesReceived; after != before+1 {
		t.Errorf("TerminatesReceived %d -> %d", before, after)
	}
	s.peer.expectEOF("after the peer's Terminate")
}

// TestPeerClose: TCP EOF is an orderly disconnect.
func TestPeerClose(t *testing.T) {
	s := siwConnected(t, testOptions(), verbstest.PairAttr{})
	verbstest.MustPostRecv(t, s.side.QP, verbs.RecvWR{ID: 3, SGL: []verbs.SGE{s.side.Buf.SGE(0, 8)}})
	s.peer.c.Close()
	verbstest.WaitDone(t, s.conn, peerTimeout)
	if err := s.conn.Err(); !errors.Is(err, verbs.ErrDisconnected) || errors.Is(err, verbs.ErrBroken) {
		t.Fatalf("Err after the peer closed: %v, want ErrDisconnected", err)
	}
	if ev := verbs.DisconnectEventOf(s.conn.Err()); ev != verbs.ConnEventDisconnected {
		t.Fatalf("DisconnectEventOf(%v) = %v, want DISCONNECTED", s.conn.Err(), ev)
	}
	var te *verbs.TerminateError
	if errors.As(s.conn.Err(), &te) {
		t.Fatalf("Err after the peer closed is a Terminate: %v", te)
	}
	verbstest.ExpectWC(t, verbstest.PollOne(t, s.side.CQ, peerTimeout), 3, verbs.WCWRFlushErr, verbs.WCRecv)
}
