package rdsoverdat

import (
	"encoding/json"
	"net"
	"net/netip"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// Daemon reports the daemon socket path of a daemon Stack ("" if none).
func (st *Stack) Daemon() string { return st.cfg.Daemon }

// daemonInfoTimeout bounds the wait for a daemon's Info or NodeStats.
const daemonInfoTimeout = 5 * time.Second

// DaemonInfo returns the Info of the daemon a daemon Stack uses: the
// host's nodes, sockets and connections, as rds-info shows them.
func (st *Stack) DaemonInfo() (Info, error) {
	var info Info
	b, err := st.daemonQuery(rdsdproto.OpInfo, netip.AddrPort{})
	if err != nil {
		return info, err
	}
	err = json.Unmarshal(b, &info)
	return info, err
}

// daemonNodeStats returns the counters of the daemon's node at addr:
// on a daemon Stack the nodes are the host's, which the daemon runs.
func (st *Stack) daemonNodeStats(addr netip.Addr) (NodeStats, bool) {
	var ns NodeStats
	b, err := st.daemonQuery(rdsdproto.OpStats, netip.AddrPortFrom(addr, 0))
	if err != nil || json.Unmarshal(b, &ns) != nil {
		return NodeStats{}, false
	}
	return ns, true
}

// daemonQuery asks the daemon a question about its Stack (op, about
// addr) on a connection of its own and returns the reply's body.
func (st *Stack) daemonQuery(op rdsdproto.Op, addr netip.AddrPort) ([]byte, error) {
	uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: st.cfg.Daemon, Net: "unixpacket"})
	if err != nil {
		return nil, err
	}
	defer uc.Close()
	uc.SetDeadline(time.Now().Add(daemonInfoTimeout))
	c := rdsdproto.NewConn(uc)
	h := rdsdproto.New(nil, op, 1, 0)
	if addr.IsValid() {
		h.SetAddrPort(addr)
	}
	if err := c.Write(h); err != nil {
		return nil, err
	}
	var buf []byte
	r, fds, err := c.Read(&buf)
	if err != nil {
		return nil, err
	}
	if len(fds) > 0 {
		rdsdproto.CloseFDs(fds)
		return nil, rdsdproto.ErrBody
	}
	if r.Op() != op || r.Flags()&rdsdproto.FlagReply == 0 {
		return nil, rdsdproto.ErrBody
	}
	if err := errOf(r.Code()); err != nil {
		return nil, err
	}
	return r.Body(), nil
}
