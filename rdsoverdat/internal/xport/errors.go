package xport

import (
	"fmt"
	"net/netip"
)

// PortInUseError is a transport that cannot listen on the node's address
// because the port is taken there: most likely by another process
// running an RDS node on that address (or the kernel's rds_tcp). It
// wraps the transport's error, so it stays EADDRINUSE for errors.Is.
type PortInUseError struct {
	Transport string // "tcp", "dat"
	What      string // "TCP port 16385", "conn_qual 18634"
	Addr      netip.Addr
	Err       error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("rds %s transport: %s on %v is in use, probably by another process running an RDS node on this address: %v",
		e.Transport, e.What, e.Addr, e.Err)
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// Signal leaves a token in a wake-up channel of capacity 1 unless one is
// there already.
func Signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
