package rdstool

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/internal/testutil"
	"github.com/godapl/godapl/rdsoverdat"
)

func commonFrom(t *testing.T, args ...string) *Common {
	t.Helper()
	var cm Common
	fs := NewFlagSet("x")
	cm.Register(fs, "x")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	if err := cm.Setup(&bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	return &cm
}

// --ia names the IA the dat transport opens: a name the registry does
// not hold fails before any bind, with DAT's error; the registry's mem
// IA carries a datagram between two nodes of the process.
func TestCommonIA(t *testing.T) {
	if _, err := commonFrom(t, "--ia", "no-such-ia").NewStack(rdsoverdat.Config{}); !errors.Is(err, dat.ErrProviderNotFound) {
		t.Fatalf("unknown IA: %v, want DAT_PROVIDER_NOT_FOUND", err)
	}
	st, err := commonFrom(t, "--ia", "mem").NewStack(rdsoverdat.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := Bind(st, netip.AddrPortFrom(testutil.LoopbackAddr(), 0), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Bind(st, netip.AddrPortFrom(testutil.LoopbackAddr(), 0), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.SendTo([]byte("over mem"), b.BoundAddr(), 0); err != nil {
		t.Fatal(err)
	}
	b.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 16)
	n, from, err := b.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "over mem" || from.(rdsoverdat.Addr).AddrPort() != a.BoundAddr() {
		t.Fatalf("got %q from %v: %v", buf[:n], from, err)
	}
	if info := st.Info(); len(info.Nodes) != 2 || len(info.Nodes[0].Conns) != 1 || info.Nodes[0].Conns[0].Transport != "dat" {
		t.Fatalf("not one dat connection between two nodes: %+v", info)
	}
}
