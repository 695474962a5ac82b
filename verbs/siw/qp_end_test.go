package siw

import (
	"net"
	"syscall"
	"testing"

	"github.com/godapl/godapl/verbs"
)

// TestEndBrokenOutranksOrderly pins end's one exception to "the first
// cause wins": the reader or writer that got a TCP reset's error may call
// end after another one that read EOF or wrote EPIPE because of the same
// reset; until finish settles the record, the broken cause replaces the
// orderly one, and only that one.
func TestEndBrokenOutranksOrderly(t *testing.T) {
	broken := &verbs.BrokenError{Err: syscall.ECONNRESET}
	terminated := &verbs.TerminateError{Layer: verbs.TermLayer(0)}
	for _, tc := range []struct {
		name          string
		first, second error
		settleBetween bool
		want          error
	}{
		{"EOF then reset", verbs.ErrDisconnected, broken, false, broken},
		{"reset then EOF", broken, verbs.ErrDisconnected, false, broken},
		{"EOF, settled, then reset", verbs.ErrDisconnected, broken, true, verbs.ErrDisconnected},
		{"Disconnect then reset", nil, broken, false, nil},
		{"Terminate then reset", terminated, broken, false, terminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &stream{nc: tcpConn(t), stop: make(chan struct{})}
			if !s.end(tc.first, nil, false) {
				t.Fatal("the first end did not end the stream")
			}
			if tc.settleBetween {
				s.settle()
			}
			if s.end(tc.second, nil, false) {
				t.Fatal("the second end ended the stream again")
			}
			if cause, _, _ := s.settle(); cause != tc.want {
				t.Fatalf("cause = %v, want %v", cause, tc.want)
			}
		})
	}
}

// tcpConn returns one end of a loopback TCP connection, both ends closed
// with the test.
func tcpConn(t *testing.T) *net.TCPConn {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	p, err := ln.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return c
}
