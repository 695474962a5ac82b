package core

import (
	"sync"
	"testing"
	"unsafe"

	"github.com/godapl/godapl/dat"
)

// allStateList is every EP state.
func allStateList() []dat.EPState {
	var ss []dat.EPState
	for s := dat.EPState(0); allStates.has(s); s++ {
		ss = append(ss, s)
	}
	return ss
}

// TestPostFastPathAgrees checks the post snapshot's fast path against the
// checks it stands for: for every EP state, DTO op, completion flags,
// segment count and queue attribute, a request or receive the fast path
// lets through is one requestChecks or recvChecks lets through, and one it
// sends to them is one they refuse (so no post is refused by the fast path
// and accepted by nobody, or the reverse); and a one-segment request or
// receive that PostDTO's way or PostRecv's common case takes (postCfg.one,
// recvOne) is one they let through.
func TestPostFastPathAgrees(t *testing.T) {
	for _, st := range allStateList() {
		for _, unsig := range []bool{false, true} {
			for _, onSRQ := range []bool{false, true} {
				ep := &EP{}
				ep.state.Store(uint32(st))
				c := &postCfg{reqUnsig: unsig, recvUnsig: unsig, maxIOV: 3, maxReadIOV: 1, maxRecvIOV: 2, checksSGL: true, sqMu: new(sync.Mutex), rqMu: new(sync.Mutex)}
				c.setFast(st, onSRQ)
				ep.cfg.Store(c)
				if onSRQ {
					ep.srq = &SRQ{}
				}
				for _, dop := range []dat.DTOOp{dat.DTOSend, dat.DTORDMAWrite, dat.DTORDMARead} {
					for flags := dat.CompletionFlags(0); flags < 64; flags++ {
						for n := 0; n <= 4; n++ {
							r := &Request{DOp: dop, IOV: make([]dat.LMRTriplet, n), Flags: flags}
							fast := r.Flags&^c.reqFlags[r.DOp&3] == 0 && len(r.IOV) <= c.reqIOV[r.DOp&3]
							_, err := ep.requestChecks(r)
							if fast != (err == nil) {
								t.Fatalf("state %v unsig %v op %v flags %#x iov %d: fast path %v, checks %v", st, unsig, dop, flags, n, fast, err)
							}
							if one := n == 1 && (flags|oneBit)&^c.one[dop&3] == 0; one && err != nil {
								t.Fatalf("state %v unsig %v op %v flags %#x: PostDTO's way takes what the checks refuse: %v", st, unsig, dop, flags, err)
							}
						}
					}
				}
				for flags := dat.CompletionFlags(0); flags < 64; flags++ {
					for n := 0; n <= 3; n++ {
						iov := make([]dat.LMRTriplet, n)
						fast := flags&^c.recvFlags == 0 && len(iov) <= c.recvIOV
						_, err := ep.recvChecks(iov, flags)
						if fast != (err == nil) {
							t.Fatalf("recv: state %v unsig %v srq %v flags %#x iov %d: fast path %v, checks %v", st, unsig, onSRQ, flags, n, fast, err)
						}
						if one := n == 1 && (flags|oneBit)&^c.recvOne == 0; one && err != nil {
							t.Fatalf("recv: state %v unsig %v srq %v flags %#x: PostRecv's common case takes what the checks refuse: %v", st, unsig, onSRQ, flags, err)
						}
					}
				}
			}
		}
	}
}

// TestSetStateRepublishes walks an EP through every pair of states and
// checks that the post snapshot lets requests through exactly in the
// states that post them, whichever state came before.
func TestSetStateRepublishes(t *testing.T) {
	for _, from := range allStateList() {
		for _, to := range allStateList() {
			ep := &EP{}
			c := &postCfg{maxIOV: 3, maxReadIOV: 1, maxRecvIOV: 2, checksSGL: true, sqMu: new(sync.Mutex)}
			c.setFast(dat.EPStateUnconnected, false)
			ep.cfg.Store(c)
			ep.mu.Lock()
			ep.setState(from)
			ep.setState(to)
			ep.mu.Unlock()
			got := ep.cfg.Load()
			if open := got.reqIOV[dat.DTOSend] >= 0; open != canPostRequest.has(to) {
				t.Fatalf("%v -> %v: requests let through %v", from, to, open)
			}
			for op, f := range got.one {
				if open, want := f&oneBit != 0, canPostRequest.has(to) && op != 3; open != want || open && f != got.reqFlags[op]|oneBit {
					t.Fatalf("%v -> %v: PostDTO's way for op %d %#x, open %v; flags %#x", from, to, op, f, want, got.reqFlags[op])
				}
			}
			if got.reqIOV[dat.DTOSend] >= 0 && (got.reqIOV[dat.DTORDMAWrite] != 3 || got.reqIOV[dat.DTORDMARead] != 1) {
				t.Fatalf("%v -> %v: limits %v", from, to, got.reqIOV)
			}
			if got.recvIOV != 2 || got.reqFlags != c.reqFlags {
				t.Fatalf("%v -> %v: the rest of the snapshot changed: %+v", from, to, got)
			}
		}
	}
}

// TestPostCfgLayout: the fields PostDTO's common case reads lie in the
// first 64 bytes of a postCfg, whose size keeps it on cache lines.
func TestPostCfgLayout(t *testing.T) {
	var c postCfg
	if s := unsafe.Sizeof(c); s%64 != 0 {
		t.Errorf("postCfg is %d bytes, not a multiple of 64", s)
	}
	for name, end := range map[string]uintptr{
		"sq": unsafe.Offsetof(c.sq) + unsafe.Sizeof(c.sq), "sqMu": unsafe.Offsetof(c.sqMu) + 8,
		"own": unsafe.Offsetof(c.own) + 8, "reqID": unsafe.Offsetof(c.reqID) + 8,
		"pz": unsafe.Offsetof(c.pz) + 8, "unsigSuppressed": unsafe.Offsetof(c.unsigSuppressed) + 1,
		"one": unsafe.Offsetof(c.one) + unsafe.Sizeof(c.one),
	} {
		if end > 64 {
			t.Errorf("postCfg.%s ends at byte %d, past the first cache line", name, end)
		}
	}
}
