package tcp

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
	conn := tn.node.Conn(faddr, wire.RDS_TRANS_TCP)
	if conn == nil || faddr == tn.node.Addr() {
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
	// Multipath: the peer encodes the lane in its source port (Go nodes,
	// mainline rds_tcp with SPORT_IDX). Trusting the port even before the
	// handshake matters: after a reset, lane connections can arrive
	// before we know the path count, and a lane on the wrong slot would
	// mix two sequence spaces. A 6.1 kernel connects from ephemeral ports
	// and cannot be kept lane-exact; talk to it with Paths 1 (default).
	if conn.MaxPaths() > 1 && conn.NPaths() != 1 {
		if slot := int(ra.Port) % wire.MPathWorkers; slot < conn.MaxPaths() {
			tn.tpath(conn.Path(slot)).attach(nc)
			return
		}
	}
	n := max(conn.NPaths(), 1)
	var target *tcpPath
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
