package tcp

import (
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Connection management of the tcp transport (tcp_connect.c, threads.c):
// per path at most one TCP connection (tcpConn) and at most one connect
// worker. The active (smaller-address) side dials with randomized
// exponential backoff until the path is up; the passive side only makes
// trigger connections while it has messages waiting.

// tcpPath is the tcp transport's state of one connPath.
type tcpPath struct {
	tn   *tcpNode
	p    xport.Path
	kick chan struct{} // wakes the current connection's writer
	// raddr is p's peer address, fixed with its connection: a message a
	// RecvMsg reads names it without two calls through xport.
	raddr netip.Addr
	// lone is set while the writer leaves its one unacknowledged message
	// to later traffic (goLone), so that the reader frees it with the
	// peer's next message and a socket waiting for SO_SNDBUF room wakes
	// the writer (SettleAcks).
	lone atomic.Bool
	// live is cur for senders that write themselves (sendDirect),
	// read without mu.
	live atomic.Pointer[tcpConn]

	mu         sync.Mutex
	cur        *tcpConn      // nil while down
	connecting bool          // routineConnect runs
	rxDone     chan struct{} // closed when the last connection's reader ended
}

// connect starts the connect worker unless the path is up or one runs.
// Only path 0 is ever triggered by the passive side.
func (tp *tcpPath) connect() {
	passive := !tp.tn.isActive(tp.p.Conn().RemoteAddr())
	if tp.p.Index() > 0 && (passive || !tp.p.Conn().Ponged()) {
		return // lanes wait for the peer's pong (connection.ponged); connection.startLanes
	}
	tp.mu.Lock()
	if tp.cur != nil || tp.connecting || tp.tn.closing() {
		tp.mu.Unlock()
		return
	}
	tp.connecting = true
	tp.tn.wg.Add(1)
	tp.mu.Unlock()
	go tp.routineConnect(passive)
}

// routineConnect dials the peer's port 16385 from the node's address.
// Active: until a connection is attached and still up once it is.
// Passive: trigger connections
// (closed at once; the peer connects back) while messages wait and the
// path is down.
func (tp *tcpPath) routineConnect(passive bool) {
	defer tp.tn.wg.Done()
	tn := tp.tn
	d := net.Dialer{
		LocalAddr:       &net.TCPAddr{IP: tn.node.Addr().AsSlice()},
		KeepAliveConfig: *tn.cfg.KeepAlive,
		Timeout:         5 * time.Second,
	}
	raddr := net.TCPAddr{IP: tp.p.Conn().RemoteAddr().AsSlice(), Port: tn.cfg.Port}
	var backoff xport.Backoff
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			backoff.Wait(tn.ctx, tn.cfg.ReconnectMin, tn.cfg.ReconnectMax)
		}
		if !tp.keepConnecting(passive) {
			return
		}
		if !passive && tn.cfg.Paths > 1 {
			// Multipath: source port = path index modulo 8, so the
			// acceptor can put the connection on the same lane.
			d.LocalAddr = &net.TCPAddr{IP: tn.node.Addr().AsSlice(), Port: lanePort(tp.p.Index())}
		}
		nc, err := d.DialContext(tn.ctx, "tcp4", raddr.String())
		switch {
		case err == nil && passive:
			// Trigger: the smaller side resets this and connects to us.
			nc.(*net.TCPConn).SetLinger(0)
			nc.Close()
		case err == nil:
			tp.attach(nc.(*net.TCPConn))
			if tcpAttached != nil {
				tcpAttached(tp)
			}
			// Done if the connection is up. It may have failed already
			// (a peer that resets it at once): its writer's reconnect
			// found this worker still running, so the worker goes on.
			if !tp.keepConnecting(passive) {
				return
			}
		}
	}
}

// tcpAttached, when set by a test, runs in a connect worker right after
// it attached its connection.
var tcpAttached func(tp *tcpPath)

// keepConnecting decides under mu whether the worker goes on, clearing
// connecting when it stops so that a later connect starts a new one. A
// connection that ends sets cur to nil under mu before it calls connect,
// so either this sees it gone or that connect sees no worker.
func (tp *tcpPath) keepConnecting(passive bool) bool {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	ok := !tp.tn.closing() && tp.cur == nil
	if ok && passive {
		ok = tp.p.HasWork()
	}
	if !ok {
		tp.connecting = false
	}
	return ok
}

var errReplaced = errors.New("rds: connection replaced by a newer one")

// attach makes nc the path's connection: an older one is shut down first
// (a duelling or restarted peer), the new reader starts only once the old
// one has drained, and the path goes up.
func (tp *tcpPath) attach(nc *net.TCPConn) {
	nc.SetNoDelay(true)
	tp.mu.Lock()
	old := tp.cur
	tp.mu.Unlock()
	if old != nil {
		old.shutdown(errReplaced, true)
		<-old.wdone
	}
	raw, err := nc.SyscallConn()
	tp.mu.Lock()
	if err != nil || tp.cur != nil || tp.tn.closing() {
		tp.mu.Unlock()
		nc.SetLinger(0)
		nc.Close()
		return
	}
	c := &tcpConn{tp: tp, nc: nc, raw: raw, stop: make(chan struct{}),
		wdone: make(chan struct{}), rdone: make(chan struct{}), prevRx: tp.rxDone}
	c.outqFn = c.readOutq
	c.reader.init(c)
	c.upAt = time.Now()
	// The previous connection's writer reported Down before it gave up
	// tp.cur (writerExit), so this is the new connection's generation.
	c.gen = tp.p.Gen()
	c.refs.Store(2)
	tp.cur, tp.rxDone = c, c.rdone
	tp.lone.Store(false) // the older connection's messages are back in the send queue
	tp.live.Store(c)
	tp.tn.wg.Add(2)
	tp.mu.Unlock()
	tp.p.Up() // before the writer can fail and take the path down
	go c.routineRecv()
	go c.routineSend()
	if tp.p.Index() == 0 {
		tp.p.SendProbe()
	}
}

// tcpConn is one TCP connection carrying a path, with its reader and
// writer goroutines. The writer owns the transmit state (bw, written,
// acks) and, when it ends, takes the path down; the reader owns
// reassembly. The last of the two to end closes the socket.
type tcpConn struct {
	tp     *tcpPath
	nc     *net.TCPConn
	raw    syscall.RawConn
	stop   chan struct{} // closed by shutdown
	wdone  chan struct{} // writer ended and the path is down
	rdone  chan struct{} // reader ended
	prevRx chan struct{} // previous connection's rdone
	refs   atomic.Int32
	// heard: the peer has sent a header on this connection, so its RDS
	// took the socket on (it sends its congestion map first). Until then,
	// or until the connection has lived tcpAckTrust since upAt, TCP acks
	// prove nothing: a kernel that rejects a connection after the
	// handshake (rds_tcp_accept_one resetting it while the path is not
	// down yet) discards bytes its TCP has already acknowledged.
	heard atomic.Bool
	upAt  time.Time
	gen   uint64 // the path's generation for this connection (NextTx)
	once  sync.Once
	err   error // why the connection ended; set in shutdown
	drain bool  // graceful: half-close and read what the peer sent

	reader tcpReaderRole // who reads the stream (tcp_reader.go)
	// ackPolls counts the writer's wake-ups by its ack poll timer (for
	// tests and figures).
	ackPolls atomic.Uint64

	// rxSeen: a header arrived alone since this side last wrote, the
	// sign of a request-response exchange (sendDirect).
	rxSeen atomic.Bool
	// due: the messages left to later traffic (tcpPath.lone) were due
	// for their acks (ackDue) when the transmit role last left or
	// counted them, so that a header from the peer takes the role to
	// count them (settle) only then, not for every message.
	due atomic.Bool
	// directs counts sendDirect's writes (for tests and figures).
	directs atomic.Uint64

	// The transmit role: the writer holds txMu except while it waits,
	// a sender that writes in its place (sendDirect) while it holds it.
	// The fields below are the role's.
	txMu      sync.Mutex
	txExited  bool        // the writer ended: nobody writes any more
	txErr     error       // a sender's write failed: the writer ends with it
	carry     xport.Msg   // taken for a batch a sender could not finish: the writer sends it first
	timer     *time.Timer // the ack poll
	armed     bool        // timer runs
	polls     ackPollSchedule
	batch     *txBatch
	trusted   bool   // acks count: heard, or up for tcpAckTrust
	written   uint64 // bytes handed to bw
	lastAcked uint64
	// unacked is the path's unacknowledged count as the role last saw
	// it (ackDue): each message flushQueue takes comes with the path's
	// count (Pending's when it takes none), and one its acks free takes
	// one off. Others only lower the path's (a cancelled socket, Down),
	// so it is never below.
	unacked int
	outq    int
	outqErr error
	outqFn  func(fd uintptr)
}

// shutdown ends the connection. Graceful: the writer stops, the path
// goes down, our side half-closes and the reader keeps delivering what
// the peer sent until its FIN (or DrainTimeout): bytes TCP has
// acknowledged are never discarded. Otherwise everything stops now.
func (c *tcpConn) shutdown(err error, graceful bool) {
	c.once.Do(func() {
		c.err, c.drain = err, graceful
		close(c.stop)
		c.nc.SetWriteDeadline(time.Now())
		if !graceful {
			c.nc.SetLinger(0)
			c.reader.setConnDeadline(time.Now())
		}
	})
}

// release drops the reader's or writer's hold; the last closes the socket.
func (c *tcpConn) release() {
	if c.refs.Add(-1) == 0 {
		c.nc.Close()
	}
}

// writerExit runs when the writer ends: final ack check, path down,
// half-close, then reconnect (active side) or trigger (passive side with
// work).
func (c *tcpConn) writerExit(err error) {
	c.shutdown(err, true)
	tp := c.tp
	// Down before giving up the slot: a new connection attaches only
	// once the old one's unacknowledged messages are back in front of
	// the send queue, or it could send later messages ahead of them.
	tp.p.Down(c.err)
	tp.mu.Lock()
	if tp.cur == c {
		tp.cur = nil
		tp.live.Store(nil)
	}
	tp.mu.Unlock()
	if c.drain {
		c.nc.CloseWrite()
		c.reader.setConnDeadline(time.Now().Add(tp.tn.cfg.DrainTimeout))
	}
	c.release()
	if !tp.tn.closing() && (tp.tn.isActive(tp.p.Conn().RemoteAddr()) || tp.p.HasWork()) {
		tp.connect()
	}
	close(c.wdone) // last: who waits for it finds the reconnect under way
}

// lanePort picks a port from the usual ephemeral range whose value
// modulo wire.MPathWorkers is the path index (mainline rds_tcp's source
// port encoding); a port in use makes the dial fail and the next attempt
// draws another.
func lanePort(index int) int {
	const lo, hi = 32768, 60999
	return lo + rand.N((hi-lo)/wire.MPathWorkers)*wire.MPathWorkers + index
}
