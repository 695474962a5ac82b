package dattest

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/verbs/verbstest"
)

// resetRelay is a TCP relay between two soft-iWARP IAs, so that a test
// can reset the connection under a connected EP pair: its reset closes
// both legs with SO_LINGER 0, and each IA's socket receives a RST.
type resetRelay struct {
	t    testing.TB
	ln   *net.TCPListener
	wg   sync.WaitGroup
	mu   sync.Mutex
	legs []*net.TCPConn
}

// newResetRelay listens on addr (port 0: any) and relays the one
// connection it accepts to upstream.
func newResetRelay(t testing.TB, addr, upstream netip.AddrPort) *resetRelay {
	t.Helper()
	ln, err := net.ListenTCP("tcp", net.TCPAddrFromAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	r := &resetRelay{t: t, ln: ln}
	r.wg.Add(1)
	go r.serve(upstream)
	t.Cleanup(r.reset)
	return r
}

// qual is the relay's port, the qualifier the client connects to.
func (r *resetRelay) qual() dat.ConnQual {
	return dat.ConnQual(r.ln.Addr().(*net.TCPAddr).Port)
}

func (r *resetRelay) serve(upstream netip.AddrPort) {
	defer r.wg.Done()
	down, err := r.ln.AcceptTCP()
	if err != nil {
		return // reset before a client came
	}
	up, err := net.DialTCP("tcp", nil, net.TCPAddrFromAddrPort(upstream))
	if err != nil {
		r.t.Errorf("relay: dial %v: %v", upstream, err)
		down.Close()
		return
	}
	r.mu.Lock()
	r.legs = append(r.legs, down, up)
	r.mu.Unlock()
	r.wg.Add(2)
	go r.pipe(up, down)
	go r.pipe(down, up)
}

// pipe copies src to dst; an orderly end of src is passed on as a FIN.
func (r *resetRelay) pipe(dst, src *net.TCPConn) {
	defer r.wg.Done()
	if _, err := io.Copy(dst, src); err == nil {
		dst.CloseWrite()
	} else if !errors.Is(err, net.ErrClosed) {
		r.t.Logf("relay: %v", err)
	}
}

// reset aborts both legs (RST to each IA) and waits for the relay's
// goroutines. It may be called more than once.
func (r *resetRelay) reset() {
	r.ln.Close()
	r.mu.Lock()
	for _, c := range r.legs {
		c.SetLinger(0)
		c.Close()
	}
	r.legs = nil
	r.mu.Unlock()
	r.wg.Wait()
}

// TestSiwResetBroken: a TCP reset under connected EPs is a broken
// connection, not a disconnect: each EP reports
// DAT_CONNECTION_EVENT_BROKEN, flushes its posted receive and is
// DISCONNECTED.
func TestSiwResetBroken(t *testing.T) {
	h := siwHarness(t)
	verbstest.CheckLeaks(t)
	a, b := h.Open(t)
	t.Cleanup(func() {
		a.Close(dat.CloseAbrupt)
		b.Close(dat.CloseAbrupt)
	})
	srv, cli := NewSide(t, a, 4096), NewSide(t, b, 4096)
	psp, qual, err := ep.CreatePSPAny(a, srv.EVD, dat.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	defer psp.Free()
	relay := newResetRelay(t, netip.AddrPortFrom(a.Addr(), 0), netip.AddrPortFrom(a.Addr(), uint16(qual)))
	sep, cep := srv.NewEP(t, nil), cli.NewEP(t, nil)
	ConnectEPs(t, srv, cli, sep, cep, relay.qual())
	syncSend(t, srv, cli, sep, cep) // the connection carries data

	for i, s := range []*Side{srv, cli} {
		e := []*ep.EP{sep, cep}[i]
		if err := e.PostRecv([]dat.LMRTriplet{s.Buf.Triplet(0, 64)}, 7, 0); err != nil {
			t.Fatal(err)
		}
	}
	relay.reset()

	for i, s := range []*Side{srv, cli} {
		e := []*ep.EP{sep, cep}[i]
		flushed := false
		for conn := false; !conn || !flushed; {
			ev := Next(t, s.EVD)
			switch {
			case ev.Number == dat.DTOCompletionEvent && ev.DTO.Cookie == 7 && ev.DTO.Status == dat.DTOErrFlushed && !flushed:
				flushed = true
			case ev.Number == dat.ConnectionEventBroken && ev.Conn.EP == dat.Handle(e) && !conn:
				conn = true
			default:
				t.Fatalf("EP %d after the reset: %v %+v, want BROKEN and the receive flushed", i, ev.Number, ev.DTO)
			}
		}
		if st := e.State(); st != dat.EPStateDisconnected {
			t.Errorf("EP %d in %v after the reset, want DISCONNECTED", i, st)
		}
	}
	for _, e := range []*ep.EP{sep, cep} {
		if err := e.Free(); err != nil {
			t.Errorf("ep_free after the reset: %v", err)
		}
	}
}
