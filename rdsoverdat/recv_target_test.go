package rdsoverdat

import (
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// TestReaderTargetFollowsBinds: the socket a path's reader finds for a
// port is the one the node's map holds, also once the path has found
// another there before: none after that socket closed, the next one
// bound to the port after that.
func TestReaderTargetFollowsBinds(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(2)
	const port = 5000
	a := mustBind(t, st, ap(as[0], 0))
	b := mustBind(t, st, ap(as[1], port))
	if _, err := a.SendTo(nil, b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	recvTimeout(t, b, nil, 5*time.Second)
	p := st.nodeAt(as[1]).Conn(as[0], TransTCP).paths[0]
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
