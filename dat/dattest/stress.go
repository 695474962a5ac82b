package dattest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/verbs/verbstest"
)

var limitTests = []testCase{
	{"EPs", func(t *testing.T, e *env) {
		n := 200
		if e.h.Short {
			n = 50
		}
		s := NewSide(t, e.a, 0)
		eps := make([]*ep.EP, 0, n)
		for i := 0; i < n; i++ {
			eps = append(eps, s.NewEP(t, &dat.EPAttr{MaxRecvDTOs: 4, MaxRequestDTOs: 4}))
		}
		for _, x := range eps {
			if err := x.Free(); err != nil {
				t.Fatal(err)
			}
		}
	}},
	{"EVDQLen", func(t *testing.T, e *env) {
		a, _, _ := e.a.Query()
		_, err := evd.Create(e.a, a.MaxEVDQLen+1, nil, dat.EVDDTO)
		WantErr(t, err, dat.InvalidParameter, dat.NoSubtype)
		x, err := evd.Create(e.a, 1<<16, nil, dat.EVDDTO)
		if err != nil {
			t.Fatal(err)
		}
		x.Free()
	}},
	{"RecvPost", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 4096)
		x := s.NewEP(t, &dat.EPAttr{MaxRecvDTOs: 16})
		n := 0
		for ; n < 100; n++ {
			if err := x.PostRecv([]dat.LMRTriplet{s.Buf.Triplet(0, 4096)}, dat.DTOCookie(n), 0); err != nil {
				WantErr(t, err, dat.InsufficientResources, dat.NoSubtype)
				break
			}
		}
		if n != 16 {
			t.Fatalf("posted %d receives, want 16", n)
		}
	}},
	{"LMRSize", func(t *testing.T, e *env) {
		s := NewSide(t, e.a, 0)
		l, err := lmr.Alloc(e.a, s.PZ, 64<<20, dat.MemPrivAll)
		if err != nil {
			t.Fatal(err)
		}
		l.Free()
		var ls []*lmr.LMR
		for i := 0; i < 256; i++ {
			l, err := lmr.Create(e.a, s.PZ, make([]byte, 4096), dat.MemPrivAll, dat.VATypeVA)
			if err != nil {
				t.Fatal(err)
			}
			ls = append(ls, l)
		}
		for _, l := range ls {
			l.Free()
		}
	}},
}

var stressTests = []testCase{
	{"ConnectionStorm", func(t *testing.T, e *env) {
		rounds, width := 10, 8
		if e.h.Short {
			rounds, width = 3, 4
		}
		srv, cli := NewSide(t, e.a, 0), NewSide(t, e.b, 0)
		psp, qual, err := ep.CreatePSPAny(e.a, srv.EVD, dat.PSPConsumer)
		if err != nil {
			t.Fatal(err)
		}
		defer psp.Free()
		for r := 0; r < rounds; r++ {
			ceps := make([]*ep.EP, width)
			for i := range ceps {
				ceps[i] = cli.NewEP(t, nil)
				if err := ceps[i].Connect(e.a.Addr(), qual, DefaultTimeout, []byte{byte(i)}, 0, 0); err != nil {
					t.Fatal(err)
				}
			}
			var seps []*ep.EP
			srvEst := 0
			for len(seps) < width || srvEst < width {
				ev := Next(t, srv.EVD)
				switch ev.Number {
				case dat.ConnectionRequestEvent:
					sep := srv.NewEP(t, nil)
					if err := ev.CR.CR.(*ep.CR).Accept(sep, nil); err != nil {
						t.Fatal(err)
					}
					seps = append(seps, sep)
				case dat.ConnectionEventEstablished:
					srvEst++
				default:
					t.Fatalf("server event %v", ev.Number)
				}
			}
			for i := 0; i < width; i++ {
				Expect(t, cli.EVD, dat.ConnectionEventEstablished)
			}
			for i, c := range ceps {
				flags := dat.CloseGraceful
				if i%2 == 1 {
					flags = dat.CloseAbrupt
				}
				c.Disconnect(flags)
			}
			for i := 0; i < width; i++ {
				waitConn(t, cli.EVD, dat.ConnectionEventDisconnected)
				waitConn(t, srv.EVD, dat.ConnectionEventDisconnected)
			}
			for i := range ceps {
				if err := ceps[i].Free(); err != nil {
					t.Fatal(err)
				}
				if err := seps[i].Free(); err != nil {
					t.Fatal(err)
				}
			}
		}
		ExpectEmpty(t, evd.Async(e.a))
		ExpectEmpty(t, evd.Async(e.b))
	}},
	{"Transactions", func(t *testing.T, e *env) {
		threads, eps, iters := 4, 4, 200
		if e.h.Short {
			threads, eps, iters = 2, 2, 30
		}
		var wg sync.WaitGroup
		errs := make(chan error, threads)
		for th := 0; th < threads; th++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := transaction(t, e, th, eps, iters); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}},
}

// transaction is one dapltest transaction thread: eps connections, each
// iteration running SR (both ways), RW and RR with data validation on
// every EP.
func transaction(t *testing.T, e *env, th, eps, iters int) error {
	const seg = 4096
	srv, cli := NewSide(t, e.a, eps*4*seg), NewSide(t, e.b, eps*4*seg)
	type pair struct{ s, c *ep.EP }
	ps := make([]pair, eps)
	for i := range ps {
		ps[i].s, ps[i].c = Connect(t, srv, cli, nil)
	}
	// Per EP, 4 segments on each side: 0 recv, 1 send, 2 RDMA target/source, 3 RDMA sink.
	off := func(i, k int) int { return (i*4 + k) * seg }
	for it := 0; it < iters; it++ {
		for i, p := range ps {
			seed := uint64(th<<24 | it<<8 | i)
			// SR client -> server.
			p.s.PostRecv([]dat.LMRTriplet{srv.Buf.Triplet(off(i, 0), seg)}, dat.DTOCookie(seed), 0)
			verbstest.Fill(cli.Buf.Bytes()[off(i, 1):off(i, 2)], seed)
			if err := p.c.PostSend([]dat.LMRTriplet{cli.Buf.Triplet(off(i, 1), seg)}, dat.DTOCookie(seed), dat.CompletionSuppress); err != nil {
				return err
			}
			if d := nextDTO(t, srv.EVD); d.Cookie != dat.DTOCookie(seed) || d.Status != dat.DTOSuccess || d.Length != seg {
				return fmt.Errorf("thread %d it %d ep %d: recv %+v", th, it, i, d)
			}
			if !bytes.Equal(srv.Buf.Bytes()[off(i, 0):off(i, 1)], cli.Buf.Bytes()[off(i, 1):off(i, 2)]) {
				return fmt.Errorf("thread %d it %d ep %d: SR data", th, it, i)
			}
			// RW: client writes its segment 2 into the server's segment 2.
			verbstest.Fill(cli.Buf.Bytes()[off(i, 2):off(i, 3)], seed+1)
			p.c.PostRDMAWrite([]dat.LMRTriplet{cli.Buf.Triplet(off(i, 2), seg)}, 1, srv.Buf.RMRTriplet(off(i, 2), seg), 0)
			if d := nextDTO(t, cli.EVD); d.Status != dat.DTOSuccess || d.Op != dat.DTORDMAWrite {
				return fmt.Errorf("RW %+v", d)
			}
			// RR: client reads the server's segment 2 back into its segment 3.
			p.c.PostRDMARead([]dat.LMRTriplet{cli.Buf.Triplet(off(i, 3), seg)}, 2, srv.Buf.RMRTriplet(off(i, 2), seg), 0)
			if d := nextDTO(t, cli.EVD); d.Status != dat.DTOSuccess || d.Op != dat.DTORDMARead || d.Length != seg {
				return fmt.Errorf("RR %+v", d)
			}
			if !bytes.Equal(cli.Buf.Bytes()[off(i, 3):off(i, 3)+seg], cli.Buf.Bytes()[off(i, 2):off(i, 3)]) {
				return fmt.Errorf("thread %d it %d ep %d: RW/RR data", th, it, i)
			}
			// SR server -> client.
			p.c.PostRecv([]dat.LMRTriplet{cli.Buf.Triplet(off(i, 0), 64)}, 3, 0)
			p.s.PostSend([]dat.LMRTriplet{srv.Buf.Triplet(off(i, 1), 64)}, 4, 0)
			if d := nextDTO(t, srv.EVD); d.Cookie != 4 || d.Status != dat.DTOSuccess {
				return fmt.Errorf("server send %+v", d)
			}
			if d := nextDTO(t, cli.EVD); d.Cookie != 3 || d.Status != dat.DTOSuccess {
				return fmt.Errorf("client recv %+v", d)
			}
		}
	}
	for _, p := range ps {
		Disconnect(t, srv, cli, p.s, p.c)
	}
	return nil
}

// nextDTO waits for the next DTO completion (goroutine-safe: no Fatal).
func nextDTO(t testing.TB, e *evd.EVD) dat.DTOCompletion {
	ctx, cancel := deadline()
	defer cancel()
	ev, _, err := e.Wait(ctx, 1)
	if err != nil {
		return dat.DTOCompletion{Status: 255}
	}
	return ev.DTO
}
