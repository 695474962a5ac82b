package rdstool

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/rdsoverdat"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/rs/zerolog"
)

// Transport names accepted by --transport.
const (
	TransportDAT    = "dat"    // RDS over DAT over soft-iWARP (rdsoverdat.DAT)
	TransportTCP    = "tcp"    // rdsoverdat's rds_tcp-compatible transport
	TransportKernel = "kernel" // the host kernel's AF_RDS (rdsoverdat Config.Kernel)
)

// DefaultTransport is --transport's default.
const DefaultTransport = TransportDAT

// Common holds the flags every RDS tool takes.
type Common struct {
	Transport     string // --transport
	TransportPort int    // --transport-port
	IA            string // --ia
	Paths         int    // --paths
	Log           string // --log
	InfoSocket    string // --info-socket
	Daemon        string // --rdsd: the rdsd socket whose nodes the tool uses ("": its own)

	// Logger is set by Setup.
	Logger zerolog.Logger
	name   string
}

// Register defines the common flags on fs for the tool called name.
func (c *Common) Register(fs *flag.FlagSet, name string) {
	c.name = name
	fs.StringVar(&c.Transport, "transport", DefaultTransport,
		"RDS transport: dat (RDS over DAT over soft-iWARP), tcp (wire-compatible with the kernel's rds_tcp)\n"+
			"or kernel (the host kernel's AF_RDS, if the rds module is loaded)")
	fs.IntVar(&c.TransportPort, "transport-port", 0,
		"port the transport listens on and connects to: TCP port for tcp, PSP connection qualifier for dat;\n"+
			"both ends must agree (0: the transport's default, 18634 for dat, 16385 for tcp)")
	fs.StringVar(&c.IA, "ia", "",
		"dat: the DAT IA every node opens at its own address, named in the DAT registry ($"+dat.ConfEnv+"\n"+
			"or the interfaces' siw-IFNAME IAs); default: soft-iWARP on every local address")
	fs.IntVar(&c.Paths, "paths", 1, "tcp: RDS paths per connection announced with NPATHS (1-8; 1 suits a kernel peer)")
	fs.StringVar(&c.Log, "log", "", "log level: trace, debug, info, warn, error, disabled (default $"+LogEnv+", else "+DefaultLogLevel+")")
	if name != "rdsd" {
		fs.StringVar(&c.Daemon, "rdsd", os.Getenv(rdsoverdat.DaemonEnv),
			"use the RDS nodes of the rdsd daemon listening on this unix socket (default $"+rdsoverdat.DaemonEnv+");\n"+
				"the daemon's transport then applies, and rds-info shows its state")
	}
	fs.StringVar(&c.InfoSocket, "info-socket", InfoAuto,
		"unix socket on which this tool serves its RDS state to rds-info as JSON: a path, \"none\",\n"+
			"or \"auto\" for "+DefaultInfoDir+"/NAME-PID.sock (directory from $"+InfoDirEnv+")")
}

// Setup checks the common flags and makes the logger (on stderr).
func (c *Common) Setup(stderr io.Writer) error {
	switch c.Transport {
	case TransportDAT, TransportTCP, TransportKernel:
	default:
		return Usagef("--transport %q: want dat, tcp or kernel", c.Transport)
	}
	if c.TransportPort < 0 || c.TransportPort > 65535 {
		return Usagef("--transport-port %d: want 0-65535", c.TransportPort)
	}
	if c.IA != "" && c.Transport != TransportDAT {
		return Usagef("--ia %q: only --transport dat opens a DAT IA", c.IA)
	}
	if c.Daemon != "" && c.Transport == TransportKernel {
		return Usagef("--rdsd and --transport kernel exclude each other")
	}
	if c.Paths < 1 || c.Paths > 8 {
		return Usagef("--paths %d: want 1-8", c.Paths)
	}
	log, err := Logger(c.Log, stderr)
	if err != nil {
		return err
	}
	c.Logger = log.With().Str("tool", c.name).Logger()
	return nil
}

// NewStack returns a Stack running the selected transport. cfg may set
// buffer sizes; its transports, logger and Kernel are set here.
func (c *Common) NewStack(cfg rdsoverdat.Config) (*rdsoverdat.Stack, error) {
	cfg.Logger = &c.Logger
	if c.Daemon != "" {
		cfg.Daemon = c.Daemon
		st := rdsoverdat.NewStack(cfg)
		stackPorts.Store(st, "the rdsd daemon at "+c.Daemon)
		return st, nil
	}
	switch c.Transport {
	case TransportKernel:
		if err := rdsoverdat.KernelAvailable(); err != nil {
			return nil, fmt.Errorf("--transport kernel: the host has no AF_RDS (load the rds and rds_tcp modules): %w", err)
		}
		cfg.Kernel = true
	case TransportTCP:
		cfg.Transports = []rdsoverdat.Transport{rdsoverdat.TCP(rdsoverdat.TCPConfig{Port: c.TransportPort, Paths: c.Paths})}
	case TransportDAT:
		t, err := datTransport(c.TransportPort, c.IA)
		if err != nil {
			return nil, err
		}
		cfg.Transports = []rdsoverdat.Transport{t}
	}
	st := rdsoverdat.NewStack(cfg)
	stackPorts.Store(st, c.transportPortDesc())
	return st, nil
}

// stackPorts maps each Stack NewStack made to the words that name its
// transport's listening port, for Bind's "address in use" errors.
var stackPorts sync.Map

// TransportName names the transport the tool's sockets use, for its
// reports: --transport, or the daemon's when --rdsd is given.
func (c *Common) TransportName() string {
	if c.Daemon != "" {
		return "rdsd " + c.Daemon
	}
	return c.Transport
}

// transportPortDesc names the port the selected transport listens on.
func (c *Common) transportPortDesc() string {
	switch c.Transport {
	case TransportTCP:
		return fmt.Sprintf("TCP port %d of the tcp transport", cmp.Or(c.TransportPort, wire.TCPPort))
	case TransportDAT:
		return fmt.Sprintf("conn_qual %d of the dat transport", cmp.Or(c.TransportPort, wire.RDMAPort))
	}
	return "the kernel's RDS port"
}

// addrInUse turns an "address in use" from binding a into an error that
// names both ports that can clash and the way out.
func addrInUse(st *rdsoverdat.Stack, a netip.AddrPort, err error) error {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return err
	}
	tp := "the transport's port"
	if v, ok := stackPorts.Load(st); ok {
		tp = v.(string)
	}
	port := ""
	if a.Port() != 0 {
		port = fmt.Sprintf("RDS port %d there is taken, or ", a.Port())
	}
	return fmt.Errorf("cannot bind %v: address in use: %sanother process already is the RDS node of %v on %s; "+
		"stop it, or pick another address (or -p), or move both ends to a free --transport-port (%w)",
		a, port, a.Addr(), tp, err)
}

// Bind returns a socket of st bound to a, with SO_SNDBUF and SO_RCVBUF
// set when non-zero. Its errors name the address.
func Bind(st *rdsoverdat.Stack, a netip.AddrPort, sndbuf, rcvbuf int) (*rdsoverdat.Socket, error) {
	s := st.Socket()
	if sndbuf > 0 {
		if err := s.SetOption(rdsoverdat.SendBuffer(sndbuf)); err != nil {
			s.Close()
			return nil, err
		}
	}
	if rcvbuf > 0 {
		if err := s.SetOption(rdsoverdat.RecvBuffer(rcvbuf)); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.Bind(a); err != nil {
		s.Close()
		return nil, addrInUse(st, a, err)
	}
	return s, nil
}

// ParseAddrPort parses an IPv4 ADDR:PORT given to flag (a usage error if
// it is not one).
func ParseAddrPort(flag, s string) (netip.AddrPort, error) {
	a, err := netip.ParseAddrPort(s)
	if err != nil || !a.Addr().Unmap().Is4() {
		return netip.AddrPort{}, Usagef("%s %q: want an IPv4 ADDR:PORT such as 127.0.0.1:4000", flag, s)
	}
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port()), nil
}

// ParseAddr parses an IPv4 address given to flag.
func ParseAddr(flag, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Unmap().Is4() {
		return netip.Addr{}, Usagef("%s %q: want an IPv4 address such as 127.0.0.1", flag, s)
	}
	return a.Unmap(), nil
}

// SourceFor returns the local address the host routes packets to dst
// from (rds-ping's trick: connect a UDP socket and read its address; no
// packet is sent).
func SourceFor(dst netip.Addr) (netip.Addr, error) {
	c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(dst, 9)))
	if err != nil {
		return netip.Addr{}, fmt.Errorf("no route to %v: %w", dst, err)
	}
	defer c.Close()
	a, ok := c.LocalAddr().(*net.UDPAddr)
	if !ok {
		return netip.Addr{}, errors.New("no local address")
	}
	return a.AddrPort().Addr().Unmap(), nil
}

// AckLinger is how long a tool that has received what it waited for keeps
// its node up before closing it. Closing a node is a host leaving the
// network: acknowledgements its transport has not sent yet are lost
// (the dat transport acks by sequence, a moment after delivery), and the
// sender would count its last datagrams unacknowledged. In the kernel a
// closing socket leaves the connection, and its acks, to the module.
const AckLinger = 250 * time.Millisecond

// Linger waits AckLinger, or less if ctx ends (interrupted tools leave
// at once); nothing for a kernel or daemon stack, whose connections
// outlive us.
func Linger(ctx context.Context, st *rdsoverdat.Stack) {
	if st.Kernel() || st.Daemon() != "" {
		return
	}
	select {
	case <-ctx.Done():
	case <-time.After(AckLinger):
	}
}
