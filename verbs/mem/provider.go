package mem

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/internal/soft"
)

// DeviceName is the one device name a Provider offers. Each Open returns
// a new device on the provider's fabric.
const DeviceName = "mem0"

// Provider is an in-memory fabric and the verbs.Provider that opens
// devices on it.
type Provider struct {
	mu        sync.Mutex
	listeners map[string]*listener // "host:port"; host "" listens on every address
	nextPort  int
}

// New returns an empty fabric.
func New() *Provider {
	return &Provider{listeners: make(map[string]*listener), nextPort: 20000}
}

// Name implements verbs.Provider.
func (p *Provider) Name() string { return "mem" }

// Devices implements verbs.Provider.
func (p *Provider) Devices() ([]string, error) { return []string{DeviceName}, nil }

// Open implements verbs.Provider.
func (p *Provider) Open(name string) (verbs.Device, error) {
	if name != DeviceName {
		return nil, fmt.Errorf("mem: open %q: %w", name, verbs.ErrNoDevice)
	}
	return newDevice(p), nil
}

// attr are the limits of a mem device: the engine's, which are the Linux
// siw's, so that code tested on mem meets the same limits on siw.
var attr = func() verbs.DeviceAttr {
	a := soft.Limits()
	a.Name, a.Provider, a.Transport = DeviceName, "mem", verbs.TransportMemory
	return a
}()

// bind registers l under host:port, picking a port when port is 0.
func (p *Provider) bind(l *listener, host string, port int) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if port == 0 {
		for i := 0; i < 45000; i++ {
			cand := p.nextPort
			p.nextPort++
			if p.nextPort > 65535 {
				p.nextPort = 20000
			}
			if !p.taken(host, cand) {
				port = cand
				break
			}
		}
		if port == 0 {
			return verbs.ErrNoResources
		}
	} else if p.taken(host, port) {
		return fmt.Errorf("mem: listen %s: %w", net.JoinHostPort(host, strconv.Itoa(port)), syscall.EADDRINUSE)
	}
	l.host, l.port = host, port
	p.listeners[l.key()] = l
	return nil
}

// taken reports whether a listener on host:port would clash with one that
// exists: same host, or either of them on every address.
func (p *Provider) taken(host string, port int) bool {
	for _, l := range p.listeners {
		if l.port == port && (l.host == host || l.host == "" || host == "") {
			return true
		}
	}
	return false
}

func (p *Provider) unbind(l *listener) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listeners[l.key()] == l {
		delete(p.listeners, l.key())
	}
}

// lookup finds the listener for a destination.
func (p *Provider) lookup(host string, port int) *listener {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.listeners[net.JoinHostPort(host, strconv.Itoa(port))]; l != nil {
		return l
	}
	return p.listeners[net.JoinHostPort("", strconv.Itoa(port))]
}

// Addr is an address on a mem fabric.
type Addr struct {
	Host string
	Port int
}

func (a Addr) Network() string { return "mem" }
func (a Addr) String() string  { return net.JoinHostPort(a.Host, strconv.Itoa(a.Port)) }

func parseAddr(s string) (string, int, error) {
	host, ps, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("mem: address %q: %w", s, verbs.ErrInvalidArgument)
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("mem: port in %q: %w", s, verbs.ErrInvalidArgument)
	}
	return host, port, nil
}

// ephemeral returns a port number for the active side of a connection.
func (p *Provider) ephemeral() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	port := p.nextPort
	p.nextPort++
	if p.nextPort > 65535 {
		p.nextPort = 20000
	}
	return port
}
