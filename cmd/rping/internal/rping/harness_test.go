package rping

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
)

// fabric is a provider the engine is tested over: it opens devices that
// reach each other and says which address a server listens on.
type fabric struct {
	name       string
	open       func(t *testing.T) verbs.Device // closed at the end of the test
	listenAddr string                          // Listen address; port 0 picks one
}

// memFabric connects the devices of one in-memory provider per test.
func memFabric() fabric {
	var mu sync.Mutex
	fabrics := map[*testing.T]*mem.Provider{}
	return fabric{
		name:       "mem",
		listenAddr: "rping-server:0",
		open: func(t *testing.T) verbs.Device {
			t.Helper()
			mu.Lock()
			p := fabrics[t]
			if p == nil {
				p = mem.New()
				fabrics[t] = p
				t.Cleanup(func() { mu.Lock(); delete(fabrics, t); mu.Unlock() })
			}
			mu.Unlock()
			return openDevice(t, p, mem.DeviceName)
		},
	}
}

func openDevice(t *testing.T, p verbs.Provider, name string) verbs.Device {
	t.Helper()
	d, err := p.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// forEachFabric runs test over every provider.
func forEachFabric(t *testing.T, test func(t *testing.T, f fabric)) {
	for _, f := range fabrics() {
		t.Run(f.name, func(t *testing.T) { test(t, f) })
	}
}

// listen opens a server device and a listener on it.
func (f fabric) listen(t *testing.T) (verbs.Device, verbs.Listener) {
	t.Helper()
	dev := f.open(t)
	l, err := dev.Listen(f.listenAddr, Backlog)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return dev, l
}

// testTimeout bounds every run in these tests; a hang fails, not blocks.
const testTimeout = 30 * time.Second

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// checkLeaks fails t if goroutines started during the test outlive it.
// Call it first, so that its cleanup runs after every other one.
func checkLeaks(t *testing.T) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(2 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("%d goroutines before the test, %d after:\n%s", base, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond) // settle loop, not an assertion
		}
	})
}

// waitFor polls cond until it holds; the test fails after testTimeout.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
