package rdsoverdat

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
)

func TestBindRules(t *testing.T) {
	leakCheck(t)
	st := tcpStack(t)
	as := testAddrs(1)
	for _, c := range []struct {
		name string
		addr netip.AddrPort
		want syscall.Errno
	}{
		{"not local", netip.MustParseAddrPort("10.255.254.253:4000"), syscall.EADDRNOTAVAIL},
		{"INADDR_ANY", netip.MustParseAddrPort("0.0.0.0:4000"), syscall.EINVAL},
		{"broadcast", netip.MustParseAddrPort("255.255.255.255:4000"), syscall.EINVAL},
		{"multicast", netip.MustParseAddrPort("224.0.0.1:4000"), syscall.EINVAL},
		{"IPv6", netip.MustParseAddrPort("[::1]:4000"), syscall.EINVAL},
		{"probe port", ap(as[0], 1), syscall.EINVAL},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := st.Socket()
			defer s.Close()
			wantErrno(t, s.Bind(c.addr), c.want)
			// An unbound socket cannot send.
			_, err := s.SendTo([]byte("x"), ap(as[0], 9), 0)
			wantErrno(t, err, syscall.ENOTCONN)
		})
	}

	a := mustBind(t, st, ap(as[0], 4000))
	b := st.Socket()
	defer b.Close()
	wantErrno(t, b.Bind(ap(as[0], 4000)), syscall.EADDRINUSE)
	wantErrno(t, a.Bind(ap(as[0], 4001)), syscall.EINVAL) // no rebinding
	if a.BoundAddr() != ap(as[0], 4000) || a.LocalAddr().Network() != "rds" {
		t.Errorf("bound %v %v", a.BoundAddr(), a.LocalAddr())
	}

	// Port 0 picks distinct free ports, never 0 or 1.
	seen := map[uint16]bool{4000: true}
	for range 50 {
		s := mustBind(t, st, ap(as[0], 0))
		p := s.BoundAddr().Port()
		if p < 2 || seen[p] {
			t.Fatalf("picked port %d (seen %v)", p, seen[p])
		}
		seen[p] = true
	}
	// Closing frees the port for another socket.
	a.Close()
	mustBind(t, st, ap(as[0], 4000))
	wantErrno(t, st.Socket().Bind(ap(as[0], 4000)), syscall.EADDRINUSE)

	// A closed socket refuses everything with net.ErrClosed.
	if err := a.Bind(ap(as[0], 4002)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("bind after close: %v", err)
	}
	if _, err := a.SendTo(nil, ap(as[0], 4000), 0); !errors.Is(err, net.ErrClosed) {
		t.Errorf("send after close: %v", err)
	}
	if err := a.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second close: %v", err)
	}
}

// The TCP listener of a node occupies addr:16385; a second Stack (another
// "kernel") cannot create a node on the same address.
func TestBindListenerInUse(t *testing.T) {
	leakCheck(t)
	as := testAddrs(1)
	st1, st2 := tcpStack(t), tcpStack(t)
	mustBind(t, st1, ap(as[0], 4000))
	wantErrno(t, st2.Socket().Bind(ap(as[0], 4000)), syscall.EADDRINUSE)
}

// A bind whose node cannot listen on its transport's port, because
// another stack (another process, in real life) runs an RDS node on that
// address, is EADDRINUSE with a message that names the transport and its
// port and says who probably holds it.
func TestBindTransportPortInUse(t *testing.T) {
	for _, c := range []struct {
		name string
		tr   func() Transport
		port string
	}{
		{"tcp", func() Transport { return TCP(TCPConfig{}) }, "TCP port 16385"},
		{"dat", func() Transport { return DAT(DATConfig{}) }, "conn_qual 18634"},
	} {
		t.Run(c.name, func(t *testing.T) {
			leakCheck(t)
			a := testAddrs(1)[0]
			mustBind(t, newTestStack(t, Config{Transports: []Transport{c.tr()}}), ap(a, 0))
			s := newTestStack(t, Config{Transports: []Transport{c.tr()}}).Socket()
			err := s.Bind(ap(a, 4000))
			wantErrno(t, err, syscall.EADDRINUSE)
			msg := err.Error()
			for _, want := range []string{"rds " + c.name + " transport", c.port, a.String(), "another process", "RDS node"} {
				if !strings.Contains(msg, want) {
					t.Errorf("%q does not say %q", msg, want)
				}
			}
		})
	}
}
