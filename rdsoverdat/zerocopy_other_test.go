package rdsoverdat

import (
	"bytes"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godapl/godapl/dat"
	rdsdat "github.com/godapl/godapl/rdsoverdat/internal/dat"
	"github.com/godapl/godapl/verbs"
	"github.com/godapl/godapl/verbs/mem"
	"github.com/godapl/godapl/verbs/siw"
)

// An op that fails on the server's side for a reason that is neither the
// client's memory nor the connection: its buffer cannot be registered
// (dat_rdma.go, postRDMA). It completes with RDS_RDMA_OTHER_ERROR
// ("any other failure", rds-rdma(7)), its ACK never arrives, the
// connection stays up, and the client's pin on its mapping ends (the
// release record), so FreeMR returns and later ops run.
func TestDATRDMAOtherError(t *testing.T) {
	for _, prov := range []struct {
		name string
		new  func() verbs.Provider
	}{
		{"dat-mem", func() verbs.Provider { return mem.New() }},
		{"dat-siw", func() verbs.Provider { return siw.New(siw.Options{}) }},
	} {
		for _, flags := range []RDMAFlags{0, RDMAUseOnce} {
			name := prov.name + "/leased"
			if flags == RDMAUseOnce {
				name = prov.name + "/use-once"
			}
			t.Run(name, func(t *testing.T) {
				leakCheck(t)
				p := &regFailProvider{Provider: prov.new()}
				r := newDATRig(t, DATConfig{Registry: registryOn(p), IA: p.Name()})
				for _, write := range []bool{true, false} {
					win := make([]byte, 64)
					ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win, Flags: RDMAReadWrite | flags})
					bad := bytes.Repeat([]byte{7}, 64)
					p.failOn.Store(&bad[0])
					args := RDMAArgs{Cookie: ck, RemoteBytes: 64, Local: [][]byte{bad}, Flags: RDMANotifyMe, UserToken: 1}
					if write {
						args.Flags |= RDMAReadWrite
					}
					r.op(t, r.srv, r.cli, []byte("ack"), args)
					if n := r.notes(t, r.srv, 1); n[0] != (RDMANotify{UserToken: 1, Status: RDMAOtherError}) {
						t.Fatalf("write=%v: notification %+v, want OTHER_ERROR", write, n[0])
					}
					p.failOn.Store(nil)
					r.srv.SendTo([]byte("next"), r.cli.BoundAddr(), 0)
					expectNext(t, r.cli, []byte("next")) // not the failed op's ACK
					if !bytes.Equal(win, make([]byte, 64)) {
						t.Fatalf("write=%v: the failed op wrote the client's memory", write)
					}
					if k := r.resets(); k != 0 {
						t.Fatalf("write=%v: the connection was reset %d times", write, k)
					}
					freeWithin(t, r.cli, ck, rigWait)
				}
				if st := r.st.nodeAt(r.srvNode).Stats(); st.RDMAOtherError != 2 || st.RDMASuccess != 0 {
					t.Fatalf("counters: %d other errors, %d succeeded; want 2, 0", st.RDMAOtherError, st.RDMASuccess)
				}
				// A good op on a fresh mapping still runs.
				win := make([]byte, 64)
				ck := r.request(t, r.cli, r.srv, []byte("req"), RDMAMap{Mem: win, Flags: RDMAReadWrite | flags})
				src := bytes.Repeat([]byte{9}, 64)
				r.op(t, r.srv, r.cli, []byte("ack"), RDMAArgs{Cookie: ck, RemoteBytes: 64, Local: [][]byte{src}, Flags: RDMAReadWrite | RDMANotifyMe, UserToken: 2})
				expectNext(t, r.cli, []byte("ack"))
				if n := r.notes(t, r.srv, 1); n[0] != (RDMANotify{UserToken: 2, Status: RDMASuccess}) || !bytes.Equal(win, src) {
					t.Fatalf("the op after the failures: notification %+v", n[0])
				}
			})
		}
	}
}

// freeWithin frees the mapping ck, failing if FreeMR is still waiting
// for a pin after d.
func freeWithin(t *testing.T, s *Socket, ck Cookie, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.FreeMR(ck, RDMAInvalidate) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("FreeMR: %v", err)
		}
	case <-time.After(d):
		t.Fatal("FreeMR still waits for the failed op's pin")
	}
}

// regFailProvider wraps a verbs provider with one fault: registering the
// buffer that starts at failOn fails, as a provider out of memory
// regions would refuse it.
type regFailProvider struct {
	verbs.Provider
	failOn atomic.Pointer[byte]
}

func (p *regFailProvider) Open(name string) (verbs.Device, error) {
	d, err := p.Provider.Open(name)
	if err != nil {
		return nil, err
	}
	return &regFailDevice{Device: d, p: p}, nil
}

type regFailDevice struct {
	verbs.Device
	p *regFailProvider
}

func (d *regFailDevice) AllocPD() (verbs.PD, error) {
	pd, err := d.Device.AllocPD()
	if err != nil {
		return nil, err
	}
	return &regFailPD{PD: pd, p: d.p}, nil
}

type regFailPD struct {
	verbs.PD
	p *regFailProvider
}

func (pd *regFailPD) RegMR(buf []byte, access verbs.Access) (verbs.MR, error) {
	if len(buf) > 0 && &buf[0] == pd.p.failOn.Load() {
		return nil, verbs.ErrNoResources
	}
	return pd.PD.RegMR(buf, access)
}

// A failed RDMA work request's status, as rds_ib_send_complete maps its
// work completion: only a remote access error is REMOTE_ERROR.
func TestDATRDMAStatus(t *testing.T) {
	for s := dat.DTOErrLocalLength; s <= dat.DTOErrLocalMMError; s++ {
		want := RDMAOtherError
		if s == dat.DTOErrRemoteAccess {
			want = RDMARemoteError
		}
		if got := RDMAStatus(rdsdat.RDMAStatus(s)); got != want {
			t.Errorf("%v: %v, want %v", s, got, want)
		}
	}
}
