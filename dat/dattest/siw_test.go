package dattest

import (
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
)

// siwHarness opens two IAs on the soft-iWARP loopback device: real TCP
// connections through the kernel's loopback.
func siwHarness(t *testing.T) Harness {
	reg, err := providers.New(providers.Options{})
	if err != nil {
		t.Skipf("no interfaces: %v", err)
	}
	if _, err := reg.Lookup("siw-lo"); err != nil {
		t.Skip("no loopback interface")
	}
	return Harness{
		Open: func(t *testing.T) (*ia.IA, *ia.IA) {
			a, err := ia.OpenIn(reg, "siw-lo", 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ia.OpenIn(reg, "siw-lo", 0)
			if err != nil {
				t.Fatal(err)
			}
			return a, b
		},
		NoListenerEvent: dat.ConnectionEventNonPeerRejected,
		Short:           true,
	}
}

func TestSiw(t *testing.T) { Run(t, siwHarness(t)) }
