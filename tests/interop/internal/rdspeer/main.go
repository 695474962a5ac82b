// Command rdspeer is the Go side of the RDS/TCP interop scenarios in
// tests/interop (rds_tcp_test.go): one rdsoverdat Stack with the tcp
// transport at 192.168.77.1 (netns ratlab) against the lab VM kernel's
// rds_tcp driven by testdata/rds_kernel_peer.py. Each scenario checks what
// it can see itself and prints one line per event; the test compares them
// with the kernel's lines.
//
//	rdspeer sizes  -bind A:P -to B:Q -sizes 0,1,...   send, expect each echoed whole
//	rdspeer ports  -addr A -base P -n N -to B -tbase Q  N sockets to N kernel ports
//	rdspeer stream -bind A:P -to B:Q -n N -size S [-recv M] [-reset-after K -reset-cmd ...]
//	rdspeer congest -bind A:P -to B:Q -ctl B:C -n N -size S
//	rdspeer congrecv -bind A:P -ctl A:C -rcvbuf R
//	rdspeer cancel -bind A:P -to B:Q -to2 B:R -n N -size S -n2 M
//
// Messages of stream, congest and cancel start with their index as an
// 8-byte big-endian number, so each side checks order and exactly-once
// delivery. At the end it prints the node's and each connection's
// counters and every path's state (up, sequence numbers, queues); -hold
// then keeps the connections until stdin ends, so that the test can read
// the kernel's view of them, and -log debug (or GODAPL_LOG) logs the
// paths going up and down on stderr.
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/godapl/godapl/internal/rdstool"
	"github.com/godapl/godapl/rdsoverdat"
)

type opts struct {
	bind, to, to2, ctl, addr string
	sizes                    string
	n, n2, size, recv, base  int
	rcvbuf                   int
	tbase, paths             int
	resetAfter               int
	resetCmd                 string
	timeout, linger, pace    time.Duration
	hold                     bool
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: rdspeer sizes|ports|stream|congest|cancel [flags]")
		os.Exit(2)
	}
	var o opts
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	fs.StringVar(&o.bind, "bind", "", "local RDS address ip:port")
	fs.StringVar(&o.to, "to", "", "destination ip:port")
	fs.StringVar(&o.to2, "to2", "", "second destination ip:port (cancel)")
	fs.StringVar(&o.ctl, "ctl", "", "kernel control port ip:port (congest)")
	fs.StringVar(&o.addr, "addr", "", "local IPv4 address (ports)")
	fs.StringVar(&o.sizes, "sizes", "0,1,100", "message sizes (sizes)")
	fs.IntVar(&o.n, "n", 100, "messages to send (or sockets, for ports)")
	fs.IntVar(&o.n2, "n2", 10, "messages to the second destination (cancel)")
	fs.IntVar(&o.size, "size", 1024, "message size")
	fs.IntVar(&o.recv, "recv", 0, "numbered messages to expect from the kernel meanwhile (stream)")
	fs.IntVar(&o.base, "base", 4100, "first local RDS port (ports)")
	fs.IntVar(&o.tbase, "tbase", 4200, "first kernel RDS port (ports)")
	fs.IntVar(&o.paths, "paths", 1, "NPATHS the tcp transport announces")
	fs.IntVar(&o.rcvbuf, "rcvbuf", 64<<10, "SO_RCVBUF of the data socket (congrecv)")
	fs.IntVar(&o.resetAfter, "reset-after", 0, "run -reset-cmd once this many messages were sent and one received (stream)")
	fs.StringVar(&o.resetCmd, "reset-cmd", "", "command (space-separated) that resets the TCP connection")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "overall time limit")
	fs.DurationVar(&o.pace, "pace", 0, "pause between messages (stream), so that a reset lands mid-stream")
	fs.DurationVar(&o.linger, "linger", 0, "keep the connections this long after the scenario (for the kernel's view)")
	fs.BoolVar(&o.hold, "hold", false, "keep the connections after the scenario until stdin ends (for the kernel's view)")
	logLevel := fs.String("log", "", "log level of the stack's path events on stderr (default $GODAPL_LOG, then warn)")
	fs.Parse(os.Args[2:])
	log, err := rdstool.Logger(*logLevel, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rdspeer:", err)
		os.Exit(2)
	}
	st := rdsoverdat.NewStack(rdsoverdat.Config{Logger: &log, Transports: []rdsoverdat.Transport{
		rdsoverdat.TCP(rdsoverdat.TCPConfig{Paths: o.paths})}})
	run := map[string]func(*rdsoverdat.Stack, *opts) error{
		"sizes": sizes, "ports": ports, "stream": stream, "congest": congest, "cancel": cancel,
		"congrecv": congrecv,
	}[os.Args[1]]
	if run == nil {
		fmt.Fprintln(os.Stderr, "rdspeer: unknown scenario", os.Args[1])
		os.Exit(2)
	}
	err = run(st, &o)
	printConns(st)
	time.Sleep(o.linger)
	if o.hold {
		// The test reads the kernel's view of the connections, then
		// closes our stdin.
		fmt.Println("holding")
		io.Copy(io.Discard, os.Stdin)
	}
	st.Close()
	if err != nil {
		fmt.Println("FAIL", err)
		os.Exit(1)
	}
	fmt.Println("OK")
}

// socket returns a socket bound to bind with 32 MiB of SO_SNDBUF and
// SO_RCVBUF (room for a burst of 1 MiB messages) and the deadline.
func socket(st *rdsoverdat.Stack, bind string, o *opts) (*rdsoverdat.Socket, error) {
	a, err := netip.ParseAddrPort(bind)
	if err != nil {
		return nil, err
	}
	s := st.Socket()
	s.SetOption(rdsoverdat.SendBuffer(32 << 20))
	s.SetOption(rdsoverdat.RecvBuffer(32 << 20))
	if err := s.Bind(a); err != nil {
		return nil, err
	}
	s.SetDeadline(time.Now().Add(o.timeout))
	return s, nil
}

func pattern(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + seed)
	}
	return b
}

func numbered(i, size int) []byte {
	b := make([]byte, max(size, 8))
	binary.BigEndian.PutUint64(b, uint64(i))
	return b
}

// sizes sends one message per size and expects it back whole (the
// kernel's echo), so both directions carry every size.
func sizes(st *rdsoverdat.Stack, o *opts) error {
	s, err := socket(st, o.bind, o)
	if err != nil {
		return err
	}
	dst := netip.MustParseAddrPort(o.to)
	buf := make([]byte, 1<<20+1)
	for i, f := range strings.Split(o.sizes, ",") {
		n, err := strconv.Atoi(f)
		if err != nil {
			return err
		}
		p := pattern(n, i)
		if _, err := s.SendTo(p, dst, 0); err != nil {
			return fmt.Errorf("send %d bytes: %w", n, err)
		}
		m := rdsoverdat.Msg{Data: buf}
		got, err := s.RecvMsg(&m, 0)
		if err != nil {
			return fmt.Errorf("echo of %d bytes: %w", n, err)
		}
		if m.Addr != dst || m.Flags != 0 || !bytes.Equal(buf[:got], p) {
			return fmt.Errorf("echo of %d bytes: %d bytes from %v flags %#x differ", n, got, m.Addr, m.Flags)
		}
		fmt.Printf("size %d echoed intact\n", n)
	}
	// Above RDS_MAX_MSG_SIZE the send fails locally, as in the kernel.
	if _, err := s.SendTo(make([]byte, 1<<20+1), dst, 0); !errors.Is(err, syscall.EMSGSIZE) {
		return fmt.Errorf("1 MiB + 1: %v, want EMSGSIZE", err)
	}
	fmt.Println("size 1048577 EMSGSIZE")
	return nil
}

// ports: socket i (port base+i) sends to kernel port tbase+i, which
// answers "<kport><-<gport>:" + payload.
func ports(st *rdsoverdat.Stack, o *opts) error {
	ip := netip.MustParseAddr(o.addr)
	kip := netip.MustParseAddr(o.to)
	socks := make([]*rdsoverdat.Socket, o.n)
	for i := range socks {
		s, err := socket(st, netip.AddrPortFrom(ip, uint16(o.base+i)).String(), o)
		if err != nil {
			return err
		}
		socks[i] = s
		if _, err := s.SendTo([]byte(fmt.Sprint("hello ", i)), netip.AddrPortFrom(kip, uint16(o.tbase+i)), 0); err != nil {
			return err
		}
	}
	buf := make([]byte, 256)
	for i, s := range socks {
		m := rdsoverdat.Msg{Data: buf}
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return fmt.Errorf("port %d: %w", o.base+i, err)
		}
		want := fmt.Sprintf("%d<-%d:hello %d", o.tbase+i, o.base+i, i)
		if string(buf[:n]) != want || m.Addr.Port() != uint16(o.tbase+i) {
			return fmt.Errorf("port %d: %q from %v, want %q", o.base+i, buf[:n], m.Addr, want)
		}
	}
	fmt.Printf("ports ok %d\n", o.n)
	return nil
}

// stream sends n numbered messages (blocking sends) while receiving recv
// numbered messages, each stream checked for order and exactly-once, then
// b"END". With -reset-after it starts -reset-cmd once that many messages
// are out and one has come in, and keeps sending while the command runs,
// until n messages and 1000 more after the reset are out: the reset hits
// both streams in flight.
func stream(st *rdsoverdat.Stack, o *opts) error {
	s, err := socket(st, o.bind, o)
	if err != nil {
		return err
	}
	dst := netip.MustParseAddrPort(o.to)
	rerr := make(chan error, 1)
	var got atomic.Int64 // numbered messages received so far
	go func() { rerr <- recvNumbered(s, o.recv, &got) }()
	reset := make(chan error, 1)
	total, resetting, resetStarted := o.n, false, false
	for i := 0; i < total || resetting || (o.resetAfter > 0 && !resetStarted); i++ {
		if _, err := s.SendTo(numbered(i, o.size), dst, 0); err != nil {
			return fmt.Errorf("send %d: %w", i, err)
		}
		if o.pace > 0 {
			time.Sleep(o.pace)
		}
		// The reset waits for the peer's stream too, so that both
		// directions are in flight when it hits.
		if o.resetAfter > 0 && i+1 >= o.resetAfter && !resetStarted && (o.recv == 0 || got.Load() > 0) {
			resetting, resetStarted = true, true
			go func() {
				before := got.Load()
				out, err := exec.Command("sh", "-c", o.resetCmd).CombinedOutput()
				fmt.Printf("reset after %d: %v %s\n", o.resetAfter, err, bytes.TrimSpace(out))
				fmt.Printf("reset: %d messages received before it, %d after\n", before, got.Load())
				reset <- err
			}()
		}
		if resetting {
			select {
			case err := <-reset:
				if err != nil {
					return err
				}
				resetting = false
				fmt.Printf("reset done at message %d\n", i)
				total = max(total, i+1000)
			default:
			}
		}
	}
	if _, err := s.SendTo([]byte("END"), dst, 0); err != nil {
		return err
	}
	fmt.Printf("sent %d\n", total)
	if err := <-rerr; err != nil {
		return err
	}
	return waitAcked(s, o)
}

func recvNumbered(s *rdsoverdat.Socket, n int, count *atomic.Int64) error {
	buf := make([]byte, 1<<20)
	for i := range n {
		m := rdsoverdat.Msg{Data: buf}
		got, err := s.RecvMsg(&m, 0)
		if err != nil {
			return fmt.Errorf("receiving message %d: %w", i, err)
		}
		if got < 8 || binary.BigEndian.Uint64(buf) != uint64(i) {
			return fmt.Errorf("message %d where %d was due (lost, duplicated or reordered)", binary.BigEndian.Uint64(buf), i)
		}
		count.Add(1)
	}
	if n > 0 {
		fmt.Printf("received %d in order\n", n)
	}
	return nil
}

// waitAcked waits until TCP has acknowledged everything the socket sent.
func waitAcked(s *rdsoverdat.Socket, o *opts) error {
	end := time.Now().Add(o.timeout)
	for {
		if snd, _ := s.Buffered(); snd == 0 {
			fmt.Println("all acknowledged")
			return nil
		}
		if time.Now().After(end) {
			snd, _ := s.Buffered()
			return fmt.Errorf("%d bytes still unacknowledged", snd)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// congest sends numbered messages without blocking to a kernel socket
// that does not read. The first ENOBUFS means the kernel announced the
// port congested; the sender then tells the kernel (control port) to
// drain, waits for the RDS_CMSG_CONG_UPDATE that the kernel's uncongested
// map produces, and resumes with the message that failed, until n more
// messages went out after the first ENOBUFS; then b"END". SO_SNDBUF is
// small (256 KiB) so that the sender cannot queue everything before the
// kernel's map arrives.
func congest(st *rdsoverdat.Stack, o *opts) error {
	s, err := socket(st, o.bind, o)
	if err != nil {
		return err
	}
	s.SetOption(rdsoverdat.SendBuffer(256 << 10))
	if err := s.SetOption(rdsoverdat.CongMonitor{Enable: true}); err != nil {
		return err
	}
	dst, ctl := netip.MustParseAddrPort(o.to), netip.MustParseAddrPort(o.ctl)
	enobufs, updates, total := 0, 0, 1<<20
	buf := make([]byte, 64)
	for i := 0; i < total; {
		_, err := s.SendTo(numbered(i, o.size), dst, rdsoverdat.MsgDontWait)
		switch {
		case err == nil:
			i++
			continue
		case errors.Is(err, syscall.EAGAIN):
			time.Sleep(100 * time.Microsecond) // SO_SNDBUF full: TCP has not acked yet
			continue
		case !errors.Is(err, syscall.ENOBUFS):
			return fmt.Errorf("send %d: %w", i, err)
		}
		enobufs++
		fmt.Printf("ENOBUFS at message %d\n", i)
		if enobufs == 1 {
			total = i + o.n
			if _, err := s.SendTo([]byte("drain"), ctl, 0); err != nil {
				return err
			}
		}
		for {
			m := rdsoverdat.Msg{Data: buf}
			if _, err := s.RecvMsg(&m, 0); err != nil {
				return fmt.Errorf("waiting for the congestion update: %w", err)
			}
			if len(m.Control) > 0 {
				updates++
				fmt.Printf("cong update %#x\n", uint64(m.Control[0].(rdsoverdat.CongUpdate)))
				break
			}
		}
	}
	if _, err := s.SendTo([]byte("END"), dst, 0); err != nil {
		return err
	}
	fmt.Printf("sent %d enobufs %d updates %d\n", total, enobufs, updates)
	if err := waitAcked(s, o); err != nil {
		return err
	}
	if _, err = s.SendTo([]byte(fmt.Sprint("enobufs ", enobufs)), ctl, 0); err != nil {
		return err
	}
	return waitAcked(s, o) // Close resets the connection: unacked messages would be lost
}

// cancel queues n numbered messages of size bytes to -to, cancels them
// with RDS_CANCEL_SENT_TO at once, sends b"END" there, then n2 numbered
// messages to -to2, which the cancel must not touch.
func cancel(st *rdsoverdat.Stack, o *opts) error {
	s, err := socket(st, o.bind, o)
	if err != nil {
		return err
	}
	a, b := netip.MustParseAddrPort(o.to), netip.MustParseAddrPort(o.to2)
	for i := range o.n2 {
		if _, err := s.SendTo(numbered(i, 64), b, 0); err != nil {
			return err
		}
		if i == 0 {
			// The connection is up (and stays up) before the burst.
			ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
			for snd, _ := s.Buffered(); snd != 0; snd, _ = s.Buffered() {
				if ctx.Err() != nil {
					cancel()
					return errors.New("first message never acknowledged")
				}
				time.Sleep(time.Millisecond)
			}
			cancel()
		}
		if i == o.n2/2 {
			for j := range o.n {
				if _, err := s.SendTo(numbered(j, o.size), a, 0); err != nil {
					return err
				}
			}
			before, _ := s.Buffered()
			if err := s.SetOption(rdsoverdat.CancelSentTo(a)); err != nil {
				return err
			}
			after, _ := s.Buffered()
			fmt.Printf("cancelled: %d bytes unacknowledged before, %d after\n", before, after)
		}
	}
	if _, err := s.SendTo([]byte("END"), a, 0); err != nil {
		return err
	}
	return waitAcked(s, o)
}

func printConns(st *rdsoverdat.Stack) {
	for _, n := range st.Info().Nodes {
		ns, _ := st.NodeStats(n.Addr)
		fmt.Printf("node %v stats %+v\n", n.Addr, ns)
		for _, c := range n.Conns {
			fmt.Printf("conn %v -> %v npaths %d peer_gen %#x stats %+v\n",
				c.Local, c.Remote, c.NPaths, c.PeerGenNum, c.Stats)
			// Per path, for a failed run: where messages wait, and how
			// far each path's sequence spaces got.
			for _, p := range c.Paths {
				fmt.Printf("path %d up %v ups %d next_tx %d next_rx %d queued %d unacked %d\n",
					p.Index, p.Up, p.Ups, p.NextTX, p.NextRX, p.Queued, p.Unacked)
			}
		}
	}
}

// congrecv is the receiving end of kernel -> Go congestion: the data
// socket (SO_RCVBUF -rcvbuf) is not read until the kernel's "drain"
// arrives on the control socket, so its queue passes SO_RCVBUF, the port
// becomes congested and our map tells the kernel, whose non-blocking
// sender then sees ENOBUFS. Draining takes the queue below half of
// SO_RCVBUF, which uncongests the port and sends the map the kernel
// resumes on. Every numbered message must arrive in order until b"END";
// then the kernel reports its ENOBUFS count on the control socket.
func congrecv(st *rdsoverdat.Stack, o *opts) error {
	s, err := socket(st, o.bind, o)
	if err != nil {
		return err
	}
	if err := s.SetOption(rdsoverdat.RecvBuffer(o.rcvbuf)); err != nil {
		return err
	}
	ctl, err := socket(st, o.ctl, o)
	if err != nil {
		return err
	}
	fmt.Println("go ready")
	buf := make([]byte, 1<<16)
	m := rdsoverdat.Msg{Data: buf}
	n, err := ctl.RecvMsg(&m, 0)
	if err != nil {
		return fmt.Errorf("waiting for the kernel's drain: %w", err)
	}
	_, queued := s.Buffered()
	node, _ := st.NodeStats(st.Info().Nodes[0].Addr)
	fmt.Printf("ctl %q: %d bytes queued (SO_RCVBUF %d), congestion maps queued %d sent %d\n",
		buf[:n], queued, o.rcvbuf, node.CongUpdateQueued, node.CongUpdateSent)
	if queued <= o.rcvbuf || node.CongUpdateQueued == 0 {
		return errors.New("the data socket never became congested")
	}
	fmt.Println("congested, draining")
	i := 0
	for ; ; i++ {
		m := rdsoverdat.Msg{Data: buf}
		got, err := s.RecvMsg(&m, 0)
		if err != nil {
			return fmt.Errorf("receiving message %d: %w", i, err)
		}
		if string(buf[:got]) == "END" {
			break
		}
		if got < 8 || binary.BigEndian.Uint64(buf) != uint64(i) {
			return fmt.Errorf("message %d where %d was due (lost, duplicated or reordered)", binary.BigEndian.Uint64(buf), i)
		}
	}
	fmt.Printf("received %d in order\n", i)
	m = rdsoverdat.Msg{Data: buf}
	if n, err = ctl.RecvMsg(&m, 0); err != nil {
		return fmt.Errorf("waiting for the kernel's report: %w", err)
	}
	node, _ = st.NodeStats(st.Info().Nodes[0].Addr)
	fmt.Printf("kernel reports: %s; congestion maps queued %d sent %d\n", buf[:n], node.CongUpdateQueued, node.CongUpdateSent)
	return nil
}
