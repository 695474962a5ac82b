package soft

import (
	"sync"
	"testing"
	"time"
)

// TestSTagLookupTakesNoLock: a lookup does not wait for a writer of the
// table, so a registration in progress never stalls a DTO.
func TestSTagLookupTakesNoLock(t *testing.T) {
	tab := newSTagTable()
	r := &region{}
	stag, err := tab.add(r)
	if err != nil {
		t.Fatal(err)
	}
	tab.mu.Lock()
	defer tab.mu.Unlock()
	done := make(chan *region, 1)
	go func() { done <- tab.lookup(stag) }()
	select {
	case got := <-done:
		if got != r {
			t.Fatalf("lookup(%#x) = %p, want %p", stag, got, r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("lookup waited for the table's writer lock")
	}
}

// TestSTagTableGrows: regions added while the table grows, and their
// removal, are seen by lookups running alongside; a removed STag never
// resolves and its index is reused.
func TestSTagTableGrows(t *testing.T) {
	tab := newSTagTable()
	const n = 1000 // several doublings of the initial 64 entries
	regions := make([]*region, n)
	stags := make([]uint32, n)
	for i := range n / 2 {
		regions[i] = &region{}
		stags[i], _ = tab.add(regions[i])
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the first half stays registered through every growth
		defer wg.Done()
		for {
			for i := range n / 2 {
				if got := tab.lookup(stags[i]); got != regions[i] {
					t.Errorf("lookup(%#x) = %p, want %p", stags[i], got, regions[i])
					return
				}
			}
			select {
			case <-stop:
				return
			default:
			}
		}
	}()
	for i := n / 2; i < n; i++ {
		regions[i] = &region{}
		var err error
		if stags[i], err = tab.add(regions[i]); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	for i, s := range stags {
		if got := tab.lookup(s); got != regions[i] {
			t.Fatalf("after growth: lookup(%#x) = %p, want %p", s, got, regions[i])
		}
	}
	for i := n / 2; i < n; i++ {
		tab.remove(regions[i])
		if got := tab.lookup(stags[i]); got != nil {
			t.Fatalf("removed STag %#x still resolves", stags[i])
		}
	}
	for i := n / 2; i < n; i++ { // reuses the freed indexes with new keys
		r := &region{}
		s, err := tab.add(r)
		if err != nil {
			t.Fatal(err)
		}
		if s>>stagIndexShift >= n+1 {
			t.Fatalf("index %d not reused", s>>stagIndexShift)
		}
		if tab.lookup(s) != r {
			t.Fatalf("lookup(%#x) misses the reused index", s)
		}
	}
}
