package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/tests/internal/netns"
)

// long reports whether the long version runs (`make faults`).
func long() bool { return os.Getenv("FAULTS_LONG") != "" }

// scale picks the short or the long value of a knob.
func scale[T any](short, long_ T) T {
	if long() {
		return long_
	}
	return short
}

// child is a role process inside a namespace, as the parent sees it.
type child struct {
	t     *testing.T
	role  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	errb  bytes.Buffer

	mu      sync.Mutex
	history []stamped // progress reports as they arrived
	final   *report
	ready   chan struct{}
	exited  chan struct{}
}

// stamped is a report and when the parent received it.
type stamped struct {
	at time.Time
	report
}

// startChild runs role in ns with conf and waits until it is ready.
func startChild(t *testing.T, ns *netns.NS, role string, conf roleConf) *child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cj, _ := json.Marshal(conf)
	c := &child{t: t, role: role, ready: make(chan struct{}), exited: make(chan struct{})}
	c.cmd = ns.Command(context.Background(), exe, "-test.run=^$")
	c.cmd.Env = append(os.Environ(), roleEnv+"="+role, confEnv+"="+string(cj), childGORACE())
	c.cmd.Stderr = &c.errb
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go c.read(stdout)
	t.Cleanup(func() { c.kill() })
	select {
	case <-c.ready:
	case <-c.exited:
		t.Fatalf("%s exited before it was ready: %s", role, c.errb.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s not ready after 30 s", role)
	}
	return c
}

// childGORACE is the GORACE of a child: the caller's, with the race
// detector's sleep at exit (atexit_sleep_ms, one second by default) off
// unless the caller set it. A child exits only after closing its stack
// and waiting for its goroutines to end, so nothing is left running for
// the sleep to wait for; under -race it cost every scenario a second per
// child.
func childGORACE() string {
	g := os.Getenv("GORACE")
	if !strings.Contains(g, "atexit_sleep_ms") {
		g = strings.TrimSpace(g + " atexit_sleep_ms=0")
	}
	return "GORACE=" + g
}

func (c *child) read(r io.Reader) {
	defer close(c.exited)
	sc := bufio.NewScanner(r)
	readyOnce := sync.OnceFunc(func() { close(c.ready) })
	for sc.Scan() {
		var rep report
		if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
			continue
		}
		c.mu.Lock()
		switch rep.Kind {
		case "ready":
			readyOnce()
		case "final":
			c.final = &rep
		default:
			c.history = append(c.history, stamped{time.Now(), rep})
		}
		c.mu.Unlock()
	}
	c.cmd.Wait()
}

// last returns the latest progress report.
func (c *child) last() report {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.history) == 0 {
		return report{}
	}
	return c.history[len(c.history)-1].report
}

// lastBelow returns the last progress report with fewer than n messages
// received.
func (c *child) lastBelow(n uint64) report {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(c.history) - 1; i >= 0; i-- {
		if c.history[i].Received < n {
			return c.history[i].report
		}
	}
	return report{}
}

// at returns the last progress report received at or before t.
func (c *child) at(t time.Time) report {
	c.mu.Lock()
	defer c.mu.Unlock()
	var r report
	for _, h := range c.history {
		if h.at.After(t) {
			break
		}
		r = h.report
	}
	return r
}

// The waits below fail on a stall, not on a deadline: their timeout is
// how long the child may go without progress (a report whose counters
// moved), so that a host loaded enough to slow the traffic tenfold does
// not fail a scenario whose traffic still flows, and one that hangs still
// fails within the timeout of its last progress. go test's -timeout bounds
// the whole.

// progressOf is what counts as progress in a report: any counter of
// traffic moving.
func progressOf(r report) [7]uint64 {
	return [...]uint64{r.Sent, r.Acked, r.Retransmitted, r.Flushed, r.Canceled, r.Received, uint64(r.Unacked)}
}

// stallWatch tells how long a child's progress has stood still.
type stallWatch struct {
	c     *child
	last  [7]uint64
	since time.Time
}

func (c *child) watchStall() *stallWatch {
	return &stallWatch{c: c, last: progressOf(c.last()), since: time.Now()}
}

// still returns how long the progress has not moved.
func (w *stallWatch) still() time.Duration {
	if p := progressOf(w.c.last()); p != w.last {
		w.last, w.since = p, time.Now()
	}
	return time.Since(w.since)
}

// waitFor polls progress until cond holds, or fails the test when the
// child makes no progress for stall.
func (c *child) waitFor(what string, stall time.Duration, cond func(report) bool) {
	c.t.Helper()
	w := c.watchStall()
	for !cond(c.last()) {
		select {
		case <-c.exited:
			c.t.Fatalf("%s exited while waiting for %s: %s", c.role, what, c.errb.String())
		case <-time.After(10 * time.Millisecond):
		}
		if w.still() > stall {
			c.t.Fatalf("%s: no %s, and no progress for %v; last %+v", c.role, what, stall, c.last())
		}
	}
}

// wait waits for the child to exit on its own and returns its final
// report; it fails the test when the child makes no progress for stall.
func (c *child) wait(stall time.Duration) report {
	c.t.Helper()
	w := c.watchStall()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for running := true; running; {
		select {
		case <-c.exited:
			running = false
		case <-tick.C:
			if w.still() > stall {
				c.t.Fatalf("%s still running, and no progress for %v; last %+v", c.role, stall, c.last())
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.final == nil {
		c.t.Fatalf("%s exited without a final report: %v\n%s", c.role, c.cmd.ProcessState, c.errb.String())
	}
	return *c.final
}

// stop asks the child to finish (SIGTERM) and returns its final report
// (stall as for wait).
func (c *child) stop(stall time.Duration) report {
	c.t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	return c.wait(stall)
}

// kill kills the child at once (SIGKILL): a crashed peer.
func (c *child) kill() {
	select {
	case <-c.exited:
		return
	default:
	}
	c.cmd.Process.Kill()
	<-c.exited
}

// rig is two namespaces joined by a link: the sender's side A and the
// receiver's side B.
type rig struct {
	a, b         *netns.NS
	addrA, addrB netip.Addr
	link         netns.Impairer
	veth         *netns.Veth    // when the link is a veth
	tun          *netns.TunLink // when the link is a TunLink
}

var subnet struct {
	sync.Mutex
	n int
}

// nextSubnet returns a fresh 10.<x>.<y>.0/24 per rig, so rigs of
// parallel tests (and of other test binaries, which use other ranges) do
// not meet.
func nextSubnet() (netip.Addr, netip.Addr) {
	subnet.Lock()
	defer subnet.Unlock()
	subnet.n++
	x := byte(100 + os.Getpid()%100)
	return netip.AddrFrom4([4]byte{10, x, byte(subnet.n), 1}), netip.AddrFrom4([4]byte{10, x, byte(subnet.n), 2})
}

// newRig builds the two namespaces and a veth between them, or with
// impair set the link that can impair: a veth with netem when the kernel
// has it, a TunLink otherwise.
func newRig(t *testing.T, impair bool) *rig {
	t.Helper()
	netns.Require(t)
	r := &rig{}
	var err error
	for _, p := range []**netns.NS{&r.a, &r.b} {
		if *p, err = netns.New(); err != nil {
			t.Fatal(err)
		}
		ns := *p
		t.Cleanup(func() { ns.Close() })
	}
	r.addrA, r.addrB = nextSubnet()
	if impair && !netns.HaveNetem() {
		r.tun, err = netns.NewTunLink(r.a, r.addrA, r.b, r.addrB, 1)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.tun.Close() })
		r.link = r.tun
		return r
	}
	r.veth, err = netns.NewVeth(r.a, netip.PrefixFrom(r.addrA, 24), r.b, netip.PrefixFrom(r.addrB, 24))
	if err != nil {
		t.Fatal(err)
	}
	r.link = r.veth
	return r
}

// transports are the RDS transports the scenarios run over.
var transports = []string{"tcp", "dat"}

// rdsPort is the TCP port a transport's connections use: RDS/TCP's, or
// the dat transport's PSP (the iWARP connection is a TCP connection to
// it).
func rdsPort(transport string) int {
	if transport == "dat" {
		return wire.RDMAPort
	}
	return wire.TCPPort
}

// resetTCP destroys every connection of the transport in ns (ss -K): each
// end gets a reset, as if the peer had sent an RST.
func resetTCP(t *testing.T, ns *netns.NS, transport string) int {
	t.Helper()
	p := fmt.Sprint(rdsPort(transport))
	out, err := ns.Run("ss", "-K", "-t", "-n", "( sport = :"+p+" or dport = :"+p+" )")
	if err != nil {
		t.Fatalf("ss -K: %v", err)
	}
	return max(strings.Count(out, "\n")-1, 0)
}

// resetMidStream waits for rcv to make progress and then resets the
// transport's connection in ns, once. Progress does not prove that a
// connection is up: messages queued before the previous reset (in the
// receiving socket, or a daemon's queues and rings) still arrive while
// the next connection is being made, and ss then finds nothing to
// destroy. It waits for more progress and tries again until a socket
// was destroyed, and returns how many were.
func resetMidStream(t *testing.T, ns *netns.NS, transport string, rcv, snd *child) int {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); ; {
		midStream(t, rcv, snd)
		if n := resetTCP(t, ns, transport); n > 0 {
			return n
		}
		if time.Now().After(end) {
			t.Fatalf("no %s connection to reset in 60 s of traffic", transport)
		}
	}
}

// counts is what a scenario prints and asserts on.
type counts struct {
	Scenario                                 string
	Sent, Received, Retransmitted, Canceled  uint64
	Duplicates, Lost, Gaps, Corrupt, Flushed uint64
	DupsDropped, Resets                      uint64
	Duration                                 time.Duration
	Extra                                    string
}

func (c counts) String() string {
	s := fmt.Sprintf("COUNTS %s: sent=%d received=%d retransmitted=%d canceled=%d duplicates=%d lost=%d duration=%v"+
		" (gaps=%d corrupt=%d flushed=%d dups-dropped-by-rds=%d conn-resets=%d)",
		c.Scenario, c.Sent, c.Received, c.Retransmitted, c.Canceled, c.Duplicates, c.Lost, c.Duration.Round(time.Millisecond),
		c.Gaps, c.Corrupt, c.Flushed, c.DupsDropped, c.Resets)
	if c.Extra != "" {
		s += " " + c.Extra
	}
	return s
}

// tally builds the counts of a sender and the receivers it sent to.
func tally(name string, d time.Duration, snd report, rcvs ...report) counts {
	c := counts{Scenario: name, Sent: snd.Sent, Retransmitted: snd.Retransmitted, Canceled: snd.Canceled,
		Flushed: snd.Flushed, Resets: snd.Resets, Duration: d}
	for _, r := range rcvs {
		c.Received += r.Received
		c.Duplicates += r.Duplicates
		c.Gaps += r.Gaps
		c.Corrupt += r.Corrupt
		c.DupsDropped += r.DupsDropped
	}
	if c.Sent > c.Received+c.Canceled {
		c.Lost = c.Sent - c.Received - c.Canceled
	}
	return c
}

// exact asserts the reliable-delivery contract: every message sent was
// acknowledged and received exactly once, in order, intact, and both
// processes ended without leaked goroutines.
func exact(t *testing.T, c counts, snd report, rcvs ...report) {
	t.Helper()
	t.Log(c)
	if snd.Err != "" {
		t.Error("sender:", snd.Err)
	}
	if c.Sent == 0 {
		t.Error("nothing sent")
	}
	if c.Received != c.Sent || c.Duplicates != 0 || c.Gaps != 0 || c.Corrupt != 0 || c.Canceled != 0 {
		t.Errorf("delivery broken: %v", c)
	}
	for _, r := range append([]report{snd}, rcvs...) {
		if r.LeakedGoroutines != 0 {
			t.Errorf("%d goroutines leaked in a child", r.LeakedGoroutines)
		}
	}
}

func itoa(n int) string { return fmt.Sprint(n) }

// runHost runs a command in this process's own namespace.
func runHost(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	return string(out), err
}

// knownBug skips a scenario that fails because of a bug this suite found
// and docs/RELIABILITY.md describes, so that the default run stays green
// for everyone while the bug is open; the long run (`make faults`) and
// FAULTS_KNOWN_BUGS=1 run it anyway.
func knownBug(t *testing.T, what string) {
	t.Helper()
	if !long() && os.Getenv("FAULTS_KNOWN_BUGS") == "" {
		t.Skipf("known bug (docs/RELIABILITY.md): %s; FAULTS_KNOWN_BUGS=1 or make faults runs it", what)
	}
}
