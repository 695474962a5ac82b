package rdsoverdat

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"syscall"
	"testing"
	"time"
)

// Benchmarks between two nodes over the tcp transport, each beside a raw
// TCP baseline (length-prefixed messages over one loopback connection)
// measured in the same run: 64 B message rate, 4 KiB and 64 KiB
// throughput, 64 B round trip. Also the loop transport's 64 B rate.
//
// The stream and round-trip benchmarks also report the process's CPU time (cpu-ns/op)
// and context switches (csw/op) per message, both ends together: on a
// loaded machine ns/op counts the time spent waiting for a core, and the
// switches are what a goroutine hand-off costs with two Ps.

// procUsage is the process's CPU time and context switches so far.
type procUsage struct {
	cpu time.Duration
	csw int64
}

func usageNow() procUsage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return procUsage{}
	}
	return procUsage{time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), ru.Nvcsw + ru.Nivcsw}
}

// report reports the usage since u per iteration of b.
func (u procUsage) report(b *testing.B) {
	now := usageNow()
	b.ReportMetric(float64(now.cpu-u.cpu)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(now.csw-u.csw)/float64(b.N), "csw/op")
}

func benchPair(b *testing.B, cfg Config) (a, r *Socket) {
	st := NewStack(cfg)
	b.Cleanup(func() { st.Close() })
	as := testAddrs(2)
	a, r = st.Socket(), st.Socket()
	for _, s := range []*Socket{a, r} {
		s.SetOption(SendBuffer(4 << 20))
		s.SetOption(RecvBuffer(8 << 20))
	}
	if err := a.Bind(ap(as[0], 0)); err != nil {
		b.Fatal(err)
	}
	if err := r.Bind(ap(as[1], 0)); err != nil {
		b.Fatal(err)
	}
	// Bring the connection up outside the timed part.
	a.SendTo(nil, r.BoundAddr(), 0)
	r.RecvMsg(&Msg{}, 0)
	return a, r
}

func benchStream(b *testing.B, cfg Config, size int) {
	a, r := benchPair(b, cfg)
	benchStreamOn(b, a, r, size)
}

// benchStreamOn streams b.N messages of size bytes from a to r.
func benchStreamOn(b *testing.B, a, r *Socket, size int) {
	msg := make([]byte, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	done := make(chan error, 1)
	go func() {
		m := Msg{Data: make([]byte, size)}
		for range b.N {
			if _, err := r.RecvMsg(&m, 0); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	b.ResetTimer()
	u := usageNow()
	for range b.N {
		if _, err := a.SendTo(msg, r.BoundAddr(), 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	u.report(b)
}

// BenchmarkRDSTCPTput64KSndbufOne streams 64 KiB messages from a socket
// whose SO_SNDBUF holds one: every send waits for the ack of the one
// before it, which the tcp writer polls for (blockForRoom).
func BenchmarkRDSTCPTput64KSndbufOne(b *testing.B) {
	a, r := benchPair(b, tcpBenchCfg)
	a.SetOption(SendBuffer(64 << 10))
	benchStreamOn(b, a, r, 64<<10)
}

func benchRTT(b *testing.B, cfg Config) {
	a, r := benchPair(b, cfg)
	benchRTTOn(b, a, r)
}

// benchRTTOn measures 64 B round trips from a to r, which echoes.
func benchRTTOn(b *testing.B, a, r *Socket) {
	b.ReportAllocs()
	go echo(r, 64)
	msg := make([]byte, 64)
	m := Msg{Data: make([]byte, 64)}
	b.ResetTimer()
	u := usageNow()
	for range b.N {
		a.SendTo(msg, r.BoundAddr(), 0)
		if _, err := a.RecvMsg(&m, 0); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	u.report(b)
}

// BenchmarkRDSTCPDrain64 times a receiver draining a full queue of 64 B
// messages (BenchmarkDaemonTCPDrain64's baseline).
func BenchmarkRDSTCPDrain64(b *testing.B) {
	a, r := benchPair(b, tcpBenchCfg)
	benchDrainOn(b, a, r, func() int { _, n := r.b.(*sock).buffered(); return n })
}

// benchDrainOn sends b.N 64 B messages from a to r in rounds of at most
// 20000, waits untimed until queued (queued: r's bytes waiting), and
// times r receiving them.
func benchDrainOn(b *testing.B, a, r *Socket, queued func() int) {
	msg := make([]byte, 64)
	m := Msg{Data: make([]byte, 64)}
	b.ReportAllocs()
	b.ResetTimer()
	b.StopTimer()
	var cpu time.Duration
	for done := 0; done < b.N; {
		n := min(b.N-done, 20000)
		for range n {
			if _, err := a.SendTo(msg, r.BoundAddr(), 0); err != nil {
				b.Fatal(err)
			}
		}
		for end := time.Now().Add(time.Minute); queued() < n*len(msg); {
			if time.Now().After(end) {
				b.Fatalf("%d of %d bytes queued", queued(), n*len(msg))
			}
			time.Sleep(time.Millisecond)
		}
		b.StartTimer()
		u := usageNow()
		for range n {
			if _, err := r.RecvMsg(&m, 0); err != nil {
				b.Fatal(err)
			}
		}
		cpu += usageNow().cpu - u.cpu
		b.StopTimer()
		done += n
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

var tcpBenchCfg = Config{Transports: []Transport{TCP(TCPConfig{})}}

func BenchmarkRDSTCPRate64(b *testing.B)  { benchStream(b, tcpBenchCfg, 64) }
func BenchmarkRDSTCPTput4K(b *testing.B)  { benchStream(b, tcpBenchCfg, 4096) }
func BenchmarkRDSTCPTput64K(b *testing.B) { benchStream(b, tcpBenchCfg, 65536) }
func BenchmarkRDSTCPRTT64(b *testing.B)   { benchRTT(b, tcpBenchCfg) }
func BenchmarkRDSLoopRate64(b *testing.B) { benchStream(b, Config{}, 64) }
func BenchmarkRawTCPRate64(b *testing.B)  { benchRawStream(b, 64) }
func BenchmarkRawTCPTput4K(b *testing.B)  { benchRawStream(b, 4096) }
func BenchmarkRawTCPTput64K(b *testing.B) { benchRawStream(b, 65536) }
func BenchmarkRawTCPRTT64(b *testing.B)   { benchRawRTT(b) }

func rawPair(b *testing.B) (c1, c2 net.Conn) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() { c, _ := ln.Accept(); acc <- c }()
	c1, err = net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	c2 = <-acc
	b.Cleanup(func() { c1.Close(); c2.Close() })
	return c1, c2
}

// Raw TCP with a 4-byte length prefix per message, buffered like the
// tcp transport (flush when the sender has nothing more queued is not
// knowable here, so flush per message for RTT and when the buffer fills
// for streams, plus at the end).
func benchRawStream(b *testing.B, size int) {
	c1, c2 := rawPair(b)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	done := make(chan error, 1)
	go func() {
		br := bufio.NewReaderSize(c2, 64<<10)
		var hdr [4]byte
		buf := make([]byte, size)
		for range b.N {
			if _, err := io.ReadFull(br, hdr[:]); err != nil {
				done <- err
				return
			}
			if _, err := io.ReadFull(br, buf[:binary.BigEndian.Uint32(hdr[:])]); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	bw := bufio.NewWriterSize(c1, 64<<10)
	msg := make([]byte, size)
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], uint32(size))
	b.ResetTimer()
	u := usageNow()
	for range b.N {
		bw.Write(hdr[:])
		bw.Write(msg)
	}
	bw.Flush()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	u.report(b)
}

func benchRawRTT(b *testing.B) {
	c1, c2 := rawPair(b)
	b.ReportAllocs()
	go func() {
		buf := make([]byte, 68)
		for {
			if _, err := io.ReadFull(c2, buf); err != nil {
				return
			}
			c2.Write(buf)
		}
	}()
	buf := make([]byte, 68)
	b.ResetTimer()
	u := usageNow()
	for range b.N {
		c1.Write(buf)
		if _, err := io.ReadFull(c1, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	u.report(b)
}

var _ = time.Second
