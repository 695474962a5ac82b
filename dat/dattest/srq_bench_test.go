package dattest

// SRQ receive path against a per-EP receive queue, same run, same EVDs:
//
//	go test ./dat/dattest -run '^$' -bench SRQ -benchmem
//
// Each iteration posts one receive (to the SRQ, or to the EP), one Send
// from the peer, and waits for both completions. Target: the SRQ path
// within 10% of the EP's and 0 allocs/op.

import (
	"context"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/dat/srq"
)

func BenchmarkSRQRecv(b *testing.B) {
	for _, p := range benchProviders {
		b.Run(p.name, func(b *testing.B) {
			for _, s := range []struct {
				name string
				n    int
			}{{"64B", 64}, {"4KiB", 4 << 10}} {
				b.Run(s.name, func(b *testing.B) {
					b.Run("ep", func(b *testing.B) { benchSRQRecv(b, p.iaName, false, s.n) })
					b.Run("srq", func(b *testing.B) { benchSRQRecv(b, p.iaName, true, s.n) })
				})
			}
		})
	}
}

// srqRound is one iteration: post a receive, send, reap both.
type srqRound struct {
	r    *SRQRig
	srq  bool
	riov []dat.LMRTriplet
	siov []dat.LMRTriplet
	ctx  context.Context
}

func newSRQRound(tb testing.TB, name string, useSRQ bool, n int) (*srqRound, func()) {
	reg, _ := providers.New(providers.Options{})
	a, err := ia.OpenIn(reg, name, 0)
	if err != nil {
		tb.Skip(err)
	}
	c, _ := ia.OpenIn(reg, name, 0)
	r := NewSRQRig(tb, a, c, SRQRigAttr{SRQ: srq.Attr{MaxRecvDTOs: 64}, BufSize: 64 << 10})
	if useSRQ {
		r.Connect(tb, &dat.EPAttr{})
	} else {
		r.ConnectPlain(tb, nil)
	}
	x := &srqRound{r: r, srq: useSRQ, riov: []dat.LMRTriplet{r.Srv.Buf.Triplet(0, n)}, siov: []dat.LMRTriplet{r.Cli.Buf.Triplet(0, n)}, ctx: context.Background()}
	return x, func() { a.Close(dat.CloseAbrupt); c.Close(dat.CloseAbrupt) }
}

func (x *srqRound) run(tb testing.TB) {
	var err error
	if x.srq {
		err = x.r.SRQ.PostRecv(x.riov, 1)
	} else {
		err = x.r.Conns[0].Srv.PostRecv(x.riov, 1, dat.CompletionDefault)
	}
	if err != nil {
		tb.Fatal(err)
	}
	if err := x.r.Conns[0].Cli.PostSend(x.siov, 2, dat.CompletionDefault); err != nil {
		tb.Fatal(err)
	}
	if ev, _, err := x.r.CliReq.Wait(x.ctx, 1); err != nil || ev.DTO.Status != dat.DTOSuccess {
		tb.Fatalf("send: %v %+v", err, ev.DTO)
	}
	if ev, _, err := x.r.RecvEVDs[0].Wait(x.ctx, 1); err != nil || ev.DTO.Status != dat.DTOSuccess || ev.DTO.Cookie != 1 {
		tb.Fatalf("receive: %v %+v", err, ev.DTO)
	}
}

func benchSRQRecv(b *testing.B, name string, useSRQ bool, n int) {
	x, done := newSRQRound(b, name, useSRQ, n)
	defer done()
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x.run(b)
	}
	b.StopTimer()
}

// TestSRQHotPathAllocs guards the zero-allocation promise of the SRQ path:
// srq_post_recv, the Send, and both completions, over mem.
func TestSRQHotPathAllocs(t *testing.T) {
	x, done := newSRQRound(t, "mem", true, 64)
	defer done()
	x.run(t)
	if n := testing.AllocsPerRun(200, func() { x.run(t) }); n != 0 {
		t.Fatalf("SRQ post and completion allocate %v times per round", n)
	}
	// Refused posts allocate nothing either: the SRQ full, and a freed SRQ.
	for i := 0; i < 64; i++ {
		x.r.SRQ.PostRecv(nil, 3)
	}
	if n := testing.AllocsPerRun(100, func() {
		if x.r.SRQ.PostRecv(nil, 3) == nil {
			t.Fatal("post to a full SRQ succeeded")
		}
	}); n != 0 {
		t.Fatalf("refused post allocates %v times", n)
	}
}
