package verbs

import (
	"errors"
	"os"
	"sync"
	"testing"
	"unsafe"

	"github.com/godapl/godapl/internal/memhook"
)

// Free announces the whole mapping, page rounding included, before it
// unmaps it, so that registration caches drop what they keep on it.
func TestMemFreeAnnouncesUnmap(t *testing.T) {
	m, err := AllocMem(100)
	if err != nil {
		t.Fatal(err)
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(m.Bytes())))
	var mu sync.Mutex
	var got []uintptr
	sub := memhook.Subscribe(func(b, n uintptr) {
		if b == base {
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		}
	})
	defer sub.Unsubscribe()
	if err := m.Free(); err != nil {
		t.Fatal(err)
	}
	if err := m.Free(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Free: %v, want ErrClosed", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] == 0 || got[0]%uintptr(os.Getpagesize()) != 0 || got[0] < 100 {
		t.Errorf("announced lengths %v, want one whole-page length", got)
	}
}
