package dattest

import (
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/verbs/verbstest"
)

// DefaultTimeout bounds every wait of the suite. It is generous because
// -race on two cores is slow.
const DefaultTimeout = 10 * time.Second

// Harness says how to get IAs of the provider under test.
type Harness struct {
	// Open opens a fresh pair of IAs that can connect to each other; the
	// suite closes them when the sub-test ends.
	Open func(t *testing.T) (a, b *ia.IA)
	// Registry, if set, is used by the registry tests (unknown names).
	Registry *dat.Registry
	// NoListenerEvent is the connection event a connect to a qualifier
	// nobody listens on produces. DAT says NON_PEER_REJECTED; the mem
	// provider cannot tell that from a peer's reject without private data.
	NoListenerEvent dat.EventNumber
	// Short shrinks the stress tests (storms, transactions).
	Short bool
	// Skip maps sub-test names ("Group/Test") to why they are skipped.
	Skip map[string]string
	// Bubble runs each sub-test, with the IAs Open returns, in a
	// testing/synctest bubble, for a provider that lives wholly in the
	// process (no sockets, no goroutines of its own outside the
	// sub-test): timeouts then run on the bubble's clock at no real
	// cost, the suite's waits for a state change settle as soon as every
	// goroutine has blocked, and a goroutine left blocked fails the
	// sub-test as a deadlock.
	Bubble bool
}

// env is what a sub-test gets.
type env struct {
	h    *Harness
	a, b *ia.IA
}

type testCase struct {
	name string
	fn   func(t *testing.T, e *env)
}

// ownSubtests are the sub-tests ("Group/Test") that run sub-tests of their
// own, which a synctest bubble does not allow (Harness.Bubble).
var ownSubtests = map[string]bool{
	"PostChecks/Faults": true,
	"PostChecks/SRQ":    true,
}

func suite() []struct {
	name  string
	tests []testCase
} {
	return []struct {
		name  string
		tests []testCase
	}{
		{"Handles", handleTests},
		{"EVD", evdTests},
		{"Memory", memTests},
		{"EPState", stateTests},
		{"Connect", connectTests},
		{"DTO", dtoTests},
		{"PostChecks", postCheckTests},
		{"RMR", rmrTests},
		{"Limits", limitTests},
		{"Stress", stressTests},
		{"SRQ", srqTests},
	}
}

// Run runs the suite.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("dattest: Harness.Open is nil")
	}
	if h.NoListenerEvent == 0 {
		h.NoListenerEvent = dat.ConnectionEventNonPeerRejected
	}
	for _, g := range suite() {
		t.Run(g.name, func(t *testing.T) {
			for _, tc := range g.tests {
				t.Run(tc.name, func(t *testing.T) {
					if why, ok := h.Skip[g.name+"/"+tc.name]; ok && strings.TrimSpace(why) != "" {
						t.Skip(why)
					}
					if h.Bubble && !ownSubtests[g.name+"/"+tc.name] {
						synctest.Test(t, func(t *testing.T) { runCase(t, &h, tc) })
						return
					}
					verbstest.CheckLeaks(t)
					runCase(t, &h, tc)
				})
			}
		})
	}
}

// runCase runs one sub-test on a fresh pair of IAs.
func runCase(t *testing.T, h *Harness, tc testCase) {
	a, b := h.Open(t)
	t.Cleanup(func() {
		a.Close(dat.CloseAbrupt)
		b.Close(dat.CloseAbrupt)
	})
	tc.fn(t, &env{h: h, a: a, b: b})
}
