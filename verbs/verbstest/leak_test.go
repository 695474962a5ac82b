package verbstest

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what CheckLeaks reports instead of
// failing the real test, so that the checker itself can be tested.
type recorder struct {
	testing.TB
	cleanups []func()
	errors   []string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Cleanup(f func())          { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(f string, a ...any) { r.errors = append(r.errors, fmt.Sprintf(f, a...)) }

func (r *recorder) finish() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func leakedForTest(stop <-chan struct{}) { <-stop }

func TestCheckLeaksReportsLeak(t *testing.T) {
	r := &recorder{TB: t}
	CheckLeaks(r)
	stop := make(chan struct{})
	defer close(stop)
	go leakedForTest(stop)
	r.finish()
	if len(r.errors) != 1 || !strings.Contains(r.errors[0], "leakedForTest") {
		t.Fatalf("CheckLeaks reported %q, want one report naming the leaked goroutine", r.errors)
	}
}

func TestCheckLeaksQuiet(t *testing.T) {
	r := &recorder{TB: t}
	CheckLeaks(r)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		leakedForTest(stop)
		close(done)
	}()
	close(stop)
	<-done
	r.finish()
	if len(r.errors) != 0 {
		t.Fatalf("CheckLeaks reported %q after the goroutine ended", r.errors)
	}
}

func TestFillDependsOnSeedAndPosition(t *testing.T) {
	a, b := Pattern(4096, 1), Pattern(4096, 2)
	if string(a) == string(b) {
		t.Fatal("different seeds give the same pattern")
	}
	if string(a[:2048]) == string(a[2048:]) || string(a[:256]) == string(a[256:512]) {
		t.Fatal("pattern repeats")
	}
}
