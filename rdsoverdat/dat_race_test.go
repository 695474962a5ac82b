package rdsoverdat

import (
	"bytes"
	"context"
	"net/netip"
	"testing"

	"github.com/godapl/godapl/dat"
	"github.com/godapl/godapl/dat/ep"
	"github.com/godapl/godapl/dat/evd"
	"github.com/godapl/godapl/dat/ia"
	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
	"github.com/godapl/godapl/rdsoverdat/wire"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/siw"
)

// rawRequest sends a connection request to node to from a raw DAT EP of
// provider prov on address from, with private data pd, and returns the
// first connection event the EP gets. The EP and its IA live until the
// test ends.
func rawRequest(t *testing.T, prov verbs.Provider, from, to netip.Addr, pd []byte) dat.EventNumber {
	t.Helper()
	dev := map[string]string{"mem": mem.DeviceName, "siw": siw.DeviceName}[prov.Name()]
	reg, err := dat.NewRegistry([]verbs.Provider{prov}, []dat.Entry{{Name: "raw", Provider: prov.Name(), Device: dev, Addr: from}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rawIA, err := ia.OpenIn(reg, "raw", 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rawIA.Close(dat.CloseAbrupt) })
	pz, err := rawIA.CreatePZ()
	if err != nil {
		t.Fatal(err)
	}
	ev, err := evd.Create(rawIA, 64, nil, dat.EVDDTO|dat.EVDConnection)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := ep.Create(rawIA, pz, ev, ev, ev, &dat.EPAttr{MaxRecvDTOs: 4, MaxRequestDTOs: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rep.Free() })
	if err := rep.Connect(to, wire.RDMAPort, rigWait, pd, dat.QoSBestEffort, dat.ConnectDefault); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), rigWait)
	defer cancel()
	for {
		e, _, err := ev.Wait(ctx, 1)
		if err != nil {
			t.Fatalf("raw request: no connection event: %v", err)
		}
		if e.Number&0xff000 == dat.ConnectionEventEstablished&0xff000 {
			return e.Number
		}
	}
}

// Two godapl nodes over iWARP connected at once: the larger accepted the
// smaller's request and abandoned its own, which reaches the smaller node
// after that node's connection came up. The abandoned request is
// injected here: it comes from the larger node's address and generation
// and is numbered below the connection the larger node accepted. It is
// rejected, the connection stays up, and the RDMA op running over it
// completes (before the rule, the request replaced the connection and
// the op ended RDMADropped). A request numbered above that connection
// (the peer lost it), one of a new generation (the peer restarted) and
// one without a number (an older godapl node) still replace it.
func TestDATStaleRequestAfterUp(t *testing.T) {
	for _, prov := range []struct {
		name string
		new  func() verbs.Provider
	}{
		{"mem", func() verbs.Provider { return mem.New() }},
		{"siw", func() verbs.Provider { return siw.New(siw.Options{}) }},
	} {
		for _, c := range []struct {
			name    string
			gen, id func(gen, id uint32) uint32 // from those of the connection up
			short   bool                        // an older godapl node's 40 bytes
			stale   bool
		}{
			{"stale", func(g, _ uint32) uint32 { return g }, func(_, id uint32) uint32 { return id - 1 }, false, true},
			{"peer lost it", func(g, _ uint32) uint32 { return g }, func(_, id uint32) uint32 { return id + 1 }, false, false},
			{"peer restarted", func(g, _ uint32) uint32 { return g + 1 }, func(_, id uint32) uint32 { return id - 1 }, false, false},
			{"older godapl", func(g, _ uint32) uint32 { return g }, func(_, id uint32) uint32 { return id - 1 }, true, false},
		} {
			t.Run(prov.name+"/"+c.name, func(t *testing.T) {
				leakCheck(t)
				p := prov.new()
				r := newDATRig(t, DATConfig{Registry: registryOn(p), IA: p.Name()})
				// The rig's warm-up connected the client's node to the server's.
				n := r.st.nodeAt(r.cliNode)
				gen, id, ok := datNodeOf(t, n).PeerConnID((*xpath)(n.Conn(r.srvNode, TransIB).Path(0)))
				if !ok || gen == 0 || id == 0 {
					t.Fatalf("connection up %v, peer generation %#x, number %d", ok, gen, id)
				}

				// An op in flight on the connection while the request comes.
				const size = 1 << 20
				win := make([]byte, size)
				ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win, Flags: RDMAReadWrite | RDMAUseOnce})
				src := make([]byte, size)
				pattern(src, 5)
				r.op(t, r.srv, r.cli, []byte("ack"), RDMAArgs{Cookie: ck, RemoteBytes: size, Local: [][]byte{src},
					Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 9})

				pd := make([]byte, rdsdat.PrivateLen)
				rdsdat.EncodePrivate(pd, r.srvNode, r.cliNode, 0, 0, c.gen(gen, id), 16)
				rdsdat.SetConnID(pd, c.id(gen, id))
				if c.short {
					pd = pd[:rdsdat.PrivateLenNoID]
				}
				got := rawRequest(t, p, testAddrs(1)[0], r.cliNode, pd)
				if !c.stale {
					if got != dat.ConnectionEventEstablished {
						t.Fatalf("request: %v, want established", got)
					}
					eventually(t, rigWait, "the connection replaced", func() bool { return r.resets() > 0 })
					return
				}
				if got != dat.ConnectionEventPeerRejected {
					t.Fatalf("stale request: %v, want rejected", got)
				}
				expectNext(t, r.cli, []byte("ack"))
				if nt := r.notes(t, r.srv, 1); nt[0] != (RDMANotify{UserToken: 9, Status: RDMASuccess}) || !bytes.Equal(win, src) {
					t.Fatalf("the op over the kept connection: %+v", nt[0])
				}
				if k := r.resets(); k != 0 {
					t.Fatalf("the connection was reset %d times", k)
				}
			})
		}
	}
}
