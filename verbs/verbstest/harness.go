package verbstest

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/godapl/godapl/verbs"
)

// DefaultTimeout bounds every wait of the helpers and of the suite (for a
// completion, an event, a connection) unless Harness.Timeout says otherwise.
// It is generous because -race on two cores is slow; a correct provider
// never gets near it.
const DefaultTimeout = 10 * time.Second

// Harness says how to get devices of the provider under test.
type Harness struct {
	// NewPair returns two devices that can reach each other (possibly the
	// same device twice) and the address a listener on the first should
	// use ("ip:0" style, port 0 = pick one). The suite closes both devices
	// when the sub-test ends.
	NewPair func(t *testing.T) (a, b verbs.Device, listenAddr string)
	// Skip maps names of sub-tests, or of whole groups, relative to Run
	// ("MW", "Faults/WriteBadRKey") to the reason the provider cannot pass
	// them. An empty reason, or a name that matches no sub-test, fails the
	// run: every exception must be justified and current.
	Skip map[string]string
	// Timeout overrides DefaultTimeout.
	Timeout time.Duration
	// Bubble runs each sub-test, with the devices NewPair returns, in a
	// testing/synctest bubble, for a provider that lives wholly in the
	// process (no sockets, no goroutines of its own outside the
	// sub-test): timeouts run on the bubble's clock at no real cost, the
	// suite's waits for a state change settle as soon as every goroutine
	// has blocked, and a goroutine left blocked fails the sub-test as a
	// deadlock, which stands in for the leak check.
	Bubble bool
}

// env is what a sub-test of the suite gets: a fresh pair of devices.
type env struct {
	a, b    verbs.Device
	addr    string
	timeout time.Duration
}

// sameDevice reports whether the harness returned one device twice.
func (e *env) sameDevice() bool { return e.a == e.b }

type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

type group struct {
	name  string
	tests []testCase
}

// suite lists every sub-test Run runs, by group.
func suite() []group {
	return []group{
		{"Device", deviceTests},
		{"PD", pdTests},
		{"MR", mrTests},
		{"CQ", cqTests},
		{"QP", qpTests},
		{"CM", cmTests},
		{"Send", sendTests},
		{"RDMA", rdmaTests},
		{"SRQ", srqTests},
		{"MW", mwTests},
		{"Faults", faultTests},
		{"Concurrency", concurrencyTests},
	}
}

// Run runs the conformance suite against the provider h describes. Each
// sub-test opens its own pair of devices, creates its own objects, closes
// the devices when it ends and fails if goroutines leak.
func Run(t *testing.T, h Harness) {
	if h.NewPair == nil {
		t.Fatal("verbstest: Harness.NewPair is nil")
	}
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	groups := suite()
	for name, why := range h.Skip {
		if strings.TrimSpace(why) == "" {
			t.Errorf("verbstest: Harness.Skip[%q] gives no reason", name)
		}
		if !knownName(groups, name) {
			t.Errorf("verbstest: Harness.Skip[%q] names no sub-test", name)
		}
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			if why, ok := h.Skip[g.name]; ok {
				t.Skip("provider does not support this: " + why)
			}
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					if why, ok := h.Skip[g.name+"/"+tc.name]; ok {
						t.Skip("provider does not support this: " + why)
					}
					if h.Bubble {
						synctest.Test(t, func(t *testing.T) { runCase(t, &h, tc, timeout) })
						return
					}
					CheckLeaks(t)
					runCase(t, &h, tc, timeout)
				})
			}
		})
	}
}

// runCase runs one sub-test on a fresh pair of devices.
func runCase(t *testing.T, h *Harness, tc testCase, timeout time.Duration) {
	a, b, addr := h.NewPair(t)
	if a == nil || b == nil {
		t.Fatal("verbstest: Harness.NewPair returned a nil device")
	}
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	tc.fn(t, &env{a: a, b: b, addr: addr, timeout: timeout})
}

func knownName(groups []group, name string) bool {
	for _, g := range groups {
		if g.name == name {
			return true
		}
		for _, tc := range g.tests {
			if g.name+"/"+tc.name == name {
				return true
			}
		}
	}
	return false
}
