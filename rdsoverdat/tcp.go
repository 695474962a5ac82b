package rdsoverdat

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

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

// TCPConfig configures the tcp transport.
type TCPConfig struct {
	// Port is the listening port (default wire.TCPPort, 16385). Both
	// ends must agree; anything else cannot talk to a kernel.
	Port int
	// Paths is the number of paths announced with NPATHS (default 1,
	// which keeps a kernel peer single-path; at most 8).
	Paths int
	// KeepAlive overrides the kernel's keepalive (5 s, 5 s, 5 probes).
	KeepAlive *net.KeepAliveConfig
	// ReconnectMin and ReconnectMax bound the randomized exponential
	// reconnect backoff (defaults 1 ms and 1 s, the kernel's sysctls).
	ReconnectMin, ReconnectMax time.Duration
	// DrainTimeout bounds how long a path that is going down keeps
	// reading what the peer already sent (default 2 s).
	DrainTimeout time.Duration
	// ReaderGrace is how long the reading of a connection, lent to a
	// socket's RecvMsg calls, may stay unused before the connection's
	// reader goroutine takes it back (tcp_reader.go): other sockets'
	// messages wait up to twice that behind a receiver that stopped
	// receiving (default 20 ms). Negative: never lend it.
	ReaderGrace time.Duration
}

// TCP returns the tcp transport.
func TCP(cfg TCPConfig) Transport {
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

type tcpTransport struct{ cfg TCPConfig }

func (*tcpTransport) Type() TransportType { return TransTCP }
func (*tcpTransport) Name() string        { return "tcp" }

// attach listens on the node's address.
func (t *tcpTransport) attach(n *rdsNode) (nodeTransport, error) {
	ctx, cancel := context.WithCancel(context.Background())
	tn := &tcpNode{cfg: t.cfg, node: n, ctx: ctx, cancel: cancel}
	lc := net.ListenConfig{KeepAliveConfig: *t.cfg.KeepAlive}
	ln, err := lc.Listen(ctx, "tcp4", net.JoinHostPort(n.addr.String(), strconv.Itoa(t.cfg.Port)))
	if err != nil {
		cancel()
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err
		}
		if errors.Is(err, syscall.EADDRINUSE) {
			err = &portInUse{transport: "tcp", what: "TCP port " + strconv.Itoa(t.cfg.Port), addr: n.addr, err: err}
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
	cfg    TCPConfig
	node   *rdsNode
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
func (tn *tcpNode) isActive(faddr netip.Addr) bool { return tn.node.addr.Less(faddr) }

// tpath returns (creating) the transport state of p.
func (tn *tcpNode) tpath(p *connPath) *tcpPath {
	if tp, ok := p.TransportData.Load().(*tcpPath); ok {
		return tp
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if tp, ok := p.TransportData.Load().(*tcpPath); ok {
		return tp
	}
	tp := &tcpPath{tn: tn, p: p, kick: make(chan struct{}, 1)}
	p.TransportData.Store(tp)
	tn.paths = append(tn.paths, tp)
	return tp
}

func (tn *tcpNode) Connect(p *connPath) { tn.tpath(p).connect() }

func (tn *tcpNode) Kick(p *connPath) { signal(tn.tpath(p).kick) }

// WakeForRoom wakes p's writer if it polls for its lone message's ack
// slowly: a sender now waits for the room that ack frees (roomWaker). A
// path without transport state has no writer, and gets none made here:
// a blocked sender walks every path of its connection, used or not.
func (tn *tcpNode) WakeForRoom(p *connPath) {
	if tp, ok := p.TransportData.Load().(*tcpPath); ok && tp.lone.Load() {
		signal(tp.kick)
	}
}

func (tn *tcpNode) Reset(p *connPath) {
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
