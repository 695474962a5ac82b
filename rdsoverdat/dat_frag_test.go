package rdsoverdat

import (
	"context"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	"github.com/godapl/godapl/dat/lmr"
	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
)

// TestDATFragmentOffer: a node sends a peer fragments larger than 4096
// bytes only if the peer's private data offers them. A raw DAT peer
// connects with private data of the current length (offering 16 KiB)
// or of the length before the offer existed, and the node's congestion
// map (8 KiB, sent first on every connection) arrives in one Send or in
// two.
func TestDATFragmentOffer(t *testing.T) {
	for _, c := range []struct {
		name    string
		pdLen   int
		longest uint32
	}{
		{"offer", rdsdat.PrivateLen, wire.HeaderLen + wire.CongMapBytes},
		{"no offer", rdsdat.PrivateLenNoFrag, wire.HeaderLen + wire.FragSize},
	} {
		t.Run(c.name, func(t *testing.T) {
			leakCheck(t)
			fabric := mem.New()
			st := datStack(t, DATConfig{Registry: registryOn(fabric), IA: "mem"})
			as := testAddrs(2)
			mustBind(t, st, ap(as[0], 0))
			reg, err := dat.NewRegistry([]verbs.Provider{fabric}, []dat.Entry{{Name: "raw", Provider: "mem", Device: mem.DeviceName, Addr: as[1]}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rawIA, err := ia.OpenIn(reg, "raw", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer rawIA.Close(dat.CloseAbrupt)
			pz, _ := rawIA.CreatePZ()
			ev, _ := evd.Create(rawIA, 64, nil, dat.EVDDTO|dat.EVDConnection)
			buf, err := lmr.Create(rawIA, pz, make([]byte, 16*rdsdat.SlotLen), dat.MemPrivLocalWrite, dat.VATypeVA)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := ep.Create(rawIA, pz, ev, ev, ev, &dat.EPAttr{MaxRecvDTOs: 16, MaxRequestDTOs: 16})
			if err != nil {
				t.Fatal(err)
			}
			defer rep.Free()
			for i := range 16 {
				if err := rep.PostRecv([]dat.LMRTriplet{buf.Triplet(i*rdsdat.SlotLen, rdsdat.SlotLen)}, dat.DTOCookie(i), dat.CompletionDefault); err != nil {
					t.Fatal(err)
				}
			}
			pd := make([]byte, rdsdat.PrivateLen)
			rdsdat.EncodePrivate(pd, as[1], as[0], 0, 0, 5, 16)
			if err := rep.Connect(as[0], wire.RDMAPort, 5*time.Second, pd[:c.pdLen], dat.QoSBestEffort, dat.ConnectDefault); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The map's bytes arrive in Sends of at most the agreed size.
			var got int
			var longest uint32
			for got < wire.CongMapBytes {
				e, _, err := ev.Wait(ctx, 1)
				if err != nil {
					t.Fatalf("after %d map bytes: %v", got, err)
				}
				if e.Number != dat.DTOCompletionEvent || e.DTO.Op != dat.DTOReceive || e.DTO.Status != dat.DTOSuccess {
					continue
				}
				h := wire.Header(buf.Bytes()[int(e.DTO.Cookie)*rdsdat.SlotLen:])
				if h.IsCongMap() {
					got += int(e.DTO.Length) - wire.HeaderLen
					longest = max(longest, e.DTO.Length)
				}
			}
			if longest != c.longest {
				t.Errorf("longest Send of the map %d bytes, want %d", longest, c.longest)
			}
		})
	}
}
