package main

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/godapl/godapl/rdsoverdat"
)

// ownRequests is the passive side's half of a two-way run on one task
// socket: as in the real tool, where both instances send requests, it
// keeps the run's depth of requests of its own outstanding to the peer
// task, each answered with an ack, until the goodbye. It lives on the
// socket's goroutine.
type ownRequests struct {
	sv          *server
	s           *rdsoverdat.Socket
	run         *runState // the run the state below belongs to
	task        uint16    // the peer's task number, which its requests carry
	peer        netip.AddrPort
	out         []byte
	seq         uint64
	outstanding int
}

// start begins the window when the run is two-way and the first request
// of the run has named the peer task; later calls do nothing.
func (o *ownRequests) start(task uint16, peer netip.AddrPort) error {
	rs := o.sv.cur.Load()
	if rs == nil || rs == o.run {
		return nil
	}
	*o = ownRequests{sv: o.sv, s: o.s, run: rs, task: task, peer: peer, out: o.out}
	if rs.p.oneway || rs.stopping.Load() {
		return nil
	}
	size := rs.p.sizes[int(task)%len(rs.p.sizes)]
	if cap(o.out) < size {
		o.out = make([]byte, size)
	}
	o.out = o.out[:size]
	for range rs.p.depth {
		if err := o.send(); err != nil {
			return err
		}
	}
	return nil
}

// send sends the next request of the window.
func (o *ownRequests) send() error {
	h := stressHdr(o.out)
	h.encode(opRequest, o.task, o.seq, int64(time.Since(o.sv.t0)), uint32(o.run.p.ack))
	if o.run.p.verify {
		h.setFlag(verifyBit)
		fillPattern(o.out[hdrLen:], o.seq)
	}
	t1 := time.Now()
	_, err := o.s.SendTo(o.out, o.peer, 0)
	o.sv.sendNS.Add(uint64(time.Since(t1)))
	if err != nil {
		return err
	}
	o.seq++
	o.outstanding++
	o.sv.ownReqs.Add(1)
	o.sv.bytes.Add(uint64(len(o.out)))
	return nil
}

// acked accounts for the answer ack (h its header) to one of our
// requests and sends the next unless the run is stopping.
func (o *ownRequests) acked(h stressHdr, ack []byte, from netip.AddrPort) error {
	if o.run == nil || o.run != o.sv.cur.Load() || from != o.peer || o.outstanding == 0 {
		return nil // an answer of an earlier run
	}
	o.outstanding--
	o.sv.ownAcks.Add(1)
	o.sv.bytes.Add(uint64(len(ack)))
	o.sv.rttNS.Add(uint64(max(0, time.Since(o.sv.t0)-time.Duration(h.Stamp()))))
	if o.run.p.verify && len(ack) > hdrLen {
		if off := checkPattern(ack[hdrLen:], h.Seq()); off >= 0 {
			return fmt.Errorf("the answer to our request %d is damaged at payload offset %d (-v)", h.Seq(), off)
		}
	}
	if o.run.stopping.Load() {
		return nil
	}
	return o.send()
}
