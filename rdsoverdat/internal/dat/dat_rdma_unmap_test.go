package dat

import (
	"net/netip"
	"testing"
	"unsafe"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/internal/memhook"
	"github.com/godapl/godapl/internal/testutil"
	"github.com/godapl/godapl/rdsoverdat/internal/xport"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
)

// stubNode is the least of a core for a node that makes no connection.
type stubNode struct{ addr netip.Addr }

func (n stubNode) Addr() netip.Addr                 { return n.addr }
func (stubNode) Conn(netip.Addr, uint32) xport.Conn { return nil }
func (stubNode) SendersBlocked() bool               { return false }
func (stubNode) GenNum() uint32                     { return 1 }
func (stubNode) Count(xport.Counter)                {}

// memNode attaches the transport over the in-memory provider.
func memNode(t *testing.T) *datNode {
	t.Helper()
	addr := testutil.LoopbackAddr()
	reg, err := dat.NewRegistry([]verbs.Provider{mem.New()},
		[]dat.Entry{{Name: "mem", Provider: "mem", Device: mem.DeviceName, Addr: addr}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	nt, err := New(Config{Registry: reg, IA: "mem", RecvDepth: 8}).Attach(stubNode{addr})
	if err != nil {
		t.Fatal(err)
	}
	return nt.(*datNode)
}

// cached reports whether the node's local cache has an entry on b.
func (c *datLocalCache) cached(b []byte) *datLocal {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, x := range c.ents {
		if x.base == base && x.n == len(b) {
			return x
		}
	}
	return nil
}

// Memory outside the Go heap that is unmapped leaves the cache first:
// a mapping placed at its address later must get a registration of its
// own, not the old one (which names the old pages). An entry a work
// request still uses leaves the cache at once and is freed by the
// request's put; one that is not in use is freed at once.
func TestDATLocalCacheDropsUnmapped(t *testing.T) {
	dn := memNode(t)
	defer dn.Close()
	m1, err := verbs.AllocMem(8192)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := verbs.AllocMem(4096)
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Free()
	b1, b2 := m1.Bytes(), m2.Bytes()

	idle, _, err := dn.locals.get(dn, b1[:4096])
	if err != nil {
		t.Fatal(err)
	}
	dn.locals.put(idle)                          // only the cache holds it now
	busy, _, err := dn.locals.get(dn, b1[4096:]) // a posted request's
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := dn.locals.get(dn, b2)
	if err != nil {
		t.Fatal(err)
	}
	dn.locals.put(other)
	if dn.locals.cached(b1[:4096]) != idle || dn.locals.cached(b1[4096:]) != busy {
		t.Fatal("the registrations were not cached")
	}

	if err := m1.Free(); err != nil {
		t.Fatal(err)
	}
	if dn.locals.cached(b1[:4096]) != nil || dn.locals.cached(b1[4096:]) != nil {
		t.Fatal("registrations of unmapped memory are still cached")
	}
	if dn.locals.cached(b2) != other {
		t.Error("a registration of memory still mapped left the cache")
	}
	if _, err := idle.l.Query(); err == nil {
		t.Error("the unused registration of unmapped memory was not freed")
	}
	if _, err := busy.l.Query(); err != nil {
		t.Errorf("a registration a work request uses was freed: %v", err)
	}
	dn.locals.put(busy)
	if _, err := busy.l.Query(); err == nil {
		t.Error("the last put did not free the evicted registration")
	}
}

// A cache hit allocates nothing, and a closed node hears no more unmap
// notices (its subscription ended, so the node can be collected).
func TestDATLocalCacheHitAndClose(t *testing.T) {
	dn := memNode(t)
	b := make([]byte, 4096)
	x, _, err := dn.locals.get(dn, b)
	if err != nil {
		t.Fatal(err)
	}
	dn.locals.put(x)
	if n := testing.AllocsPerRun(100, func() {
		y, off, err := dn.locals.get(dn, b[512:1024])
		if err != nil || y != x || off != 512 {
			t.Fatalf("hit: %p at %d, %v; want %p at 512", y, off, err, x)
		}
		dn.locals.put(y)
	}); n != 0 {
		t.Errorf("a cache hit allocates %v times", n)
	}
	memhook.Unmapping(make([]byte, 1))
	dn.locals.mu.Lock()
	before := dn.locals.drops
	dn.locals.mu.Unlock()
	if before == 0 {
		t.Fatal("the open node heard no unmap notice")
	}
	if err := dn.Close(); err != nil {
		t.Fatal(err)
	}
	memhook.Unmapping(make([]byte, 1))
	dn.locals.mu.Lock()
	after := dn.locals.drops
	dn.locals.mu.Unlock()
	if after != before {
		t.Error("a closed node still hears unmap notices")
	}
}
