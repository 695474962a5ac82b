package dattest

import (
	"testing"

	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
)

// memHarness opens two IAs on one fresh mem fabric per sub-test.
func memHarness() Harness {
	return Harness{
		Open: func(t *testing.T) (*ia.IA, *ia.IA) {
			reg, _ := providers.New(providers.Options{})
			a, err := ia.OpenIn(reg, "mem", 0)
			if err != nil {
				t.Fatal(err)
			}
			b, err := ia.OpenIn(reg, "mem", 0)
			if err != nil {
				t.Fatal(err)
			}
			return a, b
		},
		Short:  testing.Short(),
		Bubble: true,
		Skip: map[string]string{
			"SRQ/FlushMidMessage": "mem places a Send into its buffer in one step of the sender's goroutine; " +
				"no message is left partly placed by a disconnect",
		},
	}
}

func TestMem(t *testing.T) { Run(t, memHarness()) }
