package tcp

import "github.com/godapl/godapl/rdsoverdat/internal/xport"

// What the tests of package rdsoverdat, which run this transport under a
// real stack, observe and provoke of its state. The package is internal,
// so exporting these adds nothing to any public API.

// AckTrust is how long a connection whose peer has sent nothing lives
// before its TCP acks count as RDS acks.
const AckTrust = tcpAckTrust

// LoneMax is the most messages a sender's own writes leave to later
// traffic before their acks are counted.
const LoneMax = tcpLoneMax

// Conn is a handle on one tcp connection of a path; handles on the same
// connection compare equal.
type Conn struct{ c *tcpConn }

// CurrentConn returns the connection that carries p, if p is up over
// this transport.
func CurrentConn(p xport.Path) (Conn, bool) {
	tp, ok := p.Data().Load().(*tcpPath)
	if !ok {
		return Conn{}, false
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if tp.cur == nil {
		return Conn{}, false
	}
	return Conn{tp.cur}, true
}

// RoleState is who holds a connection's reader role.
type RoleState = xport.RoleState

const (
	RoleReader = xport.RoleOwner // the reader goroutine reads
	RoleIdle   = xport.RoleIdle  // lent, nobody reads; a RecvMsg may take it
	RoleRecv   = xport.RoleRecv  // a RecvMsg reads
	RoleDead   = xport.RoleDead  // the reader goroutine has ended
)

// ReaderState returns who holds the connection's reader role.
func (c Conn) ReaderState() RoleState { return c.c.reader.State() }

// AckPolls returns how often the connection's writer woke up on its ack
// poll timer.
func (c Conn) AckPolls() uint64 { return c.c.ackPolls.Load() }

// AckPollArmed reports whether the connection's writer has an ack poll
// pending.
func (c Conn) AckPollArmed() bool {
	c.c.txMu.Lock()
	defer c.c.txMu.Unlock()
	return c.c.armed
}

// DirectWrites returns how often a sender wrote the path's queue itself
// instead of waking the connection's writer.
func (c Conn) DirectWrites() uint64 { return c.c.directs.Load() }

// Abort shuts the connection down as a reset does and returns once its
// writer has ended and asked for a reconnect.
func (c Conn) Abort() {
	c.c.shutdown(errReset, false)
	<-c.c.wdone
}

// SetAttachHook has f run in a connect worker right after it attached a
// connection to path p; nil removes it. It must not change while a stack
// runs this transport.
func SetAttachHook(f func(p xport.Path)) {
	if f == nil {
		tcpAttached = nil
		return
	}
	tcpAttached = func(tp *tcpPath) { f(tp.p) }
}

// RoleCounts are the counts of a connection's reader role: lends by the
// reader goroutine, messages RecvMsg holders read, and takes back by the
// reader goroutine.
func (c Conn) RoleCounts() (lends, held, resumes uint64) {
	r := &c.c.reader
	lends, resumes = r.Counts()
	return lends, r.held.Load(), resumes
}
