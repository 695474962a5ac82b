package rdsoverdat

import (
	"testing"
	"time"

	"github.com/godapl/godapl/verbs/mem"
)

// An RDMA op in steady state allocates nothing, on either side: the op
// lives in its message (pooled), its check and answer frames use
// preallocated slots, and the local buffers' registrations are cached.
func TestRDMAOpAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool is randomized under -race")
	}
	for _, c := range []struct {
		name string
		cfg  DATConfig
		// most allocations per op allowed: over soft-iWARP one, made by
		// the provider's socket reader (net.rawConn.Read in siw's
		// fillSpill when a READ response spills), not by rdsoverdat
		max float64
	}{
		{"dat-mem", DATConfig{Registry: registryOn(mem.New()), IA: "mem"}, 0.05},
		{"dat-siw", DATConfig{}, 1.05},
	} {
		t.Run(c.name, func(t *testing.T) {
			leakCheck(t)
			r := newDATRig(t, c.cfg)
			win := make([]byte, 4096)
			ck, err := r.cli.GetMR(win, RDMAReadWrite)
			if err != nil {
				t.Fatal(err)
			}
			r.request(t, r.cli, r.srv, []byte("req"), RDMADest(ck))
			src := make([]byte, 4096)
			args := RDMAArgs{Cookie: ck, RemoteBytes: 4096, Local: [][]byte{src}}
			out := Msg{Data: []byte("ack"), Addr: r.cli.BoundAddr(), Control: []ControlMessage{&args}}
			in := Msg{Data: make([]byte, 8)}
			round := func() {
				args.Flags ^= RDMAReadWrite // WRITE and READ in turn
				if _, err := r.srv.SendMsg(&out, 0); err != nil {
					t.Fatal(err)
				}
				if _, err := r.cli.RecvMsg(&in, 0); err != nil {
					t.Fatal(err)
				}
			}
			for range 200 {
				round()
			}
			eventually(t, 5*time.Second, "acks", func() bool { s, _ := r.srv.Buffered(); return s == 0 })
			if n := testing.AllocsPerRun(300, round); n > c.max {
				t.Errorf("%.2f allocs per RDMA op", n)
			}
			st := r.st.nodeAt(r.srvNode).Stats()
			if st.RDMASuccess < 200 || st.RDMARemoteError+st.RDMADropped+st.RDMAOtherError+st.RDMACanceled != 0 {
				t.Errorf("counters %+v", st)
			}
		})
	}
}
