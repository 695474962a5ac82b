package dat

import (
	"net/netip"
	"testing"
)

// The iWARP race rule on a path whose EP is accepted or up: a request of
// the same peer generation numbered at or below the EP's conn_id was made
// before it and is rejected; a later one, one of another generation, and
// one from a peer that numbers nothing replace the EP.
func TestDATStaleRequestRule(t *testing.T) {
	s, d := netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.1")
	pd := func(gen, id uint32, n int) datPrivate {
		b := make([]byte, datPrivateLen)
		encodeDatPrivate(b, s, d, 0, 0, gen, 16)
		putConnID(b, id)
		return datPrivate(b[:n])
	}
	dp := &datPath{dn: &datNode{}}
	for _, c := range []struct {
		name      string
		have, req datPrivate
		want      datVerdict
	}{
		{"abandoned before", pd(7, 10, datPrivateLen), pd(7, 9, datPrivateLen), reqReject},
		{"same number", pd(7, 10, datPrivateLen), pd(7, 10, datPrivateLen), reqReject},
		{"made after: the peer lost it", pd(7, 10, datPrivateLen), pd(7, 11, datPrivateLen), reqAccept},
		{"peer restarted", pd(7, 10, datPrivateLen), pd(8, 3, datPrivateLen), reqAccept},
		{"older godapl request", pd(7, 10, datPrivateLen), pd(7, 0, datPrivateLenNoID), reqAccept},
		{"older godapl connection", pd(7, 0, datPrivateLenNoID), pd(7, 9, datPrivateLen), reqAccept},
		{"no generation", pd(0, 10, datPrivateLen), pd(0, 9, datPrivateLen), reqAccept},
		{"kernel's 32 bytes", pd(7, 10, datPrivateLen), pd(0, 0, 32), reqAccept},
		{"counter wrapped: later", pd(7, 0xfffffffe, datPrivateLen), pd(7, 1, datPrivateLen), reqAccept},
		{"counter wrapped: earlier", pd(7, 1, datPrivateLen), pd(7, 0xffffffff, datPrivateLen), reqReject},
	} {
		for _, st := range []datEPState{datAccepted, datUp} {
			e := &datEP{state: st}
			copy(e.peer[:], c.have)
			if v := dp.verdict(e, c.req); v != c.want {
				t.Errorf("%s, EP in state %d: verdict %d, want %d", c.name, st, v, c.want)
			}
		}
		dead := &datEP{state: datDead}
		copy(dead.peer[:], c.have)
		if v := dp.verdict(dead, c.req); v != reqAccept {
			t.Errorf("%s, dead EP: verdict %d, want accept", c.name, v)
		}
	}
	if v := dp.verdict(nil, pd(7, 1, datPrivateLen)); v != reqAccept {
		t.Errorf("no EP: verdict %d", v)
	}
	if a, b := newConnID(), newConnID(); a == 0 || int32(b-a) <= 0 {
		t.Errorf("connection numbers %d then %d", a, b)
	}
}
