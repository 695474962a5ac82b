package rdsoverdat

import (
	"bytes"
	"testing"

	"github.com/godapl/godapl/verbs/mem"

	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
)

// Which RDMA ACKs wait for their op's READs over dat (dat_rdma.go): the
// ones that ask with RDMAFence, and READs on a use-once mapping, whose
// ACK ends the mapping; not an unfenced READ under a lease, as rds_ib
// fences only on request.
func TestDATFenced(t *testing.T) {
	for _, c := range []struct {
		write, fence, leased bool
		want                 bool
	}{
		{write: false, fence: true, leased: true, want: true},
		{write: false, fence: true, leased: false, want: true},
		{write: false, fence: false, leased: false, want: true}, // use-once: the ACK releases the mapping
		{write: false, fence: false, leased: true, want: false}, // the user's choice, as in rds_ib
		{write: true, fence: true, leased: true, want: true},
		{write: true, fence: false, leased: false, want: false},
		{write: true, fence: false, leased: true, want: false},
	} {
		op := &rdmaOp{rdmaOpArgs: rdmaOpArgs{write: c.write, fence: c.fence}}
		op.check.Leased = c.leased
		if got := rdsdat.Fenced((*xop)(op)); got != c.want {
			t.Errorf("write=%v fence=%v leased=%v: fenced %v, want %v", c.write, c.fence, c.leased, got, c.want)
		}
	}
	if rdsdat.Fenced(nil) {
		t.Error("a message without an op is fenced")
	}
}

// Unfenced READ ops over dat, on both kinds of mapping, each op reading
// its own 4 KiB: every op succeeds with the client's data, its ACK
// arrives, and the connection never breaks. On a use-once mapping the
// ACK releases the mapping, so the transport still fences it; under a
// lease it does not, and a FreeMR right after the last ACK still waits
// for the READs (the revoked record is fenced behind them).
func TestDATUnfencedReads(t *testing.T) {
	for _, rig := range []struct {
		name string
		cfg  DATConfig
	}{{"dat-mem", DATConfig{Registry: registryOn(mem.New()), IA: "mem"}}, {"dat-siw", DATConfig{}}} {
		t.Run(rig.name, func(t *testing.T) {
			leakCheck(t)
			r := newDATRig(t, rig.cfg)
			const ops, size = 24, 4096
			win := make([]byte, ops*size)
			pattern(win, 3)
			dsts := make([][]byte, ops)
			for i := range dsts {
				dsts[i] = make([]byte, size)
			}
			check := func(what string, notes []RDMANotify) {
				t.Helper()
				for _, n := range notes {
					if n.Status != RDMASuccess {
						t.Fatalf("%s: op %d: %v", what, n.UserToken, n.Status)
					}
					i := n.UserToken
					if !bytes.Equal(dsts[i], win[i*size:][:size]) {
						t.Fatalf("%s: op %d completed without its data", what, i)
					}
				}
				if k := r.resets(); k != 0 {
					t.Fatalf("%s: the connection was reset %d times", what, k)
				}
			}

			// Use-once: one mapping per op, the server READs it unfenced.
			for i := range ops / 2 {
				ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win[i*size:][:size], Flags: RDMAUseOnce})
				r.op(t, r.srv, r.cli, []byte{'u', byte(i)}, RDMAArgs{Cookie: ck, RemoteBytes: size,
					Local: [][]byte{dsts[i]}, Flags: RDMANotifyMe, UserToken: uint64(i)})
			}
			for i := range ops / 2 {
				expectNext(t, r.cli, []byte{'u', byte(i)})
			}
			check("use-once", r.notes(t, r.srv, ops/2))
			eventually(t, rigWait, "use-once mappings released", func() bool { return r.cli.MRs() == 0 })

			// Leased: one mapping, every op unfenced, FreeMR after the last ACK.
			ck, err := r.cli.GetMR(win, 0)
			if err != nil {
				t.Fatal(err)
			}
			r.request(t, r.cli, r.srv, []byte("req"), RDMADest(ck))
			for i := ops / 2; i < ops; i++ {
				r.op(t, r.srv, r.cli, []byte{'l', byte(i)}, RDMAArgs{Cookie: ck, RemoteAddr: uint64(i * size),
					RemoteBytes: size, Local: [][]byte{dsts[i]}, Flags: RDMANotifyMe, UserToken: uint64(i)})
			}
			for i := ops / 2; i < ops; i++ {
				expectNext(t, r.cli, []byte{'l', byte(i)})
			}
			if err := r.cli.FreeMR(ck, RDMAInvalidate); err != nil {
				t.Fatal(err)
			}
			check("leased", r.notes(t, r.srv, ops/2))
			r.srv.SendTo([]byte("after"), r.cli.BoundAddr(), 0)
			expectNext(t, r.cli, []byte("after"))
			check("after FreeMR", nil)
		})
	}
}
