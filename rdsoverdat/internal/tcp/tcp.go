package tcp

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/rdsoverdat/wire"
)

// The tcp transport speaks the Linux kernel's rds_tcp wire protocol
// (net/rds/tcp*.c; docs/WIRE.md, R2):
//
//   - Every node listens on TCP port 16385 of its address. Of two nodes,
//     the numerically smaller address connects every path; the larger one
//     only accepts. When the larger side has something to send and no
//     connection, it makes a trigger connection, which the smaller side
//     closes before connecting back; the smaller side also resets any
//     connection a larger peer opens and connects out itself.
//   - Messages are the 48-byte header and h_len payload bytes, back to
//     back, one at a time per TCP connection; h_ack, h_credit, padding
//     and h_csum are 0; h_flags is 0x04 on retransmissions, 0x01 on maps.
//   - There are no RDS acks: a message is acknowledged when TCP has
//     acknowledged its last byte (TIOCOUTQ tells how many bytes are not).
//   - After a reconnect every unacknowledged message is resent with its
//     sequence number and the RETRANSMITTED flag; receivers drop those
//     below the next expected sequence number.
//   - The first message on a new path is the local congestion map; path
//     0 then carries a handshake probe with NPATHS and GEN_NUM, which the
//     kernel answers with a pong.
//   - Keepalive 5 s idle, 5 s interval, 5 probes, and TCP_NODELAY, like
//     rds_tcp_keepalive and rds_tcp_tune.
//
// One deviation by design: the kernel sends to a local address through
// its loopback transport; here a socket that selected TransTCP uses TCP
// even between nodes of one process (127.0.0.x), which is what the
// in-process tests exercise. A node's own address always uses loop.

// Config is the configuration of rdsoverdat.TCPConfig, whose fields it
// mirrors field for field (their meaning is documented there).
type Config struct {
	Port                       int
	Paths                      int
	KeepAlive                  *net.KeepAliveConfig
	ReconnectMin, ReconnectMax time.Duration
	DrainTimeout               time.Duration
	ReaderGrace                time.Duration
}

// New returns the tcp transport, zero fields of cfg set to their
// defaults.
func New(cfg Config) xport.Transport {
	if cfg.Port == 0 {
		cfg.Port = wire.TCPPort
	}
	cfg.Paths = min(max(cfg.Paths, 1), wire.MPathWorkers)
	if cfg.KeepAlive == nil {
		cfg.KeepAlive = &net.KeepAliveConfig{Enable: true, Idle: 5 * time.Second, Interval: 5 * time.Second, Count: 5}
	}
	if cfg.ReconnectMin <= 0 {
		cfg.ReconnectMin = time.Millisecond
	}
	if cfg.ReconnectMax <= 0 {
		cfg.ReconnectMax = time.Second
	}
	if cfg.DrainTimeout <= 0 {
		cfg.DrainTimeout = 2 * time.Second
	}
	if cfg.ReaderGrace == 0 {
		cfg.ReaderGrace = 20 * time.Millisecond
	}
	return &tcpTransport{cfg: cfg}
}

type tcpTransport struct{ cfg Config }

func (*tcpTransport) Type() uint32 { return wire.RDS_TRANS_TCP }
func (*tcpTransport) Name() string { return "tcp" }

// Attach listens on the node's address.
func (t *tcpTransport) Attach(n xport.Node) (xport.NodeTransport, error) {
	ctx, cancel := context.WithCancel(context.Background())
	tn := &tcpNode{cfg: t.cfg, node: n, ctx: ctx, cancel: cancel}
	lc := net.ListenConfig{KeepAliveConfig: *t.cfg.KeepAlive}
	ln, err := lc.Listen(ctx, "tcp4", net.JoinHostPort(n.Addr().String(), strconv.Itoa(t.cfg.Port)))
	if err != nil {
		cancel()
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			err = &xport.PortInUseError{Transport: "tcp", What: "TCP port " + strconv.Itoa(t.cfg.Port), Addr: n.Addr(), Err: err}
		}
		return nil, err
	}
	tn.ln = ln.(*net.TCPListener)
	tn.wg.Add(1)
	go tn.routineAccept()
	return tn, nil
}

// tcpNode is the tcp transport on one node.
type tcpNode struct {
	cfg    Config
	node   xport.Node
	ln     *net.TCPListener
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine of this node's transport
	mu     sync.Mutex
	paths  []*tcpPath
}

func (tn *tcpNode) MaxPaths() int { return tn.cfg.Paths }

// isActive reports whether this node connects to faddr: the smaller
// address is the client of every path (rds_tcp_state_change,
// rds_tcp_accept_one).
func (tn *tcpNode) isActive(faddr netip.Addr) bool { return tn.node.Addr().Less(faddr) }

// tpath returns (creating) the transport state of p.
func (tn *tcpNode) tpath(p xport.Path) *tcpPath {
	if tp, ok := p.Data().Load().(*tcpPath); ok {
		return tp
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if tp, ok := p.Data().Load().(*tcpPath); ok {
		return tp
	}
	tp := &tcpPath{tn: tn, p: p, kick: make(chan struct{}, 1), raddr: p.Conn().RemoteAddr()}
	p.Data().Store(tp)
	tn.paths = append(tn.paths, tp)
	return tp
}

func (tn *tcpNode) Connect(p xport.Path) { tn.tpath(p).connect() }

// Kick has the sender write its message itself when the path's writer
// is idle and the exchange looks like request and response
// (sendDirect); otherwise it wakes the writer.
func (tn *tcpNode) Kick(p xport.Path) {
	// tpath's first look, here: a call on every message for a state
	// made once a path.
	tp, ok := p.Data().Load().(*tcpPath)
	if !ok {
		tp = tn.tpath(p)
	}
	if c := tp.live.Load(); c != nil && c.rxSeen.Load() && c.sendDirect() {
		return
	}
	xport.Signal(tp.kick)
}

// SettleAcks frees what TCP has acknowledged of a lone message that p's
// writer leaves to later traffic (goLone) now, in the caller's
// goroutine (xport.AckSettler); if its ack has not come yet and a socket
// of the node waits for room, it wakes the writer, which then polls for
// it. A path without transport state has no writer, and gets none made
// here: the core walks every path of the node, used or not.
func (tn *tcpNode) SettleAcks(p xport.Path) {
	tp, ok := p.Data().Load().(*tcpPath)
	if !ok || !tp.lone.Load() {
		return
	}
	if c := tp.live.Load(); c != nil && !c.settle(true) {
		return
	}
	if tn.node.SendersBlocked() {
		xport.Signal(tp.kick)
	}
}

func (tn *tcpNode) Reset(p xport.Path) {
	tp := tn.tpath(p)
	tp.mu.Lock()
	c := tp.cur
	tp.mu.Unlock()
	if c != nil {
		c.shutdown(errReset, true)
	}
}

var errReset = errors.New("rds: connection reset by request")

// Close stops listening, drops every path without draining and waits for
// all goroutines.
func (tn *tcpNode) Close() error {
	tn.cancel()
	tn.ln.Close()
	tn.mu.Lock()
	paths := tn.paths
	tn.mu.Unlock()
	for _, tp := range paths {
		tp.mu.Lock()
		c := tp.cur
		tp.mu.Unlock()
		if c != nil {
			c.shutdown(net.ErrClosed, false)
		}
	}
	tn.wg.Wait()
	return nil
}

func (tn *tcpNode) closing() bool { return tn.ctx.Err() != nil }
