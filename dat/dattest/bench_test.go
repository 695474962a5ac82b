package dattest

// Benchmarks of the DAT data path next to the same operation on raw
// verbs, in the same run, over mem and over soft-iWARP on loopback:
//
//	go test ./dat/dattest -run '^$' -bench . -benchmem
//
// Each iteration posts one DTO and waits for its completion (a Send also
// waits for the peer's receive completion and reposts the receive).
// Target: DAT costs at most 10% over verbs and allocates nothing. The
// "dat" rows wait with EVD.WaitInto, which writes the caller's Event as
// dat_evd_wait does; "dat-by-value" with EVD.Wait, which returns it.

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

const benchBuf = 1 << 20

var benchSizes = []struct {
	name string
	n    int
}{{"64B", 64}, {"4KiB", 4 << 10}, {"1MiB", 1 << 20}}

var benchOps = []string{"send", "write", "read"}

type benchProvider struct {
	name   string
	iaName string
	verbs  func() verbs.Provider
	dev    string
	addr   string
}

var benchProviders = []benchProvider{
	{"mem", "mem", func() verbs.Provider { return mem.New() }, mem.DeviceName, "127.0.0.1:0"},
	{"siw", "siw-lo", func() verbs.Provider { return siw.New(siw.Options{}) }, "siw_lo", "127.0.0.1:0"},
}

func BenchmarkDTO(b *testing.B) {
	for _, p := range benchProviders {
		b.Run(p.name, func(b *testing.B) {
			for _, op := range benchOps {
				b.Run(op, func(b *testing.B) {
					for _, s := range benchSizes {
						b.Run(s.name, func(b *testing.B) {
							b.Run("verbs", func(b *testing.B) { benchVerbs(b, p, op, s.n) })
							b.Run("dat", func(b *testing.B) { benchDAT(b, p, op, s.n, false) })
							b.Run("dat-by-value", func(b *testing.B) { benchDAT(b, p, op, s.n, true) })
						})
					}
				})
			}
		})
	}
}

func benchVerbs(b *testing.B, p benchProvider, op string, n int) {
	runIter(b, n, verbsIter(b, p, op, n))
}

// runIter runs iter b.N times and reports its CPU time per iteration;
// the setup before it and the teardown after it are not measured.
func runIter(b *testing.B, n int, iter func()) {
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	cpu := startCPU()
	for i := 0; i < b.N; i++ {
		iter()
	}
	b.StopTimer()
	cpu.report(b)
}

// verbsIter sets up the verbs pair of a row and returns one iteration;
// the devices close when the benchmark ends.
func verbsIter(b *testing.B, p benchProvider, op string, n int) func() {
	prov := p.verbs()
	da, err := prov.Open(p.dev)
	if err != nil {
		b.Skip(err)
	}
	db, _ := prov.Open(p.dev)
	b.Cleanup(func() { db.Close(); da.Close() })
	srv, cli := verbstest.ConnectPair(b, da, db, p.addr, verbstest.PairAttr{BufSize: benchBuf, SignalAll: true,
		Connect: verbs.ConnParam{ResponderResources: 4, InitiatorDepth: 4}, Accept: verbs.ConnParam{ResponderResources: 4, InitiatorDepth: 4}})
	ctx := context.Background()
	var wc [1]verbs.WC
	wait := func(cq verbs.CQ) {
		for cq.Poll(wc[:]) == 0 {
			if err := cq.Wait(ctx, false); err != nil {
				b.Fatal(err)
			}
		}
		if wc[0].Status != verbs.WCSuccess {
			b.Fatalf("wc %+v", wc[0])
		}
	}
	rwr := []verbs.RecvWR{{ID: 1, SGL: []verbs.SGE{srv.Buf.SGE(0, n)}}}
	swr := []verbs.SendWR{{ID: 2, SGL: []verbs.SGE{cli.Buf.SGE(0, n)}}}
	switch op {
	case "send":
		swr[0].Opcode = verbs.OpSend
	case "write":
		swr[0].Opcode, swr[0].RemoteAddr, swr[0].RKey = verbs.OpRDMAWrite, srv.Buf.Addr(0), srv.Buf.RKey()
	case "read":
		swr[0].Opcode, swr[0].RemoteAddr, swr[0].RKey = verbs.OpRDMARead, srv.Buf.Addr(0), srv.Buf.RKey()
	}
	return func() {
		if op == "send" {
			if _, err := srv.QP.PostRecv(rwr); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := cli.QP.PostSend(swr); err != nil {
			b.Fatal(err)
		}
		wait(cli.CQ)
		if op == "send" {
			wait(srv.CQ)
		}
	}
}

// benchDAT measures DAT; byValue waits with EVD.Wait, which returns the
// 256-byte Event by value, instead of WaitInto.
func benchDAT(b *testing.B, p benchProvider, op string, n int, byValue bool) {
	runIter(b, n, datIter(b, p, op, n, byValue))
}

// datIter sets up the DAT pair of a row and returns one iteration; the
// IAs close when the benchmark ends.
func datIter(b *testing.B, p benchProvider, op string, n int, byValue bool) func() {
	reg, _ := providers.New(providers.Options{})
	a, err := ia.OpenIn(reg, p.iaName, 0)
	if err != nil {
		b.Skip(err)
	}
	c, _ := ia.OpenIn(reg, p.iaName, 0)
	b.Cleanup(func() { c.Close(dat.CloseAbrupt); a.Close(dat.CloseAbrupt) })
	srv, cli := NewSide(b, a, benchBuf), NewSide(b, c, benchBuf)
	sep, cep := Connect(b, srv, cli, nil)
	ctx := context.Background()
	var ev dat.Event
	wait := func(e *evd.EVD) {
		var err error
		if byValue {
			ev, _, err = e.Wait(ctx, 1)
		} else {
			_, err = e.WaitInto(ctx, 1, &ev)
		}
		if err != nil || ev.DTO.Status != dat.DTOSuccess {
			b.Fatalf("%v %+v", err, ev)
		}
	}
	riov := []dat.LMRTriplet{srv.Buf.Triplet(0, n)}
	iov := []dat.LMRTriplet{cli.Buf.Triplet(0, n)}
	remote := srv.Buf.RMRTriplet(0, n)
	// The post is picked once, as verbsIter builds its work request once:
	// neither side's iteration looks at op but to wait for a receive.
	post := func() error { return cep.PostRDMARead(iov, 2, remote, dat.CompletionDefault) }
	switch op {
	case "send":
		post = func() error { return cep.PostSend(iov, 2, dat.CompletionDefault) }
	case "write":
		post = func() error { return cep.PostRDMAWrite(iov, 2, remote, dat.CompletionDefault) }
	}
	return func() {
		if op == "send" {
			if err := sep.PostRecv(riov, 1, dat.CompletionDefault); err != nil {
				b.Fatal(err)
			}
		}
		if err := post(); err != nil {
			b.Fatal(err)
		}
		wait(cli.EVD)
		if op == "send" {
			wait(srv.EVD)
		}
	}
}

// cpuClock is the process's CPU time (user and system) when a benchmark
// loop started. On a loaded machine the wall clock of ns/op counts the
// time the benchmark waited for a core; cpu-ns/op counts only what the
// process ran, every goroutine of it, and leaves out the setup and the
// teardown that an outside measurement of the whole run includes.
type cpuClock time.Duration

func startCPU() cpuClock { return cpuClock(processCPU()) }

func (c cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(processCPU()-time.Duration(c))/float64(b.N), "cpu-ns/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestHotPathAllocs guards the zero-allocation promise of posting and
// dequeuing: a Send, its receive and both completions, over mem.
func TestHotPathAllocs(t *testing.T) {
	srv, cli, sep, cep := memPair(t)
	riov := []dat.LMRTriplet{srv.Buf.Triplet(0, 64)}
	iov := []dat.LMRTriplet{cli.Buf.Triplet(0, 64)}
	remote := srv.Buf.RMRTriplet(1024, 64)
	var ev dat.Event
	n := testing.AllocsPerRun(200, func() {
		if err := sep.PostRecv(riov, 1, 0); err != nil {
			t.Fatal(err)
		}
		if err := cep.PostSend(iov, 2, 0); err != nil {
			t.Fatal(err)
		}
		if err := cep.PostRDMAWrite(iov, 3, remote, 0); err != nil {
			t.Fatal(err)
		}
		if err := cep.PostRDMARead(iov, 4, remote, dat.CompletionSuppress); err != nil {
			t.Fatal(err)
		}
		for k := 0; k < 2; k++ {
			if _, err := cli.EVD.Dequeue(); err != nil {
				t.Fatal(err)
			}
		}
		if err := srv.EVD.DequeueInto(&ev); err != nil || ev.DTO.Cookie != 1 {
			t.Fatal(err, ev.DTO)
		}
		if _, err := cli.EVD.Dequeue(); err == nil {
			t.Fatal("suppressed read produced an event")
		}
	})
	if n != 0 {
		t.Fatalf("post and dequeue allocate %v times per round", n)
	}
}

// memPair connects two sides with 4 KiB buffers, each on its own IA of
// one mem provider; the IAs close when the test ends.
func memPair(t testing.TB) (srv, cli *Side, sep, cep *ep.EP) {
	t.Helper()
	ias := OpenMem(t, 2)
	srv, cli = NewSide(t, ias[0], 4096), NewSide(t, ias[1], 4096)
	sep, cep = Connect(t, srv, cli, nil)
	return srv, cli, sep, cep
}
