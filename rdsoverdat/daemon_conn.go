package rdsoverdat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/rdsdproto"
	"github.com/godapl/godapl/rdsoverdat/internal/shmring"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// daemonConn is one client connection of a Daemon and the socket it
// carries. Its reader goroutine answers every request that cannot block
// itself; a call that would block (a receive on an empty queue, a send
// on a full one, a wait) runs in a goroutine of its own, so that the
// client's other calls on the socket, Close above all, go on.
type daemonConn struct {
	d    *Daemon
	c    *rdsdproto.Conn
	s    *Socket
	log  zerolog.Logger
	cred *unix.Ucred

	monitor atomic.Bool // RDS_CONG_MONITOR on: sends must not try MSG_DONTWAIT first
	dying   atomic.Bool // the daemon ends the connection: no more replies
	push    atomic.Bool // the client asks for messages pushed (daemon_push.go)
	pushed  bool        // it did once: the receiver goroutine serves every receive (the reader's)
	pushSig chan struct{}
	recvs   atomic.Uint64 // receive requests (not credits) read: what pushing spares
	steps   atomic.Uint64 // the pusher's steps: what the transport's reader spares (tests)
	bufOnce sync.Once     // pushBufs

	mu          sync.Mutex
	sendq       []queuedSend // sends waiting behind one that blocks, in order
	sendHead    int          // sendq[sendHead:] are still to send
	sendFree    [][]byte     // copies of sent data, for the next queued sends
	sending     atomic.Bool  // a goroutine drains sendq (set and cleared under mu)
	recvq       []queuedRecv // receives that wait for a message, in order
	recvWaiting bool         // recvq is not empty or its head runs
	recvWorker  bool         // the receiver goroutine runs
	recvSig     chan struct{}
	gone        chan struct{} // closed when the connection ends
	watching    bool          // the socket watcher runs (rings in use)
	watched     chan struct{} // closed when it ended
	// The receiver goroutine's buffers (one runs at a time).
	wbuf, wenc                 []byte
	wcm                        []ControlMessage
	rmsg, wmsg                 Msg // the reader's and the receiver goroutine's
	drainRecvsFn, drainSendsFn func()
	waits                      map[uint32]context.CancelFunc
	mem                        *daemonMem
	closed                     bool
	wg                         sync.WaitGroup // calls that block
	ahead                      aheadLedger    // messages handed ahead (daemon_ahead.go)

	// The reader goroutine's buffers.
	req  []byte
	hdr  [rdsdproto.HeaderLen]byte
	rbuf []byte
	cm   []ControlMessage
	enc  []byte
}

func newDaemonConn(d *Daemon, uc *net.UnixConn) *daemonConn {
	dc := &daemonConn{d: d, c: rdsdproto.NewConn(uc), s: d.st.Socket(), waits: map[uint32]context.CancelFunc{},
		mem: newDaemonMem()}
	dc.log = d.log
	dc.drainRecvsFn, dc.drainSendsFn = dc.drainRecvs, dc.drainSends
	dc.recvSig, dc.gone, dc.pushSig = make(chan struct{}, 1), make(chan struct{}), make(chan struct{}, 1)
	if cred, err := peerCred(uc); err == nil {
		dc.cred = cred
		dc.log = d.log.With().Int32("pid", cred.Pid).Uint32("uid", cred.Uid).Logger()
	}
	return dc
}

// serve reads requests until the client goes (EOF: it closed the socket
// or died) or sends something malformed, then releases all it held.
func (dc *daemonConn) serve() {
	dc.log.Debug().Msg("client connected")
	var err error
	for {
		var r rdsdproto.Record
		var fds []int
		var shared []byte // a send's data, in the ring until released
		if dc.c.Rings() {
			r, shared, err = dc.c.ReadInPlace(&dc.req, plainSend)
		} else {
			r, fds, err = dc.c.Read(&dc.req)
		}
		if err != nil {
			break
		}
		if shared != nil {
			err = dc.send(r, dc.header(r), shared)
			dc.c.ReleaseInPlace()
			if err != nil {
				break
			}
			continue
		}
		switch {
		case r.Flags()&rdsdproto.FlagReply != 0:
			rdsdproto.CloseFDs(fds)
			err = errors.New("a client sent a reply")
		case r.Op() == rdsdproto.OpRings:
			err = dc.rings(r, fds)
		case r.Op() == rdsdproto.OpRegion:
			err = dc.region(r, fds)
		case len(fds) > 0:
			rdsdproto.CloseFDs(fds)
			err = errors.New("a descriptor on a request that takes none")
		default:
			err = dc.handle(r)
		}
		if err != nil {
			break
		}
	}
	if !errors.Is(err, net.ErrClosed) && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) &&
		!errors.Is(err, shmring.ErrPeerClosed) && !errors.Is(err, shmring.ErrClosed) {
		dc.log.Warn().Err(err).Msg("closing client connection")
	}
	dc.release()
	dc.log.Debug().Msg("client gone")
}

// release closes the client's socket (cancelling its unacknowledged
// messages, as close does), ends its blocked calls and unmaps its
// memory.
func (dc *daemonConn) release() {
	dc.s.Close()
	dc.mu.Lock()
	dc.closed = true
	close(dc.gone)
	for _, cancel := range dc.waits {
		cancel()
	}
	dc.mu.Unlock()
	dc.wg.Wait()
	dc.c.Close()
	if dc.watching {
		<-dc.watched
	}
	dc.mem.close()
}

// shutdown ends the connection from the daemon's side (Daemon.Close):
// the connection closes first, so that the client's calls fail with
// ErrDaemonLost rather than with what closing the socket makes them
// return; then release closes the socket as close does.
func (dc *daemonConn) shutdown() {
	dc.dying.Store(true)
	dc.c.Close()
}

// reply sends the answer to r with code err and body.
func (dc *daemonConn) replyTo(h rdsdproto.Record, err error, body ...[]byte) error {
	if dc.dying.Load() {
		return net.ErrClosed // the client learns of the end from the connection, not from what it undoes
	}
	h.SetFlags(rdsdproto.FlagReply)
	h.SetCode(codeOf(err))
	return dc.c.Write(h, body...)
}

// replyCode sends the answer to r with a code that is no error's.
func (dc *daemonConn) replyCode(h rdsdproto.Record, c rdsdproto.Code) error {
	if dc.dying.Load() {
		return net.ErrClosed
	}
	h.SetFlags(rdsdproto.FlagReply)
	h.SetCode(c)
	return dc.c.Write(h)
}

// header returns the reader's reply header for request r.
func (dc *daemonConn) header(r rdsdproto.Record) rdsdproto.Record {
	return rdsdproto.New(dc.hdr[:], r.Op(), r.ID(), 0)
}

// goBlocking runs a call that may block in its own goroutine, unless the
// connection is closing.
func (dc *daemonConn) goBlocking(f func()) {
	dc.mu.Lock()
	if dc.closed {
		dc.mu.Unlock()
		return
	}
	dc.wg.Add(1)
	dc.mu.Unlock()
	go func() {
		defer dc.wg.Done()
		f()
	}()
}

// handle answers one request. An error is the client's fault (a
// malformed request) or a dead connection: the caller closes it.
func (dc *daemonConn) handle(r rdsdproto.Record) error {
	h := dc.header(r)
	s := dc.s
	switch r.Op() {
	case rdsdproto.OpBind:
		a := r.AddrPort()
		var err error
		if ip := a.Addr(); ip.Is4() && !ip.IsUnspecified() && !ip.IsMulticast() && ip != netip.AddrFrom4([4]byte{255, 255, 255, 255}) &&
			!dc.d.mayBind(ip) {
			err = eADDRNOTAVAIL // a local address, but not one of this daemon's nodes
		} else {
			err = s.Bind(a)
		}
		if sk, ok := s.b.(*sock); ok && err == nil {
			// Its plain messages go straight into batch form
			// (recv_sink.go), from the first on: a queue that grew
			// before pushing started would keep them out of the
			// sink for as long as it stays.
			sk.armSink(true)
		}
		h.SetAddrPort(s.BoundAddr())
		return dc.replyTo(h, err)
	case rdsdproto.OpClose:
		return dc.replyTo(h, s.Close())
	case rdsdproto.OpDeadline:
		var t time.Time
		if ns := int64(r.B()); ns != 0 {
			t = time.Unix(0, ns)
		}
		var err error
		if r.A() == 0 {
			err = s.SetReadDeadline(t)
		} else {
			err = s.SetWriteDeadline(t)
		}
		return dc.replyTo(h, err)
	case rdsdproto.OpSend:
		return dc.send(r, h, r.Body())
	case rdsdproto.OpRecv:
		return dc.recv(r, h)
	case rdsdproto.OpSetOption:
		o, err := getOption(r)
		if err != nil {
			return err
		}
		if cm, ok := o.(CongMonitor); ok {
			dc.monitor.Store(cm.Enable)
			if cm.Enable {
				dc.stopPush() // congestion updates are notifications
			}
		}
		return dc.replyTo(h, s.SetOption(o))
	case rdsdproto.OpOption:
		code := rdsdproto.OptionCode(r.A())
		if !code.Valid() {
			return rdsdproto.ErrBody
		}
		err := readOption(s, code, h)
		return dc.replyTo(h, err)
	case rdsdproto.OpPoll:
		if err := dc.applyAck(); err != nil {
			return err
		}
		h.SetA(uint64(s.Poll()))
		return dc.replyTo(h, nil)
	case rdsdproto.OpWait:
		if err := dc.applyAck(); err != nil {
			return err
		}
		return dc.wait(r, h)
	case rdsdproto.OpCancel:
		dc.mu.Lock()
		cancel := dc.waits[uint32(r.A())]
		dc.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		return nil
	case rdsdproto.OpBuffered:
		if err := dc.applyAck(); err != nil {
			return err
		}
		snd, rcv := s.Buffered()
		h.SetA(uint64(snd))
		h.SetB(uint64(rcv))
		return dc.replyTo(h, nil)
	case rdsdproto.OpGetMR:
		dc.stopPush() // RDMA ops on it complete with notifications
		return dc.getMR(r, h)
	case rdsdproto.OpFreeMR:
		return dc.replyTo(h, s.FreeMR(Cookie(r.A()), RDMAFlags(r.B())))
	case rdsdproto.OpMRs:
		h.SetA(uint64(s.MRs()))
		return dc.replyTo(h, nil)
	case rdsdproto.OpInfo:
		b, err := json.Marshal(dc.d.st.Info())
		if err != nil {
			return err
		}
		return dc.replyTo(h, nil, b)
	case rdsdproto.OpStats:
		ns, ok := dc.d.st.NodeStats(r.AddrPort().Addr())
		if !ok {
			return dc.replyTo(h, eADDRNOTAVAIL)
		}
		b, err := json.Marshal(ns)
		if err != nil {
			return err
		}
		return dc.replyTo(h, nil, b)
	}
	return rdsdproto.ErrOp
}

// plainSend reports whether a request is a send whose body is all data
// (no control messages): the reader hands such a body to the core where
// it lies in the ring, since the core copies it into its message (or
// sendQueued into its copy) and parses none of it.
func plainSend(h rdsdproto.Record) bool {
	return h.Op() == rdsdproto.OpSend && h.Flags()&rdsdproto.FlagReply == 0 && h.C() == 0
}

// send is OpSend, with body the request's body. Without MSG_DONTWAIT it
// first tries with it, in the reader, and only a send that would block
// moves to a goroutine (with a copy of the request): the common send
// costs no goroutine.
func (dc *daemonConn) send(r, h rdsdproto.Record, body []byte) error {
	nc := r.C()
	if nc > uint64(len(body)) || uint64(len(body))-nc != uint64(r.N()) {
		return rdsdproto.ErrBody
	}
	m := Msg{Data: body[nc:], Addr: r.AddrPort()}
	if r.B()&sendNoDest != 0 {
		m.Addr = netip.AddrPort{}
	}
	if r.B()&sendTooBig != 0 {
		if len(m.Data) != 0 {
			return rdsdproto.ErrBody
		}
		m.Data = standIn[:maxMsgSize+1]
	}
	var err error
	shared := true
	if nc > 0 {
		dc.stopPush() // an RDMA op can complete with a notification
		m.Control, err = decodeSendCmsgs(rdsdproto.Cmsgs(body[:nc]), func(mm rdsdproto.Mem) ([]byte, error) {
			b, ok, err := dc.mem.at(mm)
			shared = shared && ok
			return b, err
		})
		if err != nil {
			return err
		}
	}
	cookie := noCookie // an RDMA_MAP's cookie goes in its own variable
	for i, c := range m.Control {
		switch x := c.(type) {
		case RDMAMap:
			cookie = new(Cookie)
			x.CookieAddr = cookie
			m.Control[i] = x
		case RDMAArgs:
			// The op's message holds the client's regions until it is
			// freed: the transport may still reach its local buffers
			// after the client went (daemonMem.close).
			x.pin = dc.mem.t
			m.Control[i] = x
		}
	}
	if !shared && dc.rdmaCapable() {
		return dc.replyTo(h, ErrNotShared)
	}
	flags := MsgFlags(r.A())
	posted := r.B()&sendPosted != 0
	if posted && (flags != 0 || nc != 0 || r.ID() != 0) {
		return rdsdproto.ErrBody
	}
	if posted {
		h = nil // no reply, unless it fails
	}
	blocking := flags&MsgDontWait == 0
	// Read without mu: a send that sees it clear runs in the reader, the
	// only goroutine that sets it, so no queued send can start meanwhile.
	queued := dc.sending.Load()
	if flags&^MsgDontWait != 0 {
		return dc.sendDone(h, 0, eOPNOTSUPP, 0) // as Socket.SendMsg refuses them
	}
	if !queued && (!blocking || (nc == 0 && !dc.monitor.Load())) {
		n, err := dc.s.b.sendmsg(m.Data, m.Addr, m.Control, flags|MsgDontWait)
		if blocking && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.ENOBUFS)) {
			return dc.sendQueued(h, m, flags, cookie)
		}
		return dc.sendDone(h, n, err, *cookie)
	}
	return dc.sendQueued(h, m, flags, cookie)
}

// sendDone answers a send; a posted one (h nil) is answered only if it
// failed, with ID 0, for the client's next send to report.
func (dc *daemonConn) sendDone(h rdsdproto.Record, n int, err error, cookie Cookie) error {
	if h == nil {
		if err == nil {
			return nil
		}
		dc.log.Debug().Err(err).Msg("posted send failed")
		var hb [rdsdproto.HeaderLen]byte
		h = rdsdproto.New(hb[:], rdsdproto.OpSend, 0, 0)
	}
	h.SetN(uint32(n))
	h.SetA(uint64(cookie))
	return dc.replyTo(h, err)
}

// noCookie stands for the cookie of a send without RDMA_MAP (always 0).
var noCookie = new(Cookie)

// queuedSend is a send that waits behind one that blocks.
type queuedSend struct {
	h      rdsdproto.Record // nil: posted
	m      Msg
	flags  MsgFlags
	cookie *Cookie
}

// sendQueued queues a send that may block, on copies of what the
// reader's buffers hold, behind the socket's other waiting sends: a
// goroutine sends them in order, blocking as the client's call would.
func (dc *daemonConn) sendQueued(h rdsdproto.Record, m Msg, flags MsgFlags, cookie *Cookie) error {
	q := queuedSend{m: m, flags: flags, cookie: cookie}
	if h != nil {
		q.h = append(rdsdproto.Record(nil), h...)
	}
	dc.mu.Lock()
	var buf []byte
	if n := len(dc.sendFree); n > 0 {
		buf = dc.sendFree[n-1][:0]
		dc.sendFree[n-1] = nil
		dc.sendFree = dc.sendFree[:n-1]
	}
	q.m.Data = append(buf, m.Data...)
	if dc.sendHead > 0 && len(dc.sendq) == cap(dc.sendq) {
		// Reuse the room of the sends already made rather than grow.
		n := copy(dc.sendq, dc.sendq[dc.sendHead:])
		clear(dc.sendq[n:])
		dc.sendq, dc.sendHead = dc.sendq[:n], 0
	}
	dc.sendq = append(dc.sendq, q)
	start := !dc.sending.Load()
	dc.sending.Store(true)
	dc.mu.Unlock()
	if start {
		dc.goBlocking(dc.drainSendsFn)
	}
	return nil
}

// drainSends sends the queued sends in order until none is left. The
// queue and the copies of the data are kept for the next sends that
// block: a stream that keeps the daemon's socket full (the usual case
// of a fast sender) then allocates nothing.
func (dc *daemonConn) drainSends() {
	for {
		dc.mu.Lock()
		if dc.sendHead == len(dc.sendq) || dc.closed {
			dc.sending.Store(false)
			clear(dc.sendq)
			dc.sendq, dc.sendHead = dc.sendq[:0], 0
			if dc.closed {
				dc.sendq, dc.sendFree = nil, nil
			}
			dc.mu.Unlock()
			return
		}
		q := dc.sendq[dc.sendHead]
		dc.sendq[dc.sendHead] = queuedSend{}
		dc.sendHead++
		dc.mu.Unlock()
		n, err := dc.s.SendMsg(&q.m, q.flags)
		dc.sendDone(q.h, n, err, *q.cookie)
		dc.mu.Lock()
		if len(dc.sendFree) < maxSendFree && cap(q.m.Data) <= maxKeptSend {
			dc.sendFree = append(dc.sendFree, q.m.Data[:0])
		}
		dc.mu.Unlock()
	}
}

// How many copies of queued sends a connection keeps, and up to what
// size: enough for a stream of small messages behind a full SO_SNDBUF,
// without holding large ones.
const (
	maxSendFree = 256
	maxKeptSend = 64 << 10
)

// rdmaCapable reports whether the socket is bound on a transport with
// RDMA, where memory the daemon cannot see must be refused (elsewhere
// the core refuses the call first, as it would in process).
func (dc *daemonConn) rdmaCapable() bool {
	var t TransportOption
	return dc.s.BoundAddr().IsValid() && dc.s.Option(&t) == nil && TransportType(t) == TransIB
}

// recv is OpRecv: tried with MSG_DONTWAIT in the reader, moved to a
// goroutine if it must wait.
func (dc *daemonConn) recv(r, h rdsdproto.Record) error {
	room := int(r.N())
	if room > rdsdproto.MaxMessage {
		return rdsdproto.ErrBody
	}
	flags := MsgFlags(r.A())
	if r.B()&recvCredit != 0 {
		return dc.credit(r)
	}
	if r.B()&^(recvAhead|recvPush) != 0 || r.ID() == 0 {
		return rdsdproto.ErrBody
	}
	dc.recvs.Add(1)
	if err := dc.applyAck(); err != nil {
		return err
	}
	ahead := r.B()&recvAhead != 0 && flags&^MsgDontWait == 0
	push := r.B()&recvPush != 0 && dc.c.Rings()
	dc.push.Store(push)
	if push {
		dc.pushed = true
	}
	dc.mu.Lock()
	waiting := dc.recvWaiting
	dc.mu.Unlock()
	if flags&MsgDontWait == 0 && waiting {
		return dc.recvQueued(h, room, flags, ahead) // behind the receive that waits
	}
	if dc.pushed && !waiting {
		// The receiver goroutine may be handing messages ahead: it
		// serves the receive, so that its batches and the reply go out
		// in the order their messages left the queue. (While it serves
		// a receive that waits it hands nothing ahead unasked, and a
		// MSG_DONTWAIT receive must not wait behind that one.)
		return dc.recvQueued(h, room, flags, ahead)
	}
	if dc.aheadFirst(flags) {
		return dc.replyCode(h, rdsdproto.CodeAhead)
	}
	if cap(dc.rbuf) < room {
		dc.rbuf = make([]byte, room)
	}
	m := &dc.rmsg // a field: a local would escape through the backend interface
	*m = Msg{Data: dc.rbuf[:room], Control: dc.cm[:0]}
	n, err := dc.s.b.recvmsg(m, flags|MsgDontWait)
	dc.cm = m.Control[:0]
	if flags&MsgDontWait == 0 && errors.Is(err, syscall.EAGAIN) {
		return dc.recvQueued(h, room, flags, ahead)
	}
	if err == nil && ahead {
		if _, err := dc.handAhead(false); err != nil {
			return err
		}
	}
	return dc.recvReply(h, m, n, err, &dc.enc)
}

// queuedRecv is a receive that waits for a message.
type queuedRecv struct {
	hdr   [rdsdproto.HeaderLen]byte
	room  int
	flags MsgFlags
	ahead bool // the client takes messages handed ahead
}

// recvQueued hands a receive that must wait to the connection's
// receiver goroutine, which runs the socket's waiting receives one at a
// time, in order (each gets the next message, as blocked receivers of
// one socket do), with buffers of its own.
func (dc *daemonConn) recvQueued(h rdsdproto.Record, room int, flags MsgFlags, ahead bool) error {
	var q queuedRecv
	copy(q.hdr[:], h)
	q.room, q.flags, q.ahead = room, flags, ahead
	dc.mu.Lock()
	dc.recvq = append(dc.recvq, q)
	dc.recvWaiting = true
	start := !dc.recvWorker
	dc.recvWorker = true
	dc.mu.Unlock()
	if start {
		dc.goBlocking(dc.drainRecvsFn)
	}
	signal(dc.recvSig)
	return nil
}

// drainRecvs is the receiver goroutine: it runs the queued receives as
// they come, until the connection ends. It lives as long as the
// connection once started, so that a receive that waits costs no
// goroutine of its own.
func (dc *daemonConn) drainRecvs() {
	for {
		dc.mu.Lock()
		if dc.closed {
			dc.mu.Unlock()
			return
		}
		if len(dc.recvq) == 0 {
			dc.recvWaiting = false
			dc.mu.Unlock()
			if dc.push.Load() {
				dc.pushStep()
				continue
			}
			select {
			case <-dc.recvSig:
			case <-dc.gone:
			}
			continue
		}
		q := dc.recvq[0]
		dc.recvq = append(dc.recvq[:0], dc.recvq[1:]...)
		dc.mu.Unlock()
		if err := dc.applyAck(); err != nil {
			dc.hostile(err)
			continue
		}
		if dc.aheadFirst(q.flags) {
			dc.replyCode(q.hdr[:], rdsdproto.CodeAhead)
			continue
		}
		if cap(dc.wbuf) < q.room {
			dc.wbuf = make([]byte, q.room)
		}
		m := &dc.wmsg // a field: a local would escape through the backend interface
		*m = Msg{Data: dc.wbuf[:q.room], Control: dc.wcm[:0]}
		n, err := dc.s.b.recvmsg(m, q.flags)
		dc.wcm = m.Control[:0]
		if err == nil && q.ahead {
			// The transport reads messages in bursts: the one that woke
			// this receive often has others queued behind it, which go
			// now rather than on the client's next request.
			dc.handAhead(false)
		}
		dc.recvReply(q.hdr[:], m, n, err, &dc.wenc)
	}
}

// recvReply answers a receive; enc is a buffer for the control messages.
func (dc *daemonConn) recvReply(h rdsdproto.Record, m *Msg, n int, err error, enc *[]byte) error {
	if err != nil {
		return dc.replyTo(h, err)
	}
	var cm []byte
	if enc != nil {
		cm = (*enc)[:0]
	}
	cm = appendRecvCmsgs(cm, m.Control)
	if enc != nil {
		*enc = cm
	}
	data := m.Data[:min(n, len(m.Data))]
	h.SetN(uint32(n))
	h.SetA(uint64(m.Flags))
	h.SetAddrPort(m.Addr)
	h.SetB(uint64(len(data)))
	h.SetC(uint64(len(cm)))
	return dc.replyTo(h, nil, cm, data)
}

// wait is OpWait: answered at once if the events are there, otherwise by
// a goroutine until they are, the socket closes or the client cancels.
func (dc *daemonConn) wait(r, h rdsdproto.Record) error {
	want := Events(r.A())
	if ev := dc.s.Poll(); ev&want != 0 {
		h.SetA(uint64(ev))
		return dc.replyTo(h, nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	id := r.ID()
	dc.mu.Lock()
	if _, dup := dc.waits[id]; dup {
		dc.mu.Unlock()
		cancel()
		return errors.New("two waits with one ID")
	}
	dc.waits[id] = cancel
	dc.mu.Unlock()
	h = append(rdsdproto.Record(nil), h...)
	dc.goBlocking(func() {
		ev, err := dc.s.Wait(ctx, want)
		dc.mu.Lock()
		delete(dc.waits, id)
		dc.mu.Unlock()
		cancel()
		if errors.Is(err, context.Canceled) {
			dc.replyCode(h, rdsdproto.CodeCanceled)
			return
		}
		h.SetA(uint64(ev))
		dc.replyTo(h, err)
	})
	return nil
}

// getMR is OpGetMR. Memory outside the client's shared regions reaches
// the core only as a stand-in, where the core refuses the call anyway
// (unbound, or a transport without RDMA), so that the errno is the
// in-process one; on an RDMA transport it is ErrNotShared.
func (dc *daemonConn) getMR(r, h rdsdproto.Record) error {
	mm, err := rdsdproto.GetMem(r.Body())
	if err != nil {
		return err
	}
	mem, shared, err := dc.mem.at(mm)
	if err != nil {
		return err
	}
	if !shared && dc.rdmaCapable() {
		if mm.Len == 0 {
			return dc.replyTo(h, syscall.EINVAL)
		}
		return dc.replyTo(h, ErrNotShared)
	}
	c, err := dc.s.GetMR(mem, RDMAFlags(r.A()))
	h.SetA(uint64(c))
	return dc.replyTo(h, err)
}

// rings is OpRings: the client's rings, attached here; from the reply
// on, records travel in them and a watcher reads the socket, which then
// carries only descriptors (OpRegion) and the end of the client.
func (dc *daemonConn) rings(r rdsdproto.Record, fds []int) error {
	if dc.c.Rings() || len(fds) != 6 || len(r.Body()) != 0 {
		rdsdproto.CloseFDs(fds)
		return errors.New("rings: six descriptors, once, first")
	}
	files := make([]*os.File, len(fds))
	for i, fd := range fds {
		files[i] = os.NewFile(uintptr(fd), "rdsd-ring")
	}
	rx, err := shmring.Attach(files[:3])
	if err != nil {
		for _, f := range files[3:] {
			f.Close()
		}
		return fmt.Errorf("rings: %w", err)
	}
	tx, err := shmring.Attach(files[3:])
	if err != nil {
		rx.Close()
		return fmt.Errorf("rings: %w", err)
	}
	var hb [rdsdproto.HeaderLen]byte
	h := rdsdproto.New(hb[:], rdsdproto.OpRings, r.ID(), 0)
	if err := dc.replyTo(h, nil); err != nil { // on the socket: the rings are not in use yet
		rx.Close()
		tx.Close()
		return err
	}
	dc.c.UseRings(tx, rx)
	dc.watching, dc.watched = true, make(chan struct{})
	go dc.watchSocket()
	return nil
}

// watchSocket reads the socket once the rings carry the records: shared
// memory regions come there (they carry a descriptor), and the end of
// the connection, on which it shuts the rings down so that the reader
// sees the client gone.
func (dc *daemonConn) watchSocket() {
	defer close(dc.watched)
	defer dc.c.ShutdownRings()
	var buf []byte
	for {
		r, fds, err := dc.c.ReadSocket(&buf)
		if err != nil {
			return
		}
		if r.Op() != rdsdproto.OpRegion || r.Flags()&rdsdproto.FlagReply != 0 {
			rdsdproto.CloseFDs(fds)
			dc.log.Warn().Stringer("op", r.Op()).Msg("closing client connection: a record on the socket beside the rings")
			return
		}
		if err := dc.region(r, fds); err != nil {
			return
		}
	}
}

// region is OpRegion: a shared memory region the client hands over.
func (dc *daemonConn) region(r rdsdproto.Record, fds []int) error {
	if len(fds) != 1 {
		rdsdproto.CloseFDs(fds)
		return errors.New("a region without its descriptor")
	}
	var hb [rdsdproto.HeaderLen]byte
	h := rdsdproto.New(hb[:], rdsdproto.OpRegion, r.ID(), 0)
	return dc.replyTo(h, dc.mem.add(r.A(), fds[0]))
}
