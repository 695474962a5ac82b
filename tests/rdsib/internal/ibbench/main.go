// Command ibbench measures RDS over RDMA between two lab VMs with one
// workload over either side's implementation: -backend dat (rdsoverdat's
// dat transport on a DAT IA, e.g. ofa-v2-rxe0-1 with the rdmacore build
// tag) or -backend kernel (the kernel's AF_RDS on RDS_TRANS_IB, i.e.
// rds_rdma), so that tests/rdsib/bench.sh can set them side by side in
// one boot.
//
//	ibbench -backend dat -ia ofa-v2-rxe0-1 rx -bind 192.168.77.31:19001
//	ibbench -backend dat -ia ofa-v2-rxe0-1 tx -bind 192.168.77.32:19002 -to 192.168.77.31:19001 -mode tput -size 65536 -secs 5
//
// tput: the sender sends -size byte messages for -secs, blocking while
// SO_SNDBUF is full or the receiver's port congested, then a 1-byte
// marker; the receiver answers the marker with the number of messages it
// received, and the sender prints "RESULT tput size=N msgs=M MBps=X
// msgps=Y" over the time until that answer, so every message counted
// was delivered. rtt: -iters round trips of -size bytes, each echoed by
// the receiver, after 20 warm-up ones; prints "RESULT rtt size=N iters=I
// p50_us=P avg_us=A". The receiver serves one sender, then exits.
//
// -buf sets SO_SNDBUF and SO_RCVBUF, both backends alike (the kernel
// backend forces them as root, past net.core.wmem_max and rmem_max;
// each side prints a BUF line with what its socket got). By default
// SO_SNDBUF is net.core.wmem_max and SO_RCVBUF net.core.rmem_max
// (212992 each in the lab VM), what the kernel grants an application
// that asks for more without privilege: a sender then runs a few
// thousand small messages ahead of its receiver, as RDS applications
// do, rather than a queue that takes tens of seconds to drain.
//
// A socket's close discards what it has not sent, so neither side
// closes on its last message: the receiver, once it has answered,
// waits for the sender's goodbye (or -linger without a message) and
// answers a marker again if one comes; the sender sends its marker
// again if no answer comes within -retry, and says goodbye once it has
// one.
//
// -cpuprofile writes a Go CPU profile of the run; -stats prints, at the
// end, a "STATS" line of the dat backend's node counters (messages
// delivered, ack-only frames sent and received), so that what each side
// sends per message can be set against the kernel's counters. A tput
// receiver also prints a "PROC" line at the marker: its CPU time,
// context switches and Go scheduler transitions per message received;
// a tput sender prints one for its run, per message sent, up to the
// answer. Each PROC line comes with a VM line, the whole VM's CPU per
// message over the same span (user, system and softirq, from
// /proc/stat), and an RXE line, the RDMA devices' hw_counters that
// moved (RNR NAKs, retries, out-of-sequence and duplicate requests).
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "ibbench:", err)
		os.Exit(1)
	}
}

// Message kinds, the first payload byte.
const (
	kindData   = 'd' // tput: counted
	kindEcho   = 'e' // rtt: sent back
	kindMarker = 'm' // tput's end: answered with the count
	kindBye    = 'q' // the sender is done: the receiver may exit
)

func run(args []string) error {
	fs := flag.NewFlagSet("ibbench", flag.ContinueOnError)
	backend := fs.String("backend", "dat", "dat (rdsoverdat) or kernel (AF_RDS)")
	ia := fs.String("ia", "ofa-v2-rxe0-1", "the dat backend's DAT IA")
	prof := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	stats := fs.Bool("stats", false, "print the dat backend's node counters at the end")
	bufSize := fs.Int("buf", 0, "SO_SNDBUF and SO_RCVBUF (0: net.core.wmem_max and rmem_max)")
	retry := fs.Duration("retry", 30*time.Second, "sender: send the marker again after this long without an answer")
	linger := fs.Duration("linger", 120*time.Second, "receiver: after answering, exit after this long without a message")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if fs.NArg() < 1 || (fs.Arg(0) != "rx" && fs.Arg(0) != "tx") {
		return errors.New("want a role: rx or tx")
	}
	role := fs.Arg(0)
	sub := flag.NewFlagSet("ibbench "+role, flag.ContinueOnError)
	bind := sub.String("bind", "", "local RDS address ip:port")
	to := sub.String("to", "", "tx: the receiver's RDS address")
	mode := sub.String("mode", "tput", "tx: tput or rtt")
	size := sub.Int("size", 64, "tx: message size (2 to 1 MiB)")
	secs := sub.Float64("secs", 5, "tput: seconds to send")
	iters := sub.Int("iters", 2000, "rtt: timed round trips")
	ready := sub.String("ready", "", "rx: create this file once bound")
	window := sub.String("window", "", "tx tput: create FILE.start as sending starts and FILE.end at the answer")
	if err := sub.Parse(fs.Args()[1:]); err != nil {
		return err
	}
	local, err := netip.ParseAddrPort(*bind)
	if err != nil {
		return fmt.Errorf("-bind: %w", err)
	}
	snd, rcv := *bufSize, *bufSize
	if *bufSize <= 0 {
		if snd, err = sysctlInt("/proc/sys/net/core/wmem_max"); err != nil {
			return err
		}
		if rcv, err = sysctlInt("/proc/sys/net/core/rmem_max"); err != nil {
			return err
		}
	}
	cfg := rdsoverdat.Config{SendBuffer: snd, RecvBuffer: rcv}
	switch *backend {
	case "kernel":
		cfg.Kernel = true
	case "dat":
		cfg.Transports = []rdsoverdat.Transport{rdsoverdat.DAT(rdsoverdat.DATConfig{IA: *ia})}
	default:
		return fmt.Errorf("-backend %q: want dat or kernel", *backend)
	}
	st := rdsoverdat.NewStack(cfg)
	defer st.Close()
	s := st.Socket()
	if err := s.SetOption(rdsoverdat.TransportOption(rdsoverdat.TransIB)); err != nil {
		return err
	}
	if err := s.Bind(local); err != nil {
		return err
	}
	if err := printBuf(s, role); err != nil {
		return err
	}
	if *stats {
		defer printStats(s, role)
	}
	if role == "rx" {
		if *ready != "" {
			if err := os.WriteFile(*ready, nil, 0o644); err != nil {
				return err
			}
		}
		return rx(s, *linger)
	}
	dst, err := netip.ParseAddrPort(*to)
	if err != nil {
		return fmt.Errorf("-to: %w", err)
	}
	if *size < 2 || *size > 1<<20 {
		return fmt.Errorf("-size %d: want 2 to 1 MiB", *size)
	}
	buf := make([]byte, *size)
	switch *mode {
	case "tput":
		return tput(s, dst, buf, time.Duration(*secs*float64(time.Second)), *retry, *window)
	case "rtt":
		return rtt(s, dst, buf, *iters, *retry)
	}
	return fmt.Errorf("-mode %q: want tput or rtt", *mode)
}

// rx serves one sender: counts data, echoes echo messages, answers every
// marker with the count, and returns at the sender's goodbye, or once
// linger passes without a message after an answer.
func rx(s *rdsoverdat.Socket, linger time.Duration) error {
	buf := make([]byte, 1<<20)
	var n uint64
	var first procSnap // at the first data message
	answered := false
	// One Msg for the run: RecvMsg takes its address, so one declared
	// per message would cost an allocation per message on either backend.
	var m rdsoverdat.Msg
	for {
		m.Data = buf
		l, err := s.RecvMsg(&m, 0)
		if answered && errors.Is(err, os.ErrDeadlineExceeded) {
			return nil // the goodbye was lost: the sender has its answer
		}
		if err != nil {
			return err
		}
		if l == 0 {
			continue
		}
		switch buf[0] {
		case kindData:
			if n == 0 {
				first = snapProc()
			}
			n++
		case kindEcho:
			if _, err := s.SendTo(buf[:l], m.Addr, 0); err != nil {
				return err
			}
		case kindMarker:
			if n > 0 && !answered {
				printProc("rx", first, snapProc(), n)
			}
			var ans [8]byte
			binary.BigEndian.PutUint64(ans[:], n)
			if _, err := s.SendTo(ans[:], m.Addr, 0); err != nil {
				return err
			}
			answered = true
		case kindBye:
			return nil
		}
		if answered {
			s.SetReadDeadline(time.Now().Add(linger))
		}
	}
}

// finish sends the marker to dst until an answer comes into in (the
// marker again after each retry without one), then the goodbye. It
// returns the answer's length.
func finish(s *rdsoverdat.Socket, dst netip.AddrPort, in []byte, retry time.Duration) (int, error) {
	for {
		if _, err := s.SendTo([]byte{kindMarker}, dst, 0); err != nil {
			return 0, err
		}
		s.SetReadDeadline(time.Now().Add(retry))
		m := rdsoverdat.Msg{Data: in}
		l, err := s.RecvMsg(&m, 0)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			continue
		}
		if err != nil {
			return 0, err
		}
		s.SetReadDeadline(time.Time{})
		_, err = s.SendTo([]byte{kindBye}, dst, 0)
		return l, err
	}
}

// tput runs the throughput sender. With window set it marks the measured
// span with window+".start" and window+".end", so that the host can read
// both VMs' QEMU CPU over the span alone, without either process's start
// and exit.
func tput(s *rdsoverdat.Socket, dst netip.AddrPort, buf []byte, d, retry time.Duration, window string) error {
	buf[0] = kindData
	if err := mark(window, ".start"); err != nil {
		return err
	}
	p0 := snapProc()
	t0 := time.Now()
	end := t0.Add(d)
	var sent uint64
	for ; sent%64 != 0 || time.Now().Before(end); sent++ {
		if _, err := s.SendTo(buf, dst, 0); err != nil {
			return err
		}
	}
	var ans [8]byte
	if _, err := finish(s, dst, ans[:], retry); err != nil {
		return err
	}
	el := time.Since(t0).Seconds()
	p1 := snapProc()
	if err := mark(window, ".end"); err != nil {
		return err
	}
	printProc("tx", p0, p1, sent)
	got := binary.BigEndian.Uint64(ans[:])
	if got != sent {
		return fmt.Errorf("sent %d messages, the receiver counted %d", sent, got)
	}
	fmt.Printf("RESULT tput size=%d msgs=%d MBps=%.3f msgps=%.1f\n", len(buf), sent, float64(sent)*float64(len(buf))/el/1e6, float64(sent)/el)
	return nil
}

func rtt(s *rdsoverdat.Socket, dst netip.AddrPort, buf []byte, iters int, retry time.Duration) error {
	buf[0] = kindEcho
	in := make([]byte, len(buf))
	rtts := make([]time.Duration, 0, iters)
	var m rdsoverdat.Msg // one for the run, as in rx
	for i := range iters + 20 {
		t0 := time.Now()
		if _, err := s.SendTo(buf, dst, 0); err != nil {
			return err
		}
		m.Data = in
		if _, err := s.RecvMsg(&m, 0); err != nil {
			return err
		}
		if i >= 20 {
			rtts = append(rtts, time.Since(t0))
		}
	}
	if _, err := finish(s, dst, in, retry); err != nil {
		return err
	}
	var sum time.Duration
	for _, r := range rtts {
		sum += r
	}
	slices.Sort(rtts)
	fmt.Printf("RESULT rtt size=%d iters=%d p50_us=%.1f avg_us=%.1f\n", len(buf), iters,
		float64(rtts[len(rtts)/2].Nanoseconds())/1e3, float64(sum.Nanoseconds())/float64(len(rtts))/1e3)
	return nil
}

// mark creates the file window+suffix, if window is set.
func mark(window, suffix string) error {
	if window == "" {
		return nil
	}
	return os.WriteFile(window+suffix, nil, 0o644)
}

// sysctlInt reads an integer sysctl from its /proc/sys file.
func sysctlInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// printBuf prints a BUF line, the SO_SNDBUF and SO_RCVBUF the socket
// runs with as the backend reports them (the kernel's sk_sndbuf/2 and
// sk_rcvbuf/2, i.e. what RDS counts), so that a run shows both
// backends' queues rather than what was asked.
func printBuf(s *rdsoverdat.Socket, role string) error {
	var snd rdsoverdat.SendBuffer
	var rcv rdsoverdat.RecvBuffer
	if err := s.Option(&snd); err != nil {
		return err
	}
	if err := s.Option(&rcv); err != nil {
		return err
	}
	fmt.Printf("BUF role=%s sndbuf=%d rcvbuf=%d\n", role, snd, rcv)
	return nil
}

// printStats prints the node counters of s's node, if it has any (the
// dat backend).
func printStats(s *rdsoverdat.Socket, role string) {
	st, ok := s.NodeStats()
	if !ok {
		return
	}
	fmt.Printf("STATS role=%s delivered=%d direct=%d sent=%d ack_sent=%d ack_received=%d dropped_acked=%d"+
		" queue_full=%d cong_blocked=%d cong_sent=%d cong_received=%d tx_ring_full=%d\n",
		role, st.RecvDelivered, st.RecvDirect, st.SendQueued, st.AckSent, st.AckReceived, st.SendDropAcked,
		st.SendQueueFull, st.CongSendBlocked, st.CongUpdateSent, st.CongUpdateReceived, st.TxRingFull)
}
