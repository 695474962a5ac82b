package rdsoverdat

import (
	"path/filepath"
	"sync"
	"testing"
)

// testDaemons maps the client Stacks of daemonStack to their daemons.
var testDaemons sync.Map

// daemonSide returns the daemon's socket behind a client socket, for
// tests that look inside the core: the daemon's connection whose socket
// is bound where k is.
func daemonSide(k *daemonSocket) *sock {
	return daemonConnOf(k).s.b.(*sock)
}

// daemonConnOf returns the daemon's connection of a bound client
// socket.
func daemonConnOf(k *daemonSocket) *daemonConn {
	v, ok := testDaemons.Load(k.stack)
	if !ok {
		panic("daemon socket of no test daemon")
	}
	d := v.(*Daemon)
	want := k.boundAddr()
	d.mu.Lock()
	defer d.mu.Unlock()
	for dc := range d.conns {
		if dc.s.BoundAddr() == want {
			return dc
		}
	}
	panic("no daemon socket bound at " + want.String())
}

// daemonStack starts a Daemon on a Stack of cfg's transports and returns
// a client Stack of it; cleanup closes the client, the daemon and the
// daemon's Stack, in that order.
func daemonStack(t testing.TB, cfg Config) (*Stack, *Daemon) {
	t.Helper()
	srv := NewStack(cfg)
	d, err := NewDaemon(srv, DaemonConfig{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rdsd.sock")
	ln, err := ListenDaemon(path, 0o600, -1)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- d.Serve(ln) }()
	st := NewStack(Config{Daemon: path})
	testDaemons.Store(st, d)
	st.daemonStack = srv
	t.Cleanup(func() {
		st.Close()
		d.Close()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		srv.Close()
		testDaemons.Delete(st)
	})
	return st, d
}
