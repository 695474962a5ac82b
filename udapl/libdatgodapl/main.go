//go:build udapl && cgo

// Command libdatgodapl is godapl as a uDAPL provider library for C
// programs: built with -buildmode=c-shared it is the libdatgodapl.so that
// libdat2 (the DAT 2.0 registry) loads from a dat.conf line. It sits on
// top of the whole stack: it translates the udat provider function table
// onto the Go DAT API (dat/ia, dat/ep, dat/evd, dat/lmr, dat/srq), which
// runs over the verbs providers (the pure-Go soft-iWARP by default).
//
// A dat.conf line names the IA, this library and, as its instance data,
// the verbs provider, the interface and optionally the IPv4 address:
//
//	godapl-siw-lo u2.0 threadsafe default libdatgodapl.so dapl.2.0 "siw lo 127.0.0.1" ""
//
// Built with the rdmacore tag as well, the library also serves the ports
// of rdma-core's devices (verbs/rdmacore); their instance data is the
// provider, the device and the port:
//
//	ofa-v2-rxe0-1 u2.0 threadsafe default libdatgodapl.so dapl.2.0 "rdmacore rxe0 1" ""
//
// Handles are addresses of slots in C memory that only index Go objects
// (see handles.go); LMRs over consumer buffers are registered in place;
// every call may come from any C thread, and a blocking wait blocks only
// the thread that called it. docs/UDAPL.md lists what is supported.
package main

/*
#cgo LDFLAGS: -ldat2
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
)

func main() {}

// registered is what dat_provider_init learnt: one IA name each.
type registered struct {
	prov  *C.DAT_PROVIDER
	entry dat.Entry
	// threadSafe is the dat.conf line's flag, which ia_query reports so
	// that libdat2's dat_ia_close finds the registration it opened.
	threadSafe bool
}

var reg struct {
	mu      sync.Mutex
	byName  map[string]*registered
	verbs   []verbs.Provider // shared by every IA of the process
	entries []dat.Entry
}

// parseInstance reads a dat.conf line's instance data: "provider
// interface [address]". The device is the provider's device on that
// interface ("siw lo": siw_lo); interface "-" names the provider's device
// bound to no interface, which serves any local address ("siw - 127.1.2.3").
// The rdmacore provider names a device and port instead (see
// parseRDMAPort); built lists the providers the library has.
func parseInstance(name, data string, built []verbs.Provider) (dat.Entry, error) {
	f := strings.Fields(data)
	if len(f) > 0 && f[0] == rdmacoreProvider {
		return parseRDMAPort(name, data, f[1:], built)
	}
	if len(f) < 2 || len(f) > 3 {
		return dat.Entry{}, fmt.Errorf("instance data %q: want \"provider interface [address]\"", data)
	}
	e := dat.Entry{Name: name, Provider: f[0], Device: f[0] + "_" + f[1], Interface: f[1]}
	if f[1] == "-" {
		e.Device, e.Interface = f[0], ""
	}
	if len(f) == 3 {
		a, err := parseIPv4(data, f[2])
		if err != nil {
			return dat.Entry{}, err
		}
		e.Addr = a
	}
	if e.Interface == "" && !e.Addr.IsValid() {
		return dat.Entry{}, fmt.Errorf("instance data %q: a device on no interface needs an address", data)
	}
	return e, nil
}

func parseIPv4(data, s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("instance data %q: %q is not an IPv4 address", data, s)
	}
	return a, nil
}

//export gd_provider_init
func gd_provider_init(info *C.DAT_PROVIDER_INFO, instance *C.char) {
	name := C.GoString(&info.ia_name[0])
	data := ""
	if instance != nil {
		data = C.GoString(instance)
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.byName == nil {
		reg.byName = map[string]*registered{}
		// Every caller is a C thread, for which a goroutine readied by a
		// post is a thread hand-off: a Write the poster does not send
		// itself is sent by the thread that then waits for it, unless
		// the environment turns that off for a program that polls.
		reg.verbs = providers.List(providers.Options{Siw: siw.Options{TransmitInWait: transmitInWait()}})
	}
	if _, ok := reg.byName[name]; ok {
		return
	}
	e, err := parseInstance(name, data, reg.verbs)
	if err != nil {
		fmt.Fprintf(os.Stderr, "libdatgodapl: IA %s: %v\n", name, err)
		return
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	p := C.gd_new_provider(cname)
	if p == nil {
		return
	}
	if C.gd_register(p, info) != 0 {
		C.free(unsafe.Pointer(p.device_name))
		C.free(unsafe.Pointer(p))
		return
	}
	reg.byName[name] = &registered{prov: p, entry: e, threadSafe: info.is_thread_safe != C.DAT_FALSE}
	reg.entries = append(reg.entries, e)
}

//export gd_provider_fini
func gd_provider_fini(info *C.DAT_PROVIDER_INFO) {
	name := C.GoString(&info.ia_name[0])
	reg.mu.Lock()
	defer reg.mu.Unlock()
	r := reg.byName[name]
	if r == nil {
		return
	}
	// The table stays allocated: handles of IAs still open point at it.
	C.gd_unregister(r.prov, info)
	delete(reg.byName, name)
	for i, e := range reg.entries {
		if e.Name == name {
			reg.entries = append(reg.entries[:i], reg.entries[i+1:]...)
			break
		}
	}
}

// lookup returns the registry and table for an IA name.
func lookup(name string) (*dat.Registry, *registered, error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	r := reg.byName[name]
	if r == nil {
		return nil, nil, dat.NewError("ia_open", dat.ProviderNotFound, dat.NameNotRegistered)
	}
	rg, err := dat.NewRegistry(reg.verbs, []dat.Entry{r.entry}, providers.InterfaceAddr)
	return rg, r, err
}

// transmitInWaitEnv names the variable that, set to 0, keeps the
// library's siw IAs from leaving Writes to the thread that waits
// (docs/UDAPL.md, "Writes sent by the thread that waits").
const transmitInWaitEnv = "GODAPL_TRANSMIT_IN_WAIT"

// transmitInWait reports whether the library opens siw with
// TransmitInWait: on unless the environment says 0.
func transmitInWait() bool { return os.Getenv(transmitInWaitEnv) != "0" }
