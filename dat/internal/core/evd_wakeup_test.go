package core_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/internal/core"
)

// waiterCtxs are the contexts a waiter may wait with: one that cannot
// end, and one with a deadline, which the EVD watches (watchWaiterCtxLocked)
// and passes on to the provider (directCtx). Both block in CQ.Wait itself.
var waiterCtxs = []struct {
	name string
	ctx  func() (context.Context, context.CancelFunc)
}{
	{"background", func() (context.Context, context.CancelFunc) { return context.Background(), func() {} }},
	{"deadline", func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Minute)
	}},
}

// A drain of the EVD's CQ by someone other than its waiter empties the
// CQ the waiter sleeps on; the completions it moved into the ring must
// still wake the waiter. The waiter blocks in CQ.Wait itself (with each
// of waiterCtxs), the CQ fills, a third party drains it before the
// waiter's CQ.Wait looks, and the waiter must return the first
// completion. Before the fix the
// waiter slept on with four events queued: the dat transport of
// rdsoverdat hung on the mem provider when its poster found a request
// queue full.
func TestEVDWaiterWokenByForeignDrain(t *testing.T) {
	drains := []struct {
		name string
		// drain is called with four completions in req's CQ; it must
		// move them into the EVD's ring.
		drain func(t *testing.T, req *evd.EVD, cli *dattest.Side, cep *ep.EP)
	}{
		{"full request queue", func(t *testing.T, req *evd.EVD, cli *dattest.Side, cep *ep.EP) {
			// The fifth Send finds the four slots taken and reads the
			// queue's head, which drains the CQ: the slots stay held by
			// the events now in the ring, so the post is refused, and the
			// poster (rdsoverdat's, say) waits for the waiter to hand
			// them out.
			err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, 5, dat.CompletionDefault)
			dattest.WantErr(t, err, dat.InsufficientResources, dat.NoSubtype)
		}},
		{"evd_resize", func(t *testing.T, req *evd.EVD, cli *dattest.Side, cep *ep.EP) {
			if err := req.Resize(64); err != nil {
				t.Fatalf("evd_resize: %v", err)
			}
		}},
	}
	for _, d := range drains {
		for _, w := range waiterCtxs {
			// In a bubble: synctest.Wait stands for "the sends have
			// completed", and a waiter that sleeps on is a deadlock that
			// synctest reports at once, or a wait past its deadline.
			t.Run(d.name+"/"+w.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					srv, cli, req, sep, cep := wakeupPair(t)
					for i := 0; i < 5; i++ {
						if err := sep.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(0, 64)}, dat.DTOCookie(100+i), dat.CompletionDefault); err != nil {
							t.Fatal(err)
						}
					}
					entered, release := core.GateCQWait((*core.EVD)(req))
					ctx, cancel := w.ctx()
					defer cancel()
					type result struct {
						ev  dat.Event
						err error
					}
					done := make(chan result, 1)
					go func() {
						ev, _, err := req.Wait(ctx, 1)
						done <- result{ev, err}
					}()
					<-entered
					for i := 1; i <= 4; i++ {
						if err := cep.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(0, 8)}, dat.DTOCookie(i), dat.CompletionDefault); err != nil {
							t.Fatalf("send %d: %v", i, err)
						}
					}
					settledCQLen(t, req, 4)
					d.drain(t, req, cli, cep)
					release()
					r := <-done
					if r.err != nil || r.ev.Number != dat.DTOCompletionEvent || r.ev.DTO.Cookie != 1 {
						t.Fatalf("evd_wait: %v %v cookie %d, want the first send", r.err, r.ev.Number, r.ev.DTO.Cookie)
					}
					for i := 2; i <= 4; i++ {
						dattest.ExpectDTO(t, req, dat.DTOCookie(i), dat.DTOSuccess)
					}
					dattest.ExpectEmpty(t, req)
				})
			})
		}
	}
}

// wakeupPair connects two mem sides. The client's EP has four request
// slots and completes them to req, an EVD of its own that nobody has
// waited on yet (so its CQ watch sleeps on nothing and the gate sees the
// first CQ.Wait).
func wakeupPair(t *testing.T) (srv, cli *dattest.Side, req *evd.EVD, sep, cep *ep.EP) {
	t.Helper()
	ias := dattest.OpenMem(t, 2)
	srv, cli = dattest.NewSide(t, ias[0], 4096), dattest.NewSide(t, ias[1], 4096)
	var err error
	if req, err = evd.Create(cli.IA, 64, nil, dat.EVDDTO); err != nil {
		t.Fatal(err)
	}
	attr := &dat.EPAttr{MaxRequestDTOs: 4, MaxRecvDTOs: 8}
	sep = srv.NewEP(t, attr)
	if cep, err = ep.Create(cli.IA, cli.PZ, cli.EVD, req, cli.EVD, attr); err != nil {
		t.Fatal(err)
	}
	psp, qual, err := ep.CreatePSPAny(srv.IA, srv.EVD, dat.PSPConsumer)
	if err != nil {
		t.Fatal(err)
	}
	defer psp.Free()
	dattest.ConnectEPs(t, srv, cli, sep, cep, qual)
	return srv, cli, req, sep, cep
}

// settledCQLen checks, in a synctest bubble, that e holds n events once
// every goroutine of the bubble has blocked: the completions posted so far
// have all been generated.
func settledCQLen(t *testing.T, e *evd.EVD, n int) {
	t.Helper()
	synctest.Wait()
	if got := (*core.EVD)(e).Len(); got != n {
		t.Fatalf("the CQ holds %d completions once the bubble has settled, want %d", got, n)
	}
}
