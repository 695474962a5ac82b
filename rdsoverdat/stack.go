package rdsoverdat

import (
	"math/rand/v2"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/rs/zerolog"
)

// Config configures a Stack.
type Config struct {
	// Transports lists the transports sockets may use, in order of
	// preference: a socket that binds without SO_RDS_TRANSPORT gets the
	// first. The loop transport is always available (it carries messages
	// between nodes of this Stack and to a node's own address) and is the
	// default when the list is empty.
	Transports []Transport
	// SendBuffer and RecvBuffer are the default SO_SNDBUF and SO_RCVBUF
	// in payload bytes (0: the kernel's defaults, half of the
	// net.core.wmem_default and rmem_default sysctls as rds(7) says;
	// 106496 each where those cannot be read).
	SendBuffer, RecvBuffer int
	// IsLocal decides whether an address may be bound (default
	// IsLocalAddr, an rtnetlink route lookup).
	IsLocal func(netip.Addr) (bool, error)
	// Logger receives connection events; nil is silent.
	Logger *zerolog.Logger
	// Kernel makes every socket of the Stack a socket of the host
	// kernel's AF_RDS (kernel.go) instead of rdsoverdat's: the same API
	// over in-kernel RDS, so that a program switches between the two by
	// this field alone. Transports and IsLocal are then unused (select
	// the kernel's transport with SO_RDS_TRANSPORT as usual);
	// SendBuffer and RecvBuffer still set each new socket's buffers.
	// KernelAvailable tells whether the host has the rds module.
	Kernel bool
	// Daemon makes every socket of the Stack a socket of the rdsd
	// daemon listening on this unix socket path (daemon_client.go):
	// the host's nodes, shared by every process, behind the same API.
	// Empty: $RDSD_SOCKET (DaemonEnv) if set and Kernel is not, else
	// none. Transports and IsLocal are then unused (the daemon has its
	// own); SendBuffer and RecvBuffer still set each new socket's
	// buffers.
	Daemon string

	userSendBuffer, userRecvBuffer bool // set explicitly (the kernel keeps its defaults otherwise)
}

// Default buffer sizes when the sysctls cannot be read: Linux's
// net.core.wmem_default/rmem_default (212992) as RDS counts them
// (sk_sndbuf/2).
const (
	DefaultSendBuffer = 106496
	DefaultRecvBuffer = 106496
)

// sysctlBuffer is half the byte count in the sysctl file path (RDS
// counts half of sk_sndbuf/sk_rcvbuf), or def if it cannot be read.
func sysctlBuffer(path string, def int) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n < 2 {
		return def
	}
	return n / 2
}

// Stack is an RDS instance in one process: the userspace counterpart of
// the kernel's rds module in one network namespace. It holds one node per
// local address that sockets bound to, and the transports they share.
// Several nodes in one Stack reach each other through the loop transport,
// or through any other transport a socket selects.
type Stack struct {
	cfg    Config
	log    zerolog.Logger
	loop   *loopTransport
	genNum uint32 // this instance's generation number (RDS_EXTHDR_GEN_NUM)

	congGen atomic.Uint64 // bumped on every congestion map change

	// daemonStack is, on a daemon Stack whose daemon runs in this
	// process (tests), the daemon's Stack: nodeAt and defaultTransport
	// look there.
	daemonStack *Stack

	mu      sync.RWMutex
	nodes   map[netip.Addr]*rdsNode
	sockets map[backend]struct{} // every open socket, for Close
	closed  bool
}

// NewStack returns a Stack with the given configuration.
func NewStack(cfg Config) *Stack {
	cfg.userSendBuffer, cfg.userRecvBuffer = cfg.SendBuffer > 0, cfg.RecvBuffer > 0
	if cfg.SendBuffer <= 0 {
		cfg.SendBuffer = sysctlBuffer("/proc/sys/net/core/wmem_default", DefaultSendBuffer)
	}
	if cfg.RecvBuffer <= 0 {
		cfg.RecvBuffer = sysctlBuffer("/proc/sys/net/core/rmem_default", DefaultRecvBuffer)
	}
	if cfg.Daemon == "" && !cfg.Kernel {
		cfg.Daemon = os.Getenv(DaemonEnv)
	}
	if cfg.IsLocal == nil {
		cfg.IsLocal = IsLocalAddr
	}
	st := &Stack{
		cfg:     cfg,
		log:     zerolog.Nop(),
		genNum:  rand.Uint32() | 1, // never 0: 0 means "no generation" on the wire
		nodes:   make(map[netip.Addr]*rdsNode),
		sockets: make(map[backend]struct{}),
	}
	if cfg.Logger != nil {
		st.log = *cfg.Logger
	}
	st.loop = &loopTransport{stack: st}
	return st
}

// transport returns the configured transport of type t.
func (st *Stack) transport(t TransportType) Transport {
	if t == TransLoop {
		return st.loop
	}
	for _, tr := range st.cfg.Transports {
		if tr.Type() == t {
			return tr
		}
	}
	return nil
}

func (st *Stack) defaultTransport() Transport {
	if st.daemonStack != nil {
		return st.daemonStack.defaultTransport()
	}
	if len(st.cfg.Transports) > 0 {
		return st.cfg.Transports[0]
	}
	return st.loop
}

// Kernel reports whether the stack's sockets are the host kernel's
// (Config.Kernel).
func (st *Stack) Kernel() bool { return st.cfg.Kernel }

// nodeAt returns the node of a local address, or nil if no socket has bound
// to it yet (always nil for a kernel stack).
func (st *Stack) nodeAt(addr netip.Addr) *rdsNode {
	if st.daemonStack != nil {
		return st.daemonStack.nodeAt(addr)
	}
	st.mu.RLock()
	defer st.mu.RUnlock()
	return st.nodes[addr]
}

// allNodes returns every node of the stack.
func (st *Stack) allNodes() []*rdsNode {
	st.mu.RLock()
	defer st.mu.RUnlock()
	ns := make([]*rdsNode, 0, len(st.nodes))
	for _, n := range st.nodes {
		ns = append(ns, n)
	}
	return ns
}

// node returns the node for addr, creating it and attaching every
// configured transport on first use.
func (st *Stack) node(addr netip.Addr) (*rdsNode, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return nil, errClosed
	}
	if n := st.nodes[addr]; n != nil {
		return n, nil
	}
	n := newNode(st, addr)
	for _, tr := range append([]Transport{st.loop}, st.cfg.Transports...) {
		// What attach starts may look at the node at once (rdsNode.Conn
		// for a peer's connection): holding the node's lock makes it
		// wait until the transport is published, instead of finding
		// none and refusing a peer that connected the moment the node
		// listened.
		n.mu.Lock()
		nt, err := tr.attach(n)
		if err == nil {
			n.trans[tr.Type()] = nt
		}
		n.mu.Unlock()
		if err != nil {
			n.closeTransports()
			return nil, err
		}
	}
	st.nodes[addr] = n
	return n, nil
}

// Close closes every socket and node: connections are dropped, queued
// messages discarded, transport goroutines stopped.
func (st *Stack) Close() error {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return errClosed
	}
	st.closed = true
	socks := make([]backend, 0, len(st.sockets))
	for s := range st.sockets {
		socks = append(socks, s)
	}
	nodes := st.nodes
	st.mu.Unlock()
	for _, s := range socks {
		s.close()
	}
	for _, n := range nodes {
		n.closeTransports()
	}
	return nil
}

// GenNum returns the stack's connection generation number, which it
// announces in handshake probes so that peers detect a restart.
func (st *Stack) GenNum() uint32 { return st.genNum }

// randPort picks a start for the port-0 search in [2, 65535]
// (rds_add_bound: never 0 or 1).
func randPort() wire.Port { return wire.Port(2 + rand.N(65534)) }
