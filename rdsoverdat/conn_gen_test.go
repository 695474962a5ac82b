package rdsoverdat

import (
	"encoding/binary"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// switchRDS is a test transport whose connections die in the middle of a
// transmit round: after every switchEvery-th message the round takes, the
// connection it loaded goes down and the path comes up on the next one
// (whose Up kicks, finds the round running and leaves it a wake-up), and
// the round then goes on with the connection it loaded, as the dat
// transport's kicker may when its EP dies under it. A message posted on
// a dead connection vanishes, as a flushed send does; a message posted on
// a live one reaches the peer's path at once and is acknowledged by
// sequence number, so that a later sequence acked on the next connection
// frees whatever the dead one swallowed.
type switchRDS struct {
	switchEvery int
	// lateTakes counts messages NextTx handed out for a connection after
	// its Down had run.
	lateTakes atomic.Int64
}

func (*switchRDS) Type() TransportType { return TransIB }
func (*switchRDS) Name() string        { return "switch" }

func (t *switchRDS) attach(n *rdsNode) (nodeTransport, error) {
	return &switchNode{t: t, node: n}, nil
}

type switchNode struct {
	t    *switchRDS
	node *rdsNode
}

func (*switchNode) AcksBySequence() {}

// switchConn is one transport connection of a path.
type switchConn struct {
	gen  uint64
	dead bool // guarded by switchPath.mu
}

type switchPath struct {
	inXmit atomic.Bool
	want   atomic.Bool
	mu     sync.Mutex
	cur    *switchConn
	taken  int // messages taken, counting towards the next switch
}

func (l *switchNode) spath(p *connPath) *switchPath {
	if sp, ok := p.TransportData.Load().(*switchPath); ok {
		return sp
	}
	p.TransportData.CompareAndSwap(nil, &switchPath{})
	return p.TransportData.Load().(*switchPath)
}

// up brings p up on a new connection, read its generation first, as the
// contract asks: after the previous connection's Down, before Up.
func (l *switchNode) up(p *connPath, sp *switchPath) {
	sp.mu.Lock()
	sp.cur = &switchConn{gen: p.Gen()}
	sp.mu.Unlock()
	p.Up()
}

func (l *switchNode) Connect(p *connPath) {
	sp := l.spath(p)
	sp.mu.Lock()
	none := sp.cur == nil
	sp.mu.Unlock()
	if none {
		l.up(p, sp)
	}
}

func (l *switchNode) Kick(p *connPath) {
	sp := l.spath(p)
	sp.want.Store(true)
	for sp.want.Load() {
		if !sp.inXmit.CompareAndSwap(false, true) {
			return
		}
		sp.want.Store(false)
		sp.mu.Lock()
		c := sp.cur
		sp.mu.Unlock()
		if c != nil {
			l.round(p, sp, c)
		}
		sp.inXmit.Store(false)
	}
}

// round transmits on c until NextTx has nothing for it.
func (l *switchNode) round(p *connPath, sp *switchPath, c *switchConn) {
	for {
		m := p.NextTx(c.gen)
		if m == nil {
			return
		}
		sp.mu.Lock()
		dead := c.dead
		sp.mu.Unlock()
		if dead {
			l.t.lateTakes.Add(1)
		}
		if !m.IsCongMap() {
			if sp.taken++; sp.taken%l.t.switchEvery == 0 {
				l.replace(p, sp)
			}
		}
		sp.mu.Lock()
		dead = c.dead
		sp.mu.Unlock()
		if !dead && !m.IsCongMap() {
			l.deliver(p, m)
		}
		seq := m.sequence
		p.TxDone(m)
		if !dead {
			p.DropAcked(uint64(seq))
		}
	}
}

// replace ends the path's connection and brings the path up on the
// next one, inside the round that holds the old one.
func (l *switchNode) replace(p *connPath, sp *switchPath) {
	sp.mu.Lock()
	sp.cur.dead = true
	sp.mu.Unlock()
	p.Down(errors.New("switch: connection replaced"))
	l.up(p, sp)
}

func (l *switchNode) deliver(p *connPath, m *message) {
	dst := l.node.stack.nodeAt(p.conn.faddr)
	if dst == nil {
		return
	}
	back := dst.Conn(l.node.addr, TransIB)
	if back == nil {
		return
	}
	back.paths[0].receiveCopy(m)
}

func (l *switchNode) Reset(p *connPath) {}
func (l *switchNode) Close() error      { return nil }

// A transmit round outlives its connection: the path goes down and up on
// the next connection between two NextTx calls of the round. NextTx must
// give the round nothing more, or the round posts messages on the dead
// connection after its Down requeued what it had, and the next
// connection's acks of later sequences free them unsent: the receiver
// sees a gap.
func TestNextTxEndedGeneration(t *testing.T) {
	leakCheck(t)
	tr := &switchRDS{switchEvery: 3}
	st := newTestStack(t, Config{Transports: []Transport{tr}})
	as := testAddrs(2)
	a := mustBind(t, st, ap(as[0], 0), SendBuffer(1<<20))
	b := mustBind(t, st, ap(as[1], 0), RecvBuffer(8<<20))
	const n = 200
	msg := make([]byte, 8)
	for i := range uint64(n) {
		binary.BigEndian.PutUint64(msg, i)
		if _, err := a.SendTo(msg, b.BoundAddr(), 0); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 64)
	for want := range uint64(n) {
		b.SetReadDeadline(time.Now().Add(10 * time.Second))
		l, _, err := b.ReadFrom(buf)
		if err != nil {
			t.Fatalf("waiting for #%d: %v (%d messages taken for dead connections)", want, err, tr.lateTakes.Load())
		}
		if got := binary.BigEndian.Uint64(buf[:l]); got != want {
			t.Fatalf("got #%d, want #%d (%d messages taken for dead connections)", got, want, tr.lateTakes.Load())
		}
	}
	if k := tr.lateTakes.Load(); k != 0 {
		t.Fatalf("NextTx handed out %d messages for connections whose Down had run", k)
	}
	p := st.nodeAt(as[0]).Conn(as[1], TransIB).Path(0)
	p.mu.Lock()
	ups := p.ups
	p.mu.Unlock()
	if ups < n/3 {
		t.Fatalf("the path came up %d times, want at least %d: the transport did not switch", ups, n/3)
	}
}
