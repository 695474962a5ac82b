package rdsoverdat

import (
	"errors"
	"net"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The tcp listener (tcp_listen.c): one per node, on its address and port
// 16385. A connection from a larger address attaches to the first free
// path of that peer's connection (replacing path 0's connection when the
// peer is single-path: it must have restarted or noticed a failure before
// us). A connection from a smaller address breaks the rule that the
// smaller side connects; it is reset and we connect out instead, which is
// what a larger peer's trigger connection asks for.

func (tn *tcpNode) routineAccept() {
	defer tn.wg.Done()
	for {
		nc, err := tn.ln.AcceptTCP()
		if err != nil {
			if tn.closing() || errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(10 * time.Millisecond) // e.g. EMFILE: back off
			continue
		}
		tn.accept(nc)
	}
}

func (tn *tcpNode) accept(nc *net.TCPConn) {
	ra, ok := nc.RemoteAddr().(*net.TCPAddr)
	if !ok {
		nc.Close()
		return
	}
	faddr := ra.AddrPort().Addr().Unmap()
	conn := tn.node.Conn(faddr, TransTCP)
	if conn == nil || faddr == tn.node.addr {
		nc.SetLinger(0)
		nc.Close()
		return
	}
	if tn.isActive(faddr) {
		nc.SetLinger(0)
		nc.Close()
		tn.Connect(conn.Path(0))
		return
	}
	// A connection for a path above 0 may overtake the handshake message
	// that tells us the path count: wait for it while path 0 is busy.
	if conn.NPaths() == 0 && tn.busy(conn.Path(0)) {
		select {
		case <-conn.handshakeDone():
		case <-time.After(2 * time.Second):
		case <-tn.ctx.Done():
		}
	}
	n := max(conn.NPaths(), 1)
	var target *tcpPath
	if n > 1 && conn.peerSportIdx.Load() {
		// The peer encodes the path index in its source port (mainline
		// rds_tcp): that lane, replacing a stale connection if need be.
		target = tn.tpath(conn.Path(int(ra.Port) % wire.MPathWorkers % n))
		target.attach(nc)
		return
	}
	for i := range n {
		tp := tn.tpath(conn.Path(i))
		tp.mu.Lock()
		free := tp.cur == nil
		tp.mu.Unlock()
		if free {
			target = tp
			break
		}
	}
	if target == nil {
		if n > 1 {
			nc.SetLinger(0)
			nc.Close()
			return
		}
		target = tn.tpath(conn.Path(0))
	}
	target.attach(nc)
}

// busy reports whether p has a connection.
func (tn *tcpNode) busy(p *Path) bool {
	tp := tn.tpath(p)
	tp.mu.Lock()
	defer tp.mu.Unlock()
	return tp.cur != nil
}
