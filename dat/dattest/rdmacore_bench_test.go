//go:build rdmacore

package dattest

import (
	"os"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/rdmacore"
)

// With GODAPL_RDMACORE_DEVICE and GODAPL_RDMACORE_ADDR (the device's IPv4
// address) set, BenchmarkDTO and BenchmarkDTOPaired also run over the
// device: bare rdmacore verbs against DAT over its ofa-v2-DEVICE-1 IA,
// in the same process.
func init() {
	dev, addr := os.Getenv("GODAPL_RDMACORE_DEVICE"), os.Getenv("GODAPL_RDMACORE_ADDR")
	if dev == "" || addr == "" {
		return
	}
	benchProviders = append(benchProviders, benchProvider{
		name: "rdmacore", iaName: "ofa-v2-" + dev + "-1",
		verbs: func() verbs.Provider { return rdmacore.New() }, dev: dev, addr: addr + ":0",
	})
}
