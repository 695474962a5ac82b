// Package providers is the explicit list of verbs providers behind the DAT
// registry, and the default registry built from this machine's network
// interfaces. It is the one place that imports provider packages, so that
// dat/ itself never does (nothing registers itself from init).
//
// The default registry names:
//
//	mem            the in-memory provider (verbs/mem), address 127.0.0.1;
//	               every IA opened from one Registry shares one mem fabric,
//	               so two IAs of a process can connect to each other
//	siw-<ifname>   the soft-iWARP provider's device siw_<ifname> for every
//	               interface, addressed by its first IPv4 address
//	ofa-v2-<dev>-<port>
//	               built with the rdmacore tag: every port of every
//	               rdma-core device (verbs/rdmacore), as OFA uDAPL's
//	               dat.conf names them
//
// A file named by the GODAPL_DAT_CONF environment variable replaces the
// list (format: dat.ParseConf).
package providers

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"

	"github.com/jsimonetti/rtnetlink"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/siw"
)

// MemAddr is the address of the default "mem" IA.
var MemAddr = netip.AddrFrom4([4]byte{127, 0, 0, 1})

// Options choose what a registry is built from.
type Options struct {
	// Mem is the mem fabric to use; nil makes a new one.
	Mem *mem.Provider
	// Conf, if not empty, is a registry file replacing the default
	// entries; empty means the file named by dat.ConfEnv, if any.
	Conf string
	// Siw are the soft-iWARP provider's options (zero: its defaults).
	Siw siw.Options
}

// List returns the providers built into godapl, in the order the
// registry consults them.
func List(o Options) []verbs.Provider {
	m := o.Mem
	if m == nil {
		m = mem.New()
	}
	return append([]verbs.Provider{m, siwProvider(o.Siw)}, rdmacoreProviders()...)
}

// New builds a registry: the default entries (or the file's) over the
// built-in providers. Each call has its own mem fabric unless o.Mem is set.
// If the interfaces cannot be listed, the registry holds the mem IA and
// the error says why the rest is missing.
func New(o Options) (*dat.Registry, error) {
	conf := o.Conf
	if conf == "" {
		conf = os.Getenv(dat.ConfEnv)
	}
	var entries []dat.Entry
	if conf != "" {
		f, err := os.Open(conf)
		if err != nil {
			return nil, fmt.Errorf("providers: registry file: %w", err)
		}
		defer f.Close()
		if entries, err = dat.ParseConf(f); err != nil {
			return nil, fmt.Errorf("providers: %s: %w", conf, err)
		}
	} else {
		// Without rtnetlink the registry still has the mem IA; the error
		// is reported next to it.
		var ifErr error
		entries, ifErr = DefaultEntries()
		r, err := dat.NewRegistry(List(o), entries, InterfaceAddr)
		if err != nil {
			return nil, err
		}
		return r, ifErr
	}
	return dat.NewRegistry(List(o), entries, InterfaceAddr)
}

var (
	defaultOnce sync.Once
	defaultReg  *dat.Registry
	defaultErr  error
)

// Default returns the process-wide registry, built once: ia.Open uses it,
// and its single mem fabric lets every mem IA of the process reach the
// others.
func Default() (*dat.Registry, error) {
	defaultOnce.Do(func() { defaultReg, defaultErr = New(Options{}) })
	return defaultReg, defaultErr
}

// DefaultEntries lists "mem", one "siw-<ifname>" per interface and, built
// with the rdmacore tag, one "ofa-v2-<dev>-<port>" per RDMA port.
func DefaultEntries() ([]dat.Entry, error) {
	entries := []dat.Entry{{Name: "mem", Provider: "mem", Device: mem.DeviceName, Addr: MemAddr}}
	names, err := interfaceNames()
	if err != nil {
		return entries, fmt.Errorf("providers: listing interfaces: %w", err)
	}
	for _, n := range names {
		entries = append(entries, dat.Entry{Name: "siw-" + n, Provider: "siw", Device: "siw_" + n, Interface: n})
	}
	rc, err := rdmacoreEntries()
	return append(entries, rc...), err
}

// interfaceNames lists the machine's interfaces with rtnetlink.
func interfaceNames() ([]string, error) {
	c, err := rtnetlink.Dial(nil)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	links, err := c.Link.List()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, l := range links {
		if l.Attributes != nil && l.Attributes.Name != "" {
			names = append(names, l.Attributes.Name)
		}
	}
	return names, nil
}

// InterfaceAddr returns the first IPv4 address of interface ifname, read
// with rtnetlink. An interface without one is an error.
func InterfaceAddr(ifname string) (netip.Addr, error) {
	ifc, err := net.InterfaceByName(ifname)
	if err != nil {
		return netip.Addr{}, err
	}
	c, err := rtnetlink.Dial(nil)
	if err != nil {
		return netip.Addr{}, err
	}
	defer c.Close()
	addrs, err := c.Address.List()
	if err != nil {
		return netip.Addr{}, err
	}
	for _, a := range addrs {
		if a.Index != uint32(ifc.Index) || a.Family != 2 /* AF_INET */ || a.Attributes == nil {
			continue
		}
		ip := a.Attributes.Local
		if ip == nil {
			ip = a.Attributes.Address
		}
		if v, ok := netip.AddrFromSlice(ip); ok && v.Unmap().Is4() {
			return v.Unmap(), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no IPv4 address", ifname)
}
