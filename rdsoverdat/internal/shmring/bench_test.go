package shmring

import (
	"context"
	"encoding/binary"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkStream streams records from one goroutine to another through
// a ring and, in the same run, through a unix SOCK_SEQPACKET pair (what
// the data path would cost over the control socket): records/s, bytes/s
// (MB/s), and for the ring the eventfd writes per record, which a busy
// stream keeps near zero.
func BenchmarkStream(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"64B", 64}, {"64KiB", 64 << 10}} {
		b.Run("ring/"+size.name, func(b *testing.B) { benchRing(b, size.n) })
		b.Run("seqpacket/"+size.name, func(b *testing.B) { benchSeqpacket(b, size.n) })
	}
}

func benchRing(b *testing.B, n int) {
	prod, cons := pair(b, 1<<20)
	ctx := context.Background()
	rec := make([]byte, n)
	done := make(chan error, 1)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range b.N {
			if err := prod.Write(ctx, rec); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	buf := make([]byte, n)
	for range b.N {
		if _, err := cons.Read(ctx, buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(prod.Stats().Signals+cons.Stats().Signals)/float64(b.N), "wakeups/record")
	b.ReportMetric(float64(prod.Stats().Sleeps)/float64(b.N), "producer-sleeps/record")
	b.ReportMetric(float64(cons.Stats().Sleeps)/float64(b.N), "consumer-sleeps/record")
}

func benchSeqpacket(b *testing.B, n int) {
	w, r := socketpair(b, unix.SOCK_SEQPACKET)
	rec := make([]byte, n)
	done := make(chan error, 1)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	go func() {
		for range b.N {
			if _, err := w.Write(rec); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	buf := make([]byte, n)
	for range b.N {
		if _, err := r.Read(buf); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkPingPong sends a 64-byte record and waits for its echo, the
// shape of a request and its reply: every record finds the other side
// asleep or about to be, so this measures the wake-up path, against the
// same over a SOCK_SEQPACKET pair.
func BenchmarkPingPong(b *testing.B) {
	b.Run("ring", func(b *testing.B) {
		ping, pingCons := pair(b, 1<<16)
		pongProd, pong := pair(b, 1<<16)
		ctx := context.Background()
		done := make(chan error, 1)
		go func() {
			buf := make([]byte, 64)
			for {
				n, err := pingCons.Read(ctx, buf)
				if err != nil {
					done <- nil // the benchmark closed the ring
					return
				}
				if err := pongProd.Write(ctx, buf[:n]); err != nil {
					done <- err
					return
				}
			}
		}()
		rec, buf := make([]byte, 64), make([]byte, 64)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if err := ping.Write(ctx, rec); err != nil {
				b.Fatal(err)
			}
			if _, err := pong.Read(ctx, buf); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		ping.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		s := [4]Stats{ping.Stats(), pingCons.Stats(), pongProd.Stats(), pong.Stats()}
		var sig uint64
		for _, x := range s {
			sig += x.Signals
		}
		b.ReportMetric(float64(sig)/float64(b.N), "wakeups/op")
	})
	b.Run("seqpacket", func(b *testing.B) {
		c1, c2 := socketpair(b, unix.SOCK_SEQPACKET)
		done := make(chan error, 1)
		go func() {
			buf := make([]byte, 64)
			for {
				n, err := c2.Read(buf)
				if err != nil {
					done <- nil
					return
				}
				if _, err := c2.Write(buf[:n]); err != nil {
					done <- err
					return
				}
			}
		}()
		rec, buf := make([]byte, 64), make([]byte, 64)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			if _, err := c1.Write(rec); err != nil {
				b.Fatal(err)
			}
			if _, err := c1.Read(buf); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		c1.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkPingPongProcess is BenchmarkPingPong/ring with the echo in
// another process, as between a client and the daemon.
func BenchmarkPingPongProcess(b *testing.B) {
	to, from, _, _ := peer(b, "echo", 1<<16)
	ctx := context.Background()
	rec, buf := make([]byte, 64), make([]byte, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := to.Write(ctx, rec); err != nil {
			b.Fatal(err)
		}
		if _, err := from.Read(ctx, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(to.Stats().Signals+from.Stats().Signals)/float64(b.N), "wakeups/op")
}

// BenchmarkStreamProcess is BenchmarkStream with the consumer in
// another process: records through a ring against messages on the
// SOCK_SEQPACKET control socket itself, until the peer has counted
// them all.
func BenchmarkStreamProcess(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"64B", 64}, {"64KiB", 64 << 10}} {
		for _, part := range []string{"sink", "sinkseq"} {
			name := map[string]string{"sink": "ring/", "sinkseq": "seqpacket/"}[part] + size.name
			b.Run(name, func(b *testing.B) { benchStreamProcess(b, part, size.n) })
		}
	}
}

func benchStreamProcess(b *testing.B, part string, n int) {
	to, _, conn, cmd := peer(b, part, 1<<20)
	ctx := context.Background()
	rec := make([]byte, n)
	b.SetBytes(int64(n))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		var err error
		if part == "sink" {
			err = to.Write(ctx, rec)
		} else {
			_, err = conn.Write(rec)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if part == "sink" {
		to.Close()
	} else if _, err := conn.Write([]byte{0}); err != nil {
		b.Fatal(err)
	}
	var got [8]byte
	if _, err := conn.Read(got[:]); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	if c := binary.NativeEndian.Uint64(got[:]); c != uint64(b.N) {
		b.Fatalf("peer counted %d records of %d", c, b.N)
	}
	if err := cmd.Wait(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if part == "sink" {
		b.ReportMetric(float64(to.Stats().Signals)/float64(b.N), "wakeups/record")
	}
}
