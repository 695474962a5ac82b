package rdsoverdat

import (
	"bufio"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkAggregate16 is the host-wide view: sixteen 64 B streams
// between two nodes over tcp, as one process with sixteen socket pairs
// (in-process), and as sixteen processes with one pair each, all
// through one daemon (daemon-16procs). ns/op is per message, all
// streams together; the ratio of the two is the daemon's aggregate
// against one process's. cpu-ns/op is the CPU of every process a
// message, the benchmark's (with the daemon) and the children's, each
// over the timed part: on a loaded host the scheduler gives seventeen
// processes more of the CPU than one, which wall time shows and CPU
// time does not. Each child is this test binary (TestAggregateChild);
// starting them is outside the timed part.
func BenchmarkAggregate16(b *testing.B) {
	const streams = 16
	b.Run("in-process", func(b *testing.B) {
		st := NewStack(tcpBenchCfg)
		b.Cleanup(func() { st.Close() })
		as := testAddrs(2)
		pairs := make([][2]*Socket, streams)
		for i := range pairs {
			pairs[i] = benchBind(b, st, as)
		}
		b.SetBytes(64)
		b.ResetTimer()
		u := usageNow()
		runStreams(b, pairs, b.N/streams+1)
		b.StopTimer()
		u.report(b)
	})
	b.Run("daemon-16procs", func(b *testing.B) {
		st, _ := daemonStack(b, tcpBenchCfg)
		as := testAddrs(2)
		per := b.N/streams + 1
		// The daemon runs here, the streams in the children: a stall
		// shows as the daemon delivering nothing more, and the
		// children's own watchdogs see it too.
		stop := watchProgress(func() uint64 { return delivered(st.daemonStack) },
			fmt.Sprintf("%s: %d client processes of %d messages", b.Name(), streams, per))
		defer stop()
		var children []*aggChild
		for range streams {
			children = append(children, startAggChild(b, st.cfg.Daemon, as, per))
		}
		b.SetBytes(64)
		b.ResetTimer()
		u := usageNow()
		for _, c := range children {
			io.WriteString(c.stdin, "go\n")
		}
		var cpu time.Duration
		for _, c := range children {
			d, ok := c.waitDone()
			if !ok {
				b.Fatalf("a child failed: %s", c.stderr())
			}
			cpu += d
		}
		b.StopTimer()
		stop() // the children's exits deliver nothing
		self := usageNow().cpu - u.cpu
		b.ReportMetric(float64(self+cpu)/float64(b.N), "cpu-ns/op")
		for _, c := range children {
			c.stdin.Close()
			c.cmd.Wait()
		}
	})
}

// benchBind returns a sender on as[0] and a receiver on as[1] with room
// for a stream.
func benchBind(b testing.TB, st *Stack, as []netip.Addr) [2]*Socket {
	var p [2]*Socket
	for j := range p {
		s := st.Socket()
		s.SetOption(SendBuffer(4 << 20))
		s.SetOption(RecvBuffer(8 << 20))
		if err := s.Bind(ap(as[j], 0)); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		p[j] = s
	}
	p[0].SendTo(nil, p[1].BoundAddr(), 0) // the connection comes up outside the timed part
	p[1].RecvMsg(&Msg{}, 0)
	return p
}

// runStreams streams n 64 B messages over every pair at once. A run
// that stops making progress ends the process with every goroutine's
// stack (watchProgress) rather than hang.
func runStreams(b testing.TB, pairs [][2]*Socket, n int) {
	var wg sync.WaitGroup
	errc := make(chan error, 2*len(pairs))
	counts := make([]streamCount, len(pairs))
	stop := watchProgress(func() uint64 { return sumCounts(counts) },
		fmt.Sprintf("%s: %d streams of %d messages", b.Name(), len(pairs), n))
	defer stop()
	for k, p := range pairs {
		wg.Add(2)
		go func() {
			defer wg.Done()
			msg := make([]byte, 64)
			for range n {
				if _, err := p[0].SendTo(msg, p[1].BoundAddr(), 0); err != nil {
					errc <- err
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			m := Msg{Data: make([]byte, 64)}
			for i := range n {
				if _, err := p[1].RecvMsg(&m, 0); err != nil {
					errc <- err
					return
				}
				if i%progressEvery == progressEvery-1 || i == n-1 {
					counts[k].n.Store(uint64(i + 1))
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
}

// aggChild is one process of daemon-16procs.
type aggChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	errb  *lockedBuf
}

type lockedBuf struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (c *aggChild) stderr() string {
	c.errb.mu.Lock()
	defer c.errb.mu.Unlock()
	return string(c.errb.b)
}

func (c *aggChild) waitLine(want string) bool {
	for c.out.Scan() {
		if c.out.Text() == want {
			return true
		}
	}
	return false
}

// waitDone waits for the child's "done" line and returns the CPU time
// of its stream, which the line carries.
func (c *aggChild) waitDone() (time.Duration, bool) {
	for c.out.Scan() {
		if ns, ok := strings.CutPrefix(c.out.Text(), "done "); ok {
			n, err := strconv.ParseInt(ns, 10, 64)
			return time.Duration(n), err == nil
		}
	}
	return 0, false
}

func startAggChild(b *testing.B, path string, as []netip.Addr, n int) *aggChild {
	cmd := exec.Command(os.Args[0], "-test.run=^TestAggregateChild$")
	cmd.Env = append(os.Environ(), "RDSD_AGG_DAEMON="+path, "RDSD_AGG_FROM="+as[0].String(),
		"RDSD_AGG_TO="+as[1].String(), "RDSD_AGG_N="+strconv.Itoa(n))
	c := &aggChild{cmd: cmd, errb: &lockedBuf{}}
	cmd.Stderr = c.errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c.out = bufio.NewScanner(out)
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !c.waitLine("ready") {
		b.Fatalf("a child never got ready: %s", c.stderr())
	}
	return c
}

// TestAggregateChild is one stream of BenchmarkAggregate16's
// daemon-16procs, in a child process: it binds a pair through the
// daemon, says "ready", waits for "go", streams, says "done" and the CPU
// time the stream took, in nanoseconds.
func TestAggregateChild(t *testing.T) {
	path := os.Getenv("RDSD_AGG_DAEMON")
	if path == "" {
		t.Skip("run by BenchmarkAggregate16")
	}
	n, _ := strconv.Atoi(os.Getenv("RDSD_AGG_N"))
	as := []netip.Addr{netip.MustParseAddr(os.Getenv("RDSD_AGG_FROM")), netip.MustParseAddr(os.Getenv("RDSD_AGG_TO"))}
	st := NewStack(Config{Daemon: path})
	defer st.Close()
	p := benchBind(t, st, as)
	fmt.Println("ready")
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return
	}
	u := usageNow()
	runStreams(t, [][2]*Socket{p}, n)
	fmt.Println("done", int64(usageNow().cpu-u.cpu))
}
