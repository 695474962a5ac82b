package rdsoverdat

import (
	"testing"
	"time"

	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
)

// RDMA through RDS against plain RDS sends of the same size, over the
// dat transport on soft-iWARP, in the same run:
//
//	go test -c -o /tmp/rds.test ./rdsoverdat
//	cd rdsoverdat; /tmp/rds.test -test.run '^$' -test.bench 'Zerocopy' -test.benchmem -test.count 5
//
// Each moves size bytes from the server to the client (WRITE, Send) or
// from the client to the server (READ) per op, with zcWindow ops in
// flight: the sender waits for a credit the receiver returns on each
// message it receives. Send: a size-byte message, copied by RDS on both
// sides. WRITE and READ: a 0-byte RDMA ACK carrying an op on a mapping
// the client registered once (GetMR), the bytes moving between the two
// applications' buffers directly. Target: RDMA ≥ 1.3× the send
// throughput at 1 MiB. READ asks for RDMAFence, as rds-rdma(7) advises;
// ReadUnfenced does not, so its ACK need not wait for the READ (the
// mapping is leased: dat_rdma.go).

const zcWindow = 8

type zcKind int

const (
	zcSend zcKind = iota
	zcWrite
	zcRead
	zcReadUnfenced
)

func BenchmarkZerocopySend64K(b *testing.B)         { benchZerocopy(b, zcSend, 64<<10) }
func BenchmarkZerocopyWrite64K(b *testing.B)        { benchZerocopy(b, zcWrite, 64<<10) }
func BenchmarkZerocopyRead64K(b *testing.B)         { benchZerocopy(b, zcRead, 64<<10) }
func BenchmarkZerocopyReadUnfenced64K(b *testing.B) { benchZerocopy(b, zcReadUnfenced, 64<<10) }
func BenchmarkZerocopySend1M(b *testing.B)          { benchZerocopy(b, zcSend, 1<<20) }
func BenchmarkZerocopyWrite1M(b *testing.B)         { benchZerocopy(b, zcWrite, 1<<20) }
func BenchmarkZerocopyRead1M(b *testing.B)          { benchZerocopy(b, zcRead, 1<<20) }
func BenchmarkZerocopyReadUnfenced1M(b *testing.B)  { benchZerocopy(b, zcReadUnfenced, 1<<20) }

func benchZerocopy(b *testing.B, kind zcKind, size int) {
	st := NewStack(Config{Transports: []Transport{DAT(DATConfig{})}, SendBuffer: 16 << 20, RecvBuffer: 16 << 20})
	defer st.Close()
	as := testAddrs(2)
	cli, srv := st.Socket(), st.Socket()
	for i, s := range []*Socket{cli, srv} {
		if err := s.Bind(ap(as[i], 0)); err != nil {
			b.Fatal(err)
		}
	}
	cwin := make([]byte, size) // the client's registered memory
	ck, err := cli.GetMR(cwin, RDMAReadWrite)
	if err != nil {
		b.Fatal(err)
	}
	// One server buffer per op in flight, READs land in them: the window,
	// plus the READs an unfenced op's ACK may overtake (at most
	// rdsdat.RDMADepth work requests are outstanding), so that no buffer is
	// reused while a READ into it may still run.
	var local [zcWindow + rdsdat.RDMADepth][]byte
	for i := range local {
		local[i] = make([]byte, size)
	}
	// Bring the connection up and hand over the cookie.
	if _, err := cli.SendMsg(&Msg{Addr: srv.BoundAddr(), Control: []ControlMessage{RDMADest(ck)}}, 0); err != nil {
		b.Fatal(err)
	}
	srv.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := srv.RecvMsg(&Msg{Data: make([]byte, 8)}, 0); err != nil {
		b.Fatal(err)
	}
	credits := make(chan struct{}, zcWindow)
	for range zcWindow {
		credits <- struct{}{}
	}
	done := make(chan error, 1)
	go func() { // the client: receive b.N messages, return a credit each
		rbuf := make([]byte, size)
		m := Msg{Data: rbuf}
		for range b.N {
			if _, err := cli.RecvMsg(&m, 0); err != nil {
				done <- err
				return
			}
			credits <- struct{}{}
		}
		done <- nil
	}()
	payload := make([]byte, size)
	args := RDMAArgs{Cookie: ck, RemoteBytes: uint64(size), Local: [][]byte{nil}}
	if kind == zcWrite {
		args.Flags = RDMAReadWrite
	} else if kind == zcRead {
		args.Flags = RDMAFence
	}
	msg := Msg{Addr: cli.BoundAddr(), Control: []ControlMessage{&args}}
	if kind == zcSend {
		msg = Msg{Addr: cli.BoundAddr(), Data: payload}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		<-credits
		args.Local[0] = local[i%len(local)]
		if _, err := srv.SendMsg(&msg, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
}
