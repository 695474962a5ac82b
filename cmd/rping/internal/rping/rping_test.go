package rping

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/godapl/godapl/internal/testutil"
	"github.com/godapl/godapl/verbs"
)

// fabrics lists the providers the engine is tested over.
func fabrics() []fabric { return []fabric{memFabric(), siwFabric()} }

// runPair runs one server and one client with cfg and returns their
// errors and outputs.
func runPair(t *testing.T, f fabric, cfg Config) (srvErr, cliErr error, srvOut, cliOut string) {
	t.Helper()
	ctx := testContext(t)
	sdev, l := f.listen(t)
	cdev := f.open(t)
	var sout, cout testutil.LockedBuffer
	scfg, ccfg := cfg, cfg
	scfg.Stdout, scfg.Stderr = &sout, &sout
	ccfg.Stdout, ccfg.Stderr = &cout, &cout
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, sdev, l, scfg) }()
	cliErr = Client(ctx, cdev, l.Addr().String(), ccfg)
	srvErr = <-done
	return srvErr, cliErr, sout.String(), cout.String()
}

// wantPings checks that out holds count lines prefix+ping i, in order.
func wantPings(t *testing.T, out, prefix string, count, size int) {
	t.Helper()
	var lines []string
	for line := range strings.Lines(out) {
		if strings.HasPrefix(line, prefix) {
			lines = append(lines, strings.TrimSuffix(line, "\n"))
		}
	}
	if len(lines) != count {
		t.Fatalf("%d %q lines, want %d; output:\n%s", len(lines), prefix, count, clip(out))
	}
	buf := make([]byte, size)
	start := FirstStart
	for i, line := range lines {
		FillPing(buf, i, start)
		start = NextStart(start)
		if want := prefix + string(buf[:size-1]); line != want {
			t.Fatalf("line %d:\n got %q\nwant %q", i, clip(line), clip(want))
		}
	}
}

func TestPing(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		for _, size := range []int{MinSize, DefaultSize, 4096, MaxSize} {
			t.Run(fmt.Sprint(size), func(t *testing.T) {
				checkLeaks(t)
				cfg := Config{Size: size, Count: 20, Validate: true, Verbose: true}
				srvErr, cliErr, sout, cout := runPair(t, f, cfg)
				if cliErr != nil || srvErr != nil {
					t.Fatalf("client: %v\nserver: %v\nclient output:\n%s\nserver output:\n%s", cliErr, srvErr, clip(cout), clip(sout))
				}
				wantPings(t, cout, "ping data: ", cfg.Count, size)
				wantPings(t, sout, "server ping data: ", cfg.Count, size)
				if strings.Count(sout, "server DISCONNECT EVENT...\n") != 1 || strings.Count(cout, "client DISCONNECT EVENT...\n") != 1 {
					t.Errorf("want one DISCONNECT EVENT line on each side; server:\n%s\nclient:\n%s", clip(sout), clip(cout))
				}
			})
		}
	})
}

func TestPingQuietAndDebug(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		checkLeaks(t)
		srvErr, cliErr, sout, cout := runPair(t, f, Config{Size: DefaultSize, Count: 3, Validate: true})
		if cliErr != nil || srvErr != nil {
			t.Fatalf("client: %v, server: %v", cliErr, srvErr)
		}
		if strings.Contains(cout+sout, "ping data") {
			t.Errorf("ping data printed without -v:\n%s\n%s", cout, sout)
		}
		srvErr, cliErr, sout, cout = runPair(t, f, Config{Size: DefaultSize, Count: 2, Debug: true, SelfQP: true})
		if cliErr != nil || srvErr != nil {
			t.Fatalf("-d -q: client: %v, server: %v", cliErr, srvErr)
		}
		for _, want := range []string{"server posted rdma read req", "server rdma write complete", "rdma write from lkey"} {
			if strings.Count(sout, want) != 2 {
				t.Errorf("server -d output has %q %d times, want 2:\n%s", want, strings.Count(sout, want), sout)
			}
		}
		if !strings.Contains(cout, "rdma_connect successful") || strings.Count(cout, "RDMA addr ") != 4 {
			t.Errorf("client -d output:\n%s", cout)
		}
	})
}

func TestPersistentServer(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		checkLeaks(t)
		ctx, stop := context.WithCancel(testContext(t))
		defer stop()
		sdev, l := f.listen(t)
		var sout testutil.LockedBuffer
		done := make(chan error, 1)
		go func() {
			done <- ServePersistent(ctx, sdev, l, Config{Size: 1000, Verbose: true, Stdout: &sout, Stderr: &sout})
		}()
		const clients, count = 3, 20
		var wg sync.WaitGroup
		outs := make([]testutil.LockedBuffer, clients)
		errs := make([]error, clients)
		for i := range clients {
			wg.Go(func() {
				cfg := Config{Size: 1000, Count: count, Validate: true, Verbose: true, Stdout: &outs[i], Stderr: &outs[i]}
				errs[i] = Client(ctx, f.open(t), l.Addr().String(), cfg)
			})
		}
		wg.Wait()
		for i := range clients {
			if errs[i] != nil {
				t.Errorf("client %d: %v\n%s", i, errs[i], clip(outs[i].String()))
				continue
			}
			wantPings(t, outs[i].String(), "ping data: ", count, 1000)
		}
		// The server is still there for a fourth client.
		if err := Client(ctx, f.open(t), l.Addr().String(), Config{Size: 1000, Count: 1, Validate: true}); err != nil {
			t.Errorf("client after the first three: %v", err)
		}
		// Every connection ends on the server's side, too.
		waitFor(t, func() bool { return strings.Count(sout.String(), "server DISCONNECT EVENT...") == clients+1 })
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("ServePersistent ended with %v, want context.Canceled", err)
		}
		if n := strings.Count(sout.String(), "server ping data: "); n != clients*count+1 {
			t.Errorf("server printed %d pings, want %d", n, clients*count+1)
		}
	})
}

// A persistent server interrupted while connections are up ends them and
// returns.
func TestPersistentServerStopsLiveConnections(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		checkLeaks(t)
		ctx, stop := context.WithCancel(testContext(t))
		defer stop()
		sdev, l := f.listen(t)
		done := make(chan error, 1)
		go func() { done <- ServePersistent(ctx, sdev, l, Config{Size: DefaultSize}) }()
		// A client pinging forever, stopped only by the server going away.
		var out testutil.LockedBuffer
		cli := make(chan error, 1)
		go func() {
			cli <- Client(t.Context(), f.open(t), l.Addr().String(), Config{Size: DefaultSize, Verbose: true, Stdout: &out})
		}()
		waitFor(t, func() bool { return strings.Count(out.String(), "ping data") >= 5 })
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("ServePersistent: %v", err)
		}
		if err := <-cli; err != nil {
			t.Errorf("client with -C 0 whose server went away: %v, want nil (rping's behaviour)", err)
		}
	})
}

func TestBadSize(t *testing.T) {
	checkLeaks(t)
	f := memFabric()
	sdev, l := f.listen(t)
	for _, size := range []int{0, MinSize - 1, MaxSize + 1, -5} {
		want := fmt.Sprintf("Invalid size %d (valid range is 26 to 65535)", size)
		if err := Client(t.Context(), f.open(t), l.Addr().String(), Config{Size: size}); err == nil || err.Error() != want {
			t.Errorf("Client with size %d: %v, want %q", size, err, want)
		}
		if err := Serve(t.Context(), sdev, l, Config{Size: size}); err == nil || err.Error() != want {
			t.Errorf("Serve with size %d: %v, want %q", size, err, want)
		}
	}
	if err := Client(t.Context(), f.open(t), l.Addr().String(), Config{Size: 64, Count: -1}); err == nil || err.Error() != "Invalid count -1" {
		t.Errorf("Client with count -1: %v", err)
	}
}

func TestConnectRefused(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		checkLeaks(t)
		_, l := f.listen(t)
		addr := l.Addr().String()
		l.Close() // nobody listens there any more
		err := Client(testContext(t), f.open(t), addr, Config{Size: DefaultSize, Count: 1})
		var ce *ConnectError
		if !errors.As(err, &ce) || ce.Event != verbs.ConnEventRejected || ce.Status != -111 {
			t.Fatalf("connect to a closed port: %v, want a REJECTED ConnectError", err)
		}
		if want := "cma event RDMA_CM_EVENT_REJECTED, error -111 (connect to " + addr; !strings.HasPrefix(err.Error(), want) {
			t.Errorf("error %q does not start with %q", err, want)
		}
	})
}

func TestClientDifferentSizes(t *testing.T) {
	forEachFabric(t, func(t *testing.T, f fabric) {
		checkLeaks(t)
		ctx := testContext(t)
		sdev, l := f.listen(t)
		done := make(chan error, 1)
		go func() { done <- Serve(ctx, sdev, l, Config{Size: 64}) }()
		err := Client(ctx, f.open(t), l.Addr().String(), Config{Size: 100, Count: 1})
		srvErr := <-done
		if srvErr == nil || !strings.Contains(srvErr.Error(), "client's size 100 exceeds this server's size 64") {
			t.Errorf("server: %v", srvErr)
		}
		if err == nil || !errors.Is(err, ErrDisconnected) {
			t.Errorf("client: %v, want a disconnect", err)
		}
	})
}

// clip shortens output for failure messages: pings of 64 KiB are long.
func clip(s string) string {
	const max = 2000
	if len(s) <= max {
		return s
	}
	return s[:max/2] + "\n[...]\n" + s[len(s)-max/2:]
}
