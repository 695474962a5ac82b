package rdsoverdat

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

// The daemon side of the daemon backend (docs/RDSD.md): a Daemon serves
// the sockets of its Stack to other processes over a unix SOCK_SEQPACKET
// listener, one connection per socket. cmd/rdsd runs one per host, so
// that every process on the host shares the host's nodes and their one
// connection per peer node, as with the kernel's RDS.

// DefaultDaemonSocket is where rdsd listens unless told otherwise, and
// DaemonEnv the environment variable that points programs at a daemon
// (Config.Daemon).
const (
	DefaultDaemonSocket = "/run/rdsd.sock"
	DaemonEnv           = "RDSD_SOCKET"
)

// DaemonConfig configures a Daemon.
type DaemonConfig struct {
	// Addrs are the local addresses whose nodes the daemon owns: their
	// nodes (and transports' listeners) start with the daemon, and
	// clients may bind only there (EADDRNOTAVAIL elsewhere). Empty: any
	// local address, its node made by the first bind, as in process.
	Addrs []netip.Addr
	// Logger receives client events; nil is silent.
	Logger *zerolog.Logger
}

// Daemon serves a Stack's sockets to client processes.
type Daemon struct {
	st    *Stack
	log   zerolog.Logger
	addrs map[netip.Addr]bool

	mu     sync.Mutex
	lns    map[*net.UnixListener]struct{}
	conns  map[*daemonConn]struct{}
	closed bool
	wg     sync.WaitGroup
}

// NewDaemon returns a daemon serving st, which must run its own nodes
// (not a kernel or daemon Stack), and starts the nodes of cfg.Addrs.
func NewDaemon(st *Stack, cfg DaemonConfig) (*Daemon, error) {
	if st.cfg.Kernel || st.cfg.Daemon != "" {
		return nil, errors.New("rdsoverdat: a daemon serves a Stack of its own nodes, not a kernel or daemon Stack")
	}
	d := &Daemon{st: st, log: zerolog.Nop(), lns: map[*net.UnixListener]struct{}{}, conns: map[*daemonConn]struct{}{}}
	// Its sockets' streams start on messages no collection took
	// (msg_reserve.go).
	reserveMessages(reserveMsgs)
	if cfg.Logger != nil {
		d.log = *cfg.Logger
	}
	if len(cfg.Addrs) > 0 {
		d.addrs = map[netip.Addr]bool{}
	}
	for _, a := range cfg.Addrs {
		a = a.Unmap()
		if !a.Is4() || a.IsUnspecified() || a.IsMulticast() {
			return nil, fmt.Errorf("rdsoverdat: daemon address %v: %w", a, eINVAL)
		}
		if ok, err := st.cfg.IsLocal(a); err != nil || !ok {
			return nil, fmt.Errorf("rdsoverdat: daemon address %v is not local: %w", a, cmpErr(err, eADDRNOTAVAIL))
		}
		if _, err := st.node(a); err != nil {
			return nil, fmt.Errorf("rdsoverdat: daemon node %v: %w", a, err)
		}
		d.addrs[a] = true
	}
	return d, nil
}

// cmpErr returns err, or def if err is nil.
func cmpErr(err, def error) error {
	if err != nil {
		return err
	}
	return def
}

// mayBind reports whether clients may bind a.
func (d *Daemon) mayBind(a netip.Addr) bool { return d.addrs == nil || d.addrs[a.Unmap()] }

// ListenDaemon opens the daemon's unixpacket listener at path with
// permissions mode, owned by group gid (-1: the process's): who may
// connect may use RDS. A socket file left by a daemon that died is
// replaced; one that a live daemon answers on is not.
func ListenDaemon(path string, mode os.FileMode, gid int) (*net.UnixListener, error) {
	addr := &net.UnixAddr{Name: path, Net: "unixpacket"}
	ln, err := net.ListenUnix("unixpacket", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		if c, derr := net.Dial("unixpacket", path); derr == nil {
			c.Close()
			return nil, fmt.Errorf("rdsoverdat: a daemon already listens on %s", path)
		}
		os.Remove(path)
		ln, err = net.ListenUnix("unixpacket", addr)
	}
	if err != nil {
		return nil, err
	}
	ln.SetUnlinkOnClose(true)
	if gid >= 0 {
		if err := os.Chown(path, -1, gid); err != nil {
			ln.Close()
			return nil, err
		}
	}
	if err := os.Chmod(path, mode); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Serve accepts clients on ln until Close (then it returns nil) or an
// accept error. Serve may run on several listeners at once.
func (d *Daemon) Serve(ln *net.UnixListener) error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return net.ErrClosed
	}
	d.lns[ln] = struct{}{}
	d.mu.Unlock()
	for {
		uc, err := ln.AcceptUnix()
		if err != nil {
			d.mu.Lock()
			closed := d.closed
			delete(d.lns, ln)
			d.mu.Unlock()
			if closed {
				return nil
			}
			return err
		}
		d.accept(uc)
	}
}

// accept starts serving one client connection.
func (d *Daemon) accept(uc *net.UnixConn) {
	dc := newDaemonConn(d, uc)
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		uc.Close()
		return
	}
	d.conns[dc] = struct{}{}
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		dc.serve()
		d.mu.Lock()
		delete(d.conns, dc)
		d.mu.Unlock()
	}()
}

// Clients returns the number of connected client sockets.
func (d *Daemon) Clients() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

// Close stops the listeners and closes every client's socket as Close
// does (unacknowledged messages are canceled), then their connections;
// clients' calls fail with ErrDaemonLost. It returns once every client
// goroutine ended. The Stack stays open.
func (d *Daemon) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return net.ErrClosed
	}
	d.closed = true
	for ln := range d.lns {
		ln.Close()
	}
	conns := make([]*daemonConn, 0, len(d.conns))
	for dc := range d.conns {
		conns = append(conns, dc)
	}
	d.mu.Unlock()
	for _, dc := range conns {
		dc.shutdown()
	}
	d.wg.Wait()
	return nil
}

// peerCred returns the credentials of the process at the other end.
func peerCred(uc *net.UnixConn) (*unix.Ucred, error) {
	rc, err := uc.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, cerr
}
