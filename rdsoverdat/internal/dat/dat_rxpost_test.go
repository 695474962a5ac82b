package dat

import "testing"

// The rule that lets a batch of events leave its handled buffers held:
// fewer than datRepostBatch, credits binding every peer, and no peer
// left with fewer than two credits once its messages are handled.
func TestDATRepostsMayWait(t *testing.T) {
	wide := &datEP{grant: 64, ackEvery: 16}
	tight := &datEP{grant: 2, ackEvery: 1}
	edge := &datEP{grant: 4, ackEvery: 2} // 1 held + 2 + 1 = 4: may wait
	for _, c := range []struct {
		name string
		lazy bool
		eps  []*datEP
		want bool
	}{
		{"one of a wide share", true, []*datEP{wide}, true},
		{"batch less one", true, repeatEP(wide, datRepostBatch-1), true},
		{"a full batch", true, repeatEP(wide, datRepostBatch), false},
		{"every buffer kept posted", false, []*datEP{wide}, false},
		{"share of two", true, []*datEP{tight}, false},
		{"share of two among wide ones", true, []*datEP{wide, tight, wide}, false},
		{"exactly enough left", true, []*datEP{edge}, true},
		{"one too many of a share of four", true, []*datEP{edge, edge}, false},
		{"dead EPs", true, []*datEP{nil, nil}, true},
	} {
		dn := &datNode{}
		dn.rxp.lazy.Store(c.lazy)
		for i, e := range c.eps {
			dn.handled(i, e)
		}
		if got := dn.repostsMayWait(); got != c.want {
			t.Errorf("%s: may wait %v, want %v", c.name, got, c.want)
		}
	}
	// A tight share given back no longer holds the next buffers.
	dn := &datNode{}
	dn.rxp.lazy.Store(true)
	dn.handled(0, tight)
	if dn.repostsMayWait() {
		t.Fatal("share of two: may wait")
	}
	dn.rep.n = 0 // what flushReposts leaves, without the SRQ it needs
	dn.handled(1, wide)
	if !dn.repostsMayWait() {
		t.Error("one of a wide share after a share of two went back: may not wait")
	}
}

func repeatEP(e *datEP, n int) []*datEP {
	s := make([]*datEP, n)
	for i := range s {
		s[i] = e
	}
	return s
}
