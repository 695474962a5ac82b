package rdsoverdat

import (
	"net"
	"time"

	"github.com/godapl/godapl/rdsoverdat/internal/tcp"
)

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
	// reader goroutine takes it back: other sockets'
	// messages wait up to twice that behind a receiver that stopped
	// receiving (default 20 ms). Negative: never lend it.
	ReaderGrace time.Duration
}

// TCP returns the tcp transport.
func TCP(cfg TCPConfig) Transport { return xportTransport{tcp.New(tcp.Config(cfg))} }
