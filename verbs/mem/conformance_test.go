package mem

import (
	"testing"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/verbstest"
)

// TestConformance runs the provider-neutral suite against mem.
func TestConformance(t *testing.T) {
	verbstest.Run(t, verbstest.Harness{
		NewPair: func(t *testing.T) (verbs.Device, verbs.Device, string) {
			p := New()
			a, err := p.Open(DeviceName)
			if err != nil {
				t.Fatal(err)
			}
			b, err := p.Open(DeviceName)
			if err != nil {
				t.Fatal(err)
			}
			return a, b, "node-a:0"
		},
		Bubble: true,
	})
}
