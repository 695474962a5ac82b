//go:build rdmacore

package rdmacore

// #include "shim.h"
import "C"

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"unsafe"

	"github.com/godapl/godapl/verbs"
)

// ProviderName is the name New's provider reports and tools accept.
const ProviderName = "rdmacore"

// Provider opens the RDMA devices libibverbs lists.
type Provider struct {
	busyPoll int
}

// Option configures a Provider.
type Option func(*Provider)

// BusyPoll makes CQ polls of the provider's devices spin: a Poll that
// finds a CQ empty polls the device up to n more times inside the same
// call into C before it returns nothing, and Wait does so once before it
// sleeps on the completion channel. A program that polls in a loop then
// crosses from Go into C once per n+1 empty polls, where each crossing
// costs more than a poll of a software device's queue; Poll still returns
// within a bounded time. n = 0 (the default) polls once.
//
// Without the option, the environment variable GODAPL_RDMACORE_BUSY_POLL
// sets n, so that programs that reach the provider through the DAT
// registry can use it.
func BusyPoll(n int) Option {
	return func(p *Provider) { p.busyPoll = min(max(n, 0), maxBusyPoll) }
}

// maxBusyPoll bounds BusyPoll, so that a Poll stays short.
const maxBusyPoll = 1 << 16

// New returns the provider.
func New(opts ...Option) *Provider {
	p := &Provider{}
	if n, err := strconv.Atoi(os.Getenv("GODAPL_RDMACORE_BUSY_POLL")); err == nil {
		BusyPoll(n)(p)
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Name returns "rdmacore".
func (*Provider) Name() string { return ProviderName }

// Devices lists the names of the machine's RDMA devices, as ibv_devices
// prints them. No device is an empty list, not an error.
func (*Provider) Devices() ([]string, error) {
	var n C.int
	list := C.ibv_get_device_list(&n)
	if list == nil {
		errno := C.gd_errno()
		if errno == 0 || errno == C.ENOSYS {
			return nil, nil // no rdma-core kernel support at all
		}
		return nil, fmt.Errorf("rdmacore: ibv_get_device_list: errno %d", errno)
	}
	defer C.ibv_free_device_list(list)
	devs := unsafe.Slice(list, int(n))
	names := make([]string, 0, len(devs))
	for _, d := range devs {
		names = append(names, C.GoString(C.ibv_get_device_name(d)))
	}
	return names, nil
}

// Open opens the device called name.
func (p *Provider) Open(name string) (verbs.Device, error) {
	d, err := p.OpenDevice(name)
	if err != nil {
		return nil, err
	}
	return d, nil
}

// OpenAddr opens the device rdma_cm would use for the IPv4 address addr
// ("ip" or "ip:port"), as rdma-core's tools pick theirs: the device that
// owns it when it is local, else the one the route to it leaves by
// (resolving that takes up to two seconds of rdma_cm's address
// resolution).
func (p *Provider) OpenAddr(addr string) (*Device, error) {
	ap, err := parseAddr(addr, true)
	if err != nil {
		return nil, err
	}
	var id *C.struct_rdma_cm_id
	if C.rdma_create_id(nil, &id, nil, C.RDMA_PS_TCP) != 0 {
		return nil, errnoErr("rdma_create_id", errnoOf())
	}
	defer C.rdma_destroy_id(id)
	sa := sockaddr(netip.AddrPortFrom(ap.Addr(), 0))
	if C.rdma_bind_addr(id, sockaddrPtr(&sa)) != 0 {
		// Not local: a synchronous id resolves the route's device.
		if C.rdma_resolve_addr(id, nil, sockaddrPtr(&sa), 2000) != 0 {
			return nil, fmt.Errorf("rdmacore: no RDMA device reaches %v: %w", ap.Addr(), verbs.ErrNoDevice)
		}
	}
	name := idDevice(id)
	if name == "" {
		return nil, fmt.Errorf("rdmacore: no RDMA device owns %v: %w", ap.Addr(), verbs.ErrNoDevice)
	}
	return p.OpenDevice(name)
}

// OpenDevice is Open returning the concrete type, which also reports the
// device's ports.
func (p *Provider) OpenDevice(name string) (*Device, error) {
	var n C.int
	list := C.ibv_get_device_list(&n)
	if list == nil {
		return nil, fmt.Errorf("rdmacore: open %q: %w", name, verbs.ErrNoDevice)
	}
	defer C.ibv_free_device_list(list)
	for _, d := range unsafe.Slice(list, int(n)) {
		if C.GoString(C.ibv_get_device_name(d)) != name {
			continue
		}
		ctx := C.ibv_open_device(d)
		if ctx == nil {
			return nil, fmt.Errorf("rdmacore: ibv_open_device(%s): %w", name, sentinelOf(errnoOf()))
		}
		return newDevice(p, name, ctx)
	}
	return nil, fmt.Errorf("rdmacore: open %q: %w", name, verbs.ErrNoDevice)
}
