package core

import (
	"context"
	"errors"
	"net/netip"
	"strconv"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
)

// ConnectParam is what ep_connect takes besides the EP.
type ConnectParam struct {
	Addr        netip.Addr
	ConnQual    dat.ConnQual
	Timeout     time.Duration // <= 0: DAT_TIMEOUT_INFINITE
	PrivateData []byte
	QoS         dat.QoS
	Flags       dat.ConnectFlags
}

func (ia *IA) maxPrivData() int { return min(ia.dattr.MaxPrivData, verbs.MaxPrivateData) }

// Connect starts an active connection (ep_connect). It returns at once;
// the outcome arrives on the connect EVD: ESTABLISHED with the peer's
// private data, PEER_REJECTED, NON_PEER_REJECTED, UNREACHABLE or
// TIMED_OUT.
func (ep *EP) Connect(op string, p ConnectParam) error {
	if err := ep.live(op); err != nil {
		return err
	}
	switch {
	case !p.Addr.IsValid() || !p.Addr.Unmap().Is4():
		return dat.NewError(op, dat.InvalidAddress, dat.InvalidAddressMalformed)
	case p.ConnQual > 65535:
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg3)
	case len(p.PrivateData) > ep.ia.maxPrivData():
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg5)
	case p.Flags > dat.ConnectMultipathRequired:
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg8)
	case p.Flags == dat.ConnectMultipathRequired:
		return dat.NewError(op, dat.ModelNotSupported, dat.InvalidArg8)
	case p.QoS&^(dat.QoSHighThroughput|dat.QoSLowLatency|dat.QoSEconomy|dat.QoSPremium) != 0:
		return dat.NewError(op, dat.ModelNotSupported, dat.InvalidArg7)
	}
	ep.mu.Lock()
	defer ep.mu.Unlock()
	if err := ep.require(op, canConnect); err != nil {
		return err
	}
	if ep.qp == nil {
		return dat.NewError(op, dat.InvalidState, dat.InvalidStateEPPZ)
	}
	var ctx context.Context
	var cancel context.CancelFunc
	if p.Timeout > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), p.Timeout)
	} else {
		ctx, cancel = context.WithCancel(context.Background())
	}
	ep.cancel = cancel
	ep.remote = netip.AddrPortFrom(p.Addr.Unmap(), uint16(p.ConnQual))
	ep.local = netip.AddrPortFrom(ep.ia.entry.Addr, 0)
	ep.localDisc = false
	ep.setState(dat.EPStateActiveConnectionPending)
	param := verbs.ConnParam{
		PrivateData:        append([]byte(nil), p.PrivateData...),
		ResponderResources: ep.attr.MaxRDMAReadIn,
		InitiatorDepth:     ep.attr.MaxRDMAReadOut,
		LocalAddr:          ep.ia.entry.Addr.String(),
	}
	qp := ep.qp
	ep.wg.Add(1)
	go ep.routineConnect(ctx, cancel, qp, ep.remote.String(), param)
	return nil
}

// routineConnect runs the connection setup, reports its outcome and then
// watches the connection until it ends.
func (ep *EP) routineConnect(ctx context.Context, cancel context.CancelFunc, qp verbs.QP, addr string, p verbs.ConnParam) {
	defer ep.wg.Done()
	conn, err := ep.ia.dev.Connect(ctx, qp, addr, p)
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded)
	cancel()
	ep.mu.Lock()
	if ep.freed.Load() || ep.State() != dat.EPStateActiveConnectionPending || ep.cancel == nil {
		// Disconnected or freed during setup: the abort was reported already.
		ep.mu.Unlock()
		if conn != nil {
			conn.Disconnect()
		}
		return
	}
	ep.cancel = nil
	connEVD := ep.connEVD
	if err != nil {
		ev := dat.Event{Conn: dat.ConnectionData{EP: ep.handle}}
		var rej *verbs.RejectError
		switch {
		case timedOut:
			ev.Number = dat.ConnectionEventTimedOut
		case errors.As(err, &rej) && error(rej) == err:
			// The peer's connection manager answered with a reject.
			ev.Number = dat.ConnectionEventPeerRejected
			ev.Conn.PrivateData = rej.PrivateData
		case errors.Is(err, verbs.ErrUnreachable):
			ev.Number = dat.ConnectionEventUnreachable
		default:
			ev.Number = dat.ConnectionEventNonPeerRejected
		}
		ep.enterDisconnectedLocked()
		ep.mu.Unlock()
		if connEVD != nil {
			connEVD.Push(ev)
		}
		return
	}
	ep.conn = conn
	ep.peerPData = conn.PrivateData()
	if la, ok := conn.LocalAddr().(interface{ String() string }); ok {
		if ap, err := netip.ParseAddrPort(la.String()); err == nil {
			ep.local = ap
		}
	}
	ep.setState(dat.EPStateConnected)
	ep.mu.Unlock()
	if connEVD != nil {
		connEVD.Push(dat.Event{Number: dat.ConnectionEventEstablished, Conn: dat.ConnectionData{EP: ep.handle, PrivateData: conn.PrivateData()}})
	}
	ep.watch(conn)
}

// enterDisconnectedLocked moves the EP to DISCONNECTED and its QP to
// ERROR, which flushes whatever is posted; later posts flush at once.
func (ep *EP) enterDisconnectedLocked() {
	ep.setState(dat.EPStateDisconnected)
	if ep.qp != nil && ep.qp.State() != verbs.QPStateError {
		ep.qp.Modify(verbs.QPStateError)
	}
}

// watch waits for conn to end and reports how: DISCONNECTED for an
// orderly end (either side), BROKEN for a Terminate or a transport
// failure such as a TCP reset (verbs.DisconnectEventOf).
func (ep *EP) watch(conn verbs.Conn) {
	select {
	case <-conn.Done():
	case <-ep.stop:
		return
	}
	ep.mu.Lock()
	if ep.conn != conn || ep.freed.Load() {
		ep.mu.Unlock()
		return
	}
	ep.conn = nil
	num := dat.ConnectionEventDisconnected
	if !ep.localDisc && verbs.DisconnectEventOf(conn.Err()) == verbs.ConnEventBroken {
		num = dat.ConnectionEventBroken
	}
	ep.enterDisconnectedLocked()
	connEVD := ep.connEVD
	ep.mu.Unlock()
	if connEVD != nil {
		connEVD.Push(dat.Event{Number: num, Conn: dat.ConnectionData{EP: ep.handle}})
	}
}

// Disconnect ends the connection or aborts its setup (ep_disconnect).
// Graceful from CONNECTED passes through DISCONNECT_PENDING while the
// stream closes; abrupt flushes everything at once. The
// CONNECTION_EVENT_DISCONNECTED event follows on the connect EVD.
func (ep *EP) Disconnect(flags dat.CloseFlags) error {
	const op = "ep_disconnect"
	if err := ep.live(op); err != nil {
		return err
	}
	if flags != dat.CloseAbrupt && flags != dat.CloseGraceful {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	ep.mu.Lock()
	if err := ep.require(op, canDisconnect); err != nil {
		ep.mu.Unlock()
		return err
	}
	switch ep.State() {
	case dat.EPStateDisconnected:
		ep.mu.Unlock()
		return nil
	case dat.EPStateActiveConnectionPending, dat.EPStateCompletionPending:
		if ep.cancel != nil {
			ep.cancel()
			ep.cancel = nil
		}
		conn := ep.conn
		ep.conn = nil
		ep.localDisc = true
		ep.enterDisconnectedLocked()
		connEVD := ep.connEVD
		ep.mu.Unlock()
		if conn != nil {
			conn.Disconnect()
		}
		if connEVD != nil {
			connEVD.Push(dat.Event{Number: dat.ConnectionEventDisconnected, Conn: dat.ConnectionData{EP: ep.handle}})
		}
		return nil
	case dat.EPStateDisconnectPending:
		if flags == dat.CloseGraceful {
			ep.mu.Unlock()
			return nil // already on its way
		}
	}
	ep.localDisc = true
	conn := ep.conn
	if flags == dat.CloseGraceful {
		ep.setState(dat.EPStateDisconnectPending)
		ep.mu.Unlock()
		if conn != nil {
			conn.Disconnect()
		}
		return nil
	}
	ep.enterDisconnectedLocked() // flushes and tears the stream down
	ep.mu.Unlock()
	return nil
}

// DupConnect connects ep to the same remote address and qualifier as dup
// (ep_dup_connect).
func (ep *EP) DupConnect(dup *EP, timeout time.Duration, pdata []byte, qos dat.QoS) error {
	const op = "ep_dup_connect"
	if err := dup.live(op); err != nil {
		return err
	}
	dup.mu.Lock()
	remote := dup.remote
	dup.mu.Unlock()
	if !remote.IsValid() {
		return dat.NewError(op, dat.InvalidParameter, dat.InvalidArg2)
	}
	return ep.Connect(op, ConnectParam{Addr: remote.Addr(), ConnQual: dat.ConnQual(remote.Port()), Timeout: timeout, PrivateData: pdata, QoS: qos})
}

// listenAddr is the verbs address a service point of the IA listens on.
func (ia *IA) listenAddr(q dat.ConnQual) string {
	return netip.AddrPortFrom(ia.entry.Addr, uint16(q)).String()
}

func portOf(a interface{ String() string }) (uint16, bool) {
	ap, err := netip.ParseAddrPort(a.String())
	if err == nil {
		return ap.Port(), true
	}
	// Fallback for addresses that are not ip:port strings.
	s := a.String()
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == ':' {
			n, err := strconv.Atoi(s[i+1:])
			return uint16(n), err == nil
		}
	}
	return 0, false
}
