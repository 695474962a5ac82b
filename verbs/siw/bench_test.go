package siw_test

// Benchmarks of the data path over loopback TCP, each next to a raw-TCP
// baseline measured in the same run:
//
//	go test ./verbs/siw -run '^$' -bench . -benchtime 2s
//
// BenchmarkRDMAWrite vs BenchmarkTCPBaseline: bandwidth of large RDMA
// Writes against plain TCP writes of the same size (target: >= 85%).
// BenchmarkSend64: message rate of 64-byte Sends posted in batches
// (target: >= 1M msg/s). BenchmarkPingPong64 vs BenchmarkTCPPingPong64:
// round-trip latency of a 64-byte Send answered by a Send (target: <=
// 1.5x TCP).

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/siw"
	"github.com/godapl/godapl/verbs/verbstest"
)

var benchSizes = []struct {
	name  string
	size  int
	depth int // RDMA Writes kept in flight
}{
	{"64KiB", 64 << 10, 32},
	{"1MiB", 1 << 20, 4},
}

// benchPair connects a QP pair over loopback and closes the devices when
// b ends.
func benchPair(b *testing.B, opts siw.Options, attr verbstest.PairAttr) (sa, sb *verbstest.Side) {
	b.Helper()
	da, db := openPair(b, opts)
	b.Cleanup(func() {
		da.Close()
		db.Close()
	})
	return verbstest.ConnectPair(b, da, db, "127.0.0.1:0", attr)
}

func BenchmarkRDMAWrite(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) { benchWrite(b, bs.size, bs.depth) })
	}
}

func benchWrite(b *testing.B, size, depth int) {
	sa, sb := benchPair(b, siw.Options{}, verbstest.PairAttr{
		BufSize: size, CQDepth: 2 * depth, Caps: verbs.QPCaps{MaxSendWR: depth, MaxRecvWR: 4},
	})
	wrs := []verbs.SendWR{{Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled,
		SGL: []verbs.SGE{sb.Buf.SGE(0, size)}, RemoteAddr: sa.Buf.Addr(0), RKey: sa.Buf.RKey()}}
	wcs := make([]verbs.WC, depth)
	ctx := context.Background()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	inflight := 0
	for i := 0; i < b.N || inflight > 0; {
		for inflight < depth && i < b.N {
			if _, err := sb.QP.PostSend(wrs); err != nil {
				b.Fatal(err)
			}
			inflight++
			i++
		}
		n := sb.CQ.Poll(wcs)
		for _, wc := range wcs[:n] {
			if wc.Status != verbs.WCSuccess {
				b.Fatalf("write completion %+v", wc)
			}
		}
		inflight -= n
		if n == 0 {
			if err := sb.CQ.Wait(ctx, false); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Writes complete when handed to TCP; a Send behind them proves that
	// the peer has placed them all.
	verbstest.RoundTrip(b, sb, sa, 0, 1, 10*time.Second)
}

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(b *testing.B) (client, server *net.TCPConn) {
	b.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp4", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	s := <-accepted
	if s == nil {
		b.Fatal("accept failed")
	}
	b.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

func BenchmarkTCPBaseline(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) {
			c, s := tcpPair(b)
			src, dst := make([]byte, bs.size), make([]byte, bs.size)
			done := make(chan error, 1)
			b.SetBytes(int64(bs.size))
			b.ReportAllocs()
			b.ResetTimer()
			go func() {
				for i := 0; i < b.N; i++ {
					if _, err := io.ReadFull(s, dst); err != nil {
						done <- err
						return
					}
				}
				done <- nil
			}()
			for i := 0; i < b.N; i++ {
				if _, err := c.Write(src); err != nil {
					b.Fatal(err)
				}
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkSend64 measures the message rate of 64-byte Sends. The sender
// posts batches of 64, signalling the last of each; the receiver reposts
// receives in batches as they complete and grants the sender credits, so
// that a Send never finds the receive queue empty (iWARP has no RNR
// retry).
func BenchmarkSend64(b *testing.B) { benchSend64(b, siw.Options{}) }

// BenchmarkSend64NoInline is BenchmarkSend64 with the receive goroutine
// placing every Send, for comparison in one run.
func BenchmarkSend64NoInline(b *testing.B) { benchSend64(b, siw.Options{NoInlineReceive: true}) }

func benchSend64(b *testing.B, opts siw.Options) {
	const (
		size  = 64
		batch = 64
		sqLen = 1024
		rqLen = 8192
	)
	sa, sb := benchPair(b, opts, verbstest.PairAttr{
		BufSize: rqLen * size, CQDepth: 2 * rqLen,
		Caps: verbs.QPCaps{MaxSendWR: sqLen, MaxRecvWR: rqLen, MaxSendSGE: 1, MaxRecvSGE: 1},
	})
	recvs := make([]verbs.RecvWR, rqLen)
	for i := range recvs {
		recvs[i] = verbs.RecvWR{ID: uint64(i), SGL: []verbs.SGE{sa.Buf.SGE(i*size, size)}}
	}
	verbstest.MustPostRecv(b, sa.QP, recvs...)
	var posted atomic.Int64 // receives ever posted: the sender's credit
	posted.Store(rqLen)
	credit := make(chan struct{}, 1)

	sends := make([]verbs.SendWR, batch)
	for i := range sends {
		sends[i] = verbs.SendWR{ID: uint64(i), Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(i*size, size)}}
	}
	sends[batch-1].Flags = verbs.SendSignaled

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	recvErr := make(chan error, 1)
	total := b.N
	b.ReportAllocs()
	b.ResetTimer()
	wg.Add(1)
	go func() {
		defer wg.Done()
		wcs := make([]verbs.WC, 256)
		repost := make([]verbs.RecvWR, 0, 256)
		for got := 0; got < total; {
			n := sa.CQ.Poll(wcs)
			if n == 0 {
				if err := sa.CQ.Wait(ctx, false); err != nil {
					recvErr <- err
					return
				}
				continue
			}
			repost = repost[:0]
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.WCSuccess || wc.ByteLen != size {
					recvErr <- &wcError{wc}
					return
				}
				repost = append(repost, recvs[wc.ID])
			}
			got += n
			if _, err := sa.QP.PostRecv(repost); err != nil {
				recvErr <- err
				return
			}
			posted.Add(int64(n))
			select {
			case credit <- struct{}{}:
			default:
			}
		}
		recvErr <- nil
	}()

	wcs := make([]verbs.WC, 64)
	inflight := 0 // sends posted and not known complete
	for sent := 0; sent < total; {
		k := min(batch, total-sent)
		switch {
		case inflight+k > sqLen:
			n := sb.CQ.Poll(wcs)
			for _, wc := range wcs[:n] {
				if wc.Status != verbs.WCSuccess {
					b.Fatalf("send completion %+v", wc)
				}
			}
			inflight -= n * batch
			if n == 0 {
				if err := sb.CQ.Wait(ctx, false); err != nil {
					b.Fatal(err)
				}
			}
		case int64(sent+k) > posted.Load():
			<-credit
		default:
			wrs := sends[:k]
			if k < batch {
				wrs[k-1].Flags = verbs.SendSignaled
			}
			if _, err := sb.QP.PostSend(wrs); err != nil {
				b.Fatal(err)
			}
			sent += k
			inflight += batch
		}
	}
	if err := <-recvErr; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "msg/s")
	cancel()
	wg.Wait()
}

type wcError struct{ wc verbs.WC }

func (e *wcError) Error() string { return "completion " + e.wc.Status.String() }

// BenchmarkPingPong64 measures the round trip of a 64-byte Send answered
// by a 64-byte Send; each side blocks in CQ.Wait, which reads and places
// the answer itself (inline receive). BenchmarkPingPong64NoInline is the
// same with the receive goroutine doing that, for comparison in one run.
func BenchmarkPingPong64(b *testing.B) { benchPingPong(b, siw.Options{}) }

func BenchmarkPingPong64NoInline(b *testing.B) { benchPingPong(b, siw.Options{NoInlineReceive: true}) }

func benchPingPong(b *testing.B, opts siw.Options) {
	const size = 64
	sa, sb := benchPair(b, opts, verbstest.PairAttr{BufSize: 4096, Caps: verbs.QPCaps{MaxSendWR: 16, MaxRecvWR: 16}})
	recvA := []verbs.RecvWR{{ID: 1, SGL: []verbs.SGE{sa.Buf.SGE(0, size)}}}
	recvB := []verbs.RecvWR{{ID: 2, SGL: []verbs.SGE{sb.Buf.SGE(0, size)}}}
	sendA := []verbs.SendWR{{ID: 3, Opcode: verbs.OpSend, SGL: []verbs.SGE{sa.Buf.SGE(size, size)}}}
	sendB := []verbs.SendWR{{ID: 4, Opcode: verbs.OpSend, SGL: []verbs.SGE{sb.Buf.SGE(size, size)}}}
	verbstest.MustPostRecv(b, sa.QP, recvA...)
	verbstest.MustPostRecv(b, sb.QP, recvB...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// await waits for one receive completion on s and reposts it.
	await := func(s *verbstest.Side, recv []verbs.RecvWR, wcs []verbs.WC) error {
		for {
			if n := s.CQ.Poll(wcs[:1]); n == 1 {
				if wcs[0].Status != verbs.WCSuccess {
					return &wcError{wcs[0]}
				}
				_, err := s.QP.PostRecv(recv)
				return err
			}
			if err := s.CQ.Wait(ctx, false); err != nil {
				return err
			}
		}
	}
	n := b.N
	echoErr := make(chan error, 1)
	go func() {
		wcs := make([]verbs.WC, 1)
		for i := 0; i < n; i++ {
			if err := await(sb, recvB, wcs); err != nil {
				echoErr <- err
				return
			}
			if _, err := sb.QP.PostSend(sendB); err != nil {
				echoErr <- err
				return
			}
		}
		echoErr <- nil
	}()
	wcs := make([]verbs.WC, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < n; i++ {
		if _, err := sa.QP.PostSend(sendA); err != nil {
			b.Fatal(err)
		}
		if err := await(sa, recvA, wcs); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := <-echoErr; err != nil {
		b.Fatal(err)
	}
	inline := sa.Dev.Stats().InlineFrames + sb.Dev.Stats().InlineFrames
	b.ReportMetric(float64(inline)/float64(2*n), "inline/msg")
}

func BenchmarkTCPPingPong64(b *testing.B) {
	c, s := tcpPair(b)
	n := b.N
	echoErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 64)
		for i := 0; i < n; i++ {
			if _, err := io.ReadFull(s, buf); err != nil {
				echoErr <- err
				return
			}
			if _, err := s.Write(buf); err != nil {
				echoErr <- err
				return
			}
		}
		echoErr <- nil
	}()
	buf := make([]byte, 64)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < n; i++ {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := <-echoErr; err != nil {
		b.Fatal(err)
	}
}
