package dat

import (
	"sync/atomic"

	"github.com/godapl/godapl/rdsoverdat/wire"
)

// Credits, as rds_ib counts them (ib.h IB_*_CREDITS, ib_send.c
// rds_ib_send_grab_credits): one 32-bit word updated with compare-and-
// swap, whose low 16 bits are send credits (receive buffers the peer has
// granted us and we have not used) and high 16 bits posted credits
// (buffers we reposted for the peer and have not advertised yet). Every
// fragment and every ack-only frame costs one send credit; every header
// may advertise up to 255 posted credits in h_credit.
//
// The rule that keeps both sides from starving: the last send credit is
// spent only together with an advertisement, so a side that has posted
// buffers to announce can always announce them.
//
// Sharing one SRQ: each connection is granted a fixed share of the
// node's receive buffers when its EP is created (datNode.reserve,
// ConnCredits, growing the SRQ by RecvDepth buffers when fewer are free,
// or what is left if it cannot grow) and tells the peer that number in the
// private data; from then on the peer holds at most that many of our
// buffers (its send credits plus frames in flight plus our unadvertised
// posted credits add up to the share), and a buffer the connection
// consumed is reposted and advertised back to the same peer. The shares
// of live connections never add up to more than the SRQ holds, so no
// sender ever finds the SRQ empty. A share returns to the node only when
// the EP is retired, after every completion of it has been taken off the
// EVD (dat_event.go), so that no buffer is granted twice.

// datMaxCredits is the most credits either half of the word holds.
const datMaxCredits = 0xffff

type datCredits struct {
	v atomic.Uint32
	// off: flow control is off (the peer granted no credits, which on
	// the kernel's wire is the rule, dat_kernel.go); every grab succeeds,
	// nothing is advertised.
	off atomic.Bool
}

// disable turns flow control off for the connection's life.
func (c *datCredits) disable() { c.off.Store(true) }

// grab takes up to wanted send credits and, if any were taken, the posted
// credits to advertise along (at most wire.MaxAdvCredit).
func (c *datCredits) grab(wanted uint32) (got, adv uint32) {
	if c.off.Load() {
		return wanted, 0
	}
	for {
		old := c.v.Load()
		avail, posted := old&datMaxCredits, old>>16
		if avail > 0 && posted == 0 {
			avail-- // the last credit goes only with an advertisement
		}
		got = min(avail, wanted)
		adv = 0
		if got > 0 && posted > 0 {
			adv = min(posted, wire.MaxAdvCredit)
		}
		if c.v.CompareAndSwap(old, old-got-adv<<16) {
			return got, adv
		}
	}
}

// addSend adds credits the peer granted (h_credit or the private data).
func (c *datCredits) addSend(n uint32) { c.v.Add(n) }

// addPosted counts n reposted buffers to advertise.
// Without flow control nothing is counted and 0 is returned.
func (c *datCredits) addPosted(n uint32) uint32 {
	if c.off.Load() {
		return 0
	}
	return c.v.Add(n<<16) >> 16
}

// unGrab returns credits grab handed out but a failed post did not use.
func (c *datCredits) unGrab(got, adv uint32) {
	if !c.off.Load() {
		c.v.Add(got + adv<<16)
	}
}

func (c *datCredits) send() uint32 { return c.v.Load() & datMaxCredits }

// posted is the posted credits not yet advertised: none without flow
// control, so that they never ask for an ack-only frame.
func (c *datCredits) posted() uint32 {
	if c.off.Load() {
		return 0
	}
	return c.v.Load() >> 16
}
