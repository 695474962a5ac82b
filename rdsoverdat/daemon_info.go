package rdsoverdat

import (
	"encoding/json"
	"net"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// Daemon reports the daemon socket path of a daemon Stack ("" if none).
func (st *Stack) Daemon() string { return st.cfg.Daemon }

// daemonInfoTimeout bounds the wait for a daemon's Info.
const daemonInfoTimeout = 5 * time.Second

// DaemonInfo returns the Info of the daemon a daemon Stack uses: the
// host's nodes, sockets and connections, as rds-info shows them.
func (st *Stack) DaemonInfo() (Info, error) {
	var info Info
	uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: st.cfg.Daemon, Net: "unixpacket"})
	if err != nil {
		return info, err
	}
	defer uc.Close()
	uc.SetDeadline(time.Now().Add(daemonInfoTimeout))
	c := rdsdproto.NewConn(uc)
	if err := c.Write(rdsdproto.New(nil, rdsdproto.OpInfo, 1, 0)); err != nil {
		return info, err
	}
	var buf []byte
	r, fds, err := c.Read(&buf)
	if err != nil {
		return info, err
	}
	if len(fds) > 0 {
		rdsdproto.CloseFDs(fds)
		return info, rdsdproto.ErrBody
	}
	if r.Op() != rdsdproto.OpInfo || r.Flags()&rdsdproto.FlagReply == 0 {
		return info, rdsdproto.ErrBody
	}
	if err := errOf(r.Code()); err != nil {
		return info, err
	}
	err = json.Unmarshal(r.Body(), &info)
	return info, err
}
