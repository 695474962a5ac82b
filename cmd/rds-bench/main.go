// Command rds-bench measures RDS message rate, throughput and round trip
// with the workload of the lab's rdsbench.c, over either backend of
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
// the file rather than sleeping); -cpuprofile writes a pprof CPU profile.
package main

import (
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

func main() {
	backend := flag.String("backend", "tcp", "tcp (rdsoverdat), kernel (AF_RDS) or rawtcp (plain TCP, the baseline)")
	port := flag.Int("port", 16386, "TCP port of the tcp backend")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the run to this file")
	flag.Parse()
	if flag.NArg() < 1 {
		fmt.Fprintln(os.Stderr, "usage: rds-bench [-backend tcp|kernel|rawtcp] rx|tx [flags]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(flag.Arg(0), flag.ExitOnError)
	bind := fs.String("bind", "", "local RDS address ip:port")
	to := fs.String("to", "", "receiver's RDS address (tx)")
	mode := fs.String("mode", "tput", "tput or pingpong")
	size := fs.Int("size", 64, "message size")
	secs := fs.Float64("secs", 3, "tput: seconds to send")
	iters := fs.Int("iters", 2000, "pingpong: timed round trips")
	ready := fs.String("ready", "", "rx: create this file once bound (and listening), for a script to wait on")
	fs.Parse(flag.Args()[1:])

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fail(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	a, err := netip.ParseAddrPort(*bind)
	if err != nil {
		fail(err)
	}
	buf := make([]byte, max(*size, 64))
	var dst netip.AddrPort
	if flag.Arg(0) == "tx" {
		if dst, err = netip.ParseAddrPort(*to); err != nil {
			fail(err)
		}
	}
	d := time.Duration(*secs * float64(time.Second))

	cfg := rdsoverdat.Config{SendBuffer: 16 << 20, RecvBuffer: 16 << 20}
	switch *backend {
	case "rawtcp":
		switch flag.Arg(0) {
		case "rx":
			err = rawRx(a, buf, *mode, *ready)
		case "tx":
			err = rawTx(dst, buf[:*size], *mode, d, *iters)
		default:
			err = fmt.Errorf("unknown role %q", flag.Arg(0))
		}
		if err != nil {
			fail(err)
		}
		return
	case "tcp":
		cfg.Transports = []rdsoverdat.Transport{rdsoverdat.TCP(rdsoverdat.TCPConfig{Port: *port})}
	case "kernel":
		cfg.Kernel = true
	default:
		fail(fmt.Errorf("unknown backend %q", *backend))
	}
	st := rdsoverdat.NewStack(cfg)
	defer st.Close()
	s := st.Socket()
	if err := s.SetOption(rdsoverdat.TransportOption(rdsoverdat.TransTCP)); err != nil {
		fail(err)
	}
	if err := s.Bind(a); err != nil {
		fail(err)
	}
	switch flag.Arg(0) {
	case "rx":
		if err := markReady(*ready); err != nil {
			fail(err)
		}
		err = rx(s, buf, *mode)
	case "tx":
		if *mode == "tput" {
			err = tput(s, dst, buf[:*size], d)
		} else {
			err = pingpong(s, dst, buf[:*size], *iters)
		}
	default:
		err = fmt.Errorf("unknown role %q", flag.Arg(0))
	}
	if err != nil {
		fail(err)
	}
	if retries > 0 {
		fmt.Fprintf(os.Stderr, "rds-bench %s: %d sends retried (ENOBUFS/EAGAIN)\n", flag.Arg(0), retries)
	}
}

// markReady creates the -ready file, if any.
func markReady(path string) error {
	if path == "" {
		return nil
	}
	return os.WriteFile(path, nil, 0o644)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "rds-bench:", err)
	os.Exit(1)
}

// retries counts the sends send had to repeat (reported on stderr).
var retries int

// send retries on ENOBUFS and EAGAIN like rdsbench's send_retry.
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
	var msgs, size int
	var bytes float64
	var t0 time.Time
	for {
		m := rdsoverdat.Msg{Data: buf}
		n, err := s.RecvMsg(&m, 0)
		if err != nil {
			return err
		}
		if len(m.Control) > 0 {
			continue
		}
		if n == 1 {
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
	for n := 0; n&63 != 0 || time.Now().Before(end); n++ {
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
	for {
		m := rdsoverdat.Msg{Data: buf}
		n, err := s.RecvMsg(&m, 0)
		if err != nil || n == 1 {
			return err
		}
	}
}

func pingpong(s *rdsoverdat.Socket, dst netip.AddrPort, p []byte, iters int) error {
	rtt := make([]float64, 0, iters)
	buf := make([]byte, len(p)+64)
	for i := -10; i < iters; i++ {
		t0 := time.Now()
		if err := send(s, p, dst); err != nil {
			return err
		}
		for {
			m := rdsoverdat.Msg{Data: buf}
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
