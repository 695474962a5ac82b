package faults

// The child roles: an RDS receiver and an RDS sender over the tcp
// transport, each the test binary re-executed inside a namespace. They
// talk to the parent test in JSON lines on stdout (report), read their
// configuration from GODAPL_FAULTS_CONF, and stop on SIGTERM.

import (
	"cmp"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

const confEnv = "GODAPL_FAULTS_CONF"

var roles = map[string]func() error{
	"rds-recv": roleRecv,
	"rds-send": roleSend,
	"rdsd":     roleDaemon,
}

// roleConf configures a child.
type roleConf struct {
	Local netip.Addr // the node's address
	Peer  netip.Addr // the receiver (senders only)
	// Locals are more node addresses: a receiver binds Sockets sockets
	// on each of Local and Locals (64 nodes in one process).
	Locals []netip.Addr
	// Peers, for a sender, replaces Peer by several receiving nodes:
	// socket i sends to Peers[i%len(Peers)].
	Peers   []netip.Addr
	Sockets int // sockets of this node
	Dests   int // receiver sockets (senders only): sender i sends to port basePort+i%Dests
	Size    int // payload bytes per message (≥ 12), the largest with VarySize
	// VarySize makes message sizes vary between 12 bytes and Size, as
	// rds-stress traffic does.
	VarySize bool
	Count    int // messages per sender socket (0: until Stop or Duration)
	// Duration bounds a sender's sending time (0: Count decides).
	Duration time.Duration
	// Pace limits each sender socket to one message per Pace (0: flat out).
	Pace time.Duration
	// DrainTimeout bounds the wait for the last acknowledgements.
	DrainTimeout time.Duration
	// ReadPause makes the receiver stop reading for this long after it
	// got PauseAfter messages (a receiver that stops reading).
	ReadPause  time.Duration
	PauseAfter int
	RecvBuffer int // SO_RCVBUF of the receiver's sockets (0: default)
	// Transport is "tcp" (default) or "dat" (RDS over DAT over
	// soft-iWARP); RecvDepth sizes the dat transport's SRQ (0: default).
	Transport string
	RecvDepth int
	// Daemon is the rdsd socket whose nodes the role uses (role rdsd:
	// the socket it serves); empty: a node of the role's own.
	Daemon string
	// Port and DestPort replace basePort for the role's own sockets and
	// for a sender's destinations (0: basePort), so that several client
	// processes share one daemon's node.
	Port, DestPort int
}

// port is the first RDS port of the role's sockets; destPort the first
// of a sender's destinations.
func (c roleConf) port() int     { return cmp.Or(c.Port, basePort) }
func (c roleConf) destPort() int { return cmp.Or(c.DestPort, basePort) }

const basePort = 4000

// report is one JSON line from a child.
type report struct {
	Kind string // "ready", "progress", "final"
	T    time.Duration

	// Sender.
	Sent, Acked, Retransmitted, Canceled, Flushed, SendErrors uint64
	Unacked                                                   int
	Resets                                                    uint64
	// Receiver.
	Received, Duplicates, OutOfOrder, Gaps, Corrupt, DupsDropped uint64
	// Both.
	CongBlocked, QueueFull       uint64 // senders that waited on congestion / SO_SNDBUF
	CreditStalls                 uint64 // dat: sends that waited for the peer's credits
	Goroutines, LeakedGoroutines int
	RSS                          int64 // bytes
	Err                          string
}

type reporter struct {
	mu    sync.Mutex
	enc   *json.Encoder
	start time.Time
}

func newReporter() *reporter { return &reporter{enc: json.NewEncoder(os.Stdout), start: time.Now()} }

func (r *reporter) send(rep report) {
	rep.T = time.Since(r.start)
	rep.Goroutines = runtime.NumGoroutine()
	rep.RSS = rss()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.enc.Encode(rep)
}

// rss is the process's resident set from /proc/self/status.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func readConf() (roleConf, error) {
	var c roleConf
	err := json.Unmarshal([]byte(os.Getenv(confEnv)), &c)
	if c.Size < msgHeader {
		c.Size = msgHeader
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 30 * time.Second
	}
	return c, err
}

// stopSignal is closed on SIGTERM or when stdin closes (the parent died).
func stopSignal() <-chan struct{} {
	stop := make(chan struct{})
	var once sync.Once
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-sigs; once.Do(func() { close(stop) }) }()
	go func() {
		var b [1]byte
		for {
			if _, err := os.Stdin.Read(b[:]); err != nil {
				once.Do(func() { close(stop) })
				return
			}
		}
	}()
	return stop
}

// Message payload: sender socket index, sequence number, then filler
// derived from both, so corruption is detected.
const msgHeader = 12

func fillMsg(b []byte, sender uint32, seq uint64) {
	binary.BigEndian.PutUint32(b, sender)
	binary.BigEndian.PutUint64(b[4:], seq)
	for i := msgHeader; i < len(b); i++ {
		b[i] = byte(seq) + byte(i) + byte(sender)
	}
}

func checkMsg(b []byte) (sender uint32, seq uint64, ok bool) {
	if len(b) < msgHeader {
		return 0, 0, false
	}
	sender, seq = binary.BigEndian.Uint32(b), binary.BigEndian.Uint64(b[4:])
	for i := msgHeader; i < len(b); i++ {
		if b[i] != byte(seq)+byte(i)+byte(sender) {
			return sender, seq, false
		}
	}
	return sender, seq, true
}

func newStack(c roleConf) *rdsoverdat.Stack {
	if c.Daemon != "" {
		return rdsoverdat.NewStack(rdsoverdat.Config{Daemon: c.Daemon, RecvBuffer: c.RecvBuffer})
	}
	// The node addresses are known: answering IsLocal from them spares
	// every bind an rtnetlink round trip (thousands of sockets).
	local := map[netip.Addr]bool{c.Local: true}
	for _, a := range c.Locals {
		local[a] = true
	}
	tr := rdsoverdat.TCP(rdsoverdat.TCPConfig{ReconnectMax: 200 * time.Millisecond})
	if c.Transport == "dat" {
		tr = rdsoverdat.DAT(rdsoverdat.DATConfig{ReconnectMax: 200 * time.Millisecond, RecvDepth: c.RecvDepth})
	}
	return rdsoverdat.NewStack(rdsoverdat.Config{
		Transports: []rdsoverdat.Transport{tr},
		RecvBuffer: c.RecvBuffer,
		IsLocal:    func(a netip.Addr) (bool, error) { return local[a], nil },
	})
}

// startRole is how every role process begins: its configuration, its
// stop signal, the goroutine count before its stack (for the leak check
// at the end), its reporter and its stack.
func startRole() (c roleConf, stop <-chan struct{}, base int, rep *reporter, st *rdsoverdat.Stack, err error) {
	if c, err = readConf(); err != nil {
		return
	}
	stop = stopSignal()
	time.Sleep(10 * time.Millisecond) // let the watchers start before counting
	base = runtime.NumGoroutine()
	return c, stop, base, newReporter(), newStack(c), nil
}

// roleRecv binds Sockets sockets and checks what arrives: per sender
// socket, sequence numbers must come exactly once and in order.
func roleRecv() error {
	c, stop, base, rep, st, err := startRole()
	if err != nil {
		return err
	}
	var socks []*rdsoverdat.Socket
	for _, addr := range append([]netip.Addr{c.Local}, c.Locals...) {
		for i := range c.Sockets {
			s := st.Socket()
			if err := s.Bind(netip.AddrPortFrom(addr, uint16(c.port()+i))); err != nil {
				return err
			}
			socks = append(socks, s)
		}
	}

	type source struct{ next uint64 }
	var (
		mu                                 sync.Mutex
		sources                            = map[netip.AddrPort]*source{}
		received, dups, ooo, gaps, corrupt atomic.Uint64
	)
	var wg sync.WaitGroup
	for _, s := range socks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, c.Size+64)
			m := rdsoverdat.Msg{Data: buf}
			paused := false
			for {
				n, err := s.RecvMsg(&m, 0)
				if err != nil {
					return // closed
				}
				if len(m.Control) > 0 {
					continue
				}
				_, seq, ok := checkMsg(buf[:n])
				if !ok || (n != c.Size && !c.VarySize) {
					corrupt.Add(1)
				}
				mu.Lock()
				src := sources[m.Addr]
				if src == nil {
					src = &source{}
					sources[m.Addr] = src
				}
				switch {
				case seq == src.next:
					src.next++
				case seq < src.next:
					dups.Add(1) // or reordered: either breaks the contract
				default:
					gaps.Add(seq - src.next)
					src.next = seq + 1
				}
				mu.Unlock()
				got := received.Add(1)
				if c.ReadPause > 0 && !paused && got >= uint64(c.PauseAfter) {
					paused = true
					select {
					case <-time.After(c.ReadPause):
					case <-stop:
					}
				}
			}
		}()
	}
	snapshot := func(kind string) report {
		var ns rdsoverdat.NodeStats
		for _, n := range st.Info().Nodes {
			s, _ := st.NodeStats(n.Addr)
			ns.RecvDropOldSeq += s.RecvDropOldSeq
			ns.ConnReset += s.ConnReset
		}
		return report{Kind: kind, Received: received.Load(), Duplicates: dups.Load(), OutOfOrder: ooo.Load(),
			Gaps: gaps.Load(), Corrupt: corrupt.Load(), DupsDropped: ns.RecvDropOldSeq, Resets: ns.ConnReset}
	}
	rep.send(report{Kind: "ready"})
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
			rep.send(snapshot("progress"))
		case <-stop:
			done = true
		}
	}
	final := snapshot("final")
	st.Close()
	wg.Wait()
	final.LeakedGoroutines = settle(base)
	rep.send(final)
	return nil
}

// settle waits for the goroutine count to come back to base and returns
// how many are left above it.
func settle(base int) int {
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return max(runtime.NumGoroutine()-base, 0)
}

// roleSend runs Sockets sender sockets, sending numbered messages to the
// receiver until Count, Duration or SIGTERM, then waits for every message
// to be acknowledged and reports.
func roleSend() error {
	c, stop, base, rep, st, err := startRole()
	if err != nil {
		return err
	}
	socks := make([]*rdsoverdat.Socket, c.Sockets)
	for i := range socks {
		socks[i] = st.Socket()
		if err := socks[i].Bind(netip.AddrPortFrom(c.Local, uint16(c.port()+i))); err != nil {
			return err
		}
	}
	var quit atomic.Bool
	stopped := make(chan struct{})
	go func() {
		select {
		case <-stop:
			quit.Store(true)
		case <-stopped:
		}
	}()
	defer close(stopped)
	if c.Duration > 0 {
		t := time.AfterFunc(c.Duration, func() { quit.Store(true) })
		defer t.Stop()
	}
	var sent, sendErrs atomic.Uint64
	var wg sync.WaitGroup
	for i, s := range socks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := netip.AddrPortFrom(c.Peer, uint16(c.destPort()+i%max(c.Dests, 1)))
			if n := len(c.Peers); n > 0 {
				dst = netip.AddrPortFrom(c.Peers[i%n], uint16(c.destPort()+(i/n)%max(c.Dests, 1)))
			}
			buf := make([]byte, c.Size)
			for seq := uint64(0); (c.Count == 0 || seq < uint64(c.Count)) && !quit.Load(); {
				msg := buf
				if c.VarySize {
					msg = buf[:msgHeader+int(seq*7919+uint64(i)*104729)%(c.Size-msgHeader+1)]
				}
				fillMsg(msg, uint32(i), seq)
				s.SetWriteDeadline(time.Now().Add(200 * time.Millisecond))
				if _, err := s.SendTo(msg, dst, 0); err != nil {
					if errors.Is(err, os.ErrDeadlineExceeded) {
						continue // congested or full: look at quit, then wait again
					}
					sendErrs.Add(1)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				seq++
				sent.Add(1)
				if c.Pace > 0 {
					time.Sleep(c.Pace)
				}
			}
		}()
	}
	snapshot := func(kind string) report {
		var ns rdsoverdat.NodeStats
		if c.Daemon == "" { // a daemon's counters are the host's: every client's together
			ns, _ = st.NodeStats(c.Local)
		}
		unacked := 0
		for _, s := range socks {
			snd, _ := s.Buffered()
			unacked += snd
		}
		return report{Kind: kind, Sent: sent.Load(), Acked: ns.SendDropAcked, Retransmitted: ns.SendRetransmit,
			Canceled: ns.SendCanceled, Flushed: ns.SendFlushed, SendErrors: sendErrs.Load(),
			Unacked: unacked, Resets: ns.ConnReset, CongBlocked: ns.CongSendBlocked, QueueFull: ns.SendQueueFull,
			CreditStalls: ns.CreditStall}
	}
	rep.send(report{Kind: "ready"})
	sendersDone := make(chan struct{})
	go func() { wg.Wait(); close(sendersDone) }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var drainBy <-chan time.Time
	for {
		select {
		case <-tick.C:
			r := snapshot("progress")
			rep.send(r)
			if drainBy != nil && r.Unacked == 0 {
				goto done
			}
		case <-sendersDone:
			sendersDone = nil
			drainBy = time.After(c.DrainTimeout)
		case <-drainBy:
			goto done
		}
	}
done:
	final := snapshot("final")
	if final.Unacked != 0 {
		final.Err = fmt.Sprintf("%d bytes still unacknowledged after %v", final.Unacked, c.DrainTimeout)
	}
	st.Close()
	final.LeakedGoroutines = settle(base + 1) // the stop watcher above exits with the deferred close
	rep.send(final)
	return nil
}
