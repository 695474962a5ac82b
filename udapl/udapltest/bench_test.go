//go:build udapl

package udapltest

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/dattest"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
	"github.com/godapl/godapl/dat/providers"
	"github.com/godapl/godapl/internal/testutil"
)

// The benchmarks time one workload through the C provider (a C program
// calling libdat2) and through godapl's Go API in the same run, and
// report the C path's time per operation and its ratio to the Go path's:
// what crossing from C into Go and translating the udat table costs.

var cbins struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// cbin builds a testdata C program (once per run) and returns its path.
func cbin(b testing.TB, name string) string {
	b.Helper()
	cbins.once.Do(func() {
		if cbins.dir, cbins.err = os.MkdirTemp("", "udapltest"); cbins.err != nil {
			return
		}
		cbins.out, cbins.err = exec.Command("cc", "-Wall", "-Werror", "-O2", "-o", filepath.Join(cbins.dir, "dtobench"),
			"testdata/dtobench.c", "-ldat2").CombinedOutput()
	})
	if cbins.err != nil {
		b.Fatalf("cc: %v\n%s", cbins.err, cbins.out)
	}
	return filepath.Join(cbins.dir, name)
}

var nsPerOp = regexp.MustCompile(`ns/op ([0-9.]+) cs/op ([0-9.]+)`)

// cRun runs dtobench and returns what it measured per operation: the
// time and the context switches of its process.
func cRun(b *testing.B, i cIA, args ...string) perOp {
	b.Helper()
	out, err := i.run(b, 5*time.Minute, cbin(b, "dtobench"), append([]string{iaName}, args...)...)
	m := nsPerOp.FindStringSubmatch(out)
	if err != nil || m == nil {
		b.Fatalf("dtobench %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	ns, _ := strconv.ParseFloat(m[1], 64)
	cs, _ := strconv.ParseFloat(m[2], 64)
	return perOp{ns, cs}
}

// perOp is one side's time and context switches per operation. The
// switches are the process's (every thread's sleeps and preemptions):
// for a DTO loop, how often a wait slept and a thread had to be woken.
type perOp struct{ ns, cs float64 }

// switches is the context switches of this process so far.
func switches() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Nvcsw + ru.Nivcsw)
}

// goIA opens an IA of the Go API on siw's device at a loopback address.
func goIA(b testing.TB) *ia.IA {
	b.Helper()
	a := testutil.LoopbackAddr()
	reg, err := dat.NewRegistry(providers.List(providers.Options{}), []dat.Entry{{Name: "bench", Provider: "siw", Device: "siw", Addr: a}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	i, err := ia.OpenIn(reg, "bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { i.Close(dat.CloseAbrupt) })
	return i
}

// report times the Go loop and the C side for b.N operations each, three
// times in turn, and reports the best of each and their ratio: the
// machine's load changes between runs, and alternating with best-of keeps
// it out of the ratio. It also reports each side's context switches per
// operation, from the run with the best time.
func report(b *testing.B, goLoop func(n int), cSide func(n int) perOp) {
	b.ResetTimer()
	g, c := perOp{ns: math.Inf(1)}, perOp{ns: math.Inf(1)}
	for r := 0; r < 3; r++ {
		cs0 := switches()
		start := time.Now()
		goLoop(b.N)
		if ns := float64(time.Since(start).Nanoseconds()) / float64(b.N); ns < g.ns {
			g = perOp{ns, (switches() - cs0) / float64(b.N)}
		}
		b.StopTimer()
		if cr := cSide(b.N); cr.ns < c.ns {
			c = cr
		}
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(g.ns, "go-ns/op")
	b.ReportMetric(c.ns, "c-ns/op")
	b.ReportMetric(c.ns/g.ns, "c/go")
	b.ReportMetric(g.cs, "go-cs/op")
	b.ReportMetric(c.cs, "c-cs/op")
}

// BenchmarkDequeueEmpty is the crossing alone: dat_evd_dequeue on an
// empty EVD (handle lookup, the call into Go, DAT_QUEUE_EMPTY back)
// against evd.DequeueInto.
func BenchmarkDequeueEmpty(b *testing.B) {
	need(b, "cc")
	i := newIA(b)
	g := goIA(b)
	e, err := evd.Create(g, 256, nil, dat.EVDDefault)
	if err != nil {
		b.Fatal(err)
	}
	var ev dat.Event
	report(b, func(n int) {
		for j := 0; j < n; j++ {
			if err := e.DequeueInto(&ev); !errors.Is(err, dat.ErrQueueEmpty) {
				b.Fatal(err)
			}
		}
	}, func(n int) perOp { return cRun(b, i, "dequeue", strconv.Itoa(max(n, 100000))) })
}

// benchWrite is RDMA Writes of size bytes, eight in flight, between two
// connected EPs of one IA, each completion reaped with a wait.
func benchWrite(b *testing.B, size int) {
	need(b, "cc")
	i := newIA(b)
	g := goIA(b)
	srv, cli := dattest.NewSide(b, g, size), dattest.NewSide(b, g, 0)
	dst := srv.Buf
	src, err := lmr.Alloc(g, cli.PZ, size, dat.MemPrivAll)
	if err != nil {
		b.Fatal(err)
	}
	_, cep := dattest.Connect(b, srv, cli, nil)
	iov := []dat.LMRTriplet{src.Triplet(0, size)}
	remote := dst.RMRTriplet(0, size)
	const depth = 8
	var ev dat.Event
	wait := func() {
		if _, err := cli.EVD.WaitInto(context.Background(), 1, &ev); err != nil || ev.DTO.Status != dat.DTOSuccess {
			b.Fatalf("evd_wait: %v %v", err, ev.DTO.Status)
		}
	}
	b.SetBytes(int64(size))
	report(b, func(n int) {
		for j := 0; j < n; j++ {
			if j >= depth {
				wait()
			}
			if err := cep.PostRDMAWrite(iov, dat.DTOCookie(j), remote, dat.CompletionDefault); err != nil {
				b.Fatal(err)
			}
		}
		for j := min(n, depth); j > 0; j-- {
			wait()
		}
	}, func(n int) perOp {
		return cRun(b, i, "write", strconv.Itoa(max(n, 2000)), strconv.Itoa(size), "7001")
	})
}

func BenchmarkRDMAWrite64(b *testing.B)  { benchWrite(b, 64) }
func BenchmarkRDMAWrite64K(b *testing.B) { benchWrite(b, 64<<10) }

// BenchmarkPerfRDMAWrite64K runs dapltest -T P on the C provider and
// godapl's own dattest -T P on the same workload (RDMA Write, one 64 KiB
// segment, eight in flight, each completion reaped with a blocking wait
// and the next Write posted), over siw's device on loopback, and reports
// the median bandwidth of each and the median of the rounds' ratios.
//
// The host's load changes while a run lasts, and one transfer of either
// side scatters by a third on a busy machine: a round is C, Go, Go, C,
// so that a load that rises or falls through the round weighs on both
// sides alike, and its ratio is the C pair's mean over the Go pair's.
// A run is -udapl.rounds rounds whatever b.N (a round lasts seconds).
// Each transfer is perfIters Writes (2 GB, most of a second); dapltest
// then runs its latency phase, which is not in its bandwidth.
func BenchmarkPerfRDMAWrite64K(b *testing.B) {
	need(b, "dapltest")
	i := newIA(b)
	dapltestServer(b, i)
	dattestBin := filepath.Join(b.TempDir(), "dattest")
	if out, err := exec.Command("go", "build", "-o", dattestBin, "github.com/godapl/godapl/cmd/dattest").CombinedOutput(); err != nil {
		b.Fatalf("building dattest: %v\n%s", err, out)
	}
	a := testutil.LoopbackAddr()
	conf := filepath.Join(b.TempDir(), "godapl.conf")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("bench siw siw - %s\n", a)), 0o644); err != nil {
		b.Fatal(err)
	}
	port := startDattest(b, dattestBin, conf)
	// dapltest counts 2^20 bytes in a MB, dattest 10^6.
	cSide := func() float64 { return perf(b, i, perfIters, perfWorkload...) * (1 << 20) / 1e6 }
	goSide := func() float64 { return dattestPerf(b, dattestBin, conf, a, port, perfIters) }
	if *perfBaseLib != "" {
		perfAgainst(b, cSide, goSide, i)
		return
	}
	b.ResetTimer()
	var cMB, goMB, ratios []float64
	for r := range max(*perfRounds, 1) {
		c1, g1, g2, c2 := cSide(), goSide(), goSide(), cSide()
		cMB, goMB = append(cMB, c1, c2), append(goMB, g1, g2)
		ratios = append(ratios, (c1+c2)/(g1+g2))
		b.Logf("round %d: C %.0f %.0f MB/s, Go %.0f %.0f MB/s, c/go %.3f", r+1, c1, c2, g1, g2, ratios[r])
	}
	b.StopTimer()
	b.ReportMetric(median(cMB), "c-MB/s")
	b.ReportMetric(median(goMB), "go-MB/s")
	b.ReportMetric(median(ratios), "c/go")
	b.ReportMetric(slices.Min(ratios), "c/go-min")
	b.ReportMetric(slices.Max(ratios), "c/go-max")
}

// perfAgainst is BenchmarkPerfRDMAWrite64K with -udapl.baselib: another
// build of the library (the one to compare with, "base") runs dapltest in
// the same rounds, on an IA and dapltest server of its own. A round is
// C, base, Go, Go, base, C, or base first in every other round, so that
// neither build has the better places; both ratios are over the round's
// Go pair. It also reports the median of the rounds' C over base: what
// decides a change, as the two builds' transfers sit side by side in
// every round while a Go pair lies between them.
func perfAgainst(b *testing.B, cSide, goSide func() float64, i cIA) {
	if _, err := os.Stat(*perfBaseLib); err != nil {
		b.Fatal(err)
	}
	ib := newIAWith(b, *perfBaseLib)
	dapltestServer(b, ib)
	baseSide := func() float64 { return perf(b, ib, perfIters, perfWorkload...) * (1 << 20) / 1e6 }
	b.ResetTimer()
	var cMB, baseMB, goMB, ratios, baseRatios, overBase []float64
	for r := range max(*perfRounds, 1) {
		first, second := cSide, baseSide
		if r%2 == 1 {
			first, second = baseSide, cSide
		}
		f1, s1, g1, g2, s2, f2 := first(), second(), goSide(), goSide(), second(), first()
		c1, c2, b1, b2 := f1, f2, s1, s2
		if r%2 == 1 {
			c1, c2, b1, b2 = s1, s2, f1, f2
		}
		cMB, baseMB, goMB = append(cMB, c1, c2), append(baseMB, b1, b2), append(goMB, g1, g2)
		ratios = append(ratios, (c1+c2)/(g1+g2))
		baseRatios = append(baseRatios, (b1+b2)/(g1+g2))
		overBase = append(overBase, (c1+c2)/(b1+b2))
		b.Logf("round %d: C %.0f %.0f MB/s, base C %.0f %.0f MB/s, Go %.0f %.0f MB/s, c/go %.3f, base c/go %.3f, c/base %.3f",
			r+1, c1, c2, b1, b2, g1, g2, ratios[r], baseRatios[r], overBase[r])
	}
	b.StopTimer()
	b.ReportMetric(median(cMB), "c-MB/s")
	b.ReportMetric(median(baseMB), "base-c-MB/s")
	b.ReportMetric(median(goMB), "go-MB/s")
	b.ReportMetric(median(ratios), "c/go")
	b.ReportMetric(median(baseRatios), "base-c/go")
	b.ReportMetric(median(overBase), "c/base")
}

// The workload of BenchmarkPerfRDMAWrite64K, in the arguments both
// programs take: dapltest -T P's blocking mode (-m b: dat_evd_wait with
// threshold 1 and no timeout, then as many dequeues as its queue count,
// which it leaves at zero), one 65536-byte segment per Write, -p 8 in
// flight.
var perfWorkload = []string{"-m", "b", "RW", "65536", "1"}

var (
	perfRounds  = flag.Int("udapl.rounds", 5, "rounds of C, Go, Go, C transfers in BenchmarkPerfRDMAWrite64K")
	perfBaseLib = flag.String("udapl.baselib", "", "another build of libdatgodapl.so that BenchmarkPerfRDMAWrite64K runs in the same rounds")
)

const perfIters = 30000

// median returns the median of v (the mean of the middle two for an even
// count); v is sorted.
func median(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// startDattest starts dattest -T S until the benchmark ends and returns
// its port.
func startDattest(b *testing.B, bin, conf string) string {
	cmd := exec.Command(bin, "-T", "S", "-D", "bench", "-n", "0")
	cmd.Env = append(os.Environ(), dat.ConfEnv+"="+conf)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		b.Fatal("dattest server said nothing")
	}
	m := regexp.MustCompile(`port (\d+)$`).FindStringSubmatch(sc.Text())
	if m == nil {
		b.Fatalf("dattest server said %q", sc.Text())
	}
	return m[1]
}

var dattestMB = regexp.MustCompile(`, ([0-9.]+) MB/s, latency`)

func dattestPerf(b *testing.B, bin, conf string, a netip.Addr, port string, iters int) float64 {
	args := append([]string{"-T", "P", "-D", "bench", "-s", a.String(), "-n", port, "-p", "8", "-i", strconv.Itoa(iters)}, perfWorkload...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), dat.ConfEnv+"="+conf)
	out, err := cmd.CombinedOutput()
	m := dattestMB.FindStringSubmatch(string(out))
	if err != nil || m == nil {
		b.Fatalf("dattest -T P: %v\n%s", err, out)
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}
