package main

import (
	"fmt"
	"net/netip"
	"slices"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/verbs"
)

// inventory is everything the tool reports.
type inventory struct {
	Providers []providerInfo `json:"providers"`
	Devices   []deviceInfo   `json:"devices"`
	IAs       []iaInfo       `json:"ia_names"`
	// Registry says where the IA names come from: "default" or the file.
	Registry string `json:"registry"`
	// Problems are what could not be listed (no rtnetlink, a device that
	// would not open), each said once.
	Problems []string `json:"problems,omitempty"`
}

type providerInfo struct {
	Name    string   `json:"name"`
	Devices []string `json:"devices"`
}

type deviceInfo struct {
	Name      string   `json:"name"`
	Provider  string   `json:"provider"`
	Transport string   `json:"transport"`
	FWVersion string   `json:"fw_ver"`
	VendorID  uint32   `json:"vendor_id"`
	Addresses []string `json:"addresses"` // of the IA names on the device
	// Limits and Counters carry ibv_devinfo's names for the device's
	// attributes and this implementation's names for its counters.
	Limits   map[string]uint64 `json:"limits"`
	Counters map[string]uint64 `json:"counters"`
	Attr     verbs.DeviceAttr  `json:"-"`
	Stats    verbs.DeviceStats `json:"-"`
}

// limits names a device's attributes as ibv_devinfo -v does.
func limits(a verbs.DeviceAttr) map[string]uint64 {
	return map[string]uint64{
		"max_mr_size": a.MaxMRSize, "max_qp": uint64(a.MaxQP), "max_qp_wr": uint64(a.MaxQPWR),
		"max_sge": uint64(a.MaxSGE), "max_sge_rd": uint64(a.MaxSGERead), "max_cq": uint64(a.MaxCQ),
		"max_cqe": uint64(a.MaxCQE), "max_mr": uint64(a.MaxMR), "max_mw": uint64(a.MaxMW), "max_pd": uint64(a.MaxPD),
		"max_srq": uint64(a.MaxSRQ), "max_srq_wr": uint64(a.MaxSRQWR), "max_srq_sge": uint64(a.MaxSRQSGE),
		"max_qp_rd_atom": uint64(a.MaxIRD), "max_qp_init_rd_atom": uint64(a.MaxORD),
		"max_inline_data": uint64(a.MaxInline), "max_private_data": uint64(a.MaxPrivData),
	}
}

// counters names a device's counters.
func counters(s verbs.DeviceStats) map[string]uint64 {
	return map[string]uint64{
		"qps_created": s.QPsCreated, "conns_established": s.ConnsEstablished, "conns_rejected": s.ConnsRejected,
		"terminates_sent": s.TerminatesSent, "terminates_received": s.TerminatesReceived,
		"malformed_frames": s.MalformedFrames, "crc_errors": s.CRCErrors, "protection_errors": s.ProtectionErrors,
		"cq_overflows": s.CQOverflows, "async_events_dropped": s.AsyncEventsDropped,
		"bytes_sent": s.BytesSent, "bytes_received": s.BytesReceived, "inline_frames": s.InlineFrames,
	}
}

type iaInfo struct {
	Name      string `json:"name"`
	Provider  string `json:"provider"`
	Device    string `json:"device"`
	Interface string `json:"interface,omitempty"`
	// Address is where the IA opens now: the entry's, or its interface's
	// first IPv4 address; empty with Problem saying why.
	Address string `json:"address"`
	Problem string `json:"problem,omitempty"`
}

// collect lists the providers of dat/providers, opens each device to
// query it, and resolves each IA name of the registry.
func collect() (*inventory, error) {
	inv := &inventory{Registry: "default"}
	reg, err := providers.New(providers.Options{})
	if reg == nil {
		return nil, err
	}
	if err != nil {
		inv.Problems = append(inv.Problems, err.Error())
	}
	if conf, ok := confFile(); ok {
		inv.Registry = conf
	}
	for _, e := range reg.Entries() {
		ia := iaInfo{Name: e.Name, Provider: e.Provider, Device: e.Device, Interface: e.Interface}
		if a, err := address(e); err != nil {
			ia.Problem = err.Error()
		} else {
			ia.Address = a.String()
		}
		inv.IAs = append(inv.IAs, ia)
	}
	for _, p := range providers.List(providers.Options{}) {
		names, err := p.Devices()
		if err != nil {
			inv.Problems = append(inv.Problems, fmt.Sprintf("provider %s: listing devices: %v", p.Name(), err))
		}
		slices.Sort(names)
		inv.Providers = append(inv.Providers, providerInfo{Name: p.Name(), Devices: append([]string{}, names...)})
		for _, n := range names {
			d, err := p.Open(n)
			if err != nil {
				inv.Problems = append(inv.Problems, fmt.Sprintf("device %s: %v", n, err))
				continue
			}
			a := d.Query()
			info := deviceInfo{Name: n, Provider: p.Name(), Transport: a.Transport.String(), FWVersion: a.FWVersion,
				VendorID: a.VendorID, Attr: a, Stats: d.Stats(), Addresses: []string{}}
			info.Limits, info.Counters = limits(a), counters(info.Stats)
			d.Close()
			for _, ia := range inv.IAs {
				if ia.Provider == p.Name() && ia.Device == n && ia.Address != "" && !slices.Contains(info.Addresses, ia.Address) {
					info.Addresses = append(info.Addresses, ia.Address)
				}
			}
			inv.Devices = append(inv.Devices, info)
		}
	}
	return inv, nil
}

// address is where entry e opens: its address, or its interface's.
func address(e dat.Entry) (netip.Addr, error) {
	if e.Addr.IsValid() {
		return e.Addr, nil
	}
	if e.Interface == "" {
		return netip.Addr{}, fmt.Errorf("no address and no interface")
	}
	return providers.InterfaceAddr(e.Interface)
}

// only keeps device name and the IA names on it.
func (inv *inventory) only(name string) (*inventory, error) {
	out := &inventory{Registry: inv.Registry, Problems: inv.Problems}
	for _, d := range inv.Devices {
		if d.Name == name {
			out.Devices = append(out.Devices, d)
		}
	}
	if len(out.Devices) == 0 {
		var names []string
		for _, d := range inv.Devices {
			names = append(names, d.Name)
		}
		return nil, fmt.Errorf("-d %q: no such device (there are: %v)", name, names)
	}
	for _, p := range inv.Providers {
		if slices.Contains(p.Devices, name) {
			out.Providers = append(out.Providers, providerInfo{Name: p.Name, Devices: []string{name}})
		}
	}
	for _, ia := range inv.IAs {
		if ia.Device == name {
			out.IAs = append(out.IAs, ia)
		}
	}
	return out, nil
}
