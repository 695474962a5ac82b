//go:build rdmacore

package providers

import (
	"bytes"
	"fmt"
	"net"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/rdmacore"
)

// Built with the rdmacore tag, the registry also lists one IA per port of
// every RDMA device rdma-core finds, named as OFA uDAPL's dat.conf names
// them: ofa-v2-<device>-<port> ("ofa-v2-rxe0-1", "ofa-v2-mlx5_0-1").

func rdmacoreProviders() []verbs.Provider { return []verbs.Provider{rdmacore.New()} }

// rdmacoreEntries lists the IAs of the machine's RDMA ports. A port's
// address is the IPv4 address in its RoCE GIDs; an iWARP port's GID is
// its interface's MAC address, which names the interface whose address
// the IA takes.
func rdmacoreEntries() ([]dat.Entry, error) {
	p := rdmacore.New()
	names, err := p.Devices()
	if err != nil {
		return nil, fmt.Errorf("providers: rdma-core devices: %w", err)
	}
	ifs, _ := net.Interfaces()
	var entries []dat.Entry
	for _, name := range names {
		d, err := p.OpenDevice(name)
		if err != nil {
			continue // a device this process may not open is not an IA
		}
		for _, port := range d.Ports() {
			e := dat.Entry{Name: fmt.Sprintf("ofa-v2-%s-%d", name, port.Num), Provider: rdmacore.ProviderName, Device: name}
			for _, g := range port.GIDs {
				if g.Is4In6() {
					e.Addr = g.Unmap()
					break
				}
			}
			if !e.Addr.IsValid() {
				for _, g := range port.GIDs {
					raw := g.As16()
					for _, ifc := range ifs {
						if len(ifc.HardwareAddr) == 6 && bytes.Equal(ifc.HardwareAddr, raw[:6]) {
							e.Interface = ifc.Name
						}
					}
				}
			}
			if e.Addr.IsValid() || e.Interface != "" {
				entries = append(entries, e)
			}
		}
		d.Close()
	}
	return entries, nil
}
