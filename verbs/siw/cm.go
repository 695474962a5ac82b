package siw

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// The passive side of the connection manager. A listener owns one TCP
// listening socket per address (the wildcard for the all-address device,
// each interface address for an interface device, as siw does) and one
// accept loop per socket. Every accepted TCP connection gets a handshake
// goroutine that reads and checks the MPA Request within the request
// timeout; a valid one waits in the backlog as a ConnRequest until the
// application accepts or rejects it.

// listener implements verbs.Listener.
type listener struct {
	dev     *Device
	lns     []net.Listener
	addr    net.Addr
	backlog chan *connRequest

	done      chan struct{} // closed by Close
	closeOnce sync.Once

	mu      sync.Mutex
	pending map[*net.TCPConn]struct{} // connections in their handshake +checklocks:mu
	closed  bool                      // +checklocks:mu
}

// Listen implements verbs.Device.
func (d *Device) Listen(addr string, backlog int) (verbs.Listener, error) {
	host, port, err := splitAddr(addr)
	if err != nil {
		return nil, err
	}
	ips, err := d.listenAddrs(host)
	if err != nil {
		return nil, err
	}
	if backlog <= 0 {
		backlog = 1
	}
	l := &listener{dev: d, backlog: make(chan *connRequest, backlog), done: make(chan struct{}), pending: make(map[*net.TCPConn]struct{})}
	for _, ip := range ips {
		ln, err := listenTCP(netip.AddrPortFrom(ip, uint16(port)))
		if err != nil {
			l.closeSockets()
			return nil, fmt.Errorf("siw: listen %s: %w", addr, err)
		}
		l.lns = append(l.lns, ln)
		if port == 0 {
			// Every address of the device listens on the same port.
			port = ln.Addr().(*net.TCPAddr).Port
		}
	}
	l.addr = l.lns[0].Addr()
	if len(ips) > 1 {
		l.addr = &net.TCPAddr{Port: port}
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		l.closeSockets()
		return nil, verbs.ErrClosed
	}
	d.listeners[l] = struct{}{}
	d.mu.Unlock()
	for _, ln := range l.lns {
		if !d.goroutine(func() { l.acceptLoop(ln) }) {
			l.Close()
			return nil, verbs.ErrClosed
		}
	}
	return l, nil
}

// listenAddrs returns the addresses a listener for host binds.
func (d *Device) listenAddrs(host string) ([]netip.Addr, error) {
	if host == "" {
		if d.addrs == nil {
			return []netip.Addr{netip.IPv4Unspecified()}, nil
		}
		return d.addrs, nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return nil, fmt.Errorf("siw: address %q: %w", host, verbs.ErrInvalidArgument)
	}
	ip = ip.Unmap()
	if d.addrs != nil && !ip.IsUnspecified() && !containsAddr(d.addrs, ip) {
		return nil, fmt.Errorf("siw: %s is not an address of %s: %w", ip, d.Name(), verbs.ErrInvalidArgument)
	}
	if d.addrs != nil && ip.IsUnspecified() {
		return d.addrs, nil
	}
	return []netip.Addr{ip}, nil
}

func containsAddr(addrs []netip.Addr, ip netip.Addr) bool {
	for _, a := range addrs {
		if a == ip {
			return true
		}
	}
	return false
}

// splitAddr parses "ip:port" (ip may be empty).
func splitAddr(s string) (string, int, error) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("siw: address %q: %w", s, verbs.ErrInvalidArgument)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("siw: port in %q: %w", s, verbs.ErrInvalidArgument)
	}
	return host, port, nil
}

// setSockopts gives a socket what siw gives its sockets: SO_REUSEADDR.
// TCP_NODELAY is set on the connection itself (Go does it by default; it
// is set again explicitly where connections are made).
func setSockopts(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEADDR, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

func listenTCP(ap netip.AddrPort) (net.Listener, error) {
	lc := net.ListenConfig{Control: setSockopts}
	return lc.Listen(context.Background(), "tcp4", ap.String())
}

func (l *listener) Addr() net.Addr { return l.addr }

// Accept implements verbs.Listener.
func (l *listener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	for {
		select {
		case r := <-l.backlog:
			return r, nil
		case <-l.done:
			return nil, verbs.ErrClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Close implements verbs.Listener: the sockets close, handshakes in
// progress are dropped and requests waiting in the backlog are rejected.
func (l *listener) Close() error {
	err := verbs.ErrClosed
	l.closeOnce.Do(func() {
		err = nil
		l.mu.Lock()
		l.closed = true
		for c := range l.pending {
			c.Close()
		}
		l.mu.Unlock()
		close(l.done)
		l.closeSockets()
		for {
			select {
			case r := <-l.backlog:
				r.Reject(nil)
				continue
			default:
			}
			break
		}
		l.dev.mu.Lock()
		delete(l.dev.listeners, l)
		l.dev.mu.Unlock()
	})
	return err
}

func (l *listener) closeSockets() {
	for _, ln := range l.lns {
		ln.Close()
	}
}

// acceptLoop accepts TCP connections on ln until the listener closes.
func (l *listener) acceptLoop(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			select {
			case <-l.done:
				return
			default:
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient failure (EMFILE, ECONNABORTED): back off
			// briefly rather than spin.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		tc := c.(*net.TCPConn)
		tc.SetNoDelay(true)
		if !l.track(tc) || !l.dev.goroutine(func() { l.handshake(tc) }) {
			l.untrack(tc)
			tc.Close()
		}
	}
}

func (l *listener) track(c *net.TCPConn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.pending[c] = struct{}{}
	return true
}

func (l *listener) untrack(c *net.TCPConn) {
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
}

// handshake reads the MPA Request of one connection and queues a
// ConnRequest for it. Requests siw drops silently (wrong key, revision
// above 2, PD_Length above 256, a timeout) are dropped silently here; a
// request for markers is rejected with a Reply, as siw rejects it.
func (l *listener) handshake(c *net.TCPConn) {
	c.SetReadDeadline(time.Now().Add(l.dev.opts.MPARequestTimeout))
	f, err := iwarp.ReadMPA(c)
	if err == nil && f.Reply {
		err = fmt.Errorf("siw: MPA Reply where a Request was due: %w", iwarp.ErrMPAKey)
	}
	if err != nil {
		l.untrack(c)
		l.dev.opts.Logger.Debug().Err(err).Stringer("peer", c.RemoteAddr()).Msg("siw: dropping connection without a valid MPA Request")
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	r := newConnRequest(l, c, &f)
	if f.Markers {
		l.untrack(c)
		r.Reject(nil)
		return
	}
	// Hand the connection from the pending set to the backlog under the
	// lock, so that Close either finds it in one of them or this goroutine
	// sees Close. From the backlog it belongs to the ConnRequest.
	l.mu.Lock()
	delete(l.pending, c)
	closed, queued := l.closed, false
	if !closed {
		select {
		case l.backlog <- r:
			queued = true
		default:
		}
	}
	l.mu.Unlock()
	switch {
	case closed:
		r.Reject(nil)
	case !queued:
		// Backlog full: refuse at the transport level.
		l.dev.opts.Logger.Debug().Stringer("peer", c.RemoteAddr()).Msg("siw: backlog full, dropping connection")
		c.Close()
	}
}
