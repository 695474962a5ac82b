package netns

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strings"
	"testing"
	"time"
)

// pair returns two fresh namespaces, deleted at the end of the test.
func pair(t *testing.T) (*NS, *NS) {
	t.Helper()
	Require(t)
	var nss [2]*NS
	for i := range nss {
		ns, err := New()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Close() })
		nss[i] = ns
	}
	return nss[0], nss[1]
}

// listen listens on addr:port inside ns and returns the listener.
func listen(t *testing.T, ns *NS, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := ns.Do(func() (err error) { ln, err = net.Listen("tcp4", addr); return }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// dial dials addr from inside ns.
func dial(ns *NS, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := ns.Do(func() (err error) { c, err = net.DialTimeout("tcp4", addr, timeout); return })
	return c, err
}

// transfer sends n bytes from a to b through a fresh connection and
// returns how long it took; the bytes must arrive intact.
func transfer(t *testing.T, a, b *NS, bAddr string, n int) time.Duration {
	t.Helper()
	ln := listen(t, b, bAddr+":0")
	got := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		buf, _ := io.ReadAll(c)
		got <- buf
	}()
	want := bytes.Repeat([]byte("0123456789abcdef"), n/16)
	start := time.Now()
	c, err := dial(a, ln.Addr().String(), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(want); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if buf := <-got; !bytes.Equal(buf, want) {
		t.Fatalf("received %d bytes, want %d intact", len(buf), len(want))
	}
	return time.Since(start)
}

func TestVethConnectsNamespaces(t *testing.T) {
	a, b := pair(t)
	v, err := NewVeth(a, netip.MustParsePrefix("10.201.0.1/24"), b, netip.MustParsePrefix("10.201.0.2/24"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	transfer(t, a, b, "10.201.0.2", 1<<20)

	// The address exists only in its namespace.
	out, err := b.Command(context.Background(), "ip", "-4", "-o", "addr", "show", "dev", v.NameB).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "10.201.0.2/24") {
		t.Fatalf("ip addr inside %s: %v\n%s", b.Name, err, out)
	}
	if _, err := dial(b, "10.201.0.1:1", 3*time.Second); err == nil || strings.Contains(err.Error(), "timeout") {
		t.Fatalf("dial to a closed port in a: %v, want connection refused", err)
	}

	// Down: nothing gets through; up again: it does.
	ln := listen(t, b, "10.201.0.2:0")
	if err := v.SetUp(false); err != nil {
		t.Fatal(err)
	}
	if c, err := dial(a, ln.Addr().String(), 200*time.Millisecond); err == nil {
		c.Close()
		t.Fatal("dial across a downed veth succeeded")
	}
	if err := v.SetUp(true); err != nil {
		t.Fatal(err)
	}
	c, err := dial(a, ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial after the veth came back: %v", err)
	}
	c.Close()
}

func TestVethRateLimit(t *testing.T) {
	a, b := pair(t)
	v, err := NewVeth(a, netip.MustParsePrefix("10.202.0.1/24"), b, netip.MustParsePrefix("10.202.0.2/24"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	const size = 256 << 10
	fast := transfer(t, a, b, "10.202.0.2", size)
	if err := v.Impair(Impairment{Rate: 1 << 20}); err != nil { // 1 MiB/s: ≥ 250 ms for 256 KiB
		t.Fatal(err)
	}
	slow := transfer(t, a, b, "10.202.0.2", size)
	if err := v.Clear(); err != nil {
		t.Fatal(err)
	}
	again := transfer(t, a, b, "10.202.0.2", size)
	t.Logf("256 KiB: clean %v, at 1 MiB/s %v, cleared %v", fast, slow, again)
	if slow < 150*time.Millisecond {
		t.Errorf("256 KiB at 1 MiB/s took %v, want ≥ 150 ms", slow)
	}
	// Timing after Clear depends on the machine's load; the qdisc's
	// absence does not.
	for _, end := range []struct {
		ns  *NS
		dev string
	}{{a, v.NameA}, {b, v.NameB}} {
		out, err := end.ns.Run("tc", "qdisc", "show", "dev", end.dev)
		if err != nil || strings.Contains(out, "tbf") || strings.Contains(out, "netem") {
			t.Errorf("after Clear, %s: %v %s", end.dev, err, out)
		}
	}
}

func TestTunLinkImpairs(t *testing.T) {
	before := runtime.NumGoroutine()
	a, b := pair(t)
	l, err := NewTunLink(a, netip.MustParseAddr("10.203.0.1"), b, netip.MustParseAddr("10.203.0.2"), 1)
	if err != nil {
		t.Fatal(err)
	}
	transfer(t, a, b, "10.203.0.2", 256<<10)
	if c := l.Counts(); c.Forwarded == 0 || c.Lost+c.Duplicated+c.Reordered != 0 {
		t.Fatalf("clean link: %v", c)
	}

	for _, imp := range []Impairment{
		{Loss: 0.10},
		{Duplicate: 0.10},
		{Delay: 5 * time.Millisecond, Jitter: 2 * time.Millisecond, Reorder: 0.25},
	} {
		t.Run(imp.String(), func(t *testing.T) {
			c0 := l.Counts()
			l.Impair(imp)
			d := transfer(t, a, b, "10.203.0.2", 128<<10)
			l.Clear()
			c := l.Counts()
			t.Logf("%v: 128 KiB in %v; %v", imp, d, c)
			switch {
			case imp.Loss > 0 && c.Lost == c0.Lost:
				t.Error("no packet lost")
			case imp.Duplicate > 0 && c.Duplicated == c0.Duplicated:
				t.Error("no packet duplicated")
			case imp.Reorder > 0 && c.Reordered == c0.Reordered:
				t.Error("no packet reordered")
			}
		})
	}

	t.Run("down", func(t *testing.T) {
		ln := listen(t, b, "10.203.0.2:0")
		l.SetUp(false)
		if c, err := dial(a, ln.Addr().String(), 200*time.Millisecond); err == nil {
			c.Close()
			t.Fatal("dial across a downed link succeeded")
		}
		if l.Counts().Blackholed == 0 {
			t.Error("nothing blackholed")
		}
		l.SetUp(true)
		c, err := dial(a, ln.Addr().String(), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	})

	t.Run("rate", func(t *testing.T) {
		l.Impair(Impairment{Rate: 1 << 20})
		d := transfer(t, a, b, "10.203.0.2", 256<<10)
		l.Clear()
		if d < 150*time.Millisecond {
			t.Errorf("256 KiB at 1 MiB/s took %v, want ≥ 150 ms", d)
		}
	})

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after Close, %d before", n, before)
	}
}

func TestAddAddrs(t *testing.T) {
	a, b := pair(t)
	v, err := NewVeth(a, netip.MustParsePrefix("10.204.0.1/16"), b, netip.MustParsePrefix("10.204.0.2/16"))
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var addrs []netip.Prefix
	for i := range 64 {
		addrs = append(addrs, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 204, 1, byte(i + 1)}), 16))
	}
	if err := b.AddAddrs(v.NameB, addrs); err != nil {
		t.Fatal(err)
	}
	ln := listen(t, b, "10.204.1.64:0")
	c, err := dial(a, ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestImpairmentNetemArgs(t *testing.T) {
	imp := Impairment{Delay: 20 * time.Millisecond, Jitter: 5 * time.Millisecond, Loss: 0.01, Duplicate: 0.005, Reorder: 0.25, Rate: 1 << 20}
	got := strings.Join(imp.netemArgs(), " ")
	want := "limit 1000 delay 20000us 5000us loss 1% duplicate 0.5% reorder 25% rate 8388608bit"
	if got != want {
		t.Errorf("netem args\n got %s\nwant %s", got, want)
	}
}
