package faults

// DAT endpoints over soft-iWARP whose TCP connection is reset from outside
// mid-stream (ss -K): both EPs must report CONNECTION_EVENT_BROKEN, every
// DTO still posted must complete with DAT_DTO_ERR_FLUSHED, new posts must
// fail, and tearing everything down must leave no goroutine behind.

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/tests/internal/netns"
	"github.com/godapl/godapl/verbs/verbstest"
)

// siwPair opens two IAs on the soft-iWARP loopback device of this
// process's namespace.
func siwPair(t *testing.T) (*ia.IA, *ia.IA) {
	t.Helper()
	reg, err := providers.New(providers.Options{})
	if err != nil {
		t.Skipf("no interfaces: %v", err)
	}
	var ias [2]*ia.IA
	for i := range ias {
		if ias[i], err = ia.OpenIn(reg, "siw-lo", 0); err != nil {
			t.Skipf("siw-lo: %v", err)
		}
		a := ias[i]
		t.Cleanup(func() { a.Close(dat.CloseAbrupt) })
	}
	return ias[0], ias[1]
}

func TestDATConnResetFlushes(t *testing.T) {
	netns.Require(t) // ss -K needs CAP_NET_ADMIN
	verbstest.CheckLeaks(t)
	a, b := siwPair(t)
	const msg, window = 1024, 32
	srv, cli := dattest.NewSide(t, a, 2*window*msg), dattest.NewSide(t, b, 2*window*msg)
	psp, qual, err := ep.CreatePSPAny(a, srv.EVD, dat.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	sep, cep := srv.NewEP(t, nil), cli.NewEP(t, nil)
	dattest.ConnectEPs(t, srv, cli, sep, cep, qual)
	psp.Free()

	// Stream: the server keeps window receives posted, the client sends
	// into them, with at most window sends outstanding.
	start := time.Now()
	for i := range window {
		if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(i*msg, msg)}, dat.DTOCookie(i), 0); err != nil {
			t.Fatal(err)
		}
	}
	total := scale(2000, 50000)
	var sent, received, flushedSrv, flushedCli, otherErr atomic.Int64
	next := func(e *evd.EVD) dat.Event {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ev, _, err := e.Wait(ctx, 1)
		if err != nil {
			t.Fatalf("evd_wait: %v (sent %d received %d)", err, sent.Load(), received.Load())
		}
		return ev
	}
	// Credits: a send may go out only while the server has a receive
	// posted for it (iWARP has no RNR retry; a send into nothing breaks
	// the stream), so posted sends stay below received + window.
	reap := func(e *evd.EVD, name string, n *atomic.Int64, block bool) bool {
		var ev dat.Event
		if block {
			ev = next(e)
		} else {
			var err error
			if ev, err = e.Dequeue(); err != nil {
				return false
			}
		}
		if ev.Number != dat.DTOCompletionEvent || ev.DTO.Status != dat.DTOSuccess {
			t.Fatalf("%s: %v %+v", name, ev.Number, ev.DTO)
		}
		n.Add(1)
		if e == srv.EVD {
			slot := int(ev.DTO.Cookie) % window
			if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(slot*msg, msg)}, ev.DTO.Cookie+window, 0); err != nil {
				t.Fatal(err)
			}
		}
		return true
	}
	// The client's request queue (64 by default) bounds posted sends by
	// the completions reaped, which may lag what the server received.
	for posted := 0; posted < total; {
		switch {
		case int64(posted) >= sent.Load()+window:
			reap(cli.EVD, "client", &sent, true)
		case int64(posted) >= received.Load()+window:
			reap(srv.EVD, "server", &received, true)
		default:
			slot := window + posted%window
			if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(slot*msg, msg)}, dat.DTOCookie(posted), 0); err != nil {
				t.Fatal(err)
			}
			posted++
			for reap(cli.EVD, "client", &sent, false) {
			}
		}
	}
	for received.Load() < int64(total) {
		reap(srv.EVD, "server", &received, true)
	}
	for sent.Load() < int64(total) {
		reap(cli.EVD, "client", &sent, true)
	}
	// The client has receives posted too, which no send will match.
	const cliRecvs = 8
	for i := range cliRecvs {
		if err := cep.PostRecv([]dat.LMRTriplet{cli.Buf.Triplet(i*msg, msg)}, dat.DTOCookie(1e6+i), 0); err != nil {
			t.Fatal(err)
		}
	}

	// The fault: reset the QP's TCP connection from outside.
	port := fmt.Sprint(qual)
	// Only the server's socket (local port = the PSP's qualifier) is
	// destroyed: the client then gets a real RST from the kernel.
	out, err := runHost("ss", "-K", "-t", "-n", "( sport = :"+port+" )")
	if err != nil {
		t.Fatalf("ss -K: %v %s", err, out)
	}

	// Each side: CONNECTION_EVENT_BROKEN (a reset is not an orderly
	// disconnect: the client reads ECONNRESET, the server whose socket
	// was destroyed ECONNABORTED), and every posted receive flushed.
	broken := func(name string, s *dattest.Side, flushed *atomic.Int64, want int64) dat.EventNumber {
		for {
			ev := next(s.EVD)
			switch ev.Number {
			case dat.DTOCompletionEvent:
				if ev.DTO.Status == dat.DTOErrFlushed {
					flushed.Add(1)
				} else {
					otherErr.Add(1)
					t.Errorf("%s: DTO %d completed %v after the reset, want flushed", name, ev.DTO.Cookie, ev.DTO.Status)
				}
			case dat.ConnectionEventBroken:
				// Flushes may follow the event; collect them.
				for flushed.Load() < want {
					ev := next(s.EVD)
					if ev.Number == dat.DTOCompletionEvent && ev.DTO.Status == dat.DTOErrFlushed {
						flushed.Add(1)
					} else {
						t.Errorf("%s: %v %+v while waiting for flushes", name, ev.Number, ev.DTO)
					}
				}
				return ev.Number
			default:
				t.Fatalf("%s: unexpected %v", name, ev.Number)
			}
		}
	}
	evSrv := broken("server", srv, &flushedSrv, window)
	evCli := broken("client", cli, &flushedCli, cliRecvs)
	if flushedSrv.Load() != window || flushedCli.Load() != cliRecvs {
		t.Errorf("flushed: server %d of %d posted, client %d of %d", flushedSrv.Load(), window, flushedCli.Load(), cliRecvs)
	}
	// DAT: a Send posted in DISCONNECTED is accepted and flushed at once.
	if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, msg)}, 7, 0); err == nil {
		if ev := next(cli.EVD); ev.Number != dat.DTOCompletionEvent || ev.DTO.Cookie != 7 || ev.DTO.Status != dat.DTOErrFlushed {
			t.Errorf("post_send after the reset: %v %+v, want flushed", ev.Number, ev.DTO)
		}
	} else {
		dattest.WantErr(t, err, dat.InvalidState, dat.NoSubtype)
	}
	for _, e := range []*ep.EP{sep, cep} {
		if st := e.State(); st != dat.EPStateDisconnected {
			t.Errorf("EP state %v after the reset, want DISCONNECTED", st)
		}
	}
	c := counts{Scenario: "DAT EPs over siw, TCP reset (ss -K)", Sent: uint64(sent.Load()), Received: uint64(received.Load()),
		Canceled: uint64(flushedSrv.Load() + flushedCli.Load()), Duration: time.Since(start),
		Extra: fmt.Sprintf("server-event=%v client-event=%v flushed-server=%d flushed-client=%d other-errors=%d",
			evSrv, evCli, flushedSrv.Load(), flushedCli.Load(), otherErr.Load())}
	t.Log(c)
	if c.Sent != uint64(total) || c.Received != c.Sent {
		t.Errorf("before the reset: %d sent, %d received, want %d each", c.Sent, c.Received, total)
	}
	for _, e := range []*ep.EP{sep, cep} {
		e.Disconnect(dat.CloseAbrupt)
		if err := e.Free(); err != nil {
			t.Errorf("ep_free after the reset: %v", err)
		}
	}
}
