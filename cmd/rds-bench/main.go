// Command rds-bench measures RDS message rate, throughput and round trip
// with the workload of tests/lab/bench/rdsbench.c, over either backend of
// rdsoverdat: -backend tcp (rdsoverdat's tcp transport) or -backend
// kernel (the host kernel's AF_RDS through the same Socket API); -backend
// rawtcp runs the same workload over one plain TCP connection, the
// ceiling for a Go transport over the same kernel TCP. The two ends are
// two processes, typically in two network namespaces:
//
//	rds-bench -backend tcp rx -bind 192.168.77.102:19001 -mode tput -size 64 -ready /tmp/rx.ready
//	rds-bench -backend tcp tx -bind 192.168.77.101:19002 -to 192.168.77.102:19001 -mode tput -size 64 -secs 3
//
// tput: the sender sends -size byte messages for -secs (a multiple of 64
// messages), then a 1-byte end marker; the receiver prints
// "tput size=N msgs=N secs=S MB/s=X msgs/s=Y" (rdsbench's line).
// pingpong: the receiver echoes until the marker; the sender runs 10
// warm-up and -iters timed round trips and prints
// "pingpong size=N iters=N rtt_us avg=A min=M p50=P p99=Q". The receiver
// answers the marker, and the sender exits only then: closing a socket
// drops its unacknowledged messages, in the kernel and here.
// Sends that fail with ENOBUFS or EAGAIN are retried after 50 µs, as
// rdsbench does. The tcp backend listens on -port (default 16386: the
// kernel's rds_tcp holds 16385 in every namespace of the lab VM), so both
// ends must be rds-bench. The receiver creates the -ready file once it is
// bound (a Go program starts in seconds under TCG, so a script waits for
// the file rather than sleeping); -cpuprofile writes a pprof CPU profile,
// -trace a runtime execution trace (which goroutine woke which, and the
// threads and Ps that ran them: go tool trace).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"syscall"
	"time"

	"github.com/godapl/godapl/internal/version"
	"github.com/godapl/godapl/rdsoverdat"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1 // the run failed
	exitUsage  = 2 // bad command line
)

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

// benchArgs is the command line, checked.
type benchArgs struct {
	backend    string
	port       int
	cpuprofile string
	trace      string
	role       string // rx or tx
	bind, to   netip.AddrPort
	mode       string
	size       int
	d          time.Duration
	iters      int
	ready      string
}

// maxSize is the largest message: RDS's 1 MiB.
const maxSize = 1 << 20

const usageHead = `usage: rds-bench [-backend tcp|kernel|rawtcp] [-port N] [-cpuprofile FILE] [-trace FILE] rx|tx [flags]
       (rds-bench rx -h and rds-bench tx -h list the flags of each role)
Exit status: 0 success, 1 runtime failure, 2 bad command line.

`

// parseArgs parses and checks the command line; -h prints the usage to
// stdout and returns flag.ErrHelp.
func parseArgs(args []string, stdout io.Writer) (*benchArgs, error) {
	a := &benchArgs{}
	fs := flag.NewFlagSet("rds-bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by run, in one line
	fs.Usage = func() {}
	fs.StringVar(&a.backend, "backend", "tcp", "tcp (rdsoverdat), kernel (AF_RDS) or rawtcp (plain TCP, the baseline)")
	fs.IntVar(&a.port, "port", 16386, "TCP port of the tcp backend")
	fs.StringVar(&a.cpuprofile, "cpuprofile", "", "write a CPU profile of the run to this file")
	fs.StringVar(&a.trace, "trace", "", "write a runtime execution trace of the run to this file")
	if err := parseOrHelp(fs, args, stdout); err != nil {
		return nil, err
	}
	if fs.NArg() < 1 {
		return nil, errors.New("want a role: rx or tx")
	}
	a.role = fs.Arg(0)
	if a.role != "rx" && a.role != "tx" {
		return nil, fmt.Errorf("role %q: want rx or tx", a.role)
	}
	sub := flag.NewFlagSet("rds-bench "+a.role, flag.ContinueOnError)
	sub.SetOutput(io.Discard)
	sub.Usage = func() {}
	bind := sub.String("bind", "", "local RDS address ip:port")
	to := sub.String("to", "", "receiver's RDS address (tx)")
	sub.StringVar(&a.mode, "mode", "tput", "tput or pingpong")
	sub.IntVar(&a.size, "size", 64, "message size")
	secs := sub.Float64("secs", 3, "tput: seconds to send")
	sub.IntVar(&a.iters, "iters", 2000, "pingpong: timed round trips")
	sub.StringVar(&a.ready, "ready", "", "rx: create this file once bound (and listening), for a script to wait on")
	if err := parseOrHelp(sub, fs.Args()[1:], stdout); err != nil {
		return nil, err
	}
	var err error
	switch {
	case sub.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", sub.Arg(0))
	case a.backend != "tcp" && a.backend != "kernel" && a.backend != "rawtcp":
		return nil, fmt.Errorf("-backend %q: want tcp, kernel or rawtcp", a.backend)
	case a.port <= 0 || a.port > 65535:
		return nil, fmt.Errorf("-port %d: want 1 to 65535", a.port)
	case a.mode != "tput" && a.mode != "pingpong":
		return nil, fmt.Errorf("-mode %q: want tput or pingpong", a.mode)
	case a.size < 1 || a.size > maxSize:
		return nil, fmt.Errorf("-size %d: want 1 to %d bytes", a.size, maxSize)
	case !(*secs > 0):
		return nil, fmt.Errorf("-secs %v: want a positive number", *secs)
	case a.iters < 1:
		return nil, fmt.Errorf("-iters %d: want at least 1", a.iters)
	}
	if a.bind, err = netip.ParseAddrPort(*bind); err != nil {
		return nil, fmt.Errorf("-bind %q: want ip:port", *bind)
	}
	if a.role == "tx" {
		if a.to, err = netip.ParseAddrPort(*to); err != nil {
			return nil, fmt.Errorf("-to %q: want the receiver's ip:port", *to)
		}
	}
	a.d = time.Duration(*secs * float64(time.Second))
	return a, nil
}

// parseOrHelp parses fs; -h prints the usage and fs's flags to stdout.
func parseOrHelp(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usageHead)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
	}
	return err
}

// run is rds-bench without the process around it; it returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	if version.Requested(args) {
		version.Print(stdout, "rds-bench")
		return exitOK
	}
	a, err := parseArgs(args, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "rds-bench: %v (rds-bench -h for the usage)\n", err)
		return exitUsage
	}
	if err := a.exec(stderr); err != nil {
		fmt.Fprintln(stderr, "rds-bench:", err)
		return exitFailed
	}
	return exitOK
}

// exec runs the role a names.
func (a *benchArgs) exec(stderr io.Writer) error {
	if a.cpuprofile != "" {
		f, err := os.Create(a.cpuprofile)
		if err != nil {
			return err
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if a.trace != "" {
		f, err := os.Create(a.trace)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := trace.Start(f); err != nil {
			return err
		}
		defer trace.Stop()
	}
	buf := make([]byte, max(a.size, 64))
	if a.backend == "rawtcp" {
		var err error
		if a.role == "rx" {
			err = rawRx(a.bind, buf, a.mode, a.ready)
		} else {
			err = rawTx(a.to, buf[:a.size], a.mode, a.d, a.iters)
		}
		if err == nil {
			reportCost(stderr, a.role, nil, msgs)
		}
		return err
	}
	cfg := rdsoverdat.Config{SendBuffer: 16 << 20, RecvBuffer: 16 << 20}
	if a.backend == "kernel" {
		cfg.Kernel = true
	} else {
		cfg.Transports = []rdsoverdat.Transport{rdsoverdat.TCP(rdsoverdat.TCPConfig{Port: a.port})}
	}
	st := rdsoverdat.NewStack(cfg)
	defer st.Close()
	s := st.Socket()
	if err := s.SetOption(rdsoverdat.TransportOption(rdsoverdat.TransTCP)); err != nil {
		return err
	}
	if err := s.Bind(a.bind); err != nil {
		return err
	}
	var err error
	switch {
	case a.role == "rx":
		if err = markReady(a.ready); err == nil {
			err = rx(s, buf, a.mode)
		}
	case a.mode == "tput":
		err = tput(s, a.to, buf[:a.size], a.d)
	default:
		err = pingpong(s, a.to, buf[:a.size], a.iters)
	}
	if err != nil {
		return err
	}
	if retries > 0 {
		fmt.Fprintf(stderr, "rds-bench %s: %d sends retried (ENOBUFS/EAGAIN)\n", a.role, retries)
	}
	reportCost(stderr, a.role, s, msgs)
	return nil
}

// markReady creates the -ready file, if any.
func markReady(path string) error {
	if path == "" {
		return nil
	}
	return os.WriteFile(path, nil, 0o644)
}

// retries counts the sends send had to repeat, msgs the data messages
// sent or received (both reported on stderr).
var (
	retries int
	msgs    uint64
	window  machineWindow // rx tput: the machine's CPU over the measured window
)

// send retries on ENOBUFS and EAGAIN as tests/lab/bench/rdsbench.c does.
func send(s *rdsoverdat.Socket, p []byte, dst netip.AddrPort) error {
	for {
		_, err := s.SendTo(p, dst, 0)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.ENOBUFS) && !errors.Is(err, syscall.EAGAIN) {
			return err
		}
		retries++
		time.Sleep(50 * time.Microsecond)
	}
}

func rx(s *rdsoverdat.Socket, buf []byte, mode string) error {
	var size int
	var bytes float64
	var t0 time.Time
	// One Msg for the run: RecvMsg's argument escapes, so a Msg declared
	// per message would be allocated per message, a cost raw TCP's loop
	// does not have.
	var m rdsoverdat.Msg
	for {
		m = rdsoverdat.Msg{Data: buf, Control: m.Control[:0]}
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return err
		}
		if len(m.Control) > 0 {
			continue
		}
		if n == 1 {
			window.finish()
			// End marker: answer it so that the sender does not close
			// (which drops unacknowledged messages) before we have all.
			if err := send(s, buf[:1], m.Addr); err != nil {
				return err
			}
			time.Sleep(300 * time.Millisecond) // our own close would drop the answer
			break
		}
		if mode == "pingpong" {
			if err := send(s, buf[:n], m.Addr); err != nil {
				return err
			}
			continue
		}
		if msgs == 0 {
			window.begin()
			t0 = time.Now()
			size = n
		}
		msgs++
		bytes += float64(n)
	}
	if mode == "tput" {
		dt := time.Since(t0).Seconds()
		fmt.Printf("tput size=%d msgs=%d secs=%.3f MB/s=%.1f msgs/s=%.0f\n", size, msgs, dt, bytes/dt/1e6, float64(msgs)/dt)
	}
	return nil
}

func tput(s *rdsoverdat.Socket, dst netip.AddrPort, p []byte, d time.Duration) error {
	end := time.Now().Add(d)
	for ; msgs&63 != 0 || time.Now().Before(end); msgs++ {
		if err := send(s, p, dst); err != nil {
			return err
		}
	}
	return finish(s, dst)
}

// finish sends the 1-byte end marker and waits for the receiver's answer.
func finish(s *rdsoverdat.Socket, dst netip.AddrPort) error {
	if err := send(s, []byte("E"), dst); err != nil {
		return err
	}
	buf := make([]byte, 64)
	var m rdsoverdat.Msg
	for {
		m = rdsoverdat.Msg{Data: buf, Control: m.Control[:0]}
		n, err := s.RecvMsg(&m, 0)
		if err != nil || n == 1 {
			return err
		}
	}
}

func pingpong(s *rdsoverdat.Socket, dst netip.AddrPort, p []byte, iters int) error {
	rtt := make([]float64, 0, iters)
	buf := make([]byte, len(p)+64)
	var m rdsoverdat.Msg // one for the run (see rx)
	for i := -10; i < iters; i++ {
		t0 := time.Now()
		if err := send(s, p, dst); err != nil {
			return err
		}
		for {
			m = rdsoverdat.Msg{Data: buf, Control: m.Control[:0]}
			if _, err := s.RecvMsg(&m, 0); err != nil {
				return err
			}
			if len(m.Control) == 0 {
				break
			}
		}
		if i >= 0 {
			rtt = append(rtt, time.Since(t0).Seconds()*1e6)
		}
	}
	if err := finish(s, dst); err != nil {
		return err
	}
	printRTT(len(p), rtt)
	return nil
}
