//go:build udapl && cgo

package main

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/verbs"
)

// rdmacoreStub stands for the rdmacore provider in a build without it:
// parseInstance only asks the providers' names.
type rdmacoreStub struct{ verbs.Provider }

func (rdmacoreStub) Name() string { return rdmacoreProvider }

func TestParseInstanceRDMAPort(t *testing.T) {
	with := append(providers.List(providers.Options{}), rdmacoreStub{})
	e, err := parseInstance("ofa-v2-rxe0-1", "rdmacore rxe0 1 10.1.2.3", with)
	if err != nil {
		t.Fatal(err)
	}
	if e.Provider != "rdmacore" || e.Device != "rxe0" || e.Interface != "" || e.Addr != netip.MustParseAddr("10.1.2.3") {
		t.Errorf("entry %v, want rdmacore rxe0 - 10.1.2.3", e)
	}
	for _, c := range []struct{ data, err string }{
		{"rdmacore rxe0", "want \"rdmacore device port [address]\""},
		{"rdmacore rxe0 1 10.0.0.1 x", "want \"rdmacore device port [address]\""},
		{"rdmacore rxe0 0", "is not a port number"},
		{"rdmacore rxe0 one", "is not a port number"},
		{"rdmacore rxe0 1 ::1", "is not an IPv4 address"},
		// No such device here: its address cannot come from the registry.
		{"rdmacore godapl-no-such-dev 1", "rdma-core has no port 1 of device godapl-no-such-dev"},
	} {
		if _, err := parseInstance("x", c.data, with); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: error %v, want one saying %q", c.data, err, c.err)
		}
	}
	// Without the rdmacore provider the line is refused with the way to
	// build it, not taken for a soft provider's interface.
	plain := []verbs.Provider{}
	for _, p := range providers.List(providers.Options{}) {
		if p.Name() != rdmacoreProvider {
			plain = append(plain, p)
		}
	}
	if _, err := parseInstance("x", "rdmacore rxe0 1", plain); err == nil || !strings.Contains(err.Error(), "UDAPL_TAGS=rdmacore") {
		t.Errorf("without rdmacore: error %v, want the build hint", err)
	}
}

func TestParseInstanceSoft(t *testing.T) {
	e, err := parseInstance("godapl-siw-lo", "siw lo 127.0.0.1", nil)
	if err != nil || e.Provider != "siw" || e.Device != "siw_lo" || e.Interface != "lo" || e.Addr != netip.MustParseAddr("127.0.0.1") {
		t.Errorf("siw lo: %v, %v", e, err)
	}
	e, err = parseInstance("x", "siw - 127.3.4.5", nil)
	if err != nil || e.Device != "siw" || e.Interface != "" {
		t.Errorf("siw -: %v, %v", e, err)
	}
	for _, data := range []string{"", "siw", "siw - ", "siw lo 300.1.1.1", "siw lo 127.0.0.1 x"} {
		if _, err := parseInstance("x", data, nil); err == nil {
			t.Errorf("%q: no error", data)
		}
	}
}
