package verbstest

import (
	"bytes"
	"cmp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// leakSettle is how long CheckLeaks lets goroutines wind down: providers
// stop their goroutines when objects close, but the goroutines may need a
// scheduling round or a socket close to notice.
const leakSettle = 2 * time.Second

// CheckLeaks records the goroutines running now and, when t ends, fails t
// if goroutines started since are still running after a short settle
// period, printing their stacks. Call it first in a test, before creating
// anything, so that its cleanup runs after every other cleanup (cleanups
// run last-registered first) and sees the objects already closed.
func CheckLeaks(t testing.TB) {
	t.Helper()
	base := make(map[uint64]bool)
	for _, g := range goroutines() {
		base[g.id] = true
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(leakSettle)
		for {
			var leaked []goroutine
			for _, g := range goroutines() {
				if !base[g.id] && !g.benign() {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				var b strings.Builder
				for _, g := range leaked {
					b.WriteString(g.stack)
					b.WriteString("\n\n")
				}
				t.Errorf("%d goroutine(s) leaked:\n%s", len(leaked), b.String())
				return
			}
			// A settle loop, not an assertion: goroutines exit on their own
			// schedule and there is nothing to wait on.
			time.Sleep(10 * time.Millisecond)
		}
	})
}

type goroutine struct {
	id    uint64
	stack string
}

// benign reports goroutines that belong to the runtime or the testing
// package rather than to the code under test.
func (g goroutine) benign() bool {
	lines := strings.Split(g.stack, "\n")[1:]
	for _, l := range lines {
		if l == "" || strings.HasPrefix(l, "\t") {
			continue
		}
		fn := strings.TrimPrefix(l, "created by ")
		if !strings.HasPrefix(fn, "runtime.") && !strings.HasPrefix(fn, "runtime/") &&
			!strings.HasPrefix(fn, "testing.") && !strings.HasPrefix(fn, "os/signal.") {
			return false
		}
	}
	return true
}

// goroutines parses runtime.Stack's dump of every goroutine.
func goroutines() []goroutine {
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var gs []goroutine
	for block := range bytes.SplitSeq(buf, []byte("\n\n")) {
		s := strings.TrimSpace(string(block))
		rest, ok := strings.CutPrefix(s, "goroutine ")
		if !ok {
			continue
		}
		idStr, _, _ := strings.Cut(rest, " ")
		id, err := strconv.ParseUint(idStr, 10, 64)
		if err != nil {
			continue
		}
		gs = append(gs, goroutine{id: id, stack: s})
	}
	slices.SortFunc(gs, func(a, b goroutine) int { return cmp.Compare(a.id, b.id) })
	return gs
}
