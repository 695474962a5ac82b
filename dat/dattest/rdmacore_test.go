//go:build rdmacore

package dattest

import (
	"os"
	"strings"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
)

// TestRdmacore runs the suite over the IA of an rdma-core device port
// (GODAPL_RDMACORE_DEVICE names the device, default the first listed),
// two IAs of it connecting through rdma_cm. Without a device it skips.
func TestRdmacore(t *testing.T) {
	reg, err := providers.New(providers.Options{})
	if reg == nil {
		t.Skipf("no registry: %v", err)
	}
	name := ""
	for _, e := range reg.Entries() {
		if !strings.HasPrefix(e.Name, "ofa-v2-") {
			continue
		}
		if dev := os.Getenv("GODAPL_RDMACORE_DEVICE"); dev == "" || e.Device == dev {
			name = e.Name
			break
		}
	}
	if name == "" {
		t.Skip("no rdma-core device port with an address (load rdma_rxe or siw and add a link, or set GODAPL_RDMACORE_DEVICE)")
	}
	t.Logf("IA %s", name)
	Run(t, Harness{
		Open: func(t *testing.T) (*ia.IA, *ia.IA) {
			a, err := ia.OpenIn(reg, name, 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ia.OpenIn(reg, name, 0)
			if err != nil {
				a.Close(dat.CloseAbrupt)
				t.Fatal(err)
			}
			return a, b
		},
		Registry:        reg,
		NoListenerEvent: dat.ConnectionEventNonPeerRejected,
		Short:           true,
	})
}
