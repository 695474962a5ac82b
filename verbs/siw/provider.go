package siw

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
)

// Implementation defaults (the values of the Linux siw where it has one).
const (
	// DefaultMaxULPDU caps the ULPDU_Length of the FPDUs we send: the most
	// MPA allows. siw sends one FPDU per TCP segment (about 65480 bytes on
	// loopback); larger FPDUs only mean fewer headers, and siw accepts any
	// size up to the MPA limit.
	DefaultMaxULPDU = 65535
	// minMaxULPDU keeps room for the largest header plus some payload.
	minMaxULPDU = 128
	// DefaultMPAReplyTimeout is how long Connect waits for the MPA Reply
	// (siw: 10 s, then ETIMEDOUT, which rdma_cm reports as UNREACHABLE).
	DefaultMPAReplyTimeout = 10 * time.Second
	// DefaultMPARequestTimeout is how long an accepted TCP connection may
	// take to deliver its MPA Request before it is dropped (siw: 5 s).
	DefaultMPARequestTimeout = 5 * time.Second
)

// Options configure a Provider and every device it opens.
type Options struct {
	// CRC makes Connect ask for MPA CRC32c (the C flag of the Request). A
	// connection uses CRC iff its initiator asked for it; siw never asks,
	// so the default is off. A responder always honours the request.
	CRC bool
	// NoPeerToPeer stops Connect from requesting MPA v2 peer-to-peer mode.
	// By default a Go initiator requests it (offering a zero-length RDMA
	// Write or Read as the ready-to-receive frame, RFC 6581) so that a Go
	// responder may start sending as soon as the RTR arrives. The kernel's
	// siw initiators never request it; its responders honour it.
	NoPeerToPeer bool
	// SendImmediately lets a responder send FPDUs right after its MPA
	// Reply. By default it holds them until the first FPDU of the
	// initiator has arrived (RFC 5044's rule, and a must against a siw
	// initiator, which fails on bytes that follow the Reply too early).
	// Only for peers known to be this provider.
	SendImmediately bool
	// NoStartupNudge stops an initiator from sending its startup nudges:
	// zero-length RDMA Writes (STag 1, which RFC 5040 lets a data sink
	// accept without validation) a few milliseconds after the MPA Reply.
	// They work around a race in the Linux siw responder: siw_accept sends
	// the Reply before it installs the socket callback that reads FPDUs,
	// and bytes that arrive in between sit unread until another segment
	// arrives, so an initiator that sends its first message at once and
	// then waits for an answer deadlocks with it (seen in 10-20 % of rping
	// runs in the lab VM). A later nudge makes siw read everything queued.
	// They cost a few 20-byte frames per connection and no latency. In
	// peer-to-peer mode they stop at the responder's first FPDU: siw sends
	// nothing before it has read the RTR, and reads all queued with it.
	NoStartupNudge bool
	// NoInlineReceive keeps a goroutine waiting on a QP's CQ from reading
	// and placing the QP's inbound FPDUs itself (see qp_rxinline.go): the
	// receive goroutine then does all of it, at the cost of a goroutine
	// wakeup per message a waiter is woken for.
	NoInlineReceive bool
	// TransmitInWait lets a post leave a message too large for the
	// poster to send itself to the next goroutine that waits on the QP's
	// CQ, instead of waking the transmit goroutine (see qp_txwait.go):
	// for callers to whom waking a goroutine costs a thread hand-off, C
	// threads calling in through cgo.
	TransmitInWait bool
	// MaxULPDU caps the ULPDU_Length of outbound FPDUs (0: DefaultMaxULPDU).
	MaxULPDU int
	// MPAReplyTimeout and MPARequestTimeout override the defaults above.
	MPAReplyTimeout   time.Duration
	MPARequestTimeout time.Duration
	// Logger receives connection-level events (never per-frame ones). The
	// zero Logger is silent.
	Logger zerolog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxULPDU <= 0 || o.MaxULPDU > DefaultMaxULPDU {
		o.MaxULPDU = DefaultMaxULPDU
	}
	o.MaxULPDU = max(o.MaxULPDU, minMaxULPDU)
	if o.MPAReplyTimeout <= 0 {
		o.MPAReplyTimeout = DefaultMPAReplyTimeout
	}
	if o.MPARequestTimeout <= 0 {
		o.MPARequestTimeout = DefaultMPARequestTimeout
	}
	return o
}

// DeviceName is the device that spans every local address; its listeners
// bind the wildcard address. Every interface with an IPv4 address also
// has a device of its own, named DeviceName+"_"+interface name.
const DeviceName = "siw"

// Provider opens siw devices. It holds no resources: every Open returns an
// independent device.
type Provider struct {
	opts Options
}

// New returns a provider whose devices use opts.
func New(opts Options) *Provider {
	return &Provider{opts: opts.withDefaults()}
}

// Name implements verbs.Provider.
func (p *Provider) Name() string { return "siw" }

// Devices implements verbs.Provider: "siw", then "siw_<ifname>" for every
// interface with an IPv4 address, in interface order.
func (p *Provider) Devices() ([]string, error) {
	ifs, err := ipv4Interfaces()
	if err != nil {
		return nil, fmt.Errorf("siw: listing interfaces: %w", err)
	}
	names := []string{DeviceName}
	for _, ifc := range ifs {
		names = append(names, DeviceName+"_"+ifc.name)
	}
	return names, nil
}

// Open implements verbs.Provider.
func (p *Provider) Open(name string) (verbs.Device, error) {
	if name == DeviceName {
		return newDevice(name, nil, p.opts), nil
	}
	ifname, ok := strings.CutPrefix(name, DeviceName+"_")
	if !ok || ifname == "" {
		return nil, fmt.Errorf("siw: open %q: %w", name, verbs.ErrNoDevice)
	}
	ifs, err := ipv4Interfaces()
	if err != nil {
		return nil, fmt.Errorf("siw: open %q: %w", name, err)
	}
	i := slices.IndexFunc(ifs, func(ifc netInterface) bool { return ifc.name == ifname })
	if i < 0 {
		return nil, fmt.Errorf("siw: open %q: %w", name, verbs.ErrNoDevice)
	}
	return newDevice(name, ifs[i].addrs, p.opts), nil
}

// netInterface is an interface and its IPv4 addresses.
type netInterface struct {
	name  string
	addrs []netip.Addr
}

// ipv4Interfaces lists the interfaces that have IPv4 addresses.
func ipv4Interfaces() ([]netInterface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var out []netInterface
	for _, ifc := range ifs {
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		var v4 []netip.Addr
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			if ip, ok := netip.AddrFromSlice(ipn.IP); ok && ip.Unmap().Is4() {
				v4 = append(v4, ip.Unmap())
			}
		}
		if len(v4) > 0 {
			out = append(out, netInterface{name: ifc.Name, addrs: v4})
		}
	}
	return out, nil
}

// deviceAttr are the limits of a siw device: the engine's (those of the
// Linux siw, plus software memory windows) under siw's identity.
func deviceAttr(name string) verbs.DeviceAttr {
	a := soft.Limits()
	a.Name, a.Provider, a.Transport = name, "siw", verbs.TransportIWARP
	a.VendorID = 0x626d74 // "bmt", the Linux siw's vendor ID
	return a
}

// maxIRDORD is siw's limit on inbound and outbound RDMA Reads per QP.
const maxIRDORD = soft.MaxIRDORD
