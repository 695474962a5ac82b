package dat

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"strings"

	"github.com/godapl/godapl/verbs"
)

// ConfEnv names the environment variable that points at a registry file
// replacing the default registry (the analogue of DAT_OVERRIDE for
// /etc/dat.conf).
const ConfEnv = "GODAPL_DAT_CONF"

// Entry is one IA the registry knows: an IA name and how to open it.
type Entry struct {
	Name     string // IA name: "siw-lo", "mem"
	Provider string // verbs provider: "siw", "mem"
	Device   string // verbs device of that provider: "siw_lo", "mem0"
	// Interface is the network interface the IA's address comes from,
	// empty for none.
	Interface string
	// Addr is the IA address. When it is not valid the address is the
	// interface's first IPv4 address at the time of opening; an IA whose
	// address cannot be found does not open.
	Addr netip.Addr
}

func (e Entry) String() string {
	ifc, addr := e.Interface, "-"
	if ifc == "" {
		ifc = "-"
	}
	if e.Addr.IsValid() {
		addr = e.Addr.String()
	}
	return fmt.Sprintf("%s %s %s %s %s", e.Name, e.Provider, e.Device, ifc, addr)
}

// Resolver finds the IPv4 address of a network interface.
type Resolver func(ifname string) (netip.Addr, error)

// Registry maps IA names to verbs providers, devices and addresses, like
// dat.conf. Providers are passed in explicitly; nothing registers itself.
// A Registry is immutable and safe for concurrent use.
type Registry struct {
	entries   []Entry
	providers map[string]verbs.Provider
	resolve   Resolver
}

// NewRegistry builds a registry over the given providers (looked up by
// their Name) and entries. resolve may be nil when every entry has an
// address. Duplicate IA names are an error.
func NewRegistry(providers []verbs.Provider, entries []Entry, resolve Resolver) (*Registry, error) {
	r := &Registry{providers: make(map[string]verbs.Provider, len(providers)), resolve: resolve}
	for _, p := range providers {
		r.providers[p.Name()] = p
	}
	seen := make(map[string]bool, len(entries))
	for _, e := range entries {
		if seen[e.Name] {
			return nil, Wrap("registry", InvalidParameter, InvalidArg2, fmt.Errorf("IA name %q listed twice", e.Name))
		}
		seen[e.Name] = true
		r.entries = append(r.entries, e)
	}
	return r, nil
}

// With returns a registry over the same providers (so IAs of both reach
// each other through a shared fabric) holding r's entries and the given
// ones: the way a consumer that needs IAs of its own choosing, such as
// one per local address, names them without reaching for the providers.
// A name already in r, or given twice, is an error.
func (r *Registry) With(entries ...Entry) (*Registry, error) {
	n := &Registry{providers: r.providers, resolve: r.resolve, entries: slices.Clip(r.entries)}
	for _, e := range entries {
		if slices.ContainsFunc(n.entries, func(o Entry) bool { return o.Name == e.Name }) {
			return nil, Wrap("registry", InvalidParameter, InvalidArg1, fmt.Errorf("IA name %q listed twice", e.Name))
		}
		n.entries = append(n.entries, e)
	}
	return n, nil
}

// Entries lists the registry (dat_registry_list_providers).
func (r *Registry) Entries() []Entry { return append([]Entry(nil), r.entries...) }

// Lookup finds an entry by IA name; an unknown name fails with
// DAT_PROVIDER_NOT_FOUND / DAT_NAME_NOT_REGISTERED.
func (r *Registry) Lookup(name string) (Entry, error) {
	for _, e := range r.entries {
		if e.Name == name {
			return e, nil
		}
	}
	return Entry{}, Wrap("ia_open", ProviderNotFound, NameNotRegistered, fmt.Errorf("no IA named %q", name))
}

// Open opens the verbs device of the IA named name and returns its entry
// with the address filled in. Unknown names fail with
// DAT_PROVIDER_NOT_FOUND, an interface without an IPv4 address with
// DAT_INVALID_ADDRESS / DAT_INVALID_ADDRESS_UNSUPPORTED, a device the
// provider refuses with DAT_PROVIDER_NOT_FOUND.
func (r *Registry) Open(name string) (Entry, verbs.Device, error) {
	e, err := r.Lookup(name)
	if err != nil {
		return Entry{}, nil, err
	}
	p := r.providers[e.Provider]
	if p == nil {
		return Entry{}, nil, Wrap("ia_open", ProviderNotFound, NameNotRegistered, fmt.Errorf("IA %q: no verbs provider %q in this registry", name, e.Provider))
	}
	if !e.Addr.IsValid() {
		if e.Interface == "" || r.resolve == nil {
			return Entry{}, nil, Wrap("ia_open", InvalidAddress, InvalidAddressUnsupported, fmt.Errorf("IA %q has neither an address nor an interface", name))
		}
		a, err := r.resolve(e.Interface)
		if err != nil {
			return Entry{}, nil, Wrap("ia_open", InvalidAddress, InvalidAddressUnsupported, fmt.Errorf("IA %q: %w", name, err))
		}
		e.Addr = a
	}
	dev, err := p.Open(e.Device)
	if err != nil {
		return Entry{}, nil, Wrap("ia_open", ProviderNotFound, NameNotRegistered, err)
	}
	return e, dev, nil
}

// ParseConf reads a registry file. Each line names one IA:
//
//	# comment
//	<ia-name> <provider> <device> <interface> [<ipv4-address>]
//
// fields separated by blanks, "-" for an absent interface. An IA with an
// interface and no address takes the interface's first IPv4 address when
// it is opened; an IA without an interface needs an address. Examples:
//
//	siw-eth0  siw  siw_eth0  eth0
//	siw-lo    siw  siw_lo    lo    127.0.0.1
//	mem       mem  mem0      -     127.0.0.1
func ParseConf(rd io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(rd)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		f := strings.Fields(text)
		if len(f) == 0 {
			continue
		}
		if len(f) < 4 || len(f) > 5 {
			return nil, fmt.Errorf("dat: registry line %d: want 4 or 5 fields (name provider device interface [address]), got %d", line, len(f))
		}
		e := Entry{Name: f[0], Provider: f[1], Device: f[2]}
		if len(e.Name) >= NameMaxLength {
			return nil, fmt.Errorf("dat: registry line %d: IA name longer than %d bytes", line, NameMaxLength-1)
		}
		if f[3] != "-" {
			e.Interface = f[3]
		}
		if len(f) == 5 && f[4] != "-" {
			a, err := netip.ParseAddr(f[4])
			if err != nil || !a.Is4() {
				return nil, fmt.Errorf("dat: registry line %d: %q is not an IPv4 address", line, f[4])
			}
			e.Addr = a
		}
		if e.Interface == "" && !e.Addr.IsValid() {
			return nil, fmt.Errorf("dat: registry line %d: IA %q needs an interface or an address", line, e.Name)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("dat: reading registry: %w", err)
	}
	return out, nil
}

// FormatConf writes entries in the format ParseConf reads.
func FormatConf(w io.Writer, entries []Entry) error {
	for _, e := range entries {
		if _, err := fmt.Fprintln(w, e.String()); err != nil {
			return err
		}
	}
	return nil
}
