package shmring

import (
	"context"
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
