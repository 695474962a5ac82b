package netns

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
)

// Veth is a veth pair between two namespaces, each end with one address.
// Faults act on both ends, so both directions see them.
type Veth struct {
	NSA, NSB     *NS
	NameA, NameB string
	AddrA, AddrB netip.Prefix
}

// NewVeth creates a veth pair with one end in a and one in b, gives the
// ends their addresses and brings them up.
func NewVeth(a *NS, addrA netip.Prefix, b *NS, addrB netip.Prefix) (*Veth, error) {
	n := seq.Add(1)
	v := &Veth{
		NSA: a, NSB: b,
		NameA: fmt.Sprintf("gva%d", n), NameB: fmt.Sprintf("gvb%d", n),
		AddrA: addrA, AddrB: addrB,
	}
	if _, err := run("ip", "link", "add", v.NameA, "netns", a.Name, "type", "veth",
		"peer", "name", v.NameB, "netns", b.Name); err != nil {
		return nil, err
	}
	for _, end := range v.ends() {
		if _, err := end.ns.IP("addr", "add", end.addr.String(), "dev", end.dev); err != nil {
			v.Close()
			return nil, err
		}
	}
	if err := v.SetUp(true); err != nil {
		v.Close()
		return nil, err
	}
	return v, nil
}

type vethEnd struct {
	ns   *NS
	dev  string
	addr netip.Prefix
}

func (v *Veth) ends() [2]vethEnd {
	return [2]vethEnd{{v.NSA, v.NameA, v.AddrA}, {v.NSB, v.NameB, v.AddrB}}
}

// SetUp sets both ends administratively up or down. Down drops every
// packet and, as on a real NIC, removes the routes through the link;
// established TCP connections survive a short outage and retransmit.
func (v *Veth) SetUp(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	for _, end := range v.ends() {
		if _, err := end.ns.IP("link", "set", end.dev, state); err != nil {
			return err
		}
	}
	return nil
}

// Impair applies imp to the egress of both ends with tc: netem when the
// kernel has it, a tbf rate limit alone when it does not and imp asks only
// for a rate; ErrNoNetem otherwise (use a TunLink).
func (v *Veth) Impair(imp Impairment) error {
	var args []string
	switch {
	case HaveNetem():
		args = append([]string{"netem"}, imp.netemArgs()...)
	case imp.onlyRate():
		args = imp.tbfArgs()
	default:
		return ErrNoNetem
	}
	for _, end := range v.ends() {
		if _, err := end.ns.Run("tc", append([]string{"qdisc", "replace", "dev", end.dev, "root"}, args...)...); err != nil {
			return err
		}
	}
	return nil
}

// Clear removes any qdisc Impair installed.
func (v *Veth) Clear() error {
	var errs []error
	for _, end := range v.ends() {
		out, err := end.ns.Run("tc", "qdisc", "del", "dev", end.dev, "root")
		if err != nil && !strings.Contains(out, "No such file") && !strings.Contains(out, "Cannot delete qdisc with handle of zero") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Close deletes the pair (deleting one end deletes both).
func (v *Veth) Close() error {
	_, err := v.NSA.IP("link", "del", v.NameA)
	return err
}

// ErrNoNetem is returned by Veth.Impair for faults that need sch_netem on
// a kernel built without it (CONFIG_NET_SCH_NETEM unset).
var ErrNoNetem = errors.New("netns: kernel has no sch_netem (use a TunLink)")

// HaveNetem reports whether the kernel has the netem qdisc.
func HaveNetem() bool {
	netemOnce.Do(func() {
		ns, err := New()
		if err != nil {
			return
		}
		defer ns.Close()
		_, err = ns.Run("tc", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms")
		haveNetem = err == nil
	})
	return haveNetem
}

var (
	netemOnce sync.Once
	haveNetem bool
)

// Impairer is a link whose faults a test can set and clear: a Veth (tc)
// or a TunLink (userspace).
type Impairer interface {
	Impair(Impairment) error
	Clear() error
	SetUp(up bool) error
}

// AddAddrs adds addresses to a device of the namespace in one `ip -batch`
// run (64 nodes' worth of addresses cost one process, not 64).
func (ns *NS) AddAddrs(dev string, addrs []netip.Prefix) error {
	var b strings.Builder
	for _, a := range addrs {
		fmt.Fprintf(&b, "addr add %s dev %s\n", a, dev)
	}
	return runStdin(b.String(), "ip", "-n", ns.Name, "-batch", "-")
}
