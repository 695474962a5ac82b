package rdsoverdat

import (
	"net/netip"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// readerPath binds a on one address and b on port of another, sends b
// one message over the tcp transport and returns the path that carried
// it, whose reader has since found b.
func readerPath(t *testing.T, port uint16) (st *Stack, as []netip.Addr, a, b *Socket, p *connPath) {
	t.Helper()
	st = tcpStack(t)
	as = testAddrs(2)
	a = mustBind(t, st, ap(as[0], 0))
	b = mustBind(t, st, ap(as[1], port))
	if _, err := a.SendTo(nil, b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	recvTimeout(t, b, nil, 5*time.Second)
	return st, as, a, b, st.nodeAt(as[1]).Conn(as[0], TransTCP).paths[0]
}

// TestReaderTargetFollowsBinds: the socket a path's reader finds for a
// port is the one the node's map holds, also once the path has found
// another there before: none after that socket closed, the next one
// bound to the port after that.
func TestReaderTargetFollowsBinds(t *testing.T) {
	leakCheck(t)
	const port = 5000
	st, as, a, b, p := readerPath(t, port)
	header := func(dport wire.Port) wire.Header {
		h := wire.Header(make([]byte, wire.HeaderLen))
		h.Encode(&wire.Fields{Sport: wire.Port(a.BoundAddr().Port()), Dport: dport})
		return h
	}
	if got := p.readerTarget(header(port)); got != b.sock() {
		t.Fatalf("target %p, want the bound socket %p", got, b.sock())
	}
	if got := p.readerTarget(header(port + 1)); got != nil {
		t.Errorf("target %p for a port nobody holds, want none", got)
	}
	if got := p.readerTarget(header(port)); got != b.sock() {
		t.Errorf("target %p, want the bound socket %p again", got, b.sock())
	}
	b.Close()
	if got := p.readerTarget(header(port)); got != nil {
		t.Errorf("target %p after its socket closed, want none", got)
	}
	c := mustBind(t, st, ap(as[1], port))
	if got := p.readerTarget(header(port)); got != c.sock() {
		t.Errorf("target %p, want the socket bound since %p", got, c.sock())
	}
}

// TestReaderForAnswersAsTargetAndWindow: ReaderFor's answers for every
// kind of header (data, map, ping, pong, extensions, lengths out of
// bounds, resends in and below the window) and for the socket the path
// found last, another socket, a receiver that is none, and a socket
// closed since, are ReaderTarget's and plainInWindow's, as the
// interface says.
func TestReaderForAnswersAsTargetAndWindow(t *testing.T) {
	leakCheck(t)
	const port = 5000
	st, as, a, b, p := readerPath(t, port)
	other := mustBind(t, st, ap(as[1], port+1))
	p.mu.Lock()
	next := p.nextRxSeq
	p.mu.Unlock()
	var headers []wire.Header
	for _, sport := range []wire.Port{wire.PingPort, wire.Port(a.BoundAddr().Port())} {
		for _, dport := range []wire.Port{wire.PingPort, wire.ProbePort, port, port + 1, port + 2} {
			for _, f := range []wire.Flag{0, wire.FlagCongBitmap, wire.FlagAckRequired,
				wire.FlagRetransmitted, wire.FlagCongBitmap | wire.FlagAckRequired} {
				for _, seq := range []wire.Seq{next - 1, next} {
					for _, l := range []uint32{0, 64, wire.MaxMsgSize, wire.MaxMsgSize + 1} {
						for _, ext := range []byte{byte(wire.ExtNone), 1} {
							h := wire.Header(make([]byte, wire.HeaderLen))
							h.Encode(&wire.Fields{Sequence: seq, Len: l, Sport: sport, Dport: dport, Flags: f})
							h[wire.ExtHdrOffset] = ext
							headers = append(headers, h)
						}
					}
				}
			}
		}
	}
	check := func(stage string, rs ...*Socket) {
		t.Helper()
		for _, h := range headers {
			for _, r := range rs {
				// Each header after the path found b last, as a
				// reader that reads b's messages has it.
				p.rxTarget.Store(b.sock())
				is, plain := (*xpath)(p).ReaderFor(h, r.sock())
				wantIs := p.readerTarget(h) == r.sock()
				wantPlain := wantIs && p.plainInWindow(h)
				if is != wantIs || plain != wantPlain {
					t.Fatalf("%s: ReaderFor(%v) for port %d = %v, %v; want %v, %v",
						stage, h.Decode(), r.BoundAddr().Port(), is, plain, wantIs, wantPlain)
				}
			}
			if is, plain := (*xpath)(p).ReaderFor(h, nil); is || plain {
				t.Fatalf("%s: ReaderFor(%v) for no socket = %v, %v", stage, h.Decode(), is, plain)
			}
		}
	}
	check("open", b, other)
	b.Close()
	check("closed", b, other)
}
