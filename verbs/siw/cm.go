package siw

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
	"github.com/godapl/godapl/verbs/siw/internal/iwarp"
)

// The passive side of the connection manager. A listener owns one TCP
// listening socket per address (the wildcard for the all-address device,
// each interface address for an interface device, as siw does) and one
// accept loop per socket. Every accepted TCP connection gets a handshake
// goroutine that reads and checks the MPA Request within the request
// timeout; a valid one waits in the backlog as a ConnRequest until the
// application accepts or rejects it.

// listener implements verbs.Listener: a ListenQueue fed by its sockets'
// accept loops.
type listener struct {
	soft.ListenQueue[*connRequest]
	dev  *Device
	lns  []net.Listener
	addr net.Addr
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
	l := &listener{dev: d}
	l.Init(backlog)
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
	r, err := l.ListenQueue.Accept(ctx, nil)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Close implements verbs.Listener: handshakes in progress are dropped,
// requests waiting in the backlog are rejected and the sockets close.
func (l *listener) Close() error {
	if !l.ListenQueue.Close() {
		return verbs.ErrClosed
	}
	l.closeSockets()
	l.dev.mu.Lock()
	delete(l.dev.listeners, l)
	l.dev.mu.Unlock()
	return nil
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
			case <-l.Done():
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
		if !l.Begin(tc) || !l.dev.goroutine(func() { l.handshake(tc) }) {
			l.End(tc)
			tc.Close()
		}
	}
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
		l.End(c)
		l.dev.opts.Logger.Debug().Err(err).Stringer("peer", c.RemoteAddr()).Msg("siw: dropping connection without a valid MPA Request")
		c.Close()
		return
	}
	c.SetReadDeadline(time.Time{})
	r := newConnRequest(l, c, &f)
	if f.Markers {
		l.End(c)
		r.Reject(nil)
		return
	}
	// Offer hands the connection from the handshakes to the backlog at
	// once, so that Close either finds it in one of them or this goroutine
	// sees Close. From the backlog it belongs to the ConnRequest.
	queued, closed := l.Offer(r, c)
	switch {
	case closed:
		r.Reject(nil)
	case !queued:
		// Backlog full: refuse at the transport level.
		l.dev.opts.Logger.Debug().Stringer("peer", c.RemoteAddr()).Msg("siw: backlog full, dropping connection")
		c.Close()
	}
}
