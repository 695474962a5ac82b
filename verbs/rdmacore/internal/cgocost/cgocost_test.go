//go:build rdmacore

package cgocost

import "testing"

var sink int64

// TestCalls: each variant reaches C and returns its result, so that the
// benchmarks time real calls.
func TestCalls(t *testing.T) {
	v := int64(40)
	for name, got := range map[string]int64{
		"plain": Plain(40, 2), "directives": Directives(40, 2),
		"ptr": Ptr(&v, 2), "ptr-directives": PtrDirectives(&v, 2),
	} {
		if got != 42 {
			t.Errorf("%s: %d, want 42", name, got)
		}
	}
}

// BenchmarkCrossing is the cost of one cgo call per variant, and a Go
// call beside them as the floor.
func BenchmarkCrossing(b *testing.B) {
	b.Run("go", func(b *testing.B) {
		for i := range b.N {
			sink += goAdd(uintptr(i), 1)
		}
	})
	b.Run("plain", func(b *testing.B) {
		for i := range b.N {
			sink += Plain(uintptr(i), 1)
		}
	})
	b.Run("directives", func(b *testing.B) {
		for i := range b.N {
			sink += Directives(uintptr(i), 1)
		}
	})
	v := new(int64)
	b.Run("ptr", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			sink += Ptr(v, 1)
		}
	})
	b.Run("ptr-directives", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			sink += PtrDirectives(v, 1)
		}
	})
}

//go:noinline
func goAdd(p uintptr, n int) int64 { return int64(p) + int64(n) }
