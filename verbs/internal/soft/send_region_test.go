package soft

import (
	"testing"

	"github.com/godapl/godapl/verbs"
)

// TestSendSlicesKeptRegion: the transmit of a one-SGE Send uses the
// region its post checked (send_region.go): it gets the posted bytes
// with the region held, and fails with FaultSTag, holding nothing, once
// the MR was invalidated or deregistered after the post, as the full
// resolution does. A two-SGE Send is resolved in full.
func TestSendSlicesKeptRegion(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(mr *MR) error
	}{
		{"Invalidate", (*MR).Invalidate},
		{"Dereg", (*MR).Dereg},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, pd, mr := newTestMR(t, verbs.AccessLocalWrite)
			copy(mr.Bytes()[16:], "kept region")
			cq, err := d.CreateCQ(verbs.CQAttr{Depth: 16})
			if err != nil {
				t.Fatal(err)
			}
			qp := newIdleQP(t, pd, cq, verbs.QPCaps{MaxSendWR: 4, MaxRecvWR: 1, MaxSendSGE: 2})

			post := func(sgl ...verbs.SGE) *SendWQE {
				t.Helper()
				if _, err := qp.PostSend([]verbs.SendWR{{Opcode: verbs.OpSend, SGL: sgl}}); err != nil {
					t.Fatal(err)
				}
				var w SendWQE
				if !qp.NextSend(&w) {
					t.Fatal("NextSend found nothing")
				}
				return &w
			}
			var hs Holds
			w := post(verbs.SGEOf(mr, 16, 11))
			if w.reg != &mr.region {
				t.Fatalf("a one-SGE Send kept region %p, want the MR's %p", w.reg, &mr.region)
			}
			out, f := qp.SendSlices(w, nil, &hs)
			if f != FaultNone || len(out) != 1 || string(out[0]) != "kept region" || cap(out[0]) != 11 {
				t.Fatalf("SendSlices: %q (fault %v), want [\"kept region\"] of capacity 11", out, f)
			}
			if hs.n != 1 || mr.region.users.Load() != 1 {
				t.Fatalf("%d holds, %d users, want 1 and 1", hs.n, mr.region.users.Load())
			}
			hs.Release()
			qp.CompleteSend(w.Seq, verbs.WCSuccess, 0)

			w = post(verbs.SGEOf(mr, 16, 4), verbs.SGEOf(mr, 20, 7))
			if w.reg != nil {
				t.Fatal("a two-SGE Send kept a region")
			}
			out, f = qp.SendSlices(w, nil, &hs)
			if f != FaultNone || len(out) != 2 || string(out[0])+string(out[1]) != "kept region" {
				t.Fatalf("SendSlices of two SGEs: %q (fault %v)", out, f)
			}
			hs.Release()
			qp.CompleteSend(w.Seq, verbs.WCSuccess, 0)

			w = post(verbs.SGEOf(mr, 16, 11))
			if err := tc.end(mr); err != nil {
				t.Fatal(err)
			}
			out, f = qp.SendSlices(w, nil, &hs)
			if f != FaultSTag || len(out) != 0 || hs.n != 0 || mr.region.users.Load() != 0 {
				t.Fatalf("after %s: %q, fault %v, %d holds, %d users; want FaultSTag and nothing held",
					tc.name, out, f, hs.n, mr.region.users.Load())
			}
		})
	}
}
