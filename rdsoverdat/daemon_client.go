package rdsoverdat

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
)

// The daemon backend: a Stack made with Config{Daemon: path} hands out
// Sockets run by the rdsd daemon listening on path (daemon.go), so that
// every process of the host shares its nodes and connections. Each
// Socket is one unixpacket connection to the daemon; every call is a
// request the daemon answers (rdsdproto); a call waiting for its reply
// reads the daemon's records itself and hands the others' replies to
// their calls (daemon_lead.go). The daemon holds
// the socket's state: when the connection ends (this process exits or
// is killed) it closes the socket as Close would; when the daemon goes
// away, every call, blocked or later, fails with ErrDaemonLost.
//
// Differences from the in-process backend:
//   - Stack.Info and NodeStats are the daemon's (the host's view), as
//     rds-info shows them.
//   - RDMA memory (GetMR, RDMAMap, RDMAArgs' local buffers) must come
//     from Socket.SharedMem, which the daemon maps too: other memory
//     fails with ErrNotShared where the transport would use it.

// daemonSocket is the daemon backend of a Socket.
type daemonSocket struct {
	stack *Stack
	c     *rdsdproto.Conn // nil if the dial failed: err says why
	err   error

	nextID  atomic.Uint32
	closed  atomic.Bool
	isBound atomic.Bool // bound is set: sends may be posted

	mu     sync.Mutex
	calls  map[uint32]*dcall
	dead   error // why the connection ended: every call fails with it
	bound  netip.AddrPort
	shared *clientMem

	// What decides whether a send may be posted (daemon_post.go).
	post postState
	// Messages the daemon handed ahead of receives (daemon_held.go).
	held heldQueue

	done chan struct{} // the connection ended (finish)

	// With rings, the reading token (daemon_lead.go): the call that
	// holds it reads the daemon's records. nil without rings.
	lead chan struct{}
	rbuf []byte // the token holder's buffer

	watching bool          // the socket watcher runs (rings in use)
	watched  chan struct{} // closed when it ended
}

// Flags of OpSend's B.
const (
	sendNoDest = 1 << 0 // no destination (ENOTCONN): the zero AddrPort
	sendTooBig = 1 << 1 // the message is above RDS_MAX_MSG_SIZE
	sendPosted = 1 << 2 // no reply: the client returned already (daemon_post.go)
)

// dcall is one request waiting for its reply.
type dcall struct {
	done  chan struct{}
	hdr   [rdsdproto.HeaderLen]byte // the request's header
	reply [rdsdproto.HeaderLen]byte // the reply's header
	err   error                     // the connection's failure
	m     *Msg                      // a receive's destination
	// afterWrite, if set, runs once the request is written (or failed).
	afterWrite func()
	decErr     error
}

var dcallPool = sync.Pool{New: func() any { return &dcall{done: make(chan struct{}, 1)} }}

// newDaemonSocket connects a socket to st's daemon and registers it, so
// that closing st closes it. A connection failure is kept for every
// later call to report.
func newDaemonSocket(st *Stack) *daemonSocket {
	k := &daemonSocket{stack: st, calls: map[uint32]*dcall{}, done: make(chan struct{})}
	uc, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: st.cfg.Daemon, Net: "unixpacket"})
	if err != nil {
		k.err = err
		close(k.done)
		return k
	}
	k.c = rdsdproto.NewConn(uc)
	if !k.useRings() {
		go k.reader()
	}
	st.mu.Lock()
	closed := st.closed
	if !closed {
		st.sockets[k] = struct{}{}
	}
	st.mu.Unlock()
	if closed {
		k.close()
		return k
	}
	if st.cfg.userSendBuffer {
		k.setOption(SendBuffer(st.cfg.SendBuffer))
	}
	if st.cfg.userRecvBuffer {
		k.setOption(RecvBuffer(st.cfg.RecvBuffer))
	}
	return k
}

// reader hands each reply to its call until the connection ends, then
// fails every call still waiting. It serves a socket without rings;
// with rings the calls read themselves (daemon_lead.go).
func (k *daemonSocket) reader() {
	var buf []byte
	for {
		r, fds, err := k.c.Read(&buf)
		if err == nil {
			err = k.dispatch(r, fds, &buf)
		}
		if err != nil {
			k.finish()
			return
		}
	}
}

// dispatch hands one record read from the daemon to its call, or keeps
// it (a message handed ahead, a posted send's failure). An error is a
// record no daemon sends: the connection must end.
// r lies in *buf, which a batch of messages handed ahead keeps (hold).
func (k *daemonSocket) dispatch(r rdsdproto.Record, fds []int, buf *[]byte) error {
	if len(fds) > 0 || r.Flags()&rdsdproto.FlagReply == 0 {
		rdsdproto.CloseFDs(fds)
		return rdsdproto.ErrFlags
	}
	if r.ID() == 0 && r.Op() == rdsdproto.OpRecv {
		if r.Code() == rdsdproto.CodeAhead {
			return k.pushAsk(r)
		}
		return k.hold(r, buf)
	}
	if r.ID() == 0 {
		k.postFailed(errOf(r.Code())) // a posted send the daemon could not queue
		return nil
	}
	k.mu.Lock()
	c := k.calls[r.ID()]
	delete(k.calls, r.ID())
	k.mu.Unlock()
	if c == nil {
		return nil // the answer to a call whose waiter gave up
	}
	copy(c.reply[:], r[:rdsdproto.HeaderLen])
	if c.m != nil && r.Code() == rdsdproto.CodeOK {
		c.decErr = k.fillRecv(c.m, r)
	}
	c.done <- struct{}{}
	return nil
}

// finish ends the connection once: every call still waiting, and every
// later one, fails with ErrDaemonLost (or net.ErrClosed after Close).
func (k *daemonSocket) finish() {
	err := ErrDaemonLost
	if k.closed.Load() {
		err = errClosed
	}
	k.mu.Lock()
	if k.dead != nil {
		k.mu.Unlock()
		return
	}
	k.dead = err
	calls := k.calls
	k.calls = map[uint32]*dcall{}
	k.mu.Unlock()
	for _, c := range calls {
		c.err = err
		c.done <- struct{}{}
	}
	k.wakeHeld() // a receive waiting for a batch asks, and fails
	k.c.Close()
	close(k.done)
}

// fillRecv copies a receive's reply into m.
func (k *daemonSocket) fillRecv(m *Msg, r rdsdproto.Record) error {
	body := r.Body()
	nc, nd := r.C(), r.B()
	if nc > uint64(len(body)) || uint64(len(body))-nc != nd || nd > uint64(len(m.Data)) {
		return rdsdproto.ErrBody
	}
	copy(m.Data, body[nc:])
	m.Addr = r.AddrPort()
	if m.Addr == netip.AddrPortFrom(netip.IPv4Unspecified(), 0) {
		m.Addr = netip.AddrPort{} // a notification has no sender
	}
	m.Flags = MsgFlags(r.A())
	var err error
	m.Control, err = decodeRecvCmsgs(rdsdproto.Cmsgs(body[:nc]), m.Control)
	return err
}

// call sends the request h (with body) and waits for its reply, which
// it returns with the call to put back (putCall). A context that ends
// first cancels a wait (OpWait) and returns ctx's error.
func (k *daemonSocket) call(ctx context.Context, c *dcall, h rdsdproto.Record, body ...[]byte) (rdsdproto.Record, error) {
	return k.callWith(ctx, c, h, -1, body...)
}

// callFD runs a request that passes descriptor fd.
func (k *daemonSocket) callFD(c *dcall, h rdsdproto.Record, fd int) error {
	_, err := k.callWith(nil, c, h, fd)
	return err
}

func (k *daemonSocket) callWith(ctx context.Context, c *dcall, h rdsdproto.Record, fd int, body ...[]byte) (rdsdproto.Record, error) {
	written := c.afterWrite
	c.afterWrite = nil
	if written == nil {
		written = func() {}
	}
	if k.c == nil {
		written()
		return nil, k.err
	}
	if k.lead == nil {
		k.sendCredit() // with rings the daemon reads the count in shared memory
	}
	id := h.ID()
	k.mu.Lock()
	if k.dead != nil {
		err := k.dead
		k.mu.Unlock()
		written()
		return nil, err
	}
	k.calls[id] = c
	k.mu.Unlock()
	err := k.c.WriteFD(h, fd, body...)
	written()
	if err != nil {
		k.mu.Lock()
		_, mine := k.calls[id]
		delete(k.calls, id)
		dead := k.dead
		k.mu.Unlock()
		if !mine {
			<-c.done // the reader failed the call: consume its signal
		}
		if dead != nil {
			return nil, dead
		}
		if k.closed.Load() {
			return nil, errClosed
		}
		return nil, ErrDaemonLost
	}
	if k.await(ctx, c) != nil {
		cancel := k.newHeader(rdsdproto.OpCancel)
		cancel.SetA(uint64(id))
		k.c.Write(cancel)
		k.await(nil, c) // the daemon answers the canceled wait (or the connection ends)
		if c.err == nil && rdsdproto.Record(c.reply[:]).Code() == rdsdproto.CodeCanceled {
			return nil, ctx.Err()
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	r := rdsdproto.Record(c.reply[:])
	if c.decErr != nil {
		return r, c.decErr
	}
	return r, errOf(r.Code())
}

// newHeader returns a request header of op with a fresh ID.
func (k *daemonSocket) newHeader(op rdsdproto.Op) rdsdproto.Record {
	return rdsdproto.New(nil, op, k.newID(), 0)
}

// newID returns a request ID; 0 is never one (it marks posted sends).
func (k *daemonSocket) newID() uint32 {
	for {
		if id := k.nextID.Add(1); id != 0 {
			return id
		}
	}
}

// getCall returns a pooled call with its request header for op in hdr.
func (k *daemonSocket) getCall(op rdsdproto.Op) (*dcall, rdsdproto.Record) {
	c := dcallPool.Get().(*dcall)
	c.err, c.m, c.decErr, c.afterWrite = nil, nil, nil, nil
	h := rdsdproto.New(c.hdr[:], op, k.newID(), 0)
	return c, h
}

// putCall returns c to the pool once its reply was read.
func putCall(c *dcall) {
	c.m = nil
	dcallPool.Put(c)
}

// simple runs a request without a body and returns its reply's header
// fields through f (nil: none wanted).
func (k *daemonSocket) simple(op rdsdproto.Op, set func(rdsdproto.Record), get func(rdsdproto.Record)) error {
	c, h := k.getCall(op)
	defer putCall(c)
	if set != nil {
		set(h)
	}
	r, err := k.call(nil, c, h)
	if err == nil && get != nil {
		get(r)
	}
	return err
}

func (k *daemonSocket) bind(a netip.AddrPort) error {
	var got netip.AddrPort
	err := k.simple(rdsdproto.OpBind, func(h rdsdproto.Record) { h.SetAddrPort(a) },
		func(r rdsdproto.Record) { got = r.AddrPort() })
	if err == nil {
		k.mu.Lock()
		k.bound = got
		k.mu.Unlock()
		k.isBound.Store(got.IsValid())
	}
	return err
}

func (k *daemonSocket) boundAddr() netip.AddrPort {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.bound
}

func (k *daemonSocket) boundNode() *rdsNode { return nil }

func (k *daemonSocket) buffered() (send, recv int) {
	k.simple(rdsdproto.OpBuffered, nil, func(r rdsdproto.Record) { send, recv = int(r.A()), int(r.B()) })
	return send, recv
}

// close closes the socket in the daemon, then the connection.
func (k *daemonSocket) close() error {
	if k.closed.Swap(true) {
		return errClosed
	}
	k.stack.mu.Lock()
	delete(k.stack.sockets, k)
	k.stack.mu.Unlock()
	if k.c == nil {
		return nil
	}
	k.wakeHeld() // a receive waiting for a batch asks, and fails
	err := k.simple(rdsdproto.OpClose, nil, nil)
	k.c.UnixConn().CloseWrite() // the daemon's reader ends, then it closes its end
	<-k.done
	if k.watching {
		<-k.watched
	}
	k.c.Close()
	k.shared.close()
	if errors.Is(err, errClosed) {
		err = nil // a reply lost to a connection that just ended
	}
	return err
}

func (k *daemonSocket) setDeadline(t time.Time, read bool) error {
	if !read {
		k.post.mu.Lock()
		k.post.deadline = !t.IsZero()
		k.post.mu.Unlock()
	} else {
		// Before the request: a receive waiting for a push in the ring
		// wakes at the latest on the request's reply.
		k.readDeadline(t)
	}
	return k.simple(rdsdproto.OpDeadline, func(h rdsdproto.Record) {
		if !read {
			h.SetA(1)
		}
		if !t.IsZero() {
			h.SetB(uint64(t.UnixNano()))
		}
	}, nil)
}

func (k *daemonSocket) sendmsg(p []byte, dst netip.AddrPort, cm []ControlMessage, flags MsgFlags) (int, error) {
	k.pollRing()
	if len(cm) == 0 && flags == 0 {
		if n, posted, err := k.tryPost(p, dst); posted || err != nil {
			return n, err
		}
	} else if err := k.takePostErr(); err != nil {
		return 0, err
	}
	if len(cm) > 0 {
		k.holdOff() // an RDMA op can complete with a notification
	}
	c, h := k.getCall(rdsdproto.OpSend)
	defer putCall(c)
	h.SetAddrPort(dst)
	switch {
	case !dst.IsValid():
		h.SetB(sendNoDest)
	case !dst.Addr().Unmap().Is4():
		h.SetAddrPort(netip.AddrPortFrom(netip.IPv4Unspecified(), dst.Port())) // refused as INADDR_ANY is
	}
	if len(p) > maxMsgSize {
		// The core refuses any message above 1 MiB alike: the daemon
		// checks a stand-in of 1 MiB + 1 instead of carrying it all.
		h.SetB(h.B() | sendTooBig)
		p = nil
	}
	h.SetA(uint64(flags))
	h.SetN(uint32(len(p)))
	var enc []byte
	var cookieAddr *Cookie
	if len(cm) > 0 {
		enc = appendSendCmsgs(nil, cm, k.shared.memOf)
		for _, x := range cm {
			if mp, ok := x.(RDMAMap); ok {
				cookieAddr = mp.CookieAddr
			}
		}
	}
	h.SetC(uint64(len(enc)))
	r, err := k.callSend(c, h, enc, p)
	if err != nil {
		return 0, err
	}
	if cookieAddr != nil {
		*cookieAddr = Cookie(r.A())
	}
	return int(r.N()), nil
}

func (k *daemonSocket) recvmsg(m *Msg, flags MsgFlags) (int, error) {
	m.Control = m.Control[:0]
	m.Flags = 0
	for {
		if n, ok := k.takeHeld(m, flags, false); ok {
			return n, nil
		}
		if flags == 0 && k.waitPushed() {
			continue
		}
		c, h := k.getCall(rdsdproto.OpRecv)
		h.SetA(uint64(flags))
		h.SetN(uint32(min(len(m.Data), rdsdproto.MaxMessage)))
		if k.mayHold(flags) {
			h.SetB(recvAhead)
		}
		if k.pushing() {
			h.SetB(h.B() | recvPush)
		}
		c.m = m
		r, err := k.call(nil, c, h)
		ahead, n := r != nil && r.Code() == rdsdproto.CodeAhead, 0
		if r != nil {
			n = int(r.N())
		}
		putCall(c)
		if ahead {
			if n, ok := k.takeHeld(m, flags, true); ok {
				return n, nil
			}
			continue // another receive of this socket took it: ask again
		}
		if err != nil {
			return 0, err
		}
		return n, nil
	}
}

func (k *daemonSocket) setOption(o Option) error {
	if _, ok := o.(CongMonitor); ok {
		k.holdOff() // congestion updates are notifications
	}
	if v, ok := o.(RecvTimeout); ok {
		k.recvTimeout(v > 0) // before the request, as the read deadline
	}
	err := k.simple(rdsdproto.OpSetOption, func(h rdsdproto.Record) { putOption(h, o) }, nil)
	if err == nil {
		k.optionSet(o)
	}
	return err
}

func (k *daemonSocket) option(o Option) error {
	code := optionCode(o)
	return k.simple(rdsdproto.OpOption, func(h rdsdproto.Record) { h.SetA(uint64(code)) },
		func(r rdsdproto.Record) { storeOption(o, r) })
}

func (k *daemonSocket) poll() Events {
	var ev Events
	k.simple(rdsdproto.OpPoll, nil, func(r rdsdproto.Record) { ev = Events(r.A()) })
	return ev
}

func (k *daemonSocket) wait(ctx context.Context, want Events) (Events, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c, h := k.getCall(rdsdproto.OpWait)
	defer putCall(c)
	h.SetA(uint64(want))
	r, err := k.call(ctx, c, h)
	if err != nil {
		return 0, err
	}
	return Events(r.A()), nil
}

func (k *daemonSocket) getMR(mem []byte, flags RDMAFlags) (Cookie, error) {
	k.holdOff()
	c, h := k.getCall(rdsdproto.OpGetMR)
	defer putCall(c)
	h.SetA(uint64(flags))
	var enc [rdsdproto.MemLen]byte
	rdsdproto.PutMem(enc[:], k.shared.memOf(mem))
	r, err := k.call(nil, c, h, enc[:])
	if err != nil {
		return 0, err
	}
	return Cookie(r.A()), nil
}

func (k *daemonSocket) freeMR(ck Cookie, flags RDMAFlags) error {
	return k.simple(rdsdproto.OpFreeMR, func(h rdsdproto.Record) { h.SetA(uint64(ck)); h.SetB(uint64(flags)) }, nil)
}

func (k *daemonSocket) mrs() int {
	var n int
	k.simple(rdsdproto.OpMRs, nil, func(r rdsdproto.Record) { n = int(r.A()) })
	return n
}
