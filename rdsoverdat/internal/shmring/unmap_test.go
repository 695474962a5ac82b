package shmring

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/godapl/godapl/internal/memhook"
)

// A region's mapping in the table is announced when it is really
// unmapped: at Remove when nothing holds the table, at the last Release
// otherwise, so that registration caches drop it then and not earlier.
func TestRegionTableAnnouncesUnmap(t *testing.T) {
	g, err := NewRegion(1)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	g2, err := NewRegion(1)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	tab := NewRegionTable(4, 1<<20)
	defer tab.Close()
	bases := map[uintptr]uint64{}
	for _, r := range []*Region{g, g2} {
		if err := tab.Add(r.ID(), r.File()); err != nil {
			t.Fatal(err)
		}
		mem, err := tab.Mem(r.ID())
		if err != nil {
			t.Fatal(err)
		}
		bases[uintptr(unsafe.Pointer(unsafe.SliceData(mem)))] = r.ID()
	}
	var mu sync.Mutex
	var got []uint64 // ids of the regions announced, in order
	sub := memhook.Subscribe(func(base, n uintptr) {
		mu.Lock()
		defer mu.Unlock()
		if id, ok := bases[base]; ok && n == uintptr(g.Size()) {
			got = append(got, id)
		}
	})
	defer sub.Unsubscribe()
	announced := func() []uint64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]uint64(nil), got...)
	}
	if err := tab.Remove(g.ID()); err != nil {
		t.Fatal(err)
	}
	if a := announced(); len(a) != 1 || a[0] != g.ID() {
		t.Fatalf("after Remove: announced %v, want [%d]", a, g.ID())
	}
	tab.Hold()
	if err := tab.Remove(g2.ID()); err != nil {
		t.Fatal(err)
	}
	if a := announced(); len(a) != 1 {
		t.Fatalf("a held mapping was announced at Remove: %v", a)
	}
	tab.Release()
	if a := announced(); len(a) != 2 || a[1] != g2.ID() {
		t.Fatalf("after the last Release: announced %v, want [%d %d]", a, g.ID(), g2.ID())
	}
}
