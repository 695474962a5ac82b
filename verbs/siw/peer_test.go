package siw_test

// A hand-driven iWARP peer for protocol tests: a raw TCP connection on
// which the test writes MPA frames and FPDUs byte by byte and reads what
// the provider sends back, so that the provider's wire behaviour is
// checked against bytes written down here rather than against its own
// encoder.

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"net"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

const peerTimeout = 10 * time.Second

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// mpaFrame builds an MPA Request or Reply by hand.
func mpaFrame(reply bool, flags, rev byte, pd []byte) []byte {
	key := "MPA ID Req Frame"
	if reply {
		key = "MPA ID Rep Frame"
	}
	b := append([]byte(key), flags, rev, 0, 0)
	binary.BigEndian.PutUint16(b[18:], uint16(len(pd)))
	return append(b, pd...)
}

// irdord is an MPA v2 IRD/ORD block.
func irdord(ird, ord uint16) []byte {
	return binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, ird), ord)
}

// siwRequest is the MPA Request the kernel's siw sends for rping: rev 2,
// enhanced, IRD 1, ORD 1, no P2P, no CRC.
var siwRequest = mpaFrame(false, 0x10, 2, irdord(1, 1))

// fpdu frames ulpdu (header from the control word on, plus payload) as an
// FPDU: length, ULPDU, pad, CRC (zeros unless crc).
func fpdu(ulpdu []byte, crc bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(len(ulpdu)))
	b = append(b, ulpdu...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	var c uint32
	if crc {
		c = crc32.Checksum(b, castagnoli)
	}
	return binary.LittleEndian.AppendUint32(b, c)
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func cat(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

// ULPDUs without the length field.
func sendULPDU(op byte, last bool, inv, qn, msn, mo uint32, payload []byte) []byte {
	c0 := byte(0x01)
	if last {
		c0 |= 0x40
	}
	return cat([]byte{c0, 0x40 | op}, be32(inv), be32(qn), be32(msn), be32(mo), payload)
}

func taggedULPDU(op byte, last bool, stag uint32, to uint64, payload []byte) []byte {
	c0 := byte(0x81)
	if last {
		c0 |= 0x40
	}
	return cat([]byte{c0, 0x40 | op}, be32(stag), be64(to), payload)
}

func readReqULPDU(msn, sinkSTag uint32, sinkTO uint64, size, srcSTag uint32, srcTO uint64) []byte {
	return cat([]byte{0x41, 0x41}, be32(0), be32(1), be32(msn), be32(0), be32(sinkSTag), be64(sinkTO), be32(size), be32(srcSTag), be64(srcTO))
}

// terminateFPDU is the Terminate the provider must send: QN 2, MSN 1,
// MO 0, the control word (cause in the upper half, M/D/R flags), and the
// offending header with its payload length in the length slot.
func terminateFPDU(cause uint16, flags uint16, offending []byte, crc bool) []byte {
	return fpdu(cat([]byte{0x41, 0x47}, be32(0), be32(2), be32(1), be32(0),
		binary.BigEndian.AppendUint16(nil, cause), binary.BigEndian.AppendUint16(nil, flags), offending), crc)
}

// attached is the copy of an offending header a Terminate carries: the
// header (from the control word on) behind a length slot holding the
// segment's payload length.
func attached(payloadLen int, hdr []byte) []byte {
	return cat(binary.BigEndian.AppendUint16(nil, uint16(payloadLen)), hdr)
}

// rawPeer is one end of a raw TCP connection to the provider.
type rawPeer struct {
	t testing.TB
	c net.Conn
}

func (p *rawPeer) write(b []byte) {
	p.t.Helper()
	if _, err := p.c.Write(b); err != nil {
		p.t.Fatalf("raw peer write: %v", err)
	}
}

// read reads exactly n bytes.
func (p *rawPeer) read(n int) []byte {
	p.t.Helper()
	b := make([]byte, n)
	p.c.SetReadDeadline(time.Now().Add(peerTimeout))
	if _, err := io.ReadFull(p.c, b); err != nil {
		p.t.Fatalf("raw peer read of %d bytes: %v", n, err)
	}
	return b
}

// readFPDU reads one FPDU, whole: length, ULPDU, pad, CRC.
func (p *rawPeer) readFPDU() []byte {
	p.t.Helper()
	h := p.read(2)
	n := int(binary.BigEndian.Uint16(h))
	rest := p.read(n + (-(2 + n))&3 + 4)
	return append(h, rest...)
}

// expectFPDU reads one FPDU and compares it with want.
func (p *rawPeer) expectFPDU(what string, want []byte) {
	p.t.Helper()
	got := p.readFPDU()
	if string(got) != string(want) {
		p.t.Fatalf("%s:\n got % x\nwant % x", what, got, want)
	}
}

// expectEOF checks that the provider closes the connection without
// sending anything more.
func (p *rawPeer) expectEOF(what string) {
	p.t.Helper()
	p.c.SetReadDeadline(time.Now().Add(peerTimeout))
	b := make([]byte, 64)
	n, err := p.c.Read(b)
	if n > 0 || !(errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)) {
		p.t.Fatalf("%s: read %d bytes (% x), %v; want the connection closed", what, n, b[:n], err)
	}
}

// expectSilence checks that nothing arrives for a while: the negative half
// of the startup rule, which no event announces.
func (p *rawPeer) expectSilence(what string, d time.Duration) {
	p.t.Helper()
	p.c.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, 64)
	n, err := p.c.Read(b)
	var ne net.Error
	if n > 0 || !errors.As(err, &ne) || !ne.Timeout() {
		p.t.Fatalf("%s: read %d bytes (% x), %v; want nothing", what, n, b[:n], err)
	}
}

func isReset(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe) && oe.Err != nil && (oe.Err.Error() == "read: connection reset by peer")
}

func hexs(b []byte) string { return hex.EncodeToString(b) }

// responderScene is a siw device accepting a connection from a raw peer.
type responderScene struct {
	dev  verbs.Device
	lis  verbs.Listener
	side *verbstest.Side
	conn verbs.Conn
	peer *rawPeer
	req  verbs.ConnRequest
}

// dialResponder opens a device with opts, listens, connects a raw peer,
// sends request and returns the ConnRequest, unanswered.
func dialResponder(t *testing.T, opts siw.Options, request []byte) *responderScene {
	t.Helper()
	verbstest.CheckLeaks(t)
	dev, err := siw.New(opts).Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	lis, err := dev.Listen("127.0.0.1:0", 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	c, err := net.Dial("tcp4", lis.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := &responderScene{dev: dev, lis: lis, peer: &rawPeer{t: t, c: c}}
	s.peer.write(request)
	return s
}

// accept accepts the pending request with a fresh QP and returns the
// reply the raw peer received (replyLen bytes).
func (s *responderScene) accept(t *testing.T, attr verbstest.PairAttr, p verbs.ConnParam, replyLen int) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
	defer cancel()
	req, err := s.lis.Accept(ctx)
	if err != nil {
		t.Fatalf("Accept: %v", err)
	}
	s.req = req
	s.side = verbstest.NewSide(t, s.dev, attr)
	conn, err := req.Accept(s.side.QP, p)
	if err != nil {
		t.Fatalf("ConnRequest.Accept: %v", err)
	}
	s.conn = conn
	s.side.Conn = conn
	return s.peer.read(replyLen)
}

// siwConnected is a responder scene after the siw-style handshake.
func siwConnected(t *testing.T, opts siw.Options, attr verbstest.PairAttr) *responderScene {
	t.Helper()
	s := dialResponder(t, opts, siwRequest)
	reply := s.accept(t, attr, verbs.ConnParam{}, 24)
	if want := mpaFrame(true, 0x10, 2, irdord(1, 1)); string(reply) != string(want) {
		t.Fatalf("MPA Reply % x, want % x", reply, want)
	}
	return s
}

// initiatorScene is a raw listener that a siw device connects to.
type initiatorScene struct {
	dev  verbs.Device
	ln   net.Listener
	side *verbstest.Side
	done chan connectResult
}

type connectResult struct {
	conn verbs.Conn
	err  error
}

// connectInitiator starts Connect from a fresh device to a raw listener
// and returns the raw end once accepted.
func connectInitiator(t *testing.T, opts siw.Options, p verbs.ConnParam) (*initiatorScene, *rawPeer) {
	t.Helper()
	verbstest.CheckLeaks(t)
	dev, err := siw.New(opts).Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dev.Close() })
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	s := &initiatorScene{dev: dev, ln: ln, side: verbstest.NewSide(t, dev, verbstest.PairAttr{}), done: make(chan connectResult, 1)}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), peerTimeout)
		defer cancel()
		c, err := dev.Connect(ctx, s.side.QP, ln.Addr().String(), p)
		s.done <- connectResult{c, err}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s, &rawPeer{t: t, c: c}
}

// result waits for Connect to return.
func (s *initiatorScene) result(t *testing.T) (verbs.Conn, error) {
	t.Helper()
	select {
	case r := <-s.done:
		if r.conn != nil {
			s.side.Conn = r.conn
		}
		return r.conn, r.err
	case <-time.After(peerTimeout):
		t.Fatal("Connect did not return")
	}
	return nil, nil
}

// proveDeviceServes connects a second device to dev through a new
// listener and moves a message both ways.
func proveDeviceServes(t *testing.T, dev verbs.Device) {
	t.Helper()
	other, err := siw.New(testOptions()).Open(siw.DeviceName)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	sa, sb := verbstest.ConnectPair(t, dev, other, "127.0.0.1:0", verbstest.PairAttr{})
	verbstest.RoundTrip(t, sb, sa, 100, 5, peerTimeout)
	verbstest.RoundTrip(t, sa, sb, 100, 6, peerTimeout)
	if err := sb.Conn.Disconnect(); err != nil {
		t.Fatal(err)
	}
	verbstest.WaitDone(t, sa.Conn, peerTimeout)
}
